"""Seed 003 (GKE with GPUDirect-TCPX/TCPXO and multi-networking) run with the real gcloud CLI against
the sandbox: every ``gcloud`` command of the seed exits 0 and what it reads back is what was asked.

``gcloud beta container`` talks to ``/v1beta1/``, the GA track to ``/v1/``; both create a cluster
through ``projects.locations.clusters.create``, poll the operation, read the cluster back and write
a kubeconfig entry.
"""

import json

import pytest

PROJECT = 'sandbox-project'
REGION = 'us-central1'
ZONE = 'us-central1-a'
VERSION = '1.33.5-gke.1308000'  # >= every GPUDirect floor in the seed's requirements


def ok(result):
    assert result.returncode == 0, result.stderr
    return result


def as_json(result):
    return json.loads(ok(result).stdout)


def test_seed_network_loop_and_network_list(gcloud):
    """The loop body of "Crea VPC y subredes" (no --project: core/project is used) and the list check."""
    network = as_json(gcloud('compute', 'networks', 'create', PROJECT + '-net-1', '--subnet-mode=custom', '--mtu=8244', '--format=json'))[0]
    subnet = as_json(gcloud('compute', 'networks', 'subnets', 'create', PROJECT + '-sub-1', '--network=%s-net-1' % PROJECT,
                            '--region=' + REGION, '--range=192.168.1.0/24', '--format=json'))[0]
    rule = as_json(gcloud('compute', 'firewall-rules', 'create', PROJECT + '-internal-1', '--network=%s-net-1' % PROJECT,
                          '--action=ALLOW', '--rules=tcp:0-65535,udp:0-65535,icmp', '--source-ranges=192.168.0.0/16', '--format=json'))[0]
    assert network['mtu'] == 8244 and subnet['ipCidrRange'] == '192.168.1.0/24' and rule['sourceRanges'] == ['192.168.0.0/16']
    listing = ok(gcloud('compute', 'networks', 'list')).stdout
    assert PROJECT + '-net-1  CUSTOM       REGIONAL' in listing


def test_get_server_config_lists_versions_meeting_the_gpudirect_floors(gcloud):
    output = ok(gcloud('container', 'get-server-config', '--format=yaml(validMasterVersions)', '--zone=' + ZONE, '--project=' + PROJECT)).stdout
    assert output.startswith('validMasterVersions:')
    assert '- ' + VERSION in output and '- 1.30.4-gke.1129000' in output


@pytest.fixture
def gpu_vpcs(api):
    """PROJECT_ID-net-N / PROJECT_ID-sub-N for N=1..8, as the seed's loop makes them (over REST here)."""
    for number in range(1, 9):
        api.create_vpc(PROJECT, '%s-net-%d' % (PROJECT, number), '%s-sub-%d' % (PROJECT, number), REGION, '192.168.%d.0/24' % number)
    return api


def additional_networks(count, joiner):
    """``--additional-node-network`` flags; the seed writes them with a space (TCPXO) or ``=`` (TCPX)."""
    flags = []
    for number in range(1, count + 1):
        value = 'network=%s-net-%d,subnetwork=%s-sub-%d' % (PROJECT, number, PROJECT, number)
        flags += ['--additional-node-network', value] if joiner == ' ' else ['--additional-node-network=' + value]
    return flags


def check_kubeconfig(gcloud, cluster_context):
    with open(gcloud.kubeconfig, encoding='utf-8') as handle:
        kubeconfig = handle.read()
    assert cluster_context in kubeconfig and 'certificate-authority-data' in kubeconfig


def test_tcpxo_cluster_and_a3_mega_node_pool_beta(gcloud, sandbox, gpu_vpcs):
    ok(gcloud('--project', PROJECT, 'beta', 'container', 'clusters', 'create', 'tcpxo', '--enable-dataplane-v2', '--enable-ip-alias',
              '--zone=' + ZONE, '--enable-multi-networking', '--cluster-version=' + VERSION, '--no-enable-autoupgrade'))
    check_kubeconfig(gcloud, 'gke_%s_%s_tcpxo' % (PROJECT, ZONE))
    assert any(entry['path'].startswith('/v1beta1/projects/%s/locations/%s/clusters' % (PROJECT, ZONE))
               for entry in sandbox.request_log('container.projects.locations.clusters.create'))
    ok(gcloud('beta', 'container', 'node-pools', 'create', 'a3mega', '--zone=' + ZONE, '--cluster=tcpxo', '--project=' + PROJECT,
              '--accelerator=type=nvidia-h100-mega-80gb,count=8,gpu-driver-version=LATEST', '--machine-type=a3-megagpu-8g',
              '--num-nodes=2', *additional_networks(8, ' '), '--enable-gvnic', '--no-enable-autoupgrade',
              '--scopes', 'https://www.googleapis.com/auth/cloud-platform'))

    cluster = as_json(gcloud('container', 'clusters', 'describe', 'tcpxo', '--zone=' + ZONE, '--format=json'))
    assert cluster['status'] == 'RUNNING' and cluster['currentMasterVersion'] == VERSION
    assert cluster['networkConfig']['datapathProvider'] == 'ADVANCED_DATAPATH'
    assert cluster['networkConfig']['enableMultiNetworking'] is True
    assert cluster['ipAllocationPolicy']['useIpAliases'] is True
    pools = {pool['name']: pool for pool in cluster['nodePools']}
    assert set(pools) == {'default-pool', 'a3mega'}
    assert pools['default-pool']['management']['autoUpgrade'] is False
    pool = pools['a3mega']
    assert pool['status'] == 'RUNNING' and pool['initialNodeCount'] == 2
    assert pool['config']['machineType'] == 'a3-megagpu-8g' and pool['config']['gvnic'] == {'enabled': True}
    assert pool['config']['accelerators'] == [{'acceleratorCount': '8', 'acceleratorType': 'nvidia-h100-mega-80gb',
                                               'gpuDriverInstallationConfig': {'gpuDriverVersion': 'LATEST'}}]
    assert pool['config']['oauthScopes'] == ['https://www.googleapis.com/auth/cloud-platform']
    assert pool['networkConfig']['additionalNodeNetworkConfigs'] == [
        {'network': '%s-net-%d' % (PROJECT, n), 'subnetwork': '%s-sub-%d' % (PROJECT, n)} for n in range(1, 9)]
    assert pool['management'] == {'autoRepair': True, 'autoUpgrade': False}


def test_tcpxo_node_pool_with_reservation_and_placement_policy(gcloud, gpu_vpcs):
    """The seed's optional flags: --placement-policy, --reservation-affinity/--reservation, --host-maintenance-interval."""
    gpu_vpcs.must('POST', 'v1/projects/%s/locations/%s/clusters' % (PROJECT, ZONE), {'cluster': {
        'name': 'tcpxo', 'initialClusterVersion': VERSION, 'ipAllocationPolicy': {'useIpAliases': True},
        'networkConfig': {'datapathProvider': 'ADVANCED_DATAPATH', 'enableMultiNetworking': True}}})
    gpu_vpcs.must('POST', 'compute/v1/projects/%s/zones/%s/reservations' % (PROJECT, ZONE),
                  {'name': 'a3mega-reservation', 'specificReservation': {'count': 2, 'instanceProperties': {'machineType': 'a3-megagpu-8g'}}})
    gpu_vpcs.must('POST', 'compute/v1/projects/%s/regions/%s/resourcePolicies' % (PROJECT, REGION),
                  {'name': 'a3mega-compact', 'groupPlacementPolicy': {'collocation': 'COLLOCATED'}})
    ok(gcloud('beta', 'container', 'node-pools', 'create', 'a3mega', '--zone=' + ZONE, '--cluster=tcpxo', '--project=' + PROJECT,
              '--accelerator=type=nvidia-h100-mega-80gb,count=8,gpu-driver-version=LATEST', '--machine-type=a3-megagpu-8g',
              '--num-nodes=2', *additional_networks(8, ' '), '--enable-gvnic', '--no-enable-autoupgrade',
              '--scopes', 'https://www.googleapis.com/auth/cloud-platform', '--placement-policy=a3mega-compact',
              '--reservation-affinity=specific', '--reservation=a3mega-reservation', '--host-maintenance-interval=PERIODIC'))
    pool = as_json(gcloud('beta', 'container', 'node-pools', 'describe', 'a3mega', '--cluster=tcpxo', '--zone=' + ZONE, '--format=json'))
    assert pool['placementPolicy'] == {'policyName': 'a3mega-compact'}
    assert pool['config']['reservationAffinity'] == {'consumeReservationType': 'SPECIFIC_RESERVATION',
                                                     'key': 'compute.googleapis.com/reservation-name', 'values': ['a3mega-reservation']}
    assert pool['config']['hostMaintenancePolicy'] == {'maintenanceInterval': 'PERIODIC'}


def test_tcpx_regional_cluster_and_a3_high_node_pool(gcloud, sandbox, gpu_vpcs):
    ok(gcloud('container', 'clusters', 'create', 'tcpx', '--location=' + REGION, '--cluster-version=' + VERSION,
              '--enable-dataplane-v2', '--enable-ip-alias', '--enable-multi-networking', '--no-enable-autoupgrade'))
    check_kubeconfig(gcloud, 'gke_%s_%s_tcpx' % (PROJECT, REGION))
    ok(gcloud('container', 'node-pools', 'create', 'a3high', '--cluster=tcpx', '--location=' + REGION, '--machine-type=a3-highgpu-8g',
              '--accelerator=type=nvidia-h100-80gb,count=8,gpu-driver-version=LATEST', *additional_networks(4, '='),
              '--enable-gvnic', '--no-enable-autoupgrade'))
    pool = as_json(gcloud('container', 'node-pools', 'describe', 'a3high', '--cluster=tcpx', '--location=' + REGION, '--format=json'))
    assert pool['status'] == 'RUNNING' and pool['config']['machineType'] == 'a3-highgpu-8g'
    assert pool['locations'] == ['us-central1-a', 'us-central1-b', 'us-central1-c']
    assert [item['network'] for item in pool['networkConfig']['additionalNodeNetworkConfigs']] == ['%s-net-%d' % (PROJECT, n) for n in range(1, 5)]
    assert sandbox.resources('container.clusters')[0]['location'] == REGION


def test_additional_node_networks_need_a_multi_networking_cluster(gcloud, gpu_vpcs):
    gpu_vpcs.must('POST', 'v1/projects/%s/locations/%s/clusters' % (PROJECT, ZONE), {'cluster': {'name': 'plain', 'initialNodeCount': 1}})
    result = gcloud('container', 'node-pools', 'create', 'a3high', '--cluster=plain', '--zone=' + ZONE, '--machine-type=a3-highgpu-8g',
                    '--accelerator=type=nvidia-h100-80gb,count=8', *additional_networks(4, '='), '--enable-gvnic')
    assert result.returncode != 0 and 'multi-networking' in result.stderr, result.stderr


def test_multi_networking_without_dataplane_v2_is_refused(gcloud, sandbox):
    result = gcloud('container', 'clusters', 'create', 'nodpv2', '--zone=' + ZONE, '--enable-ip-alias', '--enable-multi-networking')
    assert result.returncode != 0 and 'Multi-networking requires GKE Dataplane V2' in result.stderr, result.stderr
    assert sandbox.resources('container.clusters') == []
