"""instances.bulkInsert in the sandbox: the request shape checked against the compute.v1 discovery document,
the refusals the real API makes (tests/sandbox/bulk.py cites each), zone capacity, and the real gcloud's
``compute instances bulk create`` with the seed's A3 Mega NICs."""

import json

import pytest

from sandbox.discovery import load_document

PROJECT = 'sandbox-project'
REGION = 'us-central1'
ZONE = 'us-central1-a'
BULK = 'compute/v1/projects/%s/zones/%s/instances/bulkInsert' % (PROJECT, ZONE)
MEGA = 'a3-megagpu-8g'
PROPERTIES = {
    'machineType': MEGA,
    'scheduling': {'onHostMaintenance': 'TERMINATE', 'automaticRestart': True},
    'disks': [{'boot': True, 'autoDelete': True, 'initializeParams': {'sourceImage': 'projects/cos-cloud/global/images/family/cos-121-lts'}}],
    'networkInterfaces': [{'subnetwork': 'regions/%s/subnetworks/b-mgmt-sub' % REGION, 'nicType': 'GVNIC'}]
    + [{'subnetwork': 'regions/%s/subnetworks/b-data-sub-%d' % (REGION, n), 'nicType': 'GVNIC'} for n in range(1, 9)],
}


@pytest.fixture
def fabric(api):
    api.create_vpc(PROJECT, 'b-mgmt-net', 'b-mgmt-sub', REGION, '192.168.0.0/24')
    for n in range(1, 9):
        api.create_vpc(PROJECT, 'b-data-net-%d' % n, 'b-data-sub-%d' % n, REGION, '192.168.%d.0/24' % n)
    return api


def names(sandbox):
    return sorted(vm['name'] for vm in sandbox.resources('compute.instances'))


def group(api, operation):
    query = '?filter=operationGroupId+eq+%%22%s%%22' % operation['operationGroupId']
    return api.get('compute/v1/projects/%s/zones/%s/operations%s' % (PROJECT, ZONE, query)).body.get('items', [])


def test_the_request_gcloud_sends_is_a_bulk_insert_instance_resource_of_the_discovery_document(gcloud, sandbox, fabric):
    """gcloud's body uses only fields of BulkInsertInstanceResource / InstanceProperties, machineType as a name, and
    perInstanceProperties keyed by the names; the sandbox answers with what gcloud reads back."""
    result = gcloud('compute', 'instances', 'bulk', 'create', '--predefined-names=mega-1,mega-2,mega-3', '--zone=' + ZONE,
                    '--machine-type=' + MEGA, '--maintenance-policy=TERMINATE', '--restart-on-failure', '--image-family=cos-121-lts',
                    '--image-project=cos-cloud', '--boot-disk-size=50', '--metadata=cos-update-strategy=update_disabled',
                    '--scopes=https://www.googleapis.com/auth/cloud-platform',
                    '--network-interface=nic-type=GVNIC,network=b-mgmt-net,subnet=b-mgmt-sub',
                    *['--network-interface=nic-type=GVNIC,network=b-data-net-%d,subnet=b-data-sub-%d,no-address' % (n, n) for n in range(1, 9)],
                    '--format=json', check=True)
    report = json.loads(result.stdout)
    assert (report['createdInstanceCount'], report['failedInstanceCount']) == (3, 0)
    assert sorted(vm['name'] for vm in report['instances']) == ['mega-1', 'mega-2', 'mega-3'] == names(sandbox)
    body = sandbox.request_log('compute.instances.bulkInsert')[0]['body']
    schemas = load_document('compute.v1.json')['schemas']
    assert set(body) <= set(schemas['BulkInsertInstanceResource']['properties'])
    assert set(body['instanceProperties']) <= set(schemas['InstanceProperties']['properties'])
    assert body['instanceProperties']['machineType'] == MEGA and body['count'] in ('3', 3) and body['minCount'] in ('3', 3)
    assert sorted(body['perInstanceProperties']) == ['mega-1', 'mega-2', 'mega-3'] and 'namePattern' not in body
    stored = {vm['name']: vm for vm in sandbox.resources('compute.instances')}
    addresses = [nic['networkIP'] for vm in stored.values() for nic in vm['networkInterfaces']]
    assert len(addresses) == 27 == len(set(addresses))   # 9 NICs each, no address given twice
    assert all(vm['status'] == 'RUNNING' and len(vm['guestAccelerators']) == 1 for vm in stored.values())


def test_gcloud_name_pattern_numbers_after_the_biggest_existing_name(gcloud, sandbox, fabric):
    flags = ('--zone=' + ZONE, '--machine-type=' + MEGA, '--maintenance-policy=TERMINATE', '--image-family=cos-121-lts',
             '--image-project=cos-cloud', '--network-interface=nic-type=GVNIC,subnet=b-mgmt-sub', '--format=json')
    fabric.must('POST', BULK, dict(count='1', perInstanceProperties={'node-007': {}}, instanceProperties=PROPERTIES))
    report = json.loads(gcloud('compute', 'instances', 'bulk', 'create', '--name-pattern=node-###', '--count=2', *flags, check=True).stdout)
    assert sorted(vm['name'] for vm in report['instances']) == ['node-008', 'node-009']


def test_gcloud_reports_a_partial_bulk_and_refuses_below_min_count(gcloud, sandbox, fabric):
    """With room for 2 and --min-count=2 of 3, two VMs are made and gcloud counts one failed; with room for 1 the request
    is refused before it starts (503 insufficientCapacity) and gcloud says so."""
    flags = ('--zone=' + ZONE, '--machine-type=' + MEGA, '--maintenance-policy=TERMINATE', '--image-family=cos-121-lts',
             '--image-project=cos-cloud', '--network-interface=nic-type=GVNIC,subnet=b-mgmt-sub', '--format=json')
    sandbox.set_capacity(ZONE, MEGA, 2)
    report = json.loads(gcloud('compute', 'instances', 'bulk', 'create', '--predefined-names=a,b,c', '--min-count=2', *flags,
                               check=True).stdout)
    assert (report['createdInstanceCount'], report['failedInstanceCount']) == (2, 1)
    assert names(sandbox) == ['a', 'b']
    sandbox.set_capacity(ZONE, MEGA, 1)
    # gcloud collects the refusal and prints it as an ERROR line (exit status 0: its own choice, bulk/create.py Epilog).
    refused = gcloud('compute', 'instances', 'bulk', 'create', '--predefined-names=d,e', *flags[:-1])
    assert "ERROR: The zone 'projects/%s/zones/%s' does not have enough resources available" % (PROJECT, ZONE) in refused.stderr, refused.stderr
    assert [entry['status'] for entry in sandbox.request_log('compute.instances.bulkInsert')] == [200, 503]
    assert names(sandbox) == ['a', 'b']


@pytest.mark.parametrize('change, status, words', [
    ({'perInstanceProperties': None, 'namePattern': None}, 400, 'Either namePattern or perInstanceProperties must be set'),
    ({'perInstanceProperties': None, 'namePattern': 'n-##-##', 'count': '2'}, 400, 'one continuous sequence'),
    ({'perInstanceProperties': None, 'namePattern': 'n-' + '#' * 19, 'count': '2'}, 400, 'at most 18'),
    ({'perInstanceProperties': None, 'namePattern': 'n-#', 'count': None}, 400, 'must be given with a name pattern'),
    ({'count': '1'}, 400, 'less than the 2 names'),
    ({'count': '3'}, 400, 'A name pattern is required'),
    ({'minCount': '3'}, 400, 'between 1 and count'),
    ({'minCount': '0'}, 400, 'between 1 and count'),
    ({'perInstanceProperties': None, 'namePattern': 'n-####', 'count': '5001'}, 400, 'between 1 and 5000'),
    ({'sourceInstanceTemplate': 'global/instanceTemplates/t'}, 400, 'instance template cannot be found'),
    ({'instanceProperties': None}, 400, 'instanceProperties is required'),
    ({'instanceProperties': dict(PROPERTIES, resourcePolicies=['regions/us-central1/resourcePolicies/p'])}, 400, 'by name, not URL'),
    ({'instanceProperties': dict(PROPERTIES, name='x')}, 400, 'Unknown name "name"'),   # InstanceProperties has no name
    ({'instanceProperties': dict(PROPERTIES, params={})}, 400, 'Unknown name "params"'),   # nor params (flex-start's duration)
    ({'count': 'two'}, 400, 'TYPE_INT64'),
    ({'perInstanceProperties': {'Bad_Name': {}, 'b': {}}}, 400, 'Bad_Name'),
])
def test_refusals(sandbox, fabric, change, status, words):
    body = {'count': '2', 'perInstanceProperties': {'a': {}, 'b': {}}, 'instanceProperties': PROPERTIES}
    body.update(change)
    body = {key: value for key, value in body.items() if value is not None}
    answer = fabric.post(BULK, body)
    assert answer.status == status and words in answer.body['error']['message'], answer.body
    assert names(sandbox) == []


def test_an_existing_name_is_refused_and_nothing_is_made(sandbox, fabric):
    fabric.must('POST', BULK, {'perInstanceProperties': {'a': {}}, 'instanceProperties': PROPERTIES})
    answer = fabric.post(BULK, {'count': '2', 'perInstanceProperties': {'b': {}, 'a': {}}, 'instanceProperties': PROPERTIES})
    assert answer.status == 409 and answer.body['error']['errors'][0]['reason'] == 'alreadyExists'
    assert names(sandbox) == ['a']


def test_a_machine_type_url_ends_in_internal_error_with_nothing_made(sandbox, fabric):
    properties = dict(PROPERTIES, machineType='zones/%s/machineTypes/%s' % (ZONE, MEGA))
    operation = fabric.must('POST', BULK, {'count': '2', 'perInstanceProperties': {'a': {}, 'b': {}}, 'instanceProperties': properties})
    assert operation['status'] == 'DONE' and operation['error']['errors'][0]['code'] == 'INTERNAL_ERROR'
    assert names(sandbox) == []


def test_capacity_decides_how_many_are_made(sandbox, fabric):
    """Room for 3 of 5 with minCount 1: three made (in request order), each with its insert operation in the group,
    and the bulk operation's per-location counts; room for 0: refused before it starts, 503 insufficientCapacity."""
    sandbox.set_capacity(ZONE, MEGA, 3)
    operation = fabric.must('POST', BULK, {'count': '5', 'minCount': '1', 'perInstanceProperties': {n: {} for n in 'abcde'},
                                           'instanceProperties': PROPERTIES})
    assert names(sandbox) == ['a', 'b', 'c']
    status = operation['instancesBulkInsertOperationMetadata']['perLocationStatus']['zones/' + ZONE]
    assert (status['targetVmCount'], status['createdVmCount'], status['status']) == (5, 3, 'DONE')
    ops = group(fabric, operation)
    assert sorted(op['operationType'] for op in ops) == ['bulkInsert', 'insert', 'insert', 'insert']
    assert sorted(op['targetLink'].rsplit('/', 1)[-1] for op in ops if op['operationType'] == 'insert') == ['a', 'b', 'c']
    refused = fabric.post(BULK, {'count': '2', 'minCount': '1', 'perInstanceProperties': {'d': {}, 'e': {}}, 'instanceProperties': PROPERTIES})
    assert refused.status == 503 and refused.body['error']['errors'][0]['reason'] == 'insufficientCapacity'
    assert names(sandbox) == ['a', 'b', 'c']


def test_a_single_insert_without_room_fails_in_its_operation(sandbox, fabric):
    sandbox.set_capacity(ZONE, MEGA, 0)
    body = dict(PROPERTIES, name='solo', machineType='zones/%s/machineTypes/%s' % (ZONE, MEGA))
    operation = fabric.must('POST', 'compute/v1/projects/%s/zones/%s/instances' % (PROJECT, ZONE), body)
    assert operation['error']['errors'][0]['code'] == 'ZONE_RESOURCE_POOL_EXHAUSTED' and operation['httpErrorStatusCode'] == 503
    assert names(sandbox) == []


def test_gpu_quota_is_checked_before_the_bulk_starts(sandbox, fabric):
    sandbox.set_quota('NVIDIA_H100_MEGA_GPUS', 16, region=REGION)
    refused = fabric.post(BULK, {'count': '3', 'perInstanceProperties': {n: {} for n in 'abc'}, 'instanceProperties': PROPERTIES})
    assert refused.status == 403 and refused.body['error']['errors'][0]['reason'] == 'quotaExceeded'
    fabric.must('POST', BULK, {'count': '2', 'perInstanceProperties': {n: {} for n in 'ab'}, 'instanceProperties': PROPERTIES})
    assert names(sandbox) == ['a', 'b']


def test_vms_that_overfill_a_specific_reservation_together_are_refused(sandbox, fabric):
    fabric.must('POST', 'compute/v1/projects/%s/zones/%s/reservations' % (PROJECT, ZONE), {
        'name': 'res', 'specificReservationRequired': True, 'specificReservation': {'count': '2', 'instanceProperties': {'machineType': MEGA}}})
    properties = dict(PROPERTIES, reservationAffinity={'consumeReservationType': 'SPECIFIC_RESERVATION',
                                                       'key': 'compute.googleapis.com/reservation-name', 'values': ['res']})
    refused = fabric.post(BULK, {'count': '3', 'perInstanceProperties': {n: {} for n in 'abc'}, 'instanceProperties': properties})
    assert refused.status == 400 and 'does not have sufficient capacity' in refused.body['error']['message']
    fabric.must('POST', BULK, {'count': '2', 'perInstanceProperties': {n: {} for n in 'ab'}, 'instanceProperties': properties})
    assert names(sandbox) == ['a', 'b']
