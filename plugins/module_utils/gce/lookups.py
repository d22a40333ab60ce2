# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What must be read from the API before the first VM insert, and the refusals it leads to.

The plans of gce/instance.py and gce/network.py judge the inputs alone; these functions judge them
against what exists: the zones of a region, a machine type or disk type in a zone, an image family,
subnetworks and the addresses still free in them. gce_gpudirect_instance calls them before it inserts,
and gpudirect_plan calls the same functions at the top of a playbook, before any stage writes.
Every function raises InputError with the field first, as the plans do. Reads only (GET and list).
check_references sends its reads at once (ConcurrentReads), since none depends on another.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute as compute_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.concurrency import map_concurrently
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.compute import (
    disk_type_path, machine_type_path, networks_path, region_path, reservation_path, subnetworks_path)
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

# Every subnet's primary range loses 4 addresses: network, default gateway, second-to-last (reserved by
# Google) and broadcast ("Unusable addresses in IPv4 subnet ranges",
# https://cloud.google.com/vpc/docs/subnets#unusable-ip-addresses-in-every-subnet).
RESERVED_ADDRESSES_PER_SUBNET = 4


def zones_of_region(compute, region, field='zone'):
    """The zone names of a region, from regions.get; InputError when the region does not exist."""
    resource = compute.get(region_path(region), "get region '%s'" % region)
    if resource is None:
        raise InputError("%s: region '%s' does not exist in Compute Engine; give a zone of an existing region, e.g. us-central1-a"
                         % (field, region))
    return sorted(links.resource_name(zone) for zone in resource.get('zones', []))


def check_zones(compute, zone, fallback_zones=(), field='zone'):
    """Every zone exists in the region of `zone` (the GPUDirect network's region)."""
    region = links.region_of(zone)
    known = zones_of_region(compute, region, field)
    for name, which in [(zone, field)] + [(other, 'fallback_zones') for other in fallback_zones]:
        if name not in known:
            raise InputError("%s: zone '%s' does not exist in region %s (zones of %s: %s)" % (which, name, region, region, ', '.join(known)))


def check_machine_type(compute, zone, machine_type, field='zone'):
    if compute.get(machine_type_path(zone, machine_type), "get machine type '%s'" % machine_type) is None:
        raise InputError('%s: %s is not offered in zone %s; choose a zone that has it (see "GPU regions and zones" in the '
                         'Compute Engine documentation)' % (field, machine_type, zone))


def check_disk_type(compute, zone, disk_type, field='boot_disk_type'):
    if disk_type and compute.get(disk_type_path(zone, disk_type), "get disk type '%s'" % disk_type) is None:
        raise InputError("%s: disk type '%s' does not exist in %s; use one such as pd-balanced or pd-ssd" % (field, disk_type, zone))


def check_image(compute, source_image, field='image_family'):
    """The boot image (a family link or an image link) exists."""
    path = image_path(source_image)
    if '/global/images/family/' in path:
        project, family = path.split('/')[1], path.rsplit('/', 1)[-1]
        if compute.get(path, "get image family '%s'" % family) is None:
            raise InputError("%s: image family '%s' does not exist in project %s; leave it unset for the catalog's COS image"
                             % (field, family, project))
    elif compute.get(path, "get image '%s'" % source_image) is None:
        raise InputError("image: '%s' does not exist; give an existing image URL or use image_family" % source_image)


def subnet_capacity(cidr):
    return ipaddress.ip_network(cidr).num_addresses - RESERVED_ADDRESSES_PER_SUBNET


def addresses_in_use(compute, names):
    """{subnetwork name: number of NICs on it} of the instances (any zone) that are not among `names`."""
    ours = set(names)
    used = {}
    for _scope, instance in compute.aggregated_list('instances', 'list instances'):
        if instance['name'] in ours:
            continue
        for nic in instance.get('networkInterfaces', []):
            subnet = links.resource_name(nic.get('subnetwork'))
            used[subnet] = used.get(subnet, 0) + 1
    return used


def check_capacity(subnets, names, used, field='count'):
    """Every subnet has an address for each VM of the call. subnets: [(name, cidr)]; used: addresses_in_use()."""
    for subnet, cidr in subnets:
        free = subnet_capacity(cidr) - used.get(subnet, 0)
        if len(names) > free:
            raise InputError('%s: %d VMs need %d addresses in subnet %s (%s), which has %d free (%d usable, %d in use by other VMs); '
                             'give at most %d, or a wider range' % (field, len(names), len(names), subnet, cidr, max(free, 0),
                                                                    subnet_capacity(cidr), used.get(subnet, 0), max(free, 0)))


class ConcurrentReads:
    """A ComputeClient's reads (get, list, aggregated_list) whose answers were fetched all at once.

    The checks below read one thing after another; sent that way, each read waits for the one before (a round trip
    each, eight or nine per check). ``expect`` names the reads the checks will make: they are sent concurrently, and
    each check then takes its answer, or its error (worded with the check's own action), in the order it asks, so the
    first problem reported is the one the sequential reads would report. A read not expected is sent when asked.
    """

    def __init__(self, compute, expect):
        self.compute = compute
        outcomes = map_concurrently(self._fetch, expect, max_workers=len(expect))
        self.answers = {read: (result, error) for read, result, error in outcomes}

    def _fetch(self, read):
        method, path = read
        if method == 'get':
            return self.compute.get(path)
        if method == 'list':
            return list(self.compute.list(path))
        return list(self.compute.aggregated_list(path))

    def _answer(self, read, action, fetch):
        if read not in self.answers:
            return fetch()
        result, error = self.answers[read]
        if error is not None:
            error.action = action or error.action
            raise error
        return result

    def get(self, path, action=None):
        return self._answer(('get', path), action, lambda: self.compute.get(path, action))

    def list(self, path, action=None):
        return self._answer(('list', path), action, lambda: list(self.compute.list(path, action)))

    def aggregated_list(self, collection, action=None):
        return self._answer(('aggregated', collection), action, lambda: list(self.compute.aggregated_list(collection, action)))

    def instances_by_name(self, names):
        """{name: instance} of the named VMs, from the instances read with the others (no read of its own)."""
        wanted = set(names)
        return {instance['name']: instance for _scope, instance in self.aggregated_list('instances', 'list instances')
                if instance['name'] in wanted}


def image_path(source_image):
    """The API path of a boot image link (a family or an image)."""
    return source_image.split('/compute/v1/', 1)[-1]


def references_reads(spec, zone, fallback_zones):
    """The reads check_references makes, for ConcurrentReads."""
    region = links.region_of(zone)
    disk = spec.template['disks'][0]['initializeParams']
    reads = [('get', region_path(region))]
    reads += [('get', machine_type_path(name, spec.family.machine_type)) for name in [zone] + list(fallback_zones)]
    if disk.get('diskType'):
        reads.append(('get', disk_type_path(zone, links.resource_name(disk['diskType']))))
    reads += [('get', image_path(disk['sourceImage'])), ('list', networks_path()), ('list', subnetworks_path(region)),
              ('aggregated', 'instances')]
    return reads


def check_references(compute, spec, names, zone, fallback_zones=(), planned_subnets=None, new_vms=None):
    """Everything the inserts refer to exists, read before the first insert (the reads sent at once: ConcurrentReads).

    planned_subnets: {subnet name: cidr} that an earlier stage creates (the playbook's network stage);
    a subnet that neither exists nor is planned is refused when its network exists.
    new_vms: how many of ``names`` the call creates (read from the API when not given), for the reservation's room.
    """
    compute = ConcurrentReads(compute, references_reads(spec, zone, fallback_zones))
    check_zones(compute, zone, fallback_zones)
    # Which zones offer a GPU machine type changes as Google adds capacity: the API's own answer is the source.
    for name, field in [(zone, 'zone')] + [(other, 'fallback_zones') for other in fallback_zones]:
        check_machine_type(compute, name, spec.family.machine_type, field=field)
    disk = spec.template['disks'][0]['initializeParams']
    if disk.get('diskType'):
        check_disk_type(compute, zone, links.resource_name(disk['diskType']))
    check_image(compute, disk['sourceImage'], field='image' if '/family/' not in disk['sourceImage'] else 'image_family')
    region = links.region_of(zone)
    planned = dict(planned_subnets or {})
    networks = {item['name'] for item in compute.list(networks_path(), 'list networks')}
    existing = {item['name']: item for item in compute.list(subnetworks_path(region), 'list subnetworks')}
    subnets = []
    for nic in spec.template['networkInterfaces']:
        network, subnet = links.resource_name(nic['network']), links.resource_name(nic['subnetwork'])
        if subnet in existing:
            subnets.append((subnet, existing[subnet]['ipCidrRange']))
        elif subnet in planned:
            subnets.append((subnet, planned[subnet]))
        elif network in networks:
            raise InputError("network_interfaces: subnetwork '%s' does not exist in %s, though its network '%s' does; create the "
                             "subnetwork or name an existing one" % (subnet, region, network))
    if subnets:
        check_capacity(subnets, names, addresses_in_use(compute, names))
    if new_vms is None:
        new_vms = len(set(names) - set(compute.instances_by_name(names)))
    if spec.reservation:
        check_reservation(compute, spec.reservation, zone, spec.family.machine_type, new_vms)
    else:
        check_gpu_quota(compute, spec, zone, new_vms)
    return networks


def gpu_quota_left(compute, region, metric):
    """(left, limit) of the project's regional quota ``metric`` (regions.get: its limit less its usage), or None when the
    region lists no limit for it."""
    resource = compute.get(region_path(region), "get region '%s'" % region) or {}
    quota = next((item for item in resource.get('quotas') or [] if item.get('metric') == metric), None)
    if quota is None:
        return None
    return max(int(quota['limit'] - quota.get('usage', 0)), 0), int(quota['limit'])


def gpu_quota_metric(family, provisioning_model):
    """The regional quota metric a VM of ``family`` counts against: the GPU model's, PREEMPTIBLE_ for Spot
    (https://cloud.google.com/compute/resource-usage#gpu_quota)."""
    return ('PREEMPTIBLE_' if provisioning_model == compute_catalog.SPOT else '') + family.gpu_quota_metric


def check_gpu_quota(compute, spec, zone, new_vms):
    """The GPUs of the VMs this call creates fit the project's regional GPU quota: Compute Engine refuses an insert past it
    (403 quotaExceeded), after the network stage has run. Not judged: reservation-bound and flex-start VMs (the reservation
    or the queue holds the capacity), a family without a metric, a region that lists no limit for it."""
    family = spec.family
    if not new_vms or not family.gpu_quota_metric or spec.provisioning_model in (compute_catalog.RESERVATION_BOUND, compute_catalog.FLEX_START):
        return
    region, metric = links.region_of(zone), gpu_quota_metric(family, spec.provisioning_model)
    left = gpu_quota_left(compute, region, metric)
    needed = new_vms * family.gpu_count
    if left is not None and needed > left[0]:
        raise InputError('count: %d new %s VMs need %d GPUs of quota %s in %s, and the project has %d of its limit of %d left there; '
                         'request more quota (https://cloud.google.com/compute/resource-usage#gpu_quota), use a reservation, or '
                         'create at most %d' % (new_vms, family.machine_type, needed, metric, region, left[0], left[1],
                                                left[0] // family.gpu_count))


def check_reservation(compute, name, zone, machine_type, new_vms):
    """The reservation that VMs name exists and takes them: Compute Engine refuses VMs of another machine type,
    VMs naming a reservation made without specificReservationRequired, and VMs beyond its free count."""
    path = name if '/' in name else reservation_path(zone, name)
    reservation = compute.get(path, "get reservation '%s'" % name)
    if reservation is None:
        raise InputError("reservation: '%s' does not exist in %s; create it or name an existing one" % (name, zone))
    specific = reservation.get('specificReservation') or {}
    reserved = links.resource_name(specific.get('instanceProperties', {}).get('machineType', ''))
    if reserved != machine_type:
        raise InputError("reservation: '%s' reserves %s, not %s; name a reservation of %s VMs"
                         % (name, reserved or 'no machine type', machine_type, machine_type))
    if not reservation.get('specificReservationRequired'):
        raise InputError("reservation: '%s' was created without specificReservationRequired, so VMs cannot name it; "
                         'recreate it with specificReservationRequired (gcloud --require-specific-reservation)' % name)
    free = int(specific.get('count', 0)) - int(specific.get('inUseCount', 0))
    if new_vms > free:
        raise InputError("reservation: '%s' has room for %d more VM(s), %d asked; lower count or grow the reservation"
                         % (name, free, new_vms))
