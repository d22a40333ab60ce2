# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl_perf module, run in-process as Ansible hands it its arguments.

Local mode runs tests/fixtures/nccl/standin/all_gather_perf and .../nvidia-smi: STAND-INS that print
recorded output (a hand-made nccl-tests output; nvidia-smi as captured on an H200 machine).
"""
from __future__ import annotations

import os
import re
import shutil
import socket

import pytest

from module_runner import run_module
from ansible_collections.aiinfra.gpudirect.plugins.modules import nccl_perf

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'nccl')
STANDIN = os.path.join(FIXTURES, 'standin')
BINARY = os.path.join(STANDIN, 'all_gather_perf')
NVIDIA_SMI = os.path.join(STANDIN, 'nvidia-smi')


@pytest.fixture(autouse=True)
def kernel_log_of_the_capture(monkeypatch):
    """The preflight reads Xids with dmesg from PATH: the stand-in's (the capture's kernel log), not this machine's."""
    monkeypatch.setenv('PATH', os.path.join(FIXTURES, 'standin') + os.pathsep + os.environ['PATH'])


def run(args, check_mode=False):
    return run_module(nccl_perf.main, args, check_mode=check_mode)


def local(**extra):
    args = {'mode': 'local', 'binary': BINARY, 'nvidia_smi': NVIDIA_SMI, 'expected_gpus': 2}
    args.update(extra)
    return args


def test_parse_mode_judges_text():
    with open(os.path.join(FIXTURES, 'seed003_tcpxo_all_gather.txt'), encoding='utf-8') as handle:
        result = run({'mode': 'parse', 'output': handle.read(), 'machine_type': 'a3-megagpu-8g', 'collective': 'all_gather'})
    assert result['changed'] is False and 'failed' not in result
    assert result['verdict']['verdict'] == 'PASS' and result['parsed']['collectives'][0]['avg_busbw'] == 22.449


def test_fail_on_verdict_does_not_fail_a_run_not_judged():
    """Issue 26: a collective with no published reference is NOT JUDGED: reported, never PASS, and not failed."""
    with open(os.path.join(FIXTURES, 'seed003_tcpx_all_gather.txt'), encoding='utf-8') as handle:
        result = run({'mode': 'parse', 'output': handle.read(), 'machine_type': 'a3-highgpu-8g', 'collective': 'broadcast',
                      'fail_on_verdict': True})
    assert 'failed' not in result and result['verdict']['verdict'] == 'NOT JUDGED' and result['verdict']['passed'] is False
    assert 'log_path' not in result   # kept only on FAIL (or keep_log)


def test_parse_mode_reads_a_file_and_fails_on_verdict_when_asked():
    result = run({'mode': 'parse', 'path': os.path.join(FIXTURES, 'current_socket_fallback_a3mega.txt'),
                  'machine_type': 'a3-megagpu-8g', 'fail_on_verdict': True})
    assert result['failed'] and result['msg'].startswith('NCCL test verdict: FAIL -- all_gather: bus bandwidth at 512 MiB 3.05 GB/s < 105.14')
    assert 'NCCL used Socket' in result['msg']


@pytest.mark.parametrize('args, message', [
    ({'mode': 'parse'}, 'output: mode parse needs the output to judge'),
    ({'mode': 'parse', 'output': 'x', 'path': '/x'}, 'output / path: give one of them'),
    ({'mode': 'parse', 'path': '/nonexistent/log'}, 'path: cannot read /nonexistent/log'),
    ({'mode': 'local'}, 'binary: mode local runs an nccl-tests binary'),
    ({'mode': 'local', 'binary': BINARY, 'maxbytes': '8 GB'}, "maxbytes: '8 GB' is not an nccl-tests size"),
    ({'mode': 'gce', 'hosts': ['a', 'b']}, 'machine_type: mode gce needs machine_type'),
    ({'mode': 'gce', 'machine_type': 'a3-megagpu-8g', 'hosts': ['a']}, 'hosts: mode gce runs between VMs'),
    ({'mode': 'gce', 'machine_type': 'a3-highgpu-8g', 'hosts': ['a', 'b'], 'docker_socket': '/nonexistent/docker.sock', 'preflight': False},
     'container: cannot reach the Docker Engine API at unix:///nonexistent/docker.sock'),
    ({'mode': 'gce', 'machine_type': 'a3-ultragpu-8g', 'hosts': ['a', 'b']}, 'technology: RDMA has no Compute Engine host stack'),
    ({'mode': 'parse', 'output': 'x', 'machine_type': 'a3-megagpu-8g', 'technology': 'TCPX'}, 'technology: a3-megagpu-8g uses GPUDirect-TCPXO'),
    ({'mode': 'parse', 'output': 'x', 'thresholds': {'all_gather': {'avg': 1}}}, 'thresholds.all_gather: unknown key(s) avg'),
    ({'mode': 'parse', 'output': 'x', 'machine_type': 'a3'}, "machine_type: 'a3' is not a GPUDirect machine family"),
])
def test_bad_input_names_the_field(args, message):
    result = run(args)
    assert result['failed'] and result['msg'].startswith(message), result['msg']


def test_gce_mode_builds_the_seed_command_and_runs_nothing_in_check_mode():
    result = run({'mode': 'gce', 'machine_type': 'a3-megagpu-8g', 'hosts': ['vm-1', 'vm-2']}, check_mode=True)
    assert result['skipped'] and result['changed'] is False
    assert result['command'][:5] == ['docker', 'exec', 'nccl', 'bash', '-c']
    assert result['command'][5].splitlines() == [
        'set -e', 'export NCCL_DEBUG=INFO', 'export NCCL_DEBUG_SUBSYS=INIT,NET', '/scripts/init_ssh.sh vm-1 vm-2', '/scripts/gen_hostfiles.sh vm-1 vm-2',
        '/scripts/run-nccl-tcpxo.sh all_gather_perf "${LD_LIBRARY_PATH}" 8 eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8 1M 512M 3 2 10 8 2 10']
    tcpx = run({'mode': 'gce', 'machine_type': 'a3-highgpu-8g', 'hosts': ['vm-1', 'vm-2']}, check_mode=True)
    assert tcpx['command'][:3] == ['docker', 'exec', 'nccl']   # the name nccl_container gives the seed's unnamed TCPX container
    assert tcpx['command'][5].splitlines()[-1] == '/scripts/run-allgather.sh 8 eth1,eth2,eth3,eth4 1M 512M 2'


def test_gce_mode_runs_the_collective_asked_for_or_refuses_it():
    # TCPXO's seed script takes the nccl-tests binary: all_reduce runs all_reduce_perf (it ran all_gather, labelled all_reduce).
    mega = run({'mode': 'gce', 'machine_type': 'a3-megagpu-8g', 'hosts': ['vm-1', 'vm-2'], 'collective': 'all_reduce'}, check_mode=True)
    assert mega['command'][5].splitlines()[-1].startswith('/scripts/run-nccl-tcpxo.sh all_reduce_perf "${LD_LIBRARY_PATH}" 8 ')
    # TCPX's image has an all_gather script only: refused before anything runs, naming the option and the way out.
    high = run({'mode': 'gce', 'machine_type': 'a3-highgpu-8g', 'hosts': ['vm-1', 'vm-2'], 'collective': 'all_reduce'}, check_mode=True)
    assert high['failed'] and high['msg'] == (
        'collective: the GPUDirect-TCPX image runs all_gather only (/scripts/run-allgather.sh); drop collective, or give '
        'test_command with a script of the image that runs all_reduce')
    same = run({'mode': 'gce', 'machine_type': 'a3-highgpu-8g', 'hosts': ['vm-1', 'vm-2'], 'collective': 'allgather'}, check_mode=True)
    assert same['command'][5].splitlines()[-1] == '/scripts/run-allgather.sh 8 eth1,eth2,eth3,eth4 1M 512M 2'


def test_local_mode_in_check_mode_does_not_run(tmp_path):
    marker = tmp_path / 'args'
    result = run(local(env={'STANDIN_ARGS_FILE': str(marker)}), check_mode=True)
    assert result['skipped'] and not marker.exists()
    assert result['command'] == [BINARY, '-b', '1M', '-e', '512M', '-f', '2']


def test_local_mode_runs_the_standin_with_its_arguments(tmp_path):
    marker = tmp_path / 'args'
    result = run(local(machine_type='a3-megagpu-8g', expected_gpus=None, preflight=False, iters=50, check=0,
                       env={'STANDIN_ARGS_FILE': str(marker)}))
    assert marker.read_text().split() == ['-b', '1M', '-e', '512M', '-f', '2', '-g', '8', '-n', '50', '-c', '0']
    assert result['rc'] == 0 and result['timed_out'] is False and result['run_problems'] == []
    assert result['verdict']['passed'], result['verdict']['summary']
    assert result['parsed']['collectives'][0]['network'] == 'FasTrak'
    assert 'log_path' not in result


def run_quiet_output(tmp_path):
    """What the stand-in prints at NCCL_DEBUG=WARN (no NCCL INFO lines), as a saved log."""
    import subprocess
    return subprocess.run([BINARY], env=dict(os.environ, NCCL_DEBUG='WARN'), capture_output=True, text=True, check=True, cwd=tmp_path).stdout


def test_own_runs_log_the_network_and_require_it_a_saved_log_does_not(tmp_path):
    """Issue 24 item 7: the module's own runs add NCCL_DEBUG=INFO, so NCCL names its network, and fail without that line;
    a run the user quietens (NCCL_DEBUG=WARN) fails for want of it; a saved log is judged on bandwidth, network not judged."""
    own = run(local(machine_type='a3-megagpu-8g', preflight=False))
    assert own['verdict']['passed'] and own['verdict']['require_network_evidence'], own['verdict']['summary']
    assert own['parsed']['collectives'][0]['network'] == 'FasTrak'
    quiet = run(local(machine_type='a3-megagpu-8g', preflight=False, env={'NCCL_DEBUG': 'WARN'}))
    assert not quiet['verdict']['passed'] and 'the log holds no NCCL network line' in quiet['verdict']['summary']
    saved = tmp_path / 'saved.log'
    saved.write_text(quiet['parsed']['collectives'][0]['name'] and run_quiet_output(tmp_path))
    parsed = run({'mode': 'parse', 'path': str(saved), 'machine_type': 'a3-megagpu-8g'})
    assert parsed['verdict']['passed'] and not parsed['verdict']['require_network_evidence']
    assert 'network not judged' in parsed['verdict']['summary']


def test_local_mode_preflight_reads_nvidia_smi():
    result = run(local())
    assert result['preflight']['passed'] and [g['name'] for g in result['preflight']['gpus']] == ['NVIDIA H200'] * 2
    assert result['preflight']['topology'] == {'GPU0': {'GPU1': 'NV18'}, 'GPU1': {'GPU0': 'NV18'}}


def test_preflight_failure_stops_before_the_test(tmp_path):
    marker = tmp_path / 'args'
    result = run(local(machine_type='a3-megagpu-8g', expected_gpus=None, env={'STANDIN_ARGS_FILE': str(marker)}))
    assert result['failed'] and result['msg'].startswith('preflight: the GPUs are not fit for an NCCL test: nvidia-smi shows 2 GPU(s)')
    assert not marker.exists()


def test_nonzero_exit_fails_the_verdict_and_keeps_the_log(tmp_path):
    log = tmp_path / 'raw.log'
    result = run(local(env={'STANDIN_RC': '1'}, log_path=str(log)))
    assert result['rc'] == 1 and result['run_problems'] == ['exited with status 1']
    assert not result['verdict']['passed'] and 'nccl-tests: exited with status 1' in result['verdict']['reasons']
    assert result['log_path'] == str(log) and 'Avg bus bandwidth' in log.read_text()


def test_timeout_stops_the_run_and_parses_what_it_printed(tmp_path):
    result = run(local(env={'STANDIN_SLEEP': '30'}, timeout=1, log_path=str(tmp_path / 'raw.log')))
    assert result['timed_out'] is True and result['rc'] is None
    assert result['verdict']['reasons'][-1] == 'nccl-tests: stopped after the 1 s timeout'
    assert len(result['parsed']['collectives'][0]['rows']) == 10


def test_missing_binary_names_the_field():
    result = run(local(binary='/nonexistent/all_gather_perf', preflight=False))
    assert result['failed'] and result['msg'].startswith('binary: cannot run /nonexistent/all_gather_perf (exit 127')


def test_nvidia_smi_output_it_cannot_read_fails_the_preflight_with_a_message(tmp_path):
    odd = tmp_path / 'nvidia-smi'
    odd.write_text('#!/bin/sh\necho "570.172.08, NVIDIA H100 80GB HBM3, 0"\n')
    odd.chmod(0o755)
    result = run(local(nvidia_smi=str(odd)))
    assert result['failed'] and result['msg'].startswith('preflight: cannot read what %s printed (nvidia-smi line 1: ' % odd)


def test_preflight_reads_gpu_health_and_puts_it_in_this_hosts_evidence(monkeypatch):
    """The stand-in prints the 1 x H200 capture (tests/fixtures/nccl/nvidia-smi/h200x1-2026-12-03/)."""
    monkeypatch.setenv('STANDIN_NVIDIA_SMI_CAPTURE', 'h200x1-2026-12-03')
    result = run(local(expected_gpus=1, ngpus=1))
    assert result['preflight']['passed'] and result['preflight']['findings'] == [] and result['preflight']['not_read'] == []
    assert result['preflight']['ecc'][0]['uncorrected_volatile'] == 0 and result['preflight']['nvlink'] == {}
    assert result['host_evidence'][socket.gethostname().split('.')[0]]['gpu_problems'] == []


def test_a_health_query_the_capture_lacks_is_listed_not_judged():
    result = run(local())   # the 2 x H200 capture holds no ECC or row remapper output: the stand-in exits 2
    assert result['preflight']['passed'] and len(result['preflight']['not_read']) == 3
    refused = result['preflight']['not_read'][1]
    assert ' -q -d ROW_REMAPPER (rc 2): ' in refused and refused.endswith('holds no q-row-remapper.txt (not captured there)')
    # nor its kernel log: dmesg refused as it is to a user who may not read it; Xids not judged, said so
    assert result['preflight']['xids'] is None
    assert result['preflight']['not_read'][2].endswith('dmesg (rc 1): dmesg: read kernel buffer failed: Operation not permitted')


def pending_remap(tmp_path, monkeypatch):
    """A copy of the 1 x H200 capture whose GPU 0 has remapped rows pending."""
    capture = tmp_path / 'capture'
    shutil.copytree(os.path.join(FIXTURES, 'nvidia-smi', 'h200x1-2026-12-03'), capture)
    remapper = capture / 'q-row-remapper.txt'
    remapper.write_text(re.sub(r'(Pending\s+:) No', r'\1 Yes', remapper.read_text()))
    monkeypatch.setenv('STANDIN_NVIDIA_SMI_CAPTURE', str(capture))


def test_a_gpu_fault_stops_the_test_and_names_the_gpu_in_the_host_evidence(tmp_path, monkeypatch):
    pending_remap(tmp_path, monkeypatch)
    marker = tmp_path / 'args'
    result = run(local(expected_gpus=1, ngpus=1, env={'STANDIN_ARGS_FILE': str(marker)}))
    problem = 'GPU 0: remapped rows pending; reset the GPU (or reboot) to apply them'
    assert result['failed'] and result['msg'] == 'preflight: the GPUs are not fit for an NCCL test: ' + problem
    assert result['preflight']['findings'] == [{'gpu': 0, 'problem': 'row_remap_pending', 'detail': problem}]
    assert result['host_evidence'][socket.gethostname().split('.')[0]]['gpu_problems'] == [problem]
    assert not marker.exists()
