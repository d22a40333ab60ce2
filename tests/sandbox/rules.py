"""The Compute Engine rules the real API enforces for the resources the collection creates.

Only refusals Google's API makes belong here (documented limits of A3/A4 machine types, network and
subnet rules, naming).  Policy of our own (for instance "A3 Mega needs all 8 data NICs") does not:
the real API accepts such a VM, so the sandbox accepts it too.  Messages follow GCE's wording:
``Invalid value for field 'resource.X': 'V'. <reason>``.
"""

import ipaddress
import re

from .catalog import MACHINE_TYPES
from .errors import invalid

NAME_PATTERN = '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'
_NAME = re.compile('^' + NAME_PATTERN + '$')
MTU_MIN, MTU_MAX = 1300, 8896


def field_error(field, value, reason):
    return invalid("Invalid value for field 'resource.%s': '%s'. %s" % (field, '' if value is None else value, reason))


def check_name(name, field='name'):
    if not isinstance(name, str) or not _NAME.match(name):
        raise field_error(field, name, "Must be a match of regex '%s'" % NAME_PATTERN)


def check_mtu(mtu):
    if mtu is not None and not MTU_MIN <= int(mtu) <= MTU_MAX:
        raise field_error('mtu', mtu, 'Valid range is [%d, %d].' % (MTU_MIN, MTU_MAX))


def parse_cidr(value, field='ipCidrRange'):
    try:
        network = ipaddress.ip_network(value, strict=False)
    except (TypeError, ValueError):
        raise field_error(field, value, 'Invalid IPCidrRange: %s.' % value) from None
    if network.version != 4 or not 8 <= network.prefixlen <= 29:
        raise field_error(field, value, 'Invalid IPCidrRange: %s; the prefix length must be between /8 and /29.' % value)
    return network


def check_subnet_overlap(new_range, siblings):
    """``siblings``: (name, region, [cidr strings]) of the other subnets of the same network."""
    for name, region, ranges in siblings:
        for cidr in ranges:
            if new_range.overlaps(ipaddress.ip_network(cidr, strict=False)):
                raise invalid('Invalid IPCidrRange: %s conflicts with existing subnetwork \'%s\' in region \'%s\'.'
                              % (new_range, name, region))


def is_gpu_machine(machine_type):
    return bool(MACHINE_TYPES.get(machine_type, {}).get('accelerators'))


def check_instance(instance, machine_type, networks_by_nic, scheduling):
    """Refuse what GCE refuses for this instance; ``networks_by_nic`` lists each NIC's network key."""
    spec = MACHINE_TYPES[machine_type]
    nics = instance.get('networkInterfaces', [])
    if len(nics) > spec['max_nics']:
        raise field_error('networkInterfaces', '', 'Too many network interfaces. The maximum number of network interfaces '
                          'allowed for this machine type (%s) is %d.' % (machine_type, spec['max_nics']))
    seen = {}
    for index, network in enumerate(networks_by_nic):
        if network in seen:
            raise field_error('networkInterfaces[%d].network' % index, network,
                              'Networks must be distinct for NICs attached to a VM.')
        seen[network] = index
    family = spec['nic_family']
    for index, nic in enumerate(nics):
        nic_type = nic.get('nicType')
        field = 'networkInterfaces[%d].nicType' % index
        if family == 'A3_TCP' and nic_type != 'GVNIC':
            raise field_error(field, nic_type or 'UNSPECIFIED_NIC_TYPE', 'Machine type %s requires gVNIC: nicType must be GVNIC.' % machine_type)
        if family == 'RDMA':
            allowed = ('GVNIC',) if index == 0 else ('GVNIC', 'MRDMA')
            if nic_type not in allowed:
                raise field_error(field, nic_type or 'UNSPECIFIED_NIC_TYPE',
                                  'Machine type %s supports nicType %s on this interface.' % (machine_type, ' or '.join(allowed)))
        if family != 'RDMA' and nic_type in ('MRDMA', 'IRDMA'):
            raise field_error(field, nic_type, 'nicType %s is not supported on machine type %s.' % (nic_type, machine_type))
    model = scheduling.get('provisioningModel', 'STANDARD')
    if is_gpu_machine(machine_type) and scheduling.get('onHostMaintenance') == 'MIGRATE':
        raise field_error('scheduling.onHostMaintenance', 'MIGRATE', 'Instances with guest accelerators do not support live migration.')
    # gcloud sends automaticRestart=false for SPOT even with --restart-on-failure, but true for FLEX_START,
    # and Google's own flex-start commands use --restart-on-failure: only Spot/preemptible is refused.
    if (model == 'SPOT' or scheduling.get('preemptible')) and scheduling.get('automaticRestart') is True:
        raise field_error('scheduling.automaticRestart', 'true', 'Preemptible and Spot instances cannot be automatically restarted.')
    if model == 'SPOT' and scheduling.get('onHostMaintenance') == 'MIGRATE':
        raise field_error('scheduling.onHostMaintenance', 'MIGRATE', 'Spot instances do not support live migration.')
    if model == 'RESERVATION_BOUND':
        if machine_type == 'a3-edgegpu-8g':
            raise field_error('scheduling.provisioningModel', model,
                              'Machine type a3-edgegpu-8g does not support the RESERVATION_BOUND provisioning model.')
        affinity = instance.get('reservationAffinity', {}).get('consumeReservationType')
        if affinity != 'SPECIFIC_RESERVATION':
            raise field_error('reservationAffinity.consumeReservationType', affinity or '',
                              'RESERVATION_BOUND instances must consume a specific reservation.')
