# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One view of a Compute Engine VM (API JSON -> its GPUDirect facts), for the inventory plugin's host variables and the
instance module's results alike: which NICs are management and which data (one management NIC on A3, two on A3 Ultra
and A4, from the catalog), the guest's interface names, the addresses.
"""

from __future__ import annotations

import functools
import re

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute, families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links

NIC_NAMES = ['nic%d' % index for index in range(16)]
NON_GPU = 'none'


@functools.lru_cache(maxsize=4096)
def resource_name(url):
    """The last path segment of a resource URL. Cached: a fleet repeats the same network, subnet,
    zone and machine type URLs thousands of times."""
    return links.resource_name(url) or None


def _project_of(instance):
    match = re.search(r'/projects/([^/]+)/', instance.get('selfLink') or instance.get('zone') or '')
    return match.group(1) if match else None


_NETWORK_PATTERN = re.compile('^' + re.escape(compute.GCE_NETWORK['mgmt_network']).replace(re.escape('{prefix}'), '(.+)') + '$')


@functools.lru_cache(maxsize=4096)
def network_prefix(network_name):
    """'a3high-mgmt-net' -> 'a3high' (the network_prefix of gce_gpudirect_network); None for other networks."""
    match = _NETWORK_PATTERN.match(network_name or '')
    return match.group(1) if match else None


def _accelerators(instance):
    """(count, model) of GPUs attached with guestAccelerators (N1 + T4 and the like)."""
    count, model = 0, None
    for accelerator in instance.get('guestAccelerators') or []:
        count += int(accelerator.get('acceleratorCount') or 0)
        model = model or resource_name(accelerator.get('acceleratorType'))
    return count, model


def instance_facts(instance):
    """The GPUDirect facts of one Compute Engine instance (API JSON), without the prefix.

    Data NICs are the NICs after the machine type's management NICs (one on A3, two on A3 Ultra / A4,
    one on machines outside the catalog), in NIC order. A gVNIC or virtio NIC with index N is
    ``ethN`` in the guest (how COS and the guide's NCCL scripts name them); an RDMA NIC (MRDMA) has
    no ethN name: its entry in ``data_interfaces`` is None and it is not in ``nccl_interfaces``.
    ``data_ips``, ``data_interfaces``, ``data_networks``, ``data_subnetworks`` and
    ``data_nic_types`` are aligned lists, one entry per data NIC.
    """
    machine_type = resource_name(instance.get('machineType'))
    family = families.FAMILIES.get(machine_type)
    zone = resource_name(instance.get('zone'))
    nics = instance.get('networkInterfaces') or []
    if [nic.get('name') for nic in nics] != NIC_NAMES[:len(nics)]:   # the API lists them in order; make sure
        nics = sorted(nics, key=nic_index)
    management_count = family.management_nic_count if family else 1
    management = nics[0] if nics else {}
    external = [config.get('natIP') for config in management.get('accessConfigs') or [] if config.get('natIP')]
    data = [(index, nic) for index, nic in enumerate(nics) if index >= management_count]
    nic_types = [nic.get('nicType') or 'VIRTIO_NET' for _index, nic in data]
    interfaces = [None if kind == families.MRDMA else 'eth%d' % index for (index, _nic), kind in zip(data, nic_types)]
    if family:
        technology = family.technology.lower()
        gpu_count, gpu_model = family.gpu_count, family.gpu_model
    else:
        technology = NON_GPU
        gpu_count, gpu_model = _accelerators(instance)
    tcp_stack = technology in ('tcpx', 'tcpxo')
    return {
        'name': instance.get('name'),
        'id': str(instance.get('id')) if instance.get('id') is not None else None,
        'project': _project_of(instance),
        'zone': zone,
        'region': links.region_of(zone),
        'status': instance.get('status'),
        'machine_type': machine_type,
        'technology': technology,
        'gpu_count': gpu_count,
        'gpu_model': gpu_model,
        'provisioning_model': (instance.get('scheduling') or {}).get('provisioningModel') or compute.STANDARD,
        'labels': dict(instance.get('labels') or {}),
        'management_ip': management.get('networkIP'),
        'external_ip': external[0] if external else None,
        'management_network': resource_name(management.get('network')),
        'management_subnetwork': resource_name(management.get('subnetwork')),
        'network_prefix': network_prefix(resource_name(management.get('network'))),
        'data_ips': [nic.get('networkIP') for _index, nic in data],
        'data_interfaces': interfaces,
        'data_networks': [resource_name(nic.get('network')) for _index, nic in data],
        'data_subnetworks': [resource_name(nic.get('subnetwork')) for _index, nic in data],
        'data_nic_types': nic_types,
        'nccl_interfaces': ','.join(name for name in interfaces if name) if tcp_stack else None,
        'nccl_ctrl_interface': 'eth0' if tcp_stack else None,
        'self_link': instance.get('selfLink'),
    }


def nic_index(nic):
    name = nic.get('name') or ''
    return int(name[3:]) if name[:3] == 'nic' and name[3:].isdigit() else 0
