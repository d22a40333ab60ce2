"""Compute Engine VPC networks, subnetworks and firewall rules.

Rules enforced (as the real API does): resource names, MTU 1300-8896, valid and non-overlapping
subnet ranges within a network, referenced networks must exist, and a network or subnetwork cannot
be deleted while something uses it (400 ``resourceInUseByAnotherResource``).
"""

import ipaddress

from .compute import (collection, delete, fingerprint, insert, link, name_of, new_key, new_resource, ref_key,
                      register_crud, require, resource_key)
from .errors import resource_in_use
from .registry import handles
from .rules import check_mtu, check_subnet_overlap, field_error, parse_cidr

register_crud('networks')
register_crud('subnetworks')
register_crud('firewalls')

# Ranges the real API gives the subnets of an auto-mode network (one /20 per region).
AUTO_MODE_RANGES = {
    'us-central1': '10.128.0.0/20', 'europe-west1': '10.132.0.0/20', 'us-west1': '10.138.0.0/20',
    'us-east1': '10.142.0.0/20', 'asia-northeast1': '10.146.0.0/20', 'asia-southeast1': '10.148.0.0/20',
    'us-east4': '10.150.0.0/20', 'europe-west4': '10.164.0.0/20', 'us-west4': '10.182.0.0/20', 'us-east5': '10.202.0.0/20',
}


def subnet_resource(call, key, body, network_key, region):
    resource = new_resource(call, 'subnetworks', key, body)
    cidr = parse_cidr(body.get('ipCidrRange'))
    resource.update({
        'network': link(network_key),
        'region': link('projects/%s/regions/%s' % (call.project, region)),
        'ipCidrRange': str(cidr),
        'gatewayAddress': str(cidr.network_address + 1),
        'fingerprint': fingerprint(call),
        'privateIpGoogleAccess': body.get('privateIpGoogleAccess', False),
        'purpose': body.get('purpose', 'PRIVATE'),
        'stackType': body.get('stackType', 'IPV4_ONLY'),
        'state': 'READY',
    })
    return resource


@handles('compute.networks.insert')
def insert_network(call):
    body = call.body
    key = new_key(call, 'networks')
    resource = new_resource(call, 'networks', key, body)
    check_mtu(body.get('mtu'))
    auto = body.get('autoCreateSubnetworks', 'IPv4Range' not in body)
    resource.update({
        'autoCreateSubnetworks': auto,
        'mtu': int(body.get('mtu', 1460)),
        'routingConfig': body.get('routingConfig', {'routingMode': 'REGIONAL', 'bgpBestPathSelectionMode': 'LEGACY'}),
        'networkFirewallPolicyEnforcementOrder': body.get('networkFirewallPolicyEnforcementOrder', 'AFTER_CLASSIC_FIREWALL'),
        'selfLinkWithId': link('projects/%s/global/networks/%s' % (call.project, resource['id'])),
        'subnetworks': [],
    })
    if auto and call.fault is None:
        # Auto mode: one subnet per region, named after the network, created with it.
        for region, cidr in AUTO_MODE_RANGES.items():
            subnet_key = 'projects/%s/regions/%s/subnetworks/%s' % (call.project, region, body['name'])
            subnet = subnet_resource(call, subnet_key, {'name': body['name'], 'ipCidrRange': cidr}, key, region)
            subnet['_auto'] = True
            call.store.put(collection('subnetworks'), subnet_key, subnet)
            resource['subnetworks'].append(link(subnet_key))
    return insert(call, 'networks', key, resource, quota_metric='NETWORKS')


def _users_of_network(call, network_key):
    network_link = link(network_key)
    for plural in ('subnetworks', 'firewalls'):
        for key, value in call.store.items(collection(plural), 'projects/'):
            if value.get('network') == network_link and not value.get('_auto'):
                yield key
    for key, value in call.store.items(collection('instances')):
        if any(nic.get('network') == network_link for nic in value.get('networkInterfaces', [])):
            yield key


@handles('compute.networks.delete')
def delete_network(call):
    key = resource_key(call, 'networks')
    network = require(call, 'networks', key)
    for user in _users_of_network(call, key):
        raise resource_in_use("The network resource '%s' is already being used by '%s'" % (key, user))
    auto_subnets = [{'action': 'delete', 'collection': collection('subnetworks'), 'key': ref_key(sub, 'subnetworks', call.project)}
                    for sub in network.get('subnetworks', [])]
    return delete(call, 'networks', key, then=auto_subnets)


@handles('compute.subnetworks.insert')
def insert_subnetwork(call):
    body = call.body
    region = call.params['region']
    key = new_key(call, 'subnetworks')
    if not body.get('network'):
        raise field_error('network', '', 'The network field is required.')
    network_key = ref_key(body['network'], 'networks', call.project)
    network = call.store.get(collection('networks'), network_key)
    if network is None:
        raise field_error('network', body['network'], 'The referenced network resource cannot be found.')
    resource = subnet_resource(call, key, body, network_key, region)
    new_range = ipaddress.ip_network(resource['ipCidrRange'])
    siblings = []
    for sibling_key, sibling in call.store.items(collection('subnetworks')):
        if sibling.get('network') == link(network_key):
            ranges = [sibling['ipCidrRange']] + [item['ipCidrRange'] for item in sibling.get('secondaryIpRanges', [])]
            siblings.append((name_of(sibling_key), sibling_key.split('/')[3], ranges))
    check_subnet_overlap(new_range, siblings)
    for secondary in body.get('secondaryIpRanges', []):
        check_subnet_overlap(parse_cidr(secondary.get('ipCidrRange'), 'secondaryIpRanges.ipCidrRange'), siblings)
    operation = insert(call, 'subnetworks', key, resource, quota_metric='SUBNETWORKS')
    if call.fault is None:
        network['subnetworks'].append(link(key))
    return operation


@handles('compute.subnetworks.delete')
def delete_subnetwork(call):
    key = resource_key(call, 'subnetworks')
    subnet = require(call, 'subnetworks', key)
    for instance_key, instance in call.store.items(collection('instances')):
        if any(nic.get('subnetwork') == link(key) for nic in instance.get('networkInterfaces', [])):
            raise resource_in_use("The subnetwork resource '%s' is already being used by '%s'" % (key, instance_key))
    network_key = ref_key(subnet['network'], 'networks', call.project)
    unlink = {'action': 'remove_link', 'collection': collection('networks'), 'key': network_key, 'field': 'subnetworks', 'link': link(key)}
    return delete(call, 'subnetworks', key, then=[unlink])


def check_firewall_ranges(body):
    """A firewall body's source and destination ranges must be CIDRs (insert and patch alike)."""
    for field in ('sourceRanges', 'destinationRanges'):
        for index, cidr in enumerate(body.get(field, [])):
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise field_error('%s[%d]' % (field, index), cidr, 'Invalid IPCidrRange: %s.' % cidr) from None


@handles('compute.firewalls.insert')
def insert_firewall(call):
    body = call.body
    key = new_key(call, 'firewalls')
    resource = new_resource(call, 'firewalls', key, body)
    network_key = ref_key(body.get('network') or 'default', 'networks', call.project)
    if call.store.get(collection('networks'), network_key) is None:
        raise field_error('network', body.get('network') or link(network_key), 'The referenced network resource cannot be found.')
    check_firewall_ranges(body)
    direction = body.get('direction', 'INGRESS')
    resource.update({
        'network': link(network_key),
        'direction': direction,
        'priority': int(body.get('priority', 1000)),
        'disabled': body.get('disabled', False),
        'logConfig': body.get('logConfig', {'enable': False}),
    })
    if direction == 'INGRESS' and not any(body.get(field) for field in ('sourceRanges', 'sourceTags', 'sourceServiceAccounts')):
        resource['sourceRanges'] = ['0.0.0.0/0']
    if direction == 'EGRESS' and not body.get('destinationRanges'):
        resource['destinationRanges'] = ['0.0.0.0/0']
    return insert(call, 'firewalls', key, resource, quota_metric='FIREWALLS')


@handles('compute.firewalls.delete')
def delete_firewall(call):
    return delete(call, 'firewalls', resource_key(call, 'firewalls'))


def find_subnet_for_region(call, network_key, region):
    """The subnet of ``network_key`` in ``region`` (auto-mode networks have one), or None."""
    network_link = link(network_key)
    for key, value in call.store.items(collection('subnetworks'), 'projects/%s/regions/%s/' % (network_key.split('/')[1], region)):
        if value.get('network') == network_link:
            return key, value
    return None
