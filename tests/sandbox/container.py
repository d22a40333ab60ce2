"""Kubernetes Engine v1 (and v1beta1) clusters, node pools, operations and server config.

Both URL families gcloud and client libraries use are served by the same handlers:
``v1/projects/P/locations/L/clusters/...`` and the older ``v1/projects/P/zones/Z/clusters/...``.
A created cluster is RUNNING (once its operation is DONE) with an endpoint and a
``masterAuth.clusterCaCertificate``, so ``gcloud container clusters create`` can write a kubeconfig.

Refusals, as GKE makes them (each rule cites its source beside the code): bad names, unknown
locations and versions, a version outside the cluster's release channel, node pools newer than the
control plane, duplicates (409), missing clusters (404), multi-networking without Dataplane V2 or
with VPC-native turned off, a subnetwork outside the cluster's network, additional node networks on
a cluster without multi-networking, naming networks/subnetworks that do not exist or repeating a
regular network, more node networks than the machine type's NICs, GPUs that do not match the
machine type's bundled GPUs (type and count), a specific reservation or placement policy that does
not exist, and the node-pool fields of seeds 001 and 003 (gpuDirectConfig, acceleratorNetworkProfile,
gpuDriverInstallationConfig, additionalPodNetworkConfigs).  Every error carries the
``google.rpc.RequestInfo`` detail (added in server.py).

Updates: ``clusters.update`` (desiredEnableMultiNetworking, desiredMasterVersion), ``nodePools.setSize``,
``setAutoscaling``, ``setManagement`` and ``update`` (labels, locations, etag); other update fields answer 501.
GKE's one operation at a time per cluster: a node pool create/delete or an update while another operation
on the cluster runs gets 400 FAILED_PRECONDITION "Operation ... is currently ...".
"""

import base64
import re
import zlib

from . import catalog
from .errors import ApiError, bad_request
from .rules import is_roce
from .operations import start_container_operation
from .registry import handles
from .store import COMPUTE_LINK, CONTAINER_LINK, container_time

UNSERVED_ENDPOINT = '127.0.0.1:1'

_NAME = re.compile(r'^[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?$')
_DEFAULT_SCOPES = ['https://www.googleapis.com/auth/devstorage.read_only', 'https://www.googleapis.com/auth/logging.write',
                   'https://www.googleapis.com/auth/monitoring', 'https://www.googleapis.com/auth/service.management.readonly',
                   'https://www.googleapis.com/auth/servicecontrol', 'https://www.googleapis.com/auth/trace.append']
# Not a real CA: a PEM-shaped placeholder that kubeconfig writers accept as certificate-authority-data.
_FAKE_CA = base64.b64encode(b'-----BEGIN CERTIFICATE-----\nU2FuZGJveCBjbHVzdGVyIENBIChub3QgYSByZWFsIGNlcnRpZmljYXRlKQ==\n-----END CERTIFICATE-----\n').decode()


def not_found(path):
    return ApiError(404, 'notFound', 'Not found: %s.' % path)


def already_exists(path):
    return ApiError(409, 'alreadyExists', 'Already exists: %s.' % path)


class Where:
    """Project, location, cluster, node pool and operation of a call, whichever URL family it used."""

    def __init__(self, call):
        params = call.params
        self.project = params.get('projectsId') or params.get('projectId')
        self.location = params.get('locationsId') or params.get('zone') or params.get('zonesId')
        self.cluster = params.get('clustersId') or params.get('clusterId')
        self.node_pool = params.get('nodePoolsId') or params.get('nodePoolId')
        self.operation = params.get('operationsId') or params.get('operationId')
        body = call.body or {}
        # Bodies may also carry the names (deprecated fields of the request messages).
        self.cluster = self.cluster or body.get('clusterId')

    @property
    def parent(self):
        return 'projects/%s/locations/%s' % (self.project, self.location)

    @property
    def cluster_key(self):
        return '%s/clusters/%s' % (self.parent, self.cluster)

    def node_pool_key(self, name=None):
        return '%s/nodePools/%s' % (self.cluster_key, name or self.node_pool)


def _check_location(location):
    if location not in catalog.ZONES and location not in catalog.REGIONS:
        raise bad_request('Location "%s" does not exist.' % location)


def _link_path(project, location):
    """Zonal resources are linked under ``zones/``, regional ones under ``locations/``, as GKE does."""
    return 'projects/%s/%s/%s' % (project, 'zones' if location in catalog.ZONES else 'locations', location)


def _zones_of(location):
    if location in catalog.ZONES:
        return [location]
    return ['%s-%s' % (location, letter) for letter in catalog.REGIONS[location][:3]]


def _region_of(location):
    return catalog.region_of_zone(location) or location


def _check_channel_version(channel, version):
    """A cluster enrolled in a release channel runs a version that channel offers ("Release channels",
    https://cloud.google.com/kubernetes-engine/docs/concepts/release-channels: "you can only choose a version
    available in the channel").  Wording: the sandbox's."""
    if channel and channel != 'UNSPECIFIED' and version not in catalog.GKE_CHANNELS.get(channel, []):
        raise bad_request('Version "%s" is not available in the %s release channel; valid versions: %s.'
                          % (version, channel, ', '.join(catalog.GKE_CHANNELS.get(channel, []))))


def _resolve_version(requested, channel=None):
    """The version a cluster gets: the default, the newest for 'latest', a full version offered, or the newest patch of
    an alias (1.35 -> 1.35.7-gke.1222000).  A channel's own versions are offered to a cluster of that channel only
    (Extended keeps minors that no other channel has)."""
    offered = catalog.GKE_VERSIONS + [version for version in catalog.GKE_CHANNELS.get(channel or '', []) if version not in catalog.GKE_VERSIONS]
    if requested in (None, '', '-', 'latest'):
        return catalog.GKE_DEFAULT_VERSION if requested != 'latest' else catalog.GKE_VERSIONS[0]
    if requested in offered:
        return requested
    matches = [version for version in offered if version.startswith(requested + '.') or version.startswith(requested + '-')]
    if matches:
        return matches[0]
    raise bad_request('Master version "%s" is unsupported.' % requested)


def _compute_network_exists(call, project, name_or_path):
    key = name_or_path if name_or_path.startswith('projects/') else 'projects/%s/global/networks/%s' % (project, name_or_path)
    return call.store.get('compute.networks', key) is not None, key


def _compute_subnet_exists(call, project, region, name_or_path):
    key = name_or_path if name_or_path.startswith('projects/') else 'projects/%s/regions/%s/subnetworks/%s' % (project, region, name_or_path)
    return call.store.get('compute.subnetworks', key) is not None, key


def _ip_range(call, base):
    serial = call.store.new_serial() % 60
    return '10.%d.0.0/14' % (base + serial * 4 % 200)


def _node_pool(call, where, cluster, body, version):
    name = body.get('name')
    if not isinstance(name, str) or not _NAME.match(name):
        raise bad_request('Invalid node pool name "%s": it must match %s.' % (name, _NAME.pattern))
    _check_node_count(body.get('initialNodeCount', 3), 'NodePool.initial_node_count')
    config = dict(body.get('config') or {})
    machine_type = config.setdefault('machineType', 'e2-medium')
    spec = catalog.MACHINE_TYPES.get(machine_type)
    if spec is None:
        raise bad_request('Machine type "%s" does not exist in zone "%s".' % (machine_type, _zones_of(where.location)[0]))
    for zone in body.get('locations') or _zones_of(where.location):
        if not catalog.machine_type_in_zone(machine_type, zone):
            # Every node location must offer the type: the zones of accelerator-optimized types are those of Google's
            # GPU locations page (catalog.MACHINE_TYPE_ZONES).  Wording: the sandbox's (as for an unknown type).
            raise bad_request('Machine type "%s" does not exist in zone "%s".' % (machine_type, zone))
    bundled = (spec.get('accelerators') or [{}])[0]
    for accelerator in config.get('accelerators', []):
        # Accelerator-optimized types come with their GPUs: the type and the count must be the machine type's
        # ("Run GPUs in GKE Standard node pools": for A3 "count must match the machine type's GPU count",
        # https://cloud.google.com/kubernetes-engine/docs/how-to/gpus).  Wording: the sandbox's.
        if bundled and accelerator.get('acceleratorType') != bundled.get('guestAcceleratorType'):
            raise bad_request('Accelerator type "%s" is not compatible with machine type "%s" (it comes with %s).'
                              % (accelerator.get('acceleratorType'), machine_type, bundled.get('guestAcceleratorType')))
        if bundled and int(accelerator.get('acceleratorCount', '1')) != bundled.get('guestAcceleratorCount'):
            raise bad_request('Accelerator count %s is not valid for machine type "%s": it has %d %s GPUs.'
                              % (accelerator.get('acceleratorCount', '1'), machine_type, bundled['guestAcceleratorCount'],
                                 bundled['guestAcceleratorType']))
        driver = accelerator.get('gpuDriverInstallationConfig') or {}
        if driver.get('specificVersion') and driver.get('gpuDriverVersion') != 'SPECIFIC':
            # GPUDriverInstallationConfig.specificVersion: "Use this field only with gpu_driver_version set to SPECIFIC.
            # Otherwise, an error will be returned." (container.v1 discovery document).  Wording: the sandbox's.
            raise bad_request('gpuDriverInstallationConfig.specificVersion may only be set with gpuDriverVersion SPECIFIC.')
        accelerator['acceleratorCount'] = str(accelerator.get('acceleratorCount', '1'))
    _check_gpudirect(config, machine_type, body.get('version') or version)
    config.setdefault('diskSizeGb', 100)
    config.setdefault('diskType', 'pd-balanced')
    config.setdefault('imageType', 'COS_CONTAINERD')
    config.setdefault('oauthScopes', list(_DEFAULT_SCOPES))
    config.setdefault('serviceAccount', 'default')
    config.setdefault('metadata', {'disable-legacy-endpoints': 'true'})
    config.setdefault('shieldedInstanceConfig', {'enableIntegrityMonitoring': True})
    network_config = dict(body.get('networkConfig') or {})
    profile = network_config.get('acceleratorNetworkProfile')
    if profile is not None and profile != 'auto':
        # NodeNetworkConfig.acceleratorNetworkProfile: "For now the only valid value is \"auto\"." (container.v1
        # discovery document).  Wording: the sandbox's.
        raise bad_request('Invalid acceleratorNetworkProfile "%s": the only valid value is "auto".' % profile)
    for item in network_config.get('additionalPodNetworkConfigs') or []:
        if item.get('networkAttachment') and (item.get('subnetwork') or item.get('secondaryPodRange')):
            # AdditionalPodNetworkConfig.networkAttachment: "cannot be specified along with subnetwork or
            # secondary_pod_range" (container.v1 discovery document).  Wording: the sandbox's.
            raise bad_request('additionalPodNetworkConfigs: networkAttachment cannot be specified along with subnetwork or secondaryPodRange.')
    additional = network_config.get('additionalNodeNetworkConfigs') or []
    if additional:
        if not cluster.get('networkConfig', {}).get('enableMultiNetworking'):
            raise bad_request('Additional node networks require a cluster with multi-networking enabled (--enable-multi-networking).')
        region = _region_of(where.location)
        seen = {cluster.get('networkConfig', {}).get('network')}
        for item in additional:
            exists, network_key = _compute_network_exists(call, where.project, item.get('network', ''))
            if not exists:
                raise bad_request('Network "%s" does not exist.' % item.get('network'))
            network = call.store.get('compute.networks', network_key)
            if is_roce(network):
                # The node's NICs in a RoCE network are MRDMA NICs, which only A3 Ultra / A4 have, and several of them
                # share the one RoCE network with a subnet each (RDMA network profiles page; seed 001 "高度な構成":
                # 8 --additional-node-network entries on ${RDMA_NETWORK_PREFIX}-net, sub-0..sub-7).  Wording: the sandbox's.
                if spec['nic_family'] != 'RDMA':
                    raise bad_request('Network "%s" uses an RDMA network profile; machine type "%s" has no MRDMA network interfaces.'
                                      % (item.get('network'), machine_type))
            elif network_key in seen:
                # Regular (non-RDMA) networks are distinct per node, as for any VM ("Networks must be distinct for NICs
                # attached to a VM.", rules.py); GKE words it as its own error.  Wording: the sandbox's.
                raise bad_request('Network "%s" is used by more than one node network; networks must be distinct.' % item.get('network'))
            seen.add(network_key)
            exists, _subnet_key = _compute_subnet_exists(call, where.project, region, item.get('subnetwork', ''))
            if not exists:
                raise bad_request('Subnetwork "%s" does not exist in region "%s".' % (item.get('subnetwork'), region))
        if 1 + len(additional) > spec['max_nics']:
            raise bad_request('Machine type "%s" supports at most %d network interfaces; %d were requested.'
                              % (machine_type, spec['max_nics'], 1 + len(additional)))
    _check_node_pool_references(call, where, config, body)
    pool_version = body.get('version') or version
    if catalog.gke_version_key(pool_version) > catalog.gke_version_key(cluster.get('currentMasterVersion', version)):
        # Version skew: "nodes cannot run a newer version than the control plane" (GKE versioning,
        # https://cloud.google.com/kubernetes-engine/versioning#version_skew).  Wording: the sandbox's.
        raise bad_request('Node version "%s" must not be newer than the cluster\'s control plane version "%s".'
                          % (pool_version, cluster.get('currentMasterVersion')))
    network_config.setdefault('podRange', 'gke-%s-pods-%08x' % (where.cluster, zlib.crc32(where.cluster.encode())))
    network_config.setdefault('podIpv4CidrBlock', cluster.get('clusterIpv4Cidr', '10.4.0.0/14'))
    link_path = _link_path(where.project, where.location)
    group = 'gke-%s-%s-%08x-grp' % (where.cluster[:20], name[:20], zlib.crc32((where.cluster + name).encode()))
    pool = dict(body)
    pool.update({
        'name': name,
        'config': config,
        'initialNodeCount': int(body.get('initialNodeCount', 3)),
        'locations': body.get('locations') or _zones_of(where.location),
        'networkConfig': network_config,
        'management': body.get('management', {'autoUpgrade': True, 'autoRepair': True}),
        'maxPodsConstraint': body.get('maxPodsConstraint', {'maxPodsPerNode': '110'}),
        'podIpv4CidrSize': 24,
        'upgradeSettings': body.get('upgradeSettings', {'maxSurge': 1, 'strategy': 'SURGE'}),
        'version': body.get('version') or version,
        'status': 'PROVISIONING',
        'selfLink': CONTAINER_LINK + '%s/clusters/%s/nodePools/%s' % (link_path, where.cluster, name),
        'instanceGroupUrls': [COMPUTE_LINK + 'projects/%s/zones/%s/instanceGroupManagers/%s' % (where.project, zone, group)
                              for zone in (body.get('locations') or _zones_of(where.location))],
        'etag': '%08x' % zlib.crc32(name.encode()),
    })
    return pool


def _check_node_count(count, field):
    """A node pool's size is a count of VMs per zone: GKE refuses a negative one with 400 badRequest.  The message
    shape is GKE's for the cluster's field, "Cluster.initial_node_count must be greater than zero." (quoted from a
    real 400 in hashicorp/terraform-provider-google#13540); gcloud's ``node-pools create --num-nodes`` is a plain int
    (SDK 528 surface/container/node_pools/create.py), so a negative count reaches the server.  A pool may have 0
    nodes (a GKE node pool can be sized to zero: hashicorp/terraform-provider-google#6028, citing GKE's cluster
    autoscaler page), hence "greater than or equal to zero".  Wording for the pool: the sandbox's, in GKE's shape."""
    if int(count) < 0:
        raise bad_request('%s must be greater than or equal to zero.' % field)


def _check_gpudirect(config, machine_type, version):
    """nodeConfig.gpuDirectConfig.gpuDirectStrategy RDMA (gcloud --gpudirect-strategy=rdma, seed 001): "GPUDirect-RDMA on
    A3 Ultra, and A4 machine types" (GPUDirectConfig in the container.v1 discovery document); seed 001 制限事項: GKE
    1.34.8-gke.1278000 or later for Standard clusters, Container-Optimized OS node images only.  Wording: the sandbox's."""
    if (config.get('gpuDirectConfig') or {}).get('gpuDirectStrategy') != 'RDMA':
        return
    if machine_type not in ('a3-ultragpu-8g', 'a4-highgpu-8g'):
        raise bad_request('gpuDirectStrategy RDMA is only supported on a3-ultragpu-8g and a4-highgpu-8g, not "%s".' % machine_type)
    if catalog.gke_version_key(version) < catalog.gke_version_key(catalog.GKE_RDMA_INSTALLER_MIN_VERSION):
        raise bad_request('gpuDirectStrategy RDMA requires GKE %s or later; the node pool would run %s.'
                          % (catalog.GKE_RDMA_INSTALLER_MIN_VERSION, version))
    if not config.get('imageType', 'COS_CONTAINERD').startswith('COS'):
        raise bad_request('gpuDirectStrategy RDMA requires a Container-Optimized OS node image, not "%s".' % config['imageType'])


def _check_node_pool_references(call, where, config, body):
    """A specific reservation and a placement policy a node pool names must exist (its VMs could not be created)."""
    affinity = config.get('reservationAffinity') or {}
    if affinity.get('consumeReservationType') == 'SPECIFIC_RESERVATION':
        value = (affinity.get('values') or [''])[0]
        # Seed 001 names a block of the reservation: projects/P/reservations/R/reservationBlocks/B.  The sandbox has
        # no reservation blocks: it checks that reservation R exists (the block name is not checked).
        parts = value.split('/reservationBlocks/')[0].split('/')
        project = parts[1] if value.startswith('projects/') else where.project
        zones = body.get('locations') or _zones_of(where.location)
        if not any(call.store.get('compute.reservations', 'projects/%s/zones/%s/reservations/%s' % (project, zone, parts[-1])) for zone in zones):
            raise bad_request('Reservation "%s" does not exist in zones %s.' % (value, ', '.join(zones)))
    policy = (body.get('placementPolicy') or {}).get('policyName')
    if policy:
        region = _region_of(where.location)
        key = policy if policy.startswith('projects/') else 'projects/%s/regions/%s/resourcePolicies/%s' % (where.project, region, policy)
        if call.store.get('compute.resourcePolicies', key) is None:
            raise bad_request('Placement policy "%s" does not exist in region "%s".' % (policy, region))


def _render_cluster(call, key):
    cluster = call.store.get('container.clusters', key)
    if cluster is None:
        return None
    rendered = dict(cluster)
    pools = [pool for _key, pool in call.store.items('container.nodePools', key + '/nodePools/')]
    rendered['nodePools'] = pools
    if pools:
        rendered['nodeConfig'] = pools[0]['config']
        rendered['currentNodeCount'] = sum(pool['initialNodeCount'] * len(pool['locations']) for pool in pools)
        rendered['instanceGroupUrls'] = [url for pool in pools for url in pool['instanceGroupUrls']]
    return rendered


@handles('container.projects.locations.clusters.create', 'container.projects.zones.clusters.create')
def create_cluster(call):
    where = Where(call)
    body = dict(call.body.get('cluster') or {})
    where.cluster = body.get('name')
    _check_location(where.location)
    if not isinstance(where.cluster, str) or not _NAME.match(where.cluster):
        raise bad_request('Invalid cluster name "%s": it must match %s.' % (where.cluster, _NAME.pattern))
    key = where.cluster_key
    if call.store.get('container.clusters', key) is not None:
        raise already_exists(key)
    channel = (body.get('releaseChannel') or {}).get('channel')
    if channel and channel != 'UNSPECIFIED' and not body.get('initialClusterVersion'):
        version = catalog.GKE_CHANNELS[channel][0]
    else:
        version = _resolve_version(body.get('initialClusterVersion'), channel)
    _check_channel_version(channel, version)
    network_config = dict(body.get('networkConfig') or {})
    ip_policy = dict(body.get('ipAllocationPolicy') or {})
    if network_config.get('enableMultiNetworking'):
        if network_config.get('datapathProvider') != 'ADVANCED_DATAPATH':
            raise bad_request('Multi-networking requires GKE Dataplane V2 (datapathProvider ADVANCED_DATAPATH).')
        # VPC-native is the default since 1.21.0-gke.1500 ("VPC-native clusters",
        # https://cloud.google.com/kubernetes-engine/docs/concepts/alias-ips): only an explicit useIpAliases=false is
        # refused (multi-network prerequisites, https://cloud.google.com/kubernetes-engine/docs/how-to/setup-multinetwork-support-for-pods).
        if ip_policy.get('useIpAliases') is False:
            raise bad_request('Multi-networking requires a VPC-native cluster (ipAllocationPolicy.useIpAliases).')
    network = body.get('network') or network_config.get('network') or 'default'
    region = _region_of(where.location)
    network_key = network if network.startswith('projects/') else 'projects/%s/global/networks/%s' % (where.project, network)
    if (body.get('network') or network_config.get('network')) and call.store.get('compute.networks', network_key) is None:
        raise bad_request('Network "%s" does not exist.' % network)
    subnetwork = body.get('subnetwork') or network_config.get('subnetwork') or network.rsplit('/', 1)[-1]
    if body.get('subnetwork') or network_config.get('subnetwork'):
        exists, subnet_key = _compute_subnet_exists(call, where.project, region, subnetwork)
        if not exists:
            raise bad_request('Subnetwork "%s" does not exist in region "%s".' % (subnetwork, region))
        subnet_network = call.store.get('compute.subnetworks', subnet_key)['network']
        if (body.get('network') or network_config.get('network')) and not subnet_network.endswith('/' + network_key):
            # The cluster's subnetwork belongs to its network (Cluster.subnetwork: "the name of the Google Compute
            # Engine subnetwork to which the cluster is connected", in Cluster.network).  Wording: the sandbox's.
            raise bad_request('Subnetwork "%s" is not in network "%s".' % (subnetwork, network))
    cluster_cidr = ip_policy.get('clusterIpv4CidrBlock') or body.get('clusterIpv4Cidr') or _ip_range(call, 4)
    network_config.update({
        'network': network_key,
        'subnetwork': subnetwork if subnetwork.startswith('projects/') else 'projects/%s/regions/%s/subnetworks/%s' % (where.project, region, subnetwork),
        'datapathProvider': network_config.get('datapathProvider', 'LEGACY_DATAPATH'),
    })
    ip_policy.update({'useIpAliases': ip_policy.get('useIpAliases', True), 'clusterIpv4Cidr': cluster_cidr,
                      'clusterIpv4CidrBlock': cluster_cidr, 'servicesIpv4Cidr': '34.118.224.0/20',
                      'servicesIpv4CidrBlock': '34.118.224.0/20', 'stackType': 'IPV4'})
    serial = call.store.new_serial()
    link_path = _link_path(where.project, where.location)
    pools_requested = body.pop('nodePools', None) or []
    if not pools_requested and body.get('initialNodeCount'):
        pools_requested = [{'name': 'default-pool', 'initialNodeCount': body['initialNodeCount'], 'config': body.get('nodeConfig') or {}}]
    cluster = dict(body)
    cluster.update({
        'name': where.cluster,
        'location': where.location,
        'zone': where.location,
        'locations': body.get('locations') or _zones_of(where.location),
        'network': network.rsplit('/', 1)[-1],
        'subnetwork': subnetwork.rsplit('/', 1)[-1],
        'networkConfig': network_config,
        'ipAllocationPolicy': ip_policy,
        'clusterIpv4Cidr': cluster_cidr,
        'servicesIpv4Cidr': '34.118.224.0/20',
        'initialClusterVersion': version,
        'currentMasterVersion': version,
        'currentNodeVersion': version,
        # SIMULATION (the control plane's address).  Real GKE gives a public or private IP (port 443).  The sandbox
        # hands out loopback only: a closed port (1, tcpmux, which nothing serves here) until a cluster of
        # tests/sandbox/kube (--gke-clusters) comes alive and kube/gke.py writes its API server's 127.0.0.1:PORT.
        'endpoint': UNSERVED_ENDPOINT,
        'masterAuth': {'clusterCaCertificate': _FAKE_CA},
        'status': 'PROVISIONING',
        'createTime': container_time(call.now),
        'selfLink': CONTAINER_LINK + '%s/clusters/%s' % (link_path, where.cluster),
        'id': '%032x' % (zlib.crc32(key.encode()) * 0x9E3779B1 + serial),
        'labelFingerprint': 'a9dc16a7',
        'loggingService': body.get('loggingService', 'logging.googleapis.com/kubernetes'),
        'monitoringService': body.get('monitoringService', 'monitoring.googleapis.com/kubernetes'),
        'etag': '%08x' % serial,
    })
    pools = [_node_pool(call, where, cluster, pool, version) for pool in pools_requested]
    effects = []
    if call.fault is None:
        call.store.put('container.clusters', key, cluster)
        effects.append({'action': 'update', 'collection': 'container.clusters', 'key': key, 'fields': {'status': 'RUNNING'}})
        for pool in pools:
            pool_key = where.node_pool_key(pool['name'])
            call.store.put('container.nodePools', pool_key, pool)
            effects.append({'action': 'update', 'collection': 'container.nodePools', 'key': pool_key, 'fields': {'status': 'RUNNING'}})
    return start_container_operation(call, where.project, where.location, 'CREATE_CLUSTER', '%s/clusters/%s' % (link_path, where.cluster), effects)


def _require(call, collection, key):
    """The stored resource, or GKE's 404 naming its path."""
    resource = call.store.get(collection, key)
    if resource is None:
        raise not_found(key)
    return resource


def _require_cluster(call, where):
    rendered = _render_cluster(call, where.cluster_key)
    if rendered is None:
        raise not_found(where.cluster_key)
    return rendered


@handles('container.projects.locations.clusters.get', 'container.projects.zones.clusters.get')
def get_cluster(call):
    return _require_cluster(call, Where(call))


@handles('container.projects.locations.clusters.list', 'container.projects.zones.clusters.list')
def list_clusters(call):
    where = Where(call)
    prefix = 'projects/%s/locations/' % where.project if where.location == '-' else where.parent + '/clusters/'
    keys = [key for key, _value in call.store.items('container.clusters', prefix)]
    return {'clusters': [_render_cluster(call, key) for key in keys]}


@handles('container.projects.locations.clusters.delete', 'container.projects.zones.clusters.delete')
def delete_cluster(call):
    where = Where(call)
    cluster = _require(call, 'container.clusters', where.cluster_key)
    cluster['status'] = 'STOPPING'
    pools = [{'action': 'delete', 'collection': 'container.nodePools', 'key': key}
             for key, _value in call.store.items('container.nodePools', where.cluster_key + '/nodePools/')]
    effects = [{'action': 'delete', 'collection': 'container.clusters', 'key': where.cluster_key, 'then': pools}]
    return start_container_operation(call, where.project, where.location, 'DELETE_CLUSTER',
                                     '%s/clusters/%s' % (_link_path(where.project, where.location), where.cluster), effects)


@handles('container.projects.locations.clusters.nodePools.create', 'container.projects.zones.clusters.nodePools.create')
def create_node_pool(call):
    where = Where(call)
    cluster = _require(call, 'container.clusters', where.cluster_key)
    body = call.body.get('nodePool') or {}
    key = where.node_pool_key(body.get('name'))
    check_idle(call, where)
    if call.store.get('container.nodePools', key) is not None:
        raise already_exists(key)
    pool = _node_pool(call, where, cluster, body, cluster['currentNodeVersion'])
    # The pool exists (PROVISIONING) from the create's response on, whatever the operation's outcome.
    call.store.put('container.nodePools', key, pool)
    effects = [{'action': 'update', 'collection': 'container.nodePools', 'key': key, 'fields': {'status': 'RUNNING'}}]
    operation = start_container_operation(call, where.project, where.location, 'CREATE_NODE_POOL',
                                          '%s/clusters/%s/nodePools/%s' % (_link_path(where.project, where.location), where.cluster,
                                                                           pool['name']), effects)
    if call.fault is not None:
        # A create whose operation fails for capacity or quota leaves the pool in place: GKE keeps it, in ERROR with the
        # reason in statusMessage, and goes on waiting for the resources (terraform-provider-google #10121 and #3304: the
        # provider reads the pool back after a failed create because of this). The operation carries the same error.
        failed = {'action': 'update', 'collection': 'container.nodePools', 'key': key,
                  'fields': {'status': 'ERROR', 'statusMessage': (operation.get('_error') or operation).get('statusMessage', '')}}
        if operation['status'] == 'DONE':
            call.store.apply(failed)
        else:
            operation['_effects'] = [failed]
    return operation


@handles('container.projects.locations.clusters.nodePools.get', 'container.projects.zones.clusters.nodePools.get')
def get_node_pool(call):
    where = Where(call)
    _require_cluster(call, where)
    pool = _require(call, 'container.nodePools', where.node_pool_key())
    return pool


@handles('container.projects.locations.clusters.nodePools.list', 'container.projects.zones.clusters.nodePools.list')
def list_node_pools(call):
    where = Where(call)
    return {'nodePools': _require_cluster(call, where)['nodePools']}


@handles('container.projects.locations.clusters.nodePools.delete', 'container.projects.zones.clusters.nodePools.delete')
def delete_node_pool(call):
    where = Where(call)
    pool = _require(call, 'container.nodePools', where.node_pool_key())
    check_idle(call, where)
    pool['status'] = 'STOPPING'
    effects = [{'action': 'delete', 'collection': 'container.nodePools', 'key': where.node_pool_key()}]
    return start_container_operation(call, where.project, where.location, 'DELETE_NODE_POOL',
                                     '%s/clusters/%s/nodePools/%s' % (_link_path(where.project, where.location), where.cluster, where.node_pool), effects)


@handles('container.projects.locations.operations.get', 'container.projects.zones.operations.get')
def get_operation(call):
    where = Where(call)
    return _require(call, 'container.operations', '%s/operations/%s' % (where.parent, where.operation))


@handles('container.projects.locations.operations.list', 'container.projects.zones.operations.list')
def list_operations(call):
    where = Where(call)
    prefix = 'projects/%s/locations/' % where.project if where.location == '-' else where.parent + '/operations/'
    return {'operations': [value for _key, value in call.store.items('container.operations', prefix)]}


@handles('container.projects.locations.getServerConfig', 'container.projects.zones.getServerconfig')
def get_server_config(call):
    where = Where(call)
    _check_location(where.location)
    return {
        'defaultClusterVersion': catalog.GKE_DEFAULT_VERSION,
        'validNodeVersions': list(catalog.GKE_VERSIONS),
        'defaultImageType': 'COS_CONTAINERD',
        'validImageTypes': list(catalog.GKE_IMAGE_TYPES),
        'validMasterVersions': list(catalog.GKE_VERSIONS),
        'channels': [{'channel': channel, 'defaultVersion': versions[0], 'validVersions': list(versions)}
                     for channel, versions in catalog.GKE_CHANNELS.items()],
    }


# ------------------------------------------------------------------------- updates of clusters and node pools
# Added by the GKE modules' work (issue 11/12): clusters.update and the node pool setters, and GKE's
# one-operation-at-a-time rule, which those modules must handle.

_VERBS = {'CREATE_NODE_POOL': 'creating node pool', 'DELETE_NODE_POOL': 'deleting node pool', 'UPDATE_CLUSTER': 'updating cluster',
          'UPGRADE_MASTER': 'upgrading cluster', 'SET_NODE_POOL_SIZE': 'resizing node pool', 'SET_NODE_POOL_MANAGEMENT': 'updating node pool',
          'UPDATE_NODE_POOL': 'updating node pool', 'CREATE_CLUSTER': 'creating cluster', 'DELETE_CLUSTER': 'deleting cluster'}


def check_idle(call, where):
    """GKE runs one operation at a time per cluster: another mutating call meanwhile gets 400 FAILED_PRECONDITION
    "Operation operation-... is currently creating node pool NAME. Please wait and try again once it is done."
    (the error quoted in hashicorp/terraform-provider-google#10366).  Wording: GKE's, as quoted there."""
    target = '/clusters/%s' % where.cluster
    for _key, operation in call.store.items('container.operations', where.parent + '/operations/'):
        link = operation.get('targetLink') or ''
        if operation.get('status') != 'DONE' and (link.endswith(target) or (target + '/') in link):
            what = link.rsplit('/', 1)[-1]
            raise ApiError(400, 'failedPrecondition', 'Operation %s is currently %s %s. Please wait and try again once it is done.'
                           % (operation['name'], _VERBS.get(operation.get('operationType'), 'operating on'), what),
                           status='FAILED_PRECONDITION')


def _pool_operation(call, where, operation_type, fields):
    check_idle(call, where)
    _require(call, 'container.clusters', where.cluster_key)
    pool = _require(call, 'container.nodePools', where.node_pool_key())
    effects = [] if call.fault else [{'action': 'update', 'collection': 'container.nodePools', 'key': where.node_pool_key(), 'fields': fields}]
    return start_container_operation(call, where.project, where.location, operation_type,
                                     '%s/clusters/%s/nodePools/%s' % (_link_path(where.project, where.location), where.cluster, pool['name']), effects)


@handles('container.projects.locations.clusters.nodePools.setSize', 'container.projects.zones.clusters.nodePools.setSize')
def set_node_pool_size(call):
    """nodePools.setSize: ``nodeCount`` becomes the pool's size when the operation is DONE (kept in
    ``initialNodeCount``, as the sandbox keeps a pool's size; a negative one is refused as at creation)."""
    _check_node_count((call.body or {}).get('nodeCount') or 0, 'SetNodePoolSizeRequest.node_count')
    return _pool_operation(call, Where(call), 'SET_NODE_POOL_SIZE', {'initialNodeCount': int((call.body or {}).get('nodeCount') or 0)})


@handles('container.projects.locations.clusters.nodePools.setAutoscaling', 'container.projects.zones.clusters.nodePools.setAutoscaling')
def set_node_pool_autoscaling(call):
    """nodePools.setAutoscaling: the pool's ``autoscaling`` becomes the body's (SetNodePoolAutoscalingRequest)."""
    autoscaling = dict((call.body or {}).get('autoscaling') or {})
    if autoscaling.get('enabled') and int(autoscaling.get('maxNodeCount') or 0) < int(autoscaling.get('minNodeCount') or 0):
        # NodePoolAutoscaling.maxNodeCount: "Has to be >= min_node_count." (container.v1 discovery document).  Wording: the sandbox's.
        raise bad_request('autoscaling: maxNodeCount must be greater than or equal to minNodeCount.')
    return _pool_operation(call, Where(call), 'SET_NODE_POOL_MANAGEMENT', {'autoscaling': autoscaling})


@handles('container.projects.locations.clusters.nodePools.setManagement', 'container.projects.zones.clusters.nodePools.setManagement')
def set_node_pool_management(call):
    """nodePools.setManagement: the pool's ``management`` (autoUpgrade, autoRepair) becomes the body's."""
    return _pool_operation(call, Where(call), 'SET_NODE_POOL_MANAGEMENT', {'management': dict((call.body or {}).get('management') or {})})


@handles('container.projects.locations.clusters.nodePools.update', 'container.projects.zones.clusters.nodePools.update')
def update_node_pool(call):
    """nodePools.update (UpdateNodePoolRequest): the sandbox applies ``labels`` (NodeLabels: the pool's
    Kubernetes labels, replaced as a whole), ``locations`` and ``fastSocket`` (FastSocket ``{enabled}``, stored as the
    pool's ``config.fastSocket``: what ``gcloud container node-pools update --enable-fast-socket`` sends); an ``etag`` that is not the pool's is refused
    (UpdateNodePoolRequest.etag: "The current etag of the node pool. If an etag is provided and does not match
    the current etag of the node pool, update will be blocked and an ABORTED error will be returned.").
    Other fields are not simulated: 501.  Wording of the refusals: the sandbox's."""
    where = Where(call)
    body = dict(call.body or {})
    pool = _require(call, 'container.nodePools', where.node_pool_key())
    if body.get('etag') and body['etag'] != pool.get('etag'):
        raise ApiError(409, 'aborted', 'Etag "%s" does not match the current etag of node pool "%s".' % (body['etag'], pool['name']), status='ABORTED')
    ignored = {'etag', 'name', 'projectId', 'zone', 'clusterId', 'nodePoolId', 'nodeVersion', 'imageType'}
    unsupported = sorted(set(body) - ignored - {'labels', 'locations', 'fastSocket'})
    if unsupported:
        raise ApiError(501, 'notImplemented', 'The sandbox does not simulate nodePools.update of %s.' % ', '.join(unsupported))
    config = dict(pool.get('config') or {})
    fields = {'etag': '%08x' % zlib.crc32((pool['etag'] + repr(sorted(body.items()))).encode())}
    if 'labels' in body:
        config['labels'] = dict((body['labels'] or {}).get('labels') or {})
        fields['config'] = config
    if 'fastSocket' in body:
        config['fastSocket'] = {'enabled': bool((body['fastSocket'] or {}).get('enabled'))}
        fields['config'] = config
    if 'locations' in body:
        fields['locations'] = list(body['locations'])
    return _pool_operation(call, where, 'UPDATE_NODE_POOL', fields)


@handles('container.projects.locations.clusters.update', 'container.projects.zones.clusters.update')
def update_cluster(call):
    """clusters.update (UpdateClusterRequest with one ClusterUpdate field).  The sandbox applies
    ``desiredEnableMultiNetworking`` (refused without Dataplane V2, as at creation) and ``desiredMasterVersion``
    (a version getServerConfig offers, not older than the current one: GKE does not downgrade a control plane
    by this call); other fields: 501.  Wording of the refusals: the sandbox's."""
    where = Where(call)
    check_idle(call, where)
    cluster = _require(call, 'container.clusters', where.cluster_key)
    update = dict((call.body or {}).get('update') or {})
    fields = {}
    if 'desiredEnableMultiNetworking' in update:
        if update['desiredEnableMultiNetworking'] and cluster['networkConfig'].get('datapathProvider') != 'ADVANCED_DATAPATH':
            raise bad_request('Multi-networking requires GKE Dataplane V2 (datapathProvider ADVANCED_DATAPATH).')
        fields['networkConfig'] = dict(cluster['networkConfig'], enableMultiNetworking=bool(update.pop('desiredEnableMultiNetworking')))
    operation_type = 'UPDATE_CLUSTER'
    if 'desiredMasterVersion' in update:
        version = _resolve_version(update.pop('desiredMasterVersion'), (cluster.get('releaseChannel') or {}).get('channel'))
        if catalog.gke_version_key(version) < catalog.gke_version_key(cluster['currentMasterVersion']):
            raise bad_request('Master version "%s" is older than the current version "%s".' % (version, cluster['currentMasterVersion']))
        fields['currentMasterVersion'] = version
        operation_type = 'UPGRADE_MASTER'
    if update or not fields:
        raise ApiError(501, 'notImplemented', 'The sandbox does not simulate clusters.update of %s.' % (', '.join(sorted(update)) or 'an empty update'))
    effects = [] if call.fault else [{'action': 'update', 'collection': 'container.clusters', 'key': where.cluster_key, 'fields': fields}]
    return start_container_operation(call, where.project, where.location, operation_type,
                                     '%s/clusters/%s' % (_link_path(where.project, where.location), where.cluster), effects)


@handles('compute.instanceGroupManagers.get')
def get_node_pool_group(call):
    """The managed instance group of a node pool in one zone (the ``instanceGroupUrls`` of the pool): GKE keeps a
    pool's current size there (``targetSize``; NodePool.initialNodeCount stays the size at creation), which is
    where clients read it back (Terraform's google_container_node_pool reads node_count from the groups).  The
    sandbox keeps the size in ``initialNodeCount`` and serves the group from it; it has no other instance groups."""
    project, zone, name = call.params.get('project'), call.params.get('zone'), call.params.get('instanceGroupManager')
    path = 'projects/%s/zones/%s/instanceGroupManagers/%s' % (project, zone, name)
    for _key, pool in call.store.items('container.nodePools', 'projects/%s/' % project):
        if COMPUTE_LINK + path in pool.get('instanceGroupUrls', []):
            return {'kind': 'compute#instanceGroupManager', 'name': name, 'zone': COMPUTE_LINK + 'projects/%s/zones/%s' % (project, zone),
                    'baseInstanceName': name[:-len('-grp')] if name.endswith('-grp') else name,
                    'targetSize': int(pool.get('initialNodeCount') or 0), 'selfLink': COMPUTE_LINK + path}
    raise ApiError(404, 'notFound', "The resource '%s' was not found" % path)
