"""The pure parts of the GKE modules: version picking, the busy-cluster error, progress lines, capacity errors."""

import pathlib
import re

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families, gke
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.client import GcpError, busy_operation
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import cluster as gke_cluster
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import common

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
    with pytest.raises(common.PlanError, match='1.36.2-gke.1368000'):
        gke_cluster.pick_version(families.FAMILIES['a4-highgpu-8g'], 'autopilot', CONFIG)


def test_busy_operation_reads_gkes_failed_precondition():
    error = GcpError('update', 'Operation operation-1669-abc is currently creating node pool np. Please wait and try again once it is done.',
                     status=400, reason='failedPrecondition')
    assert busy_operation(error) == 'operation-1669-abc'
    assert busy_operation(GcpError('update', 'Invalid field', status=400)) is None
    assert busy_operation(GcpError('update', 'Operation operation-1 is currently x', status=409)) is None


def test_progress_lines_change_only_when_the_operation_does():
    progress = common.Progress()
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


def test_seed_003_networks_in_nic_order():
    text = seed('003')
    flags = re.findall(r'--additional-node-network network=PREFIX-net-(\d),subnetwork=PREFIX-sub-(\d)', text)
    assert [(int(n), int(s)) for n, s in flags] == [(n, n) for n in range(1, 9)]
    assert gke.gke_additional_networks('a3-megagpu-8g', 'PREFIX') == [('PREFIX-net-%d' % n, 'PREFIX-sub-%d' % n) for n in range(1, 9)]
