"""The pure parts of the GKE modules: version picking, the busy-cluster error, progress lines, capacity errors."""

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
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
