# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a GPUDirect network on Compute Engine, as pure data.

Google's Compute Engine GPUDirect guide builds a cluster's GPUDirect network by hand: a management VPC with its subnet and three firewall
rules, then one VPC per data NIC with its subnet and an internal rule. build_plan() turns a family,
a prefix and a region into exactly those resources, as the request bodies gcloud would send,
after checking every input; differences() compares one planned resource with what exists and
sorts each difference into what a PATCH can change and what only a new resource can.

Nothing here talks to the API, so every rule is unit-tested on its own.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import gke as gke_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.compute import (
    firewalls_path, network_path, network_profile_path, networks_path, subnetworks_path)
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

# The API accepts MTUs from 1300 to 8896 (Compute Engine VPC documentation).
MTU_RANGE = (1300, 8896)
OPEN_TO_WORLD = ('0.0.0.0/0', '::/0')
MANAGEMENT, DATA = 'management', 'data'
REGION_PATTERN = re.compile(r'^[a-z]+-[a-z]+[0-9]+$')


def parse_rules(spec):
    """gcloud's --rules syntax ('tcp:0-65535,udp:0-65535,icmp') as the API's `allowed` list."""
    allowed = []
    for rule in spec.split(','):
        protocol, colon, ports = rule.strip().partition(':')
        entry = {'IPProtocol': protocol}
        if colon:
            entry['ports'] = ports.split(';')
        allowed.append(entry)
    return allowed


class ResourcePlan:
    """One network, subnetwork or firewall to have: its collection path, name and request body."""

    def __init__(self, kind, path, name, body):
        self.kind = kind
        self.path = path
        self.name = name
        self.body = body

    @property
    def resource_path(self):
        return '%s/%s' % (self.path, self.name)

    def describe(self):
        return "%s '%s'" % (self.kind, self.name)


class NetworkChain:
    """A VPC with its subnet(s) and firewall rules: created in that order, deleted in reverse.

    ``extra_subnets``: the further subnets of a network that has several (the GKE GPUDirect RDMA guide's RoCE network, 8)."""

    def __init__(self, role, index, network, subnet, firewalls, extra_subnets=()):
        self.role = role
        self.index = index
        self.network = network
        self.subnet = subnet
        self.firewalls = firewalls
        self.subnets = [subnet] + list(extra_subnets)

    @property
    def resources(self):
        return [self.network] + self.subnets + self.firewalls


class NetworkPlan:
    def __init__(self, family, prefix, region, mtu, management_cidr, data_cidrs, internal_source_ranges, chains):
        self.family = family
        self.prefix = prefix
        self.region = region
        self.mtu = mtu
        self.management_cidr = management_cidr
        self.data_cidrs = data_cidrs
        self.internal_source_ranges = internal_source_ranges
        self.chains = chains

    @property
    def network_names(self):
        return [chain.network.name for chain in self.chains]

    @property
    def resources(self):
        """Every resource of the plan, chain by chain (network, subnet, rules)."""
        return [resource for chain in self.chains for resource in chain.resources]

    def summary(self):
        return {'machine_type': self.family.machine_type, 'technology': self.family.technology, 'network_prefix': self.prefix,
                'region': self.region, 'mtu': self.mtu, 'management_cidr': self.management_cidr,
                'data_cidrs': list(self.data_cidrs), 'internal_source_ranges': list(self.internal_source_ranges),
                'networks': self.network_names}


def _check_name(field, name):
    if not compute.GCE_NAME_PATTERN.match(name):
        raise InputError("%s: '%s' is not a valid Compute Engine name (lowercase letters, digits and hyphens, starting with a "
                         "letter, at most 63 characters); choose a shorter or simpler prefix" % (field, name))


def _networks(field, values):
    parsed = []
    for value in values:
        try:
            parsed.append(ipaddress.ip_network(value, strict=True))
        except ValueError as exc:
            raise InputError('%s: %r is not a CIDR range (%s); write it like 192.168.1.0/24' % (field, value, exc)) from None
    return parsed


def _check_cidrs(management_cidr, data_cidrs, data_nic_count):
    if len(data_cidrs) != data_nic_count:
        raise InputError('data_cidrs: %d ranges given, but this family has %d data NICs; give exactly %d ranges or leave data_cidrs unset'
                         % (len(data_cidrs), data_nic_count, data_nic_count))
    ranges = _networks('management_cidr', [management_cidr]) + _networks('data_cidrs', data_cidrs)
    for range_ in ranges:
        if range_.version != 4 or not range_.is_private:
            raise InputError('management_cidr/data_cidrs: %s is not a private IPv4 range; use RFC 1918 space such as 192.168.0.0/16' % range_)
        if range_.prefixlen > 29:
            raise InputError('management_cidr/data_cidrs: %s is smaller than the /29 a subnet needs; use a wider range' % range_)
    for index, first in enumerate(ranges):
        for second in ranges[index + 1:]:
            if first.overlaps(second):
                raise InputError('management_cidr/data_cidrs: %s overlaps %s; every subnet of the GPUDirect network needs its own range' % (first, second))


def open_to_world(ranges):
    """The ranges, as written, whose union is every IPv4 or every IPv6 address (0.0.0.0/1 + 128.0.0.0/1, ::0/0, ...); [] if none."""
    parsed = [ipaddress.ip_network(value, strict=False) for value in ranges]
    opened = []
    for version in (4, 6):
        family = [network for network in parsed if network.version == version]
        if any(network.prefixlen == 0 for network in ipaddress.collapse_addresses(family)):
            opened += [str(value) for value, network in zip(ranges, parsed) if network.version == version]
    return opened


def _check_sources(field, ranges, allow_option=None, allowed=False):
    """CIDR ranges; open to the world only with `allow_option` set (for fields that have no such option, never)."""
    _networks(field, ranges)
    opened = open_to_world(ranges)
    if opened and not allowed:
        if allow_option:
            raise InputError('%s: %s together open the port to the whole internet; give your own address ranges, or set %s: true '
                             'to say you mean it' % (field, ' + '.join(opened), allow_option))
        raise InputError('%s: %s together cover the whole internet; give the GPUDirect network\'s own ranges (leave it unset for '
                         'its subnets)' % (field, ' + '.join(opened)))


def build_plan(project, region, machine_type, prefix, mtu=None, management_cidr=None, data_cidrs=None,
               internal_source_ranges=None, ssh_source_ranges=(), ssh_from_anywhere=False, icmp_source_ranges=None):
    """Check every input and return the NetworkPlan; raise InputError before anything is created."""
    try:
        family = families.get_family(machine_type, field='machine_type')
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if families.GCE not in family.platforms:
        raise InputError('machine_type: %s runs GPUDirect %s on GKE only in this collection; use a Compute Engine machine type (%s)'
                         % (family.machine_type, family.technology, ', '.join(families.GCE_MACHINE_TYPES)))
    layout = compute.GCE_NETWORK
    mtu = family.mtu if mtu is None else mtu
    if not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
        raise InputError('mtu: %d is outside the %d-%d that VPC networks allow; leave mtu unset for the machine type default %d'
                         % (mtu, MTU_RANGE[0], MTU_RANGE[1], family.mtu))
    management_cidr = management_cidr or layout['mgmt_subnet_range']
    count = family.data_nic_count
    data_cidrs = list(data_cidrs or compute.data_subnet_ranges(count))
    _check_cidrs(management_cidr, data_cidrs, count)
    if internal_source_ranges is None:
        default_plan = management_cidr == layout['mgmt_subnet_range'] and all(
            ipaddress.ip_network(cidr).subnet_of(ipaddress.ip_network(layout['internal_source_range'])) for cidr in data_cidrs)
        internal_source_ranges = [layout['internal_source_range']] if default_plan else [management_cidr] + data_cidrs
    _check_sources('internal_source_ranges', internal_source_ranges)
    _check_sources('ssh_source_ranges', list(ssh_source_ranges or []), 'ssh_from_anywhere', ssh_from_anywhere)
    icmp_source_ranges = [layout['ping_source_range']] if icmp_source_ranges is None else list(icmp_source_ranges)
    _networks('icmp_source_ranges', icmp_source_ranges)
    if not prefix:
        raise InputError('network_prefix: give the name prefix of the GPUDirect network, e.g. a3high (networks become a3high-mgmt-net, a3high-data-net-1, ...)')
    names = [layout[key].format(prefix=prefix, n=count) for key in ('mgmt_ping_rule', 'data_internal_rule', 'data_network')]
    for name in names:
        _check_name('network_prefix', name)

    def network(name):
        return ResourcePlan('network', networks_path(), name, {
            'name': name, 'autoCreateSubnetworks': False, 'mtu': mtu, 'routingConfig': {'routingMode': 'REGIONAL'}})

    def subnet(name, network_name, cidr):
        return ResourcePlan('subnetwork', subnetworks_path(region), name, {
            'name': name, 'network': network_path(network_name, project), 'ipCidrRange': cidr, 'privateIpGoogleAccess': False})

    def firewall(name, network_name, rules, sources):
        return ResourcePlan('firewall', firewalls_path(), name, {
            'name': name, 'network': network_path(network_name, project), 'direction': 'INGRESS',
            'allowed': parse_rules(rules), 'sourceRanges': list(sources)})

    (mgmt, mgmt_subnet), *data_names = compute.network_interfaces(prefix, count)
    firewalls = [firewall(layout['mgmt_internal_rule'].format(prefix=prefix), mgmt, layout['internal_rules'], internal_source_ranges)]
    if ssh_source_ranges:
        firewalls.append(firewall(layout['mgmt_ssh_rule'].format(prefix=prefix), mgmt, layout['ssh_rules'], ssh_source_ranges))
    if icmp_source_ranges:
        firewalls.append(firewall(layout['mgmt_ping_rule'].format(prefix=prefix), mgmt, layout['ping_rules'], icmp_source_ranges))
    chains = [NetworkChain(MANAGEMENT, 0, network(mgmt), subnet(mgmt_subnet, mgmt, management_cidr), firewalls)]
    for n, ((data, data_subnet), cidr) in enumerate(zip(data_names, data_cidrs), start=1):
        chains.append(NetworkChain(DATA, n, network(data), subnet(data_subnet, data, cidr), [
            firewall(layout['data_internal_rule'].format(prefix=prefix, n=n), data, layout['internal_rules'], internal_source_ranges)]))
    return NetworkPlan(family, prefix, region, mtu, management_cidr, data_cidrs, internal_source_ranges, chains)


# Fields a PATCH can change, per kind; every other planned field needs a new resource.
PATCHABLE = {
    'network': ('mtu', 'routingConfig'),
    'subnetwork': (),
    'firewall': ('allowed', 'sourceRanges'),
}


# Set when a resource is created and then left alone: the name is the identity, and a subnet's
# private Google access has its own method (setPrivateIpGoogleAccess) that users turn on by hand.
UNMANAGED_AFTER_CREATE = ('name', 'privateIpGoogleAccess')


def _comparable(field, value):
    if field in ('network', 'networkProfile') and isinstance(value, str):
        return links.resource_name(value)
    if field == 'allowed':
        return sorted((item.get('IPProtocol'), tuple(item.get('ports', ()))) for item in value or [])
    if field == 'sourceRanges':
        return sorted(value or [])
    if field == 'routingConfig':
        return (value or {}).get('routingMode', 'REGIONAL')
    if field in ('privateIpGoogleAccess', 'autoCreateSubnetworks'):
        return bool(value)
    return value


def differences(plan, current):
    """(patch, immutable): the planned fields that differ from `current`, split by whether PATCH can change them."""
    patch, immutable = {}, []
    for field, wanted in plan.body.items():
        if field in UNMANAGED_AFTER_CREATE:
            continue
        if _comparable(field, wanted) != _comparable(field, current.get(field)):
            if field in PATCHABLE[plan.kind]:
                patch[field] = wanted
            else:
                immutable.append(field)
    return patch, immutable


def view(resource):
    """The fields of an existing resource that the plan manages, for diff output."""
    if resource is None:
        return None
    keep = ('name', 'mtu', 'autoCreateSubnetworks', 'routingConfig', 'networkProfile', 'network', 'ipCidrRange',
            'privateIpGoogleAccess', 'direction', 'allowed', 'sourceRanges')
    result = {key: resource[key] for key in keep if key in resource}
    for field in ('network', 'networkProfile'):
        if field in result:
            result[field] = _comparable(field, result[field])
    return result


# ---------------------------------------------------------------------------------------------
# The GKE layouts: no management network of the fabric's own (the cluster's network is the nodes' eth0)

GKE, GKE_RDMA = 'gke', 'gke_rdma'
LAYOUTS = ('gce', GKE, GKE_RDMA)


def _gke_ranges(field, cidrs, count):
    if len(cidrs) != count:
        raise InputError('%s: %d ranges given, but this layout has %d subnets; give exactly %d ranges or leave %s unset'
                         % (field, len(cidrs), count, count, field))
    _check_cidrs(cidrs[0], cidrs[1:], count - 1)


def build_gke_plan(project, region, machine_type, prefix, layout, zone=None, mtu=None, data_cidrs=None, internal_source_ranges=None,
                   gvnic_prefix=None, rdma_prefix=None):
    """The per-NIC networks of a GKE GPU node pool; raise InputError before anything is created.

    ``gke`` (TCPX / TCPXO, Google's GKE GPUDirect-TCPX/TCPXO guide "Create VPCs and subnets"): one VPC per secondary NIC, ``PREFIX-net-N`` with
    subnet ``PREFIX-sub-N`` and rule ``PREFIX-internal-N``. ``gke_rdma`` (A3 Ultra / A4, Google's GKE GPUDirect RDMA guide "Advanced configuration"):
    a gVNIC VPC with one subnet and an internal rule, and one RoCE VPC (network profile ``ZONE-vpc-roce``)
    with 8 subnets and no rule (the seed makes none for it); the guide's two prefixes ``gvnic_prefix`` and ``rdma_prefix``
    name them (VPCs reused under other names), each derived from ``prefix`` when not given.
    """
    try:
        family = families.get_family(machine_type, field='machine_type')
    except ValueError as exc:
        raise InputError(str(exc)) from None
    rdma = family.technology == families.RDMA
    if families.GKE not in family.platforms:
        raise InputError('machine_type: %s has no GKE manual; layout %s is for %s' % (family.machine_type, layout, ', '.join(gke_catalog.GKE_MACHINE_TYPES)))
    if rdma != (layout == GKE_RDMA):
        raise InputError('layout: %s uses GPUDirect-%s; use layout %s' % (family.machine_type, family.technology, GKE_RDMA if rdma else GKE))
    if not prefix:
        raise InputError('network_prefix: give the name prefix of the per-NIC networks (Google\'s GKE GPUDirect-TCPX/TCPXO guide uses the project ID)')
    if not rdma and (gvnic_prefix or rdma_prefix):
        raise InputError('%s: the gVNIC and RDMA VPC prefixes are for layout gke_rdma (A3 Ultra, A4); %s names its networks '
                         'PREFIX-net-N from network_prefix only' % ('gvnic_network_prefix' if gvnic_prefix else 'rdma_network_prefix', machine_type))
    if rdma:
        rdma_layout = gke_catalog.GKE_RDMA_LAYOUT
        if not zone:
            raise InputError('zone: layout gke_rdma binds the RoCE network to a zone (network profile ZONE-vpc-roce); give the '
                             "node pool's zone, e.g. us-central1-b")
        if not zone.startswith(region + '-'):
            raise InputError('zone: %s is not in region %s; the RoCE network\'s subnets must be in the region of its zone' % (zone, region))
        count = 1 + rdma_layout['rdma_subnet_count']
        default_cidrs = [rdma_layout['gvnic_subnet_range']]
        default_cidrs += [rdma_layout['rdma_subnet_range'].format(m=n + 1) for n in range(rdma_layout['rdma_subnet_count'])]
        default_mtu, rules, default_source = rdma_layout['mtu'], rdma_layout['internal_rules'], rdma_layout['internal_source_range']
    else:
        count = family.data_nic_count
        default_cidrs = [gke_catalog.GKE_VPC_LAYOUT['subnet_range_example'].format(n=n) for n in range(1, count + 1)]
        default_mtu, rules = family.mtu, gke_catalog.GKE_VPC_LAYOUT['rules']
        default_source = gke_catalog.GKE_VPC_LAYOUT['source_range_example']
    mtu = default_mtu if mtu is None else mtu
    if not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
        raise InputError('mtu: %d is outside the %d-%d that VPC networks allow; leave mtu unset for %d' % (mtu, MTU_RANGE[0], MTU_RANGE[1], default_mtu))
    cidrs = list(data_cidrs or default_cidrs)
    _gke_ranges('data_cidrs', cidrs, count)
    sources = list(internal_source_ranges or ([default_source] if not data_cidrs else cidrs))
    _check_sources('internal_source_ranges', sources, None)

    def network(name, profile=None):
        body = {'name': name, 'autoCreateSubnetworks': False, 'mtu': mtu, 'routingConfig': {'routingMode': 'REGIONAL'}}
        if profile:
            body['networkProfile'] = network_profile_path(profile)
        _check_name('network_prefix', name)
        return ResourcePlan('network', networks_path(), name, body)

    def subnet(name, network_name, cidr):
        _check_name('network_prefix', name)
        return ResourcePlan('subnetwork', subnetworks_path(region), name, {
            'name': name, 'network': network_path(network_name, project), 'ipCidrRange': cidr, 'privateIpGoogleAccess': False})

    def firewall(name, network_name):
        _check_name('network_prefix', name)
        return ResourcePlan('firewall', firewalls_path(), name, {
            'name': name, 'network': network_path(network_name, project), 'direction': 'INGRESS', 'allowed': parse_rules(rules),
            'sourceRanges': list(sources)})

    chains = []
    if rdma:
        names = gke_catalog.gke_additional_networks(family.machine_type, prefix, gvnic_prefix, rdma_prefix)
        gvnic_net, gvnic_sub = names[0]
        gvnic_rule = rdma_layout['gvnic_firewall_rule'].format(gvnic_prefix=gke_catalog.rdma_network_prefixes(prefix, gvnic_prefix)[0])
        chains.append(NetworkChain(DATA, 1, network(gvnic_net), subnet(gvnic_sub, gvnic_net, cidrs[0]), [firewall(gvnic_rule, gvnic_net)]))
        roce = names[1][0]
        roce_subnets = [subnet(sub, roce, cidr) for (_net, sub), cidr in zip(names[1:], cidrs[1:])]
        chains.append(NetworkChain(DATA, 2, network(roce, rdma_layout['network_profile'].format(zone=zone)), roce_subnets[0], [],
                                   extra_subnets=roce_subnets[1:]))
    else:
        for n, ((net, sub), cidr) in enumerate(zip(gke_catalog.gke_additional_networks(family.machine_type, prefix), cidrs), start=1):
            chains.append(NetworkChain(DATA, n, network(net), subnet(sub, net, cidr),
                                       [firewall(gke_catalog.GKE_VPC_LAYOUT['firewall_rule'].format(prefix=prefix, n=n), net)]))
    return NetworkPlan(family, prefix, region, mtu, None, cidrs, sources, chains)


# The options of gce_gpudirect_network, here so that gpudirect_plan checks a playbook's network inputs with the same spec.
ARGUMENT_SPEC = {
    'network_prefix': {'type': 'str', 'required': True, 'aliases': ['prefix']},
    'gvnic_network_prefix': {'type': 'str'},
    'rdma_network_prefix': {'type': 'str'},
    'machine_type': {'type': 'str', 'required': True, 'choices': list(families.FAMILIES)},
    'layout': {'type': 'str', 'default': 'gce', 'choices': list(LAYOUTS)},
    'zone': {'type': 'str'},
    'region': {'type': 'str', 'required': True},
    'state': {'type': 'str', 'default': 'present', 'choices': ['present', 'absent']},
    'mtu': {'type': 'int'},
    'management_cidr': {'type': 'str', 'default': compute.GCE_NETWORK['mgmt_subnet_range']},
    'data_cidrs': {'type': 'list', 'elements': 'str'},
    'internal_source_ranges': {'type': 'list', 'elements': 'str'},
    'ssh_source_ranges': {'type': 'list', 'elements': 'str'},
    'ssh_from_anywhere': {'type': 'bool', 'default': False},
    'icmp_source_ranges': {'type': 'list', 'elements': 'str', 'default': ['0.0.0.0/0']},
    'timeout': {'type': 'int', 'default': 600},
}


def plan_from_params(params, project):
    """The NetworkPlan of the module options (state absent plans every rule the network can have); InputError on bad input."""
    if params.get('layout', 'gce') != 'gce':
        return build_gke_plan(project, params['region'], params['machine_type'], params['network_prefix'], params['layout'],
                              zone=params['zone'], mtu=params['mtu'], data_cidrs=params['data_cidrs'],
                              internal_source_ranges=params['internal_source_ranges'],
                              gvnic_prefix=params['gvnic_network_prefix'], rdma_prefix=params['rdma_network_prefix'])
    if params['gvnic_network_prefix'] or params['rdma_network_prefix']:
        raise InputError('%s: the gVNIC and RDMA VPC prefixes are for layout gke_rdma; layout gce names every network from network_prefix'
                         % ('gvnic_network_prefix' if params['gvnic_network_prefix'] else 'rdma_network_prefix'))
    if params['state'] == 'present' and params['ssh_source_ranges'] is None:
        raise InputError('ssh_source_ranges: give the ranges allowed to reach SSH on the management network (e.g. your '
                         "office's 203.0.113.0/24), or [] for no SSH rule")
    if params['timeout'] <= 0:
        raise InputError('timeout: %d seconds; give how long to wait for each operation, e.g. 600' % params['timeout'])
    if not REGION_PATTERN.match(params['region'] or ''):
        raise InputError("region: '%s' is not a region name; write it like us-central1 (a zone without its letter)" % params['region'])
    rules = {'ssh_source_ranges': params['ssh_source_ranges'] or [], 'ssh_from_anywhere': params['ssh_from_anywhere'],
             'icmp_source_ranges': params['icmp_source_ranges']}
    if params['state'] == 'absent':
        # Deleting takes every rule the GPUDirect network can have, whatever ranges it was made with.
        rules = {'ssh_source_ranges': ['0.0.0.0/0'], 'ssh_from_anywhere': True, 'icmp_source_ranges': ['0.0.0.0/0']}
    return build_plan(project, params['region'], params['machine_type'], params['network_prefix'], mtu=params['mtu'],
                      management_cidr=params['management_cidr'], data_cidrs=params['data_cidrs'],
                      internal_source_ranges=params['internal_source_ranges'], **rules)
