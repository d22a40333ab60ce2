# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

# Compute Engine facts for GPUDirect VMs: boot image, instance defaults, provisioning models and
# the network layout (management VPC + one VPC per data NIC). Sources: Google's Compute Engine GPUDirect guide (see families.py).
#
# Standard library only (imported on the controller; families.py imports the image defaults).
#

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError


# ---------------------------------------------------------------------------------------------
# Compute Engine instance defaults (Google's Compute Engine GPUDirect guide, "A3 Mega インスタンスを作成する（GPUDirect-TCPXO）" and
# "A3 High インスタンスと Edge インスタンスを作成する（GPUDirect-TCPX）", every gcloud command)
# ---------------------------------------------------------------------------------------------

MANAGED_LABEL = ('aiinfra-gpudirect', 'managed')
# Not from a seed: the resource label on what the collection creates (VMs, GKE clusters, node pools' nodes), so that
# teardown deletes only those; what it adopted or someone else made is never deleted by the playbooks.
GROUP_LABEL = 'aiinfra-gpudirect-group'
# Not from a seed: the resource label naming the VMs' group (their network prefix), by which teardown finds every VM
# of a group, however many a run made.


def carries_mark(labels):
    """Whether resource labels ``labels`` (of a VM, a GKE cluster, a node pool's nodes) hold MANAGED_LABEL: the
    collection created the resource."""
    key, value = MANAGED_LABEL
    return (labels or {}).get(key) == value


COS_IMAGE_FAMILY = 'cos-121-lts'
# Google's Compute Engine GPUDirect guide: ``--image-family=cos-121-lts`` ("cos-121-lts 以降" -- this family or later).
COS_LTS_FAMILY = re.compile(r'^cos-(?:arm64-)?(\d+)-lts$')
COS_IMAGE_PROJECT = 'cos-cloud'
# Google's Compute Engine GPUDirect guide: ``--image-project=cos-cloud``.


def check_cos_image_family(image_family, field='image_family'):
    """Refuse a COS LTS family older than the Compute Engine GPUDirect guide's floor (cos-121-lts, "this family or later"); other families pass
    here (whether a host stage needs COS at all is the plan step's question)."""
    found = COS_LTS_FAMILY.match(image_family or '')
    floor = int(COS_LTS_FAMILY.match(COS_IMAGE_FAMILY).group(1))
    if found and int(found.group(1)) < floor:
        raise InputError('%s: %s is older than %s, the oldest family Google\'s Compute Engine GPUDirect guide allows ("%s or '
                         'later"); give %s or a later LTS family, or leave it unset'
                         % (field, image_family, COS_IMAGE_FAMILY, COS_IMAGE_FAMILY, COS_IMAGE_FAMILY))
    return image_family


GCE_METADATA = (('cos-update-strategy', 'update_disabled'),)
# Google's Compute Engine GPUDirect guide: ``--metadata=cos-update-strategy=update_disabled``.
GCE_SCOPES = ('https://www.googleapis.com/auth/cloud-platform',)
# Google's Compute Engine GPUDirect guide: ``--scopes=https://www.googleapis.com/auth/cloud-platform`` (also the node
# pools of Google's GKE GPUDirect-TCPX/TCPXO guide).
ON_HOST_MAINTENANCE = 'TERMINATE'
# Google's Compute Engine GPUDirect guide: ``--maintenance-policy=TERMINATE``.
AUTOMATIC_RESTART = True
# Google's Compute Engine GPUDirect guide: ``--restart-on-failure``.
MGMT_NIC_EXTERNAL_ADDRESS = True
# Google's Compute Engine GPUDirect guide: the management ``--network-interface`` has an address, data NICs say ``no-address``.
DATA_NIC_EXTERNAL_ADDRESS = False
# Google's Compute Engine GPUDirect guide: every data ``--network-interface`` ends in ``no-address``.

STANDARD = 'STANDARD'
SPOT = 'SPOT'
FLEX_START = 'FLEX_START'
RESERVATION_BOUND = 'RESERVATION_BOUND'


@dataclass(frozen=True)
class ProvisioningModel:
    """What a provisioning model needs on ``instances.insert`` (Google's Compute Engine GPUDirect guide, tabs 標準 / スポット /
    Flex Start / 予約で制限 under each "インスタンスを作成する" section).

    ``STANDARD`` is the API default: the guide's 標準 tab passes no ``--provisioning-model``.
    """

    name: str
    termination_action_required: bool
    max_run_duration_required: bool = False
    request_valid_for_duration_required: bool = False
    reservation_affinity: Optional[str] = None
    reservation_required: bool = False


PROVISIONING_MODELS = MappingProxyType({
    STANDARD: ProvisioningModel(STANDARD, termination_action_required=False),
    SPOT: ProvisioningModel(SPOT, termination_action_required=True),
    FLEX_START: ProvisioningModel(FLEX_START, termination_action_required=True, max_run_duration_required=True,
                                  request_valid_for_duration_required=True, reservation_affinity='none'),
    RESERVATION_BOUND: ProvisioningModel(RESERVATION_BOUND, termination_action_required=True,
                                         reservation_affinity='specific', reservation_required=True),
})
TERMINATION_ACTIONS = ('STOP', 'DELETE')
# Google's Compute Engine GPUDirect guide: TERMINATION_ACTION is ``STOP`` or ``DELETE``.
MAX_RUN_DURATION_RANGE = ('10m', '7d')
# Google's Compute Engine GPUDirect guide Flex Start: RUN_DURATION "10 分～7 日".
REQUEST_VALID_FOR_DURATION_RANGE = ('90s', '2h')
# Google's Compute Engine GPUDirect guide Flex Start: VALID_FOR_DURATION 90s-2h for one zone, or ``0s`` for any zone of the region.
REQUEST_VALID_FOR_DURATION_ANY_ZONE = '0s'

# ---------------------------------------------------------------------------------------------
# Compute Engine network layout (Google's Compute Engine GPUDirect guide, "VPC ネットワークを設定する")
# ---------------------------------------------------------------------------------------------

GCE_NETWORK = MappingProxyType({
    'subnet_mode': 'custom',
    'mgmt_network': '{prefix}-mgmt-net',
    'mgmt_subnet': '{prefix}-mgmt-sub',
    'mgmt_subnet_range': '192.168.0.0/24',
    'mgmt_internal_rule': '{prefix}-mgmt-internal',
    'mgmt_ssh_rule': '{prefix}-mgmt-external-ssh',
    'mgmt_ping_rule': '{prefix}-mgmt-external-ping',
    'data_network': '{prefix}-data-net-{n}',
    'data_subnet': '{prefix}-data-sub-{n}',
    'data_subnet_range': '192.168.{n}.0/24',
    'data_internal_rule': '{prefix}-data-internal-{n}',
    'internal_rules': 'tcp:0-65535,udp:0-65535,icmp',
    'internal_source_range': '192.168.0.0/16',
    'ssh_rules': 'tcp:22',
    'ping_rules': 'icmp',
    'ping_source_range': '0.0.0.0/0',
})
# Names are ``str.format`` patterns (``prefix``, ``n`` from 1); Google's Compute Engine GPUDirect guide "管理ネットワーク、サブネット、
# ファイアウォールルールを作成する" and "データネットワーク、サブネット、ファイアウォールルールを作成する".
# The SSH rule's source range is the user's (SSH_SOURCE_IP_RANGE) and has no default.

# A Compute Engine resource name (networks, subnets, firewall rules, instances): RFC 1035, 1-63 characters.
GCE_NAME_PATTERN = re.compile(r'^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$')


def network_interfaces(prefix, data_nic_count):
    """The (network, subnetwork) names of a GPUDirect network in NIC order: management, then data 1..N."""
    layout = GCE_NETWORK
    pairs = [(layout['mgmt_network'].format(prefix=prefix), layout['mgmt_subnet'].format(prefix=prefix))]
    pairs += [(layout['data_network'].format(prefix=prefix, n=n), layout['data_subnet'].format(prefix=prefix, n=n))
              for n in range(1, data_nic_count + 1)]
    return pairs


def data_subnet_ranges(data_nic_count):
    """The guide's data subnet ranges, 192.168.1.0/24 .. 192.168.N.0/24."""
    return [GCE_NETWORK['data_subnet_range'].format(n=n) for n in range(1, data_nic_count + 1)]


def check_provisioning_model(family, provisioning_model, field='provisioning_model', accept_disputed=False):
    """Raise ValueError when ``family`` (a catalog :class:`Family`) cannot use ``provisioning_model``
    (a model its family's sources do not list, or one they disagree on unless ``accept_disputed``). Families whose
    models no source lists are not checked."""
    model = str(provisioning_model or STANDARD).upper()
    if model not in PROVISIONING_MODELS:
        raise InputError('%s: unknown provisioning model %r; choose one of: %s'
                         % (field, provisioning_model, ', '.join(PROVISIONING_MODELS)))
    if family.provisioning_models is not None and model not in family.provisioning_models:
        raise InputError('%s: %s does not support %s; use one of: %s'
                         % (field, family.machine_type, model, ', '.join(family.provisioning_models)))
    dispute = dict(family.disputed_provisioning_models).get(model)
    if dispute and not accept_disputed:
        raise InputError('%s: %s on %s is disputed: %s; it is refused unless you accept that (accept_disputed_provisioning_model: '
                         'true, once your reservation takes it), or choose another model' % (field, model, family.machine_type,
                                                                                             dispute))
    return PROVISIONING_MODELS[model]


# ---------------------------------------------------------------------------------------------
# The boot disk types each machine type takes (the zones that offer it are read from the API: gce/lookups.py)
# ---------------------------------------------------------------------------------------------

# Boot disk types by series ("Supported disk types", https://cloud.google.com/compute/docs/accelerator-optimized-machines):
# A3 Ultra and A4 take Hyperdisk only; A3 Mega, High and Edge also pd-balanced and pd-ssd. Compute Engine refuses
# others with "[pd-standard, a3-megagpu-8g] features are not compatible for creating instance."
_HYPERDISK = ('hyperdisk-balanced', 'hyperdisk-extreme', 'hyperdisk-ml', 'hyperdisk-throughput')
BOOT_DISK_TYPES = MappingProxyType({
    'a3-megagpu-8g': ('pd-balanced', 'pd-ssd') + _HYPERDISK,
    'a3-highgpu-8g': ('pd-balanced', 'pd-ssd') + _HYPERDISK,
    'a3-edgegpu-8g': ('pd-balanced', 'pd-ssd') + _HYPERDISK,
    'a3-ultragpu-8g': _HYPERDISK,
    'a4-highgpu-8g': _HYPERDISK,
})


def check_boot_disk_type(machine_type, disk_type, field='boot_disk_type'):
    """Raise ValueError when ``machine_type`` cannot boot from ``disk_type`` (unset: the API's default)."""
    allowed = BOOT_DISK_TYPES.get(machine_type)
    if disk_type and allowed is not None and disk_type not in allowed:
        raise InputError('%s: %s does not take %s disks; use one of: %s' % (field, machine_type, disk_type, ', '.join(allowed)))
