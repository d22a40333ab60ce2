"""Progress a person can follow (issue 25 item 5): the cluster stage of a GKE playbook, run with the real
ansible-playbook against the Container API sandbox whose CREATE_CLUSTER operation takes seconds, prints where the wait
stands while it waits (the operation's status, every ANSIBLE_GPUDIRECT_PROGRESS_INTERVAL seconds) and a summary when it
ends, and no "FAILED - RETRYING" line. Each line's arrival is timed as ansible-playbook prints it: lines printed only
when the task ended would arrive together."""

import json
import re
import subprocess
import time

from playbook_runner import ansible_playbook_command, collection_root, sandbox_environment

CREATE_SECONDS = 8.0
INTERVAL = 2.0


def timed_lines(command, env, timeout=300):
    """Run ``command``: [(seconds since start, line)] of its output as it arrived, and its exit status."""
    started = time.monotonic()
    lines = []
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1) as process:
        for line in process.stdout:
            lines.append((time.monotonic() - started, line.rstrip('\n')))
            assert time.monotonic() - started < timeout, 'still running after %s s' % timeout
        status = process.wait()
    return lines, status


def test_a_minutes_long_cluster_creation_says_where_it_stands_while_it_waits(sandbox):
    sandbox.operation_latency['CREATE_CLUSTER'] = CREATE_SECONDS
    root = collection_root()
    command = [*ansible_playbook_command(kubernetes=True), '-i', str(root / 'inventories' / 'sandbox'), str(root / 'playbooks' / 'gke_a3ultra.yml'),
               '-e', json.dumps({'gpudirect_project': 'sandbox-project', 'gpudirect_read_nodes': False}), '--tags', 'cluster']
    env = dict(sandbox_environment(sandbox, 'sandbox-project'), ANSIBLE_GPUDIRECT_PROGRESS_INTERVAL=str(INTERVAL))
    lines, status = timed_lines(command, env)
    output = '\n'.join(line for _at, line in lines)
    assert status == 0, output[-4000:]
    assert 'FAILED - RETRYING' not in output

    waiting = [(at, line) for at, line in lines if re.match(r'create cluster \S+.*, operation operation-\S+: (still )?CREATE_CLUSTER RUNNING \(\d+ s\)$', line)]
    summary = [line for _at, line in lines if re.match(r'create cluster \S+.*, operation operation-\S+: CREATE_CLUSTER DONE after \d+ s, \d+ reads$', line)]
    assert len(summary) == 1, output[-4000:]
    # a line at once, then one every INTERVAL seconds: 8 s of RUNNING give about 4 more
    assert len(waiting) >= CREATE_SECONDS / INTERVAL - 1, output[-4000:]
    assert not waiting[0][1].split(': ', 1)[1].startswith('still'), 'the first line says what was seen, not "still"'
    # They arrived while the task ran, spread over the wait, not all at its end.
    task_done = next(at for at, line in lines if line.startswith('changed: [localhost]'))
    assert task_done - waiting[0][0] >= CREATE_SECONDS - INTERVAL, (waiting, task_done)
    gaps = [later[0] - earlier[0] for earlier, later in zip(waiting, waiting[1:])]
    assert all(gap <= 2 * INTERVAL for gap in gaps), gaps


def test_operations_waited_side_by_side_each_say_where_they_stand_and_the_result_comes_back(sandbox):
    """The network stage waits on its subnetworks' and firewalls' operations in threads, side by side: their lines are
    shown while the module runs in the worker, and the module's own result still reaches ansible-playbook (before one
    line was shown at a time, two threads' lines at once left the result printed past its capture: "Module result
    deserialization failed" at the first Compute Engine task of any real run)."""
    sandbox.latency = 1.0
    root = collection_root()
    command = [*ansible_playbook_command(), '-i', str(root / 'inventories' / 'sandbox'), str(root / 'playbooks' / 'a3high.yml'),
               '-e', json.dumps({'gpudirect_project': 'sandbox-project'}), '--tags', 'network']
    lines, status = timed_lines(command, sandbox_environment(sandbox, 'sandbox-project'))
    output = '\n'.join(line for _at, line in lines)
    assert status == 0 and 'errantly sent data directly to stdout' not in output, output[-4000:]
    running = {line.split(',')[0] for _at, line in lines if re.match(r"create (subnetwork|firewall) '\S+', operation \S+: insert RUNNING", line)}
    done = {line.split(',')[0] for _at, line in lines if re.match(r"create (subnetwork|firewall) '\S+', operation \S+: insert DONE", line)}
    assert len(running) >= 2 and running <= done, output[-4000:]


def test_a_compute_operation_held_by_one_wait_call_says_where_it_stands_while_the_call_blocks(sandbox):
    """Compute's operations.wait holds its request until the operation is DONE or about two minutes pass: the VMs'
    creation (8 s here) is one such call, and the lines still come every INTERVAL seconds while it blocks."""
    for method in ('compute.instances.bulkInsert', 'compute.instances.insert'):
        sandbox.operation_latency[method] = CREATE_SECONDS
    root = collection_root()
    command = [*ansible_playbook_command(), '-i', str(root / 'inventories' / 'sandbox'), str(root / 'playbooks' / 'a3high.yml'),
               '-e', json.dumps({'gpudirect_project': 'sandbox-project', 'gpudirect_node_count': 2})]
    env = dict(sandbox_environment(sandbox, 'sandbox-project'), ANSIBLE_GPUDIRECT_PROGRESS_INTERVAL=str(INTERVAL))
    lines, status = timed_lines(command, env)
    output = '\n'.join(line for _at, line in lines)
    assert status == 0, output[-4000:]
    waits = [call for call in sandbox.request_log() if call['api_method'] == 'compute.zoneOperations.wait']
    waiting = [at for at, line in lines if re.match(r'create \d+ instances? .*operation \S+: (still )?\S+ RUNNING', line)]
    assert len(waiting) >= CREATE_SECONDS / INTERVAL - 1, output[-4000:]
    gaps = [later - earlier for earlier, later in zip(waiting, waiting[1:])]
    assert all(gap <= 2 * INTERVAL for gap in gaps), gaps
    assert len(waits) <= 4, 'few wait calls, each blocking (%d)' % len(waits)
