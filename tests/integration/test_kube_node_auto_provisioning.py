"""The stand-in's simulated GKE node pool auto-creation for ComputeClasses (tests/sandbox/kube/autoprovisioning.py,
controllers.ClusterControllers.node_auto_provisioning), with the real kubectl against a Standard cluster of the
Container API sandbox that comes alive (classes with ``nodePoolAutoCreation.enabled``; the sandbox offers no version at
seed 001's Autopilot floor):

- a class whose first priority the sandbox cannot provision (A4 in a zone that has none; then a reservation that does
  not exist) and whose next one it can (A3 Ultra, spot, gpuDirect rdma, DRANET): Pods that select it get a node pool
  ``nap-a3-ultragpu-8g-...`` in the Container API (what gcloud lists) and Nodes with GKE's labels, and schedule;
- ``whenUnsatisfiable: DoNotScaleUp`` with no priority that fits: the Pod stays Pending, no pool is created, and the
  autoscaler's NotTriggerScaleUp event names each priority's reason;
- a Pod that selects a class that does not exist stays Pending too.

Containers are synthetic (exec.SyntheticRuntime): nothing runs on podman.
"""

import json
import os
import shutil
import subprocess
import time

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.modules import gke_gpudirect_cluster
from module_runner import run_module
from waiting import wait_until

PROJECT = 'sandbox-project'
ZONE = 'us-central1-b'
KUBECTL = os.path.join(os.path.dirname(os.path.realpath(shutil.which('gcloud'))), 'kubectl.1.33') if shutil.which('gcloud') else ''
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason='the Cloud SDK with kubectl.1.33 is not installed')
CLUSTER_KEY = 'projects/%s/locations/%s/clusters/auto' % (PROJECT, ZONE)


@pytest.fixture(scope='module')
def standard(tmp_path_factory):
    from sandbox import Sandbox  # pylint: disable=import-outside-toplevel
    from sandbox.client import SandboxClient  # pylint: disable=import-outside-toplevel
    from sandbox.kube.exec import ExecRuntime  # pylint: disable=import-outside-toplevel
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(latency=0.0, project=PROJECT).start()
    sandbox.kube = GkeClusters(runtime=ExecRuntime(lambda pod, container, command: ['true']))
    try:
        common = {'project': PROJECT, 'auth_kind': 'accesstoken', 'access_token': 'sandbox-token',
                  'container_endpoint': sandbox.container_url, 'compute_endpoint': sandbox.compute_url}
        assert run_module(gke_gpudirect_cluster.main, dict(common, cluster='auto', location=ZONE, machine_type='a3-ultragpu-8g',
                                                           default_pool_node_count=1))['changed']
        sandbox.api = SandboxClient(sandbox.container_url)
        sandbox.cluster = sandbox.kube.cluster(CLUSTER_KEY)
        sandbox.kubeconfig = str(tmp_path_factory.mktemp('nap') / 'kubeconfig')
        sandbox.cluster.write_kubeconfig(sandbox.kubeconfig, context='auto', token='sandbox-token')
        wait_until(lambda: sandbox.cluster.store.get('customresourcedefinitions.apiextensions.k8s.io', 'computeclasses.cloud.google.com'),
                   'the ComputeClass CRD GKE installs', timeout=30)
        yield sandbox
    finally:
        sandbox.kube.stop()
        sandbox.stop()


def kubectl(standard, *args, objects=None):
    run = subprocess.run([KUBECTL, *args], input=json.dumps({'apiVersion': 'v1', 'kind': 'List', 'items': objects}) if objects else None,
                         env=dict(os.environ, KUBECONFIG=standard.kubeconfig), capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    return run.stdout


def compute_class(name, priorities, **spec):
    return {'apiVersion': 'cloud.google.com/v1', 'kind': 'ComputeClass', 'metadata': {'name': name},
            'spec': dict({'priorities': priorities, 'nodePoolAutoCreation': {'enabled': True}}, **spec)}


def gpu_pod(name, class_name):
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name, 'namespace': 'default'},
            'spec': {'nodeSelector': {'cloud.google.com/compute-class': class_name},
                     'containers': [{'name': 'test', 'image': 'example/test:1', 'resources': {'limits': {'nvidia.com/gpu': 8}}}]}}


def pools(standard):
    return {p['name']: p for p in standard.api.must('GET', 'v1/%s/nodePools' % CLUSTER_KEY).get('nodePools') or []}


def test_the_first_priority_the_sandbox_can_provision_becomes_a_node_pool(standard):
    before = set(pools(standard))
    kubectl(standard, 'apply', '-f', '-', objects=[
        compute_class('rdma', [
            {'machineFamily': 'a4', 'gpu': {'type': 'nvidia-b200', 'count': 8}, 'location': {'zones': ['us-central1-a']}},
            {'machineType': 'a3-ultragpu-8g', 'reservations': {'affinity': 'Specific', 'specific': [{'name': 'missing', 'zones': [ZONE]}]}},
            {'machineType': 'a3-ultragpu-8g', 'gpu': {'type': 'nvidia-h200-141gb', 'count': 8}, 'spot': True, 'gpuDirect': 'rdma',
             'acceleratorNetworkProfile': 'auto'}],
            nodePoolConfig={'dra': {'networking': {'enabled': True}}}),
        gpu_pod('first', 'rdma'), gpu_pod('second', 'rdma')])
    # Both Pods bound (the pool may first be made for the Pod judged first, then grow for the other).
    assert wait_until(lambda: all(standard.cluster.store.get('pods', p, 'default')['spec'].get('nodeName') for p in ('first', 'second')),
                      'both Pods bound', timeout=60)
    # GKE's Pod admission gave each the toleration of the class's node taint (the nodes carry that taint).
    for name in ('first', 'second'):
        assert {'key': 'cloud.google.com/compute-class', 'operator': 'Equal', 'value': 'rdma', 'effect': 'NoSchedule'} \
            in standard.cluster.store.get('pods', name, 'default')['spec']['tolerations']
    created = {k: v for k, v in pools(standard).items() if k not in before}
    assert len(created) == 1, created
    (name, pool), = created.items()
    assert name.startswith('nap-a3-ultragpu-8g-'), name
    assert pool['config']['machineType'] == 'a3-ultragpu-8g' and pool['config']['spot'] is True
    assert pool['config']['gpuDirectConfig'] == {'gpuDirectStrategy': 'RDMA'}
    assert pool['networkConfig']['acceleratorNetworkProfile'] == 'auto'
    assert pool['autoscaling']['autoprovisioned'] is True and pool['initialNodeCount'] == 2 and pool['locations'] == [ZONE], pool
    nodes = [n for n in standard.cluster.store.list('nodes') if n['metadata']['labels'].get('cloud.google.com/gke-nodepool') == name]
    assert len(nodes) == 2
    labels = nodes[0]['metadata']['labels']
    assert {key: labels.get(key) for key in ('cloud.google.com/compute-class', 'cloud.google.com/gke-accelerator',
                                             'cloud.google.com/machine-family', 'cloud.google.com/gke-provisioning',
                                             'cloud.google.com/gke-networking-dra-driver')} == {
        'cloud.google.com/compute-class': 'rdma', 'cloud.google.com/gke-accelerator': 'nvidia-h200-141gb',
        'cloud.google.com/machine-family': 'a3', 'cloud.google.com/gke-provisioning': 'spot',
        'cloud.google.com/gke-networking-dra-driver': 'true'}
    assert nodes[0]['status']['allocatable']['nvidia.com/gpu'] == '8'
    assert standard.cluster.store.get('deviceclasses.resource.k8s.io', 'mrdma.google.com') is not None, 'DRANET comes with the RDMA pool'
    kubectl(standard, 'delete', 'pod', 'first', 'second', '--wait=false')


def test_do_not_scale_up_leaves_the_pods_pending(standard):
    before = set(pools(standard))
    kubectl(standard, 'apply', '-f', '-', objects=[
        compute_class('none-fits', [{'machineType': 'a4-highgpu-8g', 'location': {'zones': ['us-central1-a']}},
                                    {'machineType': 'a3-ultragpu-8g', 'gpu': {'type': 'nvidia-h200-141gb', 'count': 4}}],
                      whenUnsatisfiable='DoNotScaleUp'),
        gpu_pod('waits', 'none-fits'), gpu_pod('no-class', 'does-not-exist')])

    def not_triggered():
        return [e for e in standard.cluster.store.list('events', namespace='default')
                if e['reason'] == 'NotTriggerScaleUp' and e['involvedObject']['name'] == 'waits']
    event, = wait_until(not_triggered, 'the NotTriggerScaleUp event', timeout=30)
    assert event['source'] == {'component': 'cluster-autoscaler'}
    assert "ComputeClass none-fits (whenUnsatisfiable DoNotScaleUp): no priority can be provisioned" in event['message']
    assert 'priorities[0] (a4-highgpu-8g): Machine type "a4-highgpu-8g" does not exist in zone "us-central1-a"' in event['message']
    assert 'priorities[1] (a3-ultragpu-8g): Accelerator count 4 is not valid' in event['message'], event['message']
    time.sleep(1)   # a few more controller passes: still nothing
    assert set(pools(standard)) == before
    for name in ('waits', 'no-class'):
        pod = standard.cluster.store.get('pods', name, 'default')
        assert not pod['spec'].get('nodeName') and pod['status']['phase'] == 'Pending'
    assert 'NotTriggerScaleUp' not in kubectl(standard, 'get', 'events', '--field-selector', 'involvedObject.name=no-class')
