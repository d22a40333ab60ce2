"""Container API sandbox completeness for seeds 001 (GKE RDMA, Japanese) and 003 (GKE TCPX/TCPXO, Spanish),
issue 10 item 3: every field their gcloud commands and API equivalents set is accepted (the body is checked
against the container.v1 discovery document, as every request is), stored and read back, and the rules the
real API enforces on them refuse what it refuses (sources beside each rule in tests/sandbox/container.py).

Fields and how they are sent here:
- enableMultiNetworking, datapathProvider ADVANCED_DATAPATH, ipAllocationPolicy: gcloud (seed commands);
- additionalNodeNetworkConfigs (gVNIC network + RoCE network with 8 subnets, seed 001 "高度な構成"),
  additionalPodNetworkConfigs, placementPolicy (COMPACT and policyName), reservationAffinity (with a
  reservation block, seed 001), spot, flexStart + queuedProvisioning + maxRunDuration, gvnic,
  accelerators with gpuDriverInstallationConfig: gcloud;
- nodeConfig.gpuDirectConfig.gpuDirectStrategy RDMA (seed 001 ``--gpudirect-strategy=rdma``) and
  networkConfig.acceleratorNetworkProfile ``auto`` (``--accelerator-network-profile=auto``): the installed
  gcloud (SDK 528) has neither flag, so these go through the API, as the tests' docstrings say.
"""

import json

import pytest

PROJECT = 'sandbox-project'
ZONE = 'us-central1-b'          # a3-ultragpu-8g is offered here (GPU locations page)
REGION = 'us-central1'
VERSION = '1.34.8-gke.1278000'  # seed 001: the automatic RDMA NCCL installer needs 1.34.8-gke.1278000 or later
C = 'v1/projects/%s/locations/%s/clusters' % (PROJECT, ZONE)
P = 'compute/v1/projects/' + PROJECT


def ok(result):
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def rdma_vpcs(api):
    """Seed 001 manual variant: ${GVNIC_NETWORK_PREFIX}-net/-sub and ${RDMA_NETWORK_PREFIX}-net with -sub-0..7 (RoCE)."""
    api.create_vpc(PROJECT, 'gvnic-net', 'gvnic-sub', REGION, '192.168.0.0/24', mtu=8896)
    api.must('POST', P + '/global/networks', {'name': 'rdma-net', 'autoCreateSubnetworks': False,
                                              'networkProfile': 'global/networkProfiles/%s-vpc-roce' % ZONE})
    for number in range(8):
        api.must('POST', P + '/regions/%s/subnetworks' % REGION,
                 {'name': 'rdma-sub-%d' % number, 'network': 'global/networks/rdma-net', 'ipCidrRange': '192.168.%d.0/24' % (1 + number)})
    api.must('POST', P + '/zones/%s/reservations' % ZONE,
             {'name': 'a3u-res', 'specificReservationRequired': True,
              'specificReservation': {'count': 2, 'instanceProperties': {'machineType': 'a3-ultragpu-8g'}}})
    return api


def rdma_cluster(gcloud):
    ok(gcloud('container', 'clusters', 'create', 'rdma', '--zone=' + ZONE, '--cluster-version=' + VERSION, '--enable-dataplane-v2',
              '--enable-ip-alias', '--enable-multi-networking', '--no-enable-autoupgrade', '--num-nodes=1'))


def test_seed_001_manual_rdma_node_pool_with_gcloud(gcloud, rdma_vpcs):
    """Seed 001 "マルチネットワークが有効になっているクラスタにノードプールを作成する", with every flag gcloud 528 has:
    the 9 --additional-node-network entries (one gVNIC network, 8 subnets of one RoCE network), the accelerator with
    gpu-driver-version, the specific reservation with a reservation block, cloud-platform scope."""
    rdma_cluster(gcloud)
    nets = ['--additional-node-network=network=gvnic-net,subnetwork=gvnic-sub']
    nets += ['--additional-node-network=network=rdma-net,subnetwork=rdma-sub-%d' % n for n in range(8)]
    ok(gcloud('container', 'node-pools', 'create', 'a3u', '--project=' + PROJECT, '--location=' + ZONE, '--node-locations=' + ZONE,
              '--cluster=rdma', '--num-nodes=2', '--machine-type=a3-ultragpu-8g',
              '--accelerator=type=nvidia-h200-141gb,count=8,gpu-driver-version=latest', *nets,
              '--scopes=https://www.googleapis.com/auth/cloud-platform', '--reservation-affinity=specific',
              '--reservation=projects/%s/reservations/a3u-res/reservationBlocks/block-1' % PROJECT))
    cluster = json.loads(ok(gcloud('container', 'clusters', 'describe', 'rdma', '--zone=' + ZONE, '--format=json')).stdout)
    assert cluster['networkConfig']['enableMultiNetworking'] is True and cluster['networkConfig']['datapathProvider'] == 'ADVANCED_DATAPATH'
    pool = {item['name']: item for item in cluster['nodePools']}['a3u']
    assert pool['networkConfig']['additionalNodeNetworkConfigs'] == (
        [{'network': 'gvnic-net', 'subnetwork': 'gvnic-sub'}] + [{'network': 'rdma-net', 'subnetwork': 'rdma-sub-%d' % n} for n in range(8)])
    assert pool['config']['accelerators'] == [{'acceleratorCount': '8', 'acceleratorType': 'nvidia-h200-141gb',
                                               'gpuDriverInstallationConfig': {'gpuDriverVersion': 'LATEST'}}]
    assert pool['config']['reservationAffinity']['values'] == ['projects/%s/reservations/a3u-res/reservationBlocks/block-1' % PROJECT]
    assert pool['config']['oauthScopes'] == ['https://www.googleapis.com/auth/cloud-platform'] and pool['status'] == 'RUNNING'


def node_pool(name='a3u', **config):
    body = {'name': name, 'initialNodeCount': 2, 'locations': [ZONE],
            'config': dict({'machineType': 'a3-ultragpu-8g', 'oauthScopes': ['https://www.googleapis.com/auth/cloud-platform'],
                            'accelerators': [{'acceleratorType': 'nvidia-h200-141gb', 'acceleratorCount': '8',
                                              'gpuDriverInstallationConfig': {'gpuDriverVersion': 'LATEST'}}],
                            'reservationAffinity': {'consumeReservationType': 'SPECIFIC_RESERVATION', 'key': 'compute.googleapis.com/reservation-name',
                                                    'values': ['projects/%s/reservations/a3u-res/reservationBlocks/block-1' % PROJECT]},
                            'labels': {'cloud.google.com/gke-networking-dra-driver': 'true'},
                            'gpuDirectConfig': {'gpuDirectStrategy': 'RDMA'}}, **config),
            'networkConfig': {'acceleratorNetworkProfile': 'auto'}}
    return {'nodePool': body}


def test_seed_001_automatic_rdma_node_pool_through_the_api(gcloud, rdma_vpcs, sandbox):
    """Seed 001 "gcloud（Standard）": --accelerator-network-profile=auto and --gpudirect-strategy=rdma.  gcloud 528 has
    neither flag, so the node pool goes through the API (NodeConfig.gpuDirectConfig, NodeNetworkConfig.acceleratorNetworkProfile)."""
    rdma_cluster(gcloud)
    response = rdma_vpcs.post(C + '/rdma/nodePools', node_pool())
    assert response.status == 200 and response.body['operationType'] == 'CREATE_NODE_POOL', response
    pool = json.loads(ok(gcloud('container', 'node-pools', 'describe', 'a3u', '--cluster=rdma', '--zone=' + ZONE, '--format=json')).stdout)
    assert pool['config']['gpuDirectConfig'] == {'gpuDirectStrategy': 'RDMA'}
    assert pool['networkConfig']['acceleratorNetworkProfile'] == 'auto'
    assert pool['config']['labels'] == {'cloud.google.com/gke-networking-dra-driver': 'true'}


@pytest.mark.parametrize('change, fragment', [
    # GPUDirectConfig: "GPUDirect-RDMA on A3 Ultra, and A4 machine types" (container.v1 discovery document)
    ({'config': {'machineType': 'a3-megagpu-8g', 'accelerators': [{'acceleratorType': 'nvidia-h100-mega-80gb', 'acceleratorCount': '8'}],
                 'gpuDirectConfig': {'gpuDirectStrategy': 'RDMA'}}}, 'gpuDirectStrategy RDMA is only supported on a3-ultragpu-8g and a4-highgpu-8g'),
    # seed 001 制限事項: Container-Optimized OS only
    ({'config': {'imageType': 'UBUNTU_CONTAINERD'}}, 'requires a Container-Optimized OS node image'),
    # seed 001 制限事項: 1.34.8-gke.1278000 or later
    ({'version': '1.34.1-gke.1829001'}, 'gpuDirectStrategy RDMA requires GKE 1.34.8-gke.1278000 or later'),
    # NodeNetworkConfig.acceleratorNetworkProfile: "For now the only valid value is "auto"."
    ({'networkConfig': {'acceleratorNetworkProfile': 'manual'}}, 'the only valid value is "auto"'),
    # accelerator count of the machine type (8 H200 on a3-ultragpu-8g)
    ({'config': {'accelerators': [{'acceleratorType': 'nvidia-h200-141gb', 'acceleratorCount': '4'}]}}, 'Accelerator count 4 is not valid'),
    # GPUDriverInstallationConfig.specificVersion only with SPECIFIC (discovery document)
    ({'config': {'accelerators': [{'acceleratorType': 'nvidia-h200-141gb', 'acceleratorCount': '8',
                                   'gpuDriverInstallationConfig': {'gpuDriverVersion': 'LATEST', 'specificVersion': '570.1'}}]}},
     'specificVersion may only be set with gpuDriverVersion SPECIFIC'),
    # AdditionalPodNetworkConfig.networkAttachment: not with subnetwork or secondary_pod_range (discovery document)
    ({'networkConfig': {'additionalPodNetworkConfigs': [{'networkAttachment': 'att', 'subnetwork': 'gvnic-sub'}]}},
     'networkAttachment cannot be specified along with subnetwork'),
    # a RoCE network's NICs are MRDMA NICs: only A3 Ultra / A4 (RDMA network profiles page)
    ({'config': {'machineType': 'a3-megagpu-8g', 'accelerators': [{'acceleratorType': 'nvidia-h100-mega-80gb', 'acceleratorCount': '8'}],
                 'gpuDirectConfig': None}, 'locations': ['us-central1-b'],
      'networkConfig': {'additionalNodeNetworkConfigs': [{'network': 'rdma-net', 'subnetwork': 'rdma-sub-0'}]}},
     'uses an RDMA network profile; machine type "a3-megagpu-8g" has no MRDMA network interfaces'),
    # machine types per zone (GPU locations page): no A3 Ultra in us-central1-c
    ({'locations': ['us-central1-c']}, 'Machine type "a3-ultragpu-8g" does not exist in zone "us-central1-c".'),
    # nodes never newer than the control plane (GKE version skew policy)
    ({'version': '1.34.9-gke.1', 'config': {'gpuDirectConfig': None}}, 'must not be newer than'),
    # a negative count of VMs per zone (the shape of GKE's "Cluster.initial_node_count must be greater than zero.")
    ({'initialNodeCount': -1}, 'NodePool.initial_node_count must be greater than or equal to zero.'),
])
def test_node_pool_refusals(rdma_vpcs, sandbox, change, fragment):
    rdma_vpcs.must('POST', C, {'cluster': {'name': 'rdma', 'initialClusterVersion': VERSION, 'initialNodeCount': 1,
                                           'networkConfig': {'datapathProvider': 'ADVANCED_DATAPATH', 'enableMultiNetworking': True}}})
    body = node_pool()
    pool = body['nodePool']
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(pool.get(key), dict):
            pool[key] = {k: v for k, v in dict(pool[key], **value).items() if v is not None}
        else:
            pool[key] = value
    response = rdma_vpcs.post(C + '/rdma/nodePools', body)
    assert response.status == 400, response
    error = response.body['error']
    assert fragment in error['message'] and error['status'] == 'INVALID_ARGUMENT'
    assert error['details'][0]['@type'] == 'type.googleapis.com/google.rpc.RequestInfo'
    assert [item['name'] for item in sandbox.resources('container.nodePools')] == ['default-pool']


def test_seed_003_optional_flags_and_provisioning_with_gcloud(gcloud, api):
    """Seed 003 node pools with the remaining fields gcloud can set: --placement-type=COMPACT, --spot, --flex-start with
    --enable-queued-provisioning and --max-run-duration, --additional-pod-network, --enable-gvnic."""
    for number in range(1, 5):
        api.create_vpc(PROJECT, '%s-net-%d' % (PROJECT, number), '%s-sub-%d' % (PROJECT, number), REGION, '192.168.%d.0/24' % number)
    api.must('POST', P + '/regions/%s/subnetworks' % REGION,
             {'name': 'pods-sub', 'network': 'global/networks/%s-net-1' % PROJECT, 'ipCidrRange': '192.168.50.0/24',
              'secondaryIpRanges': [{'rangeName': 'pods', 'ipCidrRange': '10.60.0.0/16'}]})
    ok(gcloud('container', 'clusters', 'create', 'tcpx', '--zone=us-central1-a', '--cluster-version=1.33.5-gke.1308000',
              '--enable-dataplane-v2', '--enable-ip-alias', '--enable-multi-networking', '--no-enable-autoupgrade', '--num-nodes=1'))
    nets = ['--additional-node-network=network=%s-net-%d,subnetwork=%s-sub-%d' % (PROJECT, n, PROJECT, n) for n in range(1, 5)]
    common = ['--cluster=tcpx', '--zone=us-central1-a', '--machine-type=a3-highgpu-8g',
              '--accelerator=type=nvidia-h100-80gb,count=8,gpu-driver-version=LATEST', '--enable-gvnic', '--no-enable-autoupgrade']
    ok(gcloud('container', 'node-pools', 'create', 'compact', *common, *nets, '--placement-type=COMPACT',
              '--additional-pod-network=subnetwork=pods-sub,pod-ipv4-range=pods,max-pods-per-node=32'))
    ok(gcloud('container', 'node-pools', 'create', 'spot', *common, '--spot'))
    ok(gcloud('container', 'node-pools', 'create', 'flex', *common, '--flex-start', '--enable-queued-provisioning', '--enable-autoscaling',
              '--num-nodes=0', '--total-min-nodes=0', '--total-max-nodes=2', '--location-policy=ANY', '--reservation-affinity=none',
              '--no-enable-autorepair', '--max-run-duration=86400s'))
    pools = {pool['name']: pool for pool in json.loads(ok(gcloud('container', 'node-pools', 'list', '--cluster=tcpx', '--zone=us-central1-a',
                                                                 '--format=json')).stdout)}
    assert pools['compact']['placementPolicy'] == {'type': 'COMPACT'}
    assert pools['compact']['networkConfig']['additionalPodNetworkConfigs'] == [
        {'subnetwork': 'pods-sub', 'secondaryPodRange': 'pods', 'maxPodsPerNode': {'maxPodsPerNode': '32'}}]
    assert pools['compact']['config']['gvnic'] == {'enabled': True}
    assert pools['spot']['config']['spot'] is True
    flex = pools['flex']
    assert flex['config']['flexStart'] is True and flex['queuedProvisioning'] == {'enabled': True}
    assert flex['config']['maxRunDuration'] == '86400s' and flex['config']['reservationAffinity'] == {'consumeReservationType': 'NO_RESERVATION'}


def cluster_body(name='c', **extra):
    body = {'name': name, 'initialNodeCount': 1, 'networkConfig': {'datapathProvider': 'ADVANCED_DATAPATH', 'enableMultiNetworking': True}}
    body.update(extra)
    return {'cluster': body}


def test_multi_networking_without_ip_allocation_policy_is_vpc_native(api, sandbox):
    """Issue 16 rule 7 corrected: VPC-native is the default since 1.21.0-gke.1500, so no ipAllocationPolicy is fine;
    only an explicit useIpAliases=false is refused."""
    assert api.post(C, cluster_body()).status == 200
    assert sandbox.resources('container.clusters')[0]['ipAllocationPolicy']['useIpAliases'] is True
    response = api.post(C, cluster_body('routes', ipAllocationPolicy={'useIpAliases': False}))
    assert response.status == 400 and 'requires a VPC-native cluster' in response.body['error']['message']


def test_cluster_refusals(api, sandbox):
    """Issue 16 refusal 9 (cluster side): a version outside the cluster's release channel, a subnetwork outside the network."""
    response = api.post(C, cluster_body(releaseChannel={'channel': 'STABLE'}, initialClusterVersion='1.34.8-gke.1278000'))
    assert response.status == 400 and 'is not available in the STABLE release channel' in response.body['error']['message']
    api.create_vpc(PROJECT, 'net-a', 'sub-a', REGION, '10.1.0.0/24')
    api.create_vpc(PROJECT, 'net-b', 'sub-b', REGION, '10.2.0.0/24')
    response = api.post(C, cluster_body(network='net-a', subnetwork='sub-b'))
    assert response.status == 400 and response.body['error']['message'] == 'Subnetwork "sub-b" is not in network "net-a".'
    assert sandbox.resources('container.clusters') == []
    assert api.post(C, cluster_body(releaseChannel={'channel': 'STABLE'}, network='net-a', subnetwork='sub-a')).status == 200
    assert sandbox.resources('container.clusters')[0]['currentMasterVersion'] == '1.35.6-gke.1250000'   # Stable's default
