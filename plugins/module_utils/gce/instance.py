# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a group of A3 VMs on Compute Engine, as pure data.

Google's Compute Engine GPUDirect guide creates each VM with one long `gcloud compute instances create` per provisioning model.
build_instance_spec() checks the inputs against the machine-family catalog and returns the
request body gcloud would send for that command (same fields, same scheduling semantics: a Spot
VM never restarts automatically, FLEX_START takes no reservation, RESERVATION_BOUND takes a
specific one); differences() sorts what differs on an existing VM into what can be set in place
(labels, metadata, tags) and what only a new VM can change.
"""

from __future__ import annotations

import copy
import re

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.compute import (
    disk_type_path, image_family_path, machine_type_path, network_path, resource_policy_path, subnetwork_path)
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import vm

DURATION_PATTERN = re.compile(r'^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$')
RESERVATION_KEY = 'compute.googleapis.com/reservation-name'
LABEL_PATTERN = re.compile(r'^[a-z][-_a-z0-9]{0,62}$')
LABEL_VALUE_PATTERN = re.compile(r'^[-_a-z0-9]{0,63}$')


# REGION-LETTER, where REGION is AREA-LOCATIONDIGITS (https://cloud.google.com/compute/docs/regions-zones).
ZONE_PATTERN = re.compile(r'^[a-z]+-[a-z]+[0-9]+-[a-z]$')
REGION_PATTERN = re.compile(r'^[a-z]+-[a-z]+[0-9]+$')
# The COS images of the catalog are 10 GB; a boot disk cannot be smaller than its image.
MIN_BOOT_DISK_GB = 10


def check_zone_name(field, zone):
    """Refuse what cannot be a zone name; whether the zone exists is read from the API (gce/lookups.py)."""
    if REGION_PATTERN.match(zone or ''):
        raise InputError("%s: '%s' is a region, not a zone; give one of its zones, e.g. %s-a" % (field, zone, zone))
    if not ZONE_PATTERN.match(zone or ''):
        raise InputError("%s: '%s' is not a zone name; write it as REGION-LETTER, e.g. us-central1-a" % (field, zone))


def parse_duration(field, value):
    """Seconds of a gcloud duration ('7d', '1h2m3s', '90s')."""
    match = DURATION_PATTERN.match(str(value or '').strip())
    if not value or not match or not any(match.groups()):
        raise InputError("%s: '%s' is not a duration; write it as days, hours, minutes and seconds, e.g. 1h30m or 7d" % (field, value))
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _check_range(field, seconds, bounds, extra_allowed=()):
    low, high = (parse_duration(field, bound) for bound in bounds)
    if seconds in extra_allowed:
        return
    if not low <= seconds <= high:
        allowed = ' (or %s)' % ', '.join('%ss' % value for value in extra_allowed) if extra_allowed else ''
        raise InputError('%s: %ss is outside %s-%s%s' % (field, seconds, bounds[0], bounds[1], allowed))


def instance_names(names=None, count=None, name_pattern=None, prefix=None):
    """The VM names: given, or `count` of them (unset: the catalog's default node count) from `name_pattern` ({prefix},
    {n} from 1)."""
    if names:
        result = list(names)
    else:
        count = families.DEFAULT_NODE_COUNT if count is None else count
        if count < 1:
            raise InputError('count: %d VMs; give 1 or more (or list the names)' % count)
        if not name_pattern:
            raise InputError('name_pattern: give a pattern with {n}, e.g. a3high-vm-{n}, or list the names')
        if prefix is None and '{prefix}' in name_pattern:
            raise InputError('name_pattern: %r uses {prefix}, which comes from network_prefix; give names, or a pattern without {prefix}'
                             % name_pattern)
        try:
            result = [name_pattern.format(prefix=prefix, n=n) for n in range(1, count + 1)]
        except (KeyError, IndexError, ValueError) as exc:
            raise InputError('name_pattern: %r has an unknown placeholder (%s); use {prefix} and {n}' % (name_pattern, exc)) from None
        if len(set(result)) != len(result):
            raise InputError('name_pattern: %r gives the same name to every VM; put {n} in it' % name_pattern)
    for name in result:
        if not compute.GCE_NAME_PATTERN.match(name):
            raise InputError("names: '%s' is not a valid VM name (lowercase letters, digits and hyphens, starting with a letter, "
                             "at most 63 characters)" % name)
    if len(set(result)) != len(result):
        raise InputError('names: %s appears more than once' % sorted({n for n in result if result.count(n) > 1})[0])
    return result


def check_interfaces(family, pairs):
    """The catalog's NIC rule: 1 management + N data NICs, each on its own VPC network."""
    expected = family.nic_count
    if len(pairs) != expected:
        raise InputError('network_interfaces: %s needs %d NICs (%d management + %d data, %s), %d given; use network_prefix or list %d'
                         % (family.machine_type, expected, family.management_nic_count, family.data_nic_count,
                            family.technology, len(pairs), expected))
    networks = [links.resource_name(network) for network, _subnet in pairs]
    duplicated = sorted({name for name in networks if networks.count(name) > 1})
    if duplicated:
        raise InputError('network_interfaces: network %s carries more than one NIC; each NIC of a VM needs its own VPC network'
                         % duplicated[0])


class InstanceSpec:
    """Everything the VMs of one call share, and the request body of one VM."""

    def __init__(self, project, zone, family, body_template, provisioning_model, reservation):
        self.project = project
        self.zone = zone
        self.family = family
        self.template = body_template
        self.provisioning_model = provisioning_model
        self.reservation = reservation

    def body(self, name, zone=None):
        zone = zone or self.zone
        body = copy.deepcopy(self.template)
        body['name'] = name
        body['machineType'] = machine_type_path(zone, self.family.machine_type)
        # Disk types are zonal too: a VM that falls back to another zone names that zone's disk type.
        for disk in body.get('disks', []):
            params = disk.get('initializeParams') or {}
            if params.get('diskType'):
                params['diskType'] = disk_type_path(zone, links.resource_name(params['diskType']))
        return body


def build_instance_spec(project, zone, machine_type, interfaces, provisioning_model='standard', termination_action=None,
                        max_run_duration=None, request_valid_for_duration=None, reservation=None, restart_on_failure=True,
                        image=None, image_family=None, image_project=None, boot_disk_size_gb=None, boot_disk_type=None,
                        metadata=None, service_account_email='default', scopes=None, labels=None, tags=None,
                        placement_policy=None, external_ip=True, group=None, accept_disputed_provisioning_model=False):
    """Check every input against the catalog and return the InstanceSpec; raise InputError first.

    ``group``: the VMs' group (their network prefix), labelled so that teardown finds every VM of it."""
    try:
        family = families.get_family(machine_type, field='machine_type')
        model = compute.check_provisioning_model(family, provisioning_model, field='provisioning_model',
                                                 accept_disputed=accept_disputed_provisioning_model)
        compute.check_boot_disk_type(family.machine_type, boot_disk_type)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if families.GCE not in family.platforms:
        raise InputError('machine_type: %s runs on GKE only in this collection; use the GKE roles' % family.machine_type)
    check_interfaces(family, interfaces)
    scheduling = {'onHostMaintenance': compute.ON_HOST_MAINTENANCE, 'automaticRestart': bool(restart_on_failure)}
    body = {'canIpForward': False, 'deletionProtection': False, 'scheduling': scheduling}
    if model.name != compute.STANDARD:
        scheduling['provisioningModel'] = model.name
    if model.termination_action_required:
        if not termination_action:
            raise InputError('termination_action: %s needs one of %s (what happens to the VM when it is reclaimed or its time ends)'
                             % (model.name.lower(), ', '.join(compute.TERMINATION_ACTIONS)))
        scheduling['instanceTerminationAction'] = termination_action.upper()
    elif termination_action:
        raise InputError('termination_action: only spot, flex_start and reservation_bound VMs take one; remove it for %s' % model.name.lower())
    if model.name == compute.SPOT:
        # gcloud sends SPOT as preemptible without automatic restart, even with --restart-on-failure.
        scheduling.update(automaticRestart=False, preemptible=True)
    if model.max_run_duration_required:
        if not max_run_duration:
            raise InputError('max_run_duration: flex_start VMs need one (%s to %s), e.g. 7d' % compute.MAX_RUN_DURATION_RANGE)
        seconds = parse_duration('max_run_duration', max_run_duration)
        _check_range('max_run_duration', seconds, compute.MAX_RUN_DURATION_RANGE)
        scheduling['maxRunDuration'] = {'seconds': str(seconds)}
    elif max_run_duration:
        raise InputError('max_run_duration: only flex_start VMs take one in this collection; remove it for %s' % model.name.lower())
    if model.request_valid_for_duration_required:
        if request_valid_for_duration is None:
            raise InputError('request_valid_for_duration: flex_start VMs need one: 90s to 2h for this zone only, or 0s for any zone')
        seconds = parse_duration('request_valid_for_duration', request_valid_for_duration) if request_valid_for_duration != '0s' else 0
        _check_range('request_valid_for_duration', seconds, compute.REQUEST_VALID_FOR_DURATION_RANGE, extra_allowed=(0,))
        body['params'] = {'requestValidForDuration': {'seconds': str(seconds)}}
    elif request_valid_for_duration:
        raise InputError('request_valid_for_duration: only flex_start VMs take one; remove it for %s' % model.name.lower())
    if model.reservation_affinity == 'none':
        body['reservationAffinity'] = {'consumeReservationType': 'NO_RESERVATION'}
    if model.reservation_required:
        if not reservation:
            raise InputError('reservation: reservation_bound VMs need the name or URL of a specific reservation')
        body['reservationAffinity'] = {'consumeReservationType': 'SPECIFIC_RESERVATION', 'key': RESERVATION_KEY, 'values': [reservation]}
    elif reservation:
        raise InputError('reservation: only reservation_bound VMs take one; set provisioning_model: reservation_bound or remove it')

    if image and (image_family or image_project):
        raise InputError('image: give either image or image_family/image_project, not both')
    compute.check_cos_image_family(image_family)
    if image:
        source = image
    else:
        source = image_family_path(image_project or family.image_project, image_family or family.image_family)
    disk = {'autoDelete': True, 'boot': True, 'mode': 'READ_WRITE', 'type': 'PERSISTENT', 'initializeParams': {'sourceImage': source}}
    if boot_disk_size_gb is not None:
        disk['initializeParams']['diskSizeGb'] = str(boot_disk_size_gb)
    if boot_disk_type:
        disk['initializeParams']['diskType'] = disk_type_path(zone, boot_disk_type)
    body['disks'] = [disk]

    for key, value in (metadata or {}).items():
        if isinstance(value, (dict, list, tuple)):
            # The API takes a string per key; Python's repr of a nested value would reach the VM as the value.
            raise InputError('metadata: the value of %s is a %s; give a string (for structured data, a JSON string: '
                             "\"{{ value | to_json }}\")" % (key, type(value).__name__))
    items = dict(family.metadata_dict if metadata is None else {})
    items.update(metadata or {})
    if items:
        body['metadata'] = {'items': [{'key': key, 'value': str(value)} for key, value in sorted(items.items())]}
    body['serviceAccounts'] = [{'email': service_account_email, 'scopes': list(scopes or family.scopes)}]
    for key, value in (labels or {}).items():
        if not LABEL_PATTERN.match(key) or not LABEL_VALUE_PATTERN.match(str(value)):
            raise InputError("labels: '%s: %s' is not a valid label (lowercase letters, digits, - and _; keys start with a letter)"
                             % (key, value))
    for key in MARK_KEYS:
        if key in (labels or {}):
            raise InputError('labels: %s is the collection\'s own label (it marks the VMs it creates); choose another key' % key)
    body['labels'] = dict(labels or {}, **dict([compute.MANAGED_LABEL]))
    if group:
        body['labels'][compute.GROUP_LABEL] = group
    for tag in tags or []:
        if not compute.GCE_NAME_PATTERN.match(str(tag)):
            # Tags.items: "Each tag within the list must comply with RFC1035" (compute.v1 discovery document): the API
            # refuses the VM after the network exists.
            raise InputError("tags: '%s' is not a valid network tag (RFC 1035: 1-63 lowercase letters, digits and -, starting "
                             'with a letter, not ending with -)' % tag)
    if tags:
        body['tags'] = {'items': sorted(tags)}
    if placement_policy:
        body['resourcePolicies'] = [resource_policy_path(links.region_of(zone), placement_policy)]

    nics = []
    for index, (network, subnetwork) in enumerate(interfaces):
        nic = {'network': network if '/' in network else network_path(network),
               'subnetwork': subnetwork if '/' in subnetwork else subnetwork_path(links.region_of(zone), subnetwork),
               'nicType': families.GVNIC}
        if index == 0 and external_ip:
            nic['accessConfigs'] = [{'name': 'external-nat', 'type': 'ONE_TO_ONE_NAT'}]
        nics.append(nic)
    body['networkInterfaces'] = nics
    return InstanceSpec(project, zone, family, body, model.name, reservation)


# -- bulk creation ------------------------------------------------------------------------------------------------
# instances.bulkInsert makes many VMs of one zone from one InstanceProperties (the compute.v1 discovery document,
# BulkInsertInstanceResource): it counts as one request against the API rate limits and checks capacity and quota
# before it starts ("About bulk creation of VMs", https://cloud.google.com/compute/docs/instances/multiple/about-bulk-creation).
# Up to 5,000 VMs per call (same page, Limitations).
BULK_MAX = 5000
# Fewer VMs than this go one insert each: for one VM a bulkInsert saves nothing.
BULK_MIN = 2
# InstanceProperties has no name, deletionProtection or params: VMs that need params (flex_start's
# requestValidForDuration) are created one insert each; deletionProtection false is the API's default.
BULK_DROPPED = ('name', 'deletionProtection')


def bulk_properties(body):
    """The InstanceProperties of a bulkInsert that makes VMs like `body`, or None when InstanceProperties cannot say it.

    InstanceProperties take names where an instance takes links: the machine type ("only accepts a machine type name";
    a URL ends in INTERNAL_ERROR), resource policies ("names, not URLs"), and disk types as in instance templates
    (field descriptions of the compute.v1 discovery document; gcloud's bulk create sends the same)."""
    if body.get('params'):
        return None
    properties = {key: copy.deepcopy(value) for key, value in body.items() if key not in BULK_DROPPED}
    properties['machineType'] = links.resource_name(body['machineType'])
    if properties.get('resourcePolicies'):
        properties['resourcePolicies'] = [links.resource_name(policy) for policy in properties['resourcePolicies']]
    for disk in properties.get('disks', []):
        params = disk.get('initializeParams') or {}
        if params.get('diskType'):
            params['diskType'] = links.resource_name(params['diskType'])
    return properties


def bulk_requests(spec, zone, names):
    """The bulkInsert bodies that create `names` in `zone` (one per BULK_MAX names), or [] where one insert per VM is
    the way: fewer than BULK_MIN VMs, or a body InstanceProperties cannot express.

    The VMs are named (perInstanceProperties keys), so a rerun asks again for exactly the missing ones. minCount 1:
    Compute Engine creates as many as the zone takes now instead of none ("If minCount instances cannot be created,
    then no instances will be created"), so each VM is judged on its own, as with one insert each."""
    properties = bulk_properties(spec.body(names[0], zone)) if len(names) >= BULK_MIN else None
    if properties is None:
        return []
    chunks = [names[start:start + BULK_MAX] for start in range(0, len(names), BULK_MAX)]
    return [{'count': str(len(chunk)), 'minCount': '1', 'perInstanceProperties': {name: {} for name in chunk},
             'instanceProperties': properties} for chunk in chunks]


# Fields that can be set on a VM in place, each through its own method with the fingerprint.
IN_PLACE = {'labels': 'setLabels', 'metadata': 'setMetadata', 'tags': 'setTags'}


def comparable(field, value):
    """A field of a body or of an API resource reduced to what decides equality."""
    if field == 'machineType':
        return links.resource_name(value)
    if field == 'networkInterfaces':
        return [(links.resource_name(nic.get('network')), links.resource_name(nic.get('subnetwork')), nic.get('nicType') or 'VIRTIO_NET',
                 bool(nic.get('accessConfigs'))) for nic in value or []]
    if field == 'scheduling':
        value = dict(value or {})
        value.setdefault('provisioningModel', 'STANDARD')
        value.pop('preemptible', None)
        keep = ('onHostMaintenance', 'automaticRestart', 'provisioningModel', 'instanceTerminationAction', 'maxRunDuration')
        return {key: value.get(key) for key in keep if value.get(key) is not None}
    if field == 'reservationAffinity':
        value = dict(value or {})
        return (value.get('consumeReservationType', 'ANY_RESERVATION'), tuple(links.resource_name(v) for v in value.get('values', [])))
    if field == 'metadata':
        return sorted((item['key'], item.get('value')) for item in (value or {}).get('items', []))
    if field == 'tags':
        return sorted((value or {}).get('items', []))
    if field == 'labels':
        return dict(value or {})
    if field == 'serviceAccounts':
        return [(account.get('email'), sorted(account.get('scopes', []))) for account in value or []]
    if field == 'resourcePolicies':
        return sorted(links.resource_name(policy) for policy in value or [])
    return value


# Fields compared on an existing VM; the boot disk's image and size are only read at creation
# (GCE records the resolved image, not the family asked for).
COMPARED = ('machineType', 'networkInterfaces', 'scheduling', 'reservationAffinity', 'metadata', 'tags', 'labels',
            'serviceAccounts', 'resourcePolicies')


# Map and list fields a VM's owner or other tools add to (OS Login and `gcloud compute ssh` write ssh-keys
# metadata, monitoring agents add labels): only the keys the collection sets or the user gives are managed,
# unless the field is named in the module's `exclusive` option, which enforces the whole set.
SHARED_FIELDS = ('metadata', 'labels', 'tags')


def managed_value(field, wanted, current, exclusive=False):
    """What `field` (metadata, labels or tags) should be on the VM: `wanted` alone when exclusive, else what is
    there with `wanted`'s keys set."""
    if field == 'metadata':
        items = {} if exclusive else {item['key']: item.get('value') for item in (current or {}).get('items', [])}
        items.update({item['key']: item.get('value') for item in (wanted or {}).get('items', [])})
        return {'items': [{'key': key, 'value': value} for key, value in sorted(items.items())]}
    if field == 'tags':
        items = set() if exclusive else set((current or {}).get('items', []))
        return {'items': sorted(items | set((wanted or {}).get('items', [])))}
    labels = {} if exclusive else dict(current or {})
    labels.update({key: value for key, value in (wanted or {}).items() if key not in MARK_KEYS})
    # The collection's marks are set when it creates a VM: never added to a VM it adopts, never taken off one.
    labels.update({key: value for key, value in (current or {}).items() if key in MARK_KEYS})
    return labels


MARK_KEYS = (compute.MANAGED_LABEL[0], compute.GROUP_LABEL)


def shared_fields_view(instance):
    """The SHARED_FIELDS of ``instance`` (a VM or the fields it is to have) as ``--diff`` shows them: labels and metadata
    as maps, tags as a sorted list."""
    return {'labels': dict(instance.get('labels') or {}),
            'metadata': {item['key']: item.get('value') for item in (instance.get('metadata') or {}).get('items', [])},
            'tags': sorted((instance.get('tags') or {}).get('items', []))}


def planned_shared_fields(body, current, exclusive=()):
    """shared_fields_view of what a VM that is ``current`` will have once ``body``'s shared fields are set in place."""
    return shared_fields_view({field: managed_value(field, body.get(field), current.get(field), field in exclusive)
                               for field in SHARED_FIELDS})


def is_managed(instance):
    """Whether the collection created ``instance`` (its mark, the label MANAGED_LABEL)."""
    return compute.carries_mark(instance.get('labels'))


def differences(body, current, exclusive=()):
    """(in_place, recreate): the compared fields of `body` that differ on `current`.

    exclusive: the SHARED_FIELDS whose whole set is enforced; the others are compared on their managed keys only."""
    in_place, recreate = [], []
    for field in COMPARED:
        wanted = body.get(field)
        if field in SHARED_FIELDS:
            wanted = managed_value(field, wanted, current.get(field), field in exclusive)
        elif wanted is None and field in ('resourcePolicies', 'reservationAffinity'):
            continue
        if field == 'serviceAccounts':
            wanted = [dict(account) for account in wanted]   # copies: the default email is filled in below
            if wanted and wanted[0]['email'] == 'default':
                # The API answers with the project's default service account's address.
                current_accounts = current.get('serviceAccounts') or [{}]
                wanted[0]['email'] = current_accounts[0].get('email')
        if comparable(field, wanted) != comparable(field, current.get(field)):
            (in_place if field in IN_PLACE else recreate).append(field)
    return in_place, recreate


def instance_summary(instance):
    """What the module returns for one VM: the inventory's view of it (gce/vm.py: which NICs are data NICs), with every
    NIC's network and type in NIC order."""
    facts = vm.instance_facts(instance)
    nics = sorted(instance.get('networkInterfaces') or [], key=vm.nic_index)
    summary = {key: facts[key] for key in ('name', 'zone', 'status', 'machine_type', 'provisioning_model', 'management_ip',
                                           'external_ip', 'data_ips', 'self_link')}
    summary.update(networks=[links.resource_name(nic.get('network')) for nic in nics],
                   nic_types=[nic.get('nicType', 'VIRTIO_NET') for nic in nics])
    return summary


def planned_summary(spec, name):
    """The summary of a VM that does not exist (yet): what it would be, with status ABSENT and no addresses."""
    body = spec.body(name)
    return {
        'name': name, 'zone': None, 'status': 'ABSENT', 'machine_type': spec.family.machine_type,
        'provisioning_model': spec.provisioning_model, 'management_ip': None, 'external_ip': None, 'data_ips': [],
        'networks': [links.resource_name(nic['network']) for nic in body['networkInterfaces']],
        'nic_types': [nic['nicType'] for nic in body['networkInterfaces']], 'self_link': None,
    }


# The options of gce_gpudirect_instance, here so that gpudirect_plan checks a playbook's VM inputs with the same spec.
ARGUMENT_SPEC = {
    'names': {'type': 'list', 'elements': 'str'},
    'count': {'type': 'int'},
    'name_pattern': {'type': 'str', 'default': '{prefix}-vm-{n}'},
    'zone': {'type': 'str', 'required': True},
    'fallback_zones': {'type': 'list', 'elements': 'str', 'default': []},
    'machine_type': {'type': 'str', 'required': True, 'choices': list(families.GCE_MACHINE_TYPES)},
    'network_prefix': {'type': 'str'},
    'network_interfaces': {'type': 'list', 'elements': 'dict', 'options': {
        'network': {'type': 'str', 'required': True}, 'subnetwork': {'type': 'str', 'required': True}}},
    'external_ip': {'type': 'bool', 'default': True},
    'provisioning_model': {'type': 'str', 'default': 'standard', 'choices': ['standard', 'spot', 'flex_start', 'reservation_bound']},
    'accept_disputed_provisioning_model': {'type': 'bool', 'default': False},
    'termination_action': {'type': 'str', 'choices': ['STOP', 'DELETE']},
    'max_run_duration': {'type': 'str'},
    'request_valid_for_duration': {'type': 'str'},
    'reservation': {'type': 'str'},
    'restart_on_failure': {'type': 'bool', 'default': True},
    'image': {'type': 'str'},
    'image_family': {'type': 'str'},
    'image_project': {'type': 'str'},
    'boot_disk_size_gb': {'type': 'int'},
    'boot_disk_type': {'type': 'str'},
    'metadata': {'type': 'dict'},
    'service_account_email': {'type': 'str', 'default': 'default'},
    'service_account_scopes': {'type': 'list', 'elements': 'str'},
    'labels': {'type': 'dict'},
    'tags': {'type': 'list', 'elements': 'str'},
    'placement_policy': {'type': 'str'},
    'create_placement_policy': {'type': 'bool', 'default': False},
    'state': {'type': 'str', 'default': 'present', 'choices': ['present', 'started', 'stopped', 'absent']},
    'exclusive': {'type': 'list', 'elements': 'str', 'default': [], 'choices': list(SHARED_FIELDS)},
    'recreate': {'type': 'bool', 'default': False},
    'timeout': {'type': 'int', 'default': 900},
}
MUTUALLY_EXCLUSIVE = [('names', 'count'), ('network_prefix', 'network_interfaces')]
REQUIRED_ONE_OF = [('network_prefix', 'network_interfaces')]


def build_from_params(params, project):
    """The VM names and their shared spec, from the module options; InputError on bad input."""
    names = instance_names(params['names'], params['count'], params['name_pattern'], params['network_prefix'])
    try:
        family = families.get_family(params['machine_type'])
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if params['network_prefix']:
        interfaces = compute.network_interfaces(params['network_prefix'], family.data_nic_count)
    else:
        interfaces = [(nic['network'], nic['subnetwork']) for nic in params['network_interfaces']]
    check_zone_name('zone', params['zone'])
    region = links.region_of(params['zone'])
    for zone in params['fallback_zones']:
        check_zone_name('fallback_zones', zone)
        if links.region_of(zone) != region:
            raise InputError('fallback_zones: %s is not in %s, the region of zone %s and of the GPUDirect network\'s subnets; '
                             'give zones of %s' % (zone, region, params['zone'], region))
    if params['boot_disk_size_gb'] is not None and params['boot_disk_size_gb'] < MIN_BOOT_DISK_GB:
        raise InputError('boot_disk_size_gb: %d GB; a boot disk needs at least %d GB (the size of the COS image), e.g. 200 as in the '
                         'manual' % (params['boot_disk_size_gb'], MIN_BOOT_DISK_GB))
    if params['timeout'] <= 0:
        raise InputError('timeout: %d seconds; give how long to wait for each VM, e.g. 900' % params['timeout'])
    if params['create_placement_policy'] and not params['placement_policy']:
        raise InputError('placement_policy: give the name of the compact placement policy to create')
    spec = build_instance_spec(
        project, params['zone'], params['machine_type'], interfaces, provisioning_model=params['provisioning_model'],
        termination_action=params['termination_action'], max_run_duration=params['max_run_duration'],
        request_valid_for_duration=params['request_valid_for_duration'], reservation=params['reservation'],
        restart_on_failure=params['restart_on_failure'], image=params['image'], image_family=params['image_family'],
        image_project=params['image_project'], boot_disk_size_gb=params['boot_disk_size_gb'],
        boot_disk_type=params['boot_disk_type'], metadata=params['metadata'], service_account_email=params['service_account_email'],
        scopes=params['service_account_scopes'], labels=params['labels'], tags=params['tags'],
        placement_policy=params['placement_policy'], external_ip=params['external_ip'], group=params['network_prefix'],
        accept_disputed_provisioning_model=params['accept_disputed_provisioning_model'])
    return names, spec


# -- what to do with each VM: one pure decision per VM -----------------------------------------------------------
# Statuses of a VM on its way to RUNNING or to TERMINATED (https://cloud.google.com/compute/docs/instances/instance-life-cycle).
STARTING = ('PROVISIONING', 'STAGING', 'REPAIRING')
STOPPING = ('STOPPING', 'SUSPENDING')
STOPPED = ('TERMINATED', 'SUSPENDED', 'STOPPED')
RUNNING = 'RUNNING'


class VmPlan:
    """The steps for one VM, in order, and the status the call waits for afterwards (None: no wait).

    steps: any of create, recreate, update, start, stop, delete, wait; [] leaves the VM as it is. refused names
    the fields that only a new VM can change when recreate is off. in_place: the fields an update sets; fixed: the
    fields a recreate is for."""

    def __init__(self, steps=(), wait_for=None, refused=(), in_place=(), fixed=()):
        self.steps = list(steps)
        self.wait_for = wait_for
        self.refused = list(refused)
        self.in_place = list(in_place)
        self.fixed = list(fixed)

    def __eq__(self, other):
        return (self.steps, self.wait_for, self.refused) == (other.steps, other.wait_for, other.refused)

    def __repr__(self):
        return 'VmPlan(%r, wait_for=%r, refused=%r)' % (self.steps, self.wait_for, self.refused)


def plan_vm(status, state, in_place=(), fixed=(), recreate=False):
    """The plan of one VM: status is its current status (None when it does not exist), state the module's state;
    in_place and fixed (differences) go with it for the steps that use them."""
    plan = _vm_steps(status, state, in_place, fixed, recreate)
    plan.in_place, plan.fixed = list(in_place), list(fixed)
    return plan


def _vm_steps(status, state, in_place, fixed, recreate):
    """The steps of plan_vm.

    Only started and stopped change a VM's power state; present leaves a stopped VM stopped and waits for a VM
    that is still starting (a rerun during PROVISIONING waits instead of reporting nothing to do)."""
    if state == 'absent':
        return VmPlan(['delete']) if status is not None else VmPlan()
    if status is None:
        return VmPlan(['create', 'stop'], 'TERMINATED') if state == 'stopped' else VmPlan(['create'], RUNNING)
    if fixed and not recreate:
        return VmPlan(refused=fixed)
    if fixed:
        return VmPlan(['recreate', 'stop'], 'TERMINATED') if state == 'stopped' else VmPlan(['recreate'], RUNNING)
    steps = ['update'] if in_place else []
    if status in STARTING:
        return VmPlan(['wait'] + steps + (['stop'] if state == 'stopped' else []), 'TERMINATED' if state == 'stopped' else RUNNING)
    if status in STOPPING:
        return VmPlan(['wait'] + steps + (['start'] if state == 'started' else []), RUNNING if state == 'started' else 'TERMINATED')
    if state == 'started' and status in STOPPED:
        return VmPlan(steps + ['start'], RUNNING)
    if state == 'stopped' and status == RUNNING:
        return VmPlan(steps + ['stop'], 'TERMINATED')
    return VmPlan(steps)
