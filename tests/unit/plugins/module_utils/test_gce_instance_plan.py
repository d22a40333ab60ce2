"""gce/instance.py plan_vm: one decision per VM for every current status, desired state and difference."""

import itertools

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce.instance import VmPlan, plan_vm

STATUSES = (None, 'PROVISIONING', 'STAGING', 'REPAIRING', 'RUNNING', 'STOPPING', 'SUSPENDING', 'TERMINATED', 'SUSPENDED')
STATES = ('present', 'started', 'stopped', 'absent')

# (status, state) -> (steps, status waited for) when nothing differs. None is a VM that does not exist.
NO_DIFFERENCE = {
    (None, 'present'): (['create'], 'RUNNING'), (None, 'started'): (['create'], 'RUNNING'),
    (None, 'stopped'): (['create', 'stop'], 'TERMINATED'), (None, 'absent'): ([], None),
    ('PROVISIONING', 'present'): (['wait'], 'RUNNING'), ('PROVISIONING', 'started'): (['wait'], 'RUNNING'),
    ('PROVISIONING', 'stopped'): (['wait', 'stop'], 'TERMINATED'), ('PROVISIONING', 'absent'): (['delete'], None),
    ('STAGING', 'present'): (['wait'], 'RUNNING'), ('STAGING', 'started'): (['wait'], 'RUNNING'),
    ('STAGING', 'stopped'): (['wait', 'stop'], 'TERMINATED'), ('STAGING', 'absent'): (['delete'], None),
    ('REPAIRING', 'present'): (['wait'], 'RUNNING'), ('REPAIRING', 'started'): (['wait'], 'RUNNING'),
    ('REPAIRING', 'stopped'): (['wait', 'stop'], 'TERMINATED'), ('REPAIRING', 'absent'): (['delete'], None),
    ('RUNNING', 'present'): ([], None), ('RUNNING', 'started'): ([], None),
    ('RUNNING', 'stopped'): (['stop'], 'TERMINATED'), ('RUNNING', 'absent'): (['delete'], None),
    ('STOPPING', 'present'): (['wait'], 'TERMINATED'), ('STOPPING', 'started'): (['wait', 'start'], 'RUNNING'),
    ('STOPPING', 'stopped'): (['wait'], 'TERMINATED'), ('STOPPING', 'absent'): (['delete'], None),
    ('SUSPENDING', 'present'): (['wait'], 'TERMINATED'), ('SUSPENDING', 'started'): (['wait', 'start'], 'RUNNING'),
    ('SUSPENDING', 'stopped'): (['wait'], 'TERMINATED'), ('SUSPENDING', 'absent'): (['delete'], None),
    # present leaves a stopped VM stopped: only started and stopped change the power state
    ('TERMINATED', 'present'): ([], None), ('TERMINATED', 'started'): (['start'], 'RUNNING'),
    ('TERMINATED', 'stopped'): ([], None), ('TERMINATED', 'absent'): (['delete'], None),
    ('SUSPENDED', 'present'): ([], None), ('SUSPENDED', 'started'): (['start'], 'RUNNING'),
    ('SUSPENDED', 'stopped'): ([], None), ('SUSPENDED', 'absent'): (['delete'], None),
}


def test_the_table_covers_every_status_and_state():
    assert set(NO_DIFFERENCE) == set(itertools.product(STATUSES, STATES))


@pytest.mark.parametrize('status, state', sorted(NO_DIFFERENCE, key=str))
def test_no_difference(status, state):
    steps, wait_for = NO_DIFFERENCE[(status, state)]
    assert plan_vm(status, state) == VmPlan(steps, wait_for)


@pytest.mark.parametrize('status, state', sorted(NO_DIFFERENCE, key=str))
def test_a_field_set_in_place_adds_one_update_and_keeps_the_power_plan(status, state):
    steps, wait_for = NO_DIFFERENCE[(status, state)]
    plan = plan_vm(status, state, in_place=['labels'])
    if status is None or state == 'absent':   # nothing to update: created with it, or deleted
        assert plan == VmPlan(steps, wait_for)
    else:
        expected = list(steps)
        expected.insert(1 if steps[:1] == ['wait'] else 0, 'update')
        assert plan == VmPlan(expected, wait_for)


@pytest.mark.parametrize('status, state', [key for key in sorted(NO_DIFFERENCE, key=str) if key[0] is not None])
def test_a_fixed_field_is_refused_without_recreate_and_replaces_with_it(status, state):
    refused = plan_vm(status, state, fixed=['scheduling'])
    replaced = plan_vm(status, state, in_place=['labels'], fixed=['scheduling'], recreate=True)
    if state == 'absent':
        assert refused == replaced == VmPlan(['delete'])
    else:
        assert refused == VmPlan(refused=['scheduling'])
        assert replaced == (VmPlan(['recreate', 'stop'], 'TERMINATED') if state == 'stopped' else VmPlan(['recreate'], 'RUNNING'))


def test_waits_cover_only_the_vms_the_call_touches():
    """A stopped VM beside a VM that changes is neither started nor waited for (the 15-minute wait of before)."""
    plans = {'vm-1': plan_vm('TERMINATED', 'present'), 'vm-2': plan_vm('RUNNING', 'present', in_place=['labels'])}
    assert {name: plan.wait_for for name, plan in plans.items()} == {'vm-1': None, 'vm-2': None}
    assert plans['vm-1'].steps == []
