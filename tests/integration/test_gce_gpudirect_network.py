"""gce_gpudirect_network against the sandbox: plan, create, converge, drift, refuse, delete."""

import collections

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.modules import gce_gpudirect_network
from module_runner import run_module

PROJECT = 'sandbox-project'
REGION = 'us-central1'
ZONE = 'us-central1-a'


@pytest.fixture
def fabric(sandbox):
    base = {'project': PROJECT, 'auth_kind': 'none', 'compute_endpoint': sandbox.compute_url, 'region': REGION,
            'machine_type': 'a3-highgpu-8g', 'network_prefix': 'hi', 'ssh_source_ranges': ['203.0.113.0/24']}

    def run(check_mode=False, diff=False, **overrides):
        return run_module(gce_gpudirect_network.main, dict(base, **overrides), check_mode=check_mode, diff=diff)
    return run


def mutating(sandbox):
    return [e for e in sandbox.request_log() if e['method'] in ('POST', 'PATCH', 'PUT', 'DELETE')
            and not e['path'].split('?')[0].endswith('/wait')]


def names(sandbox, collection):
    return sorted(item['name'] for item in sandbox.resources(collection))


def test_check_mode_plans_the_seed_fabric_without_calling_anything_mutating(sandbox, fabric):
    result = fabric(check_mode=True, diff=True)
    assert result['changed'] is True
    assert len(result['actions']) == 5 + 5 + 3 + 4
    assert "create network 'hi-mgmt-net'" in result['actions']
    assert "create firewall 'hi-mgmt-external-ssh'" in result['actions']
    assert result['diff']['before'] == {}
    assert result['diff']['after']['hi-data-sub-4']['ipCidrRange'] == '192.168.4.0/24'
    assert mutating(sandbox) == []


def test_creates_the_seed_fabric_then_changes_nothing(sandbox, fabric):
    result = fabric()
    assert result['changed'] is True, result
    assert names(sandbox, 'compute.networks') == ['hi-data-net-1', 'hi-data-net-2', 'hi-data-net-3', 'hi-data-net-4', 'hi-mgmt-net']
    assert names(sandbox, 'compute.subnetworks') == ['hi-data-sub-1', 'hi-data-sub-2', 'hi-data-sub-3', 'hi-data-sub-4', 'hi-mgmt-sub']
    assert names(sandbox, 'compute.firewalls') == ['hi-data-internal-1', 'hi-data-internal-2', 'hi-data-internal-3', 'hi-data-internal-4',
                                                   'hi-mgmt-external-ping', 'hi-mgmt-external-ssh', 'hi-mgmt-internal']
    assert {n['mtu'] for n in sandbox.resources('compute.networks')} == {8244}
    assert [n['name'] for n in result['networks']] == ['hi-mgmt-net', 'hi-data-net-1', 'hi-data-net-2', 'hi-data-net-3', 'hi-data-net-4']
    assert [n['cidr'] for n in result['networks']] == ['192.168.%d.0/24' % n for n in range(5)]
    assert all(n['self_link'].endswith('/global/networks/%s' % n['name']) for n in result['networks'])
    ssh = [f for f in sandbox.resources('compute.firewalls') if f['name'] == 'hi-mgmt-external-ssh'][0]
    assert ssh['sourceRanges'] == ['203.0.113.0/24']
    assert ssh['allowed'] == [{'IPProtocol': 'tcp', 'ports': ['22']}]

    before = len(sandbox.request_log())
    again = fabric()
    assert again['changed'] is False
    assert again['actions'] == []
    reads = sandbox.request_log()[before:]
    assert [e['method'] for e in reads] == ['GET', 'GET', 'GET'], 'one list per collection, nothing else'


def test_firewall_drift_is_corrected_in_place(sandbox, fabric):
    fabric()
    result = fabric(ssh_source_ranges=['198.51.100.7/32'], diff=True)
    assert result['actions'] == ["update firewall 'hi-mgmt-external-ssh' (sourceRanges)"]
    assert result['diff']['before']['hi-mgmt-external-ssh']['sourceRanges'] == ['203.0.113.0/24']
    ssh = [f for f in sandbox.resources('compute.firewalls') if f['name'] == 'hi-mgmt-external-ssh'][0]
    assert ssh['sourceRanges'] == ['198.51.100.7/32']
    patches = [e for e in mutating(sandbox) if e['method'] == 'PATCH']
    assert len(patches) == 1 and patches[0]['body'] == {'sourceRanges': ['198.51.100.7/32']}


def test_immutable_difference_fails_before_any_change(sandbox, fabric):
    fabric()
    count = len(mutating(sandbox))
    result = fabric(data_cidrs=['192.168.11.0/24', '192.168.2.0/24', '192.168.3.0/24', '192.168.4.0/24'])
    assert result['failed'] is True
    assert "subnetwork 'hi-data-sub-1' (ipCidrRange)" in result['msg']
    assert 'delete them (state: absent) or choose another network_prefix' in result['msg']
    assert len(mutating(sandbox)) == count


def test_existing_networks_made_by_hand_are_reused(sandbox, fabric):
    fabric(check_mode=False, icmp_source_ranges=[])
    result = fabric()
    assert result['actions'] == ["create firewall 'hi-mgmt-external-ping'"]


def test_absent_refuses_while_instances_use_the_fabric(sandbox, fabric):
    fabric()
    client = sandbox_compute(sandbox)
    client.run('POST', 'zones/%s/instances' % ZONE, 'create vm', body=a3_high_instance('hi-vm-1', 'hi'))
    refused = fabric(state='absent')
    assert refused['failed'] is True
    assert 'still used by instances hi-vm-1 (us-central1-a)' in refused['msg']
    assert len(names(sandbox, 'compute.networks')) == 5
    client.delete('zones/%s/instances/hi-vm-1' % ZONE, 'delete vm')
    checked = fabric(state='absent', check_mode=True)
    assert checked['changed'] is True and len(checked['actions']) == 17
    assert len(names(sandbox, 'compute.networks')) == 5
    removed = fabric(state='absent', ssh_source_ranges=None, icmp_source_ranges=[])   # rules are found by name
    assert removed['changed'] is True
    assert names(sandbox, 'compute.networks') == names(sandbox, 'compute.subnetworks') == names(sandbox, 'compute.firewalls') == []
    assert fabric(state='absent')['changed'] is False


def a3_high_instance(name, prefix):
    """The essentials of the body gcloud sends for seed 000's A3 High command."""
    pairs = [('%s-mgmt-net' % prefix, '%s-mgmt-sub' % prefix)]
    pairs += [('%s-data-net-%d' % (prefix, n), '%s-data-sub-%d' % (prefix, n)) for n in range(1, 5)]
    return {
        'name': name, 'machineType': 'zones/%s/machineTypes/a3-highgpu-8g' % ZONE,
        'scheduling': {'automaticRestart': True, 'onHostMaintenance': 'TERMINATE'},
        'disks': [{'autoDelete': True, 'boot': True, 'initializeParams': {
            'diskSizeGb': '50', 'sourceImage': 'projects/cos-cloud/global/images/family/cos-121-lts'}}],
        'networkInterfaces': [{'network': 'global/networks/' + network, 'subnetwork': 'regions/%s/subnetworks/%s' % (REGION, subnet),
                               'nicType': 'GVNIC'} for network, subnet in pairs],
    }


def sandbox_compute(sandbox):
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.clients import Clients
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import RetryPolicy, resolve_settings
    settings = resolve_settings({'project': PROJECT, 'auth_kind': 'none', 'compute_endpoint': sandbox.compute_url}, {})
    return Clients(settings, retry=RetryPolicy(initial_delay=0.01, max_delay=0.05, deadline=30)).compute


def test_a3_mega_fabric_under_faults_converges_without_duplicates(sandbox, fabric):
    sandbox.inject_fault(method='*', kind='http_503', rate=0.1)
    sandbox.inject_fault(method='*', kind='http_429', rate=0.05)
    sandbox.inject_fault(method='*', kind='reset', rate=0.05)
    result = fabric(machine_type='a3-megagpu-8g', network_prefix='mega', retry_deadline=120)
    assert result.get('failed') is not True, result.get('msg')
    sandbox.clear_faults()
    counts = collections.Counter(item['name'] for collection in ('compute.networks', 'compute.subnetworks', 'compute.firewalls')
                                 for item in sandbox.resources(collection))
    assert len(counts) == 9 + 9 + 3 + 8
    assert set(counts.values()) == {1}
    assert any(e['fault'] for e in sandbox.request_log())
    assert fabric(machine_type='a3-megagpu-8g', network_prefix='mega')['changed'] is False


@pytest.mark.parametrize('overrides, message', [
    ({'network_prefix': 'A3High'}, "network_prefix: 'A3High-mgmt-external-ping' is not a valid Compute Engine name"),
    ({'network_prefix': 'x' * 50}, 'is not a valid Compute Engine name'),
    ({'mtu': 9000}, 'mtu: 9000 is outside the 1300-8896 that VPC networks allow'),
    ({'mtu': 1200}, 'mtu: 1200 is outside'),
    ({'data_cidrs': ['192.168.1.0/24']}, 'data_cidrs: 1 ranges given, but this family has 4 data NICs'),
    ({'data_cidrs': ['192.168.1.0/24', '192.168.1.128/25', '192.168.3.0/24', '192.168.4.0/24']}, '192.168.1.0/24 overlaps 192.168.1.128/25'),
    ({'management_cidr': '192.168.1.0/24'}, '192.168.1.0/24 overlaps 192.168.1.0/24'),
    ({'management_cidr': '192.168.0.0/33'}, "management_cidr: '192.168.0.0/33' is not a CIDR range"),
    ({'management_cidr': '192.168.0.5/24'}, 'has host bits set'),
    ({'management_cidr': '8.8.8.0/24'}, '8.8.8.0/24 is not a private IPv4 range'),
    ({'data_cidrs': ['10.0.0.0/30', '10.0.1.0/24', '10.0.2.0/24', '10.0.3.0/24']}, '10.0.0.0/30 is smaller than the /29'),
    ({'ssh_source_ranges': ['0.0.0.0/0']}, 'ssh_source_ranges: 0.0.0.0/0 together open the port to the whole internet; give your own '
     'address ranges, or set ssh_from_anywhere: true'),
    ({'ssh_source_ranges': ['0.0.0.0/1', '128.0.0.0/1']}, 'ssh_source_ranges: 0.0.0.0/1 + 128.0.0.0/1 together open the port'),
    ({'ssh_source_ranges': ['::0/0']}, 'ssh_source_ranges: ::0/0 together open the port'),
    ({'timeout': 0}, 'timeout: 0 seconds'),
    ({'ssh_source_ranges': ['office']}, "ssh_source_ranges: 'office' is not a CIDR range"),
    ({'internal_source_ranges': ['0.0.0.0/0']}, 'internal_source_ranges: 0.0.0.0/0 together cover the whole internet'),
    ({'ssh_source_ranges': None}, 'ssh_source_ranges: give the ranges allowed to reach SSH on the management network'),
    ({'machine_type': 'a3-ultragpu-8g'}, 'machine_type: a3-ultragpu-8g runs GPUDirect RDMA on GKE only'),
    ({'machine_type': 'a3-ultragpu-8g', 'layout': 'gke'}, 'layout: a3-ultragpu-8g uses GPUDirect-RDMA; use layout gke_rdma'),
    ({'layout': 'gke_rdma', 'machine_type': 'a4-highgpu-8g'}, 'zone: layout gke_rdma binds the RoCE network to a zone'),
    ({'layout': 'gke_rdma', 'machine_type': 'a4-highgpu-8g', 'zone': 'us-central1-b', 'data_cidrs': ['192.168.1.0/24'] * 8},
     'data_cidrs: 8 ranges given, but this layout has 9 subnets'),
    ({'layout': 'gke', 'machine_type': 'a3-edgegpu-8g'}, 'machine_type: a3-edgegpu-8g has no GKE manual'),
])
def test_bad_input_is_refused_before_any_request(sandbox, fabric, overrides, message):
    result = fabric(**overrides)
    assert result['failed'] is True
    assert message in result['msg']
    assert sandbox.request_log() == []


def test_a_fabric_over_the_networks_quota_is_refused_before_any_network(sandbox, fabric):
    """Compute Engine refuses the network that passes the NETWORKS quota with 403 quotaExceeded (tests/sandbox/quotas.py),
    which would leave half a fabric; the module reads the project's quota first and refuses the whole fabric, naming the
    option and the fix.  Check mode warns instead of failing."""
    sandbox.set_quota('NETWORKS', 3, project=PROJECT)
    planned = fabric(check_mode=True)
    # (the warning itself is not asserted: Ansible keeps warnings in a process-wide table that in-process runs share)
    assert planned.get('failed') is not True and planned['changed'] is True and mutating(sandbox) == []
    refused = fabric()
    assert refused['failed'] is True
    assert refused['msg'] == ('network_prefix: the GPUDirect network hi needs 5 new VPC networks, and project %s has room for 3 of its '
                              'NETWORKS quota (0 of 3 used); ask for a quota increase or delete unused networks' % PROJECT)
    assert mutating(sandbox) == []
    sandbox.set_quota('NETWORKS', 5, project=PROJECT)
    assert fabric().get('failed') is not True


def test_ssh_open_to_the_world_when_said_so(sandbox, fabric):
    result = fabric(ssh_source_ranges=['0.0.0.0/0'], ssh_from_anywhere=True, check_mode=True)
    assert result['changed'] is True
