"""Role gke_rdma on seed 001's ComputeClass path and manual multi-network path, with the real ansible-playbook and
kubernetes.core against an A3 Ultra cluster of the sandbox that comes alive (a Kubernetes API stand-in whose GKE
network controllers validate each GKENetworkParamSet against the Compute sandbox's VPCs and mark it Ready).

The cluster half is made with the collection's modules: seed 001's gVNIC VPC and RDMA VPC with 8 subnets
(gce_gpudirect_network layout gke_rdma), the cluster, the multi-network A3 Ultra pool (9 additional networks).
One playbook applies both paths (ComputeClass; gvnic-1 and rdma-0..7 Ready at their generation, the RDMA
installer DaemonSet on both RDMA nodes); a rerun changes nothing; the path's objects go with state absent
(three ansible-playbook runs in all: each costs seconds on two cores).

Parity (issue 12, item 8): seed 001's own manifests sent by the real kubectl (``create --dry-run=server``, under
another name) are stored by the server exactly as the objects the role applied.

The stand-in has no node auto-provisioning: a ComputeClass's nodes never appear, so the NCCL test of the
ComputeClass path does not run here (its Pods' node selector is checked at render level). Pods do not run
either (no podman): the DaemonSet's Pods report running at once (exec.PodRuntime(enabled=False)).
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.aiinfra.gpudirect.plugins.modules import gce_gpudirect_network, gke_gpudirect_cluster, gke_gpudirect_node_pool
from module_runner import run_module
from playbook_runner import collections_path

PROJECT = 'sandbox-project'
ZONE = 'us-central1-b'
SEEDS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'sandbox', 'kube', 'manifests', 'seeds')
KUBECTL = os.path.join(os.path.dirname(os.path.realpath(shutil.which('gcloud'))), 'kubectl.1.33') if shutil.which('gcloud') else ''
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason='the Cloud SDK with kubectl.1.33 is not installed')

COMPUTE_CLASS = {'gke_rdma_networking': 'compute_class', 'gke_rdma_compute_class': 'rdma-class', 'gke_rdma_nccl_test': False,
                 'gke_rdma_compute_class_priorities': [{'machine_type': 'a3-ultragpu-8g', 'reservation': 'my-reservation',
                                                        'reservation_zones': [ZONE]}]}
MULTI_NETWORK = {'gke_rdma_networking': 'multi_network', 'gke_rdma_network_prefix': 'u', 'gke_rdma_node_pool': 'manual',
                 'gke_rdma_installer_daemonset': True, 'gke_rdma_nccl_test': False, 'gke_rdma_wait_delay': 1}


@pytest.fixture(scope='module')
def ultra(tmp_path_factory):
    from sandbox import Sandbox  # pylint: disable=import-outside-toplevel
    from sandbox.kube.exec import PodRuntime  # pylint: disable=import-outside-toplevel
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(latency=0.0, project=PROJECT).start()
    sandbox.kube = GkeClusters(runtime=PodRuntime(enabled=False), ready_delay=0.1)
    try:
        common = {'project': PROJECT, 'auth_kind': 'accesstoken', 'access_token': 'sandbox-token',
                  'container_endpoint': sandbox.container_url, 'compute_endpoint': sandbox.compute_url}
        assert run_module(gce_gpudirect_network.main, dict(common, region='us-central1', zone=ZONE, machine_type='a3-ultragpu-8g',
                                                           layout='gke_rdma', network_prefix='u'))['changed']
        assert run_module(gke_gpudirect_cluster.main, dict(common, cluster='ultra', location=ZONE, machine_type='a3-ultragpu-8g',
                                                           default_pool_node_count=1))['changed']
        pool = run_module(gke_gpudirect_node_pool.main, dict(common, cluster='ultra', location=ZONE, name='manual', machine_type='a3-ultragpu-8g',
                                                             networking='multi_network', network_prefix='u', nodes_timeout=60))
        assert len(pool['nodes']) == 2, pool
        sandbox.tmp = tmp_path_factory.mktemp('rdma-paths')
        sandbox.cluster = sandbox.kube.cluster('projects/%s/locations/%s/clusters/ultra' % (PROJECT, ZONE))
        sandbox.cluster.write_kubeconfig(str(sandbox.tmp / 'kubeconfig'), context='ultra', token='sandbox-token')
        yield sandbox
    finally:
        sandbox.kube.stop()
        sandbox.stop()


def play(ultra, *plays):
    """One ansible-playbook run, a play per role variables dict; -> per play, the changed task names."""
    playbook = ultra.tmp / 'play.yml'
    playbook.write_text(json.dumps([{
        'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'vars': {'ansible_python_interpreter': sys.executable},
        'module_defaults': {'group/kubernetes.core.k8s': {'kubeconfig': str(ultra.tmp / 'kubeconfig')}},
        'tasks': [{'ansible.builtin.include_role': {'name': 'aiinfra.gpudirect.gke_rdma'}, 'vars': variables}]} for variables in plays]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='False')
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), str(playbook)], env=env,
                         capture_output=True, text=True, timeout=400, check=False)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    changed = []
    for section in run.stdout.split('\nPLAY [')[1:]:
        tasks = re.findall(r'^TASK \[(?:[\w.]+ : )?(.*?)\] \**\n(.*?)(?=^TASK \[|^PLAY|\Z)', section, re.M | re.S)
        changed.append([name for name, body in tasks if re.search(r'^changed:', body, re.M)])
    return changed


def stored(ultra, ref, name, namespace=None):
    return ultra.cluster.store.get(ref, name, namespace)


def test_compute_class_and_manual_networks_apply_rerun_delete(ultra):
    first = play(ultra, COMPUTE_CLASS, MULTI_NETWORK)
    assert first == [['Apply the objects (server-side apply)']] * 2, first
    compute_class = stored(ultra, 'computeclasses.cloud.google.com', 'rdma-class')
    assert compute_class['spec']['priorities'][0]['gpuDirect'] == 'rdma'
    assert stored(ultra, 'resourceclaimtemplates.resource.k8s.io', 'all-mrdma', 'default') is not None
    params = {o['metadata']['name']: o for o in ultra.cluster.store.list('gkenetworkparamsets.networking.gke.io')}
    assert sorted(params) == ['gvnic-1'] + ['rdma-%d' % n for n in range(8)]
    assert params['rdma-3']['spec'] == {'vpc': 'u-rdma-net', 'vpcSubnet': 'u-rdma-sub-3', 'deviceMode': 'RDMA'}
    assert all(any(c['type'] == 'Ready' and c['status'] == 'True' for c in p['status']['conditions']) for p in params.values())
    installer = stored(ultra, 'daemonsets.apps', 'nccl-rdma-installer', 'kube-system')
    assert installer['status']['desiredNumberScheduled'] == installer['status']['numberReady'] == 2
    seed_manifests_are_stored_as_the_roles(ultra)

    assert play(ultra, COMPUTE_CLASS, MULTI_NETWORK) == [[], []], 'a rerun changes nothing'

    play(ultra, dict(COMPUTE_CLASS, gke_rdma_state='absent'), dict(MULTI_NETWORK, gke_rdma_state='absent'))
    assert stored(ultra, 'computeclasses.cloud.google.com', 'rdma-class') is None
    assert ultra.cluster.store.list('gkenetworkparamsets.networking.gke.io') == []
    assert [n['metadata']['name'] for n in ultra.cluster.store.list('networks.networking.gke.io')] == ['default']
    assert stored(ultra, 'daemonsets.apps', 'nccl-rdma-installer', 'kube-system') is None


def seed_manifests_are_stored_as_the_roles(ultra):
    """Parity: seed 001's ComputeClass and all-mrdma through the real kubectl, as the server would store them."""
    env = dict(os.environ, KUBECONFIG=str(ultra.tmp / 'kubeconfig'))
    for path, ref, namespace in (('001-rdma-compute-class.yaml', 'computeclasses.cloud.google.com', None),
                                 ('001-all-mrdma-template.yaml', 'resourceclaimtemplates.resource.k8s.io', 'default')):
        with open(os.path.join(SEEDS, path), encoding='utf-8') as handle:
            seed = yaml.safe_load(handle)
        ours = stored(ultra, ref, seed['metadata']['name'], namespace)
        renamed = copy.deepcopy(seed)
        renamed['metadata']['name'] = 'seed-' + seed['metadata']['name']   # beside ours: the server stores it as it would
        run = subprocess.run([KUBECTL, 'create', '--dry-run=server', '-o', 'json', '-n', 'default', '-f', '-'], input=json.dumps(renamed),
                             env=env, capture_output=True, text=True, timeout=60, check=False)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)['spec'] == ours['spec'], path
