"""Seed 001 (A3 Ultra / A4, GPUDirect-RDMA on GKE): bad input is refused before any mutating request to either
API, with a message that names the field and the fix.

Cloud half: gke_gpudirect_cluster, gke_gpudirect_node_pool and gce_gpudirect_network run in-process against the
Container / Compute sandbox; after each refusal the sandbox's request log holds no POST, PUT, PATCH or DELETE.
Kubernetes half: the role gke_rdma runs in one ansible-playbook (each case in a block whose rescue keeps the
message) against a live A3 Ultra cluster of the sandbox (a Kubernetes API stand-in with a DRANET node pool);
afterwards the stand-in's request log holds no mutating request and the Container API's none either.
"""

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.modules import gce_gpudirect_network, gke_gpudirect_cluster, gke_gpudirect_node_pool
from module_runner import run_module
from playbook_runner import ansible_playbook_command, collections_path

PROJECT = 'sandbox-project'
ZONE = 'us-central1-b'           # where the sandbox's catalog offers a3-ultragpu-8g and a4-highgpu-8g
MUTATING = ('POST', 'PUT', 'PATCH', 'DELETE')


def connection(sandbox):
    return {'project': PROJECT, 'auth_kind': 'accesstoken', 'access_token': 'sandbox-token',
            'container_endpoint': sandbox.container_url, 'compute_endpoint': sandbox.compute_url}


def cloud_writes(sandbox, since):
    return [(e['method'], e['path']) for e in sandbox.request_log()[since:] if e['method'] in MUTATING]


def kube_writes(kube, since):
    return [(method, path) for method, path, *_rest in kube.requests[since:] if method in MUTATING]


@pytest.fixture(scope='module')
def rdma(tmp_path_factory):
    """An A3 Ultra cluster with a DRANET pool that comes alive (no podman: its Pods are never run here), and
    an A3 Ultra cluster without multi-networking."""
    from sandbox import Sandbox  # pylint: disable=import-outside-toplevel
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(latency=0.0, project=PROJECT).start()
    sandbox.kube = GkeClusters()
    try:
        common = connection(sandbox)
        for name, multi in (('ultra', True), ('plain', False)):
            made = run_module(gke_gpudirect_cluster.main, dict(common, cluster=name, location=ZONE, machine_type='a3-ultragpu-8g',
                                                               default_pool_node_count=1, multi_networking=multi))
            assert made['changed'], made
        pool = run_module(gke_gpudirect_node_pool.main, dict(common, cluster='ultra', location=ZONE, name='a3ultra',
                                                             machine_type='a3-ultragpu-8g', read_nodes=True, nodes_timeout=60))
        assert len(pool['nodes']) == 2, pool
        sandbox.tmp = tmp_path_factory.mktemp('refusals')
        yield sandbox
    finally:
        sandbox.kube.stop()
        sandbox.stop()


# (module, arguments over the defaults, words the message must hold)
CLOUD_CASES = {
    'rdma strategy on an A3 Mega pool': (
        'pool', {'machine_type': 'a3-megagpu-8g', 'networking': 'dranet'}, ['networking: dranet', 'multi_network']),
    'A4 on a version below the floor': (
        'cluster', {'cluster': 'old', 'machine_type': 'a4-highgpu-8g', 'version': '1.34.7-gke.1000000'},
        ['1.34.7-gke.1000000 is older than 1.34.8-gke.1278000', 'use 1.34.8-gke.1278000 or later']),
    'Autopilot below its floor': (
        'cluster', {'cluster': 'auto', 'cluster_mode': 'autopilot', 'version': '1.35.1-gke.1000000'},
        ['1.36.2-gke.1368000', 'autopilot']),
    'DRANET and multi-network on one pool': (
        'pool', {'networking': 'dranet', 'additional_networks': [{'network': 'u-gvnic-net', 'subnetwork': 'u-gvnic-sub'}]},
        ['multi-network API and DRANET cannot be used in one node pool', 'networking: multi_network']),
    '7 RDMA subnets': (
        'pool', {'networking': 'multi_network', 'additional_networks': [{'network': 'u-gvnic-net', 'subnetwork': 'u-gvnic-sub'}]
                 + [{'network': 'u-rdma-net', 'subnetwork': 'u-rdma-sub-%d' % n} for n in range(7)]},
        ['additional_networks', '1 gVNIC network and 8 RDMA subnets', '8 given']),
    'reservation block without reservation': (
        'pool', {'reservation_block': 'block-1'}, ['reservation_block', 'give reservation too']),
    'reservation block without its project': (
        'pool', {'reservation': 'res', 'reservation_block': 'block-1'}, ['reservation_project', 'RESERVATION_PROJECT']),
    'multi-network pool on a cluster without multi-networking': (
        'pool', {'cluster': 'plain', 'networking': 'multi_network', 'network_prefix': 'u'},
        ['enableMultiNetworking', 'cannot be updated to use multi-networking', 'create a new cluster']),
    'a B200 accelerator on A3 Ultra': (
        'pool', {'accelerator_type': 'nvidia-b200'}, ['accelerator_type', 'nvidia-h200-141gb']),
    'spot with a reservation': (
        'pool', {'reservation': 'res', 'provisioning': 'spot'}, ['provisioning: spot', 'reservation']),
    'no GPU driver': (
        'pool', {'gpu_driver_version': 'INSTALLATION_DISABLED'}, ['gpu_driver_version', 'LATEST']),
    'a machine type no GKE manual covers': (
        'pool', {'machine_type': 'a3-edgegpu-8g'}, ['machine_type']),
    'RDMA networks without the zone of the RoCE profile': (
        'network', {}, ['zone', 'ZONE-vpc-roce']),
    'the TCPX layout for A3 Ultra': (
        'network', {'zone': ZONE, 'layout': 'gke'}, ['layout', 'gke_rdma']),
}


@pytest.mark.parametrize('case', sorted(CLOUD_CASES))
def test_cloud_half_refuses_before_any_write(rdma, case):
    module, overrides, words = CLOUD_CASES[case]
    common = connection(rdma)
    defaults = {
        'pool': (gke_gpudirect_node_pool.main, dict(common, cluster='ultra', location=ZONE, name='bad', machine_type='a3-ultragpu-8g',
                                                    read_nodes=False)),
        'cluster': (gke_gpudirect_cluster.main, dict(common, location=ZONE, machine_type='a3-ultragpu-8g')),
        'network': (gce_gpudirect_network.main, dict(common, region='us-central1', machine_type='a3-ultragpu-8g', layout='gke_rdma',
                                                     network_prefix='u')),
    }
    main, args = defaults[module]
    kube = rdma.kube.cluster('projects/%s/locations/%s/clusters/ultra' % (PROJECT, ZONE))
    since, kube_since = len(rdma.request_log()), len(kube.requests)
    result = run_module(main, dict(args, **overrides))
    assert result.get('failed'), result
    for word in words:
        assert word in result['msg'], result['msg']
    assert cloud_writes(rdma, since) == [] and kube_writes(kube, kube_since) == []


# Role gke_rdma: case name -> (role variables over the defaults, words the message must hold)
ROLE_CASES = {
    'a ComputeClass without gpuDirect': (
        {'gke_rdma_networking': 'compute_class', 'gke_rdma_compute_class_definition': {
            'apiVersion': 'cloud.google.com/v1', 'kind': 'ComputeClass', 'metadata': {'name': 'mine'},
            'spec': {'nodePoolConfig': {'dra': {'networking': {'enabled': True}}}, 'nodePoolAutoCreation': {'enabled': True},
                     'priorities': [{'gpu': {'type': 'nvidia-h200-141gb', 'count': 8}, 'machineType': 'a3-ultragpu-8g',
                                     'acceleratorNetworkProfile': 'auto'}]}}},
        ['spec.priorities[0].gpuDirect', 'gpuDirect: rdma']),
    'a ComputeClass of A3 Mega': (
        {'gke_rdma_networking': 'compute_class', 'gke_rdma_compute_class_priorities': [{'machine_type': 'a3-megagpu-8g'}]},
        ['priorities[0].machine_type', 'a3-ultragpu-8g']),
    'a ComputeClass reservation zone without reservation': (
        {'gke_rdma_networking': 'compute_class',
         'gke_rdma_compute_class_priorities': [{'machine_type': 'a3-ultragpu-8g', 'reservation_zones': [ZONE]}]},
        ['reservation_zones', 'give reservation too']),
    'a ComputeClass name Kubernetes refuses': (
        {'gke_rdma_networking': 'compute_class', 'gke_rdma_compute_class': 'RDMA_Class'}, ['not a valid ComputeClass name']),
    '7 RDMA subnets for the manual Networks': (
        {'gke_rdma_networking': 'multi_network', 'gke_rdma_networks': [{'network': 'u-gvnic-net', 'subnetwork': 'u-gvnic-sub'}]
         + [{'network': 'u-rdma-net', 'subnetwork': 'u-rdma-sub-%d' % n} for n in range(7)]},
        ['9 additional networks', 'got 8']),
    'manual Networks without a prefix': (
        {'gke_rdma_networking': 'multi_network'}, ['network_prefix', 'PREFIX-gvnic-net']),
    'A4 objects on a cluster of A3 Ultra nodes': (
        {'gke_rdma_machine_type': 'a4-highgpu-8g', 'gke_rdma_node_pool': 'a3ultra'},
        ['no node matches', 'nvidia-b200', 'gke_rdma_machine_type']),
    'an unknown networking': (
        {'gke_rdma_networking': 'sriov'}, ['gke_rdma_networking', 'dranet, compute_class, multi_network']),
    # Clusters that lack what a path needs (the role's reads go to the cluster gke_rdma_kubeconfig names).
    'DRANET on a cluster without an RDMA pool': (
        {'gke_rdma_kubeconfig': '{{ __kubeconfigs.plain }}'},
        ['the cluster serves no DeviceClass mrdma.google.com', 'gpuDirectStrategy RDMA']),
    'manual Networks on a cluster without multi-networking': (
        {'gke_rdma_networking': 'multi_network', 'gke_rdma_network_prefix': 'u', 'gke_rdma_kubeconfig': '{{ __kubeconfigs.plain }}'},
        ['the cluster serves no CustomResourceDefinition networks.networking.gke.io, CustomResourceDefinition '
         'gkenetworkparamsets.networking.gke.io', '--enable-multi-networking']),
    # Kubernetes 1.33 serves no resource.k8s.io/v1: the DeviceClass's kind itself is missing, not only the object.
    'DRANET on Kubernetes 1.33': (
        {'gke_rdma_kubeconfig': '{{ __kubeconfigs.bare }}'}, ['the cluster serves no DeviceClass mrdma.google.com', 'GKE 1.34.8']),
    'a ComputeClass on a cluster that is not GKE': (
        {'gke_rdma_networking': 'compute_class', 'gke_rdma_kubeconfig': '{{ __kubeconfigs.bare }}'},
        ['the cluster serves no CustomResourceDefinition computeclasses.cloud.google.com', 'ComputeClass is served by GKE clusters']),
}


def test_role_refuses_before_any_write(rdma):
    from sandbox.kube.cluster import KubeHub  # pylint: disable=import-outside-toplevel
    cluster = 'projects/%s/locations/%s/clusters/ultra' % (PROJECT, ZONE)
    kube = rdma.kube.cluster(cluster)
    kubeconfig, out = str(rdma.tmp / 'kubeconfig'), str(rdma.tmp / 'refusals.json')
    kube.write_kubeconfig(kubeconfig, context='ultra', token='sandbox-token')
    # The cluster without multi-networking (and without an RDMA pool), and a plain Kubernetes 1.33 (no GKE CRDs).
    hub = KubeHub()
    others = {'plain': rdma.kube.cluster('projects/%s/locations/%s/clusters/plain' % (PROJECT, ZONE)),
              'bare': hub.start_cluster('bare', version='1.33.5')}
    kubeconfigs = {name: other.write_kubeconfig(str(rdma.tmp / ('kubeconfig-' + name)), context=name) for name, other in others.items()}
    try:
        _refusals(rdma, kube, kubeconfig, kubeconfigs, others, out)
    finally:
        hub.stop_all()


def _refusals(rdma, kube, kubeconfig, kubeconfigs, others, out):
    tasks = []
    for name, (variables, _words) in sorted(ROLE_CASES.items()):
        record = "{{ __refusals | default({}) | combine({%s: %s}) }}"
        tasks.append({'name': name, 'block': [
            {'ansible.builtin.include_role': {'name': 'aiinfra.gpudirect.gke_rdma'},
             'vars': dict({'gke_rdma_nccl_test': False, 'gke_rdma_wait_delay': 1}, **variables)},
            {'ansible.builtin.set_fact': {'__refusals': record % (json.dumps(name), "'NOT REFUSED'")}}],
            'rescue': [{'ansible.builtin.set_fact': {'__refusals': record % (json.dumps(name), 'ansible_failed_result.msg')}}]})
    tasks.append({'ansible.builtin.copy': {'content': '{{ __refusals | to_json }}', 'dest': out, 'mode': '0600'}})
    playbook = rdma.tmp / 'refusals.yml'
    playbook.write_text(json.dumps([{'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
                                     'vars': {'ansible_python_interpreter': sys.executable, 'gke_rdma_kubeconfig': kubeconfig,
                                              '__kubeconfigs': kubeconfigs},
                                     'module_defaults': {'group/kubernetes.core.k8s': {'kubeconfig': kubeconfig}}, 'tasks': tasks}]))
    since, kube_since = len(rdma.request_log()), len(kube.requests)
    others_since = {name: len(other.requests) for name, other in others.items()}
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='False')
    run = subprocess.run([*ansible_playbook_command(kubernetes=True), str(playbook)], env=env,
                         capture_output=True, text=True, timeout=400, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    with open(out, encoding='utf-8') as handle:
        messages = json.load(handle)
    assert sorted(messages) == sorted(ROLE_CASES)
    for name, (_variables, words) in ROLE_CASES.items():
        for word in words:
            assert word in messages[name], (name, messages[name])
    assert kube_writes(kube, kube_since) == [] and cloud_writes(rdma, since) == []
    for name, other in others.items():
        assert len(other.requests) > others_since[name], 'the role read the %s cluster' % name
        assert kube_writes(other, others_since[name]) == [], name
    assert len(kube.requests) > kube_since, 'the role read the cluster (the DRANET and node checks) before refusing'
