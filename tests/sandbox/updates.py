"""Changes to existing Compute resources: networks.patch, firewalls.patch and the instance setters.

As on the real API: a PATCH changes only the fields the method documents as updatable and refuses
the others; setLabels, setMetadata and setTags must carry the fingerprint of the value they
replace (412 ``conditionNotMet`` otherwise), and every write gives a new fingerprint.
"""

from .compute import collection, fingerprint, require, resource_key
from .errors import ApiError
from .networking import check_firewall_ranges
from .operations import start_compute_operation
from .registry import handles
from .rules import check_mtu, field_error

NETWORK_UPDATABLE = ('mtu', 'routingConfig', 'description', 'name')
FIREWALL_UPDATABLE = ('allowed', 'denied', 'sourceRanges', 'destinationRanges', 'sourceTags', 'targetTags', 'sourceServiceAccounts',
                      'targetServiceAccounts', 'priority', 'disabled', 'description', 'logConfig', 'name')


def _patch(call, plural, updatable, check=None):
    key = resource_key(call, plural)
    resource = require(call, plural, key)
    changes = dict(call.body or {})
    for field, value in changes.items():
        if field not in updatable and value != resource.get(field):
            raise field_error(field, value, 'The field cannot be updated.')
    if changes.get('name', resource['name']) != resource['name']:
        raise field_error('name', changes['name'], 'The name of a resource cannot be changed.')
    if check:
        check(changes)
    effects = [] if call.fault else [{'action': 'update', 'collection': collection(plural), 'key': key, 'fields': changes}]
    return start_compute_operation(call, key.rsplit('/', 2)[0], 'patch', key, resource['id'], effects)


def _check_network_patch(changes):
    if 'mtu' in changes:
        check_mtu(changes['mtu'])


@handles('compute.networks.patch')
def patch_network(call):
    return _patch(call, 'networks', NETWORK_UPDATABLE, _check_network_patch)


@handles('compute.firewalls.patch')
def patch_firewall(call):
    return _patch(call, 'firewalls', FIREWALL_UPDATABLE, check_firewall_ranges)


def _set_on_instance(call, operation_type, current_fingerprint, sent_fingerprint, fields):
    key = resource_key(call, 'instances')
    instance = require(call, 'instances', key)
    if sent_fingerprint != current_fingerprint(instance):
        raise ApiError(412, 'conditionNotMet', "Supplied fingerprint does not match current %s fingerprint." % operation_type[3:].lower())
    effects = [] if call.fault else [{'action': 'update', 'collection': collection('instances'), 'key': key, 'fields': fields(instance)}]
    return start_compute_operation(call, key.rsplit('/', 2)[0], operation_type, key, instance['id'], effects)


@handles('compute.instances.setLabels')
def set_labels(call):
    body = call.body or {}
    return _set_on_instance(call, 'setLabels', lambda instance: instance.get('labelFingerprint'), body.get('labelFingerprint'),
                            lambda instance: {'labels': dict(body.get('labels') or {}), 'labelFingerprint': fingerprint(call)})


@handles('compute.instances.setMetadata')
def set_metadata(call):
    body = call.body or {}
    return _set_on_instance(call, 'setMetadata', lambda instance: (instance.get('metadata') or {}).get('fingerprint'),
                            body.get('fingerprint'), lambda instance: {'metadata': {
                                'kind': 'compute#metadata', 'items': list(body.get('items') or []), 'fingerprint': fingerprint(call)}})


@handles('compute.instances.setTags')
def set_tags(call):
    body = call.body or {}
    return _set_on_instance(call, 'setTags', lambda instance: (instance.get('tags') or {}).get('fingerprint'), body.get('fingerprint'),
                            lambda instance: {'tags': {'items': list(body.get('items') or []), 'fingerprint': fingerprint(call)}})
