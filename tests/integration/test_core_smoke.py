"""The playbooks as a user runs them, on the ansible-core of the Python that runs this test: the cores stage of
scripts/test runs this file with each ansible-core minor meta/runtime.yml claims (its own virtualenv), the pytest stage
with the main one. Each of these once failed on a claimed minor only: 2.17 and 2.18 rendered ``default(none, true)`` as
``''`` ("gce_network_mtu: '' is not a whole number" at the first task of every Compute Engine playbook), and 2.21
crashed before the first task on an internal the in-worker module run imported, then (the modules run as their own
process there, from ansible-core's zip of the module and its Python module_utils) could not read the vendor manifests
the plan step renders, which were YAML files beside module_utils.

- a Compute Engine playbook (A3 High, the network and the VMs) and its rerun, which changes nothing;
- a GKE playbook (A3 Mega) in check mode as a first run, every stage: its plan step renders the Kubernetes objects of
  GPUDirect-TCPXO (the vendor's DaemonSets among them) and sends nothing that mutates;
- that GKE playbook's cloud half (networks, cluster, node pool) against the Container API sandbox;
- the NCCL test role in parse mode on a saved log (seed 003's TCPXO all_gather), with its report directory.
"""

import json
import re

import ansible.release

from playbook_runner import ansible_playbook, collection_root
from sandbox import Sandbox

SSH = {'gpudirect_ssh_source_ranges': ['203.0.113.0/24']}


def _recap(run):
    found = re.search(r'localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)', run.stdout)
    assert found, run.stdout[-3000:] + run.stderr[-2000:]
    return {'ok': int(found.group(1)), 'changed': int(found.group(2)), 'failed': int(found.group(3))}


def test_compute_engine_gke_and_nccl_parse_playbooks_run_on_this_ansible_core(tmp_path):
    core = ansible.release.__version__
    sandbox = Sandbox(latency=0.0, seed=0, project='sandbox-project').start()
    try:
        first = ansible_playbook(sandbox, 'a3high.yml', SSH, project='smoke-gce', args=('--tags', 'network,instances'))
        assert first.returncode == 0 and _recap(first)['changed'] > 0, (core, first.stdout[-3000:] + first.stderr[-2000:])
        again = ansible_playbook(sandbox, 'a3high.yml', SSH, project='smoke-gce', args=('--tags', 'network,instances'))
        assert again.returncode == 0 and _recap(again)['changed'] == 0, (core, again.stdout[-3000:])
        planned = ansible_playbook(sandbox, 'gke_a3mega.yml', {'gpudirect_read_nodes': False}, project='smoke-gke', args=('--check',))
        assert planned.returncode == 0 and _recap(planned)['failed'] == 0, (core, planned.stdout[-3000:] + planned.stderr[-2000:])
        assert re.search(r"TASK \[Check every stage's input before anything is created\][^\n]*\nok: \[localhost\]", planned.stdout), \
            (core, planned.stdout[-3000:])
        assert [entry for entry in sandbox.request_log() if entry['method'] in ('POST', 'PUT', 'PATCH', 'DELETE')
                and '/projects/smoke-gke/' in entry['path']] == [], core
        gke = ansible_playbook(sandbox, 'gke_a3mega.yml', {'gpudirect_read_nodes': False}, project='smoke-gke',
                               args=('--tags', 'network,cluster,nodepool'))
        assert gke.returncode == 0 and _recap(gke)['changed'] >= 3, (core, gke.stdout[-3000:] + gke.stderr[-2000:])
        pools = [entry for entry in sandbox.request_log() if entry['method'] == 'POST' and '/projects/smoke-gke/' in entry['path']
                 and entry['path'].endswith('/nodePools')]
        assert len(pools) == 1, (core, pools)
        log = collection_root() / 'tests' / 'fixtures' / 'nccl' / 'seed003_tcpxo_all_gather.txt'
        parsed = ansible_playbook(sandbox, 'nccl_test.yml', {
            # The playbook's hosts as its header documents them (a variable with the role's prefix was refused).
            'gpudirect_nccl_hosts': 'localhost',
            'nccl_test_mode': 'parse', 'nccl_test_log': str(log), 'nccl_test_machine_type': 'a3-megagpu-8g',
            'nccl_test_report_dir': str(tmp_path / 'report'), 'nccl_test_fail_on_verdict': False}, project=None)
        assert parsed.returncode == 0, (core, parsed.stdout[-3000:] + parsed.stderr[-2000:])
    finally:
        sandbox.stop()
    report = json.loads((tmp_path / 'report' / 'report.json').read_text(encoding='utf-8'))
    # seed 003's own healthy sample: 122.14 GB/s at 1 GiB, over 0.6 of A3 Mega's published 183.38 GB/s there
    assert report['verdict'] == 'PASS' and report['machine_type'] == 'a3-megagpu-8g', report
