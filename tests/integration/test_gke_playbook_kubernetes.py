"""playbooks/gke_a3mega.yml whole (the NCCL test left out: test_gke_k8s_roles.py runs it) with the real
ansible-playbook, kubernetes.core and gke-gcloud-auth-plugin, against the sandbox whose GKE clusters come alive
as Kubernetes API stand-ins (tests/sandbox/kube): a check run of a first run sends nothing that mutates; the run
applies the Networks, GKENetworkParamSets and DaemonSets WHILE GKE creates the node pool (the pool's
creation is held until they are there, or 120 s), then waits until the DaemonSets are ready on both GPU nodes;
a rerun sends no mutating request to either API."""

import json
import os
import re
import shutil
import threading
import time

import pytest

from playbook_runner import ansible_playbook, collection_root
from sandbox import Sandbox
from sandbox.gcloud import gcloud_environment, kubectl_binary

PROJECT = 'sandbox-project'
ZONE = 'us-central1-a'
CLUSTER_KEY = 'projects/%s/locations/%s/clusters/a3mega' % (PROJECT, ZONE)
DAEMONSETS = ('nccl-tcpxo-installer', 'device-injector')
MUTATING = ('POST', 'PUT', 'PATCH', 'DELETE')
HELD = 120.0   # how long the node pool's creation waits for the Kubernetes objects before it finishes anyway


pytestmark = [
    pytest.mark.skipif(not (collection_root().parents[1] / 'kubernetes' / 'core').is_dir(),
                       reason='kubernetes.core beside the collection is needed (scripts/test build installs it)'),
    pytest.mark.skipif(kubectl_binary() is None, reason='the Cloud SDK (gke-gcloud-auth-plugin beside gcloud) is not installed'),
]


class PoolHeld:
    """Holds the node pool's CREATE_NODE_POOL operation (RUNNING for HELD seconds) until the stand-in cluster holds both
    DaemonSets and the 8 Networks, then lets it finish: `applied_meanwhile` says whether they came while it ran."""

    def __init__(self, sandbox):
        self.sandbox, self.applied_meanwhile, self.stop = sandbox, False, threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)

    def kube_objects_there(self):
        kube = self.sandbox.kube.cluster(CLUSTER_KEY) if self.sandbox.kube else None
        if kube is None:
            return False
        return all(kube.store.get('daemonsets.apps', name, 'kube-system') for name in DAEMONSETS) \
            and len(kube.store.list('networks.networking.gke.io')) >= 8

    def watch(self):
        while not self.stop.wait(0.1):
            running = [operation for _key, operation in self.sandbox.store.items('container.operations')
                       if operation['operationType'] == 'CREATE_NODE_POOL' and operation['status'] != 'DONE']
            if running and self.kube_objects_there():
                self.applied_meanwhile = True
                for operation in running:
                    operation['_done_at'] = time.time()
                return


@pytest.fixture
def live(tmp_path):
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(latency=0.0, project=PROJECT).start()
    sandbox.operation_latency['CREATE_NODE_POOL'] = HELD
    sandbox.kube = GkeClusters()
    try:
        yield sandbox
    finally:
        sandbox.stop()


def playbook(sandbox, tmp_path, *arguments, name='gke_a3mega.yml', extra=None, tags=('--skip-tags', 'nccl')):
    config = tmp_path / 'gcloud'
    config.mkdir(exist_ok=True)
    (config / 'token').write_text('sandbox-token\n', encoding='ascii')
    # The kubeconfig the cluster task writes runs gke-gcloud-auth-plugin (beside gcloud), which prints gcloud's token;
    # the stand-in takes any.
    env = {key: value for key, value in gcloud_environment(sandbox, str(config), PROJECT).items() if key.startswith('CLOUDSDK_')}
    env.update(CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=str(config / 'token'), GCP_AUTH_KIND='accesstoken', GCP_ACCESS_TOKEN='sandbox-token',
               PATH='%s:%s' % (os.path.dirname(os.path.realpath(shutil.which('gcloud'))), os.environ.get('PATH', '')),
               NO_PROXY='127.0.0.1,localhost', ANSIBLE_ASYNC_DIR=str(tmp_path / 'async'))
    extra = extra or {'gpudirect_location': ZONE, 'gke_gpudirect_wait_delay': 1}
    extra = dict(extra, gpudirect_kubeconfig_path=str(config / 'kubeconfig'))
    # By default every stage but the NCCL test, as the tags say (it was the whole Kubernetes stage that --skip-tags nccl skipped).
    run = ansible_playbook(sandbox, name, extra, project=PROJECT, args=(*tags, *arguments), timeout=400, env=env)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    return run


def mutating(sandbox, cloud_since, kube_since):
    cloud = [(e['method'], e['path']) for e in sandbox.request_log()[cloud_since:] if e['method'] in MUTATING]
    kube = sandbox.kube.cluster(CLUSTER_KEY)
    return cloud + [(method, path) for method, path, _type, _accept in (kube.requests[kube_since:] if kube else []) if method in MUTATING]


def marks(sandbox):
    kube = sandbox.kube.cluster(CLUSTER_KEY)
    return len(sandbox.request_log()), len(kube.requests) if kube else 0


def test_the_kubernetes_objects_are_applied_while_the_node_pool_is_created(live, tmp_path):
    planned = playbook(live, tmp_path, '--check')
    assert mutating(live, 0, 0) == [], 'a check run of a first run changes nothing'
    assert int(re.search(r'localhost\s+: ok=\d+\s+changed=(\d+)', planned.stdout).group(1)) >= 3, planned.stdout[-3000:]

    held = PoolHeld(live)
    held.thread.start()
    try:
        first = playbook(live, tmp_path)
    finally:
        held.stop.set()
        held.thread.join(timeout=5)
    assert held.applied_meanwhile, 'the Networks and DaemonSets were not applied while the node pool was being created'
    ready = re.search(r'\nDaemonSets ([\w, -]+) on the 2 GPU nodes: ready', first.stdout)
    assert ready and sorted(ready.group(1).split(', ')) == sorted(DAEMONSETS), first.stdout[-4000:]
    assert '8 additional networks' in first.stdout
    assert "TASK [aiinfra.gpudirect.gke_gpudirect : Render the NCCL test workload" not in first.stdout, first.stdout[-4000:]
    kube = live.kube.cluster(CLUSTER_KEY)
    assert sorted(n['metadata']['name'] for n in kube.store.list('networks.networking.gke.io')
                  if n['metadata']['name'].startswith('vpc')) == ['vpc%d' % n for n in range(1, 9)]
    assert list((tmp_path / 'async').iterdir()) == [], 'the networks job result file is removed'

    cloud_since, kube_since = marks(live)
    again = playbook(live, tmp_path)
    assert mutating(live, cloud_since, kube_since) == []
    assert re.search(r'localhost\s+: ok=\d+\s+changed=0\s', again.stdout), again.stdout[-3000:]


@pytest.mark.parametrize('cluster_mode', ['autopilot', 'standard'])
def test_the_compute_class_path_reaches_a_verdict_on_autopilot_and_on_standard(live, tmp_path, cluster_mode):
    """Seed 001's ComputeClass path (gke_a4.yml with gpudirect_rdma_networking=compute_class) on both kinds of cluster
    the seed names: Autopilot, at or above its floor 1.36.2-gke.1368000 (the sandbox offers GKE's versions of today), and
    Standard, where GKE creates the class's node pools (nodePoolAutoCreation). No node pool of ours is made; GKE's
    appears for the test Pods; the NCCL test's report has a verdict, computed on stand-in output."""
    live.operation_latency['CREATE_NODE_POOL'] = 0.0
    report = tmp_path / 'report'
    playbook(live, tmp_path, name='gke_a4.yml', tags=(), extra={
        'gpudirect_rdma_networking': 'compute_class', 'gpudirect_cluster_mode': cluster_mode, 'gke_rdma_report_dir': str(report),
        'gke_rdma_wait_delay': 1, 'gke_rdma_nccl_require_network_evidence': False,
        'gke_rdma_nccl_thresholds': {'all_gather': {'avg_busbw_gbps': 0.001, 'large_busbw_gbps': 0.001}}})
    cluster, = live.resources('container.clusters')
    assert bool((cluster.get('autopilot') or {}).get('enabled')) is (cluster_mode == 'autopilot'), cluster
    if cluster_mode == 'autopilot':
        assert cluster['currentMasterVersion'] == '1.36.4-gke.1082000', 'the newest version above the Autopilot floor'
    pools = [pool['name'] for pool in live.resources('container.nodePools')]
    assert pools and all(name.startswith('nap-a4-highgpu-8g') for name in pools if name != 'default-pool'), pools
    assert 'a4high-gpu' not in pools, 'the ComputeClass path makes no node pool of ours'
    with open(report / 'report.json', encoding='utf-8') as handle:
        verdict = json.load(handle)
    assert verdict['verdict'] == 'PASS' and verdict['synthetic'], verdict
