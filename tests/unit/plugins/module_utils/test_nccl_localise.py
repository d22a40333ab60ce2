# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The localisation core (module_utils/nccl/diagnose.py) driven by a SIMULATED pair runner: a pair fails when it holds a
host (or, restricted to one NIC, a NIC) the test marks bad. The real runs are the integration test's
(tests/integration/test_nccl_diagnose.py, on the stand-in hosts)."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import diagnose
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import parse as nccl_parse
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import report as nccl_report


def runner(bad=(), bad_nics=(), evidence=None):
    """Run a round: FAIL with 3 GB/s when the pair holds a bad host or a bad (host, NIC) of the NICs it uses."""
    def run_round(runs):
        out = []
        for run in runs:
            broken = any(h in bad for h in run['hosts']) or any(
                h in run['hosts'] and run['nic'] in (None, nic) for h, nic in bad_nics)   # a full run uses every NIC
            value = 3.0 if broken else (21.0 if run['nic'] else 150.0)
            facts = {h: dict((evidence or {}).get(h, {'gpus': 8, 'plugin': 'FasTrak 1.0.13'})) for h in run['hosts']}
            out.append(dict(run, verdict='FAIL' if broken else 'PASS', busbw_gbps=value, host_evidence=facts))
        return out
    return run_round


def names(count):
    return ['vm-%d' % n for n in range(1, count + 1)]


def test_one_bad_host_among_four_is_named_after_two_rounds():
    found = diagnose.diagnose(names(4), runner(bad={'vm-3'}))
    assert [[r['hosts'] for r in rnd] for rnd in found['rounds']] == [[['vm-1', 'vm-2'], ['vm-3', 'vm-4']],
                                                                      [['vm-3', 'vm-1'], ['vm-4', 'vm-2']]]
    assert diagnose.bad_hosts(found['hosts']) == ['vm-3']
    assert found['hosts']['vm-4']['status'] == 'healthy' and found['hosts']['vm-3']['reasons'] == [
        'every pair failed, also with healthy vm-1, vm-4']


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=4, max_value=64), st.data())
def test_one_bad_host_is_named_alone_within_two_rounds_plus_one_for_an_odd_count(count, data):
    hosts = names(count)
    bad = data.draw(st.sampled_from(hosts))
    found = diagnose.diagnose(hosts, runner(bad={bad}))
    assert diagnose.bad_hosts(found['hosts']) == [bad]
    assert all(row['status'] == 'healthy' for h, row in found['hosts'].items() if h != bad)
    assert len(found['rounds']) <= 2 + count % 2
    assert all(len({h for r in rnd for h in r['hosts']}) == 2 * len(rnd) for rnd in found['rounds'])   # disjoint pairs


def test_an_odd_host_is_paired_with_a_passed_host():
    found = diagnose.diagnose(names(5), runner())
    assert found['rounds'][1] == [{'hosts': ['vm-5', 'vm-1'], 'round': 2, 'nic': None}]
    assert not diagnose.bad_hosts(found['hosts']) and found['hosts']['vm-5']['status'] == 'healthy'


def test_without_a_host_that_passed_the_hosts_are_suspect_not_bad():
    found = diagnose.diagnose(names(2), runner(bad={'vm-2'}))
    assert len(found['rounds']) == 1 and {r['status'] for r in found['hosts'].values()} == {'suspect'}
    assert found['hosts']['vm-1']['reasons'] == ['its pairs failed (with vm-2), but no partner is known healthy']


def test_a_bad_nic_is_named_on_its_host():
    family = families.get_family('a3-megagpu-8g', field='machine_type')
    limit = diagnose.nic_threshold(family)
    assert limit == 15.0   # 8 x 200 Gb/s = 200 GB/s, / 8 NICs x 0.6
    found = diagnose.diagnose(names(4), runner(bad_nics={('vm-2', 'eth3')}),
                              nics=family.data_interface_names, nic_limit=limit)
    assert diagnose.bad_hosts(found['hosts']) == ['vm-2'] and found['hosts']['vm-2']['bad_nics'] == ['eth3']
    assert len(found['rounds']) == 2 + 8 and all(len(rnd) == 1 for rnd in found['rounds'][2:])
    assert [f['nic'] for f in found['nics'] if f['named']] == ['eth3']


def test_a_host_with_another_plugin_version_or_a_missing_gpu_is_named():
    evidence = {h: {'gpus': 8, 'plugin': 'FasTrak 1.0.13', 'nccl_version': '2.21.5'} for h in names(6)}
    evidence['vm-4'] = dict(evidence['vm-4'], plugin='FasTrak 1.0.12')
    evidence['vm-6'] = dict(evidence['vm-6'], gpus=7)
    found = diagnose.diagnose(names(6), runner(evidence=evidence), expected_gpus=8)
    assert diagnose.bad_hosts(found['hosts']) == ['vm-4', 'vm-6']
    assert found['hosts']['vm-4']['reasons'] == ['GPUDirect plugin FasTrak 1.0.12 differs from FasTrak 1.0.13 (mixed versions hang NCCL)']
    assert found['hosts']['vm-6']['reasons'] == ['GPUs seen: 7 of 8']


def test_a_host_whose_gpu_preflight_found_a_problem_is_named_with_it():
    """nccl_perf puts its preflight's problems in host_evidence (gpu_problems) of the host it ran on, also when the
    preflight stopped the run; the pairs themselves all pass here, so only that evidence names the host."""
    remap = 'GPU 3: remapped rows pending; reset the GPU (or reboot) to apply them'
    evidence = {h: {'gpus': 8, 'plugin': 'FasTrak 1.0.13', 'gpu_problems': []} for h in names(4)}
    evidence['vm-3'] = dict(evidence['vm-3'], gpu_problems=[remap])
    evidence['vm-4'] = dict(evidence['vm-4'], gpu_problems=None)   # not the host that led its pair: not read
    found = diagnose.diagnose(names(4), runner(evidence=evidence), expected_gpus=8)
    assert diagnose.bad_hosts(found['hosts']) == ['vm-3']
    assert found['hosts']['vm-3']['reasons'] == ['nvidia-smi: ' + remap]
    assert found['hosts']['vm-3']['evidence']['gpu_problems'] == [remap]
    assert found['hosts']['vm-1']['evidence']['gpu_problems'] == [] and found['hosts']['vm-4']['evidence']['gpu_problems'] is None


def test_the_plan_names_round_one_and_the_rule_of_the_next():
    rounds = diagnose.plan(names(5))
    assert rounds[0] == {'round': 1, 'pairs': [['vm-1', 'vm-2'], ['vm-3', 'vm-4']]}
    assert 'vm-5, left over' in rounds[1]['rule']


def test_host_evidence_reads_gpus_plugin_and_network_per_host():
    text = '\n'.join([
        '#  Rank  0 Group  0 Pid   4100 on       vm-1 device  0 [0000:04:00] NVIDIA H100 80GB HBM3',
        '#  Rank  1 Group  0 Pid   4101 on       vm-2 device  0 [0000:04:00] NVIDIA H100 80GB HBM3',
        '#  Rank  2 Group  0 Pid   4102 on       vm-2 device  1 [0000:15:00] NVIDIA H100 80GB HBM3',
        'vm-1:4100:4100 [0] NCCL INFO NET/FasTrak ver. 1.0.13.',
        'vm-2:4101:4101 [0] NCCL INFO NET/FasTrak ver. 1.0.12.',
        'vm-2:4101:4231 [0] NCCL INFO Using network FasTrak'])
    found = nccl_parse.host_evidence(text)
    assert found['vm-1']['gpus'] == 1 and found['vm-2']['gpus'] == 2
    assert found['vm-1']['plugin'] == 'FasTrak 1.0.13' and found['vm-2']['plugin'] == 'FasTrak 1.0.12'
    assert found['vm-2']['network'] == 'FasTrak' and found['vm-1']['network'] is None


def test_gke_node_names_are_labelled_by_their_distinct_suffix():
    hosts = ['gke-a3mega-a3mega-gpu-59e9b4c6-sncp', 'gke-a3mega-a3mega-gpu-59e9b4c6-x7kq', 'gke-a3mega-a3mega-gpu-59e9b4c6-9d2f']
    labels, prefix = nccl_report.short_names(hosts)
    assert labels == dict(zip(hosts, ['sncp', 'x7kq', '9d2f'])) and prefix == 'gke-a3mega-a3mega-gpu-59e9b4c6-'
    # Names of two pools keep the words that differ; names with nothing in common, or one name, stay as they are.
    assert nccl_report.short_names(['gke-c-a-1-x', 'gke-c-b-2-y'])[0] == {'gke-c-a-1-x': 'a-1-x', 'gke-c-b-2-y': 'b-2-y'}
    assert nccl_report.short_names(['vm-1', 'host-2']) == ({'vm-1': 'vm-1', 'host-2': 'host-2'}, '')
    assert nccl_report.short_names(['gke-a-x'])[0] == {'gke-a-x': 'gke-a-x'}


def test_the_gib_plugin_line_is_each_hosts_plugin_version():
    text = ('nccl-test-host-1:4100:4100 [0] NCCL INFO NET/gIB : Initializing gIB v1.0.5\n'
            'nccl-test-host-1:4100:4100 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n'
            'nccl-test-host-2:4101:4101 [0] NCCL INFO NET/gIB : Initializing gIB v1.0.6\n'
            'nccl-test-host-2:4101:4232 [0] NCCL INFO Using network gIB\n')
    found = nccl_parse.host_evidence(text)
    assert found['nccl-test-host-1']['plugin'] == 'gIB 1.0.5' and found['nccl-test-host-1']['nccl_version'] == '2.21.5+cuda12.4'
    assert found['nccl-test-host-2']['plugin'] == 'gIB 1.0.6' and found['nccl-test-host-2']['network'] == 'gIB'
    assert found['nccl-test-host-2']['nccl_version'] is None
