# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG: the catalog against the real H200 listings and the seeds, nvidia-smi parsers, layouts and plans (pure)."""
from __future__ import annotations

import os

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import mig as catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import mig

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'mig')
H200 = os.path.join(FIXTURES, 'h200x1-2026-11-30')
SEEDS = os.path.join(os.path.dirname(__file__), '..', '..', 'seeds')


def read(*parts):
    with open(os.path.join(*parts), encoding='utf-8') as handle:
        return handle.read()


def h200_live():
    return mig.live_profiles(0, mig.parse_profiles(read(H200, 'lgip.txt')), mig.parse_placements(read(H200, 'lgipp.txt')))


def test_the_catalogs_h200_profiles_are_what_the_real_nvidia_smi_lists():
    assert h200_live() == catalog.GPU_PROFILES['NVIDIA H200']


def test_the_captured_listings_parse():
    gpus = mig.parse_gpus(read(H200, 'query-gpu-mig.csv'))
    assert gpus == [{'index': 0, 'name': 'NVIDIA H200', 'pci_bus_id': '00000000:00:06.0', 'mig_current': 'Disabled', 'mig_pending': 'Disabled'}]
    assert catalog.profiles_for_gpu(gpus[0]['name'])
    assert mig.parse_gpu_instances(read(H200, 'lgi.txt')) == [] and mig.parse_compute_instances(read(H200, 'lci.txt')) == []
    assert mig.parse_processes(read(H200, 'query-compute-apps.csv')) == []
    assert mig.parse_profiles(read(H200, 'lgip.txt'))[0]['1g.18gb'] == (19, 7, 7)


def test_the_documented_mig_enabled_listings_parse():
    assert mig.parse_gpu_instances(read(FIXTURES, 'documented', 'lgi-a100-two-3g.txt')) == [
        {'gpu': 0, 'profile': '3g.20gb', 'profile_id': 9, 'id': 1, 'start': 4, 'size': 4},
        {'gpu': 0, 'profile': '3g.20gb', 'profile_id': 9, 'id': 2, 'start': 0, 'size': 4}]
    three = mig.parse_compute_instances(read(FIXTURES, 'documented', 'lci-a100-three-1c.txt'))
    assert [(c['gpu_instance'], c['profile'], c['id']) for c in three] == [(1, '1c.3g.20gb', 0), (1, '1c.3g.20gb', 1), (1, '1c.3g.20gb', 2)]
    placed = mig.parse_compute_instances(read(FIXTURES, 'documented', 'lci-a100-placement-column.txt'))
    assert [(c['gpu_instance'], c['profile']) for c in placed] == [(11, '1g.5gb'), (12, '1g.5gb'), (6, '1c.2g.10gb')]


def test_seed_000_h100_facts():
    """Seed 000: up to 7 instances of 10 GB on an H100 80GB -- seven 1g.10gb fit, an eighth does not."""
    a3 = families.get_family('a3-megagpu-8g')
    profiles = catalog.profiles_for_gpu(catalog.gpu_name_for_family(a3))
    smallest = profiles[0]
    assert smallest.name == '1g.%dgb' % a3.mig_instance_memory_gb and smallest.max_count == a3.mig_max_instances
    mig.check_layout(mig.wanted_instances([{'profile': '1g.10gb', 'count': 7}], profiles), profiles)
    with pytest.raises(ValueError, match='holds at most 7'):
        mig.check_layout(mig.wanted_instances([{'profile': '1g.10gb', 'count': 8}], profiles), profiles)
    assert catalog.gpu_name_for_family(families.get_family('a3-ultragpu-8g')) == 'NVIDIA H200'
    assert 'no son compatibles con GPU de varias instancias' in read(SEEDS, [n for n in os.listdir(SEEDS) if n.startswith('003_')][0])
    assert set(catalog.TECHNOLOGIES_WITHOUT_MIG) == {families.TCPX, families.TCPXO}


@pytest.mark.parametrize('instances', [
    [{'profile': '1g.18gb', 'count': 7}],
    [{'profile': '7g.141gb'}],
    [{'profile': '4g.71gb'}, {'profile': '3g.71gb'}],
    [{'profile': '3g.71gb', 'count': 2}],
    [{'profile': '3g.71gb'}, {'profile': '2g.35gb', 'count': 2}],
    [{'profile': '2g.35gb', 'count': 3}, {'profile': '1g.18gb'}],
    [{'profile': '1g.35gb', 'count': 4}],
    [{'profile': 'MIG 1g.18gb+me'}, {'profile': '19', 'count': 6}],
    [{'profile': '3g.71gb', 'compute_instances': ['1c.3g.71gb', '2c.3g.71gb']}, {'profile': '4g.71gb'}],
])
def test_layouts_that_fit_an_h200(instances):
    profiles = h200_live()
    wanted = mig.wanted_instances(instances, profiles)
    mig.check_layout(wanted, profiles)
    starts = mig.fit(wanted, profiles)
    sizes = {p.name: p.memory_slices for p in profiles}
    cells = [cell for w, start in zip(wanted, starts) for cell in range(start, start + sizes[w.profile])]
    assert len(cells) == len(set(cells)) and max(cells) < catalog.MEMORY_SLICES


@pytest.mark.parametrize('instances, message', [
    ([{'profile': '1g.10gb'}], "instances[0].profile: '1g.10gb' is not a MIG profile of NVIDIA H200; choose one of: 1g.18gb"),
    ([{'profile': '1g.18gb', 'count': 0}], 'instances[0].count: 0; give 1 or more'),
    ([{'profile': '1g.18gb', 'count': 8}], 'instances: 8 x 1g.18gb; NVIDIA H200 holds at most 7'),
    ([{'profile': '1g.18gb+me', 'count': 2}], 'holds at most 1'),
    ([{'profile': '4g.71gb'}, {'profile': '4g.71gb'}], 'holds at most 1'),
    ([{'profile': '7g.141gb'}, {'profile': '1g.18gb'}], 'instances: 7g.141gb + 1g.18gb do not fit on one NVIDIA H200'),
    ([{'profile': '4g.71gb'}, {'profile': '2g.35gb', 'count': 2}], 'do not fit'),
    ([{'profile': '3g.71gb', 'compute_instances': ['2c.3g.71gb', '2c.3g.71gb']}], 'need 4 compute slices; 3g.71gb has 3'),
    ([{'profile': '3g.71gb', 'compute_instances': ['1c.4g.71gb']}], 'instances[0].compute_instances: 1c.4g.71gb not a compute instance profile'),
])
def test_layouts_refused_with_the_field_and_the_fix(instances, message):
    profiles = h200_live()
    with pytest.raises(ValueError) as error:
        mig.check_layout(mig.wanted_instances(instances, profiles, 'NVIDIA H200'), profiles, 'NVIDIA H200')
    assert message in str(error.value)


def gpu(current='Enabled', pending=None):
    return {'index': 0, 'name': 'NVIDIA H200', 'pci_bus_id': '00000000:00:06.0', 'mig_current': current, 'mig_pending': pending or current}


def gi(gid, profile, start, size):
    return {'gpu': 0, 'id': gid, 'profile': profile, 'profile_id': 0, 'start': start, 'size': size}


def ci(gid, profile, cid=0):
    return {'gpu': 0, 'gpu_instance': gid, 'profile': profile, 'profile_id': 0, 'id': cid}


def summary(plan):
    return (plan.mode, sorted(g['id'] for g in plan.destroy), sorted(g['id'] for g in plan.keep),
            sorted((w.profile, start) for w, start in plan.create))


@pytest.mark.parametrize('name, state, current, instances, gis, cis, expected', [
    ('off to seven 1g', 'enabled', gpu('Disabled'), [{'profile': '1g.18gb', 'count': 7}], [], [],
     ('Enabled', [], [], [('1g.18gb', s) for s in range(7)])),
    ('pending enable is a change', 'enabled', gpu('Disabled', 'Enabled'), [{'profile': '7g.141gb'}], [], [],
     ('Enabled', [], [], [('7g.141gb', 0)])),
    ('already as asked', 'enabled', gpu(), [{'profile': '3g.71gb', 'count': 2}],
     [gi(1, '3g.71gb', 0, 4), gi(2, '3g.71gb', 4, 4)], [ci(1, '3g.71gb'), ci(2, '3g.71gb')], (None, [], [1, 2], [])),
    ('keeps the match, swaps the rest around it', 'enabled', gpu(), [{'profile': '3g.71gb'}, {'profile': '4g.71gb'}],
     [gi(1, '3g.71gb', 4, 4), gi(2, '1g.18gb', 0, 1)], [ci(1, '3g.71gb'), ci(2, '1g.18gb')], (None, [2], [1], [('4g.71gb', 0)])),
    ('a kept instance in the way rebuilds the GPU', 'enabled', gpu(), [{'profile': '3g.71gb'}, {'profile': '4g.71gb'}],
     [gi(1, '3g.71gb', 0, 4)], [ci(1, '3g.71gb')], (None, [1], [], [('3g.71gb', 4), ('4g.71gb', 0)])),
    ('other compute instances mean another instance', 'enabled', gpu(), [{'profile': '3g.71gb'}],
     [gi(1, '3g.71gb', 0, 4)], [ci(1, '1c.3g.71gb')], (None, [1], [], [('3g.71gb', 0)])),
    ('disable destroys first', 'disabled', gpu(), [], [gi(1, '7g.141gb', 0, 8)], [ci(1, '7g.141gb')], ('Disabled', [1], [], [])),
    ('disabled already', 'disabled', gpu('Disabled'), [], [], [], (None, [], [], [])),
])
def test_plans(name, state, current, instances, gis, cis, expected):
    profiles = h200_live()
    plan = mig.plan_gpu(current, state, mig.wanted_instances(instances, profiles), profiles, gis, cis)
    assert summary(plan) == expected, name
    assert plan.changes == (expected != (None, [], expected[2], []))


def test_default_compute_instances_are_created_in_one_run():
    profiles = h200_live()
    plan = mig.plan_gpu(gpu('Disabled'), 'enabled', mig.wanted_instances(
        [{'profile': '1g.18gb'}, {'profile': '2g.35gb', 'compute_instances': ['1c.2g.35gb']}, {'profile': '4g.71gb'}], profiles),
        profiles, [], [])
    assert mig.planned_commands(plan, profiles, []) == [
        ['-i', '0', '-mig', '1'], ['mig', '-i', '0', '-cgi', '5:0,19:6', '-C'], ['mig', '-i', '0', '-cgi', '14:4'],
        ['mig', '-i', '0', '-gi', '<new>', '-cci', '1c.2g.35gb']]


def test_commands_destroy_compute_instances_first_and_create_at_placements():
    profiles = h200_live()
    plan = mig.plan_gpu(gpu(), 'enabled', mig.wanted_instances(
        [{'profile': '3g.71gb', 'compute_instances': ['1c.3g.71gb', '2c.3g.71gb']}], profiles), profiles, [gi(5, '1g.18gb', 0, 1)], [ci(5, '1g.18gb')])
    assert mig.planned_commands(plan, profiles, [ci(5, '1g.18gb')]) == [
        ['mig', '-i', '0', '-gi', '5', '-dci'], ['mig', '-i', '0', '-gi', '5', '-dgi'],
        ['mig', '-i', '0', '-cgi', '9:0'], ['mig', '-i', '0', '-gi', '<new>', '-cci', '2c.3g.71gb,1c.3g.71gb']]


def test_busy_and_gpudirect_problems():
    assert mig.busy_problem(gpu(), [{'pci_bus_id': '00000000:00:07.0', 'pid': 1, 'name': 'x'}]) is None
    assert 'GPU 0 (00000000:00:06.0) is busy: pid 42 python3' in mig.busy_problem(gpu(), [{'pci_bus_id': '00000000:00:06.0', 'pid': 42, 'name': 'python3'}])
    with pytest.raises(mig.MigError, match='gpudirect_technology: this host runs GPUDirect-TCPXO, which does not work with multi-instance GPU'):
        mig.check_gpudirect('TCPXO', 'enabled')
    mig.check_gpudirect('TCPX', 'disabled')
    mig.check_gpudirect('none', 'enabled')


# -- the host stage's inputs (cos_host_prep_mig, cos_host_prep_gpudirect), checked on the controller ------------------

def role_spec_problems(**extra):
    """What the role's argument spec (which gpudirect_plan validates the host stage with) says of the variables."""
    from ansible_collections.aiinfra.gpudirect.plugins.modules import gpudirect_plan
    return gpudirect_plan.validation_problems(host_spec(), dict({'machine_type': 'a3-highgpu-8g'}, **extra))[0]


def host_spec():
    import pathlib
    import yaml
    path = pathlib.Path(__file__).resolve().parents[4] / 'roles' / 'cos_host_prep' / 'meta' / 'argument_specs.yml'
    options = yaml.safe_load(path.read_text(encoding='utf-8'))['argument_specs']['main']['options']
    return {name[len('cos_host_prep_'):]: option for name, option in options.items()}


@pytest.mark.parametrize('extra, message', [
    ({'gpudirect': False, 'mig': {'state': 'on'}}, 'value of state must be one of: enabled, disabled, got: on found in mig'),
    ({'gpudirect': False, 'mig': {'instance': []}}, 'instance. Supported parameters include'),
])
def test_the_roles_argument_spec_refuses_unknown_mig_keys_and_states(extra, message):
    assert [(options, text) for options, text in role_spec_problems(**extra) if message in text] and all(
        options == ['mig'] for options, _text in role_spec_problems(**extra))


def host_params(**extra):
    """The role's variables as gpudirect_plan checks them: the role's own argument spec, without the cos_host_prep_ prefix."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import inputs
    from ansible_collections.aiinfra.gpudirect.plugins.modules.gpudirect_plan import unset_removed
    result = ArgumentSpecValidator(host_spec()).validate(dict({'machine_type': 'a3-highgpu-8g'}, **extra))
    assert not result.error_messages
    return inputs, dict(result.validated_parameters, mig=unset_removed(result.validated_parameters['mig']))


@pytest.mark.parametrize('extra, message', [
    ({'mig': {'instances': [{'profile': '1g.10gb', 'count': 7}]}},
     'mig: a3-highgpu-8g runs GPUDirect-TCPX, which does not work with multi-instance GPU; set gpudirect: false'),
    ({'gpudirect': False, 'mig': {'instances': [{'profile': '1g.18gb'}]}},
     "mig: instances[0].profile: '1g.18gb' is not a MIG profile of NVIDIA H100 80GB HBM3; choose one of: 1g.10gb"),
    ({'gpudirect': False, 'mig': {'instances': [{'profile': '1g.10gb', 'count': 8}]}}, 'mig: instances: 8 x 1g.10gb; NVIDIA H100 80GB HBM3 holds at most 7'),
    ({'gpudirect': False, 'mig': {'gpus': [8]}}, 'mig: gpus 8; a3-highgpu-8g has GPUs 0-7'),
    ({'gpudirect': False, 'mig': {'state': 'enabled'}}, 'mig: instances: give the GPU instances each GPU gets'),
])
def test_the_host_stage_refuses_mig_inputs(extra, message):
    inputs, params = host_params(**extra)
    with pytest.raises(inputs.InputError) as error:
        inputs.check_host_inputs(params)
    assert message in str(error.value)


@pytest.mark.parametrize('extra', [
    {},
    {'gpudirect': False, 'mig': {'instances': [{'profile': '1g.10gb', 'count': 7}]}},
    {'gpudirect': False, 'mig': {'gpus': [0, 1], 'instances': [{'profile': '4g.40gb'}, {'profile': '3g.40gb', 'compute_instances': ['1c.3g.40gb'] * 3}]}},
    {'mig': {'state': 'disabled'}},
])
def test_the_host_stage_accepts_mig_inputs(extra):
    inputs, params = host_params(**extra)
    inputs.check_host_inputs(params)
