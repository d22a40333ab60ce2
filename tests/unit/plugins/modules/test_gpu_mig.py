# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_mig module, run in-process as Ansible hands it its arguments, against tests/fixtures/mig/standin/nvidia-smi:
a STAND-IN for nvidia-smi that keeps MIG state in a JSON file and prints the listings the real tool printed on an
H200 (its docstring says which messages come from NVIDIA's MIG User Guide and what it does differently)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from module_runner import run_module
from ansible_collections.aiinfra.gpudirect.plugins.modules import gpu_mig

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'mig')
STANDIN = os.path.abspath(os.path.join(FIXTURES, 'standin', 'nvidia-smi'))
CAPTURED = os.path.join(FIXTURES, 'h200x1-2026-11-30')
MUTATING = {'-mig', '-cgi', '-cci', '-dci', '-dgi', '--gpu-reset', '-r'}


def h200(index, **extra):
    return dict({'index': index, 'name': 'NVIDIA H200', 'pci_bus_id': '00000000:00:%02X.0' % (6 + index),
                 'mig_current': 'Disabled', 'mig_pending': 'Disabled'}, **extra)


class Host:
    """The stand-in's state file, in a temporary directory, named by $NVIDIA_SMI_STANDIN_STATE for the test."""

    def __init__(self, path, gpus):
        self.path = str(path)
        self.write({'gpus': gpus, 'gpu_instances': [], 'compute_instances': []})

    def write(self, state):
        with open(self.path, 'w', encoding='utf-8') as handle:
            json.dump(state, handle)

    @property
    def state(self):
        with open(self.path, encoding='utf-8') as handle:
            return json.load(handle)

    def mutating_calls(self):
        return [call for call in self.state.get('calls', []) if MUTATING & set(call)]

    def smi(self, *args):
        return subprocess.run([STANDIN, *args], capture_output=True, text=True, check=False,
                              env=dict(os.environ, NVIDIA_SMI_STANDIN_STATE=self.path))


@pytest.fixture
def host(tmp_path, monkeypatch):
    made = Host(tmp_path / 'standin-state.json', [h200(0), h200(1)])
    monkeypatch.setenv('NVIDIA_SMI_STANDIN_STATE', made.path)
    return made


def run(args, check_mode=False):
    return run_module(gpu_mig.main, dict({'nvidia_smi': STANDIN, 'gpudirect_technology': 'none'}, **args), check_mode=check_mode, diff=True)


SEVEN = {'instances': [{'profile': '1g.18gb', 'count': 7}]}


def test_the_standin_prints_what_the_real_nvidia_smi_printed(host):
    host.write({'gpus': [h200(0)], 'gpu_instances': [], 'compute_instances': []})
    for args, name in ((['mig', '-lgip'], 'lgip.txt'), (['mig', '-lgipp'], 'lgipp.txt'), (['mig', '-lgi'], 'lgi.txt'),
                       (['mig', '-lci'], 'lci.txt'), (['mig', '-lgi', '-i', '9'], 'lgi-i9.txt'),
                       (list(gpu_mig.mig.QUERY_GPUS), 'query-gpu-mig.csv'), (list(gpu_mig.mig.QUERY_PROCESSES), 'query-compute-apps.csv')):
        with open(os.path.join(CAPTURED, name), encoding='utf-8') as handle:
            assert host.smi(*args).stdout == handle.read(), name
    assert host.smi('mig', '-lgi', '-i', '9').returncode == 6


def test_check_mode_changes_nothing_and_predicts_the_real_run(host):
    checked = run(SEVEN, check_mode=True)
    assert checked['changed'] is True and host.mutating_calls() == []
    assert checked['commands'][:2] == [['-i', '0', '-mig', '1'], ['mig', '-i', '0', '-cgi', '19:0,19:1,19:2,19:3,19:4,19:5,19:6', '-C']]
    applied = run(SEVEN)
    assert applied['changed'] is True and applied['diff']['after'] == checked['diff']['after']
    assert applied['diff']['before']['gpus'][0] == {'index': 0, 'name': 'NVIDIA H200', 'mig_mode': 'Disabled', 'gpu_instances': []}
    assert [g['mig_mode'] for g in applied['gpus']] == ['Enabled', 'Enabled']
    assert applied['gpus'][1]['gpu_instances'] == ['1g.18gb at %d:1, compute instances: 1g.18gb' % n for n in range(7)]
    assert len(host.state['compute_instances']) == 14
    calls = len(host.mutating_calls())
    again = run(SEVEN)
    assert again['changed'] is False and again['commands'] == [] and len(host.mutating_calls()) == calls


def test_a_new_layout_keeps_the_instances_that_match(host):
    run({'gpus': [0], 'instances': [{'profile': '3g.71gb'}, {'profile': '1g.18gb', 'count': 4}]})
    kept = [g['id'] for g in host.state['gpu_instances'] if g['profile'] == '3g.71gb']
    result = run({'gpus': [0], 'instances': [{'profile': '3g.71gb'}, {'profile': '3g.71gb', 'compute_instances': ['1c.3g.71gb', '2c.3g.71gb']}]})
    assert result['changed'] is True and ['-i', '0', '-mig', '1'] not in result['commands']
    assert [g['id'] for g in host.state['gpu_instances'] if g['profile'] == '3g.71gb'][0] == kept[0]
    assert result['gpus'][0]['gpu_instances'] == ['3g.71gb at 0:4, compute instances: 1c.3g.71gb, 2c.3g.71gb',
                                                  '3g.71gb at 4:4, compute instances: 3g.71gb']
    assert host.state['gpus'][1]['mig_current'] == 'Disabled'
    same = [{'profile': '3g.71gb'}, {'profile': '3g.71gb', 'compute_instances': ['2c.3g.71gb', '1c.3g.71gb']}]
    assert run({'gpus': [0], 'instances': same})['changed'] is False


def test_disabled_destroys_the_instances_then_turns_mig_off(host):
    run({'instances': [{'profile': '4g.71gb'}, {'profile': '3g.71gb'}]})
    result = run({'state': 'disabled', 'gpus': [1]})
    assert result['changed'] is True and result['commands'][-1] == ['-i', '1', '-mig', '0']
    assert [g['gpu'] for g in host.state['gpu_instances']] == [0, 0]
    assert run({'state': 'disabled', 'gpus': [1]})['changed'] is False


def test_busy_gpu_is_refused_before_anything_changes(host):
    host.write({'gpus': [h200(0), h200(1, processes=[{'pid': 4242, 'name': 'python3'}])], 'gpu_instances': [], 'compute_instances': []})
    result = run(SEVEN)
    assert result['failed'] and 'GPU 1 (00000000:00:07.0) is busy: pid 4242 python3; stop them' in result['msg']
    assert host.mutating_calls() == []


def test_gpudirect_hosts_are_refused(host):
    result = run(dict(SEVEN, gpudirect_technology='TCPX'))
    assert result['failed'] and result['msg'].startswith('gpudirect_technology: this host runs GPUDirect-TCPX, which does not work with multi-instance GPU')
    assert host.state.get('calls') is None


def test_a_reset_the_run_may_not_do_is_a_clear_failure(host):
    host.write({'gpus': [h200(0, mode_change_needs_reset=True)], 'gpu_instances': [], 'compute_instances': []})
    result = run(SEVEN)
    assert result['failed'] and 'GPU 0 (00000000:00:06.0): MIG mode is Disabled with Enabled pending: the driver needs a GPU reset' in result['msg']
    assert 'set allow_gpu_reset: true (runs nvidia-smi --gpu-reset -i 0) or reboot the VM' in result['msg']
    assert "nvidia-smi said: Warning: MIG mode is in pending enable state" in result['msg']
    assert host.mutating_calls() == [['-i', '0', '-mig', '1']]
    # The next run sees the pending mode and refuses before changing anything.
    again = run(SEVEN)
    assert again['failed'] and 'needs a GPU reset' in again['msg'] and len(host.mutating_calls()) == 1
    allowed = run(dict(SEVEN, allow_gpu_reset=True))
    assert allowed['changed'] is True and ['--gpu-reset', '-i', '0'] in allowed['commands']
    assert allowed['gpus'][0]['mig_mode'] == 'Enabled' and len(allowed['gpus'][0]['gpu_instances']) == 7


def test_a_reset_the_platform_refuses_says_reboot(host):
    host.write({'gpus': [h200(0, mode_change_needs_reset=True, reset_supported=False)], 'gpu_instances': [], 'compute_instances': []})
    result = run(dict(SEVEN, allow_gpu_reset=True))
    assert result['failed'] and 'Resetting GPU 00000000:00:06.0 is not supported.' in result['msg']
    assert host.state['gpu_instances'] == []


@pytest.mark.parametrize('args, message', [
    ({'gpus': [3]}, 'gpus: no GPU 3 on this host; nvidia-smi lists GPU 0, 1'),
    ({'instances': [{'profile': '1g.10gb', 'count': 7}]}, "instances[0].profile: '1g.10gb' is not a MIG profile of NVIDIA H200"),
    ({'instances': [{'profile': '4g.71gb'}, {'profile': '4g.71gb'}]}, 'instances: 2 x 4g.71gb; NVIDIA H200 holds at most 1'),
    ({'nvidia_smi': '/nonexistent/nvidia-smi'}, 'nvidia_smi: cannot run /nonexistent/nvidia-smi'),
    (dict(SEVEN, state='disabled'), 'instances: state disabled destroys every GPU instance; remove instances or set state: enabled'),
])
def test_bad_input_fails_before_any_change(host, args, message):
    result = run(args)
    assert result['failed'] and message in result['msg']
    assert host.mutating_calls() == []
