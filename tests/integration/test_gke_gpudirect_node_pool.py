"""gke_gpudirect_node_pool against the Container API sandbox, on networks made by gce_gpudirect_network
(layouts gke and gke_rdma) and a cluster made by gke_gpudirect_cluster: plan, create, rerun, in-place
changes, immutable differences named field by field, recreate, refusals before any mutating request,
capacity errors named, and the pool's Node names read from the cluster's Kubernetes API stand-in."""

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.modules import gce_gpudirect_network, gke_gpudirect_cluster, gke_gpudirect_node_pool
from module_runner import run_module

PROJECT = 'sandbox-project'
REGION = 'us-central1'


def connection(sandbox):
    return {'project': PROJECT, 'auth_kind': 'none', 'container_endpoint': sandbox.container_url, 'compute_endpoint': sandbox.compute_url}


def mutating(sandbox, since=0):
    return [(e['method'], e['path'].split('?')[0]) for e in sandbox.request_log()[since:] if e['method'] in ('POST', 'PUT', 'PATCH', 'DELETE')]


def make_cluster(sandbox, name, zone, machine_type, prefix, version=None):
    layout = 'gke_rdma' if machine_type in ('a3-ultragpu-8g', 'a4-highgpu-8g') else 'gke'
    networks = run_module(gce_gpudirect_network.main, dict(connection(sandbox), region=REGION, zone=zone, machine_type=machine_type,
                                                           layout=layout, network_prefix=prefix))
    assert networks['changed'], networks
    cluster = run_module(gke_gpudirect_cluster.main, dict(connection(sandbox), cluster=name, location=zone, machine_type=machine_type,
                                                          default_pool_node_count=1, version=version))
    assert cluster['changed'], cluster


@pytest.fixture
def mega(sandbox):
    """An A3 Mega cluster on seed 003's 8 networks (prefix mega) in us-central1-a; run(**overrides) runs the pool module.
    Its GKE 1.33 meets TCPXO's floor and not RDMA's (1.34.8-gke.1278000), as an A3 Mega cluster made before RDMA's would."""
    make_cluster(sandbox, 'mega', 'us-central1-a', 'a3-megagpu-8g', 'mega', version='1.33.5-gke.1308000')
    base = dict(connection(sandbox), cluster='mega', location='us-central1-a', name='gpu', machine_type='a3-megagpu-8g',
                network_prefix='mega', read_nodes=False)

    def run(check_mode=False, diff=False, **overrides):
        return run_module(gke_gpudirect_node_pool.main, dict(base, **overrides), check_mode=check_mode, diff=diff)
    return run


@pytest.fixture
def ultra(sandbox):
    """An A3 Ultra cluster in us-central1-b with seed 001's manual networks (prefix ultra)."""
    make_cluster(sandbox, 'ultra', 'us-central1-b', 'a3-ultragpu-8g', 'ultra')
    base = dict(connection(sandbox), cluster='ultra', location='us-central1-b', name='rdma', machine_type='a3-ultragpu-8g',
                read_nodes=False)

    def run(check_mode=False, diff=False, **overrides):
        return run_module(gke_gpudirect_node_pool.main, dict(base, **overrides), check_mode=check_mode, diff=diff)
    return run


def pool(sandbox, name):
    return [p for p in sandbox.resources('container.nodePools') if p['name'] == name][0]


def test_a3_mega_pool_of_seed_003_check_mode_create_rerun(sandbox, mega):
    before = len(sandbox.request_log())
    planned = mega(check_mode=True, diff=True)
    assert planned['changed'] is True and planned['actions'] == ['create node pool gpu (a3-megagpu-8g x 2)'], planned
    assert mutating(sandbox, before) == []
    assert planned['diff']['before'] is None

    result = mega(diff=True)
    assert result['changed'] is True, result
    stored = pool(sandbox, 'gpu')
    assert stored['config']['machineType'] == 'a3-megagpu-8g'
    assert stored['config']['accelerators'][0]['acceleratorType'] == 'nvidia-h100-mega-80gb'
    assert stored['config']['accelerators'][0]['acceleratorCount'] == '8'
    assert stored['config']['accelerators'][0]['gpuDriverInstallationConfig'] == {'gpuDriverVersion': 'LATEST'}
    assert stored['config']['gvnic'] == {'enabled': True}
    assert stored['config']['imageType'] == 'COS_CONTAINERD'
    assert stored['management'] == {'autoRepair': True, 'autoUpgrade': False}
    assert [(n['network'], n['subnetwork']) for n in stored['networkConfig']['additionalNodeNetworkConfigs']] == \
        [('mega-net-%d' % n, 'mega-sub-%d' % n) for n in range(1, 9)], 'NIC order eth1..eth8'
    assert result['node_pool']['status'] == 'RUNNING'
    assert any('CREATE_NODE_POOL' in line for line in result['operations'])

    since = len(sandbox.request_log())
    again = mega(diff=True)
    assert again['changed'] is False, again['actions']
    assert mutating(sandbox, since) == []
    assert again['diff']['before'] == again['diff']['after']


def test_in_place_changes_use_the_apis_setters(sandbox, mega):
    mega()
    since = len(sandbox.request_log())
    planned = mega(node_count=3, labels={'team': 'ml'}, autoupgrade=True, check_mode=True, diff=True)
    assert [a.split(':')[0] for a in planned['actions']] == ['setSize node pool gpu', 'setManagement node pool gpu', 'update node pool gpu']
    assert planned['diff']['after']['initialNodeCount'] == 3 and planned['diff']['before']['initialNodeCount'] == 2
    assert mutating(sandbox, since) == []
    result = mega(node_count=3, labels={'team': 'ml'}, autoupgrade=True)
    assert result['changed'] is True, result
    assert mutating(sandbox, since) == [
        ('POST', '/v1/projects/%s/locations/us-central1-a/clusters/mega/nodePools/gpu:setSize' % PROJECT),
        ('POST', '/v1/projects/%s/locations/us-central1-a/clusters/mega/nodePools/gpu:setManagement' % PROJECT),
        ('PUT', '/v1/projects/%s/locations/us-central1-a/clusters/mega/nodePools/gpu' % PROJECT)]
    stored = pool(sandbox, 'gpu')
    assert stored['initialNodeCount'] == 3 and stored['management']['autoUpgrade'] is True and stored['config']['labels'] == {'team': 'ml'}
    assert mega(node_count=3, labels={'team': 'ml'}, autoupgrade=True)['changed'] is False
    scaled = mega(node_count=3, labels={'team': 'ml'}, autoupgrade=True, autoscaling={'min_node_count': 1, 'max_node_count': 4})
    assert scaled['actions'][0].startswith('setAutoscaling'), scaled['actions']
    assert pool(sandbox, 'gpu')['autoscaling'] == {'enabled': True, 'minNodeCount': 1, 'maxNodeCount': 4}


def test_immutable_differences_are_named_field_by_field_then_recreated(sandbox, mega):
    mega()
    since = len(sandbox.request_log())
    result = mega(gpu_driver_version='DEFAULT', provisioning='spot')
    assert result.get('failed'), result
    assert 'immutable: recreate the node pool' in result['msg']
    assert 'config.accelerators' in result['msg'] and 'config.spot' in result['msg']
    assert [item.split(' ')[0] for item in result['immutable']] == ['config.accelerators', 'config.spot']
    assert mutating(sandbox, since) == []
    planned = mega(gpu_driver_version='DEFAULT', provisioning='spot', recreate=True, check_mode=True)
    assert planned['actions'][0].startswith('delete node pool gpu (immutable: config.accelerators, config.spot)')
    assert mutating(sandbox, since) == []
    done = mega(gpu_driver_version='DEFAULT', provisioning='spot', recreate=True)
    assert done['changed'] is True, done
    assert [method for method, _path in mutating(sandbox, since)] == ['DELETE', 'POST']
    assert pool(sandbox, 'gpu')['config']['spot'] is True


@pytest.mark.parametrize('overrides, words', [
    ({'machine_type': 'a3-ultragpu-8g'}, ['cluster version', '1.34.8-gke.1278000']),
    ({'networking': 'dranet'}, ['networking: dranet', 'multi_network']),
    ({'additional_networks': [{'network': 'mega-net-1', 'subnetwork': 'mega-sub-1'}]}, ['additional_networks', '8 additional node networks']),
    ({'accelerator_type': 'nvidia-h100-80gb'}, ['accelerator_type', 'nvidia-h100-mega-80gb']),
    ({'gpu_driver_version': 'INSTALLATION_DISABLED'}, ['gpu_driver_version', '535']),
    ({'reservation_block': 'b1'}, ['reservation_block', 'give reservation too']),
    ({'reservation_affinity': 'specific'}, ['reservation:', 'reservation name']),
    ({'reservation': 'r1', 'provisioning': 'spot'}, ['provisioning: spot']),
    ({'cluster': 'nope'}, ['cluster: nope does not exist']),
    ({'machine_type': 'a3-edgegpu-8g'}, ['value of machine_type must be one of']),
    # Refused here, not by the API's 400 (gpudirect_plan checks the same).
    ({'node_count': -1}, ['node_count: -1 nodes per zone; give 1 to 1000']),
    ({'node_count': 0}, ['node_count: 0 nodes per zone; give 1 to 1000', 'autoscaling with min_node_count 0']),
    ({'node_count': 1000000}, ['node_count: 1000000 nodes per zone; give 1 to 1000 (GKE\'s limit per node pool zone)']),
    ({'autoscaling': {'min_node_count': 0, 'max_node_count': 5000}},
     ['max_node_count (5000) must be at least 1, at least min_node_count (0) and at most 1000']),
    ({'name': 'Gpu_Pool'}, ["name: 'Gpu_Pool' is not a valid node pool name"]),
    ({'node_locations': ['us-east4-a']}, ['node_locations: us-east4-a is not in us-central1']),
    ({'location': 'Central'}, ["location: 'Central' is neither a zone"]),
    ({'reservation': 'Bad_Name!'}, ["reservation: 'Bad_Name!' is not a valid Compute Engine name"]),
    ({'reservation': 'r1', 'reservation_project': 'My Project'}, ["reservation_project: 'My Project' is not a valid project ID"]),
])
def test_refusals_before_any_mutating_request(sandbox, mega, overrides, words):
    since = len(sandbox.request_log())
    result = mega(**overrides)
    assert result.get('failed'), result
    for word in words:
        assert word in result['msg'], result['msg']
    assert mutating(sandbox, since) == []


def test_capacity_errors_are_named(sandbox, mega):
    sandbox.inject_fault(method='container.projects.locations.clusters.nodePools.create', kind='ZONE_RESOURCE_POOL_EXHAUSTED', count=1)
    result = mega()
    assert result.get('failed'), result
    assert 'ZONE_RESOURCE_POOL_EXHAUSTED' in result['msg'] and 'reservation' in result['msg'], result['msg']
    assert pool(sandbox, 'gpu')['status'] == 'ERROR', 'GKE keeps a pool whose create failed'


def test_a3_ultra_dranet_pool_of_seed_001_with_a_reservation_block(sandbox, ultra, api):
    api.must('POST', 'compute/v1/projects/%s/zones/us-central1-b/reservations' % PROJECT,
             {'name': 'res', 'specificReservationRequired': True,
              'specificReservation': {'count': 2, 'instanceProperties': {'machineType': 'a3-ultragpu-8g'}}})
    result = ultra(reservation='res', reservation_project=PROJECT, reservation_block='block-1', node_locations=['us-central1-b'])
    assert result['changed'] is True, result
    stored = pool(sandbox, 'rdma')
    assert stored['config']['gpuDirectConfig'] == {'gpuDirectStrategy': 'RDMA'}
    assert stored['networkConfig']['acceleratorNetworkProfile'] == 'auto'
    assert stored['config']['labels'] == {'cloud.google.com/gke-networking-dra-driver': 'true'}
    assert stored['config']['reservationAffinity'] == {
        'consumeReservationType': 'SPECIFIC_RESERVATION', 'key': 'compute.googleapis.com/reservation-name',
        'values': ['projects/%s/reservations/res/reservationBlocks/block-1' % PROJECT]}
    assert 'additionalNodeNetworkConfigs' not in stored['networkConfig']
    assert ultra(reservation='res', reservation_project=PROJECT, reservation_block='block-1', node_locations=['us-central1-b'])['changed'] is False


def test_a3_ultra_manual_multi_network_pool_has_9_networks_in_seed_order(sandbox, ultra):
    result = ultra(name='manual', networking='multi_network', network_prefix='ultra')
    assert result['changed'] is True, result
    stored = pool(sandbox, 'manual')
    assert [(n['network'], n['subnetwork']) for n in stored['networkConfig']['additionalNodeNetworkConfigs']] == \
        [('ultra-gvnic-net', 'ultra-gvnic-sub')] + [('ultra-rdma-net', 'ultra-rdma-sub-%d' % n) for n in range(8)]
    assert stored['config']['gpuDirectConfig'] == {'gpuDirectStrategy': 'RDMA'}
    assert 'acceleratorNetworkProfile' not in stored['networkConfig']
    refused = ultra(name='mixed', networking='dranet', network_prefix='ultra',
                    additional_networks=[{'network': 'ultra-gvnic-net', 'subnetwork': 'ultra-gvnic-sub'}])
    assert 'multi-network API and DRANET cannot be used in one node pool' in refused['msg']


def test_a3_ultra_pool_on_vpcs_named_by_the_guides_two_prefixes(sandbox, ultra, mega):
    """Seed 001 "Advanced configuration": GVNIC_NETWORK_PREFIX and RDMA_NETWORK_PREFIX name the VPCs the pool reuses. The
    networks module makes them under those names; the pool attaches to them in NIC order; TCPXO takes neither."""
    prefixes = {'gvnic_network_prefix': 'shared-gvnic', 'rdma_network_prefix': 'shared-roce'}
    made = run_module(gce_gpudirect_network.main, dict(connection(sandbox), region=REGION, zone='us-central1-b', machine_type='a3-ultragpu-8g',
                                                       layout='gke_rdma', network_prefix='other', **prefixes))
    assert made['changed'], made
    assert {'shared-gvnic-net', 'shared-roce-net'} <= {n['name'] for n in sandbox.resources('compute.networks')}
    assert 'shared-gvnic-internal' in {f['name'] for f in sandbox.resources('compute.firewalls')}
    result = ultra(name='reused', networking='multi_network', **prefixes)
    assert result['changed'] is True, result
    assert [(n['network'], n['subnetwork']) for n in pool(sandbox, 'reused')['networkConfig']['additionalNodeNetworkConfigs']] == \
        [('shared-gvnic-net', 'shared-gvnic-sub')] + [('shared-roce-net', 'shared-roce-sub-%d' % n) for n in range(8)]
    since = len(sandbox.request_log())
    refused = mega(gvnic_network_prefix='shared-gvnic')
    assert refused.get('failed') and 'gvnic_network_prefix:' in refused['msg'] and 'leave them unset' in refused['msg'], refused
    refused = ultra(name='dra', networking='dranet', rdma_network_prefix='shared-roce')
    assert refused.get('failed') and 'rdma_network_prefix:' in refused['msg'], refused
    assert mutating(sandbox, since) == []


def test_delete(sandbox, mega):
    mega()
    assert pool(sandbox, 'gpu')['config']['resourceLabels'] == {'aiinfra-gpudirect': 'managed'}   # the collection's mark
    assert mega(state='absent', check_mode=True)['changed'] is True and sandbox.resources('container.nodePools')
    assert mega(state='absent')['changed'] is True
    assert [p['name'] for p in sandbox.resources('container.nodePools')] == ['default-pool']
    assert mega(state='absent')['changed'] is False


def test_a_pool_with_nccl_fast_socket_is_refused_before_any_change(sandbox, mega, api):
    """Seed 003 "Limitaciones": "No puedes usar NCCL FastSocket". The pool is turned to FastSocket as
    `gcloud container node-pools update --enable-fast-socket` does; the module refuses it, changing nothing."""
    mega()
    api.must('PUT', '/v1/projects/%s/locations/us-central1-a/clusters/mega/nodePools/gpu' % PROJECT, {'fastSocket': {'enabled': True}})
    since = len(sandbox.request_log())
    for check_mode in (True, False):
        result = mega(check_mode=check_mode)
        assert result.get('failed'), result
        assert "config.fastSocket (now {'enabled': True}" in result['msg'], result['msg']
        assert 'you cannot use NCCL FastSocket' in result['msg'] and 'recreate' in result['msg']
    assert mutating(sandbox, since) == []
    done = mega(recreate=True)
    assert done['changed'] is True, done
    assert 'fastSocket' not in pool(sandbox, 'gpu')['config']


def test_a_pool_the_collection_did_not_create_is_not_deleted(sandbox, mega, api, capfd):
    """Someone's own pool of the name (made with gcloud, no mark) stays, with a warning that says why and how; with
    delete_adopted it goes."""
    api.must('POST', '/v1/projects/%s/locations/us-central1-a/clusters/mega/nodePools' % PROJECT,
             {'nodePool': {'name': 'user-pool', 'initialNodeCount': 1, 'config': {'machineType': 'e2-standard-4'}}})
    since = len(sandbox.request_log())
    for check_mode in (True, False):
        left = mega(name='user-pool', state='absent', check_mode=check_mode)
        assert left['changed'] is False and left['actions'] == [], left
        assert left['left_alone'] == ['node pool user-pool (not created by aiinfra.gpudirect)'], left
    # Ansible shows a warning once per process, however many runs give it.
    assert ('node pool user-pool was not created by aiinfra.gpudirect (no resource label aiinfra-gpudirect=managed): left '
            'alone; set delete_adopted: true to delete it') in capfd.readouterr().err
    assert mutating(sandbox, since) == []
    assert pool(sandbox, 'user-pool')
    gone = mega(name='user-pool', state='absent', delete_adopted=True)
    assert gone['changed'] is True and gone['actions'] == ['delete node pool user-pool'], gone
    assert 'user-pool' not in [p['name'] for p in sandbox.resources('container.nodePools')]


def test_a_rerun_keeps_what_someone_else_changed_on_the_pool(sandbox, mega, api):
    """A label someone added to the pool stays; a size someone set stays unless node_count is given."""
    mega(labels={'team': 'ml'})
    path = '/v1/projects/%s/locations/us-central1-a/clusters/mega/nodePools/gpu' % PROJECT
    api.must('PUT', path, {'labels': {'labels': {'team': 'ml', 'cost-center': 'research'}}})
    api.must('POST', path + ':setSize', {'nodeCount': 5})
    since = len(sandbox.request_log())
    again = mega(labels={'team': 'ml'}, diff=True)
    assert again['changed'] is False and again['actions'] == [], again
    assert again['diff']['before'] == again['diff']['after']
    assert mutating(sandbox, since) == []
    relabelled = mega(labels={'team': 'infra'})   # our label changes; theirs goes along unchanged
    assert relabelled['changed'] is True
    assert pool(sandbox, 'gpu')['config']['labels'] == {'team': 'infra', 'cost-center': 'research'}
    resized = mega(labels={'team': 'infra'}, node_count=2)   # a count given is the collection's to keep
    assert [a.split(':')[0] for a in resized['actions']] == ['setSize node pool gpu'], resized


def test_the_pools_node_names_come_from_the_clusters_kubernetes_api(sandbox, mega):
    """With clusters that come alive (tests/sandbox/kube/gke.py), the module reads the pool's Nodes from the
    cluster's API stand-in (label cloud.google.com/gke-nodepool=gpu), verifying TLS against the cluster CA
    the Container API returned, with its own bearer token (the stand-in refuses a request without one)."""
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    sandbox.kube = GkeClusters()
    sandbox.kube.sync(sandbox.state)
    token = {'auth_kind': 'accesstoken', 'access_token': 'sandbox-token'}
    result = mega(read_nodes=True, nodes_timeout=60, **token)
    assert result['changed'] is True, result
    assert len(result['nodes']) == 2, result['nodes']
    group = pool(sandbox, 'gpu')['instanceGroupUrls'][0].rsplit('/', 1)[-1]
    assert all(name.startswith(group[:-len('-grp')]) for name in result['nodes']), (group, result['nodes'])
    kube = sandbox.kube.cluster('projects/%s/locations/us-central1-a/clusters/mega' % PROJECT)
    assert sorted(n['metadata']['name'] for n in kube.store.list('nodes', label_selector='cloud.google.com/gke-nodepool=gpu')) == result['nodes']
    no_token = mega(read_nodes=True)
    assert no_token.get('failed') and 'HTTP 401' in no_token['msg'], no_token


def test_compact_placement_and_flex_start(sandbox, mega):
    result = mega(name='flex', compact_placement=True, provisioning='flex_start', node_count=0,
                  autoscaling={'min_node_count': 0, 'max_node_count': 2})
    assert result['changed'] is True, result
    stored = pool(sandbox, 'flex')
    assert stored['placementPolicy'] == {'type': 'COMPACT'}
    assert stored['config']['flexStart'] is True
    assert stored['config']['reservationAffinity'] == {'consumeReservationType': 'NO_RESERVATION'}
    assert stored['autoscaling'] == {'enabled': True, 'minNodeCount': 0, 'maxNodeCount': 2}
    assert mega(name='flex', compact_placement=True, provisioning='flex_start', node_count=0,
                autoscaling={'min_node_count': 0, 'max_node_count': 2})['changed'] is False


def test_host_maintenance_interval_goes_through_v1beta1(sandbox, mega):
    """Seed 003's optional `gcloud beta container node-pools create --host-maintenance-interval=PERIODIC`: the field is
    in v1beta1 only (NodeConfig.hostMaintenancePolicy), so the pool is created and read there; it cannot change."""
    since = len(sandbox.request_log())
    result = mega(host_maintenance_interval='PERIODIC')
    assert result['changed'] is True, result
    assert [path for method, path in mutating(sandbox, since) if method == 'POST'] == [
        '/v1beta1/projects/%s/locations/us-central1-a/clusters/mega/nodePools' % PROJECT]
    assert pool(sandbox, 'gpu')['config']['hostMaintenancePolicy'] == {'maintenanceInterval': 'PERIODIC'}
    since = len(sandbox.request_log())
    assert mega(host_maintenance_interval='PERIODIC')['changed'] is False
    assert mega()['changed'] is False, 'unset, it is not compared'
    other = mega(host_maintenance_interval='AS_NEEDED')
    assert other.get('failed') and 'config.hostMaintenancePolicy' in other['msg'] and 'recreate' in other['msg'], other
    assert mutating(sandbox, since) == []


def test_wait_false_starts_the_create_and_a_later_run_awaits_the_provisioning_pool(sandbox, mega):
    """playbooks/gke_cluster.yml's overlap: wait=false returns once GKE accepted the create (the pool PROVISIONING),
    and the next run, finding the pool PROVISIONING, awaits the create's operation before it compares anything."""
    sandbox.operation_latency['CREATE_NODE_POOL'] = 1.5
    started = mega(wait=False)
    assert started['changed'] is True and started['actions'] == ['create node pool gpu (a3-megagpu-8g x 2)'], started
    assert started['node_pool']['status'] == 'PROVISIONING' and started['nodes'] == [], started
    operations = [o for o in sandbox.resources('container.operations') if o['operationType'] == 'CREATE_NODE_POOL']
    assert [o['status'] for o in operations] == ['RUNNING'], 'returned before the operation was done'

    since = len(sandbox.request_log())
    awaited = mega()
    assert awaited['changed'] is False and awaited['actions'] == [], awaited
    assert awaited['node_pool']['status'] == 'RUNNING', awaited['node_pool']['status']
    assert mutating(sandbox, since) == [], 'nothing sent again while the pool was being created'
    assert any('CREATE_NODE_POOL' in line and 'DONE' in line for line in awaited['operations']), awaited['operations']


def test_a_create_that_fails_in_its_operation_is_the_awaiting_runs_error(sandbox, mega):
    sandbox.operation_latency['CREATE_NODE_POOL'] = 0.5
    sandbox.inject_fault(method='container.projects.locations.clusters.nodePools.create', kind='ZONE_RESOURCE_POOL_EXHAUSTED', count=1)
    started = mega(wait=False)
    assert started['changed'] is True and not started.get('failed'), 'GKE accepts the create; its operation fails later'
    awaited = mega()
    assert awaited.get('failed') and 'ZONE_RESOURCE_POOL_EXHAUSTED' in awaited['msg'] and 'reservation' in awaited['msg'], awaited
    # GKE keeps the pool, in ERROR: a rerun says so with the same reason and the way out, and sends nothing
    assert pool(sandbox, 'gpu')['status'] == 'ERROR'
    since = len(sandbox.request_log())
    rerun = mega()
    assert rerun.get('failed') and 'is ERROR' in rerun['msg'] and 'ZONE_RESOURCE_POOL_EXHAUSTED' in rerun['msg'], rerun
    assert 'state: absent' in rerun['msg'] and mutating(sandbox, since) == []
    assert mega(state='absent')['changed'] is True and mega()['changed'] is True
