"""The action async_wait (plugins/action/async_wait.py) with the real ansible-playbook and ansible-core's async jobs: it
returns the job's own result, prints no retry lines, removes the job's result file, fails with the job's message when the
job failed, and names the job when it runs out of time."""

import json
import os
import re
import subprocess
import sys

from playbook_runner import ansible_playbook_command, collections_path


def play(tmp_path, tasks):
    playbook = tmp_path / 'play.yml'
    playbook.write_text(json.dumps([{'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
                                     'vars': {'ansible_python_interpreter': sys.executable}, 'tasks': tasks}]), encoding='utf-8')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_INVENTORY_UNPARSED_WARNING='False', ANSIBLE_ASYNC_DIR=str(tmp_path / 'async'))
    return subprocess.run([*ansible_playbook_command(), str(playbook)], env=env, capture_output=True, text=True, timeout=300, check=False)


def job(command):
    return {'name': 'Start the job', 'ansible.builtin.command': {'argv': command}, 'async': 120, 'poll': 0, 'register': 'job'}


def test_the_jobs_result_comes_back_without_retry_lines_and_its_file_is_removed(tmp_path):
    run = play(tmp_path, [
        job([sys.executable, '-c', 'import time; time.sleep(3); print("made")']),
        {'name': 'Wait for it', 'register': 'waited',
         'aiinfra.gpudirect.async_wait': {'jid': '{{ job.ansible_job_id }}', 'delay': 0.5, 'description': 'the test job'}},
        {'name': 'Show it', 'ansible.builtin.debug': {'msg': '{{ waited | to_json }}'}},
    ])
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert 'RETRYING' not in run.stdout
    shown = json.loads(run.stdout.split('"msg": ', 1)[1].split('\n}', 1)[0].strip().rstrip(','))
    waited = json.loads(shown)
    assert waited['stdout'] == 'made' and waited['rc'] == 0 and waited['changed'] is True, waited
    assert waited['waited'] >= 2.0, 'it waited for the job, which sleeps 3 s'
    assert os.listdir(tmp_path / 'async') == [], 'the job result file is removed once read'


def test_a_failed_job_fails_with_its_own_result_and_a_job_still_running_is_named(tmp_path):
    run = play(tmp_path, [
        job([sys.executable, '-c', 'import sys; sys.exit("the job went wrong")']),
        {'name': 'Wait for the failing job', 'aiinfra.gpudirect.async_wait': {'jid': '{{ job.ansible_job_id }}', 'delay': 0.2},
         'ignore_errors': True, 'register': 'failed_job'},
        {'name': 'It failed with the job result', 'ansible.builtin.assert': {'that': [
            'failed_job is failed', 'failed_job.rc == 1', "'the job went wrong' in failed_job.stderr"]}},
        job(['sleep', '30']),
        {'name': 'Wait too briefly',
         'aiinfra.gpudirect.async_wait': {'jid': '{{ job.ansible_job_id }}', 'delay': 0.2, 'timeout': 1, 'description': 'the long job'}},
    ])
    assert run.returncode != 0
    assert 'TASK [It failed with the job result]' in run.stdout and 'All assertions passed' in run.stdout, run.stdout[-3000:]
    # (the seconds are those the looks took: a loaded machine makes the first one last over the timeout)
    assert re.search(r'the long job: still running after \d+ s \(timeout 1.0 s\); its result file stays in', run.stdout), run.stdout[-3000:]
    # where the wait stood: a line when it began to wait, and its end
    assert re.search(r'Wait too briefly \[the long job\]: running \(\d+ s\)\n', run.stdout), run.stdout[-3000:]
    assert re.search(r'Wait too briefly \[the long job\]: still running after \d+ s, \d+ reads?; gave up\n', run.stdout), run.stdout[-3000:]
