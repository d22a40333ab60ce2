# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes objects of GPUDirect on GKE, rendered from the catalog: pure functions (catalog + inputs ->
list of dicts), exposed as filters (plugins/filter/gke.py) and applied one by one by the roles
gke_gpudirect (TCPX / TCPXO, Google's GKE GPUDirect-TCPX/TCPXO guide) and gke_rdma (RDMA, Google's GKE GPUDirect RDMA guide).

The vendor's DaemonSets and test workloads are the objects of the verbatim copies under manifests/ (see
manifests/SOURCES.md), read from vendor_manifests.py, which scripts/generate_manifests.py writes from them: a module
gets only Python files in the zip ansible-core sends it, so no YAML file is read at run time. Only what the catalog
decides is overridden here: image tags and the GPU nodes they run on. Bad input raises InputError naming the input and the fix, before anything is
applied.
"""

from __future__ import annotations

import copy
import re
import shlex

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.families import (
    FAMILIES, GKE, RDMA, check_technology, choices_text, families_for_technology,
)
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.gke import (
    GKE_COMPUTE_CLASS_RESERVATION_AFFINITY, GKE_NETWORK_API_VERSION, GKE_NETWORK_DEVICE_MODE, GKE_NETWORK_NAME, GKE_NETWORK_TYPE,
    GKE_RDMA, GKE_RDMA_INSTALLER, GKE_RDMA_NETWORK_OBJECTS, GKE_VPC_LAYOUT, NRI_DEVICE_INJECTOR, gke_additional_networks, gke_stack,
)
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.host_stacks import version_pair
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.image_reference import ImageReference
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s.vendor_manifests import MANIFESTS
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl.command import DEBUG_ENV

ACCELERATOR_LABEL = 'cloud.google.com/gke-accelerator'
NODE_POOL_LABEL = 'cloud.google.com/gke-nodepool'

# The vendor files each object comes from (paths under manifests/, the upstream repository's layout).
INSTALLER_MANIFESTS = {'TCPXO': 'gpudirect-tcpxo/nccl-tcpxo-installer.yaml', 'TCPX': 'gpudirect-tcpx/nccl-tcpx-installer.yaml',
                       'RDMA': 'gpudirect-rdma/nccl-rdma-installer.yaml'}
NRI_MANIFEST = 'nri_device_injector/nri-device-injector.yaml'
TEST_MANIFESTS = {
    'TCPXO': ('gpudirect-tcpxo/nccl-test-latest.yaml',),
    'TCPX': ('gpudirect-tcpx/nccl-config.yaml', 'gpudirect-tcpx/nccl-test-latest.yaml'),
    'RDMA': ('seeds/001-nccl-test-workload.yaml',),
}
# The GKE GPUDirect RDMA guide's manual multi-network variant: the vendor's RDMA test Pods (the page the guide links),
# which attach rdma-0..7 through the networking.gke.io/interfaces annotation instead of claiming all-mrdma.  One file for
# A3 Ultra and A4:
# gpudirect-rdma/nccl-test-a4.yaml differs only in hostNetwork: false / hostPID: false, the API's defaults.
MULTI_NETWORK_TEST_MANIFEST = 'gpudirect-rdma/nccl-test.yaml'
CLUSTER_SCOPED_KINDS = frozenset(('Network', 'GKENetworkParamSet', 'Namespace', 'Node', 'CustomResourceDefinition',
                                  'DeviceClass', 'ComputeClass'))


def load_manifest(relative):
    """The objects of the vendored manifest manifests/RELATIVE (a YAML stream), as new dicts."""
    return copy.deepcopy(MANIFESTS[relative])


def check_image(image, field):
    """``image`` when the kubelet can parse it, else an InputError naming ``field``."""
    reference = ImageReference.parse(image)
    if str(reference) != str(image) or not reference.valid:
        raise InputError('%s: %r is not an image reference the kubelet can pull (its Pods would stay in InvalidImageName); give '
                         'REGISTRY/PATH:TAG or REGISTRY/PATH@sha256:DIGEST, or leave it empty for the catalog\'s image' % (field, image))
    return image


def _technology(technology, allowed):
    try:
        tech = check_technology(technology)
    except ValueError as exc:
        raise InputError(str(exc)) from None   # it names the field already
    if tech not in allowed:
        raise InputError('technology: %s is not handled here; choose one of: %s' % (tech, choices_text(allowed)))
    return tech


def gke_accelerators(technology):
    """The GKE accelerator types (node label cloud.google.com/gke-accelerator) of the technology's families."""
    tech = check_technology(technology)
    return [f.gke_accelerator for f in families_for_technology(tech) if f.gke_accelerator and GKE in f.platforms]


def gke_family(technology):
    """The one catalog family of ``technology`` that runs on GKE (A3 Mega for TCPXO, A3 High for TCPX)."""
    families = [f for f in families_for_technology(technology) if f.gke_accelerator and GKE in f.platforms]
    return families[0]


def gpu_node_selector(technology, node_pool=None, machine_type=None, dranet=True):
    """The label selector of the GPU nodes the DaemonSets (TCPX / TCPXO) or the RDMA workloads must run
    on (k8s_info ``label_selectors``): the technology's GKE accelerators (or ``machine_type``'s), the
    pool, and for RDMA with ``dranet`` the DRANET node label Google's GKE GPUDirect RDMA guide gives the pool (a multi-network
    pool has none: Google's GKE GPUDirect RDMA guide says a pool uses one or the other)."""
    tech = check_technology(technology)
    if machine_type:
        family = FAMILIES.get(machine_type)
        if family is None or family.technology != tech or not family.gke_accelerator:
            raise InputError('machine_type: %r is not a GKE machine type of GPUDirect-%s; choose one of: %s' % (
                machine_type, tech, choices_text([f.machine_type for f in families_for_technology(tech) if f.gke_accelerator])))
        accelerators = [family.gke_accelerator]
    else:
        accelerators = gke_accelerators(tech)
    selector = ['%s in (%s)' % (ACCELERATOR_LABEL, ','.join(accelerators))]
    if tech == RDMA and dranet:
        selector.append('%s=%s' % GKE_RDMA['dranet_node_label'])
    if node_pool:
        selector.append('%s=%s' % (NODE_POOL_LABEL, node_pool))
    return selector


def check_namespace(namespace, field='namespace'):
    """A namespace name the API server takes (an RFC 1123 label); it refuses others with a raw 422 after the pool exists."""
    if namespace and not _DNS_LABEL.match(str(namespace)):
        raise InputError('%s: %r is not a namespace name; use lower-case letters, digits and -, at most 63 characters'
                         % (field, namespace))


def _namespaced(obj, namespace):
    check_namespace(namespace)
    if namespace and obj['kind'] not in CLUSTER_SCOPED_KINDS:
        obj.setdefault('metadata', {})['namespace'] = namespace
    return obj


# ---------------------------------------------------------------------------------------------
# Networks (Google's GKE GPUDirect-TCPX/TCPXO guide "Crea el entorno de GKE")
# ---------------------------------------------------------------------------------------------

def gke_network_objects(technology, network_prefix=None, networks=None):
    """One GKENetworkParamSet then one Network (type Device) per data VPC, named vpc1..vpcN as the guide
    names them. ``networks``: the data VPCs in NIC order (``{name, subnet}`` as gce_gpudirect_network
    returns them, or ``{network, subnetwork}`` as a node pool's additional networks), else
    ``PREFIX-net-N`` / ``PREFIX-sub-N`` from ``network_prefix``."""
    tech = _technology(technology, ('TCPXO', 'TCPX'))
    count = gke_family(tech).data_nic_count
    if networks:
        pairs = [(_last(n.get('name') or n.get('network')), _last(n.get('subnet') or n.get('subnetwork'))) for n in networks]
        if len(pairs) != count or not all(a and b for a, b in pairs):
            raise InputError('networks: GPUDirect-%s needs %d data VPCs, each with a network and a subnet, in NIC order; got %d'
                             % (tech, count, len(pairs)))
    elif network_prefix:
        pairs = [(GKE_VPC_LAYOUT['network'].format(prefix=network_prefix, n=n), GKE_VPC_LAYOUT['subnet'].format(prefix=network_prefix, n=n))
                 for n in range(1, count + 1)]
    else:
        raise InputError('network_prefix: give the prefix of the data VPCs (PREFIX-net-N, PREFIX-sub-N) or the networks list')
    return _device_networks((GKE_NETWORK_NAME.format(n=n), vpc, subnet, GKE_NETWORK_DEVICE_MODE)
                            for n, (vpc, subnet) in enumerate(pairs, start=1))


def _device_networks(rows):
    """One GKENetworkParamSet then one Network (type Device) per (name, vpc, subnet, deviceMode)."""
    objects = []
    for name, vpc, subnet, device_mode in rows:
        objects.append({'apiVersion': GKE_NETWORK_API_VERSION, 'kind': 'GKENetworkParamSet', 'metadata': {'name': name},
                        'spec': {'vpc': vpc, 'vpcSubnet': subnet, 'deviceMode': device_mode}})
        objects.append({'apiVersion': GKE_NETWORK_API_VERSION, 'kind': 'Network', 'metadata': {'name': name},
                        'spec': {'type': GKE_NETWORK_TYPE,
                                 'parametersRef': {'group': 'networking.gke.io', 'kind': 'GKENetworkParamSet', 'name': name}}})
    return objects


def rdma_network_objects(network_prefix=None, networks=None, machine_type='a3-ultragpu-8g', gvnic_prefix=None, rdma_prefix=None):
    """The GKE GPUDirect RDMA guide's manual multi-network variant: GKENetworkParamSet + Network ``gvnic-1`` (deviceMode NetDevice)
    for the gVNIC VPC, then ``rdma-0`` .. ``rdma-7`` (deviceMode RDMA) for the RDMA VPC's 8 subnets, in the
    node pool's NIC order. ``networks``: the pool's additional networks (``{network, subnetwork}``, as
    gke_gpudirect_node_pool returns them, or ``{name, subnet}``), else ``PREFIX-gvnic-net`` /
    ``PREFIX-rdma-sub-N`` from ``network_prefix`` (gce_gpudirect_network layout gke_rdma), or the guide's own two prefixes
    ``gvnic_prefix`` / ``rdma_prefix``."""
    _rdma_family(machine_type)
    count = len(gke_additional_networks(machine_type, 'x'))
    if networks:
        pairs = [(_last(n.get('name') or n.get('network')), _last(n.get('subnet') or n.get('subnetwork'))) for n in networks]
        if len(pairs) != count or not all(a and b for a, b in pairs):
            raise InputError("networks: the GKE GPUDirect RDMA guide's multi-network pool has %d additional networks (1 gVNIC, %d RDMA subnets), each "
                             'with a network and a subnetwork, in NIC order; got %d' % (count, count - 1, len(pairs)))
    elif network_prefix or (gvnic_prefix and rdma_prefix):
        pairs = gke_additional_networks(machine_type, network_prefix, gvnic_prefix, rdma_prefix)
    else:
        raise InputError('network_prefix: give the prefix of the gVNIC and RDMA VPCs (PREFIX-gvnic-net, PREFIX-rdma-sub-N) or the '
                         'networks list')
    rdma_vpcs = sorted({vpc for vpc, _subnet in pairs[1:]})
    if len(rdma_vpcs) != 1 or pairs[0][0] in rdma_vpcs:
        raise InputError('networks: the first network is the gVNIC VPC and the %d RDMA subnets after it belong to one other VPC '
                         '(Google\'s GKE GPUDirect RDMA guide: GVNIC_NETWORK_PREFIX-net, RDMA_NETWORK_PREFIX-net); got %s'
                         % (count - 1, ', '.join(vpc for vpc, _subnet in pairs)))
    names = GKE_RDMA_NETWORK_OBJECTS
    rows = [(names['gvnic_name'], pairs[0][0], pairs[0][1], names['gvnic_device_mode'])]
    rows += [(names['rdma_name'].format(n=n), vpc, subnet, names['rdma_device_mode']) for n, (vpc, subnet) in enumerate(pairs[1:])]
    return _device_networks(rows)


def _rdma_family(machine_type, field='machine_type'):
    family = FAMILIES.get(str(machine_type))
    if family is None or family.technology != RDMA or GKE not in family.platforms:
        raise InputError('%s: %r; Google\'s GKE GPUDirect RDMA guide (GPUDirect-RDMA on GKE) is for %s' % (
            field, machine_type, choices_text([f.machine_type for f in families_for_technology(RDMA) if GKE in f.platforms])))
    return family


def _last(link):
    return str(link).rstrip('/').rsplit('/', 1)[-1] if link else None


# ---------------------------------------------------------------------------------------------
# DaemonSets (Google's GKE GPUDirect-TCPX/TCPXO guide "Instala el objeto binario de GPUDirect" and "inyector de dispositivos NRI")
# ---------------------------------------------------------------------------------------------

def _gpu_affinity(technology, node_pool):
    expressions = [{'key': ACCELERATOR_LABEL, 'operator': 'In', 'values': gke_accelerators(technology)}]
    if node_pool:
        expressions.append({'key': NODE_POOL_LABEL, 'operator': 'In', 'values': [node_pool]})
    return {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': [{'matchExpressions': expressions}]}}}


def _container(pod_spec, name, where):
    for container in (pod_spec.get('initContainers') or []) + (pod_spec.get('containers') or []):
        if container.get('name') == name:
            return container
    raise InputError('%s: the vendor manifest has no container %s (manifests/SOURCES.md: re-vendor or update render.py)' % (where, name))


def gke_daemonsets(technology, node_pool=None, plugin_image=None):
    """The NCCL plugin installer DaemonSet of the technology and the NRI device injector (Google's GKE GPUDirect-TCPX/TCPXO guide: both
    TCPX and TCPXO install it), restricted to the technology's GPU nodes (and ``node_pool``). The
    installer runs the catalog's GKE plugin image (``plugin_image`` overrides it)."""
    tech = _technology(technology, ('TCPXO', 'TCPX'))
    stack = gke_stack(tech)
    installer = load_manifest(INSTALLER_MANIFESTS[tech])[0]
    image = check_image(plugin_image, 'plugin_image') if plugin_image else version_pair(tech, platform=GKE).plugin_image
    _container(installer['spec']['template']['spec'], stack.installer.name, INSTALLER_MANIFESTS[tech])['image'] = image
    nri = load_manifest(NRI_MANIFEST)[0]
    for daemonset in (installer, nri):
        daemonset['spec']['template']['spec']['affinity'] = _gpu_affinity(tech, node_pool)
    if (installer['metadata']['name'], nri['metadata']['name']) != (stack.installer.name, NRI_DEVICE_INJECTOR.name):
        raise InputError('manifests: the vendored DaemonSets are not named as the catalog names them')
    return [installer, nri]


def rdma_installer_daemonset(node_pool=None, machine_type=None):
    """The vendor's RDMA NCCL / gIB installer DaemonSet (gpudirect-rdma/nccl-rdma-installer.yaml) for the GKE GPUDirect RDMA guide's
    manual multi-network pools, restricted to the RDMA GPU nodes (``machine_type``'s accelerator, else both
    A3 Ultra's and A4's, as the vendor file has them) and to ``node_pool``. Its images stay the vendor's: the
    catalog pins no gIB installer version (the pools Google's GKE GPUDirect RDMA guide creates get the libraries from GKE's automated
    installer instead)."""
    installer = load_manifest(INSTALLER_MANIFESTS[RDMA])[0]
    if installer['metadata']['name'] != GKE_RDMA_INSTALLER.name:
        raise InputError('manifests: the vendored RDMA installer is not named as the catalog names it')
    accelerators = [_rdma_family(machine_type).gke_accelerator] if machine_type else gke_accelerators(RDMA)
    expressions = [{'key': ACCELERATOR_LABEL, 'operator': 'In', 'values': accelerators}]
    if node_pool:
        expressions.append({'key': NODE_POOL_LABEL, 'operator': 'In', 'values': [node_pool]})
    installer['spec']['template']['spec']['affinity'] = {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {
        'nodeSelectorTerms': [{'matchExpressions': expressions}]}}}
    return installer


# ---------------------------------------------------------------------------------------------
# RDMA (Google's GKE GPUDirect RDMA guide): the ComputeClass of the Autopilot / node auto-provisioning path
# ---------------------------------------------------------------------------------------------

COMPUTE_CLASS_PRIORITY_KEYS = ('machine_type', 'by_family', 'reservation', 'reservation_project', 'reservation_block',
                               'reservation_zones', 'spot', 'gpu_driver_version')
COMPUTE_CLASS_DRIVER_VERSIONS = ('default', 'latest')
_DNS_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')


def rdma_compute_class(name, priorities):
    """The GKE GPUDirect RDMA guide's ComputeClass (``cloud.google.com/v1``): DRANET networking, node pool auto-creation, and per
    priority the GPU type and count, the machine type (or with ``by_family`` the machine family), an optional
    specific reservation (``reservation`` with ``reservation_zones``; ``reservation_project`` and
    ``reservation_block`` optional), ``spot``, then ``acceleratorNetworkProfile: auto`` and ``gpuDirect: rdma``.
    ``priorities``: a list of dicts with the keys of COMPUTE_CLASS_PRIORITY_KEYS, most preferred first."""
    if not name or not _DNS_LABEL.match(str(name)):
        raise InputError('compute_class: %r is not a valid ComputeClass name; use lower-case letters, digits and -, at most 63' % (name,))
    if not priorities:
        raise InputError('compute_class priorities: give at least one priority (machine_type a3-ultragpu-8g or a4-highgpu-8g)')
    rendered = [_compute_class_priority(index, item) for index, item in enumerate(priorities)]
    obj = {'apiVersion': GKE_RDMA['compute_class_api_version'], 'kind': 'ComputeClass', 'metadata': {'name': str(name)},
           'spec': {'nodePoolConfig': {'dra': {'networking': {'enabled': True}}}, 'priorities': rendered,
                    'nodePoolAutoCreation': {'enabled': True}}}
    check_rdma_compute_class(obj)
    return obj


def _compute_class_priority(index, item):
    where = 'compute_class priorities[%d]' % index
    if not isinstance(item, dict):
        raise InputError('%s: give a dict with machine_type (and reservation, spot, ...)' % where)
    unknown = sorted(set(item) - set(COMPUTE_CLASS_PRIORITY_KEYS))
    if unknown:
        raise InputError('%s: unknown key(s) %s; use %s' % (where, ', '.join(unknown), ', '.join(COMPUTE_CLASS_PRIORITY_KEYS)))
    family = _rdma_family(item.get('machine_type'), where + '.machine_type')
    priority = {'gpu': {'type': family.gke_accelerator, 'count': family.gpu_count}}
    driver = item.get('gpu_driver_version')
    if driver:
        if str(driver).lower() not in COMPUTE_CLASS_DRIVER_VERSIONS:
            raise InputError('%s.gpu_driver_version: %r; ComputeClass takes %s' % (where, driver, ', '.join(COMPUTE_CLASS_DRIVER_VERSIONS)))
        priority['gpu']['driverVersion'] = str(driver).lower()
    if item.get('by_family'):
        priority['machineFamily'] = family.machine_type.split('-')[0]   # a3 / a4; the GPU type picks the machine
    else:
        priority['machineType'] = family.machine_type
    reservation, zones = item.get('reservation'), list(item.get('reservation_zones') or [])
    for key in ('reservation_zones', 'reservation_project', 'reservation_block'):
        if item.get(key) and not reservation:
            raise InputError('%s.%s: belongs to a reservation; give reservation too (Google\'s GKE GPUDirect RDMA guide: '
                             'reservations.specific[].name)' % (where, key))
    if reservation:
        if item.get('spot'):
            raise InputError('%s.spot: spot nodes do not consume a reservation; drop spot or the reservation' % where)
        if not zones:
            raise InputError('%s.reservation_zones: give the zone(s) of reservation %s (Google\'s GKE GPUDirect RDMA guide: '
                             'RESERVATION_ZONE)' % (where, reservation))
        specific = {'name': str(reservation), 'zones': zones}
        if item.get('reservation_project'):
            specific['project'] = str(item['reservation_project'])
        if item.get('reservation_block'):
            specific['reservationBlock'] = {'name': str(item['reservation_block'])}
        priority['reservations'] = {'affinity': GKE_COMPUTE_CLASS_RESERVATION_AFFINITY, 'specific': [specific]}
    if item.get('spot'):
        priority['spot'] = True
    priority.update(GKE_RDMA['compute_class_priority'])   # acceleratorNetworkProfile: auto, gpuDirect: rdma
    return priority


def check_rdma_compute_class(obj):
    """Refuse a ComputeClass that would not give the GKE GPUDirect RDMA guide's RDMA nodes: DRANET networking enabled, node pool
    auto-creation, and every priority an A3 Ultra / A4 machine with ``gpuDirect: rdma`` and
    ``acceleratorNetworkProfile: auto``. Returns ``obj``."""
    if not isinstance(obj, dict) or obj.get('kind') != 'ComputeClass' or obj.get('apiVersion') != GKE_RDMA['compute_class_api_version']:
        raise InputError('compute_class: give a %s ComputeClass' % GKE_RDMA['compute_class_api_version'])
    spec = obj.get('spec') or {}
    name = (obj.get('metadata') or {}).get('name')
    if ((spec.get('nodePoolConfig') or {}).get('dra') or {}).get('networking', {}).get('enabled') is not True:
        raise InputError('compute_class %s: spec.nodePoolConfig.dra.networking.enabled must be true (Google\'s GKE GPUDirect RDMA guide: DRANET gives the Pods '
                         'their RDMA NICs)' % name)
    if (spec.get('nodePoolAutoCreation') or {}).get('enabled') is not True:
        raise InputError('compute_class %s: spec.nodePoolAutoCreation.enabled must be true (Google\'s GKE GPUDirect RDMA guide: GKE creates the RDMA node '
                         'pools for the class)' % name)
    wanted = dict(GKE_RDMA['compute_class_priority'])
    if not spec.get('priorities'):
        raise InputError('compute_class %s: spec.priorities is empty; give an A3 Ultra or A4 priority' % name)
    for index, priority in enumerate(spec['priorities']):
        where = 'compute_class %s: spec.priorities[%d]' % (name, index)
        for key, value in wanted.items():
            if priority.get(key) != value:
                raise InputError('%s.%s is %r; Google\'s GKE GPUDirect RDMA guide needs %s: %s (the automated RDMA NCCL installer and automated networking)'
                                 % (where, key, priority.get(key), key, value))
        gpu = (priority.get('gpu') or {}).get('type')
        machine = priority.get('machineType') or ''
        families = [f for f in families_for_technology(RDMA) if GKE in f.platforms]
        if not any(gpu == f.gke_accelerator and machine in ('', f.machine_type) for f in families):
            raise InputError('%s: gpu.type %r with machineType %r is not an A3 Ultra or A4 machine; use %s' % (
                where, gpu, machine, ', '.join('%s with %s' % (f.gke_accelerator, f.machine_type) for f in families)))
    return obj


# ---------------------------------------------------------------------------------------------
# RDMA (Google's GKE GPUDirect RDMA guide): the ResourceClaimTemplate all-mrdma
# ---------------------------------------------------------------------------------------------

def rdma_claim_template(namespace=None):
    """ResourceClaimTemplate ``all-mrdma`` (resource.k8s.io/v1): every device of class mrdma.google.com."""
    return _namespaced({
        'apiVersion': GKE_RDMA['resource_claim_api_version'], 'kind': 'ResourceClaimTemplate',
        'metadata': {'name': GKE_RDMA['resource_claim_template']},
        'spec': {'spec': {'devices': {'requests': [{'name': GKE_RDMA['resource_claim_request'], 'exactly': {
            'deviceClassName': GKE_RDMA['device_class'], 'allocationMode': GKE_RDMA['allocation_mode']}}]}}},
    }, namespace)


# ---------------------------------------------------------------------------------------------
# The guides' NCCL test workloads and their commands
# ---------------------------------------------------------------------------------------------

def nccl_test_objects(technology, namespace=None, compute_class=None, multi_network=False):
    """The guide's NCCL test workload (two Services, two Pods; TCPX also the ConfigMap of its scripts), with
    the catalog's images (TCPX / TCPXO: the GKE version pair; RDMA: the GKE GPUDirect RDMA guide's diagnostic image).
    ``compute_class`` (RDMA): the Pods get the node selector ``cloud.google.com/compute-class: NAME``, the
    lines Google's GKE GPUDirect RDMA guide comments out for a custom ComputeClass.  ``multi_network`` (RDMA): the manual variant's
    test Pods (MULTI_NETWORK_TEST_MANIFEST), attached to rdma-0..7 by annotation, with no claim."""
    tech = _technology(technology, ('TCPXO', 'TCPX', RDMA))
    if compute_class and tech != RDMA:
        raise InputError('compute_class: Google\'s GKE GPUDirect RDMA guide\'s ComputeClass path is for RDMA; GPUDirect-%s runs on Standard node pools' % tech)
    if multi_network and (tech != RDMA or compute_class):
        raise InputError('multi_network: the manual multi-network test is Google\'s GKE GPUDirect RDMA guide\'s RDMA variant on a node pool with additional '
                         'networks; it takes no compute_class and no other technology (got %s%s)'
                         % (tech, ', compute_class %s' % compute_class if compute_class else ''))
    paths = (MULTI_NETWORK_TEST_MANIFEST,) if multi_network else TEST_MANIFESTS[tech]
    objects = [obj for path in paths for obj in load_manifest(path)]
    for obj in objects:
        _namespaced(obj, namespace)
        if obj['kind'] != 'Pod':
            continue
        spec = obj['spec']
        if compute_class:
            spec['nodeSelector'] = {GKE_RDMA['compute_class_node_selector']: str(compute_class)}
        if tech == RDMA:
            test = _container(spec, 'test', paths[0])
            test['image'] = GKE_RDMA['test_image']
            if multi_network:
                # The vendor file writes the container's `resources:` key twice (requests cpu 150m, then limits
                # nvidia.com/gpu 8); a YAML loader keeps the last one only.  Both are meant: the cpu request is
                # the GKE GPUDirect RDMA guide's own for the same container (its DRANET test Pod has both in one key).
                test['resources'] = dict(test.get('resources') or {}, requests=_seed_001_test_requests())
        else:
            stack, pair = gke_stack(tech), version_pair(tech, platform=GKE)
            _container(spec, stack.daemon_container, TEST_MANIFESTS[tech][-1])['image'] = pair.rxdm_image
            test = _container(spec, 'nccl-test', TEST_MANIFESTS[tech][-1])
            test['image'] = pair.plugin_image
        # The collection's own run: NCCL names the network it used (nccl/command.py DEBUG_ENV), which the verdict requires
        # (RDMA too: its network line is gIB's "Using network gIB"), and each host's plugin and NCCL version.
        names = {item.get('name') for item in test.get('env') or []}
        test['env'] = list(test.get('env') or []) + [{'name': name, 'value': value} for name, value in DEBUG_ENV.items() if name not in names]
    return objects


def _seed_001_test_requests():
    pod = next(obj for obj in load_manifest(TEST_MANIFESTS[RDMA][0]) if obj['kind'] == 'Pod')
    return _container(pod['spec'], 'test', TEST_MANIFESTS[RDMA][0])['resources']['requests']


def nccl_test_exec(technology):
    """Where and what the seed runs for its NCCL test: ``{pod, container, command}`` for k8s_exec (the
    command as one string; k8s_exec splits it like a shell, without one)."""
    tech = _technology(technology, ('TCPXO', 'TCPX', RDMA))
    if tech == RDMA:
        # Google's GKE GPUDirect RDMA guide: kubectl exec nccl-test-host-1 -it -- /usr/local/gib/scripts/run_nccl_tests.sh ...; its Pods have one container.
        return {'pod': 'nccl-test-host-1', 'container': 'test', 'command': GKE_RDMA['test_command']}
    words = shlex.split(gke_stack(tech).test_command)
    split = words.index('--')
    options = words[2:split]
    container = next(w.split('=', 1)[1] for w in options if w.startswith('--container='))
    pod = [w for w in options if not w.startswith('-')][0]
    return {'pod': pod, 'container': container, 'command': ' '.join(shlex.quote(w) for w in words[split + 1:])}


# The diagnosis of a GPUDirect node pool (issue 26): the guide's two test Pods become one per GPU node, each pinned to
# its node and reachable by its own headless Service, so that any two nodes run the guide's test as a pair.
DIAGNOSIS_NIC_ENV = 'IFNAME'
# GPUDirect RDMA (A3 Ultra, A4): a per-rail run restricts NCCL to one HCA with NCCL's own variable NCCL_IB_HCA (NCCL's
# environment variables documentation: "NCCL_IB_HCA ... specifies which RDMA interfaces to use"), handed to the guide's
# run_nccl_tests.sh in its environment. The guide's image (nccl-plugin-gib-diagnostic) has no ib_write_bw that any
# public source names, so GKE's per-rail runs are NCCL runs, not ib_write_bw (as on OpenShift).
RDMA_HCA_VARIABLE = 'NCCL_IB_HCA'


def nic_list_variable(technology):
    """The GPUDirect plugin's NIC list in the guide's NCCL configuration (NCCL_FASTRAK_IFNAME for GPUDirect-TCPXO,
    NCCL_GPUDIRECTTCPX_SOCKET_IFNAME for GPUDirect-TCPX): the catalog's variable, other than NCCL_SOCKET_IFNAME, whose
    name ends in IFNAME; NCCL_IB_HCA for GPUDirect RDMA (RDMA_HCA_VARIABLE)."""
    tech = _technology(technology, ('TCPXO', 'TCPX', RDMA))
    if tech == RDMA:
        return RDMA_HCA_VARIABLE
    stack = gke_stack(tech)
    return next(name for name, _value in stack.nccl_env if name.endswith(DIAGNOSIS_NIC_ENV) and name != 'NCCL_SOCKET_IFNAME')


def nccl_diagnosis_objects(technology, nodes, namespace=None, compute_class=None, multi_network=False):
    """``{'objects', 'hosts'}``: the guide's test workload with one test Pod per node of ``nodes`` (Pod
    ``nccl-test-host-N``, its headless Service ``nccl-host-N``, hostname ``hostN``, as the guide names its two, pinned
    to the node by ``kubernetes.io/hostname``), and ``hosts`` ``{node: {'pod', 'service', 'hostname'}}`` (``hostname``: the
    host name NCCL's log lines in that Pod start with).

    GPUDirect-TCPX: the ConfigMap's run-nccl.sh hands NCCL the NIC list ``-x NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=eth1,...``;
    here it takes the variable from its environment when set (a per-NIC run), else the guide's list.  GPUDirect RDMA:
    the GKE GPUDirect RDMA guide's test Pods (``compute_class``, ``multi_network`` as nccl_test_objects)."""
    tech = _technology(technology, ('TCPXO', 'TCPX', RDMA))
    if not nodes or len(set(nodes)) != len(nodes):
        raise InputError('nodes: give the GPU nodes to diagnose, each once (got %r)' % (nodes,))
    guide = nccl_test_objects(tech, namespace, compute_class=compute_class, multi_network=multi_network)
    service = next(obj for obj in guide if obj['kind'] == 'Service')
    pod = next(obj for obj in guide if obj['kind'] == 'Pod')
    objects, hosts = [], {}
    for obj in guide:
        if obj['kind'] == 'ConfigMap':
            variable = nic_list_variable(tech)
            for key, text in obj.get('data', {}).items():
                obj['data'][key] = re.sub(r'-x %s=([\w,]+)' % variable, lambda m: '-x %s="${%s:-%s}"' % (variable, variable, m.group(1)), text)
            objects.append(obj)
    for number, node in enumerate(nodes, 1):
        name = 'nccl-host-%d' % number
        mine = copy.deepcopy(service)
        mine['metadata']['name'] = name
        mine['spec']['selector'] = {'name': name}
        host = copy.deepcopy(pod)
        host['metadata']['name'] = 'nccl-test-host-%d' % number
        host['metadata']['labels']['name'] = name
        spec = host['spec']
        if 'hostname' in spec:
            spec['hostname'], spec['subdomain'] = 'host%d' % number, name
        spec['nodeSelector'] = dict(spec.get('nodeSelector') or {}, **{'kubernetes.io/hostname': str(node)})
        objects += [mine, host]
        # The host name NCCL prints before its log lines in that Pod (the kubelet's: the node's with hostNetwork, else
        # spec.hostname, else the Pod's name), so that the run's evidence is kept per node.
        hostname = str(node) if spec.get('hostNetwork') else spec.get('hostname') or host['metadata']['name']
        hosts[str(node)] = {'pod': host['metadata']['name'], 'service': name, 'hostname': hostname}
    return {'objects': objects, 'hosts': hosts}


def nccl_diagnosis_exec(technology, services, nic=None):
    """``{'container', 'command'}`` (command: a list) of one diagnosis run between the test Pods of ``services`` (their
    Services' names, the first the Pod it runs in): the guide's script with those hosts; with ``nic``, NCCL restricted
    to that data NIC through the plugin's NIC list in the script's environment (``env NCCL_FASTRAK_IFNAME=eth3 ...``);
    GPUDirect RDMA: ``nic`` is an HCA (``mlx5_3``), handed to NCCL as ``env NCCL_IB_HCA=mlx5_3 ...``."""
    tech = _technology(technology, ('TCPXO', 'TCPX', RDMA))
    guide = nccl_test_exec(tech)
    words = shlex.split(guide['command'])
    script = [w for w in words if not w.startswith('nccl-host-')]
    if tech == RDMA:
        if nic is not None and not re.match(r'^[A-Za-z0-9_.:-]+$', str(nic)):
            raise InputError('nic: %r is not an RDMA device name (for example mlx5_0)' % (nic,))
    else:
        data_nics = gke_family(tech).data_interface_names
        if nic is not None and nic not in data_nics:
            raise InputError('nic: %r is not a data NIC of GPUDirect-%s (%s)' % (nic, tech, ', '.join(data_nics)))
    prefix = ['env', '%s=%s' % (nic_list_variable(tech), nic)] if nic else []
    return {'container': guide['container'], 'command': prefix + script + [str(s) for s in services]}


def nccl_machine_type(technology):
    """The machine type whose NCCL reference judges the test (A3 Mega, A3 High; RDMA: A3 Ultra, whose curve is its own)."""
    tech = check_technology(technology)
    if tech == RDMA:
        return next(name for name, f in FAMILIES.items() if f.technology == RDMA and any(not r.derived_from for r in f.nccl_references))
    return gke_family(tech).machine_type
