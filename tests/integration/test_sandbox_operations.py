"""Long-running operations: latency, ``wait``, status transitions, requestId de-duplication and
operation errors (ZONE_RESOURCE_POOL_EXHAUSTED, QUOTA_EXCEEDED)."""

import threading
import time

import pytest

PROJECT = 'sandbox-project'
ZONE = 'us-central1-a'
P = 'compute/v1/projects/' + PROJECT
INSTANCE = {'name': 'vm', 'machineType': 'zones/%s/machineTypes/e2-standard-4' % ZONE,
            'disks': [{'boot': True, 'initializeParams': {'sourceImage': 'projects/debian-cloud/global/images/family/debian-12'}}],
            'networkInterfaces': [{'subnetwork': 'regions/us-central1/subnetworks/sub'}]}


@pytest.fixture
def vpc(api):
    api.create_vpc(PROJECT, 'net', 'sub', 'us-central1', '10.1.0.0/24')
    return api


def test_latency_keeps_operations_running_then_done(sandbox, vpc):
    sandbox.latency = 0.4
    operation = vpc.post(P + '/zones/%s/instances' % ZONE, INSTANCE).body
    assert operation['status'] == 'RUNNING' and operation['progress'] == 0
    assert operation['operationType'] == 'insert' and operation['zone'].endswith('/zones/' + ZONE)
    assert operation['targetLink'] == sandbox.url + '/compute/v1/projects/%s/zones/%s/instances/vm' % (PROJECT, ZONE)
    assert operation['selfLink'] == sandbox.url + '/compute/v1/projects/%s/zones/%s/operations/%s' % (PROJECT, ZONE, operation['name'])
    assert vpc.get(P + '/zones/%s/instances/vm' % ZONE).body['status'] == 'PROVISIONING'
    time.sleep(0.5)
    done = vpc.get(P + '/zones/%s/operations/%s' % (ZONE, operation['name'])).body
    assert done['status'] == 'DONE' and done['progress'] == 100 and 'endTime' in done
    assert vpc.get(P + '/zones/%s/instances/vm' % ZONE).body['status'] == 'RUNNING'


def test_wait_blocks_until_done(sandbox, vpc):
    sandbox.latency = 0.5
    operation = vpc.post(P + '/zones/%s/instances' % ZONE, INSTANCE).body
    started = time.time()
    waited = vpc.post(P + '/zones/%s/operations/%s/wait' % (ZONE, operation['name'])).body
    assert waited['status'] == 'DONE'
    assert 0.3 < time.time() - started < 2.0


def test_wait_returns_the_current_state_after_its_cap(sandbox, vpc):
    sandbox.latency = 5
    sandbox.wait_timeout = 0.2
    operation = vpc.post(P + '/global/networks', {'name': 'slow', 'autoCreateSubnetworks': False}).body
    started = time.time()
    waited = vpc.post(P + '/global/operations/%s/wait' % operation['name']).body
    assert waited['status'] == 'RUNNING' and time.time() - started < 1.5


def test_operations_list_and_missing_operation(sandbox, vpc):
    operations = vpc.get(P + '/global/operations').body['items']
    assert [op['operationType'] for op in operations] == ['insert']
    assert vpc.get(P + '/global/operations/operation-nope').status == 404


def test_instance_stop_start_delete(sandbox, vpc):
    sandbox.latency = 0.2
    vpc.post(P + '/zones/%s/instances' % ZONE, INSTANCE)
    time.sleep(0.25)
    base = P + '/zones/%s/instances/vm' % ZONE
    stop = vpc.post(base + '/stop').body
    assert stop['operationType'] == 'stop' and vpc.get(base).body['status'] == 'STOPPING'
    vpc.post(P + '/zones/%s/operations/%s/wait' % (ZONE, stop['name']))
    assert vpc.get(base).body['status'] == 'TERMINATED'
    start = vpc.post(base + '/start').body
    assert vpc.get(base).body['status'] == 'STAGING'
    vpc.post(P + '/zones/%s/operations/%s/wait' % (ZONE, start['name']))
    assert vpc.get(base).body['status'] == 'RUNNING'
    delete = vpc.delete(base).body
    assert delete['operationType'] == 'delete' and vpc.get(base).body['status'] == 'STOPPING'
    vpc.post(P + '/zones/%s/operations/%s/wait' % (ZONE, delete['name']))
    assert vpc.get(base).status == 404


def test_repeated_request_id_returns_the_first_operation(sandbox, vpc):
    sandbox.latency = 0.3
    url = P + '/zones/%s/instances?requestId=6f1d2e3a-0000-4000-8000-000000000001' % ZONE
    first = vpc.post(url, INSTANCE).body
    again = vpc.post(url, INSTANCE).body  # still RUNNING: no 409, the same operation
    assert again['name'] == first['name'] and again['status'] == 'RUNNING'
    time.sleep(0.35)
    later = vpc.post(url, INSTANCE).body
    assert later['name'] == first['name'] and later['status'] == 'DONE'
    assert len(sandbox.resources('compute.instances')) == 1
    other = vpc.post(P + '/zones/%s/instances?requestId=6f1d2e3a-0000-4000-8000-000000000002' % ZONE, INSTANCE)
    assert other.status == 409


def test_concurrent_inserts_with_one_request_id_create_once(sandbox, vpc):
    url = P + '/global/networks?requestId=11111111-2222-4333-8444-555555555555'
    names = []

    def insert():
        names.append(vpc.post(url, {'name': 'raced', 'autoCreateSubnetworks': False}).body['name'])

    threads = [threading.Thread(target=insert) for _attempt in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(names)) == 1 and len(sandbox.resources('compute.networks')) == 2  # 'net' + 'raced'


@pytest.mark.parametrize('kind, status, fragment', [
    ('ZONE_RESOURCE_POOL_EXHAUSTED', 503, "The zone 'projects/sandbox-project/zones/us-central1-a' does not have enough resources"),
    ('QUOTA_EXCEEDED', 403, "Quota 'CPUS' exceeded."),
])
def test_operation_errors_end_done_with_error_and_create_nothing(sandbox, vpc, kind, status, fragment):
    sandbox.latency = 0.2
    sandbox.inject_fault('compute.instances.insert', kind, count=1)
    operation = vpc.post(P + '/zones/%s/instances' % ZONE, INSTANCE).body
    assert operation['status'] == 'RUNNING' and 'error' not in operation
    assert vpc.get(P + '/zones/%s/instances/vm' % ZONE).status == 404
    done = vpc.post(P + '/zones/%s/operations/%s/wait' % (ZONE, operation['name'])).body
    assert done['status'] == 'DONE' and done['httpErrorStatusCode'] == status
    assert done['error']['errors'][0]['code'] == kind and fragment in done['error']['errors'][0]['message']
    assert sandbox.resources('compute.instances') == []
    # the fault was used up: a retry succeeds
    sandbox.latency = 0
    assert 'error' not in vpc.post(P + '/zones/%s/instances' % ZONE, INSTANCE).body
    assert len(sandbox.resources('compute.instances')) == 1


def test_container_operation_error_and_latency(sandbox, api):
    sandbox.latency = 0.2
    sandbox.inject_fault('container.projects.locations.clusters.create', 'ZONE_RESOURCE_POOL_EXHAUSTED', count=1)
    url = 'v1/projects/p/locations/%s/clusters' % ZONE
    operation = api.post(url, {'cluster': {'name': 'c', 'initialNodeCount': 1}}).body
    assert operation['status'] == 'RUNNING' and operation['operationType'] == 'CREATE_CLUSTER'
    assert operation['selfLink'] == '%s/v1/projects/p/locations/%s/operations/%s' % (sandbox.url, ZONE, operation['name'])
    time.sleep(0.25)
    done = api.get('v1/projects/p/locations/%s/operations/%s' % (ZONE, operation['name'])).body
    assert done['status'] == 'DONE' and 'ZONE_RESOURCE_POOL_EXHAUSTED' in done['error']['message']
    assert sandbox.resources('container.clusters') == []
    operation = api.post(url, {'cluster': {'name': 'c', 'initialNodeCount': 1}}).body
    assert api.get(url + '/c').body['status'] == 'PROVISIONING'
    time.sleep(0.25)
    cluster = api.get(url + '/c').body
    assert cluster['status'] == 'RUNNING' and cluster['nodePools'][0]['status'] == 'RUNNING'
    assert cluster['masterAuth']['clusterCaCertificate'] and cluster['endpoint']
    legacy = api.get('v1/projects/p/zones/%s/operations/%s' % (ZONE, operation['name'])).body
    assert legacy['status'] == 'DONE'
    deleted = api.delete(url + '/c').body
    assert deleted['operationType'] == 'DELETE_CLUSTER'
    time.sleep(0.25)
    assert api.get(url + '/c').status == 404 and sandbox.resources('container.nodePools') == []


def test_bulk_insert_makes_one_insert_operation_per_vm_in_a_group(sandbox, vpc):
    properties = dict(INSTANCE, machineType='e2-standard-4')
    del properties['name']
    body = {'count': 3, 'namePattern': 'node-##', 'perInstanceProperties': {'head': {}}, 'instanceProperties': properties}
    bulk = vpc.post(P + '/zones/%s/instances/bulkInsert' % ZONE, body).body
    assert bulk['operationType'] == 'bulkInsert'
    names = sorted(vm['name'] for vm in sandbox.resources('compute.instances'))
    assert names == ['head', 'node-01', 'node-02']
    group = vpc.get(P + '/zones/%s/operations?filter=operationGroupId+eq+%%22%s%%22' % (ZONE, bulk['operationGroupId'])).body['items']
    assert sorted(op['operationType'] for op in group) == ['bulkInsert', 'insert', 'insert', 'insert']
    inserts = vpc.get(P + '/zones/%s/operations?filter=operationType+%%3D+insert' % ZONE).body['items']
    assert len(inserts) == 3
    refused = vpc.post(P + '/zones/%s/instances/bulkInsert' % ZONE, dict(body, namePattern='x', count=3))
    assert refused.status == 400
