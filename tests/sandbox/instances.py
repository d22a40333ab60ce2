"""Compute Engine VM instances (insert, bulkInsert, start, stop, delete), reservations and resource
policies.

An instance is checked as GCE checks it: the machine type, image, networks, subnetworks,
reservation and resource policies it names must exist (in the right zone or region), and the rules
in ``rules.py`` hold.  Its NICs get addresses from their subnets; ``accessConfigs`` get an external
``natIP``.  Status goes PROVISIONING -> RUNNING when the insert operation is DONE; stop goes
STOPPING -> TERMINATED, start STAGING -> RUNNING, delete STOPPING -> gone.
"""

import ipaddress
import re

from . import catalog
from .compute import (collection, delete, fingerprint, insert, link, name_of, new_key, new_resource, project_number,
                      ref_key, register_crud, require, resolve_image, resource_key, scope_path)
from .errors import invalid, resource_in_use
from .networking import find_subnet_for_region
from .operations import start_compute_operation
from .registry import handles
from .rules import check_instance, check_name, field_error, is_gpu_machine
from .store import rfc3339

register_crud('instances')
register_crud('reservations')
register_crud('resourcePolicies')

_SPOT_LIKE = ('SPOT', 'FLEX_START')


def _used_addresses(call, subnet_link):
    used = set()
    for _key, instance in call.store.items(collection('instances')):
        for nic in instance.get('networkInterfaces', []):
            if nic.get('subnetwork') == subnet_link:
                used.add(nic.get('networkIP'))
    return used


def _allocate_ip(call, subnet, subnet_link, taken_now):
    """Lowest free address; GCE keeps the network, gateway, second-to-last and broadcast addresses."""
    cidr = ipaddress.ip_network(subnet['ipCidrRange'])
    used = _used_addresses(call, subnet_link) | taken_now
    for offset in range(2, cidr.num_addresses - 2):
        address = str(cidr.network_address + offset)
        if address not in used:
            return address
    raise invalid("IP space of '%s' is exhausted." % subnet_link)


def _nat_ip(call):
    serial = call.store.new_serial()
    return '34.%d.%d.%d' % (16 + serial // 65536 % 200, serial // 256 % 256, serial % 256 or 1)


def _network_interfaces(call, body, zone):
    """Resolve every NIC's network and subnetwork; return (interfaces, network key of each NIC)."""
    region = catalog.region_of_zone(zone)
    interfaces, network_keys, taken = [], [], set()
    for index, nic in enumerate(body.get('networkInterfaces') or [{}]):
        field = 'networkInterfaces[%d]' % index
        network_key = ref_key(nic['network'], 'networks', call.project) if nic.get('network') else None
        subnet_key = ref_key(nic['subnetwork'], 'subnetworks', call.project, 'regions', region) if nic.get('subnetwork') else None
        if network_key is None and subnet_key is None:
            network_key = 'projects/%s/global/networks/default' % call.project
        if network_key and call.store.get(collection('networks'), network_key) is None:
            raise field_error(field + '.network', nic.get('network') or link(network_key), 'The referenced network resource cannot be found.')
        if subnet_key:
            subnet = call.store.get(collection('subnetworks'), subnet_key)
            if subnet is None:
                raise field_error(field + '.subnetwork', nic['subnetwork'], 'The referenced subnetwork resource cannot be found.')
            if subnet_key.split('/')[3] != region:
                raise field_error(field + '.subnetwork', nic['subnetwork'],
                                  "Subnetwork must be in the same region as the instance's zone (%s)." % region)
            subnet_network = ref_key(subnet['network'], 'networks', call.project)
            if network_key and network_key != subnet_network:
                raise field_error(field + '.subnetwork', nic['subnetwork'], "Subnetwork does not belong to network '%s'." % network_key)
            network_key = subnet_network
        else:
            found = find_subnet_for_region(call, network_key, region)
            if found is None or not call.store.get(collection('networks'), network_key).get('autoCreateSubnetworks'):
                raise field_error(field + '.subnetwork', '', 'Subnetwork should be specified for custom subnetmode network')
            subnet_key, subnet = found
        address = nic.get('networkIP') or _allocate_ip(call, subnet, link(subnet_key), taken)
        taken.add(address)
        interface = dict(nic)
        interface.update({
            'kind': 'compute#networkInterface',
            'name': 'nic%d' % index,
            'network': link(network_key),
            'subnetwork': link(subnet_key),
            'networkIP': address,
            'fingerprint': fingerprint(call),
            'stackType': nic.get('stackType', 'IPV4_ONLY'),
        })
        if nic.get('accessConfigs'):
            interface['accessConfigs'] = [dict(config, kind='compute#accessConfig', type=config.get('type', 'ONE_TO_ONE_NAT'),
                                               name=config.get('name', 'External NAT'), networkTier=config.get('networkTier', 'PREMIUM'),
                                               natIP=config.get('natIP') or _nat_ip(call))
                                          for config in nic['accessConfigs']]
        interfaces.append(interface)
        network_keys.append(network_key)
    return interfaces, network_keys


def _disks(call, body, zone, machine_type, instance_name):
    disks = []
    for index, disk in enumerate(body.get('disks', [])):
        field = 'disks[%d]' % index
        attached = dict(disk)
        attached.pop('initializeParams', None)
        params = disk.get('initializeParams') or {}
        attached.update({'kind': 'compute#attachedDisk', 'type': disk.get('type', 'PERSISTENT'), 'mode': disk.get('mode', 'READ_WRITE'),
                         'index': index, 'boot': disk.get('boot', index == 0), 'autoDelete': disk.get('autoDelete', False),
                         'deviceName': disk.get('deviceName', 'persistent-disk-%d' % index),
                         'interface': disk.get('interface', 'NVME' if is_gpu_machine(machine_type) else 'SCSI')})
        if params.get('sourceImage'):
            resolved = resolve_image(params['sourceImage'], call.project)
            if resolved is None:
                raise field_error(field + '.initializeParams.sourceImage', params['sourceImage'], 'The referenced image resource cannot be found.')
            image = catalog.image_resource(*resolved)
            size = int(params.get('diskSizeGb', image['diskSizeGb']))
            if size < int(image['diskSizeGb']):
                raise field_error(field + '.initializeParams.diskSizeGb', size,
                                  'Requested disk size cannot be smaller than the image size (%s GB)' % image['diskSizeGb'])
            disk_name = params.get('diskName', instance_name if index == 0 else '%s-%d' % (instance_name, index))
            attached.update({'source': link('projects/%s/zones/%s/disks/%s' % (call.project, zone, disk_name)),
                             'diskSizeGb': str(size), 'licenses': image['licenses'], 'guestOsFeatures': image['guestOsFeatures'],
                             'architecture': image['architecture']})
        elif not disk.get('source'):
            raise field_error(field + '.source', '', 'Either source or initializeParams.sourceImage must be given for a persistent disk.')
        disks.append(attached)
    return disks


def _scheduling(body, machine_type):
    """The scheduling block GCE stores, with its defaults filled in."""
    given = dict(body.get('scheduling') or {})
    model = given.get('provisioningModel') or ('SPOT' if given.get('preemptible') else 'STANDARD')
    spot_like = model in _SPOT_LIKE or given.get('preemptible')
    scheduling = dict(given)
    scheduling['provisioningModel'] = model
    scheduling.setdefault('onHostMaintenance', 'TERMINATE' if (spot_like or is_gpu_machine(machine_type)) else 'MIGRATE')
    scheduling.setdefault('automaticRestart', not spot_like)
    scheduling.setdefault('preemptible', model == 'SPOT')
    return given, scheduling


def _reservation_key(call, instance, zone):
    affinity = instance.get('reservationAffinity') or {}
    if affinity.get('consumeReservationType') != 'SPECIFIC_RESERVATION':
        return None
    values = affinity.get('values') or []
    if not values:
        raise field_error('reservationAffinity.values', '', 'A specific reservation must be named.')
    parts = ref_key(values[0], 'reservations', call.project, 'zones', zone).split('/')
    # "projects/P/reservations/NAME" (shared reservation) names the reservation in the instance's zone.
    return 'projects/%s/zones/%s/reservations/%s' % (parts[1], parts[3] if len(parts) == 6 else zone, parts[-1])


def build_instance(call, body, zone, key):
    resource = new_resource(call, 'instances', key, body)
    if not body.get('machineType'):
        raise field_error('machineType', '', 'The machine type must be specified.')
    machine_key = ref_key(body['machineType'], 'machineTypes', call.project, 'zones', zone)
    machine_type = name_of(machine_key)
    if machine_type not in catalog.MACHINE_TYPES:
        raise field_error('machineType', body['machineType'], "Machine type with name '%s' does not exist in zone '%s'." % (machine_type, zone))
    if machine_key.split('/')[3] != zone:
        raise field_error('machineType', body['machineType'], 'Machine type must be in the same zone as the instance.')
    interfaces, network_keys = _network_interfaces(call, body, zone)
    given_scheduling, scheduling = _scheduling(body, machine_type)
    check_instance(body, machine_type, network_keys, dict(given_scheduling, provisioningModel=scheduling['provisioningModel']))
    reservation_key = _reservation_key(call, body, zone)
    if reservation_key and call.store.get(collection('reservations'), reservation_key) is None:
        raise field_error('reservationAffinity', reservation_key, "Reservation '%s' does not exist." % reservation_key)
    region = catalog.region_of_zone(zone)
    policies = []
    for index, policy in enumerate(body.get('resourcePolicies', [])):
        policy_key = ref_key(policy, 'resourcePolicies', call.project, 'regions', region)
        if call.store.get(collection('resourcePolicies'), policy_key) is None:
            raise field_error('resourcePolicies[%d]' % index, policy, 'The referenced resource policy cannot be found.')
        policies.append(link(policy_key))
    number = project_number(call.project)
    spec = catalog.MACHINE_TYPES[machine_type]
    resource.update({
        'zone': link('projects/%s/zones/%s' % (call.project, zone)),
        'machineType': link('projects/%s/zones/%s/machineTypes/%s' % (call.project, zone, machine_type)),
        'status': 'PROVISIONING',
        'cpuPlatform': spec['cpu_platform'],
        'networkInterfaces': interfaces,
        'disks': _disks(call, body, zone, machine_type, body['name']),
        'scheduling': scheduling,
        'canIpForward': body.get('canIpForward', False),
        'deletionProtection': body.get('deletionProtection', False),
        'startRestricted': False,
        'lastStartTimestamp': rfc3339(call.now),
        'fingerprint': fingerprint(call),
        'labelFingerprint': '42WmSpB8rSM=',
        'metadata': dict(body.get('metadata') or {}, kind='compute#metadata', fingerprint=fingerprint(call)),
        'tags': dict(body.get('tags') or {}, fingerprint=fingerprint(call)),
        'serviceAccounts': [dict(account, email='%s-compute@developer.gserviceaccount.com' % number if account.get('email', 'default') == 'default'
                                 else account['email']) for account in body.get('serviceAccounts', [])],
        'shieldedInstanceConfig': body.get('shieldedInstanceConfig', {'enableSecureBoot': False, 'enableVtpm': True, 'enableIntegrityMonitoring': True}),
        'satisfiesPzi': True,
    })
    if policies:
        resource['resourcePolicies'] = policies
    if spec.get('accelerators') and not body.get('guestAccelerators'):
        bundled = spec['accelerators'][0]
        resource['guestAccelerators'] = [{
            'acceleratorCount': bundled['guestAcceleratorCount'],
            'acceleratorType': link('projects/%s/zones/%s/acceleratorTypes/%s' % (call.project, zone, bundled['guestAcceleratorType'])),
        }]
    if reservation_key:
        resource['_reservation'] = reservation_key
    return resource


def _reservation_usage(call, reservation_key, delta):
    reservation = call.store.get(collection('reservations'), reservation_key) if reservation_key else None
    if reservation is not None:
        specific = reservation.setdefault('specificReservation', {})
        specific['inUseCount'] = str(max(0, int(specific.get('inUseCount', '0')) + delta))


@handles('compute.instances.insert')
def insert_instance(call):
    zone = call.params['zone']
    key = new_key(call, 'instances')
    resource = build_instance(call, call.body, zone, key)
    operation = insert(call, 'instances', key, resource, final_fields={'status': 'RUNNING'}, quota_metric=_gpu_quota(resource))
    if call.fault is None:
        _reservation_usage(call, resource.get('_reservation'), +1)
    return operation


def _gpu_quota(resource):
    accelerators = resource.get('guestAccelerators')
    if accelerators:
        # nvidia-h100-mega-80gb -> NVIDIA_H100_MEGA_GPUS, the quota metric's name
        return re.sub(r'_\d+GB$', '', name_of(accelerators[0]['acceleratorType']).upper().replace('-', '_')) + '_GPUS'
    return 'CPUS'


def _bulk_names(call, body, zone):
    names = list((body.get('perInstanceProperties') or {}).keys())
    count = int(body.get('count', len(names)))
    pattern = body.get('namePattern')
    serial = 1
    while len(names) < count:
        if not pattern or '#' not in pattern:
            raise field_error('namePattern', pattern, 'A name pattern with # is required when count exceeds the named instances.')
        width = pattern.count('#')
        name = pattern.replace('#' * width, str(serial).zfill(width))
        serial += 1
        if name not in names and call.store.get(collection('instances'), 'projects/%s/zones/%s/instances/%s' % (call.project, zone, name)) is None:
            names.append(name)
    return names


@handles('compute.instances.bulkInsert')
def bulk_insert_instances(call):
    zone = call.params['zone']
    scope = scope_path(call, 'zones')
    body = call.body
    if not body.get('instanceProperties'):
        raise field_error('instanceProperties', '', 'instanceProperties (or a source instance template) must be given.')
    built = []
    for name in _bulk_names(call, body, zone):
        check_name(name)
        instance_body = dict(body['instanceProperties'], name=name)
        instance_body.update((body.get('perInstanceProperties') or {}).get(name, {}))
        instance_body['name'] = name
        built.append(build_instance(call, instance_body, zone, '%s/instances/%s' % (scope, name)))
    # As GCE does: one bulkInsert operation, and one insert operation per VM sharing its operationGroupId
    # (gcloud lists the zone's operations filtered by that id to report what was created).
    group_id = 'bulk-%d' % call.store.new_serial()
    quota = _gpu_quota(built[0]) if built else 'CPUS'
    if call.fault is None:
        for resource in built:
            key = scope + '/instances/' + resource['name']
            call.store.put(collection('instances'), key, resource)
            effect = {'action': 'update', 'collection': collection('instances'), 'key': key, 'fields': {'status': 'RUNNING'}}
            start_compute_operation(call, scope, 'insert', key, resource['id'], [effect], quota, group_id)
            _reservation_usage(call, resource.get('_reservation'), +1)
    operation = start_compute_operation(call, scope, 'bulkInsert', scope + '/instances', None, [], quota, group_id)
    operation.pop('targetId', None)
    return operation


@handles('compute.instances.delete')
def delete_instance(call):
    key = resource_key(call, 'instances')
    instance = require(call, 'instances', key)
    if instance.get('deletionProtection'):
        raise invalid("The instance '%s' has deletion protection enabled." % key)
    reservation = instance.get('_reservation')
    operation = delete(call, 'instances', key, interim_fields={'status': 'STOPPING'})
    _reservation_usage(call, reservation, -1)
    return operation


def _transition(call, operation_type, interim, final):
    key = resource_key(call, 'instances')
    instance = require(call, 'instances', key)
    if call.fault is None:
        instance['status'] = interim
    effects = [] if call.fault else [{'action': 'update', 'collection': collection('instances'), 'key': key, 'fields': final}]
    return start_compute_operation(call, key.rsplit('/', 2)[0], operation_type, key, instance['id'], effects)


@handles('compute.instances.stop')
def stop_instance(call):
    return _transition(call, 'stop', 'STOPPING', {'status': 'TERMINATED'})


@handles('compute.instances.start')
def start_instance(call):
    return _transition(call, 'start', 'STAGING', {'status': 'RUNNING'})


@handles('compute.reservations.insert')
def insert_reservation(call):
    zone = call.params['zone']
    body = call.body
    key = new_key(call, 'reservations')
    resource = new_resource(call, 'reservations', key, body)
    specific = dict(body.get('specificReservation') or {})
    properties = dict(specific.get('instanceProperties') or {})
    machine_type = properties.get('machineType')
    if body.get('specificReservation') is not None:
        if machine_type not in catalog.MACHINE_TYPES:
            raise field_error('specificReservation.instanceProperties.machineType', machine_type or '',
                              "Machine type with name '%s' does not exist in zone '%s'." % (machine_type, zone))
        if int(specific.get('count', 0)) <= 0:
            raise field_error('specificReservation.count', specific.get('count', 0), 'The reservation count must be positive.')
        specific.update({'instanceProperties': properties, 'count': str(specific['count']), 'inUseCount': '0'})
        resource['specificReservation'] = specific
    resource.update({
        'zone': link('projects/%s/zones/%s' % (call.project, zone)),
        'status': 'CREATING',
        'specificReservationRequired': body.get('specificReservationRequired', False),
        'shareSettings': body.get('shareSettings', {'shareType': 'LOCAL'}),
    })
    return insert(call, 'reservations', key, resource, final_fields={'status': 'READY'}, quota_metric='RESERVATIONS')


@handles('compute.reservations.delete')
def delete_reservation(call):
    return delete(call, 'reservations', resource_key(call, 'reservations'), interim_fields={'status': 'DELETING'})


@handles('compute.resourcePolicies.insert')
def insert_resource_policy(call):
    region = call.params['region']
    body = call.body
    key = new_key(call, 'resourcePolicies')
    resource = new_resource(call, 'resourcePolicies', key, body)
    resource.update({'region': link('projects/%s/regions/%s' % (call.project, region)), 'status': 'READY'})
    return insert(call, 'resourcePolicies', key, resource, quota_metric='RESOURCE_POLICIES')


@handles('compute.resourcePolicies.delete')
def delete_resource_policy(call):
    key = resource_key(call, 'resourcePolicies')
    require(call, 'resourcePolicies', key)
    for instance_key, instance in call.store.items(collection('instances')):
        if link(key) in instance.get('resourcePolicies', []):
            raise resource_in_use("The resource_policy resource '%s' is already being used by '%s'" % (key, instance_key))
    return delete(call, 'resourcePolicies', key)
