# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/nccl/ (parse.py, verdict.py, preflight.py): the parser on every kind of nccl-tests output, the verdict table, the preflight.

Ground truth: the seed manual's sample outputs (read from tests/unit/seeds/, verbatim), nvidia-smi as
captured on an H200 machine (tests/fixtures/nccl/nvidia-smi/), and hand-made outputs in nccl-tests'
own formats (tests/fixtures/nccl/, see its README.md -- not captured from runs).
"""
from __future__ import annotations

import glob
import importlib.util
import json
import os
import re

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import parse as nccl_parse
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import verdict as nccl_verdict
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import preflight as nccl_preflight

TESTS = os.path.join(os.path.dirname(__file__), '..', '..', '..')
FIXTURES = os.path.join(TESTS, 'fixtures', 'nccl')
SMI = os.path.join(FIXTURES, 'nvidia-smi', 'h200x2-2026-11-30')


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return handle.read()


def seed_samples():
    """The two sample outputs of seed 003 (TCPXO first, then TCPX), cut from the verbatim seed copy."""
    path = glob.glob(os.path.join(TESTS, 'unit', 'seeds', '003_*.txt'))[0]
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    return re.findall(r'(#\s+out-of-place.*?# Avg bus bandwidth\s*:\s*\S+\n)', text, re.S)


def failing(verdict):
    return sorted({c['criterion'] for c in verdict['checks'] if c['status'] == nccl_parse.FAILED})


def only(results):
    assert len(results['collectives']) == 1
    return results['collectives'][0]


# ---------------------------------------------------------------------------------------------
# The seeds' sample outputs
# ---------------------------------------------------------------------------------------------

def test_seed_fixtures_are_the_seed_text():
    tcpxo, tcpx = seed_samples()
    assert fixture('seed003_tcpxo_all_gather.txt') == tcpxo
    assert fixture('seed003_tcpx_all_gather.txt') == tcpx


def test_seed_tcpxo_sample_parses_to_its_numbers():
    coll = only(nccl_parse.parse(seed_samples()[0], collective='all_gather'))
    assert len(coll['rows']) == 11
    assert coll['rows'][0]['size'] == 1048576 and coll['rows'][0]['root'] == -1
    assert coll['rows'][9]['in_place'] == {'time_us': 11706.0, 'algbw': 45.86, 'busbw': 43.0, 'wrong': 0, 'error': None}
    assert coll['avg_busbw'] == 22.449
    assert coll['avg_busbw_recomputed'] == pytest.approx(22.4486, abs=1e-4)
    assert (coll['peak_busbw'], coll['peak_busbw_size']) == (122.14, 1073741824)
    assert (coll['largest_size'], coll['busbw_at_largest_size']) == (1073741824, 120.19)
    assert (coll['out_of_bounds'], coll['out_of_bounds_status']) == (0, 'OK')
    # 2 nodes x 8 GPUs: busbw/algbw = 15/16 for all_gather
    assert (coll['ranks'], coll['ranks_source']) == (16, 'busbw/algbw of the largest rows')
    assert coll['name_source'] == 'hint' and coll['network'] is None


CT = 'cluster-toolkit v1.95.0 '


def test_seed_verdicts():
    """Issue 26: seed 003's two healthy samples pass against the published reference at their largest size (its average,
    22.45 GB/s over a sweep from 1 MiB, is information and no longer a gate)."""
    tcpxo, tcpx = (nccl_parse.parse(s, collective='all_gather') for s in seed_samples())
    mega = nccl_verdict.evaluate(tcpxo, machine_type='a3-megagpu-8g')
    assert mega['passed'] and mega['verdict'] == 'PASS', mega['summary']
    assert mega['summary'].startswith('PASS -- all_gather: bus bandwidth at 1 GiB 122.14 GB/s >= 110.03 GB/s (0.6 of 183.38 GB/s, '
                                      'a3-megagpu-8g all_gather 2 nodes, ' + CT + 'examples/gke-a3-megagpu/README.md)'), mega['summary']
    checks = {c['criterion']: c for c in mega['checks']}
    assert checks['avg_busbw']['status'] == nccl_parse.SKIPPED and checks['avg_busbw']['value'] == 22.449
    assert checks['line_rate']['status'] == nccl_parse.PASSED and checks['line_rate']['threshold'] == 200.0
    assert mega['collectives']['all_gather']['reference']['judged_size'] == 1 << 30
    high = nccl_verdict.evaluate(tcpx, machine_type='a3-highgpu-8g')
    assert high['passed'], high['reasons']
    assert high['summary'].startswith('PASS -- all_gather: bus bandwidth at 512 MiB 71.28 GB/s >= 42.81 GB/s (0.6 of 71.35 GB/s, '
                                      'a3-highgpu-8g all_gather 2 nodes, ' + CT + 'examples/gke-a3-highgpu/multi-node-test-plan.md)')
    # the GPUDirect check cannot be made: the samples carry no NCCL lines, and the summary says so (issue 24 item 7)
    assert {c['criterion']: c['status'] for c in high['checks']}['gpudirect'] == nccl_parse.SKIPPED
    assert '; network not judged: the log holds no NCCL network line; run with NCCL_DEBUG=INFO' in high['summary'], high['summary']
    assert not nccl_verdict.evaluate(tcpx, machine_type='a3-highgpu-8g', require_network_evidence=True)['passed']
    # A3 Edge is judged on A3 High's curve, derived, and says so
    edge = nccl_verdict.evaluate(tcpx, machine_type='a3-edgegpu-8g')
    assert edge['passed'] and 'derived from a3-highgpu-8g (the same GPUDirect-TCPX stack' in edge['summary']


def test_a_run_with_no_reference_is_not_judged_never_passed():
    """Issue 26: no reference, no thresholds (or a sweep too short to judge) and nothing failed: NOT JUDGED, not PASS."""
    results = nccl_parse.parse(seed_samples()[1], collective='all_gather')
    for verdict in (nccl_verdict.evaluate(results), nccl_verdict.evaluate(results, technology='TCPX'),
                    nccl_verdict.evaluate(nccl_parse.parse(seed_samples()[1], collective='broadcast'), machine_type='a3-highgpu-8g')):
        assert verdict['verdict'] == 'NOT JUDGED' and not verdict['passed'] and not verdict['reasons'], verdict['summary']
        assert verdict['summary'].startswith('NOT JUDGED -- '), verdict['summary']
        assert 'bandwidth not judged: no published reference for ' in verdict['summary']
        assert '0.00 GB/s' not in verdict['summary']
    # a sweep that stops below 64 MiB measures latency: not judged, saying so
    results = nccl_parse.parse(seed_samples()[1], collective='all_gather')
    coll = only(results)
    coll['rows'] = [r for r in coll['rows'] if r['size'] <= 32 << 20]
    coll['largest_size'], coll['avg_busbw'] = 32 << 20, None
    short = nccl_verdict.evaluate(results, machine_type='a3-highgpu-8g')
    assert short['verdict'] == 'NOT JUDGED', short['summary']
    assert 'the sweep stops at 32 MiB, below 64 MiB: small messages measure latency, not the fabric' in short['summary']


def test_reference_curve_at_the_judged_size():
    ref = nccl_verdict.thresholds_for('a3-megagpu-8g')['all_gather']['reference']

    def at(size):
        return nccl_verdict.reference_busbw(ref['points'], size)

    assert (at(512 << 20), at(1 << 30), at(8 << 30), at(64 << 30)) == (175.23, 183.38, 188.90, 188.90)
    assert at(768 << 20) == pytest.approx(175.23 + (183.38 - 175.23) * (0.5849625), abs=1e-3)   # log2-linear
    high = nccl_verdict.thresholds_for('a3-highgpu-8g')['all_gather']['reference']
    assert nccl_verdict.reference_busbw(high['points'], 8 << 30) == 71.35   # above the curve: its last point
    ultra = nccl_verdict.thresholds_for('a3-ultragpu-8g')['all_gather']['reference']
    a4 = nccl_verdict.thresholds_for('a4-highgpu-8g')['all_gather']['reference']
    assert not a4['derived_from'] and not ultra['derived_from']
    assert nccl_verdict.reference_busbw(ultra['points'], 8 << 30) == 335.67
    assert nccl_verdict.reference_busbw(a4['points'], 8 << 30) == 374.57


def test_bandwidth_above_the_line_rate_fails():
    """A busbw above the data NICs' line rate is not a measurement of the network (all ranks on one host, ...)."""
    results = nccl_parse.parse(seed_samples()[1], collective='all_gather')
    only(results)['rows'][-1]['out_of_place']['busbw'] = 170.90
    verdict = nccl_verdict.evaluate(results, machine_type='a3-highgpu-8g')
    assert failing(verdict) == ['line_rate'], verdict['summary']
    assert ('bus bandwidth 170.90 GB/s at 512 MiB is above the line rate, 100.00 GB/s (4 x 200 Gb/s data NICs of a3-highgpu-8g): '
            'not a measurement of the network') in verdict['reasons'][0]


def test_problems_of_the_run_fail_a_verdict_the_table_passes():
    _tcpxo, tcpx = (nccl_parse.parse(s, collective='all_gather') for s in seed_samples())
    verdict = nccl_verdict.evaluate(tcpx, machine_type='a3-highgpu-8g', run_problems=['exited with status 1'])
    assert not verdict['passed'] and verdict['verdict'] == 'FAIL' and failing(verdict) == ['run']
    assert verdict['reasons'] == ['nccl-tests: exited with status 1']
    assert verdict['summary'] == 'FAIL -- nccl-tests: exited with status 1'
    assert verdict['collectives']['all_gather']['passed']   # the table itself is fine


def test_a_row_missing_from_the_seed_table_is_caught_by_the_printed_average():
    lines = seed_samples()[0].splitlines(True)
    del lines[-4]
    verdict = nccl_verdict.evaluate(nccl_parse.parse(''.join(lines), 'all_gather'), machine_type='a3-highgpu-8g')
    assert 'average_consistent' in failing(verdict)


# ---------------------------------------------------------------------------------------------
# Every kind of output: the verdict table
# ---------------------------------------------------------------------------------------------

VERDICTS = [
    # (fixture, family, verdict, failing criteria): bandwidth is judged at the sweep's largest size against 0.6 of the
    # family's published reference there (A3 Mega 175.23 GB/s at 512 MiB, 183.38 at 1 GiB; A3 High 70.99 at 256 MiB,
    # 71.35 at 512 MiB; A3 Ultra 335.67 at 8 GiB); the average is no longer a gate.
    ('current_tcpxo_fastrak_pass.txt', 'a3-megagpu-8g', 'PASS', []),                  # 168.42 >= 105.14 at 512 MiB
    ('current_socket_fallback_a3mega.txt', 'a3-megagpu-8g', 'FAIL', ['gpudirect', 'large_message_busbw']),   # Socket, 3.05
    ('multi_collective_mpi_tagged.txt', 'a3-highgpu-8g', 'FAIL', ['large_message_busbw']),   # all_gather 33.94 < 42.81
    ('rdma_gib_kubectl_timestamps.txt', 'a3-ultragpu-8g', 'PASS', []),                 # 379.26 >= 201.40 at 8 GiB, < 400 line rate
    ('old_format_all_reduce.txt', None, 'NOT JUDGED', []),                            # no machine type, no thresholds
    ('check_off_na.txt', 'a3-highgpu-8g', 'PASS', []),                                 # 48.00 >= 42.59 at 256 MiB
    ('wrong_values_oob_failed.txt', 'a3-highgpu-8g', 'FAIL', ['out_of_bounds', 'wrong_values']),   # reduce_scatter: no reference
    ('truncated_run.txt', 'a3-megagpu-8g', 'FAIL', ['complete', 'results']),           # stops at 32 MiB: bandwidth not judged
    ('min_bw_failed.txt', None, 'FAIL', ['nccl_tests_min_bw']),
    ('json_all_gather.json', 'a3-megagpu-8g', 'FAIL', ['large_message_busbw']),       # 80.84 < 105.14 at 512 MiB
    ('json_truncated.json', 'a3-megagpu-8g', 'FAIL', ['results']),
    ('seed003_tcpxo_all_gather.txt', 'a3-megagpu-8g', 'PASS', []),                     # 122.14 >= 110.03 at 1 GiB
    ('seed003_tcpx_all_gather.txt', 'a3-highgpu-8g', 'PASS', []),                      # 71.28 >= 42.81 at 512 MiB
]


@pytest.mark.parametrize('name, family, word, criteria', VERDICTS, ids=[v[0] for v in VERDICTS])
def test_verdict_table(name, family, word, criteria):
    verdict = nccl_verdict.evaluate(nccl_parse.parse(fixture(name), collective='all_gather'), machine_type=family)
    assert verdict['verdict'] == word, verdict['summary']
    assert failing(verdict) == criteria
    assert verdict['passed'] is (word == 'PASS')
    assert bool(verdict['reasons']) is (word == 'FAIL')


def test_ncclinfo_line_glued_to_half_a_row_is_split_off():
    results = nccl_parse.parse(fixture('current_tcpxo_fastrak_pass.txt'))
    coll = only(results)
    assert len(coll['rows']) == 10 and coll['malformed_rows'] == [] and results['unparsed_lines'] == []
    first = coll['rows'][0]
    assert (first['size'], first['root'], first['out_of_place']['busbw'], first['in_place']['busbw']) == (1048576, -1, 2.0, 2.06)
    assert coll['network'] == 'FasTrak' and coll['gpudirect_rdma'] is True
    assert (coll['ranks'], coll['nodes'], coll['ranks_source']) == (16, 2, 'nccl log (nranks)')
    assert coll['nccl_version'] == '2.21.5' and coll['nccl_tests_version'] == '2.17.6' and coll['gpus_per_rank'] == 1
    assert len(coll['devices']) == 16 and coll['devices'][8]['host'] == 'a3mega-vm-2'


def test_socket_fallback_names_the_misconfiguration():
    results = nccl_parse.parse(fixture('current_socket_fallback_a3mega.txt'))
    verdict = nccl_verdict.evaluate(results, machine_type='a3-megagpu-8g')
    message = [c for c in verdict['checks'] if c['criterion'] == 'gpudirect'][0]['message']
    assert message.startswith('NCCL used Socket, not GPUDirect-TCPXO (FasTrak)')
    assert 'Plugin load (libnccl-net.so) returned 2' in message and 'misconfiguration' in message
    assert [w['text'] for w in results['warnings']] == [
        'a3mega-vm-1:5200:5200 [0] misc/ibvwrap.cc:190 NCCL WARN Failed to open libibverbs.so[.1]']


def test_old_format_without_hash_footer_and_with_error_column():
    coll = only(nccl_parse.parse(fixture('old_format_all_reduce.txt')))
    assert coll['name'] is None
    assert len(coll['rows']) == 25 and all(r['root'] is None for r in coll['rows'])
    assert coll['rows'][0]['in_place']['error'] == 4e-07 and coll['rows'][0]['in_place']['wrong'] is None
    assert coll['complete'] and coll['avg_busbw'] == 39.3892 and coll['ranks'] == 8
    assert coll['wrong_total'] is None and coll['validation'] is True


def test_wrong_as_na_means_not_checked():
    coll = only(nccl_parse.parse(fixture('check_off_na.txt')))
    assert coll['wrong_total'] is None and coll['validation'] is False
    checks = {c['criterion']: c for c in nccl_verdict.evaluate({'collectives': [coll]}, machine_type='a3-highgpu-8g')['checks']}
    assert checks['wrong_values']['status'] == nccl_parse.SKIPPED and '-c 0' in checks['wrong_values']['message']


def test_several_collectives_and_wrapper_lines():
    results = nccl_parse.parse(fixture('multi_collective_mpi_tagged.txt'))
    assert [c['name'] for c in results['collectives']] == ['all_gather', 'all_reduce']
    assert [c['network'] for c in results['collectives']] == ['GPUDirectTCPX', 'GPUDirectTCPX']
    assert [u['line'] for u in results['unparsed_lines']] == [1, 2, len(fixture('multi_collective_mpi_tagged.txt').splitlines())]
    assert results['collectives'][1]['rows'][0]['redop'] == 'sum'


def test_truncated_run_reports_the_half_row_and_the_timeout():
    coll = only(nccl_parse.parse(fixture('truncated_run.txt')))
    assert len(coll['rows']) == 6 and not coll['complete'] and coll['avg_busbw'] is None
    assert coll['malformed_rows'][0]['why'].startswith('incomplete row')
    assert coll['errors'][0]['text'] == 'a3mega-vm-1: Test timeout (600s) common.cu:372'


def test_json_file_matches_its_numbers():
    coll = only(nccl_parse.parse(fixture('json_all_gather.json')))
    assert coll['name'] == 'all_gather' and coll['name_source'] == 'json args'
    assert coll['nccl_version'] == '2.21.5' and coll['ranks'] == 16 and len(coll['rows']) == 10
    assert coll['avg_busbw'] == pytest.approx(coll['avg_busbw_recomputed'], abs=1e-5)
    assert coll['out_of_bounds_status'] == 'OK' and coll['avg_busbw_check'] is None


def test_json_cut_short_is_an_error_not_a_guess():
    results = nccl_parse.parse(fixture('json_truncated.json'))
    assert results['collectives'] == [] and 'cannot be read' in results['errors'][0]


def test_an_unknown_line_is_reported_not_skipped():
    text = seed_samples()[1].replace('# Out of bounds', 'something odd happened\n# Out of bounds')
    results = nccl_parse.parse(text)
    assert results['unparsed_lines'] == [{'line': 14, 'text': 'something odd happened'}]


def test_a_row_that_cannot_be_read_fails_results():
    text = seed_samples()[1].replace('    4194304         65536     float', '    4194304         65536     3.14')
    verdict = nccl_verdict.evaluate(nccl_parse.parse(text, 'all_gather'), machine_type='a3-highgpu-8g')
    assert 'results' in failing(verdict)


def test_name_in_the_log_wins_over_the_hint():
    coll = only(nccl_parse.parse(fixture('wrong_values_oob_failed.txt'), collective='all_gather'))
    assert (coll['name'], coll['name_source']) == ('reduce_scatter', 'log')


# ---------------------------------------------------------------------------------------------
# Property: the average nccl-tests prints is the mean of its rows (within the rounding printed)
# ---------------------------------------------------------------------------------------------

def _fixture_maker():
    """tests/fixtures/nccl/make_fixtures.py, which writes rows in nccl-tests' own number format."""
    spec = importlib.util.spec_from_file_location('make_fixtures', os.path.join(FIXTURES, 'make_fixtures.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


float_str = _fixture_maker().float_str   # nccl-tests' getFloatStr (src/util.cu)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 5000.0), st.floats(0.0, 5000.0)), min_size=1, max_size=24))
def test_recomputed_average_matches_printed(bandwidths):
    lines, values = [], []
    for index, (oop, inp) in enumerate(bandwidths):
        size = 1024 << index
        bodies = ''.join('  %7s  %6s  %6s  %6g' % (float_str(10.0, 7), float_str(bw, 6), float_str(bw, 6), 0) for bw in (oop, inp))
        lines.append('%12d  %12d  %8s  %6s  %6i%s' % (size, size // 4, 'float', 'sum', -1, bodies))
        values += [oop, inp]
    lines += ['# Out of bounds values : 0 OK', '# Avg bus bandwidth    : %g ' % (sum(values) / len(values))]
    results = nccl_parse.parse('\n'.join(lines))
    coll = only(results)
    assert abs(coll['avg_busbw'] - coll['avg_busbw_recomputed']) <= coll['avg_busbw_tolerance']
    checks = {c['criterion']: c['status'] for c in nccl_verdict.evaluate(results)['checks']}
    assert checks['average_consistent'] == nccl_parse.PASSED


# ---------------------------------------------------------------------------------------------
# Thresholds, baseline
# ---------------------------------------------------------------------------------------------

def test_thresholds_come_from_the_catalog_and_can_be_overridden():
    mega = nccl_verdict.thresholds_for('a3-megagpu-8g')['all_gather']
    assert mega['source'] == 'catalog' and mega['reference']['fraction'] == nccl_verdict.REFERENCE_FRACTION == 0.6
    assert mega['reference']['url'].startswith('https://github.com/GoogleCloudPlatform/cluster-toolkit/blob/')
    assert set(nccl_verdict.thresholds_for('a4-highgpu-8g')) == {'all_gather'}
    assert nccl_verdict.thresholds_for(None) == {}
    table = nccl_verdict.thresholds_for('a3-megagpu-8g', {'all_gather_perf': {'large_busbw_gbps': 90}, 'all_reduce': {'avg_busbw_gbps': 40}})
    assert table['all_gather'] == {'large_busbw_gbps': 90.0, 'source': 'override'}   # a fixed gate replaces the reference
    assert table['all_reduce'] == {'avg_busbw_gbps': 40.0, 'source': 'override'}
    seed = nccl_parse.parse(seed_samples()[0], 'all_gather')
    # the average gates again when asked for: seed 003's TCPXO average, 22.45 GB/s, is below 30
    verdict = nccl_verdict.evaluate(seed, machine_type='a3-megagpu-8g', thresholds={'all_gather': {'avg_busbw_gbps': 30}})
    assert failing(verdict) == ['avg_busbw']
    assert verdict['reasons'][0].startswith('all_gather: average bus bandwidth 22.45 GB/s < 30.00 GB/s (a3-megagpu-8g, override)')
    verdict = nccl_verdict.evaluate(seed, machine_type='a3-megagpu-8g', thresholds={'all_gather': {'avg_busbw_gbps': None}})
    assert verdict['passed']
    verdict = nccl_verdict.evaluate(seed, machine_type='a3-megagpu-8g', thresholds={'all_gather': {'large_busbw_gbps': None}})
    assert verdict['verdict'] == 'NOT JUDGED'


@pytest.mark.parametrize('overrides, message', [
    ({'all_gather': {'avg': 3}}, 'thresholds.all_gather: unknown key(s) avg; use avg_busbw_gbps, large_busbw_gbps'),
    ({'all_gather': 30}, 'thresholds.all_gather: give a mapping'),
    ({'all_gather': {'avg_busbw_gbps': 'fast'}}, "thresholds.all_gather.avg_busbw_gbps: 'fast' is not a number of GB/s"),
    ({'all_gather': {'avg_busbw_gbps': -1}}, 'thresholds.all_gather.avg_busbw_gbps: -1.0 is negative'),
])
def test_bad_thresholds_name_the_field(overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        nccl_verdict.thresholds_for(None, overrides)


def test_unknown_family_names_the_field():
    with pytest.raises(ValueError, match="^machine_type: 'a9-bigger' is not a GPUDirect machine family"):
        nccl_verdict.evaluate({'collectives': []}, machine_type='a9-bigger')


def test_baseline_regression_fails_the_verdict():
    now = nccl_parse.parse(seed_samples()[0], 'all_gather')
    before = json.loads(json.dumps(now))
    before['collectives'][0]['avg_busbw'] = 30.0
    verdict = nccl_verdict.evaluate(now, baseline=before, max_regression_pct=10)
    assert failing(verdict) == ['baseline']
    assert 'average bus bandwidth fell 25.2% (30.00 -> 22.45 GB/s; limit 10.00%)' in verdict['reasons'][0]
    # no drop, but no bandwidth criterion either (no machine type): reported, not judged
    assert nccl_verdict.evaluate(now, baseline=before, max_regression_pct=30)['verdict'] == 'NOT JUDGED'


# ---------------------------------------------------------------------------------------------
# Preflight on nvidia-smi as captured on an H200 machine
# ---------------------------------------------------------------------------------------------

def smi(name):
    with open(os.path.join(SMI, name), encoding='utf-8') as handle:
        return handle.read()


def test_nvidia_smi_captures_parse():
    gpus = nccl_preflight.parse_nvidia_smi_gpus(smi('query-gpu.csv'))
    assert [(g['index'], g['name'], g['driver_version'], g['mig_mode'], g['memory_mib']) for g in gpus] == [
        (0, 'NVIDIA H200', '580.159.04', 'Disabled', 143771), (1, 'NVIDIA H200', '580.159.04', 'Disabled', 143771)]
    assert nccl_preflight.parse_nvidia_smi_gpus(smi('query-gpu-header.csv')) == gpus
    assert nccl_preflight.parse_nvidia_smi_topology(smi('topo-m.txt')) == {'GPU0': {'GPU1': 'NV18'}, 'GPU1': {'GPU0': 'NV18'}}


def test_preflight_on_the_h200_capture():
    gpus = nccl_preflight.parse_nvidia_smi_gpus(smi('query-gpu.csv'))
    topology = nccl_preflight.parse_nvidia_smi_topology(smi('topo-m.txt'))
    assert nccl_preflight.check_gpus(gpus, topology, expected_count=2, gpu_model='NVIDIA H200', min_driver=535) == []
    problems = nccl_preflight.check_gpus(gpus, topology, expected_count=8, gpu_model='NVIDIA H100', min_driver=535)
    assert problems == ['nvidia-smi shows 2 GPU(s); the family has 8: a GPU is missing or the driver is not loaded',
                        'GPU model NVIDIA H200, expected NVIDIA H100']


def test_preflight_refuses_more_gpus_than_the_host_has_and_the_verdict_quotes_nccl_tests():
    gpus = nccl_preflight.parse_nvidia_smi_gpus(smi('query-gpu.csv'))
    topology = nccl_preflight.parse_nvidia_smi_topology(smi('topo-m.txt'))
    assert nccl_preflight.check_gpus(gpus, topology, requested=4) == [
        'ngpus: the test asks for 4 GPU(s) per process and nvidia-smi shows 2; give ngpus 2 or less']
    assert nccl_preflight.check_gpus(gpus, topology, requested=2) == []
    # Without the preflight, nccl-tests' own line is the verdict's reason (it was only in unparsed_lines).
    printed = '# nThread 1 nGpus 4 minBytes 8 maxBytes 8 step: 2(factor)\nInvalid number of GPUs: 4 requested but only 1 were found.\n'
    verdict = nccl_verdict.evaluate(nccl_parse.parse(printed, 'all_gather'), run_problems=['exited with status 1'])
    assert not verdict['passed']
    assert 'it printed: Invalid number of GPUs: 4 requested but only 1 were found.' in verdict['summary'], verdict['summary']


def test_a_verdict_on_stand_in_output_says_so_in_the_summary_and_the_report():
    sample = seed_samples()[0]
    measured = nccl_verdict.evaluate(nccl_parse.parse(sample, 'all_gather'), machine_type='a3-megagpu-8g')
    assert not measured['synthetic'] and measured['summary'].startswith(measured['verdict'] + ' -- ')
    labelled = '[aiinfra sandbox stand-in: synthetic output, no GPU/NCCL/host access]\n' + sample
    made_up = nccl_verdict.evaluate(nccl_parse.parse(labelled, 'all_gather'), machine_type='a3-megagpu-8g')
    assert made_up['synthetic'] and made_up['summary'] == 'STAND-IN OUTPUT (synthetic numbers, nothing measured): ' + measured['summary']


def test_preflight_finds_mig_and_pcie_links():
    gpus = nccl_preflight.parse_nvidia_smi_gpus(smi('query-gpu.csv').replace('Disabled', 'Enabled', 1))
    topology = nccl_preflight.parse_nvidia_smi_topology(smi('topo-m.txt').replace('NV18', 'SYS'))
    problems = nccl_preflight.check_gpus(gpus, topology)
    assert problems == ['MIG mode is Enabled on GPU 0: NCCL tests need whole GPUs; disable MIG first',
                        'GPU pairs not linked by NVLink: GPU0-GPU1 SYS']


def test_bad_nvidia_smi_line_names_the_line():
    with pytest.raises(ValueError, match='nvidia-smi line 1'):
        nccl_preflight.parse_nvidia_smi_gpus('No devices were found')


def test_preflight_matches_what_it_printed_on_the_h200_machine():
    """preflight-result.json: the same functions run against the live nvidia-smi there (2026-11-30)."""
    with open(os.path.join(SMI, 'preflight-result.json'), encoding='utf-8') as handle:
        live = json.load(handle)
    gpus = nccl_preflight.parse_nvidia_smi_gpus(smi('query-gpu.csv'))
    assert live['gpus'] == gpus
    assert live['topology'] == nccl_preflight.parse_nvidia_smi_topology(smi('topo-m.txt'))
    assert live['problems_as_this_machine'] == []
    assert live['problems_as_a3_ultragpu_8g'] == nccl_preflight.check_gpus(
        gpus, live['topology'], expected_count=8, gpu_model='NVIDIA H200', min_driver=535)
