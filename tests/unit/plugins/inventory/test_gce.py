# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inventory/gce.py without Ansible's inventory: instance JSON -> host facts, groups, hostnames, field masks, filters.

The instances are in the API's shape (fixtures/README.md); the expected values are read off the
seed-000 network layout (compute.GCE_NETWORK) and the catalog, not off the code under test.
"""
from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.inventory import gce
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import vm

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures')


def instance(name):
    with open(os.path.join(FIXTURES, name + '.json'), encoding='utf-8') as handle:
        return json.load(handle)


def test_a3_high_facts_have_the_data_nics_in_nic_order():
    facts = gce.instance_facts(instance('a3-highgpu-8g'))
    assert facts['name'] == 'a3high-vm-1' and facts['project'] == 'ml-prod'
    assert (facts['zone'], facts['region'], facts['status']) == ('us-central1-a', 'us-central1', 'RUNNING')
    assert (facts['machine_type'], facts['technology']) == ('a3-highgpu-8g', 'tcpx')
    assert 'family' not in facts  # the machine type names the catalog entry; technology none means outside it
    assert (facts['gpu_count'], facts['gpu_model']) == (8, 'NVIDIA H100')
    assert facts['provisioning_model'] == 'STANDARD'
    assert facts['labels'] == {'team': 'ml'}
    assert facts['management_ip'].startswith('192.168.0.') and facts['external_ip'].startswith('34.')
    assert (facts['management_network'], facts['management_subnetwork']) == ('a3high-mgmt-net', 'a3high-mgmt-sub')
    assert facts['network_prefix'] == 'a3high'
    assert facts['data_interfaces'] == ['eth1', 'eth2', 'eth3', 'eth4']
    assert [ip.rsplit('.', 1)[0] for ip in facts['data_ips']] == ['192.168.%d' % n for n in range(1, 5)]
    assert facts['data_networks'] == ['a3high-data-net-%d' % n for n in range(1, 5)]
    assert facts['data_subnetworks'] == ['a3high-data-sub-%d' % n for n in range(1, 5)]
    assert facts['data_nic_types'] == ['GVNIC'] * 4
    assert facts['nccl_interfaces'] == 'eth1,eth2,eth3,eth4' and facts['nccl_ctrl_interface'] == 'eth0'
    assert facts['id'] == instance('a3-highgpu-8g')['id']


def test_a3_mega_uses_eight_data_nics_for_tcpxo():
    facts = gce.instance_facts(instance('a3-megagpu-8g'))
    assert facts['technology'] == 'tcpxo'
    assert facts['nccl_interfaces'] == ','.join('eth%d' % n for n in range(1, 9))
    assert len(facts['data_ips']) == 8 and len(set(facts['data_ips'])) == 8


def test_a3_ultra_rdma_nics_have_no_eth_name():
    facts = gce.instance_facts(instance('a3-ultragpu-8g'))
    assert facts['technology'] == 'rdma' and facts['gpu_model'] == 'NVIDIA H200'
    # two gVNIC management NICs, then eight RDMA NICs
    assert facts['data_nic_types'] == ['MRDMA'] * 8
    assert facts['data_interfaces'] == [None] * 8
    assert facts['nccl_interfaces'] is None and facts['nccl_ctrl_interface'] is None


def test_a_vm_outside_the_catalog_is_technology_none_with_its_attached_gpus():
    facts = gce.instance_facts(instance('n1-spot-t4'))
    assert (facts['technology'], facts['machine_type']) == ('none', 'n1-standard-4')
    assert (facts['gpu_count'], facts['gpu_model']) == (1, 'nvidia-tesla-t4')
    assert facts['provisioning_model'] == 'SPOT'
    assert facts['external_ip'] is None and facts['labels'] == {}
    assert facts['network_prefix'] is None and facts['data_ips'] == []


def test_nics_listed_out_of_order_are_put_in_nic_order():
    vm = instance('a3-highgpu-8g')
    ordered = gce.instance_facts(vm)
    vm['networkInterfaces'].reverse()
    assert gce.instance_facts(vm) == ordered


def test_a_minimal_instance_does_not_break_the_mapping():
    facts = gce.instance_facts({'name': 'bare', 'id': '7'})
    assert facts['name'] == 'bare' and facts['technology'] == 'none' and facts['data_ips'] == []
    assert facts['management_ip'] is None and facts['zone'] is None


@pytest.mark.parametrize('preferences, expected', [
    (['name'], 'a3high-vm-1'),
    (['labels.node', 'name'], 'a3high-vm-1'),          # a missing label falls through
    (['labels.node'], 'a3high-vm-1'),                  # ... even when nothing else is listed
    (['labels.team'], 'ml'),
    (['fqdn'], 'a3high-vm-1.us-central1-a.c.ml-prod.internal'),
    (['external_ip', 'name'], 'EXTERNAL'),
    (['internal_ip'], 'INTERNAL'),
    (['hostname', 'id'], 'ID'),
])
def test_hostnames_preference_list(preferences, expected):
    vm = instance('a3-highgpu-8g')
    facts = gce.instance_facts(vm)
    expected = {'EXTERNAL': facts['external_ip'], 'INTERNAL': facts['management_ip'], 'ID': vm['id']}.get(expected, expected)
    assert gce.hostname_for(facts, vm, preferences) == expected


def test_builtin_groups_and_the_facts_they_hold():
    facts = gce.instance_facts(instance('a3-highgpu-8g'))
    groups = {group: (names, parent, direct) for group, names, parent, direct in gce.builtin_groups('gpudirect_', facts)}
    assert list(groups) == ['gpudirect_tcpx', 'gpudirect_a3_highgpu_8g', 'gpudirect_region_us_central1',
                            'gpudirect_zone_us_central1_a', 'gpudirect_project_ml_prod', 'gpudirect_network_a3high']
    # the machine-type group is a child of its technology, the zone of its region; the host is a member of the others
    assert groups['gpudirect_a3_highgpu_8g'][1:] == ('gpudirect_tcpx', True)
    assert groups['gpudirect_zone_us_central1_a'][1:] == ('gpudirect_region_us_central1', True)
    assert [group for group, (_names, _parent, direct) in groups.items() if direct] == [
        'gpudirect_a3_highgpu_8g', 'gpudirect_zone_us_central1_a', 'gpudirect_project_ml_prod', 'gpudirect_network_a3high']
    assert groups['gpudirect_tcpx'][0] == ('technology',)
    assert 'nccl_interfaces' in groups['gpudirect_a3_highgpu_8g'][0] and 'data_networks' in groups['gpudirect_network_a3high'][0]
    held = [name for names, _parent, _direct in groups.values() for name in names]
    # no fact is held by two groups of a host (sibling groups would decide it by name) ...
    assert len(held) == len(set(held))
    # ... and the names users give as playbook inputs stay host facts (group_vars/all would outrank a plugin's group vars)
    assert not set(held) & {'project', 'zone', 'name', 'id', 'status', 'data_ips', 'labels', 'management_ip'}


def test_non_gpu_vms_share_the_none_group():
    groups = {group: (names, parent, direct) for group, names, parent, direct
              in gce.builtin_groups('x_', gce.instance_facts(instance('n1-spot-t4')))}
    assert groups['x_none'] == (('technology', 'gpu_count', 'gpu_model', 'data_interfaces', 'nccl_interfaces',
                                 'nccl_ctrl_interface'), None, True)
    assert not any(name.startswith('x_network_') for name in groups)


def test_every_fact_is_a_value_ansible_keeps_as_it_is():
    """The plugin sets its facts on the inventory directly, without ansible-core's inspection; that is only
    right while every fact is a plain JSON value which that inspection would keep unchanged."""
    # ansible-core 2.19 and later inspect variables (and the plugin goes around it); earlier releases do not.
    internal_json = pytest.importorskip('ansible._internal._json')
    AnsibleVariableVisitor, EncryptedStringBehavior = internal_json.AnsibleVariableVisitor, internal_json.EncryptedStringBehavior
    visitor = AnsibleVariableVisitor(encrypted_string_behavior=EncryptedStringBehavior.FAIL)
    for name in ('a3-highgpu-8g', 'a3-megagpu-8g', 'a3-ultragpu-8g', 'n1-spot-t4'):
        facts = gce.instance_facts(instance(name))
        kept = visitor.visit(facts)   # raises AnsibleVariableTypeError on a type Ansible does not take
        assert kept == facts and json.loads(json.dumps(facts)) == facts


def test_cached_pages_are_packed_and_come_back_the_same():
    pages = {'ml-prod': [{'items': {'zones/us-central1-a': {'instances': [instance('a3-highgpu-8g')] * 50}}}], 'empty': []}
    packed = gce.pack_pages(pages)
    assert isinstance(packed, str) and packed.isascii()
    assert len(packed) * 10 < len(json.dumps(pages))
    assert gce.unpack_pages(packed) == pages


@pytest.mark.parametrize('enabled', [True, False])
def test_garbage_collection_is_paused_for_the_build_and_restored(enabled):
    import gc
    (gc.enable if enabled else gc.disable)()
    try:
        with pytest.raises(RuntimeError):
            with gce.garbage_collection_paused():
                assert not gc.isenabled()
                raise RuntimeError('a failed build')
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


@pytest.mark.parametrize('network, prefix', [('a3high-mgmt-net', 'a3high'), ('my-cluster-mgmt-net', 'my-cluster'),
                                             ('default', None), ('a3high-data-net-1', None), (None, None)])
def test_network_prefix_follows_the_catalog_network_names(network, prefix):
    assert vm.network_prefix(network) == prefix


def test_field_mask_keeps_only_what_it_names():
    page = {'kind': 'compute#instanceAggregatedList', 'nextPageToken': 't', 'unreachables': ['zones/us-east1-b'],
            'items': {'zones/us-central1-a': {'instances': [instance('a3-highgpu-8g')]},
                      'zones/us-central1-b': {'warning': {'code': 'NO_RESULTS_ON_PAGE'}}}}
    masked = gce.apply_mask(copy.deepcopy(page), gce.parse_mask(gce.field_mask(['metadata'])))
    assert set(masked) == {'nextPageToken', 'unreachables', 'items'}
    vm = masked['items']['zones/us-central1-a']['instances'][0]
    assert set(vm) == {'id', 'name', 'zone', 'status', 'machineType', 'labels', 'selfLink', 'scheduling', 'networkInterfaces',
                       'metadata', 'guestAccelerators'} - ({'guestAccelerators'} - set(page['items']['zones/us-central1-a']['instances'][0]))
    assert set(vm['scheduling']) == {'provisioningModel'}
    assert set(vm['networkInterfaces'][0]) == {'name', 'network', 'subnetwork', 'networkIP', 'nicType', 'accessConfigs'}
    assert set(vm['networkInterfaces'][0]['accessConfigs'][0]) == {'natIP'}
    # the facts need nothing the mask leaves out
    assert gce.instance_facts(vm) == gce.instance_facts(instance('a3-highgpu-8g'))


@pytest.mark.parametrize('text', ['a(b', 'a)b', 'a(,b)', '(x)'])
def test_bad_field_masks_are_refused(text):
    with pytest.raises(ValueError):
        gce.parse_mask(text)


@pytest.mark.parametrize('filters, statuses, expected', [
    ([], [], ''),
    ([], ['RUNNING'], 'status = RUNNING'),
    ([], ['RUNNING', 'STAGING'], 'status eq "RUNNING|STAGING"'),
    (['name = a3high-*'], ['RUNNING'], '(name = a3high-*) (status = RUNNING)'),
    (['name = a3high-*'], ['RUNNING', 'STAGING'], 'name = a3high-*'),          # several: on the controller only
    (['name eq a3high-.*'], ['RUNNING'], 'name eq a3high-.*'),               # the other syntax: not mixed
    (['(labels.team = ml)', 'cpuPlatform = "Intel Sapphire Rapids"'], [], '(labels.team = ml) (cpuPlatform = "Intel Sapphire Rapids")'),
])
def test_api_filter(filters, statuses, expected):
    assert gce.api_filter(filters, statuses) == expected


@pytest.mark.parametrize('labels, selector, selected', [
    ({'team': 'ml'}, {}, True),
    ({'team': 'ml'}, {'team': 'ml'}, True),
    ({'team': 'ml'}, {'team': ['infra', 'ml']}, True),
    ({'team': 'ml'}, {'team': '*'}, True),
    ({'team': 'ml'}, {'team': 'infra'}, False),
    ({}, {'team': '*'}, False),
])
def test_label_selector(labels, selector, selected):
    assert gce.label_selector_matches(labels, selector) is selected
