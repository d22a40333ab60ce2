# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a GKE GPU node pool for GPUDirect, as pure data (Container API v1).

Google's GKE GPUDirect-TCPX/TCPXO guide (A3 Mega / A3 High, TCPXO / TCPX) and Google's GKE GPUDirect RDMA guide (A3 Ultra / A4, RDMA) create one GPU node
pool each. build_node_pool_plan() checks every input against the catalog and the cluster (version
floors, machine type vs technology, networks, Autopilot) and builds the ``nodePools.create`` body
gcloud sends for the guide's command (gcloud >= 550 for ``--gpudirect-strategy``, which SDK 528 lacks);
changes() compares an existing pool with the plan: what setSize, setAutoscaling, setManagement or
``nodePools.update`` change in place, and every other difference by field name (only a new pool
fixes those).
"""

from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute as compute_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import gke as gke_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke.cluster import ZONE_PATTERN, check_location, check_name
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke.common import dig, gke_family
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

DRANET, MULTI_NETWORK = 'dranet', 'multi_network'
NETWORKINGS = (DRANET, MULTI_NETWORK)
PROVISIONING = ('standard', 'spot', 'flex_start')
RESERVATION_AFFINITIES = ('any', 'none', 'specific')
_AFFINITY_TYPES = {'any': 'ANY_RESERVATION', 'none': 'NO_RESERVATION', 'specific': 'SPECIFIC_RESERVATION'}
RESERVATION_KEY = 'compute.googleapis.com/reservation-name'
# gcloud --reservation-affinity=specific --reservation=R sends key compute.googleapis.com/reservation-name.

# The options of gke_gpudirect_node_pool (also checked by gpudirect_plan, the playbooks' first step).
ARGUMENT_SPEC = {
    'cluster': {'type': 'str', 'required': True},
    'location': {'type': 'str', 'required': True},
    'name': {'type': 'str', 'required': True},
    'machine_type': {'type': 'str', 'required': True, 'choices': list(gke_catalog.GKE_MACHINE_TYPES)},
    'state': {'type': 'str', 'default': 'present', 'choices': ['present', 'absent']},
    'node_count': {'type': 'int'},
    'delete_adopted': {'type': 'bool', 'default': False},
    'autoscaling': {'type': 'dict', 'options': {'min_node_count': {'type': 'int', 'default': 0},
                                                'max_node_count': {'type': 'int', 'required': True}}},
    'node_locations': {'type': 'list', 'elements': 'str'},
    'accelerator_type': {'type': 'str'},
    'gpu_driver_version': {'type': 'str', 'default': 'LATEST', 'choices': list(gke_catalog.GKE_GPU_DRIVER_VERSION_CHOICES)},
    'networking': {'type': 'str', 'choices': list(NETWORKINGS)},
    'network_prefix': {'type': 'str'},
    'gvnic_network_prefix': {'type': 'str'},
    'rdma_network_prefix': {'type': 'str'},
    'additional_networks': {'type': 'list', 'elements': 'dict', 'options': {'network': {'type': 'str', 'required': True},
                                                                            'subnetwork': {'type': 'str', 'required': True}}},
    'compact_placement': {'type': 'bool', 'default': False},
    'placement_policy': {'type': 'str'},
    'host_maintenance_interval': {'type': 'str', 'choices': list(gke_catalog.GKE_HOST_MAINTENANCE_INTERVALS)},
    'reservation_affinity': {'type': 'str', 'choices': list(RESERVATION_AFFINITIES)},
    'reservation': {'type': 'str'},
    'reservation_project': {'type': 'str'},
    'reservation_block': {'type': 'str'},
    'provisioning': {'type': 'str', 'default': 'standard', 'choices': list(PROVISIONING)},
    'labels': {'type': 'dict'},
    'autoupgrade': {'type': 'bool', 'default': False},
    'recreate': {'type': 'bool', 'default': False},
    'read_nodes': {'type': 'bool', 'default': True},
    'nodes_timeout': {'type': 'int', 'default': 600},
    'timeout': {'type': 'int', 'default': 3600, 'aliases': ['wait_timeout'],
                'deprecated_aliases': [{'name': 'wait_timeout', 'version': '1.0.0', 'collection_name': 'aiinfra.gpudirect'}]},
    'wait': {'type': 'bool', 'default': True},
}

# Fields the API cannot change on an existing pool: a difference in one of them needs a new pool.
IMMUTABLE_FIELDS = (
    'config.machineType', 'config.accelerators', 'config.imageType', 'config.gvnic', 'config.oauthScopes',
    'config.gpuDirectConfig', 'config.reservationAffinity', 'config.spot', 'config.flexStart',
    'networkConfig.additionalNodeNetworkConfigs', 'networkConfig.acceleratorNetworkProfile', 'placementPolicy',
    'config.hostMaintenancePolicy',
)
# Compared only when the plan sets them: a pool read through v1 does not show hostMaintenancePolicy (a v1beta1 field).
COMPARED_WHEN_PLANNED = ('placementPolicy', 'config.hostMaintenancePolicy')


# GKE's limit of nodes per node pool per zone ("GKE quotas and limits": 1,000 nodes per node pool zone).
MAX_NODES_PER_ZONE = 1000


class NodePoolPlan:  # pylint: disable=too-many-instance-attributes
    def __init__(self, family, cluster, location, name, networking, additional_networks, body, size_managed=True):
        self.family = family
        # The pool's size is the collection's only where the caller gave it: a pool that someone resized keeps its size.
        self.size_managed = size_managed
        self.cluster = cluster
        self.location = location
        self.name = name
        self.networking = networking
        self.additional_networks = additional_networks
        self.body = body

    def summary(self):
        return {'name': self.name, 'cluster': self.cluster, 'location': self.location, 'machine_type': self.family.machine_type,
                'technology': self.family.technology, 'networking': self.networking,
                'additional_networks': [{'network': n, 'subnetwork': s} for n, s in self.additional_networks]}


def _networks(family, networking, additional_networks, network_prefix, gvnic_prefix=None, rdma_prefix=None):
    """The additional node networks in NIC order, checked against the family's NICs."""
    if (gvnic_prefix or rdma_prefix) and (family.technology != families.RDMA or networking != MULTI_NETWORK or additional_networks):
        raise InputError('%s: the gVNIC and RDMA VPC prefixes name the networks of an A3 Ultra / A4 pool with networking: multi_network '
                         '(Google\'s GKE GPUDirect RDMA guide "Advanced configuration"), not of %s with networking %s%s; leave them unset'
                         % ('gvnic_network_prefix' if gvnic_prefix else 'rdma_network_prefix', family.machine_type, networking,
                            ' and additional_networks' if additional_networks else ''))
    if networking == DRANET:
        if additional_networks:
            raise InputError('additional_networks: Google\'s GKE GPUDirect RDMA guide says multi-network API and DRANET cannot be used in one node pool; '
                             'leave additional_networks empty with networking: dranet, or use networking: multi_network')
        return []
    if additional_networks:
        pairs = []
        for index, item in enumerate(additional_networks):
            if not isinstance(item, dict) or not item.get('network') or not item.get('subnetwork'):
                raise InputError('additional_networks[%d]: give network and subnetwork' % index)
            pairs.append((item['network'], item['subnetwork']))
    elif network_prefix or (gvnic_prefix and rdma_prefix):
        pairs = gke_catalog.gke_additional_networks(family.machine_type, network_prefix, gvnic_prefix, rdma_prefix)
    else:
        raise InputError('network_prefix: give the prefix of the per-NIC networks (gce_gpudirect_network layout gke or gke_rdma), '
                         'or list additional_networks in NIC order')
    expected = gke_catalog.gke_additional_networks(family.machine_type, 'x')
    if len(pairs) != len(expected):
        what = ('1 gVNIC network and %d RDMA subnets (Google\'s GKE GPUDirect RDMA guide "Advanced configuration")' % (len(expected) - 1)
                if family.technology == families.RDMA else '%d data VPCs, one per secondary NIC (Google\'s GKE GPUDirect-TCPX/TCPXO guide)' % len(expected))
        raise InputError('additional_networks: %s needs %d additional node networks, %s; %d given'
                         % (family.machine_type, len(expected), what, len(pairs)))
    return pairs


def _reservation(affinity, reservation, reservation_project, reservation_block, provisioning):
    affinity = str(affinity or ('specific' if reservation else 'any')).lower()
    if affinity not in RESERVATION_AFFINITIES:
        raise InputError('reservation_affinity: %r; choose one of: %s' % (affinity, ', '.join(RESERVATION_AFFINITIES)))
    if reservation_block and not reservation:
        raise InputError('reservation_block: a reservation block belongs to a reservation; give reservation too '
                         '(Google\'s GKE GPUDirect RDMA guide: projects/PROJECT/reservations/RESERVATION/reservationBlocks/BLOCK)')
    if affinity == 'specific' and not reservation:
        raise InputError('reservation: reservation_affinity specific needs the reservation name')
    if affinity != 'specific' and reservation:
        raise InputError('reservation_affinity: %s does not take a reservation; use specific, or drop reservation' % affinity)
    if provisioning in ('spot', 'flex_start') and affinity == 'specific':
        raise InputError('provisioning: %s nodes do not consume a reservation; use provisioning: standard with a reservation' % provisioning)
    if provisioning == 'flex_start':
        affinity = 'none'   # flex-start VMs never consume reservations (gcloud sends NO_RESERVATION with --flex-start)
    result = {'consumeReservationType': _AFFINITY_TYPES[affinity]}
    if affinity == 'specific':
        value = reservation
        if reservation_project or reservation_block:
            value = 'projects/%s/reservations/%s' % (reservation_project, reservation) if reservation_project else reservation
            if reservation_block:
                if not reservation_project:
                    raise InputError('reservation_project: a reservation block is named by its full path; give the project that '
                                     'holds the reservation (Google\'s GKE GPUDirect RDMA guide RESERVATION_PROJECT)')
                value = gke_catalog.GKE_RDMA['reservation_block_format'].format(
                    project=reservation_project, reservation=reservation, block=reservation_block)
        result.update({'key': RESERVATION_KEY, 'values': [value]})
    return result


def check_node_locations(node_locations, location):
    """Each node location is a zone of the cluster's region (GKE runs a pool's nodes only there)."""
    region = links.region_of(location) if ZONE_PATTERN.match(location) else location
    for zone in node_locations or []:
        if not ZONE_PATTERN.match(str(zone)):
            raise InputError("node_locations: %r is not a zone name; write it like %s-a" % (zone, region))
        if links.region_of(zone) != region:
            raise InputError('node_locations: %s is not in %s, the region of the cluster (location %s); give a zone of %s'
                             % (zone, region, location, region))


def check_reservation_names(reservation, reservation_project, reservation_block):
    """Reservation, block and project names as Compute Engine writes them (a name that cannot exist is refused here,
    not by the node pool's create)."""
    for field, value in (('reservation', reservation), ('reservation_block', reservation_block)):
        if value and not compute_catalog.GCE_NAME_PATTERN.match(value):
            raise InputError("%s: %r is not a valid Compute Engine name (lowercase letters, digits and hyphens, starting with a "
                             'letter, at most 63); give the name of the reservation as gcloud compute reservations list shows it'
                             % (field, value))
    problem = links.project_id_problem(reservation_project)
    if problem:
        raise InputError('reservation_' + problem)


def plan_from_params(params, current_cluster, cluster_planned=False):
    """The NodePoolPlan of gke_gpudirect_node_pool's options (state present); InputError on bad input."""
    if params['timeout'] <= 0:
        raise InputError('timeout: %d seconds; give how long to wait for each operation, e.g. 3600' % params['timeout'])
    return build_node_pool_plan(
        params['cluster'], current_cluster, params['location'], params['name'], params['machine_type'],
        node_count=params['node_count'], autoscaling=params['autoscaling'], node_locations=params['node_locations'],
        accelerator_type=params['accelerator_type'], gpu_driver_version=params['gpu_driver_version'],
        networking=params['networking'], additional_networks=params['additional_networks'], network_prefix=params['network_prefix'],
        gvnic_prefix=params['gvnic_network_prefix'], rdma_prefix=params['rdma_network_prefix'],
        placement_policy=params['placement_policy'], compact_placement=params['compact_placement'],
        reservation_affinity=params['reservation_affinity'], reservation=params['reservation'],
        reservation_project=params['reservation_project'], reservation_block=params['reservation_block'],
        provisioning=params['provisioning'], labels=params['labels'], autoupgrade=params['autoupgrade'],
        host_maintenance_interval=params['host_maintenance_interval'], cluster_planned=cluster_planned)


def build_node_pool_plan(cluster, current_cluster, location, name, machine_type, node_count=families.DEFAULT_NODE_COUNT, autoscaling=None,
                         node_locations=None, accelerator_type=None, gpu_driver_version='LATEST', networking=None,
                         additional_networks=None, network_prefix=None, gvnic_prefix=None, rdma_prefix=None, placement_policy=None,
                         compact_placement=False,
                         reservation_affinity=None, reservation=None, reservation_project=None, reservation_block=None,
                         provisioning='standard', labels=None, autoupgrade=False, image_type=gke_catalog.GKE_IMAGE_TYPE,
                         host_maintenance_interval=None, cluster_planned=False):
    """Check every input (against the cluster as it is) and return the NodePoolPlan; raise InputError
    before anything is created.

    ``cluster_planned``: the cluster does not exist yet but is planned in the same run (check mode of a
    first run); the checks against the cluster are left to the real run."""
    family = gke_family(machine_type)
    rdma = family.technology == families.RDMA
    if not name:
        raise InputError('name: give the node pool name')
    check_name(name, 'name', 'node pool')
    check_name(cluster, 'cluster', 'cluster')
    check_location(location)
    # NodePool.initialNodeCount counts VMs per zone: GKE refuses a negative one and more than its per-zone limit; a
    # GPUDirect pool of 0 nodes without autoscaling has no GPU to test (the NCCL test needs 2 hosts).
    fewest = 0 if autoscaling else 1
    if node_count is not None and not fewest <= int(node_count) <= MAX_NODES_PER_ZONE:
        raise InputError('node_count: %d nodes per zone; give %d to %d (GKE\'s limit per node pool zone)%s'
                         % (int(node_count), fewest, MAX_NODES_PER_ZONE,
                            '' if autoscaling else ', or autoscaling with min_node_count 0 for a pool that may be empty'))
    check_node_locations(node_locations, location)
    check_reservation_names(reservation, reservation_project, reservation_block)
    if current_cluster is None and not cluster_planned:
        raise InputError('cluster: %s does not exist in %s; create it first (gke_gpudirect_cluster)' % (cluster, location))
    if current_cluster is None:
        # What gke_gpudirect_cluster creates for this machine type: Standard, Dataplane V2, multi-networking.
        current_cluster = {'networkConfig': {'datapathProvider': gke_catalog.GKE_DATAPATH_PROVIDER, 'enableMultiNetworking': True},
                           'currentMasterVersion': 'latest'}
    if dig(current_cluster, 'autopilot.enabled'):
        raise InputError('cluster: %s is an Autopilot cluster, which has no user node pools; Google\'s GKE GPUDirect RDMA guide uses a ComputeClass there '
                         '(GPUDirect-TCPX/TCPXO are not supported on Autopilot at all)' % cluster)
    version = current_cluster.get('currentNodeVersion') or current_cluster.get('currentMasterVersion')
    try:
        gke_catalog.check_gke_version(family.technology, version, field='cluster version')
    except ValueError as exc:
        raise InputError('%s; upgrade the cluster (gke_gpudirect_cluster with this machine_type upgrades its control plane)' % exc) from None
    if dig(current_cluster, 'networkConfig.datapathProvider') != gke_catalog.GKE_DATAPATH_PROVIDER:
        raise InputError('cluster: %s does not use Dataplane V2, which GPUDirect needs (Google\'s GKE guides); create the cluster with '
                         'gke_gpudirect_cluster' % cluster)
    networking = str(networking or (DRANET if rdma else MULTI_NETWORK)).lower()
    if networking not in NETWORKINGS:
        raise InputError('networking: %r; choose one of: %s' % (networking, ', '.join(NETWORKINGS)))
    if networking == DRANET and not rdma:
        raise InputError('networking: dranet is Google\'s GKE GPUDirect RDMA guide\'s RDMA path for a3-ultragpu-8g / a4-highgpu-8g; %s uses GPUDirect-%s '
                         'with multi-networking (networking: multi_network)' % (family.machine_type, family.technology))
    pairs = _networks(family, networking, additional_networks, network_prefix, gvnic_prefix, rdma_prefix)
    if pairs and not dig(current_cluster, 'networkConfig.enableMultiNetworking'):
        # Google's GKE GPUDirect RDMA guide "Advanced configuration" checks `clusters describe --format=value(networkConfig.enableMultiNetworking)` first.
        raise InputError('cluster: %s does not have multi-networking (networkConfig.enableMultiNetworking), which additional node '
                         'networks need, and %s; create a new cluster with gke_gpudirect_cluster (multi_networking: true) and '
                         'the pool there' % (cluster, gke_catalog.GKE_MULTI_NETWORKING_AT_CREATION))
    if image_type != gke_catalog.GKE_IMAGE_TYPE:
        raise InputError('image_type: %s; GPUDirect needs Container-Optimized OS nodes (%s), Ubuntu and Windows images are not '
                         'supported (Google\'s GKE guides)' % (image_type, gke_catalog.GKE_IMAGE_TYPE))
    if accelerator_type and accelerator_type != family.gke_accelerator:
        raise InputError('accelerator_type: %s comes with %s GPUs, not %s; leave accelerator_type unset'
                         % (family.machine_type, family.gke_accelerator, accelerator_type))
    driver = str(gpu_driver_version or 'LATEST').upper()
    if driver not in gke_catalog.GKE_GPU_DRIVER_VERSIONS:
        raise InputError('gpu_driver_version: %r; choose one of: %s' % (gpu_driver_version, ', '.join(gke_catalog.GKE_GPU_DRIVER_VERSIONS)))
    if driver == 'INSTALLATION_DISABLED':
        raise InputError('gpu_driver_version: INSTALLATION_DISABLED leaves the nodes without the NVIDIA driver %d+ GPUDirect needs; '
                         'use LATEST (Google\'s GKE GPUDirect-TCPX/TCPXO guide) or DEFAULT' % families.MIN_NVIDIA_DRIVER)
    provisioning = str(provisioning or 'standard').lower()
    if provisioning not in PROVISIONING:
        raise InputError('provisioning: %r; choose one of: %s' % (provisioning, ', '.join(PROVISIONING)))
    if compact_placement and placement_policy:
        raise InputError('compact_placement: give either compact_placement (GKE makes the policy) or placement_policy (yours), not both')
    labels = dict(labels or {})
    if rdma and networking == DRANET:
        key, value = gke_catalog.GKE_RDMA['dranet_node_label']
        labels[key] = value

    config = {
        'machineType': family.machine_type,
        'accelerators': [{'acceleratorCount': str(family.gpu_count), 'acceleratorType': family.gke_accelerator,
                          'gpuDriverInstallationConfig': {'gpuDriverVersion': driver}}],
        'imageType': image_type,
        'oauthScopes': list(gke_catalog.GKE_NODE_SCOPES),
        'reservationAffinity': _reservation(reservation_affinity, reservation, reservation_project, reservation_block, provisioning),
    }
    if not rdma:
        config['gvnic'] = {'enabled': True}   # Google's GKE GPUDirect-TCPX/TCPXO guide --enable-gvnic
    else:
        config['gpuDirectConfig'] = {'gpuDirectStrategy': gke_catalog.GKE_RDMA_STRATEGY}   # Google's GKE GPUDirect RDMA guide --gpudirect-strategy=rdma
    if labels:
        config['labels'] = labels
    # The collection's mark on the pools it creates (the VMs' resource labels): state absent deletes only marked pools.
    config['resourceLabels'] = dict([compute_catalog.MANAGED_LABEL])
    if host_maintenance_interval:
        # seed 003's optional `gcloud beta container node-pools create --host-maintenance-interval=PERIODIC`: a v1beta1
        # field, so the module then creates and reads the pool through v1beta1.
        config['hostMaintenancePolicy'] = {'maintenanceInterval': host_maintenance_interval}
    if provisioning == 'spot':
        config['spot'] = True
    elif provisioning == 'flex_start':
        config['flexStart'] = True
    body = {'name': name, 'config': config, 'management': {'autoRepair': True, 'autoUpgrade': bool(autoupgrade)},
            'upgradeSettings': {'maxSurge': 1}}
    if autoscaling:
        low, high = int(autoscaling.get('min_node_count', 0)), int(autoscaling.get('max_node_count', 0))
        if high < max(low, 1) or high > MAX_NODES_PER_ZONE:
            raise InputError('autoscaling: max_node_count (%d) must be at least 1, at least min_node_count (%d) and at most %d '
                             '(GKE\'s limit per node pool zone)' % (high, low, MAX_NODES_PER_ZONE))
        body['autoscaling'] = {'enabled': True, 'minNodeCount': low, 'maxNodeCount': high}
        body['initialNodeCount'] = int(node_count) if node_count is not None else low
    else:
        body['initialNodeCount'] = int(node_count if node_count is not None else families.DEFAULT_NODE_COUNT)
    if node_locations:
        body['locations'] = list(node_locations)
    network_config = {}
    if pairs:
        network_config['additionalNodeNetworkConfigs'] = [{'network': n, 'subnetwork': s} for n, s in pairs]
    if networking == DRANET:
        network_config['acceleratorNetworkProfile'] = gke_catalog.GKE_ACCELERATOR_NETWORK_PROFILE
    if network_config:
        body['networkConfig'] = network_config
    if compact_placement:
        body['placementPolicy'] = {'type': 'COMPACT'}
    elif placement_policy:
        body['placementPolicy'] = {'policyName': placement_policy}
    return NodePoolPlan(family, cluster, location, name, networking, pairs, body, size_managed=node_count is not None)


def _comparable(field, value):
    if field == 'networkConfig.additionalNodeNetworkConfigs':
        return [(links.resource_name(item.get('network')), links.resource_name(item.get('subnetwork'))) for item in value or []]
    if field == 'config.accelerators':
        return sorted((item.get('acceleratorType'), str(item.get('acceleratorCount', '1')),
                       dig(item, 'gpuDriverInstallationConfig.gpuDriverVersion')) for item in value or [])
    if field == 'config.gvnic':
        return bool((value or {}).get('enabled'))
    if field in ('config.spot', 'config.flexStart'):
        return bool(value)
    if field == 'config.oauthScopes':
        return sorted(value or [])
    if field == 'config.reservationAffinity':
        value = value or {}
        return (value.get('consumeReservationType', 'ANY_RESERVATION'), tuple(value.get('values') or ()))
    if field == 'config.gpuDirectConfig':
        return (value or {}).get('gpuDirectStrategy') or None
    if field == 'config.hostMaintenancePolicy':
        return (value or {}).get('maintenanceInterval')
    if field == 'placementPolicy':
        value = value or {}
        return (value.get('type'), links.resource_name(value.get('policyName')) if value.get('policyName') else None)
    return value


def current_size(compute, pool):
    """Nodes per zone now: the largest target size of the pool's managed instance groups (GKE resizes the groups and
    leaves NodePool.initialNodeCount at the size at creation), or None when no group could be read."""
    sizes = []
    for url in pool.get('instanceGroupUrls') or []:
        path = 'projects/' + url.split('/projects/', 1)[1]
        group = compute.get(path, action='read instance group %s' % url.rsplit('/', 1)[-1])
        if group is not None:
            sizes.append(int(group.get('targetSize') or 0))
    return max(sizes) if sizes else None


def changes(plan, current, current_size=None):
    """(calls, immutable) between the plan and an existing pool.

    ``current_size``: nodes per zone now (the target size of the pool's instance groups); GKE leaves
    ``initialNodeCount`` at the size the pool was created with, so it is the fallback only.

    ``calls``: [(method, body)] the API applies in place -- ``setSize``, ``setAutoscaling``,
    ``setManagement`` or ``update`` (labels, locations; with the pool's ``etag``). ``immutable``:
    [(field, current value, planned value)] that only a new pool fixes.
    """
    immutable = []
    for field in IMMUTABLE_FIELDS:
        wanted, have = dig(plan.body, field), dig(current, field)
        if field in COMPARED_WHEN_PLANNED and wanted is None:
            continue
        if _comparable(field, wanted) != _comparable(field, have):
            immutable.append((field, have, wanted))
    # Google's GKE GPUDirect-TCPX/TCPXO guide "Limitations": no multi-instance GPU, GPU time-sharing or MPS on a GPUDirect pool.
    for accelerator in dig(current, 'config.accelerators') or []:
        if accelerator.get('gpuPartitionSize') or accelerator.get('gpuSharingConfig'):
            immutable.append(('config.accelerators.gpuSharingConfig', accelerator.get('gpuSharingConfig') or accelerator.get('gpuPartitionSize'),
                              None))
    # The GKE GPUDirect-TCPX/TCPXO guide, "Limitations": no NCCL FastSocket; a new pool is made without it.
    if dig(current, 'config.fastSocket.enabled'):
        immutable.append(('config.fastSocket', dig(current, 'config.fastSocket'), 'none: %s' % gke_catalog.GKE_NO_FAST_SOCKET))
    calls = []
    wanted_scaling = plan.body.get('autoscaling') or {'enabled': False}
    have_scaling = current.get('autoscaling') or {'enabled': False}
    scaling_keys = ('enabled', 'minNodeCount', 'maxNodeCount')
    if {k: wanted_scaling.get(k) for k in scaling_keys if wanted_scaling.get('enabled') or k == 'enabled'} != \
            {k: have_scaling.get(k) for k in scaling_keys if wanted_scaling.get('enabled') or k == 'enabled'}:
        calls.append(('setAutoscaling', {'autoscaling': wanted_scaling}))
    size = int(current.get('initialNodeCount') or 0) if current_size is None else current_size
    if plan.size_managed and not wanted_scaling.get('enabled') and size != plan.body['initialNodeCount']:
        calls.append(('setSize', {'nodeCount': plan.body['initialNodeCount']}))
    wanted_management = plan.body['management']
    if {k: bool(dig(current, 'management.' + k)) for k in wanted_management} != wanted_management:
        calls.append(('setManagement', {'management': wanted_management}))
    # The labels the plan names are the collection's; labels someone else added to the pool stay (the update
    # replaces the pool's labels as a whole, so it sends theirs too).
    wanted_labels = merged_labels(plan, current)
    if wanted_labels != (dig(current, 'config.labels') or {}):
        calls.append(('update', {'labels': {'labels': wanted_labels}}))
    if plan.body.get('locations') and sorted(plan.body['locations']) != sorted(current.get('locations') or []):
        calls.append(('update', {'locations': plan.body['locations']}))
    return calls, immutable


def merged_labels(plan, current):
    """The pool's Kubernetes labels after the plan: the current ones, with the plan's set."""
    return dict(dig(current, 'config.labels') or {}, **(dig(plan.body, 'config.labels') or {}))


def is_managed(pool):
    """Whether the collection created ``pool`` (its mark, the resource label MANAGED_LABEL)."""
    return compute_catalog.carries_mark(dig(pool, 'config.resourceLabels'))


MANAGED_FIELDS = IMMUTABLE_FIELDS + ('initialNodeCount', 'autoscaling', 'management', 'config.labels', 'locations')


def view(pool):
    if pool is None:
        return None
    return {field: dig(pool, field) for field in MANAGED_FIELDS}


def planned_view(plan, current):
    after = dict(view(current) or {})
    for field in MANAGED_FIELDS:
        value = dig(plan.body, field)
        if current is not None and field == 'config.labels':
            value = merged_labels(plan, current)
        if current is not None and field == 'initialNodeCount' and not plan.size_managed:
            continue
        if value is not None or current is None:
            after[field] = value
    return after


def describe_immutable(immutable):
    return '; '.join('%s (now %s, planned %s)' % (field, _short(have), _short(wanted)) for field, have, wanted in immutable)


def _short(value):
    text = str(value)
    return text if len(text) <= 160 else text[:157] + '...'
