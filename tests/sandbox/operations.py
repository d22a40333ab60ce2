"""Long-running operations for Compute (``compute#operation``) and Kubernetes Engine.

An operation stays RUNNING for the sandbox's latency, then turns DONE and applies its effects (see
``store.py``).  With latency 0 it is DONE in the very response that starts it.  Operation-error
faults (ZONE_RESOURCE_POOL_EXHAUSTED, QUOTA_EXCEEDED) produce an operation that ends DONE with
``error.errors`` and ``httpErrorStatusCode`` and has no effects, as when Google accepts a request
and then cannot fulfil it.
"""

import random
import time

from .store import COMPUTE_LINK, CONTAINER_LINK, container_time, rfc3339

_op_random = random.Random(7)

# What the real backend reports for each operation-error fault: (code, HTTP status, HTTP message).
_COMPUTE_ERRORS = {
    'ZONE_RESOURCE_POOL_EXHAUSTED': (503, 'SERVICE UNAVAILABLE'),
    'QUOTA_EXCEEDED': (403, 'FORBIDDEN'),
}


class Call:
    """Everything a handler needs about one API request."""

    def __init__(self, sandbox, route, params, query, body, fault):
        self.sandbox = sandbox
        self.store = sandbox.store
        self.route = route
        self.method_id = route.method_id
        self.params = params
        self.query = query
        self.body = body
        self.fault = fault
        self.now = time.time()

    @property
    def project(self):
        return self.params.get('project') or self.params.get('projectId') or self.params.get('projectsId')


def operation_error(code, message, http_status, http_message, details):
    """The fields a failed Compute operation ends with.  Every error carries ``errorDetails`` (the
    Operation.error.errors[].errorDetails of the compute.v1 discovery document: errorInfo, quotaInfo, help)."""
    return {
        'error': {'errors': [{'code': code, 'message': message, 'errorDetails': details}]},
        'httpErrorStatusCode': http_status,
        'httpErrorMessage': http_message,
    }


def no_room_message(scope_path):
    """What GCE says when a zone has no capacity for the VMs asked for."""
    return ("The zone '%s' does not have enough resources available to fulfill the request.  "
            "Try a different zone, or try again later." % scope_path)


def capacity_error(scope_path, machine_type):
    """The fields of an operation that failed for want of capacity in the zone: ZONE_RESOURCE_POOL_EXHAUSTED, 503."""
    details = [{'errorInfo': {'reason': 'resource_availability', 'domain': 'compute.googleapis.com',
                              'metadata': {'zone': scope_path.rsplit('/', 1)[-1], 'vmType': machine_type}}}]
    return operation_error('ZONE_RESOURCE_POOL_EXHAUSTED', no_room_message(scope_path), *_COMPUTE_ERRORS['ZONE_RESOURCE_POOL_EXHAUSTED'],
                           details)


def _compute_error(call, scope_path, quota_metric):
    kind = call.fault.kind
    scope_name = scope_path.rsplit('/', 1)[-1]
    if kind == 'ZONE_RESOURCE_POOL_EXHAUSTED':
        return capacity_error(scope_path, call.body.get('machineType', '').rsplit('/', 1)[-1] if isinstance(call.body, dict) else '')
    where = scope_path.split('/', 2)[2] if scope_path.count('/') >= 2 else 'global'
    message = "Quota '%s' exceeded.  Limit: 0.0 in %s." % (quota_metric, where.replace('zones/', 'zone ').replace('regions/', 'region '))
    details = [{'quotaInfo': {'metricName': 'compute.googleapis.com/%s' % quota_metric.lower(), 'limitName': '%s-per-project-region' % quota_metric,
                              'dimensions': {'region': scope_name}, 'limit': 0.0}}]
    status, status_message = _COMPUTE_ERRORS[kind]
    return operation_error(kind, message, status, status_message, details)


def start_compute_operation(call, scope_path, operation_type, target_key, target_id, effects, quota_metric='CPUS', group_id=None,
                            error=None):
    """Record a Compute operation on ``target_key`` and return it (DONE at once when latency is 0).

    ``scope_path`` is ``projects/P/zones/Z``, ``projects/P/regions/R`` or ``projects/P/global``.
    When the call carries an operation-error fault, or ``error`` (``operation_error(...)``) is given,
    ``effects`` are dropped and the operation fails with that error.
    """
    store = call.store
    latency = call.sandbox.operation_latency.get(call.method_id, call.sandbox.latency)
    millis = int(call.now * 1000)
    name = 'operation-%d-%013x-%08x-%08x' % (millis, _op_random.getrandbits(52), _op_random.getrandbits(32), _op_random.getrandbits(32))
    key = scope_path + '/operations/' + name
    operation = {
        'kind': 'compute#operation',
        'id': store.new_id(),
        'name': name,
        'operationType': operation_type,
        'targetLink': COMPUTE_LINK + target_key,
        'targetId': target_id,
        'status': 'RUNNING',
        'user': 'sandbox@%s.iam.gserviceaccount.com' % call.project,
        'progress': 0,
        'insertTime': rfc3339(call.now),
        'startTime': rfc3339(call.now),
        'selfLink': COMPUTE_LINK + key,
        'selfLinkWithId': COMPUTE_LINK + scope_path + '/operations/' + store.new_id(),
        '_key': key,
        '_done_at': call.now + latency,
        '_effects': effects,
    }
    if group_id:
        operation['operationGroupId'] = group_id
    scope_kind = scope_path.split('/')[2]
    if scope_kind == 'zones':
        operation['zone'] = COMPUTE_LINK + scope_path
    elif scope_kind == 'regions':
        operation['region'] = COMPUTE_LINK + scope_path
    if call.fault is not None or error is not None:
        operation['_effects'] = []
        operation['_error'] = error or _compute_error(call, scope_path, quota_metric)
    store.put('compute.operations', key, operation)
    if latency <= 0:
        store.finish(operation, call.now)
    return operation


_CONTAINER_ERRORS = {
    'ZONE_RESOURCE_POOL_EXHAUSTED': (8, 'ZONE_RESOURCE_POOL_EXHAUSTED'),
    'QUOTA_EXCEEDED': (8, 'QUOTA_EXCEEDED'),
}


def start_container_operation(call, project, location, operation_type, target_path, effects):
    """Record a GKE operation (``projects/P/locations/L/operations/NAME``) and return it."""
    store = call.store
    name = 'operation-%d-%08x' % (int(call.now * 1000), _op_random.getrandbits(32))
    latency = call.sandbox.operation_latency.get(operation_type, call.sandbox.latency)
    key = 'projects/%s/locations/%s/operations/%s' % (project, location, name)
    operation = {
        'name': name,
        'zone': location,
        'operationType': operation_type,
        'status': 'RUNNING',
        'selfLink': CONTAINER_LINK + 'projects/%s/locations/%s/operations/%s' % (project, location, name),
        'targetLink': CONTAINER_LINK + target_path,
        'startTime': container_time(call.now),
        '_key': key,
        '_done_at': call.now + latency,
        '_effects': effects,
    }
    if call.fault is not None:
        code, reason = _CONTAINER_ERRORS[call.fault.kind]
        message = ('%s: the zone %s does not have enough resources available to fulfill the request.' % (reason, location)
                   if reason == 'ZONE_RESOURCE_POOL_EXHAUSTED' else
                   "%s: Insufficient quota to satisfy the request: Quota 'NVIDIA_H100_GPUS' exceeded.  Limit: 0.0." % reason)
        operation['_effects'] = []
        operation['_error'] = {'statusMessage': message, 'error': {'code': code, 'message': message}}
    store.put('container.operations', key, operation)
    if latency <= 0:
        store.finish(operation, call.now)
    return operation
