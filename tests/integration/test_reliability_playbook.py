"""The family playbooks under failure: flaky API, a run killed halfway, then reruns that converge."""

import collections
import json
import os
import re
import signal
import subprocess
import sys
import time

from playbook_runner import ansible_playbook, collection_root, sandbox_environment

PROJECT = 'sandbox-project'
COLLECTIONS = ('compute.networks', 'compute.subnetworks', 'compute.firewalls', 'compute.instances')


def counts(sandbox):
    return collections.Counter((collection, item['name']) for collection in COLLECTIONS for item in sandbox.resources(collection))


def recap_changed(stdout):
    match = re.search(r'^localhost\s+:.*changed=(\d+)', stdout, re.MULTILINE)
    return int(match.group(1)) if match else None


def test_converges_with_a_fifth_of_calls_failing():
    from sandbox import Sandbox
    with Sandbox(seed=2026).start() as sandbox:   # its own seed: the fixture's draws few faults early on
        converges_with_faults(sandbox)


def converges_with_faults(sandbox):
    sandbox.inject_fault(method='*', kind='http_429', rate=0.07)
    sandbox.inject_fault(method='*', kind='http_503', rate=0.07)
    sandbox.inject_fault(method='*', kind='reset', rate=0.06)
    extra = {'gpudirect_network_prefix': 'flaky', 'gpudirect_node_count': 4}
    result = ansible_playbook(sandbox, 'a3mega.yml', extra)
    assert result.returncode == 0, result.stdout[-4000:]
    found = counts(sandbox)
    assert len(found) == 9 + 9 + 3 + 8 + 4, sorted(found)
    assert set(found.values()) == {1}, 'no duplicate resource'
    log = sandbox.request_log()
    faulted = collections.Counter(entry['fault'] for entry in log if entry['fault'])
    assert faulted['http_429'] and faulted['http_503'] and faulted['reset'], faulted
    assert sum(faulted.values()) >= 0.12 * len(log), (faulted, len(log))
    again = ansible_playbook(sandbox, 'a3mega.yml', extra)
    assert again.returncode == 0, again.stdout[-4000:]
    assert recap_changed(again.stdout) == 0


def test_a_run_killed_halfway_is_completed_by_a_rerun(sandbox):
    # The VMs' operations run until the test ends them, so the kill lands while they run however slow the machine;
    # Compute Engine goes on with them after the client is gone, and the rerun comes after they end.
    sandbox.latency = 0.1
    for method in ('compute.instances.bulkInsert', 'compute.instances.insert'):
        sandbox.operation_latency[method] = 3600.0
    extra = {'gpudirect_network_prefix': 'killed', 'gpudirect_node_count': 3}
    root = collection_root()
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(root / 'inventories' / 'sandbox'),
               str(root / 'playbooks' / 'a3high.yml'), '-e', json.dumps(dict(extra, gpudirect_project=PROJECT))]
    process = subprocess.Popen(command, env=sandbox_environment(sandbox, PROJECT), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600   # a guard against a hang only

    def creating():   # the 3 VMs go in one bulkInsert
        return sandbox.request_log('compute.instances.bulkInsert') or sandbox.request_log('compute.instances.insert')
    while time.monotonic() < deadline and not creating():
        time.sleep(0.05)
    assert creating(), 'the run got as far as creating VMs'
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert {item['status'] for item in sandbox.resources('compute.instances')} <= {'PROVISIONING', 'STAGING'}, 'killed before the VMs ran'
    sandbox.store.advance(time.time() + 3600)   # the hour passes: every operation of the killed run ends
    assert all(op['status'] == 'DONE' for op in sandbox.resources('compute.operations'))

    sandbox.latency = 0.0
    result = ansible_playbook(sandbox, 'a3high.yml', extra)
    assert result.returncode == 0, result.stdout[-4000:]
    found = counts(sandbox)
    assert len(found) == 5 + 5 + 3 + 4 + 3 and set(found.values()) == {1}
    assert {item['status'] for item in sandbox.resources('compute.instances')} == {'RUNNING'}
