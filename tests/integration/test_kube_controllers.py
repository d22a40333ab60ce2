"""The simulated controllers of tests/sandbox/kube/controllers.py on a stand-in cluster without
containers (``PodRuntime(enabled=False)``: a started Pod's containers count as running), driven
synchronously (``reconcile()``) so every rule is checked without timing: GKE node pools -> Nodes,
GKE's installs, the scheduler's decisions and messages, DaemonSet counts and rollouts, Deployment
status.  Containers, logs, exec and Jobs that finish run on podman in test_kube_gke_cluster.py.
"""

import time

import pytest

from sandbox.kube import KubeHub
from sandbox.kube.controllers import ClusterControllers, ComputeView, gke_reserved, node_for
from sandbox.kube.exec import PodRuntime

PROJECT = 'sandbox-project'
ZONE = 'us-central1-a'
GKE_CLUSTER = {'name': 'c1', 'currentNodeVersion': '1.34.8-gke.1278000', 'networkConfig': {'enableMultiNetworking': True}}


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


@pytest.fixture
def kube():
    hub = KubeHub()
    cluster = hub.start_cluster('projects/%s/locations/%s/clusters/c1' % (PROJECT, ZONE), version='1.34.8-gke.1278000')
    cluster.admission_plugins.add('ExtendedResourceToleration')   # as gke.py starts GKE clusters
    controllers = ClusterControllers(cluster, PodRuntime(enabled=False), ready_delay=0)
    yield cluster, controllers
    hub.stop_all()


def settle(controllers, predicate=lambda: True, timeout=10):
    """Reconcile until ``predicate()`` holds (container starts run on worker threads)."""
    deadline = time.monotonic() + timeout
    while True:
        controllers.reconcile()
        value = predicate()
        if value or time.monotonic() > deadline:
            assert not controllers.errors, controllers.errors
            return value
        time.sleep(0.02)


def gpu_pod(name, gpus, **spec):
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name, 'namespace': 'default'},
            'spec': dict({'containers': [{'name': 'main', 'image': 'example', 'resources': {'limits': {'nvidia.com/gpu': gpus}}}]}, **spec)}


def condition(obj, kind):
    return next((c for c in (obj.get('status') or {}).get('conditions') or [] if c['type'] == kind), None)


def test_node_names_labels_capacity_and_gke_reservations():
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


def test_nodes_follow_pools_and_gke_installs_its_objects(kube):
    cluster, controllers = kube
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, A3_MEGA, A3_ULTRA_DRANET], PROJECT)
    settle(controllers)
    nodes = cluster.store.list('nodes')
    assert sorted(n['metadata']['labels']['cloud.google.com/gke-nodepool'] for n in nodes) == ['a3mega', 'a3mega', 'a3ultra', 'default-pool']
    assert all(condition(n, 'Ready')['status'] == 'True' for n in nodes)
    assert sorted(lease['metadata']['name'] for lease in cluster.store.list('leases.coordination.k8s.io', 'kube-node-lease')) == \
        sorted(n['metadata']['name'] for n in nodes)   # the kubelets' node leases (kubectl describe node reads them)
    assert cluster.store.get('networks.networking.gke.io', 'default')['spec'] == {'type': 'L3'}
    assert cluster.store.get('deviceclasses.resource.k8s.io', 'mrdma.google.com') is not None
    assert cluster.store.get('customresourcedefinitions.apiextensions.k8s.io', 'computeclasses.cloud.google.com') is not None
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, dict(A3_MEGA, initialNodeCount=1)], PROJECT)   # resize and delete a pool
    settle(controllers)
    assert sorted(n['metadata']['labels']['cloud.google.com/gke-nodepool'] for n in cluster.store.list('nodes')) == ['a3mega', 'default-pool']
    assert len(cluster.store.list('leases.coordination.k8s.io', 'kube-node-lease')) == 2   # leases go with their nodes


def test_multi_network_nodes_report_their_networks_once_the_network_objects_exist(kube):
    cluster, controllers = kube
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, A3_MEGA], PROJECT)
    settle(controllers)
    cluster.store.create({'apiVersion': 'networking.gke.io/v1', 'kind': 'GKENetworkParamSet', 'metadata': {'name': 'vpc1'},
                          'spec': {'vpc': 'net-1', 'vpcSubnet': 'sub-1', 'deviceMode': 'NetDevice'}})
    cluster.store.create({'apiVersion': 'networking.gke.io/v1', 'kind': 'Network', 'metadata': {'name': 'vpc1'},
                          'spec': {'type': 'Device', 'parametersRef': {'group': 'networking.gke.io', 'kind': 'GKENetworkParamSet', 'name': 'vpc1'}}})
    settle(controllers)
    node = cluster.store.list('nodes', label_selector='cloud.google.com/gke-nodepool=a3mega')[0]
    assert node['status']['capacity']['networking.gke.io.networks/vpc1'] == '1'
    north = node['metadata']['annotations']['networking.gke.io/north-interfaces']
    assert north.startswith('[{"network":"vpc1","ipAddress":"192.168.1.')


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


def test_gke_network_controllers_validate_params_against_compute_and_can_be_paused(kube):
    """GKE's GKENetworkParamSet controller (cloud-provider-gcp) and network controller, simulated: Ready only for
    params whose subnet (in the cluster's region) and VPC exist; a Device Network needs params with a deviceMode."""
    cluster, controllers = kube
    store = cluster.store
    controllers.set_gke(GKE_CLUSTER, [DEFAULT], PROJECT)
    subnets = {'sub-1': {'ipCidrRange': '192.168.1.0/24'}, 'sub-2': {'ipCidrRange': '192.168.2.0/24'}}
    controllers.set_compute(ComputeView(['net-1', 'net-2'], subnets))
    settle(controllers)
    store.create(_gnp('vpc1', 'net-1', 'sub-1', deviceMode='NetDevice'))
    store.create(_network('vpc1', 'vpc1'))
    store.create(_gnp('nosub', 'net-1', 'sub-9', deviceMode='NetDevice'))
    store.create(_gnp('novpc', 'net-9', 'sub-2', deviceMode='NetDevice'))
    store.create(_gnp('nomode', 'net-2', 'sub-2', podIPv4Ranges={'rangeNames': []}))
    store.create(_network('orphan'))                      # a Device Network without params
    store.create(_network('missing', 'no-such-params'))
    settle(controllers)
    gnp = store.get('gkenetworkparamsets.networking.gke.io', 'vpc1')
    assert _conditions(gnp) == {'Ready': ('True', 'GNPReady', '')}
    assert gnp['status']['podCIDRs'] == {'cidrBlocks': ['192.168.1.0/24']} and gnp['status']['networkName'] == 'vpc1'
    assert gnp['metadata']['finalizers'] == ['networking.gke.io/gnp-controller']
    assert 'observedGeneration' not in gnp['status']['conditions'][0]   # the real controller sets none
    assert _conditions(store.get('networks.networking.gke.io', 'vpc1')) == {
        'ParamsReady': ('True', 'GNPParamsReady', ''), 'Ready': ('True', 'NetworkReady', '')}
    assert _conditions(store.get('gkenetworkparamsets.networking.gke.io', 'nosub'))['Ready'] == (
        'False', 'SubnetNotFound', 'subnet: sub-9 not found in VPC: net-1')
    assert _conditions(store.get('gkenetworkparamsets.networking.gke.io', 'novpc'))['Ready'] == ('False', 'VPCNotFound', 'VPC: net-9 not found')
    assert _conditions(store.get('gkenetworkparamsets.networking.gke.io', 'nomode'))['Ready'][:2] == ('False', 'SecondaryRangeAndDeviceModeUnspecified')
    for name in ('orphan', 'missing'):
        assert _conditions(store.get('networks.networking.gke.io', name))['Ready'][:2] == ('False', 'ParamsNotReady')

    # Paused: the spec moves to a subnet that does not exist, the status stays Ready (a stale Ready); resumed: recomputed.
    controllers.pause('gke-networks')
    gnp = store.get('gkenetworkparamsets.networking.gke.io', 'vpc1')
    gnp['spec']['vpcSubnet'] = 'sub-8'
    store.update(gnp)
    settle(controllers)
    gnp = store.get('gkenetworkparamsets.networking.gke.io', 'vpc1')
    assert gnp['metadata']['generation'] == 2 and _conditions(gnp)['Ready'][0] == 'True'
    controllers.resume('gke-networks')
    settle(controllers)
    assert _conditions(store.get('gkenetworkparamsets.networking.gke.io', 'vpc1'))['Ready'] == (
        'False', 'SubnetNotFound', 'subnet: sub-8 not found in VPC: net-1')

    # Deleting params a Network still refers to leaves them Terminating until the Network goes.
    store.delete('gkenetworkparamsets.networking.gke.io', 'vpc1')
    settle(controllers)
    assert store.get('gkenetworkparamsets.networking.gke.io', 'vpc1')['metadata'].get('deletionTimestamp')
    store.delete('networks.networking.gke.io', 'vpc1')
    settle(controllers, lambda: store.get('gkenetworkparamsets.networking.gke.io', 'vpc1') is None)
    assert store.get('gkenetworkparamsets.networking.gke.io', 'vpc1') is None


def test_extended_resource_toleration_admission_is_written_into_gpu_pods(kube):
    """GKE runs the ExtendedResourceToleration admission plugin: a Pod requesting nvidia.com/gpu is stored with the
    toleration, one without such a request is not; without the plugin (a plain cluster) nothing is added."""
    cluster, _controllers = kube
    stored = cluster.store.create(gpu_pod('gpu', '1', tolerations=[{'key': 'other', 'operator': 'Exists'}]))
    assert stored['spec']['tolerations'] == [{'key': 'other', 'operator': 'Exists'},
                                             {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    plain = cluster.store.create({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'plain', 'namespace': 'default'},
                                  'spec': {'containers': [{'name': 'main', 'image': 'example', 'resources': {'limits': {'cpu': '1'}}}]}})
    assert 'tolerations' not in plain['spec']
    cluster.admission_plugins.discard('ExtendedResourceToleration')
    assert 'tolerations' not in cluster.store.create(gpu_pod('gpu-plain', '1'))['spec']


def test_extra_reconcilers_run_on_the_controller_loop_and_pause_by_name(kube):
    cluster, controllers = kube
    seen = []

    def count_nodes(store):
        seen.append(len(store.list('nodes')))
    controllers.add(count_nodes)
    controllers.set_gke(GKE_CLUSTER, [DEFAULT], PROJECT)
    settle(controllers, lambda: seen and seen[-1] == 1)
    assert seen[-1] == 1
    controllers.pause('count_nodes')
    before = len(seen)
    settle(controllers)
    assert len(seen) == before
    controllers.start()   # the real loop runs it too, on its own thread
    controllers.resume('count_nodes')
    deadline = time.monotonic() + 5
    while len(seen) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    controllers.stop()
    assert len(seen) > before and not controllers.errors
    del cluster


def test_scheduler_places_pods_by_gpus_taints_and_affinity_and_explains_refusals(kube):
    cluster, controllers = kube
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, A3_MEGA], PROJECT)
    settle(controllers)
    store = cluster.store
    store.create(gpu_pod('fits', 8))
    store.create(gpu_pod('too-big', 16))
    store.create({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'on-gpu-nodes', 'namespace': 'default'},
                  'spec': {'nodeSelector': {'cloud.google.com/gke-accelerator': 'nvidia-h100-mega-80gb'},
                           'containers': [{'name': 'main', 'image': 'example'}]}})
    settle(controllers, lambda: store.get('pods', 'fits', 'default')['status'].get('phase') == 'Running')
    fits = store.get('pods', 'fits', 'default')
    assert fits['spec']['nodeName'].startswith('gke-c1-a3mega-')   # the GPU taint is tolerated (ExtendedResourceToleration)
    assert condition(fits, 'Ready')['status'] == 'True' and fits['status']['podIP'].startswith('10.')
    too_big = condition(store.get('pods', 'too-big', 'default'), 'PodScheduled')
    assert too_big['status'] == 'False' and too_big['reason'] == 'Unschedulable'
    # One A3 Mega node has 8 GPUs in use, the other 8 free: both too few for 16; the default node has none.
    assert too_big['message'] == ('0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are '
                                  'available: 3 No preemption victims found for incoming pod.')
    events = {(e['involvedObject']['name'], e['reason']): e for e in store.list('events', 'default')}
    assert events[('too-big', 'FailedScheduling')]['message'] == too_big['message']   # kubectl describe pod shows it
    assert events[('fits', 'Scheduled')]['message'] == 'Successfully assigned default/fits to %s' % fits['spec']['nodeName']
    tainted = condition(store.get('pods', 'on-gpu-nodes', 'default'), 'PodScheduled')
    assert tainted['message'] == ("0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                                  "2 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/3 nodes are "
                                  "available: 3 Preemption is not helpful for scheduling.")


def test_dra_claims_schedule_only_onto_dranet_nodes_once_the_template_exists(kube):
    cluster, controllers = kube
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, A3_ULTRA_DRANET], PROJECT)
    settle(controllers)
    store = cluster.store
    store.create(gpu_pod('rdma', 8, resourceClaims=[{'name': 'mrdma', 'resourceClaimTemplateName': 'all-mrdma'}]))
    settle(controllers)
    assert condition(store.get('pods', 'rdma', 'default'), 'PodScheduled')['message'].startswith(
        '0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 cannot allocate all claims.')
    store.create({'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaimTemplate', 'metadata': {'name': 'all-mrdma', 'namespace': 'default'},
                  'spec': {'spec': {'devices': {'requests': [{'name': 'req-mrdma', 'exactly': {
                      'deviceClassName': 'mrdma.google.com', 'allocationMode': 'All'}}]}}}})
    settle(controllers, lambda: store.get('pods', 'rdma', 'default')['spec'].get('nodeName'))
    assert store.get('pods', 'rdma', 'default')['spec']['nodeName'].startswith('gke-c1-a3ultra-')


DAEMONSET = {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'installer', 'namespace': 'kube-system'},
             'spec': {'selector': {'matchLabels': {'app': 'installer'}},
                      'template': {'metadata': {'labels': {'app': 'installer'}},
                                   'spec': {'affinity': {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {
                                       'nodeSelectorTerms': [{'matchExpressions': [{'key': 'cloud.google.com/gke-accelerator', 'operator': 'In',
                                                                                    'values': ['nvidia-h100-mega-80gb']}]}]}}},
                                            'tolerations': [{'operator': 'Exists'}],
                                            'containers': [{'name': 'main', 'image': 'example:v1'}]}}}}


def test_daemonset_counts_and_rollout_on_template_change(kube):
    cluster, controllers = kube
    controllers.set_gke(GKE_CLUSTER, [DEFAULT, A3_MEGA], PROJECT)
    settle(controllers)
    store = cluster.store
    store.create(DAEMONSET)

    def status():
        return store.get('daemonsets.apps', 'installer', 'kube-system').get('status') or {}
    settle(controllers, lambda: status().get('numberReady') == 2)
    assert status() == {'currentNumberScheduled': 2, 'desiredNumberScheduled': 2, 'numberMisscheduled': 0, 'numberReady': 2,
                        'observedGeneration': 1, 'updatedNumberScheduled': 2, 'numberAvailable': 2}
    pods = store.list('pods', 'kube-system')
    assert sorted(p['spec']['nodeName'] for p in pods) == sorted(n['metadata']['name'] for n in store.list(
        'nodes', label_selector='cloud.google.com/gke-nodepool=a3mega'))
    changed = store.get('daemonsets.apps', 'installer', 'kube-system')
    changed['spec']['template']['spec']['containers'][0]['image'] = 'example:v2'
    store.update(changed)
    settle(controllers, lambda: status().get('observedGeneration') == 2 and status().get('updatedNumberScheduled') == 2
           and status().get('numberReady') == 2)
    assert {p['spec']['containers'][0]['image'] for p in store.list('pods', 'kube-system')} == {'example:v2'}


def test_deployment_status_is_what_rollout_status_reads(kube):
    cluster, controllers = kube
    controllers.set_gke(GKE_CLUSTER, [DEFAULT], PROJECT)
    settle(controllers)
    store = cluster.store
    store.create({'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'web', 'namespace': 'default'},
                  'spec': {'replicas': 2, 'selector': {'matchLabels': {'app': 'web'}},
                           'template': {'metadata': {'labels': {'app': 'web'}}, 'spec': {'containers': [{'name': 'main', 'image': 'example'}]}}}})
    settle(controllers, lambda: (store.get('deployments.apps', 'web', 'default').get('status') or {}).get('availableReplicas') == 2)
    status = store.get('deployments.apps', 'web', 'default')['status']
    assert status['observedGeneration'] == 1 and status['updatedReplicas'] == 2 and status['replicas'] == 2
    assert condition({'status': status}, 'Progressing')['reason'] == 'NewReplicaSetAvailable'
