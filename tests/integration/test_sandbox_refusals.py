"""The refusals of issue 16 that a real user meets first, each with the request, the real status code,
reason and message shape, and the source it comes from (cited here and beside the rule in
tests/sandbox/*.py).  Driven over REST; the ones gcloud can send are also driven through the real gcloud
CLI (test_refusals_through_gcloud).  Where no public report quotes the real wording, the rule's comment
says "wording: the sandbox's" and the test checks the status, reason and field, not the sentence.
"""

import json

import pytest

PROJECT = 'sandbox-project'
ZONE = 'us-central1-a'
REGION = 'us-central1'
P = 'compute/v1/projects/' + PROJECT
COS = 'projects/cos-cloud/global/images/family/cos-121-lts'


def error_of(response, status=400, reason='invalid'):
    assert response.status == status, response
    error = response.body['error']
    assert error['code'] == status and error['errors'][0]['reason'] == reason, error
    return error


@pytest.fixture
def nets(api):
    for number in range(3):
        api.create_vpc(PROJECT, 'net-%d' % number, 'sub-%d' % number, REGION, '10.0.%d.0/24' % number)
    return api


def vm(name='vm', machine='a3-highgpu-8g', nics=None, scheduling=None, disks=None, zone=ZONE, **extra):
    body = {'name': name, 'machineType': 'zones/%s/machineTypes/%s' % (zone, machine),
            'disks': disks if disks is not None else [{'boot': True, 'initializeParams': {'sourceImage': COS}}],
            'networkInterfaces': nics if nics is not None else [{'network': 'global/networks/net-0', 'subnetwork': 'regions/%s/subnetworks/sub-0' % REGION}],
            'scheduling': scheduling if scheduling is not None else {'onHostMaintenance': 'TERMINATE'}}
    body.update(extra)
    return body


def insert(api, body, zone=ZONE, query=''):
    return api.post('%s/zones/%s/instances%s' % (P, zone, query), body)


# ------------------------------------------------------------------------ 1. GPU VM without onHostMaintenance
def test_gpu_vm_without_on_host_maintenance_is_refused(nets, sandbox):
    """The API's default is MIGRATE (Scheduling.onHostMaintenance); GPU VMs refuse live migration: 400 badRequest,
    bare sentence (cloud-barista/cb-spider#1125, loft-sh/devpod#973)."""
    error = error_of(insert(nets, vm(scheduling={})), reason='badRequest')
    assert error['message'] == 'Instances with guest accelerators do not support live migration.'
    assert sandbox.resources('compute.instances') == []


# --------------------------------------------------------------------------- 2. machine types per zone
@pytest.mark.parametrize('machine, zone', [('a3-ultragpu-8g', 'us-central1-a'), ('a4-highgpu-8g', 'australia-southeast1-c'),
                                           ('a3-megagpu-8g', 'us-west2-a')])
def test_machine_type_not_offered_in_the_zone(nets, machine, zone):
    """Zones of the GPU locations page (tests/sandbox/data/locations.json); the real wording for an unknown type."""
    error = error_of(insert(nets, vm(machine=machine, zone=zone, nics=[{'network': 'global/networks/net-0'}]), zone))
    assert error['message'] == ("Invalid value for field 'resource.machineType': 'zones/%s/machineTypes/%s'. "
                                "Machine type with name '%s' does not exist in zone '%s'." % (zone, machine, machine, zone))


def test_real_zones_outside_the_old_catalog_exist(api):
    """Issue 16 rule 8: australia-southeast1-c (and every zone of the public region list) is served."""
    assert api.get(P + '/zones/australia-southeast1-c').body['region'].endswith('/regions/australia-southeast1')
    assert len(api.get(P + '/regions').body['items']) == 42
    assert api.get(P + '/zones/australia-southeast1-c/machineTypes/a3-highgpu-8g').status == 200


# ------------------------------------------------------------------------------------------- 3. quotas
def test_networks_quota_is_a_synchronous_403(api, sandbox):
    """403 quotaExceeded, domain usageLimits, "Quota 'NETWORKS' exceeded. Limit: 5.0 globally." (trailofbits/algo#1520);
    the limit is configurable per project."""
    sandbox.set_quota('NETWORKS', 2, project=PROJECT)
    for number in range(2):
        api.must('POST', P + '/global/networks', {'name': 'n%d' % number, 'autoCreateSubnetworks': False})
    error = error_of(api.post(P + '/global/networks', {'name': 'n2', 'autoCreateSubnetworks': False}), 403, 'quotaExceeded')
    assert error['message'] == "Quota 'NETWORKS' exceeded. Limit: 2.0 globally." and error['errors'][0]['domain'] == 'usageLimits'
    assert api.get(P).body['quotas'] == [{'metric': 'NETWORKS', 'limit': 2.0, 'usage': 2.0}]
    # another project keeps the documented default of 15
    assert api.post('compute/v1/projects/other-project/global/networks', {'name': 'n2', 'autoCreateSubnetworks': False}).status == 200


def test_gpu_quota_per_region_through_the_control_endpoint(nets, sandbox):
    """GPU quota per region (NVIDIA_H100_GPUS for A3 High), set over HTTP like a test harness outside the process would."""
    nets.must('POST', '_sandbox/quotas', {'metric': 'NVIDIA_H100_GPUS', 'limit': 8, 'project': PROJECT, 'region': REGION})
    assert insert(nets, vm('first')).status == 200
    error = error_of(insert(nets, vm('second')), 403, 'quotaExceeded')
    assert error['message'] == "Quota 'NVIDIA_H100_GPUS' exceeded. Limit: 8.0 in region us-central1."
    region = nets.get(P + '/regions/' + REGION).body
    assert {'metric': 'NVIDIA_H100_GPUS', 'limit': 8.0, 'usage': 8.0} in region['quotas']
    assert insert(nets, vm('elsewhere', zone='us-east4-a', nics=[{'network': 'global/networks/net-0'}]), 'us-east4-a').status != 403
    nets.must('DELETE', '_sandbox/quotas')
    assert insert(nets, vm('second')).status == 200


# ------------------------------------------------------------------------------------------ 4. reservations
def reservation(api, name='res', machine='a3-highgpu-8g', count=1, specific=True):
    api.must('POST', '%s/zones/%s/reservations' % (P, ZONE),
             {'name': name, 'specificReservationRequired': specific,
              'specificReservation': {'count': count, 'instanceProperties': {'machineType': machine}}})


def affinity(name='res'):
    return {'consumeReservationType': 'SPECIFIC_RESERVATION', 'key': 'compute.googleapis.com/reservation-name', 'values': [name]}


def test_reservation_refusals(nets, sandbox):
    key = 'projects/%s/zones/%s/reservations/' % (PROJECT, ZONE)
    reservation(nets, 'mega', machine='a3-megagpu-8g')
    # machine type mismatch: "Reservation X is incorrect for the requested resources" (kubernetes/autoscaler#6006)
    error = error_of(insert(nets, vm(reservationAffinity=affinity('mega'))))
    assert error['message'].endswith('Reservation %smega is incorrect for the requested resources.' % key)
    # over-consumption: "Reservation X does not have sufficient capacity for the requested resources." (autoscaler#7319)
    reservation(nets, 'one', count=1)
    assert insert(nets, vm('a', reservationAffinity=affinity('one'))).status == 200
    error = error_of(insert(nets, vm('b', reservationAffinity=affinity('one'))))
    assert error['message'].endswith('Reservation %sone does not have sufficient capacity for the requested resources.' % key)
    # a reservation without specificReservationRequired cannot be named (superserve-ai/sandbox#238)
    reservation(nets, 'open', specific=False)
    error = error_of(insert(nets, vm('c', reservationAffinity=affinity('open'))))
    assert error['message'].endswith('can not be targeted as specificReservationRequired is not set.')
    assert [item['name'] for item in sandbox.resources('compute.instances')] == ['a']


# ------------------------------------------------------------------------------------------ 5. disk types
def test_disk_types(nets, sandbox):
    boot = {'boot': True, 'initializeParams': {'sourceImage': COS, 'diskType': 'zones/%s/diskTypes/pd-fancy' % ZONE}}
    error = error_of(insert(nets, vm(disks=[boot])))
    # real wording (broadinstitute/cromwell#3776)
    assert error['message'] == ("Invalid value for field 'resource.disks[0].initializeParams.diskType': 'zones/%s/diskTypes/pd-fancy'. "
                                'The referenced diskType resource cannot be found.' % ZONE)
    # A3 Ultra takes Hyperdisk only (accelerator-optimized machines page); real sentence (DataBiosphere/dsub#301)
    ultra = {'boot': True, 'initializeParams': {'sourceImage': COS, 'diskType': 'zones/us-central1-b/diskTypes/pd-balanced'}}
    nics = [{'network': 'global/networks/net-0', 'subnetwork': 'regions/%s/subnetworks/sub-0' % REGION}]
    error = error_of(insert(nets, vm(machine='a3-ultragpu-8g', zone='us-central1-b', disks=[ultra], nics=nics), 'us-central1-b'))
    assert error['message'] == '[pd-balanced, a3-ultragpu-8g] features are not compatible for creating instance.'
    assert sandbox.resources('compute.instances') == []


def test_blank_data_disks_and_scratch_local_ssd_are_valid(nets, sandbox):
    """Issue 16 rule 6 corrected: only a boot disk needs an image or a source."""
    disks = [{'boot': True, 'initializeParams': {'sourceImage': COS}},
             {'initializeParams': {'diskSizeGb': '500', 'diskType': 'zones/%s/diskTypes/pd-ssd' % ZONE}},
             {'type': 'SCRATCH', 'interface': 'NVME', 'initializeParams': {'diskType': 'zones/%s/diskTypes/local-ssd' % ZONE}}]
    assert insert(nets, vm(disks=disks)).status == 200
    stored = sandbox.resources('compute.instances')[0]['disks']
    assert [(disk['type'], disk['diskSizeGb']) for disk in stored] == [('PERSISTENT', '10'), ('PERSISTENT', '500'), ('SCRATCH', '375')]
    error = error_of(insert(nets, vm('no-boot', disks=[{'boot': True, 'initializeParams': {'diskSizeGb': '50'}}])))
    assert error['message'].startswith("Invalid value for field 'resource.disks[0].source'")


# ----------------------------------------------------------------------------------------- 6. firewalls
FW = P + '/global/firewalls'


def test_firewall_refusals(nets):
    base = {'network': 'global/networks/net-0', 'allowed': [{'IPProtocol': 'tcp', 'ports': ['22']}]}
    error = error_of(nets.post(FW, dict(base, name='egress-tags', direction='EGRESS', sourceTags=['web'])), reason='badRequest')
    assert error['message'] == 'Should not specify source tag or service account for egress direction.'   # mchmarny/grunner#6
    error = error_of(nets.post(FW, {'name': 'nothing', 'network': 'global/networks/net-0'}))
    assert error['message'].startswith("Invalid value for field 'resource.allowed'")
    error = error_of(nets.post(FW, dict(base, name='both', denied=[{'IPProtocol': 'udp'}])))
    assert error['message'].startswith("Invalid value for field 'resource.allowed'")
    error = error_of(nets.post(FW, dict(base, name='icmp-ports', allowed=[{'IPProtocol': 'icmp', 'ports': ['8']}])))
    assert error['message'].startswith("Invalid value for field 'resource.allowed[0].ports': '8'.")
    error = error_of(nets.post(FW, dict(base, name='prio', priority=70000)))
    assert error['message'].startswith("Invalid value for field 'resource.priority': '70000'.")
    error = error_of(nets.post(FW, dict(base, name='proto', allowed=[{'IPProtocol': 'ipv6-icmp'}])))
    assert error['message'] == ("Invalid value for field 'resource.allowed[0].IPProtocol': 'ipv6-icmp'. Must be one of [\"ah\", \"all\", "
                                "\"esp\", \"icmp\", \"ipip\", \"sctp\", \"tcp\", \"udp\"] or an IP protocol number between 0 and 255.")
    assert nets.post(FW, dict(base, name='fine', priority=65535, sourceRanges=['10.0.0.0/8'])).status == 200


# ---------------------------------------------------------------------------------- 7. provisioning models
def test_flex_start_needs_run_duration_and_termination_action(nets, sandbox):
    flex = {'provisioningModel': 'FLEX_START', 'onHostMaintenance': 'TERMINATE', 'instanceTerminationAction': 'DELETE'}
    error = error_of(insert(nets, vm(scheduling=flex, reservationAffinity={'consumeReservationType': 'NO_RESERVATION'})))
    assert error['message'].startswith("Invalid value for field 'resource.scheduling.maxRunDuration'")
    flex = {'provisioningModel': 'FLEX_START', 'onHostMaintenance': 'TERMINATE', 'maxRunDuration': {'seconds': '3600'}}
    error = error_of(insert(nets, vm(scheduling=flex)))
    assert error['message'].startswith("Invalid value for field 'resource.scheduling.instanceTerminationAction'")
    error = error_of(insert(nets, vm(scheduling={'provisioningModel': 'STANDARD', 'preemptible': True, 'onHostMaintenance': 'TERMINATE',
                                                 'automaticRestart': False})))
    assert error['message'].startswith("Invalid value for field 'resource.scheduling.preemptible': 'true'.")
    assert sandbox.resources('compute.instances') == []


# ------------------------------------------------------------------------------- 8. addresses and ranges
def test_network_ip_outside_the_subnet(nets):
    nics = [{'network': 'global/networks/net-0', 'subnetwork': 'regions/%s/subnetworks/sub-0' % REGION, 'networkIP': '10.9.9.9'}]
    error = error_of(insert(nets, vm(nics=nics)))
    assert error['message'].startswith("Invalid value for field 'resource.networkInterfaces[0].networkIP': '10.9.9.9'.")


def test_subnet_out_of_addresses_fails_the_operation(nets, sandbox):
    """Issue 16 rule 5: not a synchronous 400 -- the insert operation ends with IP_SPACE_EXHAUSTED_WITH_DETAILS, HTTP 400
    "BAD REQUEST", the real message (Privatehive/gcp-hosted-github-runner#7) and errorDetails."""
    nets.create_vpc(PROJECT, 'tiny-net', 'tiny-sub', REGION, '10.50.0.0/29')   # 8 addresses, 4 usable
    nics = [{'network': 'global/networks/tiny-net', 'subnetwork': 'regions/%s/subnetworks/tiny-sub' % REGION}]
    for number in range(4):
        assert insert(nets, vm('e%d' % number, 'e2-standard-4', nics=nics, scheduling={})).status == 200
    operation = insert(nets, vm('e4', 'e2-standard-4', nics=nics, scheduling={}))
    assert operation.status == 200 and operation.body['status'] == 'DONE'
    error = operation.body['error']['errors'][0]
    assert error['code'] == 'IP_SPACE_EXHAUSTED_WITH_DETAILS'
    assert error['message'].startswith("IP space of 'projects/%s/regions/%s/subnetworks/tiny-sub' is exhausted. Insufficient free IP "
                                       "addresses in the IP range '10.50.0.0/29'." % (PROJECT, REGION))
    assert error['errorDetails'][0]['errorInfo']['reason'] == 'IP_SPACE_EXHAUSTED'
    assert (operation.body['httpErrorStatusCode'], operation.body['httpErrorMessage']) == (400, 'BAD REQUEST')
    assert 'e4' not in [item['name'] for item in sandbox.resources('compute.instances')]


@pytest.mark.parametrize('secondaries, field', [
    ([{'rangeName': 'pods', 'ipCidrRange': '10.5.0.128/25'}], 'secondaryIpRanges[0].ipCidrRange'),           # overlaps the primary
    ([{'ipCidrRange': '10.6.0.0/24'}], 'secondaryIpRanges[0].rangeName'),                                     # missing rangeName
    ([{'rangeName': 'pods', 'ipCidrRange': '10.6.0.0/24'}, {'rangeName': 'pods', 'ipCidrRange': '10.7.0.0/24'}],
     'secondaryIpRanges[1].rangeName'),                                                                        # duplicate rangeName
    ([{'rangeName': 'pods', 'ipCidrRange': '127.1.0.0/16'}], 'secondaryIpRanges[0].ipCidrRange'),             # loopback range
])
def test_secondary_range_refusals(nets, secondaries, field):
    body = {'name': 's', 'network': 'global/networks/net-1', 'ipCidrRange': '10.5.0.0/24', 'secondaryIpRanges': secondaries}
    error = error_of(nets.post(P + '/regions/%s/subnetworks' % REGION, body))
    assert error['message'].startswith("Invalid value for field 'resource.%s'" % field)


def test_primary_range_in_127_is_refused(nets):
    error = error_of(nets.post(P + '/regions/%s/subnetworks' % REGION, {'name': 's', 'network': 'global/networks/net-1', 'ipCidrRange': '127.0.0.0/24'}))
    assert error['message'].startswith("Invalid value for field 'resource.ipCidrRange': '127.0.0.0/24'.")


def test_secondary_range_overlapping_another_subnet_has_the_real_wording(nets):
    """terraform-google-modules/terraform-google-network#20 quotes it."""
    body = {'name': 's', 'network': 'global/networks/net-1', 'ipCidrRange': '10.5.0.0/24',
            'secondaryIpRanges': [{'rangeName': 'pods', 'ipCidrRange': '10.0.1.0/24'}]}
    error = error_of(nets.post(P + '/regions/%s/subnetworks' % REGION, body))
    assert error['message'] == ("Invalid value for field 'resource.secondaryIpRanges[0].ipCidrRange': '10.0.1.0/24'. Invalid IPCidrRange: "
                                "10.0.1.0/24 conflicts with existing subnetwork 'sub-1' in region 'us-central1'.")


# ------------------------------------------------------------------------------ 10. labels, project, requestId
def test_label_format(nets):
    for labels, field in (({'Team': 'a'}, 'labels'), ({'team': 'A B'}, 'labels.team'), ({'1team': 'a'}, 'labels')):
        error = error_of(insert(nets, vm(labels=labels)))
        assert error['message'].startswith("Invalid value for field 'resource.%s'" % field), labels
    assert insert(nets, vm(labels={'team': 'ml-infra', 'cost_center': ''})).status == 200


def test_project_id_format(api):
    """Path parameters are checked against the discovery pattern: 400 invalidParameter, "Invalid value 'X'. Values must
    match the following regular expression: '...'" (perkeep/perkeep#571)."""
    error = error_of(api.get('compute/v1/projects/My%20Project/global/networks'), reason='invalidParameter')
    assert error['message'].startswith("Invalid value 'My Project'. Values must match the following regular expression: '")


@pytest.mark.parametrize('request_id', ['not-a-uuid', '00000000-0000-0000-0000-000000000000'])
def test_request_id_must_be_a_uuid(api, request_id):
    """compute.v1 discovery document, requestId: "must be a valid UUID with the exception that zero UUID is not supported"."""
    error = error_of(api.post(P + '/global/networks?requestId=' + request_id, {'name': 'n', 'autoCreateSubnetworks': False}))
    assert error['message'].startswith("Invalid value for field 'requestId': '%s'." % request_id)


# ------------------------------------------------------------------------ corrected wording and shapes
def test_deletion_protection_wording(nets):
    assert insert(nets, vm(deletionProtection=True)).status == 200
    error = error_of(nets.delete(P + '/zones/%s/instances/vm' % ZONE), reason='invalidResourceUsage')
    assert error['message'] == "Invalid resource usage: 'Resource cannot be deleted if it's protected against deletion.'."   # terraform-provider-google#1211


def test_operation_errors_carry_error_details(nets, sandbox):
    sandbox.inject_fault('compute.instances.insert', 'ZONE_RESOURCE_POOL_EXHAUSTED', count=1)
    error = insert(nets, vm()).body['error']['errors'][0]
    assert error['code'] == 'ZONE_RESOURCE_POOL_EXHAUSTED' and error['errorDetails'][0]['errorInfo']['domain'] == 'compute.googleapis.com'


def test_gke_errors_carry_request_info(api):
    response = api.get('v1/projects/%s/locations/%s/clusters/nope' % (PROJECT, ZONE))
    assert response.status == 404
    detail = response.body['error']['details'][0]
    assert detail['@type'] == 'type.googleapis.com/google.rpc.RequestInfo' and detail['requestId'].startswith('0x')


# ------------------------------------------------------------------------------------- through gcloud
def test_refusals_through_gcloud(gcloud, sandbox):
    """The refusals above that gcloud can send, sent by the real gcloud CLI: the error gcloud prints is the sandbox's."""
    sandbox.set_quota('NETWORKS', 1, project=PROJECT)
    assert gcloud('compute', 'networks', 'create', 'net-a', '--subnet-mode=custom').returncode == 0
    result = gcloud('compute', 'networks', 'create', 'net-b', '--subnet-mode=custom')
    assert result.returncode != 0 and "Quota 'NETWORKS' exceeded. Limit: 1.0 globally." in result.stderr, result.stderr
    result = gcloud('compute', 'firewall-rules', 'create', 'egress', '--network=net-a', '--direction=EGRESS', '--action=ALLOW',
                    '--rules=tcp:22', '--source-tags=web')
    assert result.returncode != 0 and 'Should not specify source tag or service account for egress direction.' in result.stderr, result.stderr
    assert gcloud('compute', 'networks', 'subnets', 'create', 'sub-a', '--network=net-a', '--region=' + REGION, '--range=10.0.0.0/24').returncode == 0
    # a GPU VM without --maintenance-policy: the API default MIGRATE is refused
    result = gcloud('compute', 'instances', 'create', 'gpu', '--zone=' + ZONE, '--machine-type=a3-highgpu-8g', '--image-family=cos-121-lts',
                    '--image-project=cos-cloud', '--network-interface=nic-type=GVNIC,network=net-a,subnet=sub-a')
    assert result.returncode != 0 and 'Instances with guest accelerators do not support live migration.' in result.stderr, result.stderr
    # a machine type the zone does not offer (GPU locations page)
    result = gcloud('compute', 'instances', 'create', 'ultra', '--zone=' + ZONE, '--machine-type=a3-ultragpu-8g', '--image-family=cos-121-lts',
                    '--image-project=cos-cloud', '--maintenance-policy=TERMINATE', '--network-interface=nic-type=GVNIC,network=net-a,subnet=sub-a')
    assert result.returncode != 0 and "Machine type with name 'a3-ultragpu-8g' does not exist in zone 'us-central1-a'." in result.stderr, result.stderr
    assert json.loads(gcloud('compute', 'instances', 'list', '--format=json').stdout) == []
    # deletion protection, with the real wording
    assert gcloud('compute', 'instances', 'create', 'kept', '--zone=' + ZONE, '--machine-type=e2-standard-4', '--image-family=cos-121-lts',
                  '--image-project=cos-cloud', '--network-interface=network=net-a,subnet=sub-a', '--deletion-protection').returncode == 0
    result = gcloud('compute', 'instances', 'delete', 'kept', '--zone=' + ZONE, '--quiet')
    protected = "Invalid resource usage: 'Resource cannot be deleted if it's protected against deletion.'."
    assert result.returncode != 0 and protected in result.stderr, result.stderr


def test_gvnic_needs_an_image_with_the_gvnic_feature(nets, sandbox):
    """"This boot disk source does not support gVNIC." (siderolabs/pkgs#1295): the real refusal behind A3's gVNIC rule is
    about the image, and an A3 NIC without nicType is a gVNIC NIC."""
    disks = [{'boot': True, 'initializeParams': {'sourceImage': 'projects/sandbox-images/global/images/family/imported-no-gvnic'}}]
    error = error_of(insert(nets, vm(disks=disks)))
    assert error['message'] == 'This boot disk source does not support gVNIC.'
    assert insert(nets, vm('virtio', 'e2-standard-4', disks=disks, scheduling={})).status == 200, 'VIRTIO_NET VMs take the image'


def test_custom_subnet_in_an_auto_mode_network_stays_out_of_10_128_0_0_9(api):
    """"Extended subnetworks in auto subnet mode networks cannot overlap with 10.128.0.0/9." (bosh-google-cpi-release#238)"""
    api.must('POST', P + '/global/networks', {'name': 'auto', 'autoCreateSubnetworks': True})
    error = error_of(api.post(P + '/regions/us-east4/subnetworks', {'name': 'extra', 'network': 'global/networks/auto', 'ipCidrRange': '10.200.0.0/16'}))
    assert error['message'] == ("Invalid value for field 'resource.ipCidrRange': '10.200.0.0/16'. "
                                'Extended subnetworks in auto subnet mode networks cannot overlap with 10.128.0.0/9.')
