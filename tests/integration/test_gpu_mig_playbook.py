# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Multi-instance GPU through the real ansible-playbook: the gpu_mig module on localhost against the STAND-IN
nvidia-smi (tests/fixtures/mig/standin/nvidia-smi, which keeps MIG state in a JSON file) with --check --diff,
then for real, then again (no change); and the host stage's MIG input refused by a3high.yml's plan step before
anything is written to the Compute Engine sandbox."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from playbook_runner import ansible_playbook, collection_root, collections_path

STANDIN = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'mig', 'standin', 'nvidia-smi'))
MUTATING_FLAGS = {'-mig', '-cgi', '-cci', '-dci', '-dgi', '--gpu-reset', '-r'}
PLAY = """
- name: Seven 1g.18gb GPU instances on each H200 of the stand-in host
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Partition the GPUs
      aiinfra.gpudirect.gpu_mig:
        nvidia_smi: %s
        gpudirect_technology: none
        instances:
          - profile: 1g.18gb
            count: 7
""" % STANDIN


def recap(stdout):
    return dict((key, int(value)) for key, value in re.findall(r'(ok|changed|failed)=(\d+)', stdout.split('PLAY RECAP')[-1]))


def test_check_diff_apply_rerun(tmp_path):
    state = tmp_path / 'standin-state.json'
    state.write_text(json.dumps({'gpus': [
        {'index': n, 'name': 'NVIDIA H200', 'pci_bus_id': '00000000:00:%02X.0' % (6 + n), 'mig_current': 'Disabled', 'mig_pending': 'Disabled'}
        for n in (0, 1)], 'gpu_instances': [], 'compute_instances': []}))
    playbook = tmp_path / 'mig.yml'
    playbook.write_text(PLAY)
    env = {key: value for key, value in os.environ.items() if not key.startswith('ANSIBLE_')}
    env.update(NVIDIA_SMI_STANDIN_STATE=str(state), ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_INVENTORY_UNPARSED_WARNING='False')

    def play(*args):
        command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                   '-e', 'ansible_python_interpreter=%s' % sys.executable, str(playbook), *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)

    def mutating():
        return [call for call in json.loads(state.read_text()).get('calls', []) if MUTATING_FLAGS & set(call)]

    checked = play('--check', '--diff')
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert recap(checked.stdout)['changed'] == 1 and mutating() == []
    assert '-            "mig_mode": "Disabled"' in checked.stdout and '+            "mig_mode": "Enabled"' in checked.stdout
    assert '+                "1g.18gb at 6:1, compute instances: 1g.18gb"' in checked.stdout

    applied = play('--diff')
    assert applied.returncode == 0 and recap(applied.stdout)['changed'] == 1, applied.stdout
    final = json.loads(state.read_text())
    assert [g['mig_current'] for g in final['gpus']] == ['Enabled', 'Enabled'] and len(final['gpu_instances']) == 14
    calls = len(mutating())

    again = play('--diff')
    assert again.returncode == 0 and recap(again.stdout)['changed'] == 0 and len(mutating()) == calls


def test_the_plan_step_refuses_mig_beside_gpudirect_before_anything_is_written(sandbox):
    result = ansible_playbook(sandbox, 'a3high.yml', {'gpudirect_ssh_source_ranges': ['203.0.113.0/24'],
                                                      'cos_host_prep_mig': {'instances': [{'profile': '1g.10gb', 'count': 7}]}},
                              project='mig-beside-tcpx', timeout=300)
    refusal = re.search(r'fatal: \[localhost\]: FAILED! => (\{.*\})', result.stdout)
    assert result.returncode != 0 and refusal, result.stdout[-2000:]
    assert ('cos_host_prep_mig: a3-highgpu-8g runs GPUDirect-TCPX, which does not work with multi-instance GPU; '
            'set cos_host_prep_gpudirect: false') in refusal.group(1)
    assert [e for e in sandbox.request_log() if e['method'] in ('POST', 'PATCH', 'PUT', 'DELETE')] == []


ROLE_PLAY = """
- name: The MIG step of cos_host_prep on the stand-in host
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    cos_host_prep_nvidia_smi: %s
    __cos_host_prep_plan: {technology: TCPX}
    __cos_host_prep_driver_needed: false
  tasks:
    - name: The role's MIG tasks
      ansible.builtin.include_tasks: %s
"""


def test_the_roles_mig_step_passes_its_variables_and_the_hosts_gpudirect(tmp_path):
    state = tmp_path / 'standin-state.json'
    state.write_text(json.dumps({'gpus': [{'index': 0, 'name': 'NVIDIA H200', 'pci_bus_id': '00000000:00:06.0', 'mig_current': 'Disabled',
                                           'mig_pending': 'Disabled'}], 'gpu_instances': [], 'compute_instances': []}))
    playbook = tmp_path / 'role-mig.yml'
    playbook.write_text(ROLE_PLAY % (STANDIN, collection_root() / 'roles' / 'cos_host_prep' / 'tasks' / 'mig.yml'))
    env = {key: value for key, value in os.environ.items() if not key.startswith('ANSIBLE_')}
    env.update(NVIDIA_SMI_STANDIN_STATE=str(state), ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_INVENTORY_UNPARSED_WARNING='False')
    mig_vars = {'cos_host_prep_mig': {'instances': [{'profile': '4g.71gb'}, {'profile': '3g.71gb', 'compute_instances': ['1c.3g.71gb'] * 3}]}}

    def play(extra):
        command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                   '-e', 'ansible_python_interpreter=%s' % sys.executable, '-e', json.dumps(extra), str(playbook)]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)

    beside_tcpx = play(dict(mig_vars, cos_host_prep_gpudirect=True))
    assert beside_tcpx.returncode != 0 and 'this host runs GPUDirect-TCPX, which does not work with multi-instance GPU' in beside_tcpx.stdout
    assert 'calls' not in json.loads(state.read_text())
    without = play(dict(mig_vars, cos_host_prep_gpudirect=False))
    assert without.returncode == 0 and recap(without.stdout)['changed'] == 1, without.stdout
    final = json.loads(state.read_text())
    assert sorted(g['profile'] for g in final['gpu_instances']) == ['3g.71gb', '4g.71gb']
    assert sorted(c['profile'] for c in final['compute_instances']) == ['1c.3g.71gb'] * 3 + ['4g.71gb']
