"""The Compute Engine rules the real API enforces for the resources the collection creates.

Only refusals Google's API makes belong here (documented limits of A3/A4 machine types, network and
subnet rules, naming).  Policy of our own (for instance "A3 Mega needs all 8 data NICs") does not:
the real API accepts such a VM, so the sandbox accepts it too.  Each rule names its source beside
the code: a Google documentation page, the discovery document, or a public error report quoting the
real response.  Messages follow GCE's wording ``Invalid value for field 'resource.X': 'V'. <reason>``
where the source shows that shape; where a source shows a bare sentence, the sandbox answers with the
bare sentence.  Where no public report gives the wording, the comment says "wording: the sandbox's".
"""

import ipaddress
import re
import uuid

from .catalog import MACHINE_TYPES
from .errors import ApiError, invalid

# Resource names: the pattern of every ``name`` field in the compute.v1 discovery document ("must be 1-63 characters
# long and match the regular expression `[a-z]([-a-z0-9]*[a-z0-9])?`").
NAME_PATTERN = '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'
_NAME = re.compile('^' + NAME_PATTERN + '$')
# MTU of a VPC network: 1300 to 8896 bytes (https://cloud.google.com/vpc/docs/mtu; Network.mtu in the discovery document).
MTU_MIN, MTU_MAX = 1300, 8896
# RDMA network profiles: https://cloud.google.com/vpc/docs/rdma-network-profiles ("ZONE-vpc-roce";
# "RoCE VPC networks only support MRDMA NICs ... All non-RDMA NICs of a VM must attach to regular VPC networks").
ROCE_PROFILE_SUFFIX = '-vpc-roce'
RDMA_NIC_TYPES = ('MRDMA', 'IRDMA')
# Reservation-bound provisioning model, as documented now (2026):
# https://docs.cloud.google.com/compute/docs/instances/about-reservation-bound-instances -- "lets you create
# A4X Max, A4X, A4, A3 Ultra, A3 Mega, A3 High with 8 GPUs, A3 Edge, and H4D instances".  The page is newer
# than seed 000 (whose 予約で制限 tab says a3-edgegpu-8g is not supported) and than the earlier
# about-reservation-bound-vms page (A4X, A4, A3 Ultra, A3 Mega, A3 High); the sandbox follows the newest.
RESERVATION_BOUND_MACHINE_TYPES = ('a3-megagpu-8g', 'a3-highgpu-8g', 'a3-edgegpu-8g', 'a3-ultragpu-8g', 'a4-highgpu-8g')
# Disk types each accelerator-optimized series takes ("Supported disk types",
# https://cloud.google.com/compute/docs/accelerator-optimized-machines): A3 Ultra and A4 take Hyperdisk only;
# A3 Mega/High/Edge also take pd-balanced and pd-ssd.  Types not listed here take every disk type.
_HYPERDISK = ('hyperdisk-balanced', 'hyperdisk-extreme', 'hyperdisk-ml', 'hyperdisk-throughput')
DISK_TYPES_BY_MACHINE = {
    'a3-ultragpu-8g': _HYPERDISK, 'a4-highgpu-8g': _HYPERDISK,
    'a3-megagpu-8g': ('pd-balanced', 'pd-ssd') + _HYPERDISK, 'a3-highgpu-8g': ('pd-balanced', 'pd-ssd') + _HYPERDISK,
    'a3-edgegpu-8g': ('pd-balanced', 'pd-ssd') + _HYPERDISK,
}
DISK_TYPES = ('pd-standard', 'pd-balanced', 'pd-ssd', 'pd-extreme', 'local-ssd') + _HYPERDISK


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
    # IPv4 subnet ranges: "the largest is /8, the smallest /29" (https://cloud.google.com/vpc/docs/subnets#valid-ranges).
    if network.version != 4 or not 8 <= network.prefixlen <= 29:
        raise field_error(field, value, 'Invalid IPCidrRange: %s; the prefix length must be between /8 and /29.' % value)
    # Valid IPv4 ranges (https://cloud.google.com/vpc/docs/subnets#valid-ranges): 127.0.0.0/8 (loopback) and
    # the other ranges the page lists as prohibited are refused.  Wording: the sandbox's.
    if network.subnet_of(ipaddress.ip_network('127.0.0.0/8')) or network.subnet_of(ipaddress.ip_network('0.0.0.0/8')) \
            or network.subnet_of(ipaddress.ip_network('224.0.0.0/4')) or network.subnet_of(ipaddress.ip_network('240.0.0.0/4')):
        raise field_error(field, value, 'Invalid IPCidrRange: %s is a prohibited range.' % value)
    return network


def check_subnet_overlap(new_range, siblings, field='ipCidrRange'):
    """``siblings``: (name, region, [cidr strings]) of the other subnets of the same network.

    Message as the real API words it (the field prefix, then the conflict), 400 ``invalid``: "Invalid value for
    field 'resource.ipCidrRange': '192.168.0.0/28'. Invalid IPCidrRange: 192.168.0.0/28 conflicts with existing
    subnetwork 'tbd4aa93-bootstrap-network-us-west3' in region 'us-west3'." (full response quoted in
    tranquilitybase-io/tb-gcp#160); for a secondary range the field is ``secondaryIpRanges[N].ipCidrRange``
    (terraform-google-modules/terraform-google-network#20).
    """
    for name, region, ranges in siblings:
        for cidr in ranges:
            if new_range.overlaps(ipaddress.ip_network(cidr, strict=False)):
                raise field_error(field, new_range, "Invalid IPCidrRange: %s conflicts with existing subnetwork '%s' in region '%s'."
                                  % (new_range, name, region))


def check_secondary_ranges(primary, secondaries):
    """Secondary ranges of one subnet (https://cloud.google.com/vpc/docs/subnets#secondary-ranges): each has a
    rangeName (a resource name, unique in the subnet), and no range overlaps the primary or another secondary.
    Wording: the sandbox's, in GCE's field-error shape."""
    seen = {}
    for index, item in enumerate(secondaries):
        field = 'secondaryIpRanges[%d]' % index
        name = item.get('rangeName')
        if not name:
            raise field_error(field + '.rangeName', '', 'The secondary range name must be specified.')
        check_name(name, field + '.rangeName')
        if name in seen:
            raise field_error(field + '.rangeName', name, "Secondary range name '%s' is used more than once in the subnetwork." % name)
        cidr = parse_cidr(item.get('ipCidrRange'), field + '.ipCidrRange')
        if cidr.overlaps(primary):
            raise field_error(field + '.ipCidrRange', cidr, 'Invalid IPCidrRange: %s conflicts with the primary range %s.' % (cidr, primary))
        for other_name, other in seen.items():
            if cidr.overlaps(other):
                raise field_error(field + '.ipCidrRange', cidr, "Invalid IPCidrRange: %s conflicts with secondary range '%s'." % (cidr, other_name))
        seen[name] = cidr
    return seen


def is_gpu_machine(machine_type):
    return bool(MACHINE_TYPES.get(machine_type, {}).get('accelerators'))


def is_roce(network):
    return (network or {}).get('networkProfile', '').endswith(ROCE_PROFILE_SUFFIX)


def roce_zone(network):
    """The zone a RoCE network is bound to: ``.../networkProfiles/us-central1-b-vpc-roce`` -> ``us-central1-b``."""
    return network['networkProfile'].rsplit('/', 1)[-1][:-len(ROCE_PROFILE_SUFFIX)]


def effective_nic_type(machine_type, nic):
    """The NIC type the VM gets.  Machine series that only take gVNIC (A3, A4: third generation and later) use
    it when ``nicType`` is unset: "gVNIC is the default and only supported network interface"
    (https://cloud.google.com/compute/docs/networking/using-gvnic and the machine series pages)."""
    given = nic.get('nicType')
    if given and given != 'UNSPECIFIED_NIC_TYPE':
        return given
    return 'GVNIC' if MACHINE_TYPES[machine_type]['nic_family'] else None


def check_nics(machine_type, zone, nics, networks, image_features):
    """Refuse what GCE refuses for the NICs of an instance; ``networks`` is each NIC's stored network."""
    spec = MACHINE_TYPES[machine_type]
    # NICs per machine type: A3 Mega 9, A3 High/Edge 5, A3 Ultra/A4 10 (accelerator-optimized machines page,
    # https://cloud.google.com/compute/docs/accelerator-optimized-machines); others up to 8 by vCPU count
    # (https://cloud.google.com/vpc/docs/create-use-multiple-interfaces#max-interfaces).  The real wording.
    if len(nics) > spec['max_nics']:
        raise field_error('networkInterfaces', '', 'Too many network interfaces. The maximum number of network interfaces '
                          'allowed for this machine type (%s) is %d.' % (machine_type, spec['max_nics']))
    family = spec['nic_family']
    regular_networks = {}
    for index, (nic, network) in enumerate(zip(nics, networks)):
        nic_type = effective_nic_type(machine_type, nic)
        field = 'networkInterfaces[%d].nicType' % index
        # Wording of the three nicType refusals below: the sandbox's (documented limits, no public report quoted).
        if family == 'A3_TCP' and nic_type != 'GVNIC':
            raise field_error(field, nic_type, 'Machine type %s requires gVNIC: nicType must be GVNIC.' % machine_type)
        if family == 'RDMA':
            allowed = ('GVNIC',) if index == 0 else ('GVNIC', 'MRDMA')
            if nic_type not in allowed:
                raise field_error(field, nic_type or 'UNSPECIFIED_NIC_TYPE',
                                  'Machine type %s supports nicType %s on this interface.' % (machine_type, ' or '.join(allowed)))
        if family != 'RDMA' and nic_type in RDMA_NIC_TYPES:
            raise field_error(field, nic_type, 'nicType %s is not supported on machine type %s.' % (nic_type, machine_type))
        # RDMA network profiles page: a RoCE network takes MRDMA NICs only, MRDMA NICs attach to RoCE networks
        # only, and instances with a NIC in it must be in the profile's zone.  Wording: the sandbox's.
        if is_roce(network):
            if nic_type != 'MRDMA':
                raise field_error(field, nic_type or 'UNSPECIFIED_NIC_TYPE', "Network '%s' uses the RDMA network profile %s: "
                                  'it only supports MRDMA network interfaces.' % (network['name'], network['networkProfile'].rsplit('/', 1)[-1]))
            if roce_zone(network) != zone:
                raise field_error('networkInterfaces[%d].network' % index, network['name'],
                                  "Network '%s' is bound to zone %s by its network profile; the instance is in %s."
                                  % (network['name'], roce_zone(network), zone))
        elif nic_type == 'MRDMA':
            raise field_error(field, nic_type, "nicType MRDMA needs a network with an RDMA (RoCE) network profile; '%s' has none." % network['name'])
        else:
            # "Networks must be distinct for NICs attached to a VM." -- the real wording, quoted in
            # https://github.com/hashicorp/terraform-provider-google/issues/8269.  Only regular networks: the 8
            # MRDMA NICs of an A3 Ultra / A4 share one RoCE network with 8 subnets (RDMA network profiles page;
            # seed 001's manual variant).  The report shows the refusal at operation wait; the sandbox refuses
            # the request itself, with the same message.
            if network['name'] in regular_networks:
                raise field_error('networkInterfaces[%d].network' % index, network['name'], 'Networks must be distinct for NICs attached to a VM.')
            regular_networks[network['name']] = index
        # "This boot disk source does not support gVNIC." -- the real message for a gVNIC NIC on an image
        # without the GVNIC guest OS feature (siderolabs/pkgs#1295, GoogleCloudPlatform/compute-virtual-ethernet-linux#73).
        if nic_type == 'GVNIC' and image_features is not None and 'GVNIC' not in image_features:
            raise invalid('This boot disk source does not support gVNIC.')


def check_scheduling(instance, machine_type, scheduling, given):
    """Refuse what GCE refuses in ``scheduling`` (``scheduling`` has the defaults filled in, ``given`` is the request's)."""
    model = scheduling['provisioningModel']
    if is_gpu_machine(machine_type) and scheduling.get('onHostMaintenance') == 'MIGRATE':
        # "Instances with guest accelerators do not support live migration." -- 400 badRequest, a bare sentence
        # (cloud-barista/cb-spider#1125 "Error 400: ... live migration., badRequest"; loft-sh/devpod#973 shows gcloud
        # printing it).  MIGRATE is also the API's default, so a GPU VM that leaves onHostMaintenance unset is
        # refused the same way (travis-ci/worker#479: "the default value of MIGRATE results in errors").
        raise ApiError(400, 'badRequest', 'Instances with guest accelerators do not support live migration.')
    preemptible = scheduling.get('preemptible')
    if (model == 'SPOT' or preemptible) and scheduling.get('automaticRestart') is True:
        # gcloud sends automaticRestart=false for SPOT even with --restart-on-failure, but true for FLEX_START, and
        # Google's own flex-start commands use --restart-on-failure: only Spot/preemptible is refused.  Real wording:
        # elasticluster/elasticluster#568, percona/mongo_terraform_ansible#34.
        raise field_error('scheduling.preemptible', 'true', 'Scheduling must have preemptible be false when AutomaticRestart is true.')
    if given.get('provisioningModel') == 'STANDARD' and given.get('preemptible'):
        # Scheduling.preemptible "... cannot be set if provisioningModel is STANDARD" (compute.v1 discovery document,
        # Scheduling.provisioningModel / preemptible).  Wording: the sandbox's.
        raise field_error('scheduling.preemptible', 'true', 'Preemptible instances must use the SPOT provisioning model, not STANDARD.')
    if model == 'FLEX_START':
        # Flex-start VMs: a run duration (maxRunDuration) and a termination action are required
        # (https://cloud.google.com/compute/docs/instances/create-flex-start-vms, "Requirements").  Wording: the sandbox's.
        if not scheduling.get('maxRunDuration'):
            raise field_error('scheduling.maxRunDuration', '', 'FLEX_START instances must set maxRunDuration.')
        if not scheduling.get('instanceTerminationAction'):
            raise field_error('scheduling.instanceTerminationAction', '', 'FLEX_START instances must set instanceTerminationAction.')
    if model == 'RESERVATION_BOUND':
        if machine_type not in RESERVATION_BOUND_MACHINE_TYPES:
            raise field_error('scheduling.provisioningModel', model,
                              'Machine type %s does not support the RESERVATION_BOUND provisioning model.' % machine_type)
        affinity = instance.get('reservationAffinity', {}).get('consumeReservationType')
        if affinity != 'SPECIFIC_RESERVATION':
            raise field_error('reservationAffinity.consumeReservationType', affinity or '',
                              'RESERVATION_BOUND instances must consume a specific reservation.')


# Labels (https://cloud.google.com/compute/docs/labeling-resources#requirements): keys 1-63 characters, start
# with a lowercase letter; keys and values use lowercase letters, digits, '_' and '-' (international
# characters allowed), values 0-63 characters; at most 64 labels.  Wording: the sandbox's.
_LABEL_KEY = re.compile(r'^[\w-]{1,63}$', re.UNICODE)
_LABEL_VALUE = re.compile(r'^[\w-]{0,63}$', re.UNICODE)


def check_labels(labels):
    if not labels:
        return
    if len(labels) > 64:
        raise field_error('labels', '', 'Too many labels: at most 64 are allowed.')
    for key, value in labels.items():
        if not (_LABEL_KEY.match(key) and key[:1].islower() and key == key.lower()):
            raise field_error('labels', key, 'Label keys must start with a lowercase letter and use only lowercase letters, '
                              'digits, underscores and dashes (1-63 characters).')
        if not (_LABEL_VALUE.match(value or '') and (value or '') == (value or '').lower()):
            raise field_error('labels.%s' % key, value, 'Label values use only lowercase letters, digits, underscores and dashes (0-63 characters).')


def check_request_id(request_id):
    """``requestId``: "The request ID must be a valid UUID with the exception that zero UUID is not supported
    (00000000-0000-0000-0000-000000000000)" (compute.v1 discovery document, every mutating method).
    Wording: the sandbox's."""
    if request_id is None:
        return
    try:
        parsed = uuid.UUID(request_id)
    except ValueError:
        parsed = None
    if parsed is None or parsed.int == 0:
        raise ApiError(400, 'invalid', "Invalid value for field 'requestId': '%s'. The request ID must be a valid UUID "
                       '(the zero UUID is not supported).' % request_id)
