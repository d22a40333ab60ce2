"""Each Compute Engine and GKE rule the sandbox enforces: a request the real API accepts is accepted,
one it refuses is refused with a GCE-worded 400 and creates nothing.  Sources are cited beside each rule
in tests/sandbox/rules.py, instances.py, networking.py and container.py; the newer refusals of issue 16
are in test_sandbox_refusals.py, the RDMA (A3 Ultra) layout in test_sandbox_rdma.py."""

import pytest

PROJECT = 'sandbox-project'
ZONE = 'us-central1-a'
RDMA_ZONE = 'us-central1-b'   # A3 Ultra and A4 are offered in us-central1-b, not -a (GPU locations page)
REGION = 'us-central1'
P = 'compute/v1/projects/' + PROJECT
COS = 'projects/cos-cloud/global/images/family/cos-121-lts'


@pytest.fixture
def nets(api):
    """net-0 .. net-10 with one /24 subnet each in us-central1 (sub-N = 10.0.N.0/24)."""
    for number in range(11):
        api.create_vpc(PROJECT, 'net-%d' % number, 'sub-%d' % number, REGION, '10.0.%d.0/24' % number)
    return api


def nic(number, nic_type='GVNIC', **extra):
    return dict({'network': 'global/networks/net-%d' % number, 'subnetwork': 'regions/%s/subnetworks/sub-%d' % (REGION, number),
                 'nicType': nic_type}, **extra)


def instance(name='vm', machine='a3-megagpu-8g', nics=None, scheduling=None, zone=ZONE, **extra):
    body = {'name': name, 'machineType': 'zones/%s/machineTypes/%s' % (zone, machine),
            'disks': [{'boot': True, 'initializeParams': {'sourceImage': COS}}],
            'networkInterfaces': nics if nics is not None else [nic(0)],
            'scheduling': scheduling if scheduling is not None else {'onHostMaintenance': 'TERMINATE'}}
    body.update(extra)
    return body


def insert(api, body, zone=ZONE):
    return api.post('%s/zones/%s/instances' % (P, zone), body)


def refused(response, *fragments, reason='invalid', status=400):
    assert response.status == status, response
    error = response.body['error']
    assert error['errors'][0]['reason'] == reason
    for fragment in fragments:
        assert fragment in error['message'], error['message']
    return error['message']


def accepted(response):
    assert response.status == 200, response
    assert response.body['kind'] == 'compute#operation' and 'error' not in response.body
    return response.body


@pytest.fixture
def roce(nets):
    """A RoCE network bound to us-central1-b with 9 subnets (roce-sub-0 .. roce-sub-8), as the RDMA network profiles page makes it."""
    nets.must('POST', P + '/global/networks', {'name': 'roce', 'autoCreateSubnetworks': False,
                                               'networkProfile': 'global/networkProfiles/%s-vpc-roce' % RDMA_ZONE})
    for number in range(9):
        nets.must('POST', P + '/regions/%s/subnetworks' % REGION,
                  {'name': 'roce-sub-%d' % number, 'network': 'global/networks/roce', 'ipCidrRange': '10.200.%d.0/24' % number})
    return nets


def mrdma(number):
    return {'network': 'global/networks/roce', 'subnetwork': 'regions/%s/subnetworks/roce-sub-%d' % (REGION, number), 'nicType': 'MRDMA'}


# --------------------------------------------------------------------------------------- NIC limits
@pytest.mark.parametrize('machine, limit, zone', [
    ('a3-megagpu-8g', 9, ZONE),
    ('a3-highgpu-8g', 5, ZONE),
    ('a3-edgegpu-8g', 5, ZONE),
    ('a3-ultragpu-8g', 10, RDMA_ZONE),
    ('a4-highgpu-8g', 10, RDMA_ZONE),
    ('e2-standard-4', 4, ZONE),
])
def test_maximum_nics_per_machine_type(sandbox, roce, machine, limit, zone):
    if machine.startswith(('a3-ultra', 'a4')):   # 2 gVNIC + MRDMA NICs on the RoCE network
        nics = [nic(0), nic(1)] + [mrdma(n) for n in range(9)]
    else:
        nics = [nic(n, 'VIRTIO_NET' if machine.startswith('e2') else 'GVNIC') for n in range(11)]
    accepted(insert(roce, instance('at-limit', machine, nics[:limit], zone=zone), zone))
    message = refused(insert(roce, instance('over-limit', machine, nics[:limit + 1], zone=zone), zone))
    assert "Invalid value for field 'resource.networkInterfaces': ''." in message
    assert 'is %d.' % limit in message
    assert [vm['name'] for vm in sandbox.resources('compute.instances')] == ['at-limit']


def test_one_nic_per_regular_vpc_network(nets):
    """Regular networks: one NIC each (terraform-provider-google#8269 quotes the message)."""
    refused(insert(nets, instance(nics=[nic(0), nic(1), nic(1)])), "'resource.networkInterfaces[2].network'",
            'Networks must be distinct for NICs attached to a VM.')


def test_mrdma_nics_share_one_roce_network(roce):
    """Issue 16 rule 1 corrected: the 8 MRDMA NICs of an A3 Ultra sit on one RoCE network, one subnet each."""
    accepted(insert(roce, instance('ultra', 'a3-ultragpu-8g', [nic(0), nic(1)] + [mrdma(n) for n in range(8)], zone=RDMA_ZONE), RDMA_ZONE))


def test_a3_takes_gvnic_implicitly(sandbox, nets):
    """Issue 16 rule 2 corrected: A3 NICs without nicType get gVNIC (the only NIC type of the series); VIRTIO_NET and
    MRDMA are still refused."""
    implicit = {'network': 'global/networks/net-1', 'subnetwork': 'regions/%s/subnetworks/sub-1' % REGION}
    accepted(insert(nets, instance(machine='a3-highgpu-8g', nics=[{k: v for k, v in nic(0).items() if k != 'nicType'}, implicit])))
    assert [item['nicType'] for item in sandbox.resources('compute.instances')[0]['networkInterfaces']] == ['GVNIC', 'GVNIC']
    for number, nic_type in ((2, 'VIRTIO_NET'), (3, 'MRDMA')):
        refused(insert(nets, instance('vm-%d' % number, machine='a3-highgpu-8g', nics=[nic(0), nic(number, nic_type)])),
                "'resource.networkInterfaces[1].nicType'")


def test_rdma_machines_need_gvnic_first_and_mrdma_or_gvnic_after(roce):
    accepted(insert(roce, instance('ultra', 'a3-ultragpu-8g', [nic(0), nic(1), mrdma(2)], zone=RDMA_ZONE), RDMA_ZONE))
    refused(insert(roce, instance('ultra-2', 'a3-ultragpu-8g', [mrdma(0)], zone=RDMA_ZONE), RDMA_ZONE), "'resource.networkInterfaces[0].nicType'")
    refused(insert(roce, instance('ultra-3', 'a4-highgpu-8g', [nic(0), nic(1, 'VIRTIO_NET')], zone=RDMA_ZONE), RDMA_ZONE),
            "'resource.networkInterfaces[1].nicType'")
    refused(insert(roce, instance('e2', 'e2-standard-4', [nic(0, 'MRDMA')], scheduling={})), 'nicType MRDMA is not supported')


# --------------------------------------------------------------------------------------- scheduling
def test_gpu_machines_cannot_live_migrate(sandbox, nets):
    """400 badRequest, bare sentence (cloud-barista/cb-spider#1125); the API's default is MIGRATE, so a GPU VM that
    leaves onHostMaintenance unset is refused too (issue 16, refusal 1)."""
    for name, scheduling in (('explicit', {'onHostMaintenance': 'MIGRATE'}), ('defaulted', {})):
        response = insert(nets, instance(name, scheduling=scheduling))
        assert response.status == 400 and response.body['error']['errors'][0]['reason'] == 'badRequest'
        assert response.body['error']['message'] == 'Instances with guest accelerators do not support live migration.'
    assert sandbox.resources('compute.instances') == []
    accepted(insert(nets, instance('general', 'e2-standard-4', [nic(0, 'VIRTIO_NET')], scheduling={})))
    assert sandbox.resources('compute.instances')[0]['scheduling']['onHostMaintenance'] == 'MIGRATE'


def test_spot_cannot_restart_automatically(sandbox, nets):
    """The real wording (elasticluster#568): the field is scheduling.preemptible."""
    message = refused(insert(nets, instance(scheduling={'provisioningModel': 'SPOT', 'automaticRestart': True, 'onHostMaintenance': 'TERMINATE'})))
    assert message == ("Invalid value for field 'resource.scheduling.preemptible': 'true'. "
                       "Scheduling must have preemptible be false when AutomaticRestart is true.")
    accepted(insert(nets, instance('spot', scheduling={'provisioningModel': 'SPOT', 'onHostMaintenance': 'TERMINATE'})))
    assert sandbox.resources('compute.instances')[0]['scheduling']['automaticRestart'] is False


def test_flex_start_is_accepted_with_params(sandbox, nets):
    body = instance('flex', scheduling={'provisioningModel': 'FLEX_START', 'onHostMaintenance': 'TERMINATE', 'automaticRestart': False,
                                        'instanceTerminationAction': 'DELETE', 'maxRunDuration': {'seconds': '3600'}},
                    reservationAffinity={'consumeReservationType': 'NO_RESERVATION'}, params={'requestValidForDuration': {'seconds': '7200'}})
    accepted(insert(nets, body))
    stored = sandbox.resources('compute.instances')[0]
    assert 'params' not in stored, 'params is input-only'


def reservation(api, name, machine, specific=True, count=2):
    return api.post('%s/zones/%s/reservations' % (P, ZONE),
                    {'name': name, 'specificReservationRequired': specific,
                     'specificReservation': {'count': count, 'instanceProperties': {'machineType': machine}}})


def bound():
    return {'provisioningModel': 'RESERVATION_BOUND', 'onHostMaintenance': 'TERMINATE', 'instanceTerminationAction': 'STOP'}


AFFINITY = {'consumeReservationType': 'SPECIFIC_RESERVATION', 'key': 'compute.googleapis.com/reservation-name', 'values': ['res']}


def test_referenced_reservation_must_exist(sandbox, nets):
    refused(insert(nets, instance(scheduling=bound(), reservationAffinity=AFFINITY)), "reservations/res' does not exist")
    accepted(reservation(nets, 'res', 'a3-megagpu-8g'))
    accepted(insert(nets, instance(scheduling=bound(), reservationAffinity=AFFINITY)))
    shared = dict(AFFINITY, values=['projects/%s/reservations/res' % PROJECT])
    accepted(insert(nets, instance('vm-2', scheduling=bound(), reservationAffinity=shared)))
    assert sandbox.resources('compute.reservations')[0]['specificReservation']['inUseCount'] == '2'


def test_reservation_bound_needs_a_specific_reservation(nets):
    refused(insert(nets, instance(scheduling=bound())), 'RESERVATION_BOUND instances must consume a specific reservation.')


def test_a3_edge_takes_reservation_bound(sandbox, nets):
    """Issue 16 rule 3 corrected: the current reservation-bound page (about-reservation-bound-instances) lists A3 Edge;
    seed 000 is older.  General-purpose types are still refused."""
    accepted(reservation(nets, 'res', 'a3-edgegpu-8g'))
    accepted(insert(nets, instance(machine='a3-edgegpu-8g', scheduling=bound(), reservationAffinity=AFFINITY)))
    assert sandbox.resources('compute.instances')[0]['scheduling']['provisioningModel'] == 'RESERVATION_BOUND'
    accepted(reservation(nets, 'res-e2', 'e2-standard-4'))
    refused(insert(nets, instance('e2', 'e2-standard-4', [nic(0, 'VIRTIO_NET')], scheduling=bound(),
                                  reservationAffinity=dict(AFFINITY, values=['res-e2']))),
            'e2-standard-4 does not support the RESERVATION_BOUND provisioning model')


# ------------------------------------------------------------------------------------ networks
@pytest.mark.parametrize('mtu, ok', [(1299, False), (1300, True), (1460, True), (8244, True), (8896, True), (8897, False), (9000, False)])
def test_network_mtu_range(api, mtu, ok):
    response = api.post(P + '/global/networks', {'name': 'n', 'autoCreateSubnetworks': False, 'mtu': mtu})
    if ok:
        accepted(response)
        assert api.get(P + '/global/networks/n').body['mtu'] == mtu
    else:
        refused(response, "Invalid value for field 'resource.mtu': '%d'. Valid range is [1300, 8896]." % mtu)


@pytest.mark.parametrize('name, ok', [('a', True), ('net-1', True), ('a' * 63, True), ('a' * 64, False), ('1net', False),
                                      ('Net', False), ('net-', False), ('net_1', False), ('', False)])
def test_resource_names(api, name, ok):
    response = api.post(P + '/global/networks', {'name': name, 'autoCreateSubnetworks': False})
    if ok:
        accepted(response)
    else:
        refused(response, "Invalid value for field 'resource.name'", "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")


def test_custom_mode_network_has_no_subnets_and_auto_mode_has_one_per_region(sandbox, api):
    accepted(api.post(P + '/global/networks', {'name': 'custom', 'autoCreateSubnetworks': False}))
    accepted(api.post(P + '/global/networks', {'name': 'auto', 'autoCreateSubnetworks': True}))
    assert api.get(P + '/global/networks/custom').body['subnetworks'] == []
    auto_subnets = api.get(P + '/global/networks/auto').body['subnetworks']
    # one per region of the catalog (42), with the documented ranges -- us-west2, europe-west2 and asia-east1 included
    assert len(auto_subnets) == 42 and api.get(P + '/regions/us-central1/subnetworks/auto').body['ipCidrRange'] == '10.128.0.0/20'
    assert [api.get(P + '/regions/%s/subnetworks/auto' % region).body['ipCidrRange'] for region in ('us-west2', 'europe-west2', 'asia-east1')] \
        == ['10.168.0.0/20', '10.154.0.0/20', '10.140.0.0/20']
    # a VM on a custom-mode network must name a subnet; on an auto-mode network it need not
    refused(insert(api, instance('on-custom', 'e2-standard-4', [{'network': 'global/networks/custom'}], scheduling={})),
            'Subnetwork should be specified for custom subnetmode network')
    accepted(insert(api, instance('on-auto', 'e2-standard-4', [{'network': 'global/networks/auto'}], scheduling={})))
    accepted(api.delete(P + '/zones/%s/instances/on-auto' % ZONE))
    accepted(api.delete(P + '/global/networks/auto'))
    assert [subnet['name'] for subnet in sandbox.resources('compute.subnetworks')] == []


def test_subnet_ranges_must_be_valid_and_not_overlap(nets):
    subnets = P + '/regions/%s/subnetworks' % REGION
    refused(nets.post(subnets, {'name': 'bad', 'network': 'global/networks/net-1', 'ipCidrRange': '10.0.300.0/24'}), 'Invalid IPCidrRange')
    refused(nets.post(subnets, {'name': 'tiny', 'network': 'global/networks/net-1', 'ipCidrRange': '10.9.0.0/30'}), 'Invalid IPCidrRange')
    refused(nets.post(subnets, {'name': 'over', 'network': 'global/networks/net-1', 'ipCidrRange': '10.0.1.128/25'}),
            "Invalid IPCidrRange: 10.0.1.128/25 conflicts with existing subnetwork 'sub-1' in region 'us-central1'.")
    # the same range in another network, or in another region of the same network, is fine / refused respectively
    accepted(nets.post(subnets, {'name': 'other-net', 'network': 'global/networks/net-2', 'ipCidrRange': '10.0.1.0/24'}))
    refused(nets.post(P + '/regions/us-east4/subnetworks', {'name': 'east', 'network': 'global/networks/net-1', 'ipCidrRange': '10.0.0.0/16'}),
            'conflicts with existing subnetwork')


def test_referenced_resources_must_exist(nets):
    refused(insert(nets, instance(machine='a9-supergpu-8g')), "Machine type with name 'a9-supergpu-8g' does not exist in zone 'us-central1-a'.")
    refused(insert(nets, instance(nics=[{'network': 'global/networks/nope', 'nicType': 'GVNIC'}])),
            'The referenced network resource cannot be found.')
    refused(insert(nets, instance(nics=[{'subnetwork': 'regions/us-central1/subnetworks/nope', 'nicType': 'GVNIC'}])),
            'The referenced subnetwork resource cannot be found.')
    body = instance()
    body['disks'][0]['initializeParams']['sourceImage'] = 'projects/cos-cloud/global/images/family/cos-999-lts'
    refused(insert(nets, body), 'The referenced image resource cannot be found.')
    refused(insert(nets, instance(), zone='mars-central1-a'), "Invalid value for field 'zone': 'mars-central1-a'. Unknown zone.")
    refused(nets.post(P + '/regions/us-central1/subnetworks', {'name': 's', 'network': 'global/networks/nope', 'ipCidrRange': '10.99.0.0/24'}),
            'The referenced network resource cannot be found.')
    refused(nets.post(P + '/global/firewalls', {'name': 'fw', 'network': 'global/networks/nope', 'allowed': [{'IPProtocol': 'icmp'}]}),
            'The referenced network resource cannot be found.')


def test_subnet_must_be_in_the_instance_region_and_network(nets):
    nets.create_vpc(PROJECT, 'east-net', 'east-sub', 'us-east4', '10.50.0.0/24')
    refused(insert(nets, instance(nics=[{'subnetwork': 'regions/us-east4/subnetworks/east-sub', 'nicType': 'GVNIC'}])),
            "Subnetwork must be in the same region as the instance's zone (us-central1).")
    refused(insert(nets, instance(nics=[{'network': 'global/networks/net-2', 'subnetwork': 'regions/us-central1/subnetworks/sub-1',
                                         'nicType': 'GVNIC'}])), 'Subnetwork does not belong to network')


def test_network_in_use_cannot_be_deleted(sandbox, nets):
    accepted(nets.post(P + '/global/networks', {'name': 'bare', 'autoCreateSubnetworks': False}))
    accepted(nets.post(P + '/global/firewalls', {'name': 'fw', 'network': 'global/networks/bare', 'allowed': [{'IPProtocol': 'icmp'}]}))
    accepted(insert(nets, instance(nics=[nic(0), nic(1)])))
    for network, user in (('net-2', 'regions/us-central1/subnetworks/sub-2'), ('bare', 'global/firewalls/fw'), ('net-1', '')):
        refused(nets.delete(P + '/global/networks/' + network),
                "The network resource 'projects/%s/global/networks/%s' is already being used by 'projects/%s/%s" % (PROJECT, network, PROJECT, user),
                reason='resourceInUseByAnotherResource')
    refused(nets.delete(P + '/regions/us-central1/subnetworks/sub-1'),
            "The subnetwork resource 'projects/%s/regions/us-central1/subnetworks/sub-1' is already being used by 'projects/%s/zones/%s/instances/vm'"
            % (PROJECT, PROJECT, ZONE), reason='resourceInUseByAnotherResource')
    accepted(nets.delete(P + '/zones/%s/instances/vm' % ZONE))
    accepted(nets.delete(P + '/regions/us-central1/subnetworks/sub-1'))
    accepted(nets.delete(P + '/global/networks/net-1'))
    accepted(nets.delete(P + '/global/firewalls/fw'))
    accepted(nets.delete(P + '/global/networks/bare'))
    names = [network['name'] for network in sandbox.resources('compute.networks')]
    assert 'net-1' not in names and 'bare' not in names and 'net-2' in names


def test_nic_addresses_come_from_the_subnet(sandbox, nets):
    accepted(insert(nets, instance('a', nics=[nic(0, accessConfigs=[{'type': 'ONE_TO_ONE_NAT'}]), nic(1)])))
    accepted(insert(nets, instance('b', nics=[nic(0), nic(1)])))
    first, second = sandbox.resources('compute.instances')
    assert [n['networkIP'] for n in first['networkInterfaces']] == ['10.0.0.2', '10.0.1.2']
    assert [n['networkIP'] for n in second['networkInterfaces']] == ['10.0.0.3', '10.0.1.3']
    assert first['networkInterfaces'][0]['accessConfigs'][0]['natIP'].startswith('34.')
    assert 'accessConfigs' not in second['networkInterfaces'][0]


# ------------------------------------------------------------------------------------------ GKE
C = 'v1/projects/%s/locations/%s/clusters' % (PROJECT, ZONE)


def cluster(name='c', multi=True, dataplane='ADVANCED_DATAPATH'):
    return {'cluster': {'name': name, 'initialNodeCount': 1, 'ipAllocationPolicy': {'useIpAliases': True},
                        'networkConfig': {'datapathProvider': dataplane, 'enableMultiNetworking': multi}}}


def pool(name='gpu', machine='a3-highgpu-8g', accelerator='nvidia-h100-80gb', networks=4, **extra):
    body = {'name': name, 'initialNodeCount': 2, 'config': {'machineType': machine,
                                                            'accelerators': [{'acceleratorCount': '8', 'acceleratorType': accelerator}]},
            'networkConfig': {'additionalNodeNetworkConfigs': [{'network': 'net-%d' % n, 'subnetwork': 'sub-%d' % n} for n in range(1, networks + 1)]}}
    body.update(extra)
    return {'nodePool': body}


def test_gke_cluster_rules(api):
    refused(api.post(C, cluster(dataplane='LEGACY_DATAPATH')), 'Multi-networking requires GKE Dataplane V2', reason='badRequest')
    refused(api.post(C, cluster('Bad_Name')), 'Invalid cluster name', reason='badRequest')
    refused(api.post('v1/projects/p/locations/atlantis1/clusters', cluster()), 'Location "atlantis1" does not exist.', reason='badRequest')
    body = cluster()
    body['cluster']['initialClusterVersion'] = '1.99.1-gke.1'
    refused(api.post(C, body), 'Master version "1.99.1-gke.1" is unsupported.', reason='badRequest')
    accepted_op = api.post(C, cluster())
    assert accepted_op.status == 200 and accepted_op.body['operationType'] == 'CREATE_CLUSTER' and accepted_op.body['status'] == 'DONE'
    duplicate = api.post(C, cluster())
    assert duplicate.status == 409 and duplicate.body['error']['message'] == 'Already exists: projects/%s/locations/%s/clusters/c.' % (PROJECT, ZONE)
    missing = api.get(C + '/nope')
    assert missing.status == 404 and missing.body['error']['message'] == 'Not found: projects/%s/locations/%s/clusters/nope.' % (PROJECT, ZONE)


def test_gke_node_pool_rules(sandbox, nets):
    assert nets.post(C, cluster()).status == 200
    assert nets.post(C, cluster('plain', multi=False, dataplane='LEGACY_DATAPATH')).status == 200
    refused(nets.post(C + '/plain/nodePools', pool()), 'multi-networking', reason='badRequest')
    refused(nets.post(C + '/c/nodePools', pool(networks=5)), 'supports at most 5 network interfaces', reason='badRequest')
    refused(nets.post(C + '/c/nodePools', pool(accelerator='nvidia-h100-mega-80gb')), 'is not compatible with machine type', reason='badRequest')
    body = pool()
    body['nodePool']['networkConfig']['additionalNodeNetworkConfigs'][0]['network'] = 'nope'
    refused(nets.post(C + '/c/nodePools', body), 'Network "nope" does not exist.', reason='badRequest')
    refused(nets.post(C + '/c/nodePools', pool(placementPolicy={'policyName': 'compact'})), 'Placement policy "compact" does not exist',
            reason='badRequest')
    assert nets.post(C + '/c/nodePools', pool()).status == 200
    assert nets.post(C + '/c/nodePools', pool(name='mega', machine='a3-megagpu-8g', accelerator='nvidia-h100-mega-80gb', networks=8)).status == 200
    assert sorted(p['name'] for p in sandbox.resources('container.nodePools')) == ['default-pool', 'default-pool', 'gpu', 'mega']
