"""GKE's simulations (tests/sandbox/kube/controllers.py) on a real control plane: Nodes from node pools (labels,
capacity, taints, as GKE registers them), what GKE installs, the multi-network controllers' Network and
GKENetworkParamSet status, DRANET's ResourceSlices on RDMA pools, and the loop's hooks for other simulations.

One standalone cluster for the module (the ``kube_cluster`` fixture) with GKE's admission plugins; the
controllers are driven synchronously (``reconcile()``: one pass), so each rule is checked pass by pass, while
the real components do their part: kwok makes the Nodes Ready and keeps their Leases, the garbage collector
of kube-controller-manager removes what a deleted Node owned, kube-scheduler places Pods on the Nodes the
simulation wrote (its messages are its own), the DRA allocator allocates from the simulated ResourceSlices.
"""

import time

import pytest

from sandbox.kube.controllers import ClusterControllers, ComputeView, gke_reserved, node_for, quantity
from sandbox.kube.errors import KubeError
from sandbox.kube.gke import GKE_ADMISSION_PLUGINS
from waiting import wait_until

# As gke.py starts every GKE cluster: a Pod that requests nvidia.com/gpu tolerates the GPU taint.
KUBE_ADMISSION_PLUGINS = GKE_ADMISSION_PLUGINS
PROJECT = 'sandbox-project'
ZONE = 'us-central1-a'
GKE_CLUSTER = {'name': 'c1', 'currentNodeVersion': '1.34.8-gke.1278000', 'networkConfig': {'enableMultiNetworking': True}}
# Generous: CI is a loaded 2-core machine; a pass is a few dozen requests, kwok and the scheduler share the cores.
WAIT = 120


def pool(name, machine_type, count, accelerators=None, labels=None, additional=0, **config):
    return {'name': name, 'status': 'RUNNING', 'initialNodeCount': count, 'locations': [ZONE],
            'instanceGroupUrls': ['https://www.googleapis.com/compute/v1/projects/p/zones/%s/instanceGroupManagers/gke-c1-%s-1a2b3c4d-grp'
                                  % (ZONE, name)],
            'config': dict({'machineType': machine_type, 'accelerators': accelerators or [], 'labels': labels or {}}, **config),
            'networkConfig': {'additionalNodeNetworkConfigs': [{'network': 'net-%d' % n, 'subnetwork': 'sub-%d' % n}
                                                               for n in range(1, additional + 1)]}}


A3_MEGA = pool('a3mega', 'a3-megagpu-8g', 2, [{'acceleratorType': 'nvidia-h100-mega-80gb', 'acceleratorCount': '8',
                                               'gpuDriverInstallationConfig': {'gpuDriverVersion': 'LATEST'}}], additional=8)
DEFAULT = pool('default-pool', 'e2-standard-4', 1)
A3_ULTRA_DRANET = pool('a3ultra', 'a3-ultragpu-8g', 1, [{'acceleratorType': 'nvidia-h200-141gb', 'acceleratorCount': '8'}],
                       labels={'cloud.google.com/gke-networking-dra-driver': 'true'})


@pytest.fixture(scope='module')
def controllers(kube_cluster):
    # Not started: the tests run its passes themselves (reconcile() raises what a pass meets).
    return ClusterControllers(kube_cluster)


def settle(controllers, predicate, what, timeout=WAIT):
    """Run controller passes until ``predicate()`` holds; -> its value.

    A pass right after gke_installs created a CRD may meet the API server's 429 "storage is (re)initializing"
    (discovery lists a new CRD's resource a moment before its watch cache serves; the real answer says to retry
    after a second); the next pass retries, as the controllers' own loop does. Every other error fails the test."""
    def one_pass():
        try:
            controllers.reconcile()
        except KubeError as error:
            if (error.code, error.status.get('message')) != (429, 'storage is (re)initializing'):
                raise
            return None
        return predicate()
    return wait_until(one_pass, what, timeout=timeout)


def nodes_of(store, pool_name=None):
    selector = 'cloud.google.com/gke-nodepool' + ('=' + pool_name if pool_name else '')
    return store.list('nodes', label_selector=selector)


def pools_of(store):
    return sorted(node['metadata']['labels']['cloud.google.com/gke-nodepool'] for node in nodes_of(store))


def condition(obj, kind):
    return next((c for c in (obj.get('status') or {}).get('conditions') or [] if c['type'] == kind), None)


def all_ready(nodes):
    return nodes and all((condition(node, 'Ready') or {}).get('status') == 'True' for node in nodes)


def test_node_names_labels_capacity_and_gke_reservations():
    """node_for on its own: the Node GKE registers for one VM of a pool."""
    node = node_for(GKE_CLUSTER, A3_MEGA, PROJECT, ZONE, 0, 0, taint_gpus=True)
    name = node['metadata']['name']
    assert name.startswith('gke-c1-a3mega-1a2b3c4d-') and len(name.rsplit('-', 1)[1]) == 4
    labels = node['metadata']['labels']
    assert labels['cloud.google.com/gke-nodepool'] == 'a3mega'
    assert labels['cloud.google.com/gke-accelerator'] == 'nvidia-h100-mega-80gb'
    assert labels['cloud.google.com/gke-gpu-driver-version'] == 'latest'
    assert labels['node.kubernetes.io/instance-type'] == 'a3-megagpu-8g' and labels['kubernetes.io/hostname'] == name
    assert labels['topology.kubernetes.io/zone'] == ZONE and labels['topology.kubernetes.io/region'] == 'us-central1'
    assert node['spec']['taints'] == [{'key': 'nvidia.com/gpu', 'value': 'present', 'effect': 'NoSchedule'}]
    assert node['status']['capacity']['nvidia.com/gpu'] == '8' and node['status']['capacity']['cpu'] == '208'
    assert node['spec']['providerID'] == 'gce://%s/%s/%s' % (PROJECT, ZONE, name)
    # GKE's documented example: a 4 vCPU / 16 GiB node keeps 80m CPU and about 2.7 GiB (with eviction) back.
    assert gke_reserved(4, 16384) == (80, 2762)
    small = node_for(GKE_CLUSTER, DEFAULT, PROJECT, ZONE, 0, 0, taint_gpus=True)
    assert small['status']['allocatable']['cpu'] == '3920m' and 'taints' not in small['spec']
    # GKE taints GPU nodes only when the cluster also has a non-GPU pool.
    assert 'taints' not in node_for(GKE_CLUSTER, A3_MEGA, PROJECT, ZONE, 0, 0, taint_gpus=False)['spec']


def test_a_cluster_without_multi_networking_gets_no_network_crds(kube_cluster, controllers):
    """First in the module on purpose: the multi-networking tests below install the networking.gke.io CRDs into
    this cluster, and a CRD once installed stays. Without multi-networking the network controllers idle and the
    others run."""
    store = kube_cluster.store
    controllers.set_gke(dict(GKE_CLUSTER, networkConfig={}), [DEFAULT], PROJECT)
    settle(controllers, lambda: pools_of(store) == ['default-pool'], 'the default pool\'s Node')
    with pytest.raises(KeyError):
        store.resource('networks.networking.gke.io')
    assert store.get('customresourcedefinitions.apiextensions.k8s.io', 'computeclasses.cloud.google.com') is not None
    assert store.get('deviceclasses.resource.k8s.io', 'mrdma.google.com') is None   # no RDMA pool either


def test_nodes_follow_pools_with_gke_labels_capacity_and_taints(kube_cluster, controllers):
    store = kube_cluster.store
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, A3_MEGA, A3_ULTRA_DRANET], PROJECT)
    settle(controllers, lambda: pools_of(store) == ['a3mega', 'a3mega', 'a3ultra', 'default-pool'], 'a Node per VM of each pool')
    # kwok plays each Node's kubelet: Ready, and a Lease in kube-node-lease (kubectl describe node reads it).
    wait_until(lambda: all_ready(nodes_of(store)), 'kwok to report every Node Ready', timeout=WAIT)
    names = sorted(node['metadata']['name'] for node in nodes_of(store))
    wait_until(lambda: sorted(lease['metadata']['name'] for lease in store.list('leases.coordination.k8s.io', 'kube-node-lease')) == names,
               'a node Lease per Node (kwok)', timeout=WAIT)

    mega = nodes_of(store, 'a3mega')[0]
    labels = mega['metadata']['labels']
    assert labels['cloud.google.com/gke-accelerator'] == 'nvidia-h100-mega-80gb' and labels['cloud.google.com/gke-accelerator-count'] == '8'
    assert labels['node.kubernetes.io/instance-type'] == 'a3-megagpu-8g' and labels['topology.kubernetes.io/zone'] == ZONE
    # GPU pools of a cluster that also has a non-GPU pool carry GKE's GPU taint; the default pool none.
    assert mega['spec']['taints'] == [{'key': 'nvidia.com/gpu', 'value': 'present', 'effect': 'NoSchedule'}]
    assert 'taints' not in nodes_of(store, 'default-pool')[0]['spec']
    # What the simulation wrote as the kubelet survives kwok's status writes (the API server's canonical quantities).
    assert mega['status']['capacity']['nvidia.com/gpu'] == '8' and mega['status']['allocatable']['nvidia.com/gpu'] == '8'
    assert quantity(mega['status']['capacity']['cpu']) == 208
    small = nodes_of(store, 'default-pool')[0]['status']
    assert quantity(small['allocatable']['cpu']) == pytest.approx(3.92)
    assert quantity(small['allocatable']['memory']) == (16384 - 2762) * 2 ** 20
    assert {'type': 'InternalIP', 'address': '127.0.0.1'} in small['addresses']   # where kubelet-streams serves

    # What GKE installs: the default Network (Ready), DRANET's DeviceClass (an RDMA pool exists), ComputeClass's CRD.
    default = store.get('networks.networking.gke.io', 'default')
    assert default['spec'] == {'type': 'L3'} and condition(default, 'Ready')['status'] == 'True'
    assert store.get('deviceclasses.resource.k8s.io', 'mrdma.google.com')['spec']['selectors'] == [
        {'cel': {'expression': "device.driver == 'mrdma.google.com'"}}]

    # Resize one pool and delete another: Nodes follow; the garbage collector takes the Leases the Nodes owned.
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, dict(A3_MEGA, initialNodeCount=1)], PROJECT)
    settle(controllers, lambda: pools_of(store) == ['a3mega', 'default-pool'], 'the resized and deleted pools\' Nodes gone')
    wait_until(lambda: len(store.list('leases.coordination.k8s.io', 'kube-node-lease')) == 2,
               'the garbage collector to delete the Leases of the deleted Nodes', timeout=WAIT)


def gpu_pod(name, gpus, **spec):
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name, 'namespace': 'default'},
            'spec': dict({'containers': [{'name': 'main', 'image': 'example', 'resources': {'limits': {'nvidia.com/gpu': str(gpus)}}}]},
                         **spec)}


def scheduled(store, name):
    return condition(store.get('pods', name, 'default') or {}, 'PodScheduled')


def test_the_real_scheduler_places_gpu_pods_by_the_simulated_capacity_and_taints(kube_cluster, controllers):
    store = kube_cluster.store
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, A3_MEGA], PROJECT)
    settle(controllers, lambda: pools_of(store) == ['a3mega', 'a3mega', 'default-pool'], 'the pools\' Nodes')
    wait_until(lambda: all_ready(nodes_of(store)), 'kwok to report every Node Ready', timeout=WAIT)
    names = ['fits', 'too-big', 'selects-gpu-nodes']
    try:
        store.create(gpu_pod('fits', 8))
        store.create(gpu_pod('too-big', 16))
        store.create({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'selects-gpu-nodes', 'namespace': 'default'},
                      'spec': {'nodeSelector': {'cloud.google.com/gke-accelerator': 'nvidia-h100-mega-80gb'},
                               'containers': [{'name': 'main', 'image': 'example'}]}})
        fits = wait_until(lambda: (store.get('pods', 'fits', 'default').get('status') or {}).get('phase') == 'Running'
                          and store.get('pods', 'fits', 'default'), 'Pod fits scheduled and Running', timeout=WAIT)
        # ExtendedResourceToleration wrote the GPU toleration, so the tainted A3 Mega node took it.
        assert {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'} in fits['spec']['tolerations']
        assert fits['spec']['nodeName'].startswith('gke-c1-a3mega-')
        too_big = wait_until(lambda: (scheduled(store, 'too-big') or {}).get('reason') == 'Unschedulable' and scheduled(store, 'too-big'),
                             'Pod too-big refused by the scheduler', timeout=WAIT)
        assert '3 Insufficient nvidia.com/gpu' in too_big['message'], too_big
        tainted = wait_until(lambda: (scheduled(store, 'selects-gpu-nodes') or {}).get('reason') == 'Unschedulable'
                             and scheduled(store, 'selects-gpu-nodes'), 'Pod selects-gpu-nodes refused by the scheduler', timeout=WAIT)
        # kube-scheduler 1.34's TaintToleration wording names no taint (older releases printed {KEY: VALUE}).
        assert '2 node(s) had untolerated taint(s)' in tainted['message'], tainted
        assert "1 node(s) didn't match Pod's node affinity/selector" in tainted['message'], tainted
    finally:
        for name in names:
            store.delete('pods', name, 'default')


def test_dranet_resource_slices_on_rdma_pools_are_allocated_by_the_real_scheduler(kube_cluster, controllers):
    store = kube_cluster.store
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, A3_ULTRA_DRANET], PROJECT)

    def slices():
        return [item for item in store.list('resourceslices.resource.k8s.io') if item['spec']['driver'] == 'mrdma.google.com']
    settle(controllers, lambda: pools_of(store) == ['a3ultra', 'default-pool'] and slices(), 'the a3ultra Node and its ResourceSlice')
    node = nodes_of(store, 'a3ultra')[0]
    [published] = slices()   # one per DRANET node; the default pool's node has none
    assert published['spec']['nodeName'] == node['metadata']['name']
    assert [device['name'] for device in published['spec']['devices']] == ['rdma%d' % index for index in range(8)]   # A3 Ultra: 8 RDMA NICs
    assert published['metadata']['ownerReferences'][0]['uid'] == node['metadata']['uid']
    wait_until(lambda: all_ready(nodes_of(store)), 'kwok to report every Node Ready', timeout=WAIT)

    # Seed 001's claim: all mrdma devices of one node. The real scheduler's DRA plugin allocates from the slice.
    store.create({'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaimTemplate', 'metadata': {'name': 'all-mrdma', 'namespace': 'default'},
                  'spec': {'spec': {'devices': {'requests': [{'name': 'req-mrdma', 'exactly': {
                      'deviceClassName': 'mrdma.google.com', 'allocationMode': 'All'}}]}}}})
    try:
        store.create(gpu_pod('rdma', 8, resourceClaims=[{'name': 'mrdma', 'resourceClaimTemplateName': 'all-mrdma'}]))
        pod = wait_until(lambda: store.get('pods', 'rdma', 'default')['spec'].get('nodeName') and store.get('pods', 'rdma', 'default'),
                         'Pod rdma bound by the scheduler', timeout=WAIT)
        assert pod['spec']['nodeName'] == node['metadata']['name']
        claim_name = pod['status']['resourceClaimStatuses'][0]['resourceClaimName']
        claim = store.get('resourceclaims.resource.k8s.io', claim_name, 'default')
        results = claim['status']['allocation']['devices']['results']
        assert sorted(result['device'] for result in results) == ['rdma%d' % index for index in range(8)]
        assert {(result['driver'], result['pool']) for result in results} == {('mrdma.google.com', node['metadata']['name'])}
    finally:
        store.delete('pods', 'rdma', 'default')
        store.delete('resourceclaimtemplates.resource.k8s.io', 'all-mrdma', 'default')
    # The pool goes: its Node goes, and the garbage collector takes the slice the Node owned.
    controllers.set_gke(GKE_CLUSTER, [DEFAULT], PROJECT)
    settle(controllers, lambda: pools_of(store) == ['default-pool'], 'the a3ultra Node gone')
    wait_until(lambda: not slices(), 'the garbage collector to delete the deleted Node\'s ResourceSlice', timeout=WAIT)


def test_multi_network_nodes_report_their_networks_once_the_network_objects_exist(kube_cluster, controllers):
    store = kube_cluster.store
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, A3_MEGA], PROJECT)
    settle(controllers, lambda: len(nodes_of(store, 'a3mega')) == 2, 'the a3mega Nodes')
    assert not any(key.startswith('networking.gke.io.networks/') for key in nodes_of(store, 'a3mega')[0]['status']['capacity'])
    store.create(_gnp('attached', 'net-1', 'sub-1', deviceMode='NetDevice'))
    store.create(_network('attached', 'attached'))
    try:
        def attached():
            node = nodes_of(store, 'a3mega')[0]
            return node['status']['capacity'].get('networking.gke.io.networks/attached') == '1' and node
        node = settle(controllers, attached, 'the a3mega Node to report the Network attached to its net-1 NIC')
        assert node['status']['allocatable']['networking.gke.io.networks/attached.IP'] == '1'
        north = node['metadata']['annotations']['networking.gke.io/north-interfaces']
        assert north.startswith('[{"network":"attached","ipAddress":"192.168.1.')
        assert 'networking.gke.io.networks/attached' not in nodes_of(store, 'default-pool')[0]['status']['capacity']
    finally:
        store.delete('networks.networking.gke.io', 'attached')
        store.delete('gkenetworkparamsets.networking.gke.io', 'attached')
        settle(controllers, lambda: store.get('gkenetworkparamsets.networking.gke.io', 'attached') is None,
               'GKENetworkParamSet attached gone (its finalizer removed once no Network refers to it)')


def _gnp(name, vpc, subnet, **spec):
    return {'apiVersion': 'networking.gke.io/v1', 'kind': 'GKENetworkParamSet', 'metadata': {'name': name},
            'spec': dict({'vpc': vpc, 'vpcSubnet': subnet}, **spec)}


def _network(name, params=None, kind='Device'):
    spec = {'type': kind}
    if params:
        spec['parametersRef'] = {'group': 'networking.gke.io', 'kind': 'GKENetworkParamSet', 'name': params}
    return {'apiVersion': 'networking.gke.io/v1', 'kind': 'Network', 'metadata': {'name': name}, 'spec': spec}


def _conditions(obj):
    return {c['type']: (c['status'], c['reason'], c['message']) for c in (obj.get('status') or {}).get('conditions') or []}


def test_gke_network_controllers_validate_params_against_compute_and_can_be_paused(kube_cluster, controllers):
    """GKE's GKENetworkParamSet controller (cloud-provider-gcp) and network controller, simulated: Ready only for
    params whose subnet (in the cluster's region) and VPC exist; a Device Network needs params with a deviceMode."""
    store = kube_cluster.store
    gnp_ref, network_ref = 'gkenetworkparamsets.networking.gke.io', 'networks.networking.gke.io'
    controllers.set_gke(GKE_CLUSTER, [DEFAULT], PROJECT)
    subnets = {'sub-1': {'ipCidrRange': '192.168.1.0/24'}, 'sub-2': {'ipCidrRange': '192.168.2.0/24'}}
    controllers.set_compute(ComputeView(['net-1', 'net-2'], subnets))
    settle(controllers, lambda: store.get(network_ref, 'default') is not None, 'GKE\'s installs')
    params = {'vpc1': _gnp('vpc1', 'net-1', 'sub-1', deviceMode='NetDevice'), 'nosub': _gnp('nosub', 'net-1', 'sub-9', deviceMode='NetDevice'),
              'novpc': _gnp('novpc', 'net-9', 'sub-2', deviceMode='NetDevice'),
              'nomode': _gnp('nomode', 'net-2', 'sub-2')}   # neither podIPv4Ranges nor deviceMode
    networks = {'vpc1': _network('vpc1', 'vpc1'), 'orphan': _network('orphan'),   # a Device Network without params
                'missing': _network('missing', 'no-such-params')}
    try:
        for obj in [*params.values(), *networks.values()]:
            store.create(obj)
        settle(controllers, lambda: all(condition(store.get(gnp_ref, name), 'Ready') for name in params)
               and all(condition(store.get(network_ref, name), 'Ready') for name in networks), 'Ready conditions on every object')
        gnp = store.get(gnp_ref, 'vpc1')
        assert _conditions(gnp) == {'Ready': ('True', 'GNPReady', '')}
        assert gnp['status']['podCIDRs'] == {'cidrBlocks': ['192.168.1.0/24']} and gnp['status']['networkName'] == 'vpc1'
        assert gnp['metadata']['finalizers'] == ['networking.gke.io/gnp-controller']
        assert 'observedGeneration' not in gnp['status']['conditions'][0]   # the real controller sets none
        assert _conditions(store.get(network_ref, 'vpc1')) == {
            'ParamsReady': ('True', 'GNPParamsReady', ''), 'Ready': ('True', 'NetworkReady', '')}
        assert _conditions(store.get(gnp_ref, 'nosub'))['Ready'] == ('False', 'SubnetNotFound', 'subnet: sub-9 not found in VPC: net-1')
        assert _conditions(store.get(gnp_ref, 'novpc'))['Ready'] == ('False', 'VPCNotFound', 'VPC: net-9 not found')
        assert _conditions(store.get(gnp_ref, 'nomode'))['Ready'][:2] == ('False', 'SecondaryRangeAndDeviceModeUnspecified')
        for name in ('orphan', 'missing'):
            assert _conditions(store.get(network_ref, name))['Ready'][:2] == ('False', 'ParamsNotReady')

        # Paused: the spec moves to a subnet that does not exist, the status stays Ready (a stale Ready); resumed: recomputed.
        controllers.pause('gke-networks')
        gnp = store.get(gnp_ref, 'vpc1')
        gnp['spec']['vpcSubnet'] = 'sub-8'
        store.update(gnp)
        controllers.reconcile()
        gnp = store.get(gnp_ref, 'vpc1')
        assert gnp['metadata']['generation'] == 2 and _conditions(gnp)['Ready'][0] == 'True'
        controllers.resume('gke-networks')
        settle(controllers, lambda: _conditions(store.get(gnp_ref, 'vpc1'))['Ready'][0] == 'False', 'vpc1 recomputed after resume')
        assert _conditions(store.get(gnp_ref, 'vpc1'))['Ready'] == ('False', 'SubnetNotFound', 'subnet: sub-8 not found in VPC: net-1')

        # Deleting params a Network still refers to leaves them Terminating (the finalizer stays) until the Network goes.
        store.delete(gnp_ref, 'vpc1')
        controllers.reconcile()
        assert store.get(gnp_ref, 'vpc1')['metadata'].get('deletionTimestamp')
        assert store.get(gnp_ref, 'vpc1')['metadata']['finalizers'] == ['networking.gke.io/gnp-controller']
        store.delete(network_ref, 'vpc1')
        settle(controllers, lambda: store.get(gnp_ref, 'vpc1') is None, 'GKENetworkParamSet vpc1 gone once Network vpc1 went')
    finally:
        controllers.resume('gke-networks')
        for name in networks:
            store.delete(network_ref, name)
        for name in params:
            store.delete(gnp_ref, name)
        settle(controllers, lambda: not [item for item in store.list(gnp_ref) if item['metadata']['name'] in params],
               'the test\'s GKENetworkParamSets gone')


def test_extra_reconcilers_run_on_the_controller_loop_and_pause_by_name(kube_cluster):
    """The hooks other simulations (openshift.py) use: ``add(fn)`` runs fn(store) on every pass of the loop's thread,
    ``pause(fn.__name__)`` stops it until ``resume``. A ClusterControllers of its own (no GKE set), started and stopped."""
    loop = ClusterControllers(kube_cluster, tick=0.1)
    seen, passes = [], []

    def count_nodes(store):
        seen.append(len(store.list('nodes')))

    def pass_marker(store):   # never paused: counts the loop's passes, so the test waits for passes, not for time
        del store
        passes.append(time.monotonic())
    loop.add(count_nodes)
    loop.add(pass_marker)
    loop.start()
    try:
        wait_until(lambda: len(seen) >= 2, 'count_nodes to run on the loop', timeout=WAIT)
        loop.pause('count_nodes')
        # A pass under way when pause() came may still run count_nodes; the second pass after it cannot.
        marked = len(passes)
        wait_until(lambda: len(passes) >= marked + 2, 'two more passes of the loop', timeout=WAIT)
        paused_at, marked = len(seen), len(passes)
        wait_until(lambda: len(passes) >= marked + 5, 'five passes while count_nodes is paused', timeout=WAIT)
        assert len(seen) == paused_at
        loop.resume('count_nodes')
        wait_until(lambda: len(seen) > paused_at, 'count_nodes to run again after resume', timeout=WAIT)
    finally:
        loop.stop()
    assert seen[-1] == len(kube_cluster.store.list('nodes')) and not loop.errors, loop.errors
