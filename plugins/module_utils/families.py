# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

# The one catalog of GPUDirect machine-family facts for aiinfra.gpudirect.
#
# Every fact a module, role, filter or test needs about a machine family (GPUs, NICs, MTU,
# GPUDirect technology, host containers and their version pairs, NCCL environments, GKE
# version floors, manifests, thresholds) is written here once; everything else imports it.
#
# Sources (the seed manuals are copied into tests/unit/seeds/ and the unit tests check every
# string below against them):
#
# * seed 000 -- Compute Engine, "GPUDirect を有効にして A3 Mega、A3 High、または A3 Edge
#   インスタンスを作成する" (Japanese).
# * seed 001 -- GKE, "自動 NCCL インストーラを使用して GPUDirect RDMA を構成する" (Japanese).
# * seed 003 -- GKE, "Maximiza el ancho de banda de red de la GPU con GPUDirect y redes
#   múltiples" (Spanish).
# * seed 004 -- OpenShift, "第5章 NVIDIA GPUDirect Remote Direct Memory Access (RDMA)" (Japanese).
# * design.md / references.md -- facts from the vendors' public repositories (public known-good
#   version pairs, NCCL pass thresholds, OLM package names). These are marked ``source=...``
#   and checked against a documented table in the tests, never against a seed.
#
# Standard library only: this file is imported on Container-Optimized OS targets as well as on
# the controller, and must import under Python 3.8.
#

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional, Tuple

# ---------------------------------------------------------------------------------------------
# Technologies and platforms
# ---------------------------------------------------------------------------------------------

TCPXO = 'TCPXO'
# GPUDirect-TCPXO, A3 Mega (seed 000 intro; seed 003 "Funciones y capacidades ...").
TCPX = 'TCPX'
# GPUDirect-TCPX, A3 High and A3 Edge (seed 000 intro; seed 003).
RDMA = 'RDMA'
# GPUDirect RDMA over RoCE on CX7 NICs, A3 Ultra and A4 (seed 001 intro).
TECHNOLOGIES = (TCPXO, TCPX, RDMA)

GCE = 'gce'
GKE = 'gke'
PLATFORMS = (GCE, GKE)

GVNIC = 'GVNIC'
# Compute API nicType for Google Virtual NIC (seed 000 ``nic-type=GVNIC``).
MRDMA = 'MRDMA'
# Compute API nicType of the CX7 RDMA NICs; GKE's DRA device class is ``mrdma.google.com`` (seed 001).

# ---------------------------------------------------------------------------------------------
# Compute Engine instance defaults (seed 000, "A3 Mega インスタンスを作成する（GPUDirect-TCPXO）" and
# "A3 High インスタンスと Edge インスタンスを作成する（GPUDirect-TCPX）", every gcloud command)
# ---------------------------------------------------------------------------------------------

COS_IMAGE_FAMILY = 'cos-121-lts'
# seed 000: ``--image-family=cos-121-lts`` ("cos-121-lts 以降" -- this family or later).
COS_IMAGE_PROJECT = 'cos-cloud'
# seed 000: ``--image-project=cos-cloud``.
GCE_METADATA = (('cos-update-strategy', 'update_disabled'),)
# seed 000: ``--metadata=cos-update-strategy=update_disabled``.
GCE_SCOPES = ('https://www.googleapis.com/auth/cloud-platform',)
# seed 000: ``--scopes=https://www.googleapis.com/auth/cloud-platform`` (also seed 003 node pools).
ON_HOST_MAINTENANCE = 'TERMINATE'
# seed 000: ``--maintenance-policy=TERMINATE``.
AUTOMATIC_RESTART = True
# seed 000: ``--restart-on-failure``.
MGMT_NIC_EXTERNAL_ADDRESS = True
# seed 000: the management ``--network-interface`` has an address, data NICs say ``no-address``.
DATA_NIC_EXTERNAL_ADDRESS = False
# seed 000: every data ``--network-interface`` ends in ``no-address``.

STANDARD = 'STANDARD'
SPOT = 'SPOT'
FLEX_START = 'FLEX_START'
RESERVATION_BOUND = 'RESERVATION_BOUND'


@dataclass(frozen=True)
class ProvisioningModel:
    """What a provisioning model needs on ``instances.insert`` (seed 000, tabs 標準 / スポット /
    Flex Start / 予約で制限 under each "インスタンスを作成する" section).

    ``STANDARD`` is the API default: the seed's 標準 tab passes no ``--provisioning-model``.
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
# seed 000: TERMINATION_ACTION is ``STOP`` or ``DELETE``.
MAX_RUN_DURATION_RANGE = ('10m', '7d')
# seed 000 Flex Start: RUN_DURATION "10 分～7 日".
REQUEST_VALID_FOR_DURATION_RANGE = ('90s', '2h')
# seed 000 Flex Start: VALID_FOR_DURATION 90s-2h for one zone, or ``0s`` for any zone of the region.
REQUEST_VALID_FOR_DURATION_ANY_ZONE = '0s'

# ---------------------------------------------------------------------------------------------
# Compute Engine network layout (seed 000, "VPC ネットワークを設定する")
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
# Names are ``str.format`` patterns (``prefix``, ``n`` from 1); seed 000 "管理ネットワーク、サブネット、
# ファイアウォールルールを作成する" and "データネットワーク、サブネット、ファイアウォールルールを作成する".
# The SSH rule's source range is the user's (SSH_SOURCE_IP_RANGE) and has no default.

# A Compute Engine resource name (networks, subnets, firewall rules, instances): RFC 1035, 1-63 characters.
GCE_NAME_PATTERN = re.compile(r'^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$')


def fabric_interfaces(prefix, data_nic_count):
    """The (network, subnetwork) names of a fabric in NIC order: management, then data 1..N."""
    layout = GCE_NETWORK
    pairs = [(layout['mgmt_network'].format(prefix=prefix), layout['mgmt_subnet'].format(prefix=prefix))]
    pairs += [(layout['data_network'].format(prefix=prefix, n=n), layout['data_subnet'].format(prefix=prefix, n=n))
              for n in range(1, data_nic_count + 1)]
    return pairs


def data_subnet_ranges(data_nic_count):
    """The seed's data subnet ranges, 192.168.1.0/24 .. 192.168.N.0/24."""
    return [GCE_NETWORK['data_subnet_range'].format(n=n) for n in range(1, data_nic_count + 1)]

# ---------------------------------------------------------------------------------------------
# Machine families
# ---------------------------------------------------------------------------------------------


def _eths(count):
    return tuple('eth%d' % n for n in range(1, count + 1))


@dataclass(frozen=True)
class Family:
    """Facts of one GPUDirect-capable machine type. ``None`` means no source gives the fact.

    NIC counts: ``management_nic_count`` gVNICs that carry ordinary traffic plus
    ``data_nic_count`` NICs of ``data_nic_type`` for GPU traffic.
    """

    machine_type: str
    series: str
    technology: str
    platforms: Tuple[str, ...]
    gpu_model: str
    gpu_count: int
    gpu_memory_gb: Optional[int]
    gke_accelerator: Optional[str]
    vcpus: Optional[int]
    memory_gb: Optional[int]
    management_nic_count: int
    data_nic_count: int
    data_nic_type: str
    data_interface_names: Tuple[str, ...]
    mtu: int
    provisioning_models: Optional[Tuple[str, ...]]
    image_family: Optional[str]
    image_project: Optional[str]
    metadata: Optional[Tuple[Tuple[str, str], ...]]
    scopes: Optional[Tuple[str, ...]]
    nccl_min_avg_busbw_gbps: Optional[float]
    nccl_threshold_source: str
    min_gvnic_driver: Optional[str] = None
    mig_max_instances: Optional[int] = None
    mig_instance_memory_gb: Optional[int] = None
    nic_bandwidth_gbps: Optional[int] = None
    gpu_fabric_bandwidth_gbps: Optional[int] = None
    local_ssd_count: Optional[int] = None
    management_nic_type: str = GVNIC

    @property
    def reservation_bound_allowed(self):
        """Whether the family takes the RESERVATION_BOUND model (None when no source lists its models)."""
        return None if self.provisioning_models is None else RESERVATION_BOUND in self.provisioning_models

    @property
    def nic_count(self):
        """All NICs of an instance (management + data)."""
        return self.management_nic_count + self.data_nic_count

    @property
    def metadata_dict(self):
        """Default instance metadata as a new dict (``{}`` when the family has no GCE defaults)."""
        return dict(self.metadata or ())


_A3_GCE = dict(
    gpu_model='NVIDIA H100', gpu_count=8, gpu_memory_gb=80,
    vcpus=208, memory_gb=1872, management_nic_count=1, data_nic_type=GVNIC, mtu=8244,
    image_family=COS_IMAGE_FAMILY, image_project=COS_IMAGE_PROJECT, metadata=GCE_METADATA,
    scopes=GCE_SCOPES, mig_max_instances=7, mig_instance_memory_gb=10, nic_bandwidth_gbps=200,
)
_RDMA_GKE = dict(
    platforms=(GKE,), vcpus=None, memory_gb=None, management_nic_count=2, data_nic_count=8,
    data_nic_type=MRDMA, data_interface_names=(), mtu=8896,
    provisioning_models=None, image_family=None, image_project=None, metadata=None, scopes=None,
    gpu_fabric_bandwidth_gbps=3200,
)
_THRESHOLD_SOURCE = "design.md / references.md: cluster-toolkit daily tests, '# Avg bus bandwidth' of a 2-node all_gather"

FAMILIES = MappingProxyType({
    # seed 000 intro + "A3 Mega インスタンスを作成する（GPUDirect-TCPXO）" (9 gVNICs: 1 mgmt + 8 data, four
    # provisioning tabs); seed 003 node pool (--accelerator=type=nvidia-h100-mega-80gb) and
    # "Supercomputadoras" (up to 8 secondary NICs of 200 Gbps).
    'a3-megagpu-8g': Family(
        machine_type='a3-megagpu-8g', series='A3 Mega', technology=TCPXO, platforms=(GCE, GKE), gke_accelerator='nvidia-h100-mega-80gb',
        data_nic_count=8, data_interface_names=_eths(8),
        provisioning_models=(STANDARD, SPOT, FLEX_START, RESERVATION_BOUND),
        nccl_min_avg_busbw_gbps=30.0, nccl_threshold_source=_THRESHOLD_SOURCE, **_A3_GCE),
    # seed 000 "A3 High インスタンスと Edge インスタンスを作成する（GPUDirect-TCPX）" (1 + 4 gVNICs, driver
    # 1.4.0rc3+); seed 003 node pool (--accelerator=type=nvidia-h100-80gb).
    'a3-highgpu-8g': Family(
        machine_type='a3-highgpu-8g', series='A3 High', technology=TCPX, platforms=(GCE, GKE), gke_accelerator='nvidia-h100-80gb',
        data_nic_count=4, data_interface_names=_eths(4),
        provisioning_models=(STANDARD, SPOT, FLEX_START, RESERVATION_BOUND), min_gvnic_driver='1.4.0rc3',
        nccl_min_avg_busbw_gbps=25.0, nccl_threshold_source=_THRESHOLD_SOURCE, **_A3_GCE),
    # Same section of seed 000. Provisioning models: seed 000's 予約で制限 tab says "予約型プロビジョニングモデル
    # では、a3-edgegpu-8g マシンタイプはサポートされていません", but seed 000 is older than Google's current page,
    # https://docs.cloud.google.com/compute/docs/instances/about-reservation-bound-instances ("A4X Max, A4X, A4,
    # A3 Ultra, A3 Mega, A3 High with 8 GPUs, A3 Edge, and H4D instances"), which the collection and the test
    # sandbox (tests/sandbox/rules.py) both follow: A3 Edge takes RESERVATION_BOUND.
    # Seed 003 covers A3 High/Mega only: no GKE accelerator, GCE only.
    # Threshold: same TCPX stack and NICs as A3 High, so A3 High's 25 GB/s (derived, see design brief).
    'a3-edgegpu-8g': Family(
        machine_type='a3-edgegpu-8g', series='A3 Edge', technology=TCPX, gke_accelerator=None,
        data_nic_count=4, data_interface_names=_eths(4),
        provisioning_models=(STANDARD, SPOT, FLEX_START, RESERVATION_BOUND), min_gvnic_driver='1.4.0rc3',
        nccl_min_avg_busbw_gbps=25.0, nccl_threshold_source=_THRESHOLD_SOURCE + ' (A3 High value; same TCPX stack)',
        platforms=(GCE,), **_A3_GCE),
    # seed 001: CX7 RoCE, 3.2 Tbps; nvidia-h200-141gb; node pool with 1 extra gVNIC network + 8 RDMA
    # subnets ("高度な構成"); Terraform example: local_ssd_count = 32 for a3-ultragpu-8g. GKE only.
    'a3-ultragpu-8g': Family(
        machine_type='a3-ultragpu-8g', series='A3 Ultra', technology=RDMA, gke_accelerator='nvidia-h200-141gb',
        gpu_model='NVIDIA H200', gpu_count=8, gpu_memory_gb=141, local_ssd_count=32,
        nccl_min_avg_busbw_gbps=100.0, nccl_threshold_source=_THRESHOLD_SOURCE, **_RDMA_GKE),
    # seed 001 as above; nvidia-b200. No source gives B200 memory per GPU or a pass threshold.
    'a4-highgpu-8g': Family(
        machine_type='a4-highgpu-8g', series='A4', technology=RDMA, gke_accelerator='nvidia-b200',
        gpu_model='NVIDIA B200', gpu_count=8, gpu_memory_gb=None,
        nccl_min_avg_busbw_gbps=None, nccl_threshold_source='none: no source gives an A4 threshold', **_RDMA_GKE),
})


def _choices(values):
    return ', '.join(sorted(values))


def _check_technology(technology, field='technology'):
    tech = str(technology or '').upper().replace('GPUDIRECT-', '')
    if tech not in TECHNOLOGIES:
        raise ValueError('%s: unknown GPUDirect technology %r; choose one of: %s'
                         % (field, technology, ', '.join(TECHNOLOGIES)))
    return tech


def _check_platform(platform, field='platform'):
    plat = str(platform or '').lower()
    if plat not in PLATFORMS:
        raise ValueError('%s: unknown platform %r; choose one of: %s' % (field, platform, ', '.join(PLATFORMS)))
    return plat


def resource_name(link):
    """The last segment of a Compute API link (``.../zones/us-central1-a`` -> ``us-central1-a``); '' for none."""
    return str(link or '').rstrip('/').rsplit('/', 1)[-1]


def get_family(machine_type, field='machine_type'):
    """Return the :class:`Family` of ``machine_type``.

    Accepts a bare name (``a3-megagpu-8g``) or a Compute API URL / partial URL ending in
    ``machineTypes/NAME``. Raises ValueError naming ``field`` and the known families.
    """
    try:
        return FAMILIES[resource_name(machine_type)]
    except KeyError:
        raise ValueError('%s: %r is not a GPUDirect machine family known to aiinfra.gpudirect; choose one of: %s'
                         % (field, machine_type, _choices(FAMILIES))) from None


def family_for_gke_accelerator(name, field='accelerator_type'):
    """Return the :class:`Family` whose GKE accelerator type is ``name`` (e.g. ``nvidia-h100-mega-80gb``)."""
    for family in FAMILIES.values():
        if family.gke_accelerator is not None and family.gke_accelerator == name:
            return family
    known = [f.gke_accelerator for f in FAMILIES.values() if f.gke_accelerator]
    raise ValueError('%s: %r is not a GKE accelerator with GPUDirect support; choose one of: %s'
                     % (field, name, _choices(known)))


def families_for_technology(technology):
    """Families that use ``technology``, in catalog order."""
    tech = _check_technology(technology)
    return tuple(f for f in FAMILIES.values() if f.technology == tech)


def check_provisioning_model(machine_type, provisioning_model, field='provisioning_model'):
    """Raise ValueError when ``machine_type`` cannot use ``provisioning_model`` (a model its family's sources do
    not list). Families whose models no source lists are not checked."""
    family = get_family(machine_type)
    model = str(provisioning_model or STANDARD).upper()
    if model not in PROVISIONING_MODELS:
        raise ValueError('%s: unknown provisioning model %r; choose one of: %s'
                         % (field, provisioning_model, ', '.join(PROVISIONING_MODELS)))
    if family.provisioning_models is not None and model not in family.provisioning_models:
        raise ValueError('%s: %s does not support %s; use one of: %s'
                         % (field, family.machine_type, model, ', '.join(family.provisioning_models)))
    return PROVISIONING_MODELS[model]


# ---------------------------------------------------------------------------------------------
# Container-Optimized OS host facts (seed 000, "GPU ドライバをインストールする", "NIC に GPU へのアクセス権を
# 付与する", "NCCL 環境を設定する", "nccl-tests ベンチマークを実行する", "テストを実行する")
# ---------------------------------------------------------------------------------------------

GPU_DRIVER_INSTALL_COMMAND = 'sudo cos-extensions install gpu -- --version=latest'
NVIDIA_DIR = '/var/lib/nvidia'
NVIDIA_REMOUNT_COMMANDS = (
    'sudo mount --bind /var/lib/nvidia /var/lib/nvidia',
    'sudo mount -o remount,exec /var/lib/nvidia',
)
REGISTRY = 'us-docker.pkg.dev'
REGISTRY_AUTH_COMMAND = 'docker-credential-gcr configure-docker --registries us-docker.pkg.dev'
# seed 000, Artifact Registry form (both technologies). Container Registry form: ``REGISTRY_AUTH_COMMAND_GCR``.
REGISTRY_AUTH_COMMAND_GCR = 'docker-credential-gcr configure-docker'
IMAGE_BASE = REGISTRY + '/gce-ai-infra'
TCPXO_REPOSITORY = IMAGE_BASE + '/gpudirect-tcpxo'
TCPX_REPOSITORY = IMAGE_BASE + '/gpudirect-tcpx'
GIB_REPOSITORY = IMAGE_BASE + '/gpudirect-gib'

NVIDIA_DEVICES = tuple('/dev/nvidia%d' % n for n in range(8)) + ('/dev/nvidia-uvm', '/dev/nvidiactl')
# The ten ``--device`` arguments every seed 000 container gets (host path == container path).
DMABUF_DEVICE = '/dev/dmabuf_import_helper'
# TCPXO only: created by ``modprobe import-helper`` (seed 000).


@dataclass(frozen=True)
class ContainerSpec:
    """One ``docker run`` of seed 000, as data. ``image`` is the repository without tag when the tag
    comes from a :class:`VersionPair`; ``args`` follow the image. Volumes are ``HOST:CONTAINER``."""

    name: Optional[str]
    image_role: str
    args: Tuple[str, ...]
    devices: Tuple[str, ...]
    volumes: Tuple[str, ...]
    env: Tuple[Tuple[str, str], ...]
    privileged: bool = False
    network_host: bool = True
    cap_add: Tuple[str, ...] = ()
    entrypoint: Optional[str] = None
    shm_size: Optional[str] = None
    ulimits: Tuple[Tuple[str, str], ...] = ()
    user: Optional[str] = None
    userns_host: bool = False
    pull_always: bool = False
    detach: bool = False
    auto_remove: bool = True


@dataclass(frozen=True)
class HostStack:
    """The COS host side of one technology on Compute Engine (seed 000)."""

    technology: str
    firewall_command: str
    kernel_modules: Tuple[str, ...]
    modprobe_commands: Tuple[str, ...]
    rxdm: ContainerSpec
    rxdm_ready_line: str
    rxdm_logs_command: str
    plugin_installer: ContainerSpec
    plugin_dir: str
    plugin_lib_dir: str
    plugin_libraries: Tuple[str, ...]
    plugin_remount_commands: Tuple[str, ...]
    nccl_container: ContainerSpec
    nccl_test_setup_commands: Tuple[str, ...]
    nccl_test_command: str
    nccl_success_line: Optional[str]
    nccl_test_data_interfaces: Tuple[str, ...]


_TCPXO_LD = '/usr/local/nvidia/lib64:/var/lib/tcpxo/lib64'
_TCPXO_DEVICES = NVIDIA_DEVICES + (DMABUF_DEVICE,)

HOST_STACKS = MappingProxyType({
    TCPXO: HostStack(
        technology=TCPXO,
        # "NIC に GPU へのアクセス権を付与する" (A3 Mega)
        firewall_command='sudo /sbin/iptables -I INPUT -p tcp -m tcp -j ACCEPT',
        kernel_modules=('import-helper',),
        modprobe_commands=('sudo modprobe import-helper',),
        rxdm=ContainerSpec(
            name='rxdm', image_role='rxdm', args=('--num_hops=2', '--num_nics=8'),
            devices=_TCPXO_DEVICES, volumes=('/var/lib/nvidia:/usr/local/nvidia',),
            env=(('LD_LIBRARY_PATH', '/usr/local/nvidia/lib64'),),
            privileged=True, cap_add=('NET_ADMIN',), pull_always=True, detach=True),
        rxdm_ready_line='Buffer manager initialization complete',
        rxdm_logs_command='docker container logs rxdm 2>&1 | grep "Buffer manager initialization complete"',
        # "NCCL 環境を設定する"
        plugin_installer=ContainerSpec(
            name=None, image_role='plugin', args=('install', '--install-nccl'),
            devices=_TCPXO_DEVICES, volumes=('/var/lib/nvidia:/usr/local/nvidia', '/var/lib:/var/lib'),
            env=(('LD_LIBRARY_PATH', _TCPXO_LD),), privileged=True, cap_add=('NET_ADMIN',), pull_always=True),
        plugin_dir='/var/lib/tcpxo',
        plugin_lib_dir='/var/lib/tcpxo/lib64',
        plugin_libraries=(),
        plugin_remount_commands=('sudo mount --bind /var/lib/tcpxo /var/lib/tcpxo',
                                 'sudo mount -o remount,exec /var/lib/tcpxo'),
        nccl_container=ContainerSpec(
            name='nccl', image_role='plugin', args=('daemon',),
            devices=_TCPXO_DEVICES, volumes=('/var/lib/nvidia:/usr/local/nvidia', '/var/lib/tcpxo:/var/lib/tcpxo'),
            env=(('LD_LIBRARY_PATH', _TCPXO_LD),), privileged=True, cap_add=('NET_ADMIN',), shm_size='8g',
            pull_always=True, detach=True),
        # "nccl-tests ベンチマークを実行する"
        nccl_test_setup_commands=('/scripts/init_ssh.sh {hosts}', '/scripts/gen_hostfiles.sh {hosts}'),
        nccl_test_command='/scripts/run-nccl-tcpxo.sh all_gather_perf "${LD_LIBRARY_PATH}" 8 '
                          'eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8 1M 512M 3 2 10 8 2 10',
        nccl_success_line=None,
        nccl_test_data_interfaces=_eths(8),
    ),
    TCPX: HostStack(
        technology=TCPX,
        # "NIC に GPU へのアクセス権を付与する" (A3 High / Edge)
        firewall_command='sudo iptables -I INPUT -p tcp -m tcp -j ACCEPT',
        kernel_modules=(),
        modprobe_commands=(),
        rxdm=ContainerSpec(
            name='receive-datapath-manager', image_role='rxdm',
            args=('--gpu_nic_preset', 'a3vm', '--gpu_shmem_type', 'fd', '--uds_path', '/run/tcpx',
                  '--setup_param', '--verbose 128 2 0'),
            devices=NVIDIA_DEVICES, volumes=('/var/lib/nvidia/lib64:/usr/local/nvidia/lib64', '/run/tcpx:/run/tcpx'),
            env=(('LD_LIBRARY_PATH', '/usr/local/nvidia/lib64'),), privileged=True, cap_add=('NET_ADMIN',),
            entrypoint='/tcpgpudmarxd/build/app/tcpgpudmarxd', pull_always=True, detach=True),
        rxdm_ready_line='Rx Rule Manager server(s) started',
        rxdm_logs_command='docker container logs --follow receive-datapath-manager',
        plugin_installer=ContainerSpec(
            name=None, image_role='plugin', args=('install', '--install-nccl'), devices=(),
            volumes=('/var/lib:/var/lib',), env=(), network_host=False),
        plugin_dir='/var/lib/tcpx',
        plugin_lib_dir='/var/lib/tcpx/lib64',
        plugin_libraries=('libnccl-net.so', 'libnccl.so'),
        plugin_remount_commands=('sudo mount --bind /var/lib/tcpx /var/lib/tcpx',
                                 'sudo mount -o remount,exec /var/lib/tcpx'),
        # "テストを実行する": run_tcpx_container ... IMAGE shell
        nccl_container=ContainerSpec(
            name=None, image_role='plugin', args=('shell',), devices=NVIDIA_DEVICES,
            volumes=('/run/tcpx:/tmp', '/var/lib/nvidia/lib64:/usr/local/nvidia/lib64', '/var/lib/tcpx/lib64:/usr/local/tcpx/lib64'),
            env=(('LD_LIBRARY_PATH', '/usr/local/nvidia/lib64:/usr/local/tcpx/lib64'),), cap_add=('IPC_LOCK',),
            shm_size='1g', ulimits=(('memlock', '-1'), ('stack', '67108864')), user='0', userns_host=True),
        nccl_test_setup_commands=('/scripts/init_ssh.sh {hosts}', 'pushd /scripts && /scripts/gen_hostfiles.sh {hosts}; popd'),
        nccl_test_command='/scripts/run-allgather.sh 8 eth1,eth2,eth3,eth4 1M 512M 2',
        nccl_success_line='NCCL INFO NET/GPUDirectTCPX ver. 3.1.1.',
        nccl_test_data_interfaces=_eths(4),
    ),
})
# ``{hosts}`` in test commands: space-separated VM names. RDMA has no COS host stack in the seeds.


# The NCCL network (``NCCL INFO Using network NAME``) that proves each technology carries the traffic:
# TCPX, seed 000's success line ``NET/GPUDirectTCPX``; TCPXO, the FasTrak plugin (the NCCL_FASTRAK_*
# environment of seed 003); RDMA, the gIB plugin of seed 001's NCCL/gIB installer, or NCCL's own IB verbs.
NCCL_NETWORKS = MappingProxyType({
    TCPXO: ('FasTrak',),
    TCPX: ('GPUDirectTCPX',),
    RDMA: ('gIB', 'IB'),
})


def host_stack(technology):
    """Return the :class:`HostStack` of a COS host for ``TCPXO`` or ``TCPX``."""
    tech = _check_technology(technology)
    if tech not in HOST_STACKS:
        raise ValueError('technology: %s has no Compute Engine host stack in aiinfra.gpudirect (the seeds set it up '
                         'on GKE only: --gpudirect-strategy=rdma); choose one of: %s' % (tech, ', '.join(HOST_STACKS)))
    return HOST_STACKS[tech]


# ---------------------------------------------------------------------------------------------
# RxDM / NCCL plugin version pairs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VersionPair:
    """A known-good (RxDM, NCCL plugin) pair. A version of ``None`` means the source pulls the image
    untagged (the registry's ``latest``). ``default_for`` lists the platforms this pair is the default on."""

    name: str
    technology: str
    rxdm_repository: str
    rxdm_version: Optional[str]
    plugin_repository: str
    plugin_version: Optional[str]
    source: str
    platforms: Tuple[str, ...]
    default_for: Tuple[str, ...] = ()

    @staticmethod
    def _ref(repository, version):
        return repository if version is None else '%s:%s' % (repository, version)

    @property
    def rxdm_image(self):
        """Full RxDM image reference, exactly as the source writes it."""
        return self._ref(self.rxdm_repository, self.rxdm_version)

    @property
    def plugin_image(self):
        """Full NCCL plugin (installer) image reference, exactly as the source writes it."""
        return self._ref(self.plugin_repository, self.plugin_version)


VERSION_PAIRS = (
    # seed 000 "NIC に GPU へのアクセス権を付与する" (rxdm) and "NCCL 環境を設定する" (NCCL_NET_IMAGE).
    VersionPair('seed-000', TCPXO, TCPXO_REPOSITORY + '/tcpgpudmarxd-dev', 'v1.0.19',
                TCPXO_REPOSITORY + '/nccl-plugin-gpudirecttcpx-dev', 'v1.0.13-1',
                source='seed 000', platforms=(GCE,), default_for=(GCE,)),
    # design.md / references.md: container-engine-accelerators gpudirect-tcpxo release notes (Jan 2026).
    VersionPair('public-2026-01', TCPXO, TCPXO_REPOSITORY + '/tcpgpudmarxd-dev', 'v1.0.21',
                TCPXO_REPOSITORY + '/nccl-plugin-gpudirecttcpx-dev', 'v1.0.15',
                source='design.md / references.md (container-engine-accelerators)', platforms=(GCE, GKE), default_for=(GKE,)),
    # seed 000 "NIC に GPU へのアクセス権を付与する" and its plugin install command: both untagged.
    VersionPair('seed-000', TCPX, TCPX_REPOSITORY + '/tcpgpudmarxd', None,
                TCPX_REPOSITORY + '/nccl-plugin-gpudirecttcpx', None,
                source='seed 000', platforms=(GCE,), default_for=(GCE,)),
    # design.md / references.md: container-engine-accelerators gpudirect-tcpx release notes (Feb 15, 2024).
    VersionPair('public-2024-02', TCPX, TCPX_REPOSITORY + '/tcpgpudmarxd-dev', 'v2.0.12',
                TCPX_REPOSITORY + '/nccl-plugin-gpudirecttcpx-dev', 'v3.1.9',
                source='design.md / references.md (container-engine-accelerators)', platforms=(GCE, GKE), default_for=(GKE,)),
)

_UNTAGGED = ('', 'latest', 'untagged')


def _normalize_version(value):
    """``v1.0.19``, ``1.0.19`` or a full image reference ``repo:v1.0.19`` -> ``v1.0.19``;
    ``latest`` / untagged reference -> ``None``."""
    text = str(value).strip()
    last = text.rsplit('/', 1)[-1]
    if '/' in text or ':' in last:
        last = last.split('@', 1)[0]
        text = last.split(':', 1)[1] if ':' in last else ''
    if text.lower() in _UNTAGGED:
        return None
    if re.match(r'^\d', text):
        text = 'v' + text
    return text


def _pair_label(pair):
    return '%s (rxdm %s, plugin %s)' % (pair.name, pair.rxdm_version or 'untagged', pair.plugin_version or 'untagged')


def version_pairs(technology):
    """All known-good pairs of ``technology``."""
    tech = _check_technology(technology)
    return tuple(p for p in VERSION_PAIRS if p.technology == tech)


def version_pair(technology, rxdm=None, plugin=None, platform=GCE):
    """Return the known-good :class:`VersionPair` for ``technology``.

    With neither ``rxdm`` nor ``plugin``: the default pair of ``platform``. With one: the pair that
    contains it. With both: they must be one pair -- a mixed pair raises ValueError naming the
    known pairs. Versions may be given as ``v1.0.19``, ``1.0.19``, ``latest`` or a full image reference.
    """
    tech = _check_technology(technology)
    plat = _check_platform(platform)
    pairs = version_pairs(tech)
    if not pairs:
        raise ValueError('technology: %s has no RxDM / NCCL plugin pair: on GKE the gIB NCCL plugin is installed by '
                         '--gpudirect-strategy=rdma (seed 001); choose one of: %s'
                         % (tech, ', '.join(sorted({p.technology for p in VERSION_PAIRS}))))
    known = '; '.join(_pair_label(p) for p in pairs)
    if rxdm is None and plugin is None:
        for pair in pairs:
            if plat in pair.default_for:
                return pair
        raise ValueError('platform: %s has no default %s version pair; known pairs: %s' % (plat, tech, known))
    want_rxdm = _normalize_version(rxdm) if rxdm is not None else None
    want_plugin = _normalize_version(plugin) if plugin is not None else None
    matches = [p for p in pairs
               if (rxdm is None or p.rxdm_version == want_rxdm) and (plugin is None or p.plugin_version == want_plugin)]
    if matches:
        preferred = [p for p in matches if plat in p.default_for] or [p for p in matches if plat in p.platforms]
        return (preferred or matches)[0]
    if rxdm is not None and plugin is not None:
        raise ValueError('rxdm_version / plugin_version: %s RxDM %s and NCCL plugin %s are not a known-good pair '
                         '(RxDM and plugin must match); use one of: %s'
                         % (tech, want_rxdm or 'untagged', want_plugin or 'untagged', known))
    field, value = ('rxdm_version', want_rxdm) if rxdm is not None else ('plugin_version', want_plugin)
    raise ValueError('%s: %s %s is not in a known-good %s pair; use one of: %s'
                     % (field, field.split('_', 1)[0], value or 'untagged', tech, known))


# ---------------------------------------------------------------------------------------------
# GKE facts for TCPXO / TCPX (seed 003)
# ---------------------------------------------------------------------------------------------

GKE_NETWORK_API_VERSION = 'networking.gke.io/v1'
# seed 003 "Crea el entorno de GKE": Network (type Device) + GKENetworkParamSet (deviceMode NetDevice).
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
# seed 003 "Crea VPC y subredes" (the seed's prefix is PROJECT_ID; the node pool example uses PREFIX).

GKE_CLUSTER_FLAGS = ('--enable-dataplane-v2', '--enable-ip-alias', '--enable-multi-networking', '--no-enable-autoupgrade')
# seed 003 cluster create (both tabs). Multi-networking can only be enabled at cluster creation.
GKE_NODE_POOL_FLAGS = ('--enable-gvnic', '--no-enable-autoupgrade')
GKE_GPU_DRIVER_VERSION = 'LATEST'
# seed 003 ``gpu-driver-version=LATEST``; requirements: NVIDIA driver 535 or later.
GKE_MIN_NVIDIA_DRIVER = 535
GKE_REQUIREMENTS = (
    'Dataplane V2 (--enable-dataplane-v2)',
    'Container-Optimized OS node image (no Ubuntu / Windows)',
    'Standard clusters only (no Autopilot)',
    'no multi-instance GPU, GPU time-sharing or NVIDIA MPS',
    'no NCCL FastSocket',
    'one Pod per node uses all GPUs and all secondary NICs',
)
# seed 003 "Requisitos" and "Limitaciones".

GKE_LIB_HOST_DIR = '/home/kubernetes/bin/nvidia/lib64'
# seed 003: the installers store NCCL and the plugin there; GKE mounts it at /usr/local/nvidia/lib64.
GKE_LIB_CONTAINER_DIR = '/usr/local/nvidia/lib64'
GKE_MANIFEST_BASE = 'https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/master'


@dataclass(frozen=True)
class DaemonSetRef:
    """A vendor DaemonSet that seed 003 applies from GitHub, and how the seed checks its pods."""

    name: str
    url: str
    namespace: str
    label_selector: str


NRI_DEVICE_INJECTOR = DaemonSetRef(
    'device-injector', GKE_MANIFEST_BASE + '/nri_device_injector/nri-device-injector.yaml', 'kube-system', 'name=device-injector')
# seed 003 "Implementa el complemento del inyector de dispositivos NRI" (same for TCPX and TCPXO).


@dataclass(frozen=True)
class GkeStack:
    """GKE side of TCPXO / TCPX (seed 003). ``volumes``: (name, hostPath or None for emptyDir).
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


GKE_STACKS = MappingProxyType({
    TCPXO: GkeStack(
        technology=TCPXO,
        # "Requisitos"
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
        # "Agrega GPUDirect a tus manifiestos"
        daemon_container='tcpxo-daemon',
        daemon_devices=tuple('/dev/nvidia%d' % n for n in range(8)) + ('/dev/nvidiactl', '/dev/nvidia-uvm', DMABUF_DEVICE),
        daemon_command=('/bin/sh', '-c'),
        daemon_args=('set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n'
                     '/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= --alsologtostderr\n',),
        daemon_capabilities=('NET_ADMIN', 'NET_BIND_SERVICE'),
        daemon_mounts=(('libraries', '/usr/local/nvidia', False), ('sys', '/hostsysfs', False),
                       ('proc-sys', '/hostprocsysfs', False)),
        daemon_env=(('LD_LIBRARY_PATH', '/usr/local/nvidia/lib64'),),
        # The seed's snippet says /home/kubernetes/bin/nvidia/lib64 but its full Pod spec says
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
        # The seed's snippet and its full Pod spec pin different tags.
        seed_daemon_images=(TCPX_REPOSITORY + '/tcpgpudmarxd-dev:v2.0.9', TCPX_REPOSITORY + '/tcpgpudmarxd-dev:v2.0.11'),
    ),
})


def gke_stack(technology):
    """Return the :class:`GkeStack` for ``TCPXO`` or ``TCPX`` (RDMA: :data:`GKE_RDMA`)."""
    tech = _check_technology(technology)
    if tech not in GKE_STACKS:
        raise ValueError('technology: %s on GKE is described by GKE_RDMA (seed 001), not a GkeStack; choose one of: %s'
                         % (tech, ', '.join(GKE_STACKS)))
    return GKE_STACKS[tech]


def gke_pod_annotations(technology):
    """Pod annotations for a GPUDirect workload (seed 003 "Agrega GPUDirect a tus manifiestos")."""
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


def gke_network_manifests(technology, prefix):
    """Network + GKENetworkParamSet objects for every data NIC (seed 003 "Crea el entorno de GKE")."""
    gke_stack(technology)
    count = families_for_technology(technology)[0].data_nic_count
    networks, params = [], []
    for n in range(1, count + 1):
        name = GKE_NETWORK_NAME.format(n=n)
        networks.append({'apiVersion': GKE_NETWORK_API_VERSION, 'kind': 'Network', 'metadata': {'name': name},
                         'spec': {'parametersRef': {'group': 'networking.gke.io', 'kind': 'GKENetworkParamSet', 'name': name},
                                  'type': GKE_NETWORK_TYPE}})
        params.append({'apiVersion': GKE_NETWORK_API_VERSION, 'kind': 'GKENetworkParamSet', 'metadata': {'name': name},
                       'spec': {'vpc': GKE_VPC_LAYOUT['network'].format(prefix=prefix, n=n),
                                'vpcSubnet': GKE_VPC_LAYOUT['subnet'].format(prefix=prefix, n=n),
                                'deviceMode': GKE_NETWORK_DEVICE_MODE}})
    return networks + params


# ---------------------------------------------------------------------------------------------
# GKE RDMA facts (seed 001)
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
    # "高度な構成": manual multi-network instead of DRANET: 1 gVNIC network + 8 RDMA subnets
    'manual_gvnic_network': ('{gvnic_prefix}-net', '{gvnic_prefix}-sub'),
    'manual_rdma_network': ('{rdma_prefix}-net', '{rdma_prefix}-sub-{n}'),
    'manual_rdma_subnet_first_index': 0,
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
# Facts of seed 001 (A3 Ultra / A4 on GKE with the automated RDMA NCCL installer and managed DRANET).


# ---------------------------------------------------------------------------------------------
# OpenShift GPUDirect RDMA (seed 004; OLM names from references.md)
# ---------------------------------------------------------------------------------------------

OPENSHIFT_RDMA = MappingProxyType({
    # seed 004 intro: three methods, each over RoCE or InfiniBand -> six configurations.
    # (key, the seed's name of the method); transports spelled as the seed spells them.
    'methods': (('shared-device', '共有デバイス'), ('host-device', 'ホストデバイス'), ('sriov-legacy', 'SR-IOV レガシーデバイス')),
    'transports': ('RoCE', 'Infiniband'),
    # seed 004 "5.1. NVIDIA GPUDirect RDMA の前提条件", in install order.
    'operators': ('Node Feature Discovery Operator', 'SR-IOV Operator', 'NVIDIA Network Operator', 'NVIDIA GPU Operator'),
    # references.md "OpenShift GPUDirect RDMA": OLM (package, namespace, catalog source), same order.
    'subscriptions': (('nfd', 'openshift-nfd', 'redhat-operators'),
                      ('sriov-network-operator', 'openshift-sriov-network-operator', 'redhat-operators'),
                      ('nvidia-network-operator', 'nvidia-network-operator', 'certified-operators'),
                      ('gpu-operator-certified', 'nvidia-gpu-operator', 'certified-operators')),
    'mellanox_vendor_id': '15b3',
    'nfd_label': 'feature.node.kubernetes.io/pci-15b3.present',
})


# ---------------------------------------------------------------------------------------------
# NCCL environments and GKE version checks
# ---------------------------------------------------------------------------------------------


def nccl_env(technology, platform=GCE, debug=False):
    """The NCCL environment for a test run or workload, as a new ordered dict.

    * ``gce``: the env of seed 000's NCCL test container (TCPXO ``nccl``, TCPX ``run_tcpx_container``);
      the seed's scripts set the NCCL_* variables themselves.
    * ``gke``: seed 003's "## required" list (TCPXO / TCPX), plus "## recommended" with ``debug``;
      RDMA: seed 001's workload env (NCCL_* come from ``GKE_RDMA['nccl_env_script']``).

    ``LD_LIBRARY_PATH`` values containing ``${LD_LIBRARY_PATH}`` are shell expressions (append).
    """
    tech = _check_technology(technology)
    plat = _check_platform(platform)
    if plat == GCE:
        return dict(host_stack(tech).nccl_container.env)
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
        raise ValueError("%s: %r is not a GKE version; write MAJOR.MINOR or MAJOR.MINOR.PATCH-gke.N, "
                         "e.g. 1.30.4-gke.1129000" % (field, version))
    return tuple(int(g) if g is not None else None for g in match.groups())


def _key(parsed):
    return tuple(-1 if p is None else p for p in parsed)


def gke_version_floor(technology, version, cluster_mode='standard'):
    """The minimum patch version the seeds require for ``version``'s minor (None if any patch will do)."""
    tech = _check_technology(technology)
    parsed = parse_gke_version(version)
    if tech == RDMA:
        mode = str(cluster_mode).lower()
        if mode not in ('standard', 'autopilot'):
            raise ValueError("cluster_mode: %r; choose one of: autopilot, standard" % (cluster_mode,))
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
    """Raise ValueError when ``version`` is older than the seeds' floor for ``technology``.

    ``latest`` and MAJOR.MINOR aliases of a supported minor pass (GKE resolves them to a current
    patch). TCPX / TCPXO need Standard clusters (seed 003 "Limitaciones").
    """
    tech = _check_technology(technology)
    if tech != RDMA and str(cluster_mode).lower() != 'standard':
        raise ValueError('cluster_mode: GPUDirect-%s is not supported on Autopilot clusters; use a Standard cluster' % tech)
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
        seed = '001' if tech == RDMA else '003 "Requisitos"'
        raise ValueError('%s: %s is older than %s, the minimum GKE version for GPUDirect-%s on a %s cluster '
                         '(seed %s); use %s or later' % (field, version, floor, tech, cluster_mode, seed, floor))
