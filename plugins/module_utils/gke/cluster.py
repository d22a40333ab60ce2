# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a GKE cluster for GPUDirect, as pure data (Container API v1).

Google's GKE guides create a Standard cluster with Dataplane V2, IP aliases and multi-networking at a
version that meets the technology's floor. build_cluster_plan() checks the inputs and builds the
``clusters.create`` body gcloud would send for the guide's command; pick_version() chooses a version
from ``getServerConfig``; changes() compares an existing cluster with the plan and sorts every
difference into a ``ClusterUpdate`` the API applies in place or a problem only a new cluster fixes.
"""

from __future__ import annotations

import re

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute as compute_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import gke as gke_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke.common import dig, gke_family, read_kubeconfig
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

STANDARD, AUTOPILOT = 'standard', 'autopilot'

# The options of gke_gpudirect_cluster (also checked by gpudirect_plan, the playbooks' first step).
ARGUMENT_SPEC = {
    'cluster': {'type': 'str', 'required': True, 'aliases': ['name']},
    'location': {'type': 'str', 'required': True},
    'machine_type': {'type': 'str', 'required': True, 'choices': list(gke_catalog.GKE_MACHINE_TYPES)},
    'state': {'type': 'str', 'default': 'present', 'choices': ['present', 'absent']},
    'cluster_mode': {'type': 'str', 'default': 'standard', 'choices': ['standard', 'autopilot']},
    'version': {'type': 'str'},
    'multi_networking': {'type': 'bool', 'default': True},
    'network': {'type': 'str'},
    'subnetwork': {'type': 'str'},
    'default_pool_node_count': {'type': 'int', 'default': gke_catalog.GKE_DEFAULT_POOL_NODE_COUNT},
    'autoupgrade': {'type': 'bool', 'default': False},
    'delete_adopted': {'type': 'bool', 'default': False},
    'timeout': {'type': 'int', 'default': 1800, 'aliases': ['wait_timeout'],
                'deprecated_aliases': [{'name': 'wait_timeout', 'version': '1.0.0', 'collection_name': 'aiinfra.gpudirect'}]},
    'kubeconfig_path': {'type': 'path'},
}

# Cluster and node pool names: "must start with a lowercase letter followed by up to 39 lowercase letters, numbers,
# or hyphens, and cannot end with a hyphen" (GKE's clusters.create answers 400 otherwise; the sandbox refuses the same).
NAME_PATTERN = re.compile(r'^[a-z](?:[-a-z0-9]{0,38}[a-z0-9])?$')
# A zone (us-central1-a) or a region (us-central1).
LOCATION_PATTERN = re.compile(r'^[a-z]+-[a-z]+[0-9]+(?:-[a-z])?$')
ZONE_PATTERN = re.compile(r'^[a-z]+-[a-z]+[0-9]+-[a-z]$')


def check_name(name, field, what):
    if not NAME_PATTERN.match(str(name or '')):
        raise InputError("%s: %r is not a valid %s name; use up to 40 lowercase letters, digits and hyphens, starting with a "
                         'letter and not ending with a hyphen (e.g. a3mega)' % (field, name, what))


def check_location(location, field='location'):
    if not LOCATION_PATTERN.match(str(location or '')):
        raise InputError("%s: %r is neither a zone (us-central1-a) nor a region (us-central1)" % (field, location))


# The fields the module manages, for diff output and the comparison.
MANAGED_FIELDS = ('networkConfig.datapathProvider', 'networkConfig.enableMultiNetworking', 'ipAllocationPolicy.useIpAliases',
                  'autopilot.enabled', 'currentMasterVersion', 'status')


class ClusterPlan:
    def __init__(self, family, name, location, mode, version, multi_networking, body):
        self.family = family
        self.name = name
        self.location = location
        self.mode = mode
        self.version = version
        self.multi_networking = multi_networking
        self.body = body

    def summary(self):
        return {'name': self.name, 'location': self.location, 'machine_type': self.family.machine_type,
                'technology': self.family.technology, 'cluster_mode': self.mode, 'version': self.version,
                'multi_networking': self.multi_networking}


def check_mode_for_technology(family, mode):
    """Google's GKE GPUDirect-TCPX/TCPXO guide "Limitations": GPUDirect-TCPX and -TCPXO are not supported on Autopilot clusters."""
    if mode == AUTOPILOT and family.technology != families.RDMA:
        raise InputError('cluster_mode: GPUDirect-%s (%s) is not supported on Autopilot clusters (Google\'s GKE GPUDirect-TCPX/TCPXO guide "Limitations"); '
                         'use cluster_mode: standard' % (family.technology, family.machine_type))


def check_version(family, version, mode, field='version'):
    try:
        gke_catalog.check_gke_version(family.technology, version, cluster_mode=mode, field=field)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def pick_version(family, mode, server_config):
    """The version to create: the location's default when it meets the technology's floor, else the
    newest valid master version that does (Google's GKE GPUDirect-TCPX/TCPXO guide: "Elige una versión de GKE disponible que admita ...")."""
    valid = list(server_config.get('validMasterVersions') or [])
    candidates = [server_config.get('defaultClusterVersion')] + valid
    for version in candidates:
        if not version:
            continue
        try:
            check_version(family, version, mode)
        except InputError:
            continue
        return version
    floor = gke_catalog.gke_version_floor(family.technology, valid[0] if valid else '1.0', mode)
    raise InputError('version: no GKE version offered in this location meets GPUDirect-%s\'s floor (%s, %s cluster); the location '
                     'offers %s' % (family.technology, floor, mode, ', '.join(valid) or 'none'))


def resolved_version(version, server_config):
    """The version GKE creates for ``version``: ``latest`` (or ``-``) is the newest master version getServerConfig offers,
    MAJOR.MINOR or MAJOR.MINOR.PATCH the newest offered version of it; a version not offered (or no getServerConfig, as
    in an offline plan) stays as given."""
    valid = list(server_config.get('validMasterVersions') or [])   # newest first, as GKE lists them
    text = str(version).strip()
    if text.lower() in ('latest', '-'):
        return valid[0] if valid else text
    return next((candidate for candidate in valid if candidate == text or candidate.startswith((text + '.', text + '-'))), text)


def check_offered(version, server_config, location):
    """The version (or alias: latest, 1.33, 1.33.5) is one getServerConfig offers in the location."""
    valid = list(server_config.get('validMasterVersions') or [])
    text = str(version).strip()
    if not valid or text.lower() in ('latest', '-') or text in valid:
        return
    if any(candidate.startswith(text + '.') or candidate.startswith(text + '-') for candidate in valid):
        return
    raise InputError('version: %s is not offered in %s (getServerConfig); use one of %s, or leave it unset to take the newest '
                     'version that meets the floor' % (text, location, ', '.join(valid[:6]) + (', ...' if len(valid) > 6 else '')))


def plan_from_params(params, server_config=None):
    """The ClusterPlan of gke_gpudirect_cluster's options (state present); InputError on bad input."""
    plan = build_cluster_plan(
        params['cluster'], params['location'], params['machine_type'], mode=params['cluster_mode'], version=params['version'],
        multi_networking=params['multi_networking'], network=params['network'], subnetwork=params['subnetwork'],
        default_pool_node_count=params['default_pool_node_count'], autoupgrade=params['autoupgrade'], server_config=server_config)
    if params['version'] and server_config:
        check_offered(params['version'], server_config, params['location'])
    if params['timeout'] <= 0:
        raise InputError('timeout: %d seconds; give how long to wait for each operation, e.g. 1800' % params['timeout'])
    if params.get('kubeconfig_path'):
        read_kubeconfig(params['kubeconfig_path'])   # a file the cluster's context cannot be merged into is refused here
    return plan


def build_cluster_plan(name, location, machine_type, mode=STANDARD, version=None, multi_networking=True, network=None,
                       subnetwork=None, default_pool_node_count=gke_catalog.GKE_DEFAULT_POOL_NODE_COUNT, autoupgrade=False,
                       server_config=None):
    """Check every input and return the ClusterPlan; raise InputError before anything is created.

    ``server_config`` (getServerConfig's answer) is needed only when ``version`` is not given.
    """
    family = gke_family(machine_type)
    if not name:
        raise InputError('cluster: give the cluster name')
    check_name(name, 'cluster', 'cluster')
    if not location:
        raise InputError('location: give a zone (us-central1-a) for a zonal cluster or a region (us-central1) for a regional one')
    check_location(location)
    mode = str(mode or STANDARD).lower()
    check_mode_for_technology(family, mode)
    if mode != AUTOPILOT and int(default_pool_node_count) < 1:
        # Cluster.initialNodeCount / the first pool: GKE answers "Cluster.initial_node_count must be greater than zero."
        # (quoted in hashicorp/terraform-provider-google#13540).
        raise InputError('default_pool_node_count: %d; a Standard cluster is created with at least 1 node in its default pool'
                         % int(default_pool_node_count))
    if version:
        # An alias (latest, 1.33) is checked as the version GKE would make of it, not passed as "no floor".
        resolved = resolved_version(version, server_config or {})
        try:
            check_version(family, resolved, mode)
        except InputError as exc:
            if resolved == version:
                raise
            raise InputError('version: %s is %s here (getServerConfig), and %s' % (version, resolved, str(exc).split(': ', 1)[1])) from None
    else:
        version = pick_version(family, mode, server_config or {})
    if family.technology != families.RDMA and not multi_networking:
        raise InputError('multi_networking: GPUDirect-%s needs multi-networking for its %d additional node networks (Google\'s GKE GPUDirect-TCPX/TCPXO guide '
                         '"Create a cluster with multi-networking enabled"); leave multi_networking true'
                         % (family.technology, family.data_nic_count))
    # What gcloud sends for the GKE GPUDirect-TCPX/TCPXO guide's `clusters create --enable-dataplane-v2 --enable-ip-alias
    # --enable-multi-networking --cluster-version=VERSION --no-enable-autoupgrade` (parity test).
    body = {
        'name': name,
        'initialClusterVersion': version,
        'networkConfig': {'datapathProvider': gke_catalog.GKE_DATAPATH_PROVIDER},
        'ipAllocationPolicy': {'useIpAliases': True, 'createSubnetwork': False},
        'resourceLabels': dict([compute_catalog.MANAGED_LABEL]),
    }
    if multi_networking:
        body['networkConfig']['enableMultiNetworking'] = True
    if network:
        body['network'] = network
    if subnetwork:
        body['subnetwork'] = subnetwork
    if mode == AUTOPILOT:
        body['autopilot'] = {'enabled': True}
    else:
        body['nodePools'] = [{'name': 'default-pool', 'initialNodeCount': int(default_pool_node_count),
                              'management': {'autoRepair': True, 'autoUpgrade': bool(autoupgrade)}, 'upgradeSettings': {'maxSurge': 1}}]
    return ClusterPlan(family, name, location, mode, version, multi_networking, body)


def changes(plan, current):
    """(updates, problems) between the plan and an existing cluster.

    ``updates``: ``ClusterUpdate`` bodies the API applies in place, one field each (the API takes one
    desired field per request). ``problems``: differences only a new cluster fixes, each naming the
    field and why.
    """
    updates, problems = [], []
    current_mode = AUTOPILOT if dig(current, 'autopilot.enabled') else STANDARD
    if current_mode != plan.mode:
        problems.append('autopilot.enabled: the cluster is %s, the plan needs %s (a cluster\'s mode is fixed at creation)'
                        % (current_mode, plan.mode))
    dataplane_v2 = dig(current, 'networkConfig.datapathProvider') == gke_catalog.GKE_DATAPATH_PROVIDER
    if not dataplane_v2:
        problems.append('networkConfig.datapathProvider: %s, GPUDirect needs %s (Dataplane V2, Google\'s GKE GPUDirect-TCPX/TCPXO guide "Requirements"; GKE '
                        'enables it only when a cluster is created)'
                        % (dig(current, 'networkConfig.datapathProvider', 'LEGACY_DATAPATH'), gke_catalog.GKE_DATAPATH_PROVIDER))
    if dig(current, 'ipAllocationPolicy.useIpAliases') is False:
        problems.append('ipAllocationPolicy.useIpAliases: false; multi-networking needs a VPC-native cluster (fixed at creation)')
    if plan.multi_networking and not dig(current, 'networkConfig.enableMultiNetworking'):
        # The API has ClusterUpdate.desiredEnableMultiNetworking, but Google's GKE GPUDirect-TCPX/TCPXO guide says it cannot be done, so the collection
        # does not try it on a cluster that runs workloads: a new cluster is the way out (the callers name it).
        problems.append('networkConfig.enableMultiNetworking: false, and %s' % gke_catalog.GKE_MULTI_NETWORKING_AT_CREATION)
    version = current.get('currentMasterVersion')
    if version and current_mode == plan.mode:
        try:
            check_version(plan.family, version, plan.mode, field='currentMasterVersion')
        except InputError:
            # The control plane can be upgraded in place (ClusterUpdate.desiredMasterVersion); nodes follow per pool.
            updates.append({'desiredMasterVersion': plan.version})
    return updates, problems


def view(cluster):
    """The managed fields of a cluster for diff output."""
    if cluster is None:
        return None
    return {field: dig(cluster, field) for field in MANAGED_FIELDS}


def planned_view(plan, current):
    """The managed fields after the plan is applied (the current values where the plan leaves them)."""
    after = dict(view(current) or {})
    after.update({
        'networkConfig.datapathProvider': gke_catalog.GKE_DATAPATH_PROVIDER,
        'networkConfig.enableMultiNetworking': True if plan.multi_networking else dig(current or {}, 'networkConfig.enableMultiNetworking'),
        'ipAllocationPolicy.useIpAliases': True,
        'autopilot.enabled': True if plan.mode == AUTOPILOT else None,
        'status': 'RUNNING',
    })
    if current is None or not after.get('currentMasterVersion'):
        after['currentMasterVersion'] = plan.version
    return after
