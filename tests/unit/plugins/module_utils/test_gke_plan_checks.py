"""The pure parts of the GKE modules: version picking, the busy-cluster error, progress lines, capacity errors."""

import pathlib
import re

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families, gke
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError, busy_operation
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import cluster as gke_cluster
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import common
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.executor import Progress
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import node_pool as gke_node_pool

CONFIG = {'defaultClusterVersion': '1.29.3-gke.1093000',
          'validMasterVersions': ['1.34.8-gke.1278000', '1.30.4-gke.1129000', '1.29.4-gke.1541999', '1.29.3-gke.1093000']}


@pytest.mark.parametrize('machine_type, mode, expected', [
    ('a3-highgpu-8g', 'standard', '1.29.3-gke.1093000'),    # the default meets TCPX's 1.29 floor exactly
    ('a3-megagpu-8g', 'standard', '1.34.8-gke.1278000'),    # the default is below TCPXO's 1.29.4-gke.1542000: newest valid
    ('a3-ultragpu-8g', 'standard', '1.34.8-gke.1278000'),
])
def test_pick_version(machine_type, mode, expected):
    assert gke_cluster.pick_version(families.FAMILIES[machine_type], mode, CONFIG) == expected


def test_pick_version_names_the_floor_when_nothing_qualifies():
    with pytest.raises(common.InputError, match='1.36.2-gke.1368000'):
        gke_cluster.pick_version(families.FAMILIES['a4-highgpu-8g'], 'autopilot', CONFIG)


def test_busy_operation_reads_gkes_failed_precondition():
    error = GcpError('update', 'Operation operation-1669-abc is currently creating node pool np. Please wait and try again once it is done.',
                     status=400, reason='failedPrecondition')
    assert busy_operation(error) == 'operation-1669-abc'
    assert busy_operation(GcpError('update', 'Invalid field', status=400)) is None
    assert busy_operation(GcpError('update', 'Operation operation-1 is currently x', status=409)) is None


def test_progress_lines_change_only_when_the_operation_does():
    progress = Progress()
    for status in ('RUNNING', 'RUNNING', 'DONE'):
        progress({'name': 'op-1', 'operationType': 'CREATE_CLUSTER', 'status': status})
    assert progress.lines == ['CREATE_CLUSTER op-1: RUNNING', 'CREATE_CLUSTER op-1: DONE']


def test_capacity_errors_are_told_apart():
    stockout = GcpError('create node pool', 'ZONE_RESOURCE_POOL_EXHAUSTED: the zone us-central1-a does not have enough resources', reason='8')
    assert 'other node_locations' in common.capacity_message(stockout, 'create node pool gpu')
    quota = GcpError('create node pool', "QUOTA_EXCEEDED: Insufficient quota: Quota 'NVIDIA_H100_GPUS' exceeded.", reason='8')
    assert 'request more GPU quota' in common.capacity_message(quota, 'create node pool gpu')
    assert common.capacity_message(GcpError('create', 'Invalid name', status=400), 'x') is None


# -- the catalog facts the GKE modules added, against the seed text ---------------------------------------------

SEEDS = pathlib.Path(__file__).resolve().parents[3] / 'unit' / 'seeds'


def seed(prefix):
    (path,) = SEEDS.glob(prefix + '_*.txt')
    return path.read_text(encoding='utf-8')


def test_gke_module_facts_are_the_seeds():
    seed_001, seed_003 = seed('001'), seed('003')
    assert 'datapath_provider       = "%s"' % gke.GKE_DATAPATH_PROVIDER in seed_001
    assert '--accelerator-network-profile=%s' % gke.GKE_ACCELERATOR_NETWORK_PROFILE in seed_001
    assert 'gpudirect_strategy = "%s"' % gke.GKE_RDMA_STRATEGY in seed_001
    assert '--scopes "%s"' % gke.GKE_NODE_SCOPES[0] in seed_003 and '--scopes "%s"' % gke.GKE_NODE_SCOPES[0] in seed_001
    assert 'gpu-driver-version=%s' % gke.GKE_GPU_DRIVER_VERSIONS[0] in seed_003
    assert gke.GKE_MACHINE_TYPES == ('a3-megagpu-8g', 'a3-highgpu-8g', 'a3-ultragpu-8g', 'a4-highgpu-8g')


def test_seed_001_manual_networks_in_nic_order():
    """seed 001 "高度な構成": one gVNIC network, then the RDMA network's sub-0..sub-7, in this order."""
    text = seed('001')
    flags = re.findall(r'--additional-node-network network=\$\{(\w+)_NETWORK_PREFIX\}(-net),subnetwork=\$\{\w+_NETWORK_PREFIX\}(-sub(?:-\d)?)', text)
    ours = gke.gke_additional_networks('a3-ultragpu-8g', 'P')
    assert len(flags) == len(ours) == 9
    for (kind, net, sub), (network, subnetwork) in zip(flags, ours):
        assert network == 'P-%s%s' % (kind.lower(), net) and subnetwork == 'P-%s%s' % (kind.lower(), sub)


def test_seed_001_two_prefixes_name_the_networks_as_the_seed_does():
    """seed 001 "高度な構成": GVNIC_NETWORK_PREFIX and RDMA_NETWORK_PREFIX, each its own (VPCs reused under other names)."""
    text = re.sub(r'\s+', ' ', seed('001'))
    ours = gke.gke_additional_networks('a3-ultragpu-8g', 'unused', gvnic_prefix='${GVNIC_NETWORK_PREFIX}',
                                       rdma_prefix='${RDMA_NETWORK_PREFIX}')
    flags = ' \\ '.join('--additional-node-network network=%s,subnetwork=%s' % pair for pair in ours)
    assert flags in text
    # one given, the other derived from the one prefix
    assert gke.gke_additional_networks('a4-highgpu-8g', 'p', rdma_prefix='roce')[:2] == [('p-gvnic-net', 'p-gvnic-sub'),
                                                                                         ('roce-net', 'roce-sub-0')]


def test_seed_003_networks_in_nic_order():
    text = seed('003')
    flags = re.findall(r'--additional-node-network network=PREFIX-net-(\d),subnetwork=PREFIX-sub-(\d)', text)
    assert [(int(n), int(s)) for n, s in flags] == [(n, n) for n in range(1, 9)]
    assert gke.gke_additional_networks('a3-megagpu-8g', 'PREFIX') == [('PREFIX-net-%d' % n, 'PREFIX-sub-%d' % n) for n in range(1, 9)]


# The checks gpudirect_plan and the modules share (before these, GKE's 400 was the first to say).
POOL = dict(cluster='mega', current_cluster=None, location='us-central1-a', name='mega-gpu', machine_type='a3-megagpu-8g',
            network_prefix='mega', cluster_planned=True)


@pytest.mark.parametrize('name, ok', [('a3mega', True), ('a' * 40, True), ('a' * 41, False), ('Bad_Name', False), ('1abc', False),
                                      ('abc-', False), ('a', True)])
def test_cluster_names_as_gke_takes_them(name, ok):
    if ok:
        assert gke_cluster.build_cluster_plan(name, 'us-central1-a', 'a3-megagpu-8g', version='1.33.5-gke.1308000').name == name
    else:
        with pytest.raises(common.InputError, match=r"^cluster: .* is not a valid cluster name"):
            gke_cluster.build_cluster_plan(name, 'us-central1-a', 'a3-megagpu-8g', version='1.33.5-gke.1308000')


def test_version_offered_by_server_config():
    params = {'cluster': 'mega', 'location': 'us-central1-a', 'machine_type': 'a3-megagpu-8g', 'cluster_mode': 'standard',
              'multi_networking': True, 'network': None, 'subnetwork': None, 'default_pool_node_count': 3, 'autoupgrade': False,
              'timeout': 1800}
    for version in ('1.34.8-gke.1278000', '1.34', '1.34.8', 'latest'):
        assert gke_cluster.plan_from_params(dict(params, version=version), CONFIG).version == version
    with pytest.raises(common.InputError, match='^version: 1.99.0-gke.1 is not offered in us-central1-a'):
        gke_cluster.plan_from_params(dict(params, version='1.99.0-gke.1'), CONFIG)
    with pytest.raises(common.InputError, match='^version: 1.26.1-gke.1 is older than'):   # the floor, before the offer
        gke_cluster.plan_from_params(dict(params, version='1.26.1-gke.1'), CONFIG)


@pytest.mark.parametrize('change, message', [
    ({'node_count': -1}, '^node_count: -1 nodes per zone; give 1 to 1000'),
    ({'node_count': 0}, '^node_count: 0 nodes per zone; give 1 to 1000 .*or autoscaling with min_node_count 0'),
    ({'node_count': 1001}, "^node_count: 1001 nodes per zone; give 1 to 1000 \\(GKE's limit per node pool zone\\)"),
    ({'name': 'Pool_1'}, "^name: 'Pool_1' is not a valid node pool name"),
    ({'cluster': 'Bad_Name'}, "^cluster: 'Bad_Name' is not a valid cluster name"),
    ({'location': 'Central'}, "^location: 'Central' is neither a zone"),
    ({'node_locations': ['us-east4-a']}, '^node_locations: us-east4-a is not in us-central1, the region of the cluster'),
    ({'node_locations': ['central-a']}, "^node_locations: 'central-a' is not a zone name"),
    ({'reservation': 'Bad_Name!'}, "^reservation: 'Bad_Name!' is not a valid Compute Engine name"),
    ({'reservation': 'r1', 'reservation_block': 'Block 1', 'reservation_project': 'p-123456'}, "^reservation_block: 'Block 1'"),
    ({'reservation': 'r1', 'reservation_project': 'My Project'}, "^reservation_project: 'My Project' is not a valid project ID"),
])
def test_node_pool_inputs_refused_before_the_api(change, message):
    with pytest.raises(common.InputError, match=message):
        gke_node_pool.build_node_pool_plan(**dict(POOL, **change))


def test_node_pool_zero_nodes_with_autoscaling_and_zones_of_a_regional_cluster_are_taken():
    params = dict(POOL)
    params.update(node_count=0, autoscaling={'min_node_count': 0, 'max_node_count': 2}, location='us-central1', node_locations=['us-central1-c'])
    plan = gke_node_pool.build_node_pool_plan(**params)
    assert plan.body['initialNodeCount'] == 0 and plan.body['locations'] == ['us-central1-c']


def test_the_modules_take_their_argument_specs_from_module_utils():
    """gpudirect_plan validates the stages with these same dicts, so a module option cannot drift from the plan's."""
    from ansible_collections.aiinfra.gpudirect.plugins.modules import gke_gpudirect_cluster, gke_gpudirect_node_pool
    assert gke_gpudirect_cluster.ARGUMENT_SPEC is gke_cluster.ARGUMENT_SPEC
    assert gke_gpudirect_node_pool.ARGUMENT_SPEC is gke_node_pool.ARGUMENT_SPEC
