"""Compute Engine VPC networks, subnetworks and firewall rules.

Rules enforced (as the real API does): resource names, MTU 1300-8896, valid and non-overlapping
subnet ranges within a network (secondary ranges included), referenced networks must exist, the
NETWORKS quota (quotas.py), RDMA network profiles (a RoCE network is bound to one zone), firewall
rule consistency, and a network or subnetwork cannot be deleted while something uses it (400
``resourceInUseByAnotherResource``).
"""

import ipaddress

from . import catalog
from .compute import (collection, delete, fingerprint, insert, link, name_of, network_profile_resource, new_key, new_resource,
                      ref_key, register_crud, require, resource_key)
from .errors import ApiError, resource_in_use
from .quotas import check_network_quota
from .registry import handles
from .rules import check_mtu, check_secondary_ranges, check_subnet_overlap, field_error, is_roce, parse_cidr, roce_zone

register_crud('networks')
register_crud('subnetworks')
register_crud('firewalls')

# The auto-mode subnet of every region (one /20 each) comes from the locations data file (catalog.py).
AUTO_MODE_RANGES = catalog.AUTO_MODE_RANGES
AUTO_MODE_BLOCK = ipaddress.ip_network('10.128.0.0/9')


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
    check_network_quota(call)
    auto = body.get('autoCreateSubnetworks', 'IPv4Range' not in body)
    default_mtu = 1460
    if body.get('networkProfile'):
        profile_name = name_of(body['networkProfile'])
        if network_profile_resource(call.project, profile_name) is None:
            # Wording: the sandbox's, in GCE's reference-not-found shape.
            raise field_error('networkProfile', body['networkProfile'], 'The referenced network profile resource cannot be found.')
        if auto:
            # NetworkProfile features of an RDMA profile: allowAutoModeSubnet AUTO_MODE_SUBNET_BLOCKED (compute.v1
            # discovery document); the RDMA page creates these networks with --subnet-mode=custom.  Wording: the sandbox's.
            raise field_error('autoCreateSubnetworks', 'true', "Network profile '%s' does not allow auto mode subnets." % profile_name)
        # "If you use the gcloud CLI or the API to create a VPC network with an RDMA network profile, the default MTU
        # is 8896 bytes." (RDMA network profiles page)
        default_mtu = 8896
        resource['networkProfile'] = link('projects/%s/global/networkProfiles/%s' % (call.project, profile_name))
    resource.update({
        'autoCreateSubnetworks': auto,
        'mtu': int(body.get('mtu', default_mtu)),
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
    if is_roce(network) and roce_zone(network) not in ['%s-%s' % (region, letter) for letter in catalog.REGIONS.get(region, ())]:
        # RDMA network profiles page: "All subnets created in the VPC network must be located in the region that
        # contains the zone of the RDMA network profile used by the VPC network."  Wording: the sandbox's.
        raise field_error('region', region, "Network '%s' is bound to zone %s by its network profile: its subnetworks must be in region %s."
                          % (network['name'], roce_zone(network), catalog.region_of_zone(roce_zone(network))))
    if network.get('autoCreateSubnetworks') and new_range.overlaps(AUTO_MODE_BLOCK):
        # "Invalid value for field 'resource.ipCidrRange': '10.200.0.0/16'. Extended subnetworks in auto subnet mode
        # networks cannot overlap with 10.128.0.0/9." (cloudfoundry/bosh-google-cpi-release#238)
        raise field_error('ipCidrRange', new_range, 'Extended subnetworks in auto subnet mode networks cannot overlap with 10.128.0.0/9.')
    secondaries = check_secondary_ranges(new_range, body.get('secondaryIpRanges', []))
    siblings = []
    for sibling_key, sibling in call.store.items(collection('subnetworks')):
        if sibling.get('network') == link(network_key):
            ranges = [sibling['ipCidrRange']] + [item['ipCidrRange'] for item in sibling.get('secondaryIpRanges', [])]
            siblings.append((name_of(sibling_key), sibling_key.split('/')[3], ranges))
    check_subnet_overlap(new_range, siblings)
    for index, secondary in enumerate(secondaries.values()):
        check_subnet_overlap(secondary, siblings, 'secondaryIpRanges[%d].ipCidrRange' % index)
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


_PROTOCOLS = ('ah', 'all', 'esp', 'icmp', 'ipip', 'sctp', 'tcp', 'udp')
_PORT_PROTOCOLS = ('tcp', 'udp', 'sctp')


def check_firewall_ranges(body):
    """A firewall body's source and destination ranges must be CIDRs (insert and patch alike)."""
    for field in ('sourceRanges', 'destinationRanges'):
        for index, cidr in enumerate(body.get(field, [])):
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise field_error('%s[%d]' % (field, index), cidr, 'Invalid IPCidrRange: %s.' % cidr) from None


def check_firewall_rule(body, direction):
    """The rules of a firewall rule body (https://cloud.google.com/vpc/docs/firewalls, "Components of firewall rules")."""
    if direction == 'EGRESS' and (body.get('sourceTags') or body.get('sourceServiceAccounts')):
        # 400 badRequest "Should not specify source tag or service account for egress direction." (mchmarny/grunner#6)
        raise ApiError(400, 'badRequest', 'Should not specify source tag or service account for egress direction.')
    if bool(body.get('allowed')) == bool(body.get('denied')):
        # Each rule either allows or denies ("action": allow or deny, not both).  Wording: the sandbox's.
        raise field_error('allowed', '', 'Exactly one of allowed or denied must be specified.')
    priority = body.get('priority')
    if priority is not None and not 0 <= int(priority) <= 65535:
        # "priority ... an integer between 0 and 65535, both inclusive" (Firewall.priority, compute.v1 discovery
        # document).  Wording: the sandbox's.
        raise field_error('priority', priority, 'Must be between 0 and 65535, inclusive.')
    action = 'allowed' if body.get('allowed') else 'denied'
    for index, item in enumerate(body.get(action)):
        protocol = str(item.get('IPProtocol', '')).lower()
        if protocol not in _PROTOCOLS and not (protocol.isdigit() and 0 <= int(protocol) <= 255):
            # "Invalid value for field 'resource.allowed[0].IPProtocol': 'ipv6-icmp'. Must be one of ["ah", "all", "esp",
            # "icmp", "ipip", "sctp", "tcp", "udp"] or an IP protocol number between 0 and 255."
            # (terraform-google-modules/terraform-google-network#535)
            raise field_error('%s[%d].IPProtocol' % (action, index), item.get('IPProtocol'), 'Must be one of ["ah", "all", "esp", "icmp", '
                              '"ipip", "sctp", "tcp", "udp"] or an IP protocol number between 0 and 255.')
        if item.get('ports') and protocol not in _PORT_PROTOCOLS:
            # Ports only for tcp, udp and sctp (Firewall.allowed[].ports in the discovery document; the firewall
            # page's "Protocols and ports"; juju/juju#10215 met the refusal for icmp).  Wording: the sandbox's.
            raise field_error('%s[%d].ports' % (action, index), item['ports'][0],
                              'Ports can only be specified for the tcp, udp and sctp protocols.')


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
    check_firewall_rule(body, direction)
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
