"""gce/instance.py: names, the request body's checks, and which keys of metadata, labels and tags are managed."""

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import instance as gce_instance
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

BASE = {'names': None, 'count': 2, 'name_pattern': '{prefix}-vm-{n}', 'zone': 'us-central1-a', 'fallback_zones': [],
        'machine_type': 'a3-highgpu-8g', 'network_prefix': 'hi', 'network_interfaces': None, 'external_ip': True,
        'provisioning_model': 'standard', 'termination_action': None, 'max_run_duration': None, 'request_valid_for_duration': None,
        'reservation': None, 'restart_on_failure': True, 'image': None, 'image_family': None, 'image_project': None,
        'boot_disk_size_gb': 200, 'boot_disk_type': None, 'metadata': None, 'service_account_email': 'default',
        'service_account_scopes': None, 'labels': None, 'tags': None, 'placement_policy': None, 'create_placement_policy': False,
        'state': 'present', 'exclusive': [], 'recreate': False, 'timeout': 900, 'accept_disputed_provisioning_model': False}


def build(**overrides):
    return gce_instance.build_from_params(dict(BASE, **overrides), 'test-project')


def test_names_from_count_and_pattern():
    names, spec = build()
    assert names == ['hi-vm-1', 'hi-vm-2']
    assert spec.body('hi-vm-1')['machineType'] == 'zones/us-central1-a/machineTypes/a3-highgpu-8g'


def test_unset_count_is_the_catalogs_default_node_count():
    names, _spec = build(count=None)
    # The two hosts of the NCCL test, as the module's documentation says.
    assert names == ['hi-vm-1', 'hi-vm-2'] and len(names) == families.DEFAULT_NODE_COUNT


@pytest.mark.parametrize('overrides, message', [
    ({'count': 0}, 'count: 0 VMs; give 1 or more'),
    ({'count': -1}, 'count: -1 VMs; give 1 or more'),
    ({'zone': 'us-central1'}, "zone: 'us-central1' is a region, not a zone"),
    ({'zone': 'central'}, "zone: 'central' is not a zone name"),
    ({'fallback_zones': ['us-central1']}, "fallback_zones: 'us-central1' is a region"),
    ({'boot_disk_size_gb': -10}, 'boot_disk_size_gb: -10 GB; a boot disk needs at least 10 GB'),
    ({'boot_disk_size_gb': 0}, 'boot_disk_size_gb: 0 GB'),
    ({'timeout': 0}, 'timeout: 0 seconds'),
    # The API refuses these after the network exists; a nested metadata value was sent as Python's repr.
    ({'tags': ['gpu', 'Tag_With_Upper']}, "tags: 'Tag_With_Upper' is not a valid network tag (RFC 1035"),
    ({'tags': ['ends-with-']}, "tags: 'ends-with-' is not a valid network tag"),
    ({'metadata': {'startup': {'nested': 1}}}, 'metadata: the value of startup is a dict; give a string'),
    ({'labels': {'aiinfra-gpudirect-group': 'x'}}, "labels: aiinfra-gpudirect-group is the collection's own label"),
])
def test_bad_inputs_name_the_field(overrides, message):
    with pytest.raises(InputError) as raised:
        build(**overrides)
    assert str(raised.value).startswith(message)


CURRENT = {'metadata': {'items': [{'key': 'cos-update-strategy', 'value': 'update_disabled'}, {'key': 'ssh-keys', 'value': 'alice:key'}],
                        'fingerprint': 'f1'},
           'labels': {'team': 'ml', 'owner': 'alice'}, 'tags': {'items': ['alice-debug', 'gpu'], 'fingerprint': 'f2'}}


@pytest.mark.parametrize('field, wanted, exclusive, expected', [
    ('metadata', {'items': [{'key': 'cos-update-strategy', 'value': 'update_disabled'}]}, False, CURRENT['metadata']['items']),
    ('metadata', {'items': [{'key': 'cos-update-strategy', 'value': 'update_disabled'}]}, True,
     [{'key': 'cos-update-strategy', 'value': 'update_disabled'}]),
    ('metadata', {'items': [{'key': 'ssh-keys', 'value': 'bob:key'}]}, False,
     [{'key': 'cos-update-strategy', 'value': 'update_disabled'}, {'key': 'ssh-keys', 'value': 'bob:key'}]),
    ('labels', {'team': 'hpc'}, False, {'team': 'hpc', 'owner': 'alice'}),
    ('labels', {'team': 'hpc'}, True, {'team': 'hpc'}),
    ('labels', None, False, {'team': 'ml', 'owner': 'alice'}),
    ('labels', None, True, {}),
    ('tags', {'items': ['gpu']}, False, ['alice-debug', 'gpu']),
    ('tags', {'items': ['gpu']}, True, ['gpu']),
])
def test_managed_value(field, wanted, exclusive, expected):
    value = gce_instance.managed_value(field, wanted, CURRENT[field], exclusive)
    assert (value['items'] if field != 'labels' else value) == expected


def test_keys_added_by_others_are_no_difference_unless_exclusive():
    _names, spec = build(labels={'team': 'ml'}, tags=['gpu'])
    vm = dict(spec.body('hi-vm-1'), **CURRENT)
    vm['serviceAccounts'] = [{'email': '1-compute@developer.gserviceaccount.com', 'scopes': ['https://www.googleapis.com/auth/cloud-platform']}]
    assert gce_instance.differences(spec.body('hi-vm-1'), vm) == ([], [])
    assert gce_instance.differences(spec.body('hi-vm-1'), vm, exclusive=['metadata', 'labels', 'tags']) == (['metadata', 'tags', 'labels'], [])


# -- bulkInsert bodies ---------------------------------------------------------------------------------------------
def test_a_bulk_request_names_the_vms_and_says_instance_properties_with_names_not_links():
    names, spec = build(count=3, boot_disk_type='pd-ssd', placement_policy='compact')
    [body] = gce_instance.bulk_requests(spec, 'us-central1-b', names)
    assert (body['count'], body['minCount'], list(body['perInstanceProperties'])) == ('3', '1', names)
    properties = body['instanceProperties']
    assert properties['machineType'] == 'a3-highgpu-8g'
    assert properties['disks'][0]['initializeParams']['diskType'] == 'pd-ssd'
    assert properties['resourcePolicies'] == ['compact']
    assert 'name' not in properties and 'deletionProtection' not in properties
    assert properties['networkInterfaces'] == spec.body(names[0], 'us-central1-b')['networkInterfaces']
    assert spec.template['disks'][0]['initializeParams']['diskType'] == 'zones/us-central1-a/diskTypes/pd-ssd'   # the spec is untouched


def test_one_vm_and_flex_start_vms_are_not_bulk_requests():
    names, spec = build(count=1)
    assert gce_instance.bulk_requests(spec, 'us-central1-a', names) == []
    names, spec = build(count=4, provisioning_model='flex_start', termination_action='DELETE', max_run_duration='1h',
                        request_valid_for_duration='90s')
    assert gce_instance.bulk_requests(spec, 'us-central1-a', names) == []


def test_more_vms_than_one_call_takes_are_split(monkeypatch):
    monkeypatch.setattr(gce_instance, 'BULK_MAX', 3)
    names, spec = build(count=7)
    bodies = gce_instance.bulk_requests(spec, 'us-central1-a', names)
    assert [list(body['perInstanceProperties']) for body in bodies] == [names[0:3], names[3:6], names[6:7]]
    assert [body['count'] for body in bodies] == ['3', '3', '1']
