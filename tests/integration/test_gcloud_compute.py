"""Seed 000 (A3 Mega / High / Edge VMs with GPUDirect) run with the real gcloud CLI against the sandbox.

Every ``gcloud compute`` command of the seed must exit 0 and what gcloud reads back must be what was
asked; requests GCE refuses must fail with the sandbox's GCE-worded error in stderr.  gcloud prints
the resource it read back after creating it, so ``--format=json`` on the create command gives the
same document ``describe`` would (one gcloud start instead of two); ``describe`` is run where a test
checks it explicitly.
"""

import ipaddress
import json

import pytest

PROJECT = 'sandbox-project'
REGION = 'us-central1'
ZONE = 'us-central1-a'
PREFIX = 'gpu'
COS_IMAGE = 'cos-121-18867-199-28'  # what family cos-121-lts resolves to in the sandbox catalog


def created(result):
    """The resource gcloud printed after creating it (a one-item list with --format=json)."""
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    return document[0] if isinstance(document, list) else document


# ------------------------------------------------------------------------ VPC networks (seed lines 92-200)
def test_management_network_subnet_and_firewalls(gcloud):
    network = created(gcloud('compute', 'networks', 'create', PREFIX + '-mgmt-net', '--project=' + PROJECT,
                             '--subnet-mode=custom', '--mtu=8244', '--format=json'))
    subnet = created(gcloud('compute', 'networks', 'subnets', 'create', PREFIX + '-mgmt-sub', '--project=' + PROJECT,
                            '--network=' + PREFIX + '-mgmt-net', '--region=' + REGION, '--range=192.168.0.0/24', '--format=json'))
    internal = created(gcloud('compute', 'firewall-rules', 'create', PREFIX + '-mgmt-internal', '--project=' + PROJECT,
                              '--network=' + PREFIX + '-mgmt-net', '--action=ALLOW', '--rules=tcp:0-65535,udp:0-65535,icmp',
                              '--source-ranges=192.168.0.0/16', '--format=json'))
    ssh = created(gcloud('compute', 'firewall-rules', 'create', PREFIX + '-mgmt-external-ssh', '--project=' + PROJECT,
                         '--network=' + PREFIX + '-mgmt-net', '--action=ALLOW', '--rules=tcp:22',
                         '--source-ranges=203.0.113.0/24', '--format=json'))
    ping = created(gcloud('compute', 'firewall-rules', 'create', PREFIX + '-mgmt-external-ping', '--project=' + PROJECT,
                          '--network=' + PREFIX + '-mgmt-net', '--action=ALLOW', '--rules=icmp',
                          '--source-ranges=0.0.0.0/0', '--format=json'))

    assert (network['name'], network['mtu'], network['autoCreateSubnetworks']) == (PREFIX + '-mgmt-net', 8244, False)
    assert subnet['ipCidrRange'] == '192.168.0.0/24' and subnet['gatewayAddress'] == '192.168.0.1'
    assert subnet['network'].endswith('/projects/%s/global/networks/%s-mgmt-net' % (PROJECT, PREFIX))
    assert subnet['region'].endswith('/regions/' + REGION)
    assert internal['allowed'] == [{'IPProtocol': 'tcp', 'ports': ['0-65535']}, {'IPProtocol': 'udp', 'ports': ['0-65535']},
                                   {'IPProtocol': 'icmp'}]
    assert internal['sourceRanges'] == ['192.168.0.0/16'] and internal['direction'] == 'INGRESS'
    assert ssh['allowed'] == [{'IPProtocol': 'tcp', 'ports': ['22']}] and ssh['sourceRanges'] == ['203.0.113.0/24']
    assert ping['allowed'] == [{'IPProtocol': 'icmp'}] and ping['sourceRanges'] == ['0.0.0.0/0']
    for rule in (internal, ssh, ping):
        assert rule['network'].endswith('/global/networks/%s-mgmt-net' % PREFIX) and rule['priority'] == 1000

    described = json.loads(gcloud('compute', 'networks', 'describe', PREFIX + '-mgmt-net', '--project=' + PROJECT, '--format=json',
                                  check=True).stdout)
    assert described['subnetworks'] == [subnet['selfLink']]


@pytest.mark.parametrize('number', [1, 4, 8])
def test_data_network_subnet_and_firewall(gcloud, number):
    """An iteration of the seed's data-network loops: the first, the last of A3 High/Edge (4) and of A3 Mega (8)."""
    network = created(gcloud('compute', 'networks', 'create', '%s-data-net-%d' % (PREFIX, number), '--project=' + PROJECT,
                             '--subnet-mode=custom', '--mtu=8244', '--format=json'))
    subnet = created(gcloud('compute', 'networks', 'subnets', 'create', '%s-data-sub-%d' % (PREFIX, number), '--project=' + PROJECT,
                            '--network=%s-data-net-%d' % (PREFIX, number), '--region=' + REGION,
                            '--range=192.168.%d.0/24' % number, '--format=json'))
    rule = created(gcloud('compute', 'firewall-rules', 'create', '%s-data-internal-%d' % (PREFIX, number), '--project=' + PROJECT,
                          '--network=%s-data-net-%d' % (PREFIX, number), '--action=ALLOW', '--rules=tcp:0-65535,udp:0-65535,icmp',
                          '--source-ranges=192.168.0.0/16', '--format=json'))
    assert network['mtu'] == 8244 and network['autoCreateSubnetworks'] is False
    assert subnet['ipCidrRange'] == '192.168.%d.0/24' % number
    assert subnet['network'] == network['selfLink']
    assert rule['network'] == network['selfLink'] and rule['sourceRanges'] == ['192.168.0.0/16']
    assert [allowed['IPProtocol'] for allowed in rule['allowed']] == ['tcp', 'udp', 'icmp']


# ----------------------------------------------------------------------------- instances (seed 215-620)
@pytest.fixture
def vpcs(api):
    """The management VPC and 8 data VPCs of the seed, made over REST (their gcloud commands are tested above)."""
    api.create_vpc(PROJECT, PREFIX + '-mgmt-net', PREFIX + '-mgmt-sub', REGION, '192.168.0.0/24')
    for number in range(1, 9):
        api.create_vpc(PROJECT, '%s-data-net-%d' % (PREFIX, number), '%s-data-sub-%d' % (PREFIX, number), REGION, '192.168.%d.0/24' % number)
    return api


def nic_flags(data_nics):
    flags = ['--network-interface=nic-type=GVNIC,network=%s-mgmt-net,subnet=%s-mgmt-sub' % (PREFIX, PREFIX)]
    flags += ['--network-interface=nic-type=GVNIC,network=%s-data-net-%d,subnet=%s-data-sub-%d,no-address' % (PREFIX, n, PREFIX, n)
              for n in range(1, data_nics + 1)]
    return flags


def seed_create(name, machine_type, data_nics, *model_flags, track=()):
    """The seed's ``gcloud compute instances create`` with its fixed flags, plus one provisioning model's flags."""
    return [*track, 'compute', 'instances', 'create', name, '--project=' + PROJECT, '--zone=' + ZONE,
            '--machine-type=' + machine_type, '--maintenance-policy=TERMINATE', '--restart-on-failure',
            '--image-family=cos-121-lts', '--image-project=cos-cloud', '--boot-disk-size=50',
            '--metadata=cos-update-strategy=update_disabled', '--scopes=https://www.googleapis.com/auth/cloud-platform',
            *nic_flags(data_nics), *model_flags, '--format=json']


SPOT = ('--provisioning-model=SPOT', '--instance-termination-action=STOP')
# --request-valid-for-duration (seed) exists in no gcloud track of SDK 528, so it is left out; the API
# field it would set is Instance.params.requestValidForDuration.  FLEX_START is accepted only by alpha.
FLEX_START = ('--provisioning-model=FLEX_START', '--instance-termination-action=DELETE', '--max-run-duration=7d',
              '--reservation-affinity=none')
RESERVATION_BOUND = ('--provisioning-model=RESERVATION_BOUND', '--instance-termination-action=STOP',
                     '--reservation-affinity=specific', '--reservation=example-reservation')

INSTANCE_CASES = [
    # (test id, machine type, data NICs, provisioning model, flags, gcloud track)
    ('a3-mega-standard', 'a3-megagpu-8g', 8, 'STANDARD', (), ()),
    ('a3-mega-spot', 'a3-megagpu-8g', 8, 'SPOT', SPOT, ()),
    ('a3-mega-flex-start', 'a3-megagpu-8g', 8, 'FLEX_START', FLEX_START, ('alpha',)),
    ('a3-mega-reservation-bound', 'a3-megagpu-8g', 8, 'RESERVATION_BOUND', RESERVATION_BOUND, ()),
    ('a3-high-standard', 'a3-highgpu-8g', 4, 'STANDARD', (), ()),
    ('a3-edge-standard', 'a3-edgegpu-8g', 4, 'STANDARD', (), ()),
    ('a3-high-spot', 'a3-highgpu-8g', 4, 'SPOT', SPOT, ()),
    ('a3-edge-spot', 'a3-edgegpu-8g', 4, 'SPOT', SPOT, ()),
    ('a3-high-flex-start', 'a3-highgpu-8g', 4, 'FLEX_START', FLEX_START, ('alpha',)),
    ('a3-edge-flex-start', 'a3-edgegpu-8g', 4, 'FLEX_START', FLEX_START, ('alpha',)),
    ('a3-high-reservation-bound', 'a3-highgpu-8g', 4, 'RESERVATION_BOUND', RESERVATION_BOUND, ()),
]


@pytest.mark.parametrize('machine_type, data_nics, model, flags, track',
                         [case[1:] for case in INSTANCE_CASES], ids=[case[0] for case in INSTANCE_CASES])
def test_seed_instance_create(gcloud, sandbox, vpcs, machine_type, data_nics, model, flags, track):
    if model == 'RESERVATION_BOUND':
        reservation = created(gcloud('compute', 'reservations', 'create', 'example-reservation', '--project=' + PROJECT,
                                     '--zone=' + ZONE, '--machine-type=' + machine_type, '--vm-count=2', '--require-specific-reservation',
                                     '--format=json'))
        assert reservation['specificReservation']['count'] == '2'
        assert reservation['specificReservation']['instanceProperties']['machineType'] == machine_type
    instance = created(gcloud(*seed_create('vm-1', machine_type, data_nics, *flags, track=track)))

    assert instance['status'] == 'RUNNING'
    assert instance['machineType'].endswith('/zones/%s/machineTypes/%s' % (ZONE, machine_type))
    nics = instance['networkInterfaces']
    assert [nic['name'] for nic in nics] == ['nic%d' % index for index in range(1 + data_nics)]
    assert {nic['nicType'] for nic in nics} == {'GVNIC'}
    expected_networks = [PREFIX + '-mgmt-net'] + ['%s-data-net-%d' % (PREFIX, n) for n in range(1, data_nics + 1)]
    assert [nic['network'].rsplit('/', 1)[1] for nic in nics] == expected_networks
    for index, nic in enumerate(nics):
        assert ipaddress.ip_address(nic['networkIP']) in ipaddress.ip_network('192.168.%d.0/24' % index)
    assert nics[0]['accessConfigs'][0]['type'] == 'ONE_TO_ONE_NAT' and nics[0]['accessConfigs'][0]['natIP']
    assert all('accessConfigs' not in nic for nic in nics[1:]), 'no-address data NICs must have no external IP'
    boot = instance['disks'][0]
    assert boot['boot'] and boot['diskSizeGb'] == '50' and boot['source'].endswith('/disks/vm-1')
    assert instance['metadata']['items'] == [{'key': 'cos-update-strategy', 'value': 'update_disabled'}]
    assert instance['serviceAccounts'][0]['scopes'] == ['https://www.googleapis.com/auth/cloud-platform']
    scheduling = instance['scheduling']
    assert scheduling['onHostMaintenance'] == 'TERMINATE'
    assert scheduling['provisioningModel'] == model
    assert instance['guestAccelerators'][0]['acceleratorCount'] == 8
    if model == 'STANDARD':
        assert scheduling['automaticRestart'] is True
    if model == 'SPOT':
        # gcloud turns --restart-on-failure into automaticRestart=false for Spot VMs
        assert scheduling['automaticRestart'] is False and scheduling['instanceTerminationAction'] == 'STOP'
    if model == 'FLEX_START':
        assert scheduling['maxRunDuration'] == {'seconds': '604800'} and scheduling['instanceTerminationAction'] == 'DELETE'
        assert instance['reservationAffinity'] == {'consumeReservationType': 'NO_RESERVATION'}
    if model == 'RESERVATION_BOUND':
        assert instance['reservationAffinity'] == {'consumeReservationType': 'SPECIFIC_RESERVATION',
                                                   'key': 'compute.googleapis.com/reservation-name', 'values': ['example-reservation']}
        reservation = sandbox.resources('compute.reservations')[0]
        assert reservation['specificReservation']['inUseCount'] == '1'
    # the image family was sent as a family view and resolved to the newest cos-121-lts image
    assert any(COS_IMAGE in license_ or 'cos-121-lts' in license_ for license_ in boot['licenses'])


def test_instance_describe_matches_create(gcloud, vpcs):
    created(gcloud(*seed_create('vm-1', 'a3-highgpu-8g', 4)))
    described = json.loads(gcloud('compute', 'instances', 'describe', 'vm-1', '--project=' + PROJECT, '--zone=' + ZONE,
                                  '--format=json', check=True).stdout)
    assert described['name'] == 'vm-1' and described['status'] == 'RUNNING'
    assert len(described['networkInterfaces']) == 5


def test_requests_gcloud_sends_for_instance_create(gcloud, sandbox, vpcs):
    """gcloud GETs the zone, sends the image family as a zonal family view, then inserts and reads back."""
    before = len(sandbox.request_log())
    created(gcloud(*seed_create('vm-1', 'a3-megagpu-8g', 8)))
    log = sandbox.request_log()[before:]
    methods = [entry['api_method'] for entry in log]
    assert methods[0] == 'compute.zones.get'
    assert methods[-2:] == ['compute.instances.insert', 'compute.instances.get']
    insert = log[-2]['body']
    assert insert['disks'][0]['initializeParams']['sourceImage'].endswith('/projects/cos-cloud/zones/-/imageFamilyViews/cos-121-lts')
    assert insert['scheduling'] == {'automaticRestart': True, 'onHostMaintenance': 'TERMINATE'}


# ------------------------------------------------------------------------------ what GCE refuses
def refused(result, *fragments):
    assert result.returncode != 0, 'gcloud should have failed:\n' + result.stdout
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    return result.stderr


def test_two_nics_on_one_vpc_network_are_refused(gcloud, sandbox, vpcs):
    command = seed_create('vm-1', 'a3-highgpu-8g', 1)
    command.insert(-1, '--network-interface=nic-type=GVNIC,network=%s-data-net-1,subnet=%s-data-sub-1,no-address' % (PREFIX, PREFIX))
    refused(gcloud(*command), "Invalid value for field 'resource.networkInterfaces[2].network'",
            'Networks must be distinct for NICs attached to a VM.')
    assert sandbox.resources('compute.instances') == []


def test_more_nics_than_the_machine_type_allows_are_refused(gcloud, sandbox, vpcs):
    refused(gcloud(*seed_create('vm-1', 'a3-highgpu-8g', 5)),
            'The maximum number of network interfaces allowed for this machine type (a3-highgpu-8g) is 5.')
    assert sandbox.resources('compute.instances') == []


def test_a3_edge_reservation_bound_is_accepted(gcloud, sandbox, vpcs):
    """Seed 000's 予約で制限 tab says a3-edgegpu-8g does not support RESERVATION_BOUND; Google's current page
    (docs.cloud.google.com/compute/docs/instances/about-reservation-bound-instances) lists A3 Edge, and the sandbox
    follows the current page (issue 16, rule 3).  The reservation is made as the reservation-bound model needs it:
    one that only VMs naming it can consume (--require-specific-reservation)."""
    vpcs.must('POST', 'compute/v1/projects/%s/zones/%s/reservations' % (PROJECT, ZONE),
              {'name': 'example-reservation', 'specificReservationRequired': True,
               'specificReservation': {'count': 2, 'instanceProperties': {'machineType': 'a3-edgegpu-8g'}}})
    instance = created(gcloud(*seed_create('vm-1', 'a3-edgegpu-8g', 4, *RESERVATION_BOUND)))
    assert instance['scheduling']['provisioningModel'] == 'RESERVATION_BOUND'
    assert sandbox.resources('compute.reservations')[0]['specificReservation']['inUseCount'] == '1'


def test_reservation_bound_without_the_reservation_is_refused(gcloud, vpcs):
    refused(gcloud(*seed_create('vm-1', 'a3-megagpu-8g', 8, *RESERVATION_BOUND)), "reservations/example-reservation' does not exist")


def test_network_mtu_above_8896_is_refused(gcloud, sandbox):
    refused(gcloud('compute', 'networks', 'create', 'jumbo', '--subnet-mode=custom', '--mtu=9000'),
            "Invalid value for field 'resource.mtu': '9000'. Valid range is [1300, 8896].")
    assert sandbox.resources('compute.networks') == []


@pytest.mark.parametrize('nic_option, policy, message', [
    ('nic-type=VIRTIO_NET,', 'TERMINATE', 'Machine type a3-megagpu-8g requires gVNIC'),
    ('nic-type=GVNIC,', 'MIGRATE', 'Instances with guest accelerators do not support live migration.'),
], ids=['virtio-nic', 'live-migration'])
def test_a3_without_gvnic_or_with_live_migration_is_refused(gcloud, vpcs, nic_option, policy, message):
    command = seed_create('vm-1', 'a3-megagpu-8g', 0)
    command = [arg.replace('nic-type=GVNIC,', nic_option) if arg.startswith('--network-interface') else arg for arg in command]
    command = [arg.replace('--maintenance-policy=TERMINATE', '--maintenance-policy=' + policy) for arg in command]
    refused(gcloud(*command), message)


def test_overlapping_subnet_is_refused(gcloud, vpcs):
    refused(gcloud('compute', 'networks', 'subnets', 'create', 'overlap', '--network=%s-data-net-1' % PREFIX,
                   '--region=' + REGION, '--range=192.168.1.128/25'),
            "Invalid IPCidrRange: 192.168.1.128/25 conflicts with existing subnetwork '%s-data-sub-1' in region '%s'." % (PREFIX, REGION))


def test_network_in_use_cannot_be_deleted_and_batch_delete_works(gcloud, sandbox, vpcs):
    for name in ('vm-1', 'vm-2'):  # made over REST: only the delete commands are under test here
        vpcs.must('POST', 'compute/v1/projects/%s/zones/%s/instances' % (PROJECT, ZONE), {
            'name': name, 'machineType': 'zones/%s/machineTypes/e2-standard-4' % ZONE,
            'disks': [{'boot': True, 'initializeParams': {'sourceImage': 'projects/cos-cloud/global/images/family/cos-121-lts'}}],
            'networkInterfaces': [{'subnetwork': 'regions/%s/subnetworks/%s-data-sub-1' % (REGION, PREFIX)}]})
    refused(gcloud('compute', 'networks', 'delete', PREFIX + '-data-net-1', '--quiet'),
            "The network resource 'projects/%s/global/networks/%s-data-net-1' is already being used by" % (PROJECT, PREFIX))
    # Deleting two VMs in one command goes through Google's batch endpoint.
    gcloud('compute', 'instances', 'delete', 'vm-1', 'vm-2', '--zone=' + ZONE, '--quiet', check=True)
    assert sandbox.resources('compute.instances') == []
    assert len(sandbox.request_log('compute.instances.delete')) == 2


def test_bulk_create_reports_the_created_instances(gcloud, sandbox, vpcs):
    """``instances bulk create`` finds its VMs by listing operations filtered on operationGroupId."""
    result = json.loads(gcloud('compute', 'instances', 'bulk', 'create', '--name-pattern=vm-#', '--count=2', '--zone=' + ZONE,
                               '--machine-type=e2-standard-4', '--image-family=cos-121-lts', '--image-project=cos-cloud',
                               '--network-interface=network=%s-mgmt-net,subnet=%s-mgmt-sub' % (PREFIX, PREFIX), '--format=json',
                               check=True).stdout)
    assert result['createdInstanceCount'] == 2 and result['failedInstanceCount'] == 0
    assert sorted(vm['name'] for vm in result['instances']) == ['vm-1', 'vm-2']
    assert sorted(vm['name'] for vm in sandbox.resources('compute.instances')) == ['vm-1', 'vm-2']
