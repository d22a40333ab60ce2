# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

# GKE facts for GPUDirect node pools: TCPXO / TCPX (Google's GKE GPUDirect-TCPX/TCPXO guide) and RDMA (Google's GKE GPUDirect RDMA guide): networks,
# cluster and node-pool flags, DaemonSets, pod annotations, NCCL environments, version floors.
# The GKE modules (gke_gpudirect_cluster, gke_gpudirect_node_pool) use them; they are checked against
# the guides by tests/unit/plugins/module_utils/catalog/test_gke.py.
#

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional, Tuple

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.families import (
    DEFAULT_NODE_COUNT, FAMILIES, GKE, RDMA, TCPX, TCPXO, check_technology, families_for_technology, get_family,
)
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.host_stacks import DMABUF_DEVICE, TCPX_REPOSITORY, TCPXO_REPOSITORY, GIB_REPOSITORY
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

# ---------------------------------------------------------------------------------------------
# GKE facts for TCPXO / TCPX (Google's GKE GPUDirect-TCPX/TCPXO guide)
# ---------------------------------------------------------------------------------------------

GKE_NETWORK_API_VERSION = 'networking.gke.io/v1'
# Google's GKE GPUDirect-TCPX/TCPXO guide "Crea el entorno de GKE": Network (type Device) + GKENetworkParamSet (deviceMode NetDevice).
GKE_NETWORK_TYPE = 'Device'
GKE_NETWORK_DEVICE_MODE = 'NetDevice'
GKE_NETWORK_NAME = 'vpc{n}'
GKE_VPC_LAYOUT = MappingProxyType({
    'network': '{prefix}-net-{n}',
    'subnet': '{prefix}-sub-{n}',
    'firewall_rule': '{prefix}-internal-{n}',
    'subnet_mode': 'custom',
    'rules': 'tcp:0-65535,udp:0-65535,icmp',
    'subnet_range_example': '192.168.{n}.0/24',
    'source_range_example': '192.168.0.0/16',
})
# Google's GKE GPUDirect-TCPX/TCPXO guide "Create VPCs and subnets" (the guide's prefix is PROJECT_ID; the node pool example uses PREFIX).

GKE_CLUSTER_FLAGS = ('--enable-dataplane-v2', '--enable-ip-alias', '--enable-multi-networking', '--no-enable-autoupgrade')
# Google's GKE GPUDirect-TCPX/TCPXO guide cluster create (both tabs). Multi-networking can only be enabled at cluster creation:
GKE_MULTI_NETWORKING_AT_CREATION = ("an existing cluster cannot be updated to use multi-networking (Google's GKE GPUDirect-TCPX/TCPXO "
                                    'guide, "Limitations": you cannot update an existing cluster to use multi-networking)')
GKE_NODE_POOL_FLAGS = ('--enable-gvnic', '--no-enable-autoupgrade')
GKE_GPU_DRIVER_VERSION = 'LATEST'
# Google's GKE GPUDirect-TCPX/TCPXO guide ``gpu-driver-version=LATEST``; requirements: NVIDIA driver 535 or later.
# Google's GKE GPUDirect-TCPX/TCPXO guide node pool create, optional: `--host-maintenance-interval=PERIODIC` (with `gcloud beta`); the Container API's
# NodeConfig.hostMaintenancePolicy.maintenanceInterval (v1beta1 only; enum AS_NEEDED, PERIODIC).
GKE_HOST_MAINTENANCE_INTERVALS = ('AS_NEEDED', 'PERIODIC')
GKE_NO_FAST_SOCKET = "no NCCL FastSocket (Google's GKE GPUDirect-TCPX/TCPXO guide, \"Limitations\": you cannot use NCCL FastSocket)"
GKE_REQUIREMENTS = (
    'Dataplane V2 (--enable-dataplane-v2)',
    'Container-Optimized OS node image (no Ubuntu / Windows)',
    'Standard clusters only (no Autopilot)',
    'no multi-instance GPU, GPU time-sharing or NVIDIA MPS',
    GKE_NO_FAST_SOCKET,
    'one Pod per node uses all GPUs and all secondary NICs',
)
# Google's GKE GPUDirect-TCPX/TCPXO guide "Requirements" and "Limitations".

GKE_LIB_HOST_DIR = '/home/kubernetes/bin/nvidia/lib64'
# Google's GKE GPUDirect-TCPX/TCPXO guide: the installers store NCCL and the plugin there; GKE mounts it at /usr/local/nvidia/lib64.
GKE_LIB_CONTAINER_DIR = '/usr/local/nvidia/lib64'
GKE_SHARED_MEMORY = ('shared-memory', '/dev/shm', 'Memory')
# Name, mount path and emptyDir medium of the Pods' /dev/shm: the GKE GPUDirect RDMA guide's test Pods (sizeLimit in
# GKE_RDMA['shared_memory']) and the TCPXO test Pods Google's GKE GPUDirect-TCPX/TCPXO guide applies (nccl-test-latest.yaml) mount a
# memory-backed emptyDir named so; NCCL's shared-memory transport needs more than the default 64 MiB.
GKE_MANIFEST_BASE = 'https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/master'


@dataclass(frozen=True)
class DaemonSetRef:
    """A vendor DaemonSet that Google's GKE GPUDirect-TCPX/TCPXO guide applies from GitHub, and how the seed checks its pods."""

    name: str
    url: str
    namespace: str
    label_selector: str


NRI_DEVICE_INJECTOR = DaemonSetRef(
    'device-injector', GKE_MANIFEST_BASE + '/nri_device_injector/nri-device-injector.yaml', 'kube-system', 'name=device-injector')
# Google's GKE GPUDirect-TCPX/TCPXO guide "Implementa el complemento del inyector de dispositivos NRI" (same for TCPX and TCPXO).


@dataclass(frozen=True)
class GkeStack:
    """GKE side of TCPXO / TCPX (Google's GKE GPUDirect-TCPX/TCPXO guide). ``volumes``: (name, hostPath or None for emptyDir).
    ``*_mounts``: (volume name, mountPath, readOnly)."""

    technology: str
    min_minor: str
    version_floors: Tuple[Tuple[str, str], ...]
    cluster_create_beta: bool
    node_pool_create_beta: bool
    node_pool_optional_flags: Tuple[str, ...]
    installer: DaemonSetRef
    test_manifests: Tuple[str, ...]
    test_command: str
    daemon_container: str
    daemon_devices: Tuple[str, ...]
    daemon_command: Tuple[str, ...]
    daemon_args: Tuple[str, ...]
    daemon_capabilities: Tuple[str, ...]
    daemon_mounts: Tuple[Tuple[str, str, bool], ...]
    daemon_env: Tuple[Tuple[str, str], ...]
    volumes: Tuple[Tuple[str, Optional[str]], ...]
    gpu_container_env: Tuple[Tuple[str, str], ...]
    gpu_container_mounts: Tuple[Tuple[str, str, bool], ...]
    nccl_env: Tuple[Tuple[str, str], ...]
    nccl_debug_env: Tuple[Tuple[str, str], ...]
    nccl_env_profile: Optional[Tuple[str, str, str]]
    seed_daemon_images: Tuple[str, ...]
    default_interface: str = 'eth0'
    # (env variable, volume): a GPU container whose env sets the variable to a path gets the volume mounted there
    # instead of at its gpu_container_mounts path.
    gpu_socket_prefix: Optional[Tuple[str, str]] = None


GKE_STACKS = MappingProxyType({
    TCPXO: GkeStack(
        technology=TCPXO,
        # "Requirements"
        min_minor='1.28',
        version_floors=(('1.28', '1.28.9-gke.1250000'), ('1.29', '1.29.4-gke.1542000'), ('1.30', '1.30.4-gke.1129000')),
        cluster_create_beta=True,
        node_pool_create_beta=True,
        node_pool_optional_flags=('--placement-policy=POLICY_NAME', '--reservation-affinity=specific',
                                  '--reservation=RESERVATION_NAME', '--host-maintenance-interval=PERIODIC'),
        # "Instala el objeto binario de GPUDirect y configura NCCL"
        installer=DaemonSetRef('nccl-tcpxo-installer', GKE_MANIFEST_BASE + '/gpudirect-tcpxo/nccl-tcpxo-installer.yaml',
                               'kube-system', 'name=nccl-tcpxo-installer'),
        # "Implementa una carga de trabajo de prueba"
        test_manifests=(GKE_MANIFEST_BASE + '/gpudirect-tcpxo/nccl-test-latest.yaml',),
        test_command='kubectl exec --stdin --tty --container=nccl-test nccl-test-host-1 -- /scripts/allgather.sh nccl-host-1 nccl-host-2',
        # "Add GPUDirect to your manifests"
        daemon_container='tcpxo-daemon',
        daemon_devices=tuple('/dev/nvidia%d' % n for n in range(8)) + ('/dev/nvidiactl', '/dev/nvidia-uvm', DMABUF_DEVICE),
        daemon_command=('/bin/sh', '-c'),
        daemon_args=('set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n'
                     '/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= --alsologtostderr\n',),
        daemon_capabilities=('NET_ADMIN', 'NET_BIND_SERVICE'),
        daemon_mounts=(('libraries', '/usr/local/nvidia', False), ('sys', '/hostsysfs', False),
                       ('proc-sys', '/hostprocsysfs', False)),
        daemon_env=(('LD_LIBRARY_PATH', '/usr/local/nvidia/lib64'),),
        # The guide's snippet says /home/kubernetes/bin/nvidia/lib64 but its full Pod spec says
        # /home/kubernetes/bin/nvidia; mounted at /usr/local/nvidia with LD_LIBRARY_PATH
        # /usr/local/nvidia/lib64 only the latter is consistent, so it is the catalog's value.
        volumes=(('libraries', '/home/kubernetes/bin/nvidia'), ('sys', '/sys'), ('proc-sys', '/proc/sys'),
                 ('aperture-devices', '/dev/aperture_devices')),
        gpu_container_env=(('LD_LIBRARY_PATH', '/usr/local/nvidia/lib64'),
                           ('NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY', '/dev/aperture_devices')),
        gpu_container_mounts=(('aperture-devices', '/dev/aperture_devices', False),),
        # "Usa la configuración de NCCL necesaria para mejorar el rendimiento" -- GPUDirect-TCPXO, "## required"
        nccl_env=(
            ('LD_LIBRARY_PATH', '${LD_LIBRARY_PATH}:/usr/local/nvidia/lib64'),
            ('NCCL_FASTRAK_CTRL_DEV', 'eth0'),
            ('NCCL_FASTRAK_IFNAME', 'eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8'),
            ('NCCL_SOCKET_IFNAME', 'eth0'),
            ('NCCL_CROSS_NIC', '0'),
            ('NCCL_ALGO', 'Ring,Tree'),
            ('NCCL_PROTO', 'Simple'),
            ('NCCL_MIN_NCHANNELS', '4'),
            ('NCCL_TUNER_PLUGIN', 'libnccl-tuner.so'),
            ('NCCL_TUNER_CONFIG_PATH', '/usr/local/nvidia/lib64/a3plus_tuner_config.textproto'),
            ('NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE', '/usr/local/nvidia/lib64/a3plus_guest_config.textproto'),
            ('NCCL_DYNAMIC_CHUNK_SIZE', '524288'),
            ('NCCL_P2P_NET_CHUNKSIZE', '524288'),
            ('NCCL_P2P_PCI_CHUNKSIZE', '524288'),
            ('NCCL_P2P_NVL_CHUNKSIZE', '1048576'),
            ('NCCL_FASTRAK_NUM_FLOWS', '2'),
            ('NCCL_FASTRAK_USE_SNAP', '1'),
            ('NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS', '600000'),
            ('NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL', '0'),
            ('NCCL_BUFFSIZE', '8388608'),
            ('CUDA_VISIBLE_DEVICES', '0,1,2,3,4,5,6,7'),
            ('NCCL_NET_GDR_LEVEL', 'PIX'),
            ('NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING', '0'),
            ('NCCL_FASTRAK_USE_LLCM', '1'),
            ('NCCL_NVLS_ENABLE', '0'),
        ),
        # "## recommended, to log NCCL errors"
        nccl_debug_env=(('NCCL_DEBUG', 'WARN'), ('NCCL_DEBUG_SUBSYS', 'INIT,NET,ENV,COLL,GRAPH')),
        # Optional all-at-once: env NCCL_LIB_DIR="/usr/local/nvidia/lib64" + source the profile.
        nccl_env_profile=('NCCL_LIB_DIR', '/usr/local/nvidia/lib64', 'source ${NCCL_LIB_DIR}/nccl-env-profile.sh'),
        seed_daemon_images=(TCPXO_REPOSITORY + '/tcpgpudmarxd-dev:v1.0.11',),
    ),
    TCPX: GkeStack(
        technology=TCPX,
        min_minor='1.27',
        version_floors=(('1.27', '1.27.7-gke.1121000'), ('1.28', '1.28.8-gke.1095000'),
                        ('1.29', '1.29.3-gke.1093000'), ('1.30', '1.30.2-gke.1023000')),
        cluster_create_beta=False,
        node_pool_create_beta=False,
        node_pool_optional_flags=(),
        installer=DaemonSetRef('nccl-tcpx-installer', GKE_MANIFEST_BASE + '/gpudirect-tcpx/nccl-tcpx-installer.yaml',
                               'kube-system', 'name=nccl-tcpx-installer'),
        test_manifests=(GKE_MANIFEST_BASE + '/gpudirect-tcpx/nccl-config.yaml',
                        GKE_MANIFEST_BASE + '/gpudirect-tcpx/nccl-test-latest.yaml'),
        test_command='kubectl exec --stdin --tty --container=nccl-test nccl-test-host-1 -- /configs/allgather.sh nccl-host-1 nccl-host-2',
        daemon_container='tcpx-daemon',
        daemon_devices=tuple('/dev/nvidia%d' % n for n in range(8)) + ('/dev/nvidiactl', '/dev/nvidia-uvm'),
        daemon_command=('/tcpgpudmarxd/build/app/tcpgpudmarxd', '--gpu_nic_preset', 'a3vm', '--gpu_shmem_type', 'fd',
                        '--uds_path', '/run/tcpx', '--setup_param', '--verbose 128 2 0 '),
        daemon_args=(),
        daemon_capabilities=('NET_ADMIN',),
        daemon_mounts=(('libraries', '/usr/local/nvidia/lib64', True), ('tcpx-socket', '/run/tcpx', False),
                       ('sys', '/hostsysfs', False), ('proc-sys', '/hostprocsysfs', False)),
        daemon_env=(('LD_LIBRARY_PATH', '/usr/local/nvidia/lib64'),),
        volumes=(('libraries', '/home/kubernetes/bin/nvidia/lib64'), ('tcpx-socket', None), ('sys', '/sys'),
                 ('proc-sys', '/proc/sys')),
        gpu_container_env=(('LD_LIBRARY_PATH', '/usr/local/nvidia/lib64'),),
        gpu_container_mounts=(('tcpx-socket', '/tmp', False), ('libraries', '/usr/local/nvidia/lib64', True)),
        # "Nota: La ruta de acceso predeterminada de tcpx-socket es /tmp ... Si configuras la variable de entorno
        # NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX en un valor distinto de /tmp, GKE activa el volumen tcpx-socket en ese mountPath."
        gpu_socket_prefix=('NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX', 'tcpx-socket'),
        # "Usa la configuración de NCCL necesaria ..." -- GPUDirect-TCPX, "## required". The seed writes
        # some values shell-quoted (NAME=\"value\"); the catalog holds the unquoted value.
        nccl_env=(
            ('LD_LIBRARY_PATH', '${LD_LIBRARY_PATH}:/usr/local/tcpx/lib64'),
            ('NCCL_SOCKET_IFNAME', 'eth0'),
            ('NCCL_ALGO', 'Ring'),
            ('NCCL_PROTO', 'Simple'),
            ('NCCL_CROSS_NIC', '0'),
            ('NCCL_NET_GDR_LEVEL', 'PIX'),
            ('NCCL_P2P_PXN_LEVEL', '0'),
            ('NCCL_GPUDIRECTTCPX_SOCKET_IFNAME', 'eth1,eth2,eth3,eth4'),
            ('NCCL_GPUDIRECTTCPX_CTRL_DEV', 'eth0'),
            ('NCCL_DYNAMIC_CHUNK_SIZE', '524288'),
            ('NCCL_P2P_NET_CHUNKSIZE', '524288'),
            ('NCCL_P2P_PCI_CHUNKSIZE', '524288'),
            ('NCCL_P2P_NVL_CHUNKSIZE', '1048576'),
            ('NCCL_BUFFSIZE', '4194304'),
            ('NCCL_NSOCKS_PERTHREAD', '4'),
            ('NCCL_SOCKET_NTHREADS', '1'),
            ('NCCL_GPUDIRECTTCPX_TX_BINDINGS', 'eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177;eth4:60-73,164-177'),
            ('NCCL_GPUDIRECTTCPX_RX_BINDINGS', 'eth1:22-35,126-139;eth2:22-35,126-139;eth3:74-87,178-191;eth4:74-87,178-191'),
            ('NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS', '500000'),
            ('NCCL_NVLS_ENABLE', '0'),
        ),
        nccl_debug_env=(),
        nccl_env_profile=None,
        # The guide's snippet and its full Pod spec pin different tags.
        seed_daemon_images=(TCPX_REPOSITORY + '/tcpgpudmarxd-dev:v2.0.9', TCPX_REPOSITORY + '/tcpgpudmarxd-dev:v2.0.11'),
    ),
})


def gke_stack(technology):
    """Return the :class:`GkeStack` for ``TCPXO`` or ``TCPX`` (RDMA: :data:`GKE_RDMA`)."""
    tech = check_technology(technology)
    if tech not in GKE_STACKS:
        raise InputError('technology: %s on GKE is described by GKE_RDMA (Google\'s GKE GPUDirect RDMA guide), not a GkeStack; choose one of: %s'
                         % (tech, ', '.join(GKE_STACKS)))
    return GKE_STACKS[tech]


def gke_pod_annotations(technology):
    """Pod annotations for a GPUDirect workload (Google's GKE GPUDirect-TCPX/TCPXO guide "Add GPUDirect to your manifests")."""
    stack = gke_stack(technology)
    family = families_for_technology(technology)[0]
    interfaces = [{'interfaceName': stack.default_interface, 'network': 'default'}]
    interfaces.extend({'interfaceName': 'eth%d' % n, 'network': GKE_NETWORK_NAME.format(n=n)}
                      for n in range(1, family.data_nic_count + 1))
    body = ',\n'.join('  {"interfaceName":"%s","network":"%s"}' % (i['interfaceName'], i['network']) for i in interfaces)
    return {
        'devices.gke.io/container.%s' % stack.daemon_container: ''.join('- path: %s\n' % d for d in stack.daemon_devices),
        'networking.gke.io/default-interface': stack.default_interface,
        'networking.gke.io/interfaces': '[\n%s\n]\n' % body,
    }


# ---------------------------------------------------------------------------------------------
# GKE RDMA facts (Google's GKE GPUDirect RDMA guide)
# ---------------------------------------------------------------------------------------------

GKE_RDMA = MappingProxyType({
    # "利点" / "制限事項" / "始める前に"
    'min_version_standard': '1.34.8-gke.1278000',
    'min_version_autopilot': '1.36.2-gke.1368000',
    'min_gcloud_version': '550.0.0',
    'min_terraform_google_provider': '7.34.0',
    'nic': 'NVIDIA ConnectX-7 (CX7), RoCE',
    'requirements': (
        'Dataplane V2 (--enable-dataplane-v2; default on Autopilot)',
        'Container-Optimized OS node image (no Ubuntu / Windows)',
        'multi-network API and DRANET cannot both be used in one node pool',
        'quota for at least 2 VMs (16 GPUs)',
    ),
    # "インストーラと自動ネットワーキングを使用してノードプールを作成する" -- gcloud (Standard)
    'node_pool_flags': ('--accelerator-network-profile=auto',
                        '--node-labels=cloud.google.com/gke-networking-dra-driver=true',
                        '--gpudirect-strategy=rdma'),
    'reservation_block_format': 'projects/{project}/reservations/{reservation}/reservationBlocks/{block}',
    'dranet_node_label': ('cloud.google.com/gke-networking-dra-driver', 'true'),
    'accelerator_network_profile_label': ('gke.networks.io/accelerator-network-profile', 'auto'),
    # ComputeClass (Autopilot and Standard)
    'compute_class_api_version': 'cloud.google.com/v1',
    'compute_class_priority': (('acceleratorNetworkProfile', 'auto'), ('gpuDirect', 'rdma')),
    'compute_class_node_selector': 'cloud.google.com/compute-class',
    # Terraform
    'terraform_datapath_provider': 'ADVANCED_DATAPATH',
    'terraform_gpudirect_strategy': 'RDMA',
    # ResourceClaimTemplate
    'resource_claim_api_version': 'resource.k8s.io/v1',
    'resource_claim_template': 'all-mrdma',
    'resource_claim_request': 'req-mrdma',
    'device_class': 'mrdma.google.com',
    'allocation_mode': 'All',
    # "NCCL RDMA テスト ワークロードをデプロイして実行する"
    'test_image': GIB_REPOSITORY + '/nccl-plugin-gib-diagnostic:v1.1.2',
    'volumes': (('library-dir-host', '/home/kubernetes/bin/nvidia', '/usr/local/nvidia'),
                ('gib', '/home/kubernetes/bin/gib', '/usr/local/gib'),
                ('shared-memory', None, '/dev/shm')),
    'shared_memory': (('medium', 'Memory'), ('sizeLimit', '250Gi')),
    'workload_env': (('LD_LIBRARY_PATH', '/usr/local/nvidia/lib64'),),
    'nccl_env_script': 'source /usr/local/gib/scripts/set_nccl_env.sh',
    'container_entry': '/scripts/container_entry.sh shell',
    'test_command': '/usr/local/gib/scripts/run_nccl_tests.sh -t all_gather -b 1K -e 8G nccl-host-1 nccl-host-2',
})
# Facts of Google's GKE GPUDirect RDMA guide (A3 Ultra / A4 on GKE with the automated RDMA NCCL installer and managed DRANET).


# ---------------------------------------------------------------------------------------------
# NCCL environments and GKE version checks
# ---------------------------------------------------------------------------------------------


def nccl_env(technology, debug=False):
    """The NCCL environment of a GKE workload, as a new ordered dict: the GKE GPUDirect-TCPX/TCPXO guide's "## required" list
    (TCPXO / TCPX), plus "## recommended" with ``debug``; RDMA: the GKE GPUDirect RDMA guide's workload env (NCCL_* come
    from ``GKE_RDMA['nccl_env_script']``). A Compute Engine host's NCCL environment is its host
    stack's ``nccl_container.env`` (host_stacks.py).

    ``LD_LIBRARY_PATH`` values containing ``${LD_LIBRARY_PATH}`` are shell expressions (append).
    """
    tech = check_technology(technology)
    if tech == RDMA:
        return dict(GKE_RDMA['workload_env'])
    stack = GKE_STACKS[tech]
    env = dict(stack.nccl_env)
    if debug:
        env.update(stack.nccl_debug_env)
    return env


_GKE_VERSION_RE = re.compile(r'^(\d+)\.(\d+)(?:\.(\d+)(?:-gke\.(\d+))?)?$')


def parse_gke_version(version, field='gke_version'):
    """``1.29.3-gke.1093000`` -> ``(1, 29, 3, 1093000)``; ``1.30`` -> ``(1, 30, None, None)``."""
    match = _GKE_VERSION_RE.match(str(version or '').strip())
    if not match:
        raise InputError("%s: %r is not a GKE version; write MAJOR.MINOR or MAJOR.MINOR.PATCH-gke.N, "
                         "e.g. 1.30.4-gke.1129000" % (field, version))
    return tuple(int(g) if g is not None else None for g in match.groups())


def _key(parsed):
    return tuple(-1 if p is None else p for p in parsed)


def gke_version_floor(technology, version, cluster_mode='standard'):
    """The minimum patch version the guides require for ``version``'s minor (None if any patch will do)."""
    tech = check_technology(technology)
    parsed = parse_gke_version(version)
    if tech == RDMA:
        mode = str(cluster_mode).lower()
        if mode not in ('standard', 'autopilot'):
            raise InputError("cluster_mode: %r; choose one of: autopilot, standard" % (cluster_mode,))
        return GKE_RDMA['min_version_%s' % mode]
    stack = GKE_STACKS[tech]
    minor = '%d.%d' % parsed[:2]
    for floor_minor, floor in stack.version_floors:
        if floor_minor == minor:
            return floor
    if _key(parsed[:2]) < _key(parse_gke_version(stack.min_minor)[:2]):
        return stack.version_floors[0][1]
    return None


def check_gke_version(technology, version, cluster_mode='standard', field='gke_version'):
    """Raise ValueError when ``version`` is older than the guides' floor for ``technology``.

    ``latest`` and MAJOR.MINOR aliases of a supported minor pass (GKE resolves them to a current
    patch). TCPX / TCPXO need Standard clusters (Google's GKE GPUDirect-TCPX/TCPXO guide "Limitations").
    """
    tech = check_technology(technology)
    if tech != RDMA and str(cluster_mode).lower() != 'standard':
        raise InputError('cluster_mode: GPUDirect-%s is not supported on Autopilot clusters; use a Standard cluster' % tech)
    if str(version).strip().lower() == 'latest':
        return
    parsed = parse_gke_version(version, field)
    floor = gke_version_floor(tech, version, cluster_mode)
    if floor is None:
        return
    floor_parsed = parse_gke_version(floor)
    if parsed[2] is None:
        ok = _key(parsed[:2]) >= _key(floor_parsed[:2])
    else:
        ok = _key(parsed) >= _key(floor_parsed)
    if not ok:
        source = 'Google\'s GKE GPUDirect RDMA guide' if tech == RDMA else 'Google\'s GKE GPUDirect-TCPX/TCPXO guide, "Requirements"'
        raise InputError('%s: %s is older than %s, the minimum GKE version for GPUDirect-%s on a %s cluster '
                         '(%s); use %s or later' % (field, version, floor, tech, cluster_mode, source, floor))


# ---------------------------------------------------------------------------------------------
# What the GKE modules (gke_gpudirect_cluster, gke_gpudirect_node_pool) and the GKE layouts of
# gce_gpudirect_network take from the guides
# ---------------------------------------------------------------------------------------------

GKE_MACHINE_TYPES = tuple(name for name, family in FAMILIES.items() if GKE in family.platforms)
# The machine types the GKE modules accept, in catalog order; the argument specs and docs that list
# them literally are checked against this by tests/unit/test_catalog_copies.py.

GKE_DATAPATH_PROVIDER = 'ADVANCED_DATAPATH'
# Dataplane V2: Google's GKE GPUDirect-TCPX/TCPXO guide ``--enable-dataplane-v2`` (gcloud sends networkConfig.datapathProvider
# ADVANCED_DATAPATH, checked by the parity test); the GKE GPUDirect RDMA guide's Terraform ``datapath_provider``.
GKE_IMAGE_TYPE = 'COS_CONTAINERD'
# Google's GKE GPUDirect-TCPX/TCPXO guide "Requirements" and Google's GKE GPUDirect RDMA guide "制限事項": Container-Optimized OS node images only.
GKE_NODE_SCOPES = ('https://www.googleapis.com/auth/cloud-platform',)
# Google's GKE GPUDirect-TCPX/TCPXO guide and Google's GKE GPUDirect RDMA guide node pools: ``--scopes "https://www.googleapis.com/auth/cloud-platform"``.
GKE_GPU_DRIVER_VERSIONS = ('LATEST', 'DEFAULT', 'INSTALLATION_DISABLED')
# Container v1 GPUDriverInstallationConfig.gpuDriverVersion (SPECIFIC needs a version the guides do not
# use); Google's GKE GPUDirect-TCPX/TCPXO guide writes ``gpu-driver-version=LATEST``, Google's GKE GPUDirect RDMA guide ``default`` or ``latest``.
GKE_GPU_DRIVER_VERSION_CHOICES = GKE_GPU_DRIVER_VERSIONS + ('latest', 'default')
# What gke_gpudirect_node_pool takes: the API's values, and the GKE GPUDirect RDMA guide's (gcloud's) lower-case spelling.
GKE_RDMA_STRATEGY = 'RDMA'
# Container v1 GPUDirectConfig.gpuDirectStrategy: gcloud >= 550 ``--gpudirect-strategy=rdma`` (Google's GKE GPUDirect RDMA guide).
GKE_ACCELERATOR_NETWORK_PROFILE = 'auto'
# Google's GKE GPUDirect RDMA guide ``--accelerator-network-profile=auto`` (NodeNetworkConfig.acceleratorNetworkProfile).
GKE_DEFAULT_POOL_NODE_COUNT = 3
# the GKE GPUDirect-TCPX/TCPXO guide's cluster create passes no --num-nodes: gcloud's default-pool has 3 nodes.

GKE_RDMA_LAYOUT = MappingProxyType({
    'gvnic_prefix': '{prefix}-gvnic',
    'rdma_prefix': '{prefix}-rdma',
    'gvnic_network': '{gvnic_prefix}-net',
    'gvnic_subnet': '{gvnic_prefix}-sub',
    'gvnic_firewall_rule': '{gvnic_prefix}-internal',
    'rdma_network': '{rdma_prefix}-net',
    'rdma_subnet': '{rdma_prefix}-sub-{n}',
    'rdma_subnet_count': 8,
    'network_profile': '{zone}-vpc-roce',
    'mtu': 8896,
    'gvnic_subnet_range': '192.168.0.0/24',
    'rdma_subnet_range': '192.168.{m}.0/24',
    'internal_rules': 'tcp:0-65535,udp:0-65535,icmp',
    'internal_source_range': '192.168.0.0/16',
})
# Google's GKE GPUDirect RDMA guide "Advanced configuration" ("to reuse VPC networks for the additional NICs of A3 Ultra and
# A4"): ``GVNIC_NETWORK_PREFIX`` and ``RDMA_NETWORK_PREFIX``, the node pool's networks ``${GVNIC_NETWORK_PREFIX}-net`` /
# ``-sub`` and ``${RDMA_NETWORK_PREFIX}-net`` with ``-sub-0`` .. ``-sub-7``, in that NIC order. Both prefixes can be given
# (VPCs named otherwise, reused); unset, they are derived from the one network prefix as ``{prefix}-gvnic`` and
# ``{prefix}-rdma``. The RoCE network's profile (``ZONE-vpc-roce``) and MTU 8896 follow the RDMA network
# profiles page (https://cloud.google.com/vpc/docs/rdma-network-profiles: "the default MTU is 8896").
# The ranges (sub-N gets 192.168.(N+1).0/24) and the gVNIC network's internal rule are this
# collection's defaults: Google's GKE GPUDirect RDMA guide gives no ranges.


GKE_RDMA_NETWORK_OBJECTS = MappingProxyType({
    'gvnic_name': 'gvnic-1',
    'gvnic_device_mode': 'NetDevice',
    'rdma_name': 'rdma-{n}',
    'rdma_device_mode': 'RDMA',
})
# The Network / GKENetworkParamSet objects of the GKE GPUDirect RDMA guide's manual multi-network variant. Google's GKE GPUDirect RDMA guide does not
# print them (it links to "GPUDirect RDMA を使用してクラスタを作成する"): the names are those the vendor's
# test Pods attach to (gpudirect-rdma/nccl-test.yaml, annotation networking.gke.io/interfaces: rdma-0 ..
# rdma-7; checked by tests/unit/plugins/module_utils/test_k8s_render.py), the gVNIC network's is the
# linked page's gvnic-1; deviceMode RDMA is the GKENetworkParamSet CRD's enum value for RDMA NICs.
GKE_RDMA_INSTALLER = DaemonSetRef(
    'nccl-rdma-installer', GKE_MANIFEST_BASE + '/gpudirect-rdma/nccl-rdma-installer.yaml', 'kube-system', 'name=nccl-rdma-installer')
# The RDMA NCCL / gIB installer DaemonSet of the manual RDMA path (vendored: k8s/manifests/gpudirect-rdma/).
# The GKE GPUDirect RDMA guide's pools use the automated installer (gpuDirectStrategy RDMA) instead, which installs the same
# libraries; the DaemonSet is for multi-network pools created without it.
GKE_COMPUTE_CLASS_RESERVATION_AFFINITY = 'Specific'
# the GKE GPUDirect RDMA guide's ComputeClass: ``reservations: affinity: Specific`` with ``specific: [{name, zones}]``.


def rdma_network_prefixes(prefix, gvnic_prefix=None, rdma_prefix=None):
    """``(GVNIC_NETWORK_PREFIX, RDMA_NETWORK_PREFIX)`` of the GKE GPUDirect RDMA guide's multi-network pool: each as given,
    else derived from ``prefix``."""
    layout = GKE_RDMA_LAYOUT
    return (gvnic_prefix or layout['gvnic_prefix'].format(prefix=prefix), rdma_prefix or layout['rdma_prefix'].format(prefix=prefix))


def gke_additional_networks(machine_type, prefix, gvnic_prefix=None, rdma_prefix=None):
    """(network, subnetwork) names of a GKE GPU node pool's additional node networks in NIC order
    (eth1..): the GKE GPUDirect-TCPX/TCPXO guide's ``PREFIX-net-N``/``PREFIX-sub-N`` for TCPX/TCPXO, the GKE GPUDirect RDMA guide's gVNIC network
    then 8 RDMA subnets for RDMA (``gvnic_prefix`` / ``rdma_prefix``: the guide's two prefixes, see rdma_network_prefixes)."""
    family = FAMILIES[machine_type]
    if family.technology == RDMA:
        layout = GKE_RDMA_LAYOUT
        gvnic, rdma = rdma_network_prefixes(prefix, gvnic_prefix, rdma_prefix)
        pairs = [(layout['gvnic_network'].format(gvnic_prefix=gvnic), layout['gvnic_subnet'].format(gvnic_prefix=gvnic))]
        pairs += [(layout['rdma_network'].format(rdma_prefix=rdma), layout['rdma_subnet'].format(rdma_prefix=rdma, n=n))
                  for n in range(layout['rdma_subnet_count'])]
        return pairs
    return [(GKE_VPC_LAYOUT['network'].format(prefix=prefix, n=n), GKE_VPC_LAYOUT['subnet'].format(prefix=prefix, n=n))
            for n in range(1, family.data_nic_count + 1)]


# ---------------------------------------------------------------------------------------------
# What playbooks/gke_cluster.yml (and gke_teardown.yml) derive from the machine type
# ---------------------------------------------------------------------------------------------

GKE_FAMILY_DEFAULTS = MappingProxyType({
    # Google's GKE GPUDirect-TCPX/TCPXO guide names no zone: us-central1-a is the collection's default zone, as for Compute Engine (gce_cluster.yml).
    # Google's GKE GPUDirect-TCPX/TCPXO guide attaches the per-NIC VPCs to the pool as multi-networking additional networks (the only way for TCPX/TCPXO),
    # in layout gke of gce_gpudirect_network; the role gke_gpudirect applies the Networks and DaemonSets.
    TCPXO: MappingProxyType({'location': 'us-central1-a', 'networking': 'multi_network', 'networkings': ('multi_network',),
                             'network_layout': 'gke', 'kubernetes_role': 'gke_gpudirect'}),
    TCPX: MappingProxyType({'location': 'us-central1-a', 'networking': 'multi_network', 'networkings': ('multi_network',),
                            'network_layout': 'gke', 'kubernetes_role': 'gke_gpudirect'}),
    # Google's GKE GPUDirect RDMA guide: its Terraform example deploys the a3-ultragpu-8g nodes in us-central1-b, with GKE-managed DRANET (the
    # default); the ComputeClass path and the manual multi-network variant are its others. Layout gke_rdma is the
    # manual variant's networks; the role gke_rdma applies the claim template, the ComputeClass or the Networks.
    RDMA: MappingProxyType({'location': 'us-central1-b', 'networking': 'dranet',
                            'networkings': ('dranet', 'compute_class', 'multi_network'),
                            'network_layout': 'gke_rdma', 'kubernetes_role': 'gke_rdma'}),
})


def gke_family_defaults(machine_type):
    """What the GKE playbooks derive from ``machine_type``: ``technology``, the default ``location`` and ``networking``,
    the ``networkings`` it takes, the ``network_layout`` of its per-NIC networks, the ``kubernetes_role`` that applies its
    Kubernetes objects and the ``node_count`` of a new pool. A machine type without GPUDirect on GKE (or none, as in
    ``ansible-playbook --syntax-check``) gets TCPX's, so that the plan step, not a filter, names it and the fix."""
    family = FAMILIES.get(str(machine_type or ''))
    technology = family.technology if family is not None and GKE in family.platforms else TCPX
    return dict(GKE_FAMILY_DEFAULTS[technology], networkings=list(GKE_FAMILY_DEFAULTS[technology]['networkings']),
                technology=technology, node_count=DEFAULT_NODE_COUNT)


def gke_technology(machine_type, technology=None):
    """The GPUDirect technology of a GKE ``machine_type``; without one, ``technology`` (the deprecated way of the role
    gke_gpudirect to say it), else TCPXO. Both given, they must agree."""
    if not machine_type:
        return check_technology(technology) if technology else TCPXO
    family = get_family(machine_type)
    if GKE not in family.platforms:
        raise InputError('machine_type: %s has no GPUDirect on GKE; choose one of %s' % (family.machine_type, ', '.join(GKE_MACHINE_TYPES)))
    if technology and check_technology(technology) != family.technology:
        raise InputError("technology: %r differs from %r, the technology of %s; leave it unset (it is deprecated: the machine type "
                         "decides)" % (technology, family.technology, family.machine_type))
    return family.technology
