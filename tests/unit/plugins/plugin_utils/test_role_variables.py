# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpudirect_plan's action reads of a role's variables (plugins/plugin_utils/role_variables.py), against the
collection's real roles: the user's variables, names the role does not have, contradictions with what the playbook
derives, defaults that import_role puts in the play, no_log values. The playbooks' plan steps run it end to end in
tests/integration/test_gke_plan.py and test_playbook_inputs.py."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils import role_variables

TCPXO = {'role': 'gke_gpudirect', 'entry_points': ['plan', 'apply', 'wait'],
         'vars': {'gke_gpudirect_technology': 'TCPXO', 'gke_gpudirect_node_pool': 'a3mega-gpu', 'gke_gpudirect_kubeconfig': '/k'},
         'sources': {'gke_gpudirect_technology': 'gpudirect_machine_type', 'gke_gpudirect_node_pool': 'gpudirect_node_pool',
                     'gke_gpudirect_kubeconfig': 'gpudirect_kubeconfig_path'}}


def resolve(entry, task_vars):
    return role_variables.resolve(entry, task_vars, lambda value: value)['resolved']


def test_the_users_variables_of_the_role_only_are_given_and_the_spec_is_the_entry_points_options():
    resolved = resolve(TCPXO, {'gke_gpudirect_wait_retries': 7, 'gke_rdma_networking': 'dranet', '__gke_gpudirect_live': [],
                               'gpudirect_machine_type': 'a3-megagpu-8g', 'gke_gpudirect_node_pool': 'a3mega-gpu'})
    assert resolved['given'] == {'gke_gpudirect_wait_retries': 7, 'gke_gpudirect_node_pool': 'a3mega-gpu'}
    assert resolved['problems'] == []
    specs = yaml.safe_load(open(role_variables.ROLES_DIR + '/gke_gpudirect/meta/argument_specs.yml', encoding='utf-8'))['argument_specs']
    assert set(resolved['argument_spec']) == set(specs['plan']['options']) | set(specs['apply']['options']) | set(specs['wait']['options'])
    assert 'gke_gpudirect_state' not in resolved['argument_spec']   # main's own option: not an entry point this playbook calls


def test_a_name_the_role_does_not_have_is_a_problem_with_the_closest_name():
    problems = resolve(TCPXO, {'gke_gpudirect_technolgy': 'TCPX', 'gke_gpudirect_zzz': 1})['problems']
    assert problems[0].startswith('gke_gpudirect_technolgy: role gke_gpudirect has no such variable; did you mean gke_gpudirect_technology?')
    assert problems[1].startswith('gke_gpudirect_zzz: role gke_gpudirect has no such variable; its variables are gke_gpudirect_force_conflicts')


def test_a_value_that_contradicts_what_the_playbook_derives_is_refused_and_a_secret_is_not_shown():
    resolved = resolve(TCPXO, {'gke_gpudirect_technology': 'TCPX', 'gke_gpudirect_kubeconfig': {'users': [{'user': {'token': 's3cr3t'}}]}})
    assert resolved['problems'] == [
        "gke_gpudirect_kubeconfig: a value (not shown: the variable is no_log) differs from a value (not shown: the variable is no_log), "
        "which the playbook gives role gke_gpudirect (from gpudirect_kubeconfig_path), and would win over it; leave "
        "gke_gpudirect_kubeconfig unset and set gpudirect_kubeconfig_path instead",
        "gke_gpudirect_technology: 'TCPX' differs from 'TCPXO', which the playbook gives role gke_gpudirect (from "
        "gpudirect_machine_type), and would win over it; leave gke_gpudirect_technology unset and set gpudirect_machine_type instead"]
    assert 's3cr3t' not in repr(role_variables.resolve(TCPXO, {'gke_gpudirect_kubeconfig': {'token': 's3cr3t'}}, lambda v: v))


def test_an_override_of_a_playbook_default_without_a_source_is_the_users_to_make():
    entry = {'role': 'gke_rdma', 'vars': {'gke_rdma_compute_class_priorities': []}}
    resolved = resolve(entry, {'gke_rdma_compute_class_priorities': [{'machine_type': 'a4-highgpu-8g'}]})
    assert resolved['problems'] == [] and resolved['given'] == {'gke_rdma_compute_class_priorities': [{'machine_type': 'a4-highgpu-8g'}]}


def test_a_roles_default_in_the_plays_variables_is_not_the_users():
    defaults = role_variables._defaults('gce_network')   # pylint: disable=protected-access
    resolved = resolve({'role': 'gce_network'}, dict(defaults, gce_network_mtu=1500))
    assert resolved['given'] == {'gce_network_mtu': 1500}


def test_an_entry_point_the_role_lacks_is_named():
    with pytest.raises(ValueError, match='role gke_rdma has no entry point plan'):
        resolve({'role': 'gke_rdma', 'entry_points': ['plan']}, {})


def test_extra_vars_nothing_reads_are_named_with_the_closest_name(tmp_path):
    playbook = tmp_path / 'play.yml'
    playbook.write_text('- hosts: localhost\n  vars: {prefix: "{{ gpudirect_network_prefix | default(\'a\') }}", '
                        'zone: "{{ gpudirect_zone }}"}\n', encoding='utf-8')
    found = role_variables.unread_extra_vars(
        {'gpudirect_prefix': 'zz', 'gpudirect_zone': 'us-central1-a', 'gpudirect_zzz': 1, 'nccl_test_family': 'x',
         'nccl_test_timeout': 5, 'gke_rdma_namespace': 'n', 'gce_network_mtu': 1500, 'other': 1, '__gpudirect_x': 1},
        str(playbook), checked_roles={'gce_network'})
    assert found == [
        'gke_rdma_namespace: a variable of role gke_rdma; play.yml runs no role gke_rdma, so nothing reads it: remove it',
        'gpudirect_prefix: play.yml reads no such variable; did you mean gpudirect_network_prefix?',
        'gpudirect_zzz: play.yml reads no such variable; it reads gpudirect_network_prefix, gpudirect_zone',
        'nccl_test_family: role nccl_test has no such variable; play.yml runs no role nccl_test, so nothing reads it: remove it',
        'nccl_test_timeout: a variable of role nccl_test; play.yml runs no role nccl_test, so nothing reads it: remove it']


def test_a_teardown_reads_the_variables_of_the_run_it_undoes(tmp_path):
    """A teardown takes the same extra vars as the run it undoes: that playbook's variables and those of the roles it
    names are read; what neither reads is still named."""
    (tmp_path / 'build.yml').write_text('- hosts: localhost\n  vars: {count: "{{ gpudirect_node_count }}"}\n  roles:\n'
                                        '    - role: aiinfra.gpudirect.nccl_test\n', encoding='utf-8')
    teardown = tmp_path / 'down.yml'
    teardown.write_text('- hosts: localhost\n  vars: {zone: "{{ gpudirect_zone }}"}\n', encoding='utf-8')
    extra = {'gpudirect_node_count': 4, 'gpudirect_zone': 'z', 'nccl_test_timeout': 5, 'gpudirect_nodes': 4, 'gke_rdma_namespace': 'n'}
    assert role_variables.unread_extra_vars(extra, str(teardown), checked_roles=set(), undoes='build.yml') == [
        'gke_rdma_namespace: a variable of role gke_rdma; down.yml runs no role gke_rdma, so nothing reads it: remove it',
        'gpudirect_nodes: down.yml reads no such variable; it reads gpudirect_node_count, gpudirect_zone']
    assert [text.split(':')[0] for text in role_variables.unread_extra_vars(extra, str(teardown), checked_roles=set())] == [
        'gke_rdma_namespace', 'gpudirect_node_count', 'gpudirect_nodes', 'nccl_test_timeout']
