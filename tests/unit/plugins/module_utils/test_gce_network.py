"""The fabric plan of module_utils/gce_network.py: seed 000's names, ranges and rules, and drift."""

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import network as gce_network


def plan_for(family, **kwargs):
    return gce_network.build_plan('proj', 'us-central1', family, 'pre', **kwargs)


@pytest.mark.parametrize('family, data_networks', [('a3-megagpu-8g', 8), ('a3-highgpu-8g', 4), ('a3-edgegpu-8g', 4)])
def test_one_management_and_one_data_network_per_data_nic(family, data_networks):
    plan = plan_for(family)
    assert plan.network_names == ['pre-mgmt-net'] + ['pre-data-net-%d' % n for n in range(1, data_networks + 1)]
    assert [chain.subnet.body['ipCidrRange'] for chain in plan.chains] == ['192.168.%d.0/24' % n for n in range(data_networks + 1)]
    assert {chain.network.body['mtu'] for chain in plan.chains} == {8244}
    assert plan.internal_source_ranges == ['192.168.0.0/16']


def test_rules_are_the_seeds():
    plan = plan_for('a3-highgpu-8g', ssh_source_ranges=['203.0.113.0/24'])
    mgmt = plan.chains[0]
    assert [f.name for f in mgmt.firewalls] == ['pre-mgmt-internal', 'pre-mgmt-external-ssh', 'pre-mgmt-external-ping']
    internal, ssh, ping = (f.body for f in mgmt.firewalls)
    assert internal['allowed'] == [{'IPProtocol': 'tcp', 'ports': ['0-65535']}, {'IPProtocol': 'udp', 'ports': ['0-65535']},
                                   {'IPProtocol': 'icmp'}]
    assert ssh['allowed'] == [{'IPProtocol': 'tcp', 'ports': ['22']}] and ssh['sourceRanges'] == ['203.0.113.0/24']
    assert ping['allowed'] == [{'IPProtocol': 'icmp'}] and ping['sourceRanges'] == ['0.0.0.0/0']
    assert plan.chains[3].firewalls[0].name == 'pre-data-internal-3'
    assert plan.chains[3].firewalls[0].body['network'] == 'projects/proj/global/networks/pre-data-net-3'


def test_no_ssh_rule_without_source_ranges():
    plan = plan_for('a3-megagpu-8g')
    assert [f.name for f in plan.chains[0].firewalls] == ['pre-mgmt-internal', 'pre-mgmt-external-ping']


def test_own_ranges_are_the_internal_sources():
    cidrs = ['10.1.%d.0/24' % n for n in range(1, 5)]
    plan = plan_for('a3-highgpu-8g', management_cidr='10.1.0.0/24', data_cidrs=cidrs)
    assert plan.internal_source_ranges == ['10.1.0.0/24'] + cidrs


def test_rdma_families_are_gke_only_here():
    with pytest.raises(gce_network.InputError, match='a3-ultragpu-8g runs GPUDirect RDMA on GKE only'):
        plan_for('a3-ultragpu-8g')


def test_unknown_family_lists_the_known_ones():
    with pytest.raises(gce_network.InputError, match="machine_type: 'a2-highgpu-8g' is not a GPUDirect machine family"):
        plan_for('a2-highgpu-8g')


def test_differences_split_patchable_from_immutable():
    plan = plan_for('a3-highgpu-8g', ssh_source_ranges=['203.0.113.0/24'])
    ssh = plan.chains[0].firewalls[1]
    current = dict(ssh.body, network='https://compute.googleapis.com/compute/v1/projects/proj/global/networks/pre-mgmt-net',
                   sourceRanges=['198.51.100.0/24'], selfLink='x', id='1')
    assert gce_network.differences(ssh, current) == ({'sourceRanges': ['203.0.113.0/24']}, [])
    subnet = plan.chains[1].subnet
    assert gce_network.differences(subnet, dict(subnet.body, ipCidrRange='10.0.0.0/24')) == ({}, ['ipCidrRange'])
    assert gce_network.differences(subnet, dict(subnet.body, privateIpGoogleAccess=True)) == ({}, [])
    network = plan.chains[0].network
    assert gce_network.differences(network, dict(network.body, mtu=1460)) == ({'mtu': 8244}, [])
    assert gce_network.differences(network, dict(network.body, autoCreateSubnetworks=True)) == ({}, ['autoCreateSubnetworks'])


def test_rule_order_does_not_count_as_drift():
    plan = plan_for('a3-highgpu-8g')
    internal = plan.chains[0].firewalls[0]
    shuffled = dict(internal.body, allowed=list(reversed(internal.body['allowed'])))
    assert gce_network.differences(internal, shuffled) == ({}, [])
