"""An A3 Ultra VM with the RDMA layout Google documents, created through the sandbox (issue 16, closing
demonstration), and the refusals around it.

The layout: 2 gVNIC NICs on two regular VPC networks, 8 MRDMA NICs on one RoCE network (a VPC network
with the ``ZONE-vpc-roce`` network profile) with 8 subnets, one per MRDMA NIC.  Sources: the RDMA network
profiles page (https://cloud.google.com/vpc/docs/rdma-network-profiles: RoCE networks take MRDMA NICs
only, are bound to the profile's zone, default MTU 8896), "Create an AI-optimized instance with A4 or
A3 Ultra" (https://cloud.google.com/compute/docs/accelerator-optimized-machines, the gVNIC + MRDMA
``--network-interface`` flags), and seed 001's manual variant (one gVNIC network, one RDMA network with
subnets sub-0 .. sub-7).

The demonstration uses the real gcloud CLI for the RoCE network (``--network-profile``), its first
subnet and the VM itself (gcloud 528's help lists only GVNIC and VIRTIO_NET for ``nic-type``, but it
sends MRDMA through unchanged); the other networks are set up over REST to keep the test fast.  The
refusals go over REST.
"""

import json

import pytest

PROJECT = 'sandbox-project'
ZONE = 'us-central1-b'   # a3-ultragpu-8g is offered in us-central1-b (GPU locations page)
REGION = 'us-central1'
P = 'compute/v1/projects/' + PROJECT


def ok(result):
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def rdma_networks(api):
    """Seed 001's manual layout: mgmt-net/mgmt-sub and gvnic-net/gvnic-sub (regular), roce-net with roce-sub-0..7."""
    for name, cidr in (('mgmt', '192.168.0.0/24'), ('gvnic', '192.168.1.0/24')):
        api.create_vpc(PROJECT, name + '-net', name + '-sub', REGION, cidr, mtu=8896)
    api.must('POST', P + '/global/networks', {'name': 'roce-net', 'autoCreateSubnetworks': False,
                                              'networkProfile': 'global/networkProfiles/%s-vpc-roce' % ZONE})
    for number in range(8):
        api.must('POST', P + '/regions/%s/subnetworks' % REGION,
                 {'name': 'roce-sub-%d' % number, 'network': 'global/networks/roce-net', 'ipCidrRange': '192.168.%d.0/24' % (10 + number)})
    return api


def gvnic(name):
    return {'network': 'global/networks/%s-net' % name, 'subnetwork': 'regions/%s/subnetworks/%s-sub' % (REGION, name), 'nicType': 'GVNIC'}


def mrdma(number, network='roce-net', subnet='roce-sub-%d'):
    return {'network': 'global/networks/' + network, 'subnetwork': 'regions/%s/subnetworks/%s' % (REGION, subnet % number), 'nicType': 'MRDMA'}


def a3_ultra(name='a3u-vm', nics=None, zone=ZONE):
    return {
        'name': name, 'machineType': 'zones/%s/machineTypes/a3-ultragpu-8g' % zone,
        'disks': [{'boot': True, 'autoDelete': True, 'initializeParams': {
            'sourceImage': 'projects/cos-cloud/global/images/family/cos-121-lts', 'diskSizeGb': '200',
            'diskType': 'zones/%s/diskTypes/hyperdisk-balanced' % zone}}],
        'networkInterfaces': nics if nics is not None else [gvnic('mgmt'), gvnic('gvnic')] + [mrdma(n) for n in range(8)],
        'scheduling': {'onHostMaintenance': 'TERMINATE', 'automaticRestart': True},
    }


def test_a3_ultra_vm_with_2_gvnic_and_8_mrdma_nics_on_one_roce_network(gcloud, api, sandbox):
    """The closing demonstration of issue 16, with gcloud: RoCE network, subnets and the VM."""
    for name, cidr in (('mgmt', '192.168.0.0/24'), ('gvnic', '192.168.1.0/24')):
        api.create_vpc(PROJECT, name + '-net', name + '-sub', REGION, cidr, mtu=8896)
    network = json.loads(ok(gcloud('compute', 'networks', 'create', 'roce-net', '--subnet-mode=custom',
                                   '--network-profile=%s-vpc-roce' % ZONE, '--format=json')).stdout)[0]
    assert network['networkProfile'].endswith('/global/networkProfiles/%s-vpc-roce' % ZONE)
    assert network['mtu'] == 8896, 'RDMA network profiles page: the gcloud/API default MTU of an RDMA network is 8896'
    ok(gcloud('compute', 'networks', 'subnets', 'create', 'roce-sub-0', '--network=roce-net', '--region=' + REGION, '--range=192.168.10.0/24'))
    for number in range(1, 8):
        api.must('POST', P + '/regions/%s/subnetworks' % REGION,
                 {'name': 'roce-sub-%d' % number, 'network': 'global/networks/roce-net', 'ipCidrRange': '192.168.%d.0/24' % (10 + number)})
    nics = ['--network-interface=nic-type=GVNIC,network=mgmt-net,subnet=mgmt-sub',
            '--network-interface=nic-type=GVNIC,network=gvnic-net,subnet=gvnic-sub,no-address']
    nics += ['--network-interface=nic-type=MRDMA,network=roce-net,subnet=roce-sub-%d,no-address' % n for n in range(8)]
    created = json.loads(ok(gcloud('compute', 'instances', 'create', 'a3u-vm', '--zone=' + ZONE, '--machine-type=a3-ultragpu-8g',
                                   '--image-family=cos-121-lts', '--image-project=cos-cloud', '--boot-disk-type=hyperdisk-balanced',
                                   '--boot-disk-size=200GB', '--maintenance-policy=TERMINATE', '--restart-on-failure', *nics,
                                   '--format=json')).stdout)[0]
    assert created['status'] == 'RUNNING' and created['machineType'].endswith('/machineTypes/a3-ultragpu-8g')
    interfaces = created['networkInterfaces']
    assert [nic['nicType'] for nic in interfaces] == ['GVNIC'] * 2 + ['MRDMA'] * 8
    assert [nic['network'].rsplit('/', 1)[1] for nic in interfaces] == ['mgmt-net', 'gvnic-net'] + ['roce-net'] * 8
    assert [nic['subnetwork'].rsplit('/', 1)[1] for nic in interfaces[2:]] == ['roce-sub-%d' % n for n in range(8)]
    assert [nic['networkIP'] for nic in interfaces[2:]] == ['192.168.%d.2' % (10 + n) for n in range(8)]
    assert created['guestAccelerators'][0]['acceleratorType'].endswith('/nvidia-h200-141gb')
    assert created['guestAccelerators'][0]['acceleratorCount'] == 8
    insert = sandbox.request_log('compute.instances.insert')[0]['body']
    assert [nic['nicType'] for nic in insert['networkInterfaces']] == ['GVNIC'] * 2 + ['MRDMA'] * 8, 'gcloud sent the MRDMA NICs as asked'


def test_the_same_vm_over_rest(rdma_networks, sandbox):
    """The API request of Google's REST tab gives the same VM."""
    response = rdma_networks.post('%s/zones/%s/instances' % (P, ZONE), a3_ultra())
    assert response.status == 200 and response.body['status'] == 'DONE' and 'error' not in response.body, response
    assert [nic['nicType'] for nic in sandbox.resources('compute.instances')[0]['networkInterfaces']] == ['GVNIC'] * 2 + ['MRDMA'] * 8


@pytest.mark.parametrize('nics, field, fragment', [
    # gVNIC on the RoCE network: RoCE VPC networks "only support MRDMA NICs" (RDMA network profiles page)
    ([gvnic('mgmt'), {'network': 'global/networks/roce-net', 'subnetwork': 'regions/%s/subnetworks/roce-sub-0' % REGION, 'nicType': 'GVNIC'}],
     'networkInterfaces[1].nicType', 'it only supports MRDMA network interfaces'),
    # MRDMA on a regular network: MRDMA NICs need a RoCE network (same page)
    ([gvnic('mgmt'), gvnic('gvnic'), mrdma(0, 'mgmt-net', 'mgmt-sub%.0s')], 'networkInterfaces[2].nicType',
     "nicType MRDMA needs a network with an RDMA (RoCE) network profile; 'mgmt-net' has none."),
    # two gVNIC NICs on one regular network: still refused, with the real message (terraform-provider-google#8269)
    ([gvnic('mgmt'), gvnic('mgmt')], 'networkInterfaces[1].network', 'Networks must be distinct for NICs attached to a VM.'),
    # the first NIC of an A3 Ultra is a gVNIC (machine series page: 2 gVNIC + 8 MRDMA)
    ([mrdma(0)], 'networkInterfaces[0].nicType', 'supports nicType GVNIC on this interface'),
])
def test_rdma_layout_refusals(rdma_networks, sandbox, nics, field, fragment):
    response = rdma_networks.post('%s/zones/%s/instances' % (P, ZONE), a3_ultra(nics=nics))
    assert response.status == 400 and response.body['error']['errors'][0]['reason'] == 'invalid', response
    assert response.body['error']['message'].startswith("Invalid value for field 'resource.%s'" % field)
    assert fragment in response.body['error']['message']
    assert sandbox.resources('compute.instances') == []


def test_roce_network_is_bound_to_its_profile_zone(rdma_networks, sandbox):
    api = rdma_networks
    """RDMA network profiles page, "Zonal constraint": instances in the profile's zone only, subnets in its region only."""
    response = api.post('%s/zones/us-central1-a/instances' % P, a3_ultra(zone='us-central1-a'))
    assert response.status == 400 and "Machine type with name 'a3-ultragpu-8g' does not exist in zone 'us-central1-a'." in response.body['error']['message']
    subnet = api.post('%s/regions/us-east4/subnetworks' % P, {'name': 'far', 'network': 'global/networks/roce-net', 'ipCidrRange': '192.168.30.0/24'})
    assert subnet.status == 400 and 'is bound to zone us-central1-b by its network profile' in subnet.body['error']['message']
    auto = api.post(P + '/global/networks', {'name': 'roce-auto', 'autoCreateSubnetworks': True,
                                             'networkProfile': 'global/networkProfiles/%s-vpc-roce' % ZONE})
    assert auto.status == 400 and 'does not allow auto mode subnets' in auto.body['error']['message']
    unknown = api.post(P + '/global/networks', {'name': 'roce-x', 'autoCreateSubnetworks': False,
                                                'networkProfile': 'global/networkProfiles/us-central1-a-vpc-roce'})
    assert unknown.status == 400 and 'The referenced network profile resource cannot be found.' in unknown.body['error']['message']


def test_network_profiles_are_listed_where_a3_ultra_and_a4_are(api):
    names = [item['name'] for item in api.get(P + '/global/networkProfiles').body['items']]
    assert 'us-central1-b-vpc-roce' in names and 'us-central1-a-vpc-roce' not in names
    profile = api.get(P + '/global/networkProfiles/us-central1-b-vpc-roce').body
    assert profile['features']['interfaceTypes'] == ['MRDMA']
    assert profile['features']['allowMultiNicInSameNetwork'] == 'MULTI_NIC_IN_SAME_NETWORK_ALLOWED'
    assert profile['location'] == {'name': 'us-central1-b', 'scope': 'ZONE'}
