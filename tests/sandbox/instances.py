"""Compute Engine VM instances (insert, start, stop, delete; bulkInsert is in bulk.py), reservations and
resource policies.

An instance is checked as GCE checks it: the machine type, image, networks, subnetworks,
reservation and resource policies it names must exist (in the right zone or region), and the rules
in ``rules.py`` hold.  Its NICs get addresses from their subnets; ``accessConfigs`` get an external
``natIP``.  Status goes PROVISIONING -> RUNNING when the insert operation is DONE; stop goes
STOPPING -> TERMINATED, start STAGING -> RUNNING, delete STOPPING -> gone.
"""

import ipaddress

from . import capacity, catalog
from .compute import (collection, delete, fingerprint, insert, link, name_of, new_key, new_resource, project_number,
                      ref_key, register_crud, require, resolve_image, resource_key)
from .errors import ApiError, resource_in_use
from .networking import find_subnet_for_region
from .operations import capacity_error, operation_error, start_compute_operation
from .quotas import check_gpu_quota, gpu_quota_metric
from .registry import handles
from .rules import (DISK_TYPES, DISK_TYPES_BY_MACHINE, check_labels, check_nics, check_scheduling, effective_nic_type,
                    field_error, is_gpu_machine)
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
    """Lowest free address, or None when the subnet has none left; GCE keeps the network, gateway,
    second-to-last and broadcast addresses (https://cloud.google.com/vpc/docs/subnets#unusable-ip-addresses-in-every-subnet)."""
    cidr = ipaddress.ip_network(subnet['ipCidrRange'])
    used = _used_addresses(call, subnet_link) | taken_now
    for offset in range(2, cidr.num_addresses - 2):
        address = str(cidr.network_address + offset)
        if address not in used:
            return address
    return None


def ip_space_exhausted(subnet_key, cidr):
    """A subnet out of addresses does not refuse the request: the insert operation fails with
    IP_SPACE_EXHAUSTED_WITH_DETAILS, HTTP 400 "BAD REQUEST", in these words (the operation error quoted in
    Privatehive/gcp-hosted-github-runner#7; "IP space of ... is exhausted" also in hashicorp/terraform-cdk#1964)."""
    message = ("IP space of '%s' is exhausted. Insufficient free IP addresses in the IP range '%s'. Consider expanding the current IP "
               "range or selecting an alternative IP range. If this is a secondary range, consider adding an additional secondary range."
               % (subnet_key, cidr))
    details = [{'errorInfo': {'reason': 'IP_SPACE_EXHAUSTED', 'domain': 'compute.googleapis.com', 'metadata': {'subnetwork': subnet_key}}}]
    return operation_error('IP_SPACE_EXHAUSTED_WITH_DETAILS', message, 400, 'BAD REQUEST', details)


def _nat_ip(call):
    serial = call.store.new_serial()
    return '34.%d.%d.%d' % (16 + serial // 65536 % 200, serial // 256 % 256, serial % 256 or 1)


def _network_interfaces(call, body, zone, machine_type):
    """Resolve every NIC's network and subnetwork; return (interfaces, stored network of each NIC, exhausted
    subnet error or None)."""
    region = catalog.region_of_zone(zone)
    interfaces, networks, taken, exhausted = [], [], set(), None
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
        if nic.get('networkIP'):
            # A given internal address must lie in the subnet's primary range (https://cloud.google.com/vpc/docs/ip-addresses;
            # "Reserve a static internal IPv4 address"). Wording: the sandbox's.
            try:
                inside = ipaddress.ip_address(nic['networkIP']) in ipaddress.ip_network(subnet['ipCidrRange'])
            except ValueError:
                inside = False
            if not inside:
                raise field_error(field + '.networkIP', nic['networkIP'],
                                  "Requested internal IP is outside the range %s of subnetwork '%s'." % (subnet['ipCidrRange'], subnet_key))
            address = nic['networkIP']
        else:
            address = _allocate_ip(call, subnet, link(subnet_key), taken)
            if address is None and exhausted is None:
                exhausted = ip_space_exhausted(subnet_key, subnet['ipCidrRange'])
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
        nic_type = effective_nic_type(machine_type, nic)
        if nic_type:
            interface['nicType'] = nic_type
        if nic.get('accessConfigs'):
            interface['accessConfigs'] = [dict(config, kind='compute#accessConfig', type=config.get('type', 'ONE_TO_ONE_NAT'),
                                               name=config.get('name', 'External NAT'), networkTier=config.get('networkTier', 'PREMIUM'),
                                               natIP=config.get('natIP') or _nat_ip(call))
                                          for config in nic['accessConfigs']]
        interfaces.append(interface)
        networks.append(call.store.get(collection('networks'), network_key))
    return interfaces, networks, exhausted


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
        elif disk.get('boot', index == 0) and not disk.get('source'):
            # Only a boot disk needs an image or an existing disk; a data disk with initializeParams and no
            # sourceImage is a blank disk, and a SCRATCH disk is a Local SSD ("Add a blank disk", "Add Local SSD",
            # https://cloud.google.com/compute/docs/disks/add-persistent-disk, .../disks/local-ssd).  Wording: the sandbox's.
            raise field_error(field + '.source', '', 'A boot disk must have a source disk or initializeParams.sourceImage.')
        elif not disk.get('source'):
            attached.update({'source': link('projects/%s/zones/%s/disks/%s' % (call.project, zone, params.get('diskName', '%s-%d' % (instance_name, index)))),
                             'diskSizeGb': str(params.get('diskSizeGb', '375' if disk.get('type') == 'SCRATCH' else '10'))})
        _check_disk_type(field, params.get('diskType'), disk.get('type'), machine_type, zone)
        disks.append(attached)
    return disks


def _check_disk_type(field, disk_type_ref, attach_type, machine_type, zone):
    """A diskType must exist, and be one the machine series supports."""
    if not disk_type_ref:
        return
    disk_type = name_of(disk_type_ref)
    if disk_type not in DISK_TYPES:
        # "Invalid value for field 'resource.disks[1].initializeParams.diskType': 'zones/us-central1-b/diskTypes/PERSISTENT_SSD'.
        # The referenced diskType resource cannot be found." (broadinstitute/cromwell#3776)
        raise field_error(field + '.initializeParams.diskType', disk_type_ref, 'The referenced diskType resource cannot be found.')
    if attach_type == 'SCRATCH' or disk_type == 'local-ssd':
        return
    supported = DISK_TYPES_BY_MACHINE.get(machine_type)
    if supported is not None and disk_type not in supported:
        # "[pd-standard, n4-standard-2] features are not compatible for creating instance." -- the real sentence
        # for a disk type the series does not take (DataBiosphere/dsub#301; "[pd-standard] features are not
        # compatible ..." in kubernetes-sigs/gcp-compute-persistent-disk-csi-driver#1212).  Status 400 / reason
        # ``invalid``: the sandbox's choice (the reports do not show the reason).
        raise ApiError(400, 'invalid', '[%s, %s] features are not compatible for creating instance.' % (disk_type, machine_type))


def _scheduling(body, machine_type):
    """The scheduling block GCE stores, with its defaults filled in."""
    given = dict(body.get('scheduling') or {})
    model = given.get('provisioningModel') or ('SPOT' if given.get('preemptible') else 'STANDARD')
    spot_like = model in _SPOT_LIKE or given.get('preemptible')
    scheduling = dict(given)
    scheduling['provisioningModel'] = model
    # onHostMaintenance defaults to MIGRATE for standard VMs ("The default value is MIGRATE", Scheduling in the
    # compute.v1 discovery document) -- GPU VMs included, which check_scheduling then refuses as the real API does.
    scheduling.setdefault('onHostMaintenance', 'TERMINATE' if spot_like else 'MIGRATE')
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
    # A type the zone does not offer gets the same answer as an unknown type -- "Invalid value for field
    # 'resource.machineType': '...'. Machine type with name 'X' does not exist in zone 'Z'." -- and the zones of the
    # accelerator-optimized types are those of Google's GPU locations page (catalog.MACHINE_TYPE_ZONES).
    if not catalog.machine_type_in_zone(machine_type, zone):
        raise field_error('machineType', body['machineType'], "Machine type with name '%s' does not exist in zone '%s'." % (machine_type, zone))
    if machine_key.split('/')[3] != zone:
        raise field_error('machineType', body['machineType'], 'Machine type must be in the same zone as the instance.')
    check_labels(body.get('labels'))
    disks = _disks(call, body, zone, machine_type, body['name'])
    boot = next((disk for disk in disks if disk.get('boot')), None)
    image_features = [feature['type'] for feature in boot['guestOsFeatures']] if boot and 'guestOsFeatures' in boot else None
    interfaces, networks, exhausted = _network_interfaces(call, body, zone, machine_type)
    check_nics(machine_type, zone, body.get('networkInterfaces') or [{}], networks, image_features)
    given_scheduling, scheduling = _scheduling(body, machine_type)
    check_scheduling(body, machine_type, scheduling, given_scheduling)
    reservation_key = _reservation_key(call, body, zone)
    if reservation_key:
        _check_reservation(call, reservation_key, machine_type)
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
        'disks': disks,
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
    if exhausted:
        resource['_exhausted'] = exhausted
    return resource


def _check_reservation(call, reservation_key, machine_type):
    """What consuming a specific reservation requires (https://cloud.google.com/compute/docs/instances/reservations-consume)."""
    reservation = call.store.get(collection('reservations'), reservation_key)
    if reservation is None:
        raise field_error('reservationAffinity', reservation_key, "Reservation '%s' does not exist." % reservation_key)
    # "... can not be targeted as specificReservationRequired is not set." -- 400 for a reservation created without
    # specificReservationRequired (superserve-ai/sandbox#238; the head of the message is not quoted there).
    if not reservation.get('specificReservationRequired'):
        raise field_error('reservationAffinity', reservation_key,
                          "Reservation '%s' can not be targeted as specificReservationRequired is not set." % reservation_key)
    specific = reservation.get('specificReservation') or {}
    # "Reservation X is incorrect for the requested resources" and "Reservation X does not have sufficient capacity
    # for the requested resources." -- the real sentences (kubernetes/autoscaler#6006 and #7319 match on them).
    if name_of(specific.get('instanceProperties', {}).get('machineType', '')) != machine_type:
        raise field_error('reservationAffinity', reservation_key, 'Reservation %s is incorrect for the requested resources.' % reservation_key)
    if int(specific.get('inUseCount', '0')) >= int(specific.get('count', '0')):
        raise field_error('reservationAffinity', reservation_key,
                          'Reservation %s does not have sufficient capacity for the requested resources.' % reservation_key)


def reservation_usage(call, reservation_key, delta):
    reservation = call.store.get(collection('reservations'), reservation_key) if reservation_key else None
    if reservation is not None:
        specific = reservation.setdefault('specificReservation', {})
        specific['inUseCount'] = str(max(0, int(specific.get('inUseCount', '0')) + delta))


@handles('compute.instances.insert')
def insert_instance(call):
    zone = call.params['zone']
    key = new_key(call, 'instances')
    resource = build_instance(call, call.body, zone, key)
    check_gpu_quota(call, catalog.region_of_zone(zone), [resource])
    if resource.get('_exhausted'):
        return start_compute_operation(call, key.rsplit('/', 2)[0], 'insert', key, resource['id'], [], error=resource['_exhausted'])
    machine_type = name_of(resource['machineType'])
    if capacity.room(call, zone, machine_type) == 0:
        # No room: the insert is accepted and its operation fails (capacity.py).
        return start_compute_operation(call, key.rsplit('/', 2)[0], 'insert', key, resource['id'], [],
                                       error=capacity_error(key.rsplit('/', 2)[0], machine_type))
    operation = insert(call, 'instances', key, resource, final_fields={'status': 'RUNNING'}, quota_metric=gpu_quota_metric(resource))
    if call.fault is None:
        capacity.take(call, zone, machine_type)
        reservation_usage(call, resource.get('_reservation'), +1)
    return operation


@handles('compute.instances.delete')
def delete_instance(call):
    key = resource_key(call, 'instances')
    instance = require(call, 'instances', key)
    if instance.get('deletionProtection'):
        # 400 invalidResourceUsage: "Invalid resource usage: 'Resource cannot be deleted if it's protected against
        # deletion.'." (hashicorp/terraform-provider-google#1211 quotes the response).
        raise ApiError(400, 'invalidResourceUsage', "Invalid resource usage: 'Resource cannot be deleted if it's protected against deletion.'.")
    reservation = instance.get('_reservation')
    operation = delete(call, 'instances', key, interim_fields={'status': 'STOPPING'})
    reservation_usage(call, reservation, -1)
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
