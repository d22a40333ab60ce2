# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl_diagnose module, run in-process as Ansible hands it its arguments: bad input named before anything runs,
the runs it plans from nccl_perf's results, and check mode writing no report. The results fed in are nccl_perf's own
verdicts on the recorded seed 003 TCPXO sample (healthy) and on the Socket fallback fixture (failing)."""
from __future__ import annotations

import os
import re
import shutil
import socket

import pytest

from module_runner import run_module
from ansible_collections.aiinfra.gpudirect.plugins.modules import nccl_diagnose, nccl_perf

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'nccl')
HOSTS = ['vm-1', 'vm-2', 'vm-3', 'vm-4']


@pytest.fixture(autouse=True)
def kernel_log_of_the_capture(monkeypatch):
    """The preflight reads Xids with dmesg from PATH: the stand-in's (the capture's kernel log), not this machine's."""
    monkeypatch.setenv('PATH', os.path.join(FIXTURES, 'standin') + os.pathsep + os.environ['PATH'])


def judged(name):
    args = {'mode': 'parse', 'path': os.path.join(FIXTURES, name), 'machine_type': 'a3-megagpu-8g', 'collective': 'all_gather'}
    result = run_module(nccl_perf.main, args)
    assert 'failed' not in result
    return result


@pytest.mark.parametrize('args, message', [
    ({'hosts': ['vm-1']}, 'hosts: a diagnosis tests pairs of hosts; give at least two'),
    ({'hosts': ['vm-1', 'vm-1', 'vm-2']}, 'hosts: vm-1 given more than once'),
    ({'hosts': HOSTS, 'max_rounds': 0}, 'max_rounds: 0; give 1 or more'),
    ({'hosts': HOSTS, 'results': [{'hosts': ['vm-1', 'vm-9'], 'round': 1, 'result': {}}]},
     "results[0].hosts: ['vm-1', 'vm-9'] is not a pair of the hosts diagnosed"),
    ({'hosts': HOSTS, 'machine_type': 'a3'}, "machine_type: 'a3' is not a GPUDirect machine family"),
])
def test_bad_input_names_the_option(args, message):
    result = run_module(nccl_diagnose.main, dict({'machine_type': 'a3-megagpu-8g'}, **args))
    assert result['failed'] and result['msg'].startswith(message), result['msg']


def test_round_two_pairs_the_failed_pair_with_passed_hosts_and_check_mode_writes_nothing(tmp_path):
    good, bad = judged('seed003_tcpxo_all_gather.txt'), judged('current_socket_fallback_a3mega.txt')
    assert good['verdict']['verdict'] == 'PASS' and bad['verdict']['verdict'] == 'FAIL'
    results = [{'hosts': ['vm-1', 'vm-2'], 'round': 1, 'nic': None, 'result': good},
               {'hosts': ['vm-3', 'vm-4'], 'round': 1, 'nic': None, 'result': bad}]
    args = {'hosts': HOSTS, 'machine_type': 'a3-megagpu-8g', 'results': results, 'dest': str(tmp_path / 'report')}
    planned = run_module(nccl_diagnose.main, args, check_mode=True)
    assert [r['hosts'] for r in planned['next_runs']] == [['vm-3', 'vm-1'], ['vm-4', 'vm-2']] and not planned['done']
    assert planned['hosts']['vm-3']['status'] == 'suspect' and not (tmp_path / 'report').exists()
    results += [{'hosts': ['vm-3', 'vm-1'], 'round': 2, 'nic': None, 'result': bad},
                {'hosts': ['vm-4', 'vm-2'], 'round': 2, 'nic': None, 'result': good}]
    nics = run_module(nccl_diagnose.main, dict(args, results=results), check_mode=True)
    assert nics['bad_hosts'] == ['vm-3'] and nics['next_runs'][0]['nic'] == 'eth1'
    assert nics['next_runs'][0]['test_command'].startswith('/scripts/run-nccl-tcpxo.sh all_gather_perf "${LD_LIBRARY_PATH}" 8 eth1 1M 512M')
    done = run_module(nccl_diagnose.main, dict(args, results=results, nics=False), check_mode=True)
    assert done['done'] and done['files'] == [] and done['bad_hosts'] == ['vm-3'] and not (tmp_path / 'report').exists()


def test_a_host_whose_gpu_preflight_failed_is_named_with_the_gpu(tmp_path, monkeypatch):
    """nccl_perf's own failed result (its preflight stopped the run: the 1 x H200 capture with GPU 0's remapped rows
    pending) names this host bad, with the GPU, in the module's table and the report's junit.xml and summary.md."""
    capture = tmp_path / 'capture'
    shutil.copytree(os.path.join(FIXTURES, 'nvidia-smi', 'h200x1-2026-12-03'), capture)
    remapper = capture / 'q-row-remapper.txt'
    remapper.write_text(re.sub(r'(Pending\s+:) No', r'\1 Yes', remapper.read_text()))
    monkeypatch.setenv('STANDIN_NVIDIA_SMI_CAPTURE', str(capture))
    stopped = run_module(nccl_perf.main, {'mode': 'local', 'binary': os.path.join(FIXTURES, 'standin', 'all_gather_perf'),
                                          'nvidia_smi': os.path.join(FIXTURES, 'standin', 'nvidia-smi'), 'expected_gpus': 1})
    assert stopped['failed']
    here, good = socket.gethostname().split('.')[0], judged('seed003_tcpxo_all_gather.txt')
    hosts = [here, 'vm-2', 'vm-3', 'vm-4']
    results = [{'hosts': [here, 'vm-2'], 'round': 1, 'nic': None, 'result': stopped},
               {'hosts': ['vm-3', 'vm-4'], 'round': 1, 'nic': None, 'result': good},
               {'hosts': [here, 'vm-3'], 'round': 2, 'nic': None, 'result': stopped},
               {'hosts': ['vm-2', 'vm-4'], 'round': 2, 'nic': None, 'result': good}]
    done = run_module(nccl_diagnose.main, {'hosts': hosts, 'results': results, 'nics': False, 'plot': False,
                                           'dest': str(tmp_path / 'report')})
    problem = 'GPU 0: remapped rows pending; reset the GPU (or reboot) to apply them'
    assert done['done'] and done['bad_hosts'] == [here]
    assert 'nvidia-smi: ' + problem in done['hosts'][here]['reasons']
    assert problem in (tmp_path / 'report' / 'junit.xml').read_text()
    assert 'nvidia-smi: ' + problem in (tmp_path / 'report' / 'summary.md').read_text()


# measure ib_write_bw (the OpenShift diagnosis): real perftest output (tests/fixtures/perftest/SOURCES.md: 111.71 Gb/s
# BW average between two DGX Spark systems) judged against one HCA's link rate; a pair runs every HCA at once.
SPARK = open(os.path.join(FIXTURES, '..', 'perftest', 'spark_ib_write_bw_q4.txt'), encoding='utf-8').read()
NODES = ['n-1', 'n-2', 'n-3', 'n-4']


@pytest.mark.parametrize('args, message', [
    ({'machine_type': 'a3-megagpu-8g'}, 'measure: ib_write_bw measures RDMA HCAs; a3-megagpu-8g uses GPUDirect-TCPXO'),
    ({}, "link_gbps: measure ib_write_bw judges a run against one HCA's link rate; give machine_type"),
    ({'link_gbps': 200, 'threshold_fraction': 1.5}, 'threshold_fraction: 1.5 is outside (0, 1]'),
])
def test_ib_write_bw_bad_input_names_the_option(args, message):
    result = run_module(nccl_diagnose.main, dict({'hosts': NODES, 'measure': 'ib_write_bw'}, **args))
    assert result['failed'] and result['msg'].startswith(message), result['msg']


def test_ib_write_bw_pairs_judged_per_hca_then_the_slow_hca_named(tmp_path):
    slow = SPARK                       # 111.71 Gb/s
    fast = SPARK.replace('111.71             0.213070', '190.00             0.362396')
    hcas = ['mlx5_0', 'mlx5_1']

    def pair(hosts, round_number, outputs, nic=None):
        return {'hosts': hosts, 'round': round_number, 'nic': nic,
                'result': {'hcas': [{'nic': h, 'stdout': out} for h, out in zip(hcas, outputs)],
                           'host_evidence': {hosts[0]: {'gpus': 8}, hosts[1]: {'gpus': 8}}}}
    args = {'hosts': NODES, 'measure': 'ib_write_bw', 'technology': 'RDMA', 'link_gbps': 200, 'hcas': hcas,
            'threshold_fraction': 0.75, 'plot': False, 'dest': str(tmp_path / 'report')}
    # n-3's mlx5_1 is slow: both its pairs fail on mlx5_1 alone.
    results = [pair(['n-1', 'n-2'], 1, [fast, fast]), pair(['n-3', 'n-4'], 1, [fast, slow]),
               pair(['n-3', 'n-1'], 2, [fast, slow]), pair(['n-4', 'n-2'], 2, [fast, fast])]
    planned = run_module(nccl_diagnose.main, dict(args, results=results), check_mode=True)
    assert planned['bad_hosts'] == ['n-3']
    assert planned['hosts']['n-3']['pairs'][0]['busbw_gbps'] == 111.71
    assert planned['hosts']['n-3']['reasons'] == ['every pair failed, also with healthy n-1, n-4']
    assert planned['next_runs'] == [{'hosts': ['n-3', 'n-1'], 'nic': 'mlx5_0', 'round': 3, 'test_command': None}]
    results += [{'hosts': ['n-3', 'n-1'], 'round': 3, 'nic': 'mlx5_0', 'result': {'stdout': fast}},
                {'hosts': ['n-3', 'n-1'], 'round': 4, 'nic': 'mlx5_1', 'result': {'stdout': slow}}]
    done = run_module(nccl_diagnose.main, dict(args, results=results))
    assert done['done'] and done['bad_nics'] == [{'host': 'n-3', 'nic': 'mlx5_1', 'busbw_gbps': 111.71, 'threshold_gbps': 150.0}]
    assert 'NIC mlx5_1: 111.71 Gb/s < 150.0 Gb/s (its share of the line rate)' in done['hosts']['n-3']['reasons']
    summary = (tmp_path / 'report' / 'summary.md').read_text(encoding='utf-8')
    assert summary.startswith('# ib_write_bw (GPU memory) fabric diagnosis: **bad: n-3**')
    assert '| n-3 | n-1 | mlx5_1 | 111.71 | **named** |' in summary
    failed = [p for p in done['report']['pairs'] if p['verdict'] == 'FAIL']
    assert failed and all(p['reasons'] == ['mlx5_1: BW average 111.71 Gb/s is below 150.00 Gb/s (75% of the 200 Gb/s link)'] for p in failed)


def test_ib_write_bw_a_client_that_could_not_connect_fails_its_pair():
    refused = " Couldn't connect to 192.168.2.2:10101\n Unable to perform rdma_client function\n"
    results = [{'hosts': ['n-1', 'n-2'], 'round': 1, 'nic': None, 'result': {'stdout': refused, 'failed': False}}]
    result = run_module(nccl_diagnose.main, {'hosts': NODES[:2], 'measure': 'ib_write_bw', 'link_gbps': 400, 'results': results},
                        check_mode=True)
    pair = result['hosts']['n-1']['pairs'][0]
    assert pair['verdict'] == 'FAIL' and pair['busbw_gbps'] is None
