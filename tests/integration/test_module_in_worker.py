"""The API modules' action (plugins/plugin_utils/module_in_worker.py) with the real ansible-playbook against the
sandbox: the same task gives the same result in the worker as in a module process, with the task's environment,
check mode, diff and no_log; and the module process is kept where the module would not run in the controller's own
Python. (tests/unit/plugins/plugin_utils/test_module_in_worker_state.py tests the mechanism on every ansible-core.)"""

import json
import os
import subprocess
import sys

import pytest

from playbook_runner import collection_root, sandbox_environment
from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils import module_in_worker

# On an ansible-core whose internals the in-worker run needs have moved (2.21), every module runs as its own process.
IN_WORKER = module_in_worker.remove_internal_keys is not None
in_worker_only = pytest.mark.skipif(not IN_WORKER, reason='this ansible-core runs the modules as module processes (see the last test)')

SECRET = 's3cret-token-never-shown'
PLAYBOOK = """
- name: An API module, three ways
  hosts: localhost
  gather_facts: false
  tasks:
    - name: A fabric, its project given only by the task's environment
      aiinfra.gpudirect.gce_gpudirect_network:
        region: us-central1
        machine_type: a3-highgpu-8g
        network_prefix: inworker
        ssh_source_ranges: [203.0.113.0/24]
        access_token: "{{ secret }}"
      environment:
        GCP_PROJECT: "{{ project }}"
      register: created

    - name: The same again
      aiinfra.gpudirect.gce_gpudirect_network:
        region: us-central1
        machine_type: a3-highgpu-8g
        network_prefix: inworker
        ssh_source_ranges: [203.0.113.0/24]
      environment:
        GCP_PROJECT: "{{ project }}"
      register: again

    - name: A machine type that does not exist
      aiinfra.gpudirect.gce_gpudirect_network:
        region: us-central1
        machine_type: a3-nosuchgpu-8g
        network_prefix: inworker
        project: "{{ project }}"
      register: refused
      ignore_errors: true

    - name: Keep the results
      ansible.builtin.copy:
        content: "{{ {'created': created, 'again': again, 'refused': refused} | to_nice_json }}"
        dest: "{{ out }}"
        mode: '0600'
"""


def run(sandbox, tmp_path, project, *args, env=None):
    (tmp_path / 'play.yml').write_text(PLAYBOOK, encoding='utf-8')
    out = tmp_path / ('%s.json' % project)
    environment = {key: value for key, value in sandbox_environment(sandbox, project).items() if key != 'GCP_PROJECT'}
    environment.update(env or {})
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(collection_root() / 'inventories' / 'sandbox'),
               str(tmp_path / 'play.yml'), '-e', json.dumps({'project': project, 'secret': SECRET, 'out': str(out)}), '-vvv', *args]
    result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return result.stdout + result.stderr, (json.loads(out.read_text(encoding='utf-8')) if out.exists() else None)


def comparable(results, project):
    """The registered results with the project's name replaced, and what only a module process reports: on
    ansible-core 2.19 a warning of module code running on the controller is shown at once instead of returned."""
    text = json.dumps(results).replace(project, 'PROJECT')
    results = json.loads(text)
    for result in results.values():
        result.pop('warnings', None)
    return results


@in_worker_only
def test_the_same_results_in_the_worker_as_in_a_module_process(sandbox, tmp_path):
    worker_output, in_worker = run(sandbox, tmp_path, 'in-worker', '--diff')
    process_output, in_process = run(sandbox, tmp_path, 'module-process', '--diff', env={'ANSIBLE_GPUDIRECT_MODULE_PROCESS': '1'})

    assert worker_output.count("aiinfra.gpudirect.gce_gpudirect_network: in the worker process") == 3
    assert 'as a module process' not in worker_output
    assert process_output.count('aiinfra.gpudirect.gce_gpudirect_network: as a module process '
                                '(ANSIBLE_GPUDIRECT_MODULE_PROCESS is set)') == 3
    assert in_worker['created']['changed'] is True and in_worker['again']['changed'] is False
    assert in_worker['created']['diff'], 'no diff in the worker'
    assert in_worker['refused']['failed'] is True and 'a3-nosuchgpu-8g' in in_worker['refused']['msg']
    assert comparable(in_worker, 'in-worker') == comparable(in_process, 'module-process')
    # no_log: the token is masked in the invocation that -vvv prints, and never printed, either way
    assert '"access_token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"' in worker_output
    assert SECRET not in worker_output and SECRET not in process_output
    made = {project: sorted(n['name'] for n in sandbox.resources('compute.networks') if '/%s/' % project in n['selfLink'])
            for project in ('in-worker', 'module-process')}
    assert made['in-worker'] == made['module-process'] and len(made['in-worker']) == 5


@in_worker_only
def test_check_mode_in_the_worker_sends_no_mutating_request(sandbox, tmp_path):
    output, results = run(sandbox, tmp_path, 'checked', '--check')
    assert "in the worker process" in output
    assert results is None   # copy, in check mode, wrote nothing; the plan is in the output
    assert '"changed": true' in output
    assert [e for e in sandbox.request_log() if e['method'] != 'GET' and not e['path'].split('?')[0].endswith('/wait')] == []


@in_worker_only
def test_another_interpreter_keeps_the_module_process(sandbox, tmp_path):
    """The module is not run in the controller's Python when the task's interpreter is another: here one that does
    not exist, so the module process fails to start, which shows that it was tried."""
    (tmp_path / 'play.yml').write_text(PLAYBOOK, encoding='utf-8')
    environment = sandbox_environment(sandbox, 'other')
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
               str(tmp_path / 'play.yml'), '-e', json.dumps({'project': 'other', 'secret': SECRET, 'out': str(tmp_path / 'o.json'),
                                                             'ansible_python_interpreter': '/nonexistent/python3'}), '-vvv']
    result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert ("aiinfra.gpudirect.gce_gpudirect_network: as a module process (ansible_python_interpreter /nonexistent/python3 "
            "is not the controller's %s)" % sys.executable) in output
    assert sandbox.request_log() == []


@pytest.mark.skipif(IN_WORKER, reason='this ansible-core has what the in-worker run needs')
def test_an_ansible_core_without_the_internals_runs_every_module_as_its_process_and_says_why(sandbox, tmp_path):
    """ansible-core 2.21 has no ansible.vars.clean.remove_internal_keys: the modules run as module processes (the same
    results: the playbook registers them), and -vvv says why, instead of the crash before the first task."""
    output, results = run(sandbox, tmp_path, 'fallback')
    assert output.count('aiinfra.gpudirect.gce_gpudirect_network: as a module process (ansible-core %s has no '
                        'ansible.vars.clean.remove_internal_keys' % module_in_worker.ANSIBLE_CORE_VERSION) == 3, output[-3000:]
    assert results['created']['changed'] and not results['again']['changed'] and results['refused']['failed']
    assert SECRET not in output


NCCL_PLAYBOOK = """
- name: nccl_perf's parse and nccl_diagnose's plan in the worker, an NCCL run not
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Judge an NCCL output
      aiinfra.gpudirect.nccl_perf:
        mode: parse
        output: "{{ lookup('ansible.builtin.file', fixture) }}"
        machine_type: a3-megagpu-8g
        collective: all_gather
        keep_log: never
      register: judged

    - name: Run NCCL (a binary that does not exist)
      aiinfra.gpudirect.nccl_perf:
        mode: local
        binary: /nonexistent/all_gather_perf
        machine_type: a3-megagpu-8g
      register: ran
      ignore_errors: true

    - name: Plan a diagnosis after a round whose one pair failed
      aiinfra.gpudirect.nccl_diagnose:
        hosts: [node-a, node-b, node-c, node-d]
        machine_type: a3-megagpu-8g
        collective: all_gather
        results:
          - {round: 1, hosts: [node-a, node-b], nic: null, result: {verdict: {verdict: FAIL, avg_busbw: 18.9}, failed: false}}
          - {round: 1, hosts: [node-c, node-d], nic: null, result: {verdict: {verdict: PASS, avg_busbw: 188.9}, failed: false}}
      register: planned

    - name: Keep the results
      ansible.builtin.copy:
        content: "{{ {'judged': judged, 'ran': ran, 'planned': planned} | to_nice_json }}"
        dest: "{{ out }}"
        mode: '0600'
"""


def run_nccl(tmp_path, name, env=None):
    (tmp_path / 'nccl.yml').write_text(NCCL_PLAYBOOK, encoding='utf-8')
    out = tmp_path / ('%s.json' % name)
    fixture = collection_root() / 'tests' / 'fixtures' / 'nccl' / 'seed003_tcpxo_all_gather.txt'
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
               str(tmp_path / 'nccl.yml'), '-e',
               json.dumps({'fixture': str(fixture), 'out': str(out), 'ansible_python_interpreter': sys.executable}), '-vvv']
    result = subprocess.run(command, env=dict(os.environ, **(env or {})), capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return result.stdout + result.stderr, json.loads(out.read_text(encoding='utf-8'))


@in_worker_only
def test_nccl_perf_parse_and_nccl_diagnose_plan_in_the_worker_nccl_runs_as_its_process(tmp_path):
    output, in_worker = run_nccl(tmp_path, 'in-worker')
    process_output, in_process = run_nccl(tmp_path, 'module-process', env={'ANSIBLE_GPUDIRECT_MODULE_PROCESS': '1'})
    assert output.count('aiinfra.gpudirect.nccl_perf: in the worker process') == 1, output[-3000:]
    assert output.count('aiinfra.gpudirect.nccl_diagnose: in the worker process') == 1, output[-3000:]
    assert in_worker['planned']['next_runs'] and not in_worker['planned']['done'], in_worker['planned']
    assert output.count('aiinfra.gpudirect.nccl_perf: as a module process (mode local runs NCCL, not only a parse)') == 1
    assert 'as a module process (ANSIBLE_GPUDIRECT_MODULE_PROCESS is set)' in process_output
    assert in_worker['judged']['verdict']['verdict'] == 'PASS' and in_worker['ran']['failed'] is True
    for results in (in_worker, in_process):
        for name in ('judged', 'planned'):
            results[name].pop('warnings', None)
    assert in_worker['judged'] == in_process['judged'] and in_worker['planned'] == in_process['planned']
