"""``instances.bulkInsert``: many VMs of one zone from one set of properties, in one request.

What the real API does, and where it is written (the compute.v1 discovery document's
BulkInsertInstanceResource and InstanceProperties, "About bulk creation of VMs"
https://cloud.google.com/compute/docs/instances/multiple/about-bulk-creation, "Troubleshooting bulk
creation of VMs" https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-bulk-vm-creation):

- ``instanceProperties`` is required unless ``sourceInstanceTemplate`` is given (discovery). The sandbox
  serves no instance templates, so a ``sourceInstanceTemplate`` is a template that cannot be found.
- Names: "Either name_pattern or per_instance_properties must be set"; the keys of
  ``perInstanceProperties`` are the requested names; a ``namePattern`` holds "one continuous sequence of
  placeholder hash characters (#)", at most 18, and generated numbers "start after the biggest existing
  number" of the zone's VMs that match it (discovery). ``count`` is "the maximum number of instances to
  create": fewer than the named VMs cannot be, and more than the named VMs need a pattern for the rest
  (gcloud's ``--count`` help: with ``--predefined-names`` it must equal the number of names).
- ``minCount`` defaults to ``count``; "If min_count instances cannot be created, then no instances will be
  created" (discovery). Up to 5,000 VMs per call (about-bulk-creation, Limitations).
- ``instanceProperties.machineType`` "only accepts a machine type name ... If you use the machine type full
  or partial URL ... the request will result in an INTERNAL_ERROR" (discovery); ``resourcePolicies`` are
  "names, not URLs" (discovery).
- Validation before start: a bad request is 400 ``invalid``, a quota short of the VMs 403 ``quotaExceeded``,
  a zone without room for ``minCount`` VMs 503 ``insufficientCapacity``; a request that starts answers
  200 with the operation RUNNING (troubleshooting page).
- The result: one ``bulkInsert`` operation plus one ``insert`` operation per VM created, sharing an
  ``operationGroupId`` (``Operation.operationGroupId``: "a group of operations ... results from a
  bulkInsert API request"); gcloud's ``bulk create`` lists the zone's operations filtered on it and counts
  the DONE inserts without error as created, the rest of ``count`` as failed. The bulk operation carries
  ``instancesBulkInsertOperationMetadata.perLocationStatus`` (createdVmCount, failedToCreateVmCount,
  targetVmCount, status CREATING -> DONE).

The sandbox's own choices, where the documents say no more: wording of refusals (``field_error`` shape);
a request naming an existing VM is refused with 409 ``alreadyExists`` as ``instances.insert`` is; with room
for at least ``minCount`` but fewer than ``count`` VMs (capacity.py), the first VMs in request order are
created and the others never start (no insert operation, failedToCreateVmCount 0); a machine type URL makes
the bulk operation end with INTERNAL_ERROR (HTTP 500) and nothing created; a resource policy URL is refused
with 400; a subnet out of addresses fails the whole operation (IP_SPACE_EXHAUSTED, as for one insert); VMs that
together overfill a specific reservation are refused as one VM that does not fit is.
"""

import re

from . import capacity, catalog
from .compute import collection, name_of, scope_path
from .errors import invalid
from .instances import build_instance, reservation_usage
from .operations import operation_error, start_compute_operation
from .quotas import check_gpu_quota, gpu_quota_metric
from .registry import handles
from .rules import check_name, field_error

MAX_PER_CALL = 5000
MAX_PLACEHOLDER = 18
_HASHES = re.compile(r'#+')


def _integer(body, field, default):
    value = body.get(field)
    return default if value is None else int(value)


def _generated_names(call, zone, pattern, count, taken):
    """count names from pattern, numbered after the biggest number of the zone's VMs that match it."""
    prefix, hashes, suffix = re.match(r'^([^#]*)(#+)(.*)$', pattern).groups()
    matcher = re.compile('^%s(\\d{%d,})%s$' % (re.escape(prefix), len(hashes), re.escape(suffix)))
    scope = 'projects/%s/zones/%s/instances/' % (call.project, zone)
    numbers = [int(match.group(1)) for match in (matcher.match(key.rsplit('/', 1)[-1]) for key, _vm in call.store.items(collection('instances'), scope))
               if match]
    number, names = max(numbers, default=0), []
    while len(names) < count:
        number += 1
        name = prefix + str(number).zfill(len(hashes)) + suffix
        if name not in taken:
            names.append(name)
    return names


def requested_names(call, body, zone):
    """(names, minCount) of a BulkInsertInstanceResource, refusing what the API refuses (module docstring)."""
    predefined = list((body.get('perInstanceProperties') or {}).keys())
    pattern = body.get('namePattern')
    if not predefined and not pattern:
        raise invalid("Invalid value for field 'resource.namePattern': ''. Either namePattern or perInstanceProperties must be set.")
    if pattern is not None:
        runs = _HASHES.findall(pattern)
        if len(runs) != 1 or len(runs[0]) > MAX_PLACEHOLDER:
            raise field_error('namePattern', pattern, 'The name pattern must contain one continuous sequence of at most %d # characters.'
                              % MAX_PLACEHOLDER)
    count = _integer(body, 'count', len(predefined) if predefined else None)
    if count is None:
        raise field_error('count', '', 'The number of instances must be given with a name pattern.')
    if not 1 <= count <= MAX_PER_CALL:
        raise field_error('count', count, 'The number of instances must be between 1 and %d.' % MAX_PER_CALL)
    if count < len(predefined):
        raise field_error('count', count, 'The number of instances is less than the %d names in perInstanceProperties.' % len(predefined))
    if count > len(predefined) and not pattern:
        raise field_error('namePattern', '', 'A name pattern is required when count (%d) exceeds the %d names in perInstanceProperties.'
                          % (count, len(predefined)))
    min_count = _integer(body, 'minCount', count)
    if not 1 <= min_count <= count:
        raise field_error('minCount', min_count, 'The minimum number of instances must be between 1 and count (%d).' % count)
    names = predefined + (_generated_names(call, zone, pattern, count - len(predefined), set(predefined)) if count > len(predefined) else [])
    for name in names:
        check_name(name, 'perInstanceProperties' if name in predefined else 'namePattern')
    return names, min_count


def _build_all(call, properties, zone, scope, names):
    """Build every VM; each is held in the store while the next is built (so no two get one address), then
    all are let go again for the checks that count what is stored (quota)."""
    built = []
    try:
        for name in names:
            key = '%s/instances/%s' % (scope, name)
            resource = build_instance(call, dict(properties, name=name), zone, key)
            call.store.put(collection('instances'), key, resource)
            built.append(resource)
    finally:
        for resource in built:
            call.store.delete(collection('instances'), '%s/instances/%s' % (scope, resource['name']))
    return built


def _bulk_operation(call, scope, group_id, quota, target, created, error=None):
    status = {'targetVmCount': target, 'createdVmCount': 0, 'failedToCreateVmCount': 0, 'deletedVmCount': 0, 'status': 'CREATING'}
    operation = start_compute_operation(call, scope, 'bulkInsert', scope + '/instances', None, [], quota, group_id, error=error)
    operation.pop('targetId', None)
    location = 'zones/' + scope.rsplit('/', 1)[-1]
    done = dict(status, status='DONE', createdVmCount=0 if error or call.fault else created)
    if operation['status'] == 'DONE':
        operation['instancesBulkInsertOperationMetadata'] = {'perLocationStatus': {location: done}}
    else:
        operation['instancesBulkInsertOperationMetadata'] = {'perLocationStatus': {location: status}}
        operation['_done_fields'] = {'instancesBulkInsertOperationMetadata': {'perLocationStatus': {location: done}}}
    return operation


def _check_reservation_room(call, resources):
    """The VMs that name a specific reservation fit in it together (each alone was checked by build_instance), with the
    words GCE gives one VM that does not fit (instances.py, _check_reservation)."""
    wanted = {}
    for resource in resources:
        if resource.get('_reservation'):
            wanted[resource['_reservation']] = wanted.get(resource['_reservation'], 0) + 1
    for key, count in wanted.items():
        specific = call.store.get(collection('reservations'), key).get('specificReservation') or {}
        if int(specific.get('inUseCount', '0')) + count > int(specific.get('count', '0')):
            raise field_error('instanceProperties.reservationAffinity', key,
                              'Reservation %s does not have sufficient capacity for the requested resources.' % key)


@handles('compute.instances.bulkInsert')
def bulk_insert_instances(call):
    zone = call.params['zone']
    scope = scope_path(call, 'zones')
    body = call.body
    if body.get('sourceInstanceTemplate'):
        raise field_error('sourceInstanceTemplate', body['sourceInstanceTemplate'], 'The referenced instance template cannot be found.')
    properties = body.get('instanceProperties')
    if not properties:
        raise field_error('instanceProperties', '', 'instanceProperties is required when sourceInstanceTemplate is not given.')
    names, min_count = requested_names(call, body, zone)
    for index, policy in enumerate(properties.get('resourcePolicies') or []):
        if '/' in policy:
            raise field_error('instanceProperties.resourcePolicies[%d]' % index, policy, 'Resource policies are given by name, not URL.')
    group_id = 'bulk-%d' % call.store.new_serial()
    machine_type = properties.get('machineType') or ''
    if '/' in machine_type:
        error = operation_error('INTERNAL_ERROR', 'Internal error. Please try again or contact Google Support.', 500, 'INTERNAL SERVER ERROR',
                                [{'errorInfo': {'reason': 'INTERNAL_ERROR', 'domain': 'compute.googleapis.com', 'metadata': {}}}])
        return _bulk_operation(call, scope, group_id, 'CPUS', len(names), 0, error=error)
    built = _build_all(call, properties, zone, scope, names)
    exhausted = next((resource['_exhausted'] for resource in built if resource.get('_exhausted')), None)
    free = capacity.room(call, zone, name_of(machine_type)) if machine_type else None
    making = len(built) if free is None else min(len(built), free)
    quota = gpu_quota_metric(built[0])
    if exhausted or call.fault is not None:
        return _bulk_operation(call, scope, group_id, quota, len(names), 0, error=exhausted)
    if making < min_count:
        raise capacity.insufficient_capacity(scope)
    check_gpu_quota(call, catalog.region_of_zone(zone), built[:making])
    _check_reservation_room(call, built[:making])
    for resource in built[:making]:
        key = scope + '/instances/' + resource['name']
        call.store.put(collection('instances'), key, resource)
        effect = {'action': 'update', 'collection': collection('instances'), 'key': key, 'fields': {'status': 'RUNNING'}}
        start_compute_operation(call, scope, 'insert', key, resource['id'], [effect], quota, group_id)
        capacity.take(call, zone, name_of(machine_type))
        reservation_usage(call, resource.get('_reservation'), +1)
    return _bulk_operation(call, scope, group_id, quota, len(names), making)
