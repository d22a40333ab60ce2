"""module_utils/gcp/ (transport, compute, container) against the sandbox: real HTTP, real operations, injected faults."""

import collections
import random
import urllib.parse

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.clients import Clients
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.concurrency import map_concurrently
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError, GcpTimeout
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import RetryPolicy, resolve_settings

PROJECT = 'sandbox-project'
REGION = 'us-central1'
ZONE = 'us-central1-a'
FAST_RETRY = dict(initial_delay=0.01, max_delay=0.05, deadline=30.0)


def make_clients(sandbox, **retry):
    settings = resolve_settings({'project': PROJECT, 'auth_kind': 'none'}, {
        'CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE': sandbox.compute_url,
        'CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER': sandbox.container_url,
    })
    policy = RetryPolicy(rng=random.Random(1), **dict(FAST_RETRY, **retry))
    return Clients(settings, retry=policy)


@pytest.fixture
def clients(sandbox):
    return make_clients(sandbox)


def network_body(name, mtu=8244):
    return {'name': name, 'autoCreateSubnetworks': False, 'mtu': mtu}


def subnet_body(name, network, cidr):
    return {'name': name, 'network': 'projects/%s/global/networks/%s' % (PROJECT, network), 'ipCidrRange': cidr}


def firewall_body(name, network):
    return {'name': name, 'network': 'projects/%s/global/networks/%s' % (PROJECT, network), 'direction': 'INGRESS',
            'sourceRanges': ['192.168.0.0/16'],
            'allowed': [{'IPProtocol': 'tcp', 'ports': ['0-65535']}, {'IPProtocol': 'udp', 'ports': ['0-65535']},
                        {'IPProtocol': 'icmp'}]}


def instance_body(name, networks, machine_type='a3-highgpu-8g'):
    return {
        'name': name,
        'machineType': 'zones/%s/machineTypes/%s' % (ZONE, machine_type),
        'scheduling': {'onHostMaintenance': 'TERMINATE', 'automaticRestart': True},
        'disks': [{'boot': True, 'autoDelete': True,
                   'initializeParams': {'sourceImage': 'projects/cos-cloud/global/images/family/cos-121-lts', 'diskSizeGb': '50'}}],
        'networkInterfaces': [
            {'network': 'projects/%s/global/networks/%s' % (PROJECT, network),
             'subnetwork': 'projects/%s/regions/%s/subnetworks/%s' % (PROJECT, REGION, network.replace('-net', '-sub')),
             'nicType': 'GVNIC'}
            for network in networks],
    }


def query(entry):
    return urllib.parse.parse_qs(urllib.parse.urlsplit(entry['path']).query)


def test_create_wait_get_list_and_delete(clients):
    compute = clients.compute
    operation = compute.run('POST', 'global/networks', "create network 'fab-mgmt-net'", body=network_body('fab-mgmt-net'))
    assert operation['status'] == 'DONE'
    network = compute.get('global/networks/fab-mgmt-net')
    assert network['mtu'] == 8244
    assert network['autoCreateSubnetworks'] is False
    assert [item['name'] for item in compute.list('global/networks')] == ['fab-mgmt-net']
    assert compute.get('global/networks/absent') is None
    assert compute.delete('global/networks/fab-mgmt-net', "delete network 'fab-mgmt-net'") is True
    assert compute.delete('global/networks/fab-mgmt-net', "delete network 'fab-mgmt-net'") is False


def test_every_mutating_compute_call_carries_a_request_id(sandbox, clients):
    clients.compute.run('POST', 'global/networks', 'create network', body=network_body('rid-net'))
    clients.compute.delete('global/networks/rid-net', 'delete network')
    mutating = [entry for entry in sandbox.request_log()
                if entry['method'] in ('POST', 'DELETE') and not entry['path'].split('?')[0].endswith('/wait')]
    assert len(mutating) == 2
    assert all(len(query(entry)['requestId'][0]) == 36 for entry in mutating)


def test_conflict_is_one_line_naming_the_resource(clients):
    clients.compute.run('POST', 'global/networks', "create network 'dup-net'", body=network_body('dup-net'))
    with pytest.raises(GcpError) as caught:
        clients.compute.run('POST', 'global/networks', "create network 'dup-net'", body=network_body('dup-net'))
    error = caught.value
    assert error.status == 409
    assert error.reason == 'alreadyExists'
    assert str(error).startswith("Failed to create network 'dup-net' (HTTP 409, alreadyExists): ")
    assert 'dup-net' in error.message


def test_refused_request_is_not_retried(sandbox, clients):
    with pytest.raises(GcpError) as caught:
        clients.compute.call('POST', 'global/networks', "create network 'jumbo'", body=network_body('jumbo', mtu=9000))
    assert caught.value.status == 400
    assert len([e for e in sandbox.request_log() if e['method'] == 'POST']) == 1


def test_pagination_follows_next_page_token(sandbox, clients):
    names = ['page-net-%d' % index for index in range(7)]
    for name, _result, error in map_concurrently(
            lambda name: clients.compute.run('POST', 'global/networks', 'create %s' % name, body=network_body(name)), names):
        assert error is None, name
    listed = [item['name'] for item in clients.compute.list('global/networks', params={'maxResults': 3})]
    assert sorted(listed) == names
    pages = [e for e in sandbox.request_log() if e['method'] == 'GET' and e['path'].startswith(
        '/compute/v1/projects/%s/global/networks?' % PROJECT)]
    assert len(pages) == 3


def test_aggregated_list_yields_scoped_items(clients):
    compute = clients.compute
    compute.run('POST', 'global/networks', 'create network', body=network_body('agg-net'))
    compute.run('POST', 'regions/%s/subnetworks' % REGION, 'create subnet', body=subnet_body('agg-sub', 'agg-net', '10.0.0.0/24'))
    found = list(compute.aggregated_list('subnetworks'))
    assert [(scope, item['name']) for scope, item in found] == [('regions/%s' % REGION, 'agg-sub')]


def test_operation_error_names_the_resource_and_code(sandbox, clients):
    compute = clients.compute
    compute.run('POST', 'global/networks', 'create network', body=network_body('cap-net'))
    compute.run('POST', 'regions/%s/subnetworks' % REGION, 'create subnet', body=subnet_body('cap-sub', 'cap-net', '10.1.0.0/24'))
    sandbox.inject_fault(method='compute.instances.insert', kind='ZONE_RESOURCE_POOL_EXHAUSTED', count=1)
    with pytest.raises(GcpError) as caught:
        compute.run('POST', 'zones/%s/instances' % ZONE, "create instance 'vm-cap' in %s" % ZONE, body=instance_body('vm-cap', ['cap-net']))
    assert caught.value.codes == ('ZONE_RESOURCE_POOL_EXHAUSTED',)
    assert caught.value.capacity
    assert str(caught.value).startswith("Failed to create instance 'vm-cap' in us-central1-a (")
    assert compute.get('zones/%s/instances/vm-cap' % ZONE) is None
    # A rerun after the capacity came back creates it.
    compute.run('POST', 'zones/%s/instances' % ZONE, "create instance 'vm-cap'", body=instance_body('vm-cap', ['cap-net']))
    assert compute.get('zones/%s/instances/vm-cap' % ZONE)['status'] == 'RUNNING'


def test_operations_are_awaited_with_the_wait_method(sandbox):
    sandbox.latency = 0.4
    clients = make_clients(sandbox)
    progress = []
    operation = clients.compute.call('POST', 'global/networks', 'create network', body=network_body('slow-net'))
    assert operation['status'] != 'DONE'
    clients.compute.wait(operation, 'create network', progress=progress.append)
    assert progress[-1]['status'] == 'DONE'
    waits = [e for e in sandbox.request_log() if e['path'].split('?')[0].endswith('/global/operations/%s/wait' % operation['name'])]
    assert waits and all(e['method'] == 'POST' for e in waits)


def test_wait_timeout_says_the_operation_goes_on(sandbox):
    sandbox.latency = 5
    clients = make_clients(sandbox)
    operation = clients.compute.call('POST', 'global/networks', 'create network', body=network_body('late-net'))
    with pytest.raises(GcpTimeout, match='still (PENDING|RUNNING) after 0.3s; it goes on in Google Cloud, rerun to pick it up'):
        clients.compute.wait(operation, "create network 'late-net'", timeout=0.3)


def test_retry_after_is_honoured(sandbox):
    clients = make_clients(sandbox)
    slept = []
    clients.transport.sleep = slept.append   # observe the delays instead of spending them
    sandbox.inject_fault(method='compute.networks.get', kind='http_429', count=2, retry_after=3)
    clients.compute.get('global/networks/none-such')
    assert len(slept) == 2
    assert all(delay >= 3 for delay in slept)


def test_retry_deadline_gives_up_with_the_last_cause(sandbox):
    clients = make_clients(sandbox, deadline=0.3)
    sandbox.inject_fault(method='compute.networks.get', kind='http_503', rate=1.0)
    with pytest.raises(GcpTimeout) as caught:
        clients.compute.get('global/networks/any', action="get network 'any'")
    assert caught.value.status == 503
    assert 'gave up after the retry deadline of 0.3s' in str(caught.value)
    assert str(caught.value).startswith("Failed to get network 'any' (HTTP 503")


def test_dropped_connections_are_retried(sandbox, clients):
    sandbox.inject_fault(method='compute.networks.insert', kind='reset', count=2)
    clients.compute.run('POST', 'global/networks', 'create network', body=network_body('reset-net'))
    inserts = [e for e in sandbox.request_log() if e['method'] == 'POST' and e['path'].startswith(
        '/compute/v1/projects/%s/global/networks?' % PROJECT)]
    assert len(inserts) == 3
    assert len({query(e)['requestId'][0] for e in inserts}) == 1, 'every retry repeats the first requestId'
    assert [n['name'] for n in clients.compute.list('global/networks')] == ['reset-net']


def test_map_concurrently_reports_each_failure_by_item(sandbox, clients):
    sandbox.inject_fault(method='compute.networks.insert', kind='QUOTA_EXCEEDED', count=1)
    names = ['conc-a', 'conc-b', 'conc-c']
    outcome = map_concurrently(
        lambda name: clients.compute.run('POST', 'global/networks', "create network '%s'" % name, body=network_body(name)), names)
    assert [item for item, _result, _error in outcome] == names
    failed = [(item, error) for item, _result, error in outcome if error]
    assert len(failed) == 1 and failed[0][1].codes == ('QUOTA_EXCEEDED',)
    assert len(list(clients.compute.list('global/networks'))) == 2


def test_fabric_under_thirty_percent_faults_is_created_exactly_once(sandbox):
    """Seed 000's A3 Mega fabric and two VMs while 30% of all calls fail (503 or a dropped connection)."""
    sandbox.latency = 0.05   # so that operation waits happen, and fail too
    sandbox.inject_fault(method='*', kind='http_503', rate=0.15)
    sandbox.inject_fault(method='*', kind='reset', rate=0.15)
    clients = make_clients(sandbox, deadline=120.0)
    compute = clients.compute
    networks = ['fab-mgmt-net'] + ['fab-data-net-%d' % n for n in range(1, 9)]
    cidr = {name: '192.168.%d.0/24' % index for index, name in enumerate(networks)}

    def create_network(name):
        compute.run('POST', 'global/networks', "create network '%s'" % name, body=network_body(name))
        compute.run('POST', 'regions/%s/subnetworks' % REGION, "create subnetwork '%s'" % name.replace('-net', '-sub'),
                    body=subnet_body(name.replace('-net', '-sub'), name, cidr[name]))
        compute.run('POST', 'global/firewalls', "create firewall '%s-internal'" % name,
                    body=firewall_body('%s-internal' % name, name))

    for name, _result, error in map_concurrently(create_network, networks):
        assert error is None, '%s: %s' % (name, error)
    vms = ['fab-vm-1', 'fab-vm-2']
    for name, _result, error in map_concurrently(
            lambda vm: compute.run('POST', 'zones/%s/instances' % ZONE, "create instance '%s'" % vm,
                                   body=instance_body(vm, networks, 'a3-megagpu-8g')), vms):
        assert error is None, '%s: %s' % (name, error)

    log = sandbox.request_log()
    sandbox.clear_faults()
    expected = {('compute.networks', name) for name in networks}
    expected |= {('compute.subnetworks', name.replace('-net', '-sub')) for name in networks}
    expected |= {('compute.firewalls', name + '-internal') for name in networks}
    expected |= {('compute.instances', name) for name in vms}
    stored = collections.Counter((collection, item['name']) for collection in {kind for kind, _name in expected}
                                 for item in sandbox.resources(collection))
    assert set(stored) == expected
    assert set(stored.values()) == {1}, 'nothing was created twice'
    for collection, path in (('networks', 'global/networks'), ('instances', 'zones/%s/instances' % ZONE)):
        names = [item['name'] for item in compute.list(path)]
        assert len(names) == len(set(names)) == len([e for e in expected if e[0] == 'compute.' + collection])

    faulted = collections.Counter(entry['fault'] for entry in log if entry['fault'])
    assert faulted['http_503'] and faulted['reset'], faulted
    assert sum(faulted.values()) >= 0.15 * len(log), 'the faults really fired (%s of %d)' % (faulted, len(log))
    by_request = collections.defaultdict(list)
    for entry in log:
        if entry['method'] == 'POST' and 'requestId' in query(entry):
            by_request[query(entry)['requestId'][0]].append(entry)
    assert len(by_request) == len(expected), 'one requestId per resource, kept across its retries'
    assert any(len(attempts) > 1 for attempts in by_request.values()), 'some inserts were retried'


def test_container_cluster_and_node_pool(sandbox, clients):
    container = clients.container
    location = REGION
    clients.compute.run('POST', 'global/networks', 'create network', body={'name': 'default', 'autoCreateSubnetworks': True})
    body = {'cluster': {'name': 'c1', 'initialNodeCount': 1, 'network': 'default'}}
    operation = container.create('%s/clusters' % location, body, 'clusters/c1', "create cluster 'c1'")
    done = container.wait(operation, "create cluster 'c1'", poll=RetryPolicy(initial_delay=0.01, max_delay=0.05))
    assert done['status'] == 'DONE'
    cluster = container.get('%s/clusters/c1' % location)
    assert cluster['status'] == 'RUNNING'
    pool = {'nodePool': {'name': 'gpu', 'initialNodeCount': 2, 'config': {'machineType': 'a3-highgpu-8g'}}}
    operation = container.create('%s/clusters/c1/nodePools' % location, pool, 'nodePools/gpu', "create node pool 'gpu'")
    container.wait(operation, "create node pool 'gpu'", poll=RetryPolicy(initial_delay=0.01, max_delay=0.05))
    # initialNodeCount gives the cluster its default-pool, as on GKE.
    assert [p['name'] for p in container.list('%s/clusters/c1/nodePools' % location, 'nodePools')] == ['default-pool', 'gpu']
    assert container.get('%s/clusters/absent' % location) is None


def test_container_create_whose_response_was_lost_is_awaited_not_duplicated(sandbox, clients):
    container = clients.container
    clients.compute.run('POST', 'global/networks', 'create network', body={'name': 'default', 'autoCreateSubnetworks': True})
    body = {'cluster': {'name': 'c2', 'initialNodeCount': 1}}
    first = container.call('POST', '%s/clusters' % REGION, "create cluster 'c2'", body=body)
    # The caller never saw `first` (say the connection dropped); its retry meets 409 and is given the same operation.
    again = container.create('%s/clusters' % REGION, body, 'clusters/c2', "create cluster 'c2'")
    assert again['name'] == first['name']
    assert len(container.list('%s/clusters' % REGION, 'clusters')) == 1
