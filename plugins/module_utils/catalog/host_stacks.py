# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

# Container-Optimized OS host stacks of Compute Engine GPUDirect VMs (TCPXO, TCPX): GPU driver,
# registry, the receive-datapath manager (RxDM) and NCCL plugin containers, their known-good
# version pairs and the NCCL test container. Sources: Google's Compute Engine GPUDirect guide, design.md / references.md.
#
# Standard library only: imported on Container-Optimized OS targets by the host modules.
#

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional, Tuple

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.families import GCE, GKE, TCPX, TCPXO, check_platform, check_technology, eth_names
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.image_reference import ImageReference

# ---------------------------------------------------------------------------------------------
# Container-Optimized OS host facts (Google's Compute Engine GPUDirect guide, "GPU ドライバをインストールする", "NIC に GPU へのアクセス権を
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
# Google's Compute Engine GPUDirect guide, Artifact Registry form (both technologies). Container Registry form: ``REGISTRY_AUTH_COMMAND_GCR``.
REGISTRY_AUTH_COMMAND_GCR = 'docker-credential-gcr configure-docker'
IMAGE_BASE = REGISTRY + '/gce-ai-infra'
TCPXO_REPOSITORY = IMAGE_BASE + '/gpudirect-tcpxo'
TCPX_REPOSITORY = IMAGE_BASE + '/gpudirect-tcpx'
GIB_REPOSITORY = IMAGE_BASE + '/gpudirect-gib'

NVIDIA_DEVICES = tuple('/dev/nvidia%d' % n for n in range(8)) + ('/dev/nvidia-uvm', '/dev/nvidiactl')
# The ten ``--device`` arguments every Google's Compute Engine GPUDirect guide container gets (host path == container path).
DMABUF_DEVICE = '/dev/dmabuf_import_helper'
# TCPXO only: created by ``modprobe import-helper`` (Google's Compute Engine GPUDirect guide).


@dataclass(frozen=True)
class ContainerSpec:
    """One ``docker run`` of Google's Compute Engine GPUDirect guide, as data. ``image`` is the repository without tag when the tag
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
    interactive: bool = False


@dataclass(frozen=True)
class HostStack:
    """The COS host side of one technology on Compute Engine (Google's Compute Engine GPUDirect guide)."""

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
        nccl_test_data_interfaces=eth_names(8),
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
            shm_size='1g', ulimits=(('memlock', '-1'), ('stack', '67108864')), user='0', userns_host=True,
            interactive=True),
        nccl_test_setup_commands=('/scripts/init_ssh.sh {hosts}', 'pushd /scripts && /scripts/gen_hostfiles.sh {hosts}; popd'),
        nccl_test_command='/scripts/run-allgather.sh 8 eth1,eth2,eth3,eth4 1M 512M 2',
        nccl_success_line='NCCL INFO NET/GPUDirectTCPX ver. 3.1.1.',
        nccl_test_data_interfaces=eth_names(4),
    ),
})
# ``{hosts}`` in test commands: space-separated VM names. RDMA has no COS host stack in the guides.
# TCPX's test container is run as ``run_tcpx_container -it --rm IMAGE shell``: ``interactive`` is that ``-it``
# (a shell with a terminal, which keeps the container up until it is removed).

NCCL_CONTAINER_NAME = 'nccl'
# Google's Compute Engine GPUDirect guide names the TCPXO test container ``nccl`` and starts the TCPX one without a name (an interactive
# shell); the collection starts both, so the TCPX one gets the same name, which ``docker exec`` needs.


def nccl_container_name(technology):
    """The name of the NCCL test container on a host of ``technology`` (the guide's, else NCCL_CONTAINER_NAME)."""
    return host_stack(technology).nccl_container.name or NCCL_CONTAINER_NAME


def host_stack(technology):
    """Return the :class:`HostStack` of a COS host for ``TCPXO`` or ``TCPX``."""
    tech = check_technology(technology)
    if tech not in HOST_STACKS:
        raise InputError('technology: %s has no Compute Engine host stack in aiinfra.gpudirect (Google\'s guides set it up '
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
    # Google's Compute Engine GPUDirect guide "NIC に GPU へのアクセス権を付与する" (rxdm) and "NCCL 環境を設定する" (NCCL_NET_IMAGE).
    VersionPair('compute-engine-guide', TCPXO, TCPXO_REPOSITORY + '/tcpgpudmarxd-dev', 'v1.0.19',
                TCPXO_REPOSITORY + '/nccl-plugin-gpudirecttcpx-dev', 'v1.0.13-1',
                source='Google\'s Compute Engine GPUDirect guide', platforms=(GCE,), default_for=(GCE,)),
    # design.md / references.md: container-engine-accelerators gpudirect-tcpxo release notes (Jan 2026).
    VersionPair('public-2026-01', TCPXO, TCPXO_REPOSITORY + '/tcpgpudmarxd-dev', 'v1.0.21',
                TCPXO_REPOSITORY + '/nccl-plugin-gpudirecttcpx-dev', 'v1.0.15',
                source='design.md / references.md (container-engine-accelerators)', platforms=(GCE, GKE), default_for=(GKE,)),
    # Google's Compute Engine GPUDirect guide "NIC に GPU へのアクセス権を付与する" and its plugin install command: both untagged.
    VersionPair('compute-engine-guide', TCPX, TCPX_REPOSITORY + '/tcpgpudmarxd', None,
                TCPX_REPOSITORY + '/nccl-plugin-gpudirecttcpx', None,
                source='Google\'s Compute Engine GPUDirect guide', platforms=(GCE,), default_for=(GCE,)),
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
    if '/' in text or ':' in text:
        text = ImageReference.parse(text).tag or ''
    if text.lower() in _UNTAGGED:
        return None
    if re.match(r'^\d', text):
        text = 'v' + text
    return text


def _pair_label(pair):
    return '%s (rxdm %s, plugin %s)' % (pair.name, pair.rxdm_version or 'untagged', pair.plugin_version or 'untagged')


def version_pairs(technology):
    """All known-good pairs of ``technology``."""
    tech = check_technology(technology)
    return tuple(p for p in VERSION_PAIRS if p.technology == tech)


def version_pair(technology, rxdm=None, plugin=None, platform=GCE):
    """Return the known-good :class:`VersionPair` for ``technology``.

    With neither ``rxdm`` nor ``plugin``: the default pair of ``platform``. With one: the pair that
    contains it. With both: they must be one pair -- a mixed pair raises ValueError naming the
    known pairs. Versions may be given as ``v1.0.19``, ``1.0.19``, ``latest`` or a full image reference.
    """
    tech = check_technology(technology)
    plat = check_platform(platform)
    pairs = version_pairs(tech)
    if not pairs:
        raise InputError('technology: %s has no RxDM / NCCL plugin pair: on GKE the gIB NCCL plugin is installed by '
                         '--gpudirect-strategy=rdma (Google\'s GKE GPUDirect RDMA guide); choose one of: %s'
                         % (tech, ', '.join(sorted({p.technology for p in VERSION_PAIRS}))))
    known = '; '.join(_pair_label(p) for p in pairs)
    if rxdm is None and plugin is None:
        for pair in pairs:
            if plat in pair.default_for:
                return pair
        raise InputError('platform: %s has no default %s version pair; known pairs: %s' % (plat, tech, known))
    want_rxdm = _normalize_version(rxdm) if rxdm is not None else None
    want_plugin = _normalize_version(plugin) if plugin is not None else None
    matches = [p for p in pairs
               if (rxdm is None or p.rxdm_version == want_rxdm) and (plugin is None or p.plugin_version == want_plugin)]
    if matches:
        preferred = [p for p in matches if plat in p.default_for] or [p for p in matches if plat in p.platforms]
        return (preferred or matches)[0]
    if rxdm is not None and plugin is not None:
        raise InputError('rxdm_version / plugin_version: %s RxDM %s and NCCL plugin %s are not a known-good pair '
                         '(RxDM and plugin must match); use one of: %s'
                         % (tech, want_rxdm or 'untagged', want_plugin or 'untagged', known))
    field, value = ('rxdm_version', want_rxdm) if rxdm is not None else ('plugin_version', want_plugin)
    raise InputError('%s: %s %s is not in a known-good %s pair; use one of: %s'
                     % (field, field.split('_', 1)[0], value or 'untagged', tech, known))
