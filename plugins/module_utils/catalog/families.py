# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

# The machine types with GPUDirect and what every platform needs to know about them: GPUs, NICs,
# MTU, GPUDirect technology, the NCCL network that proves it works and the NCCL reference curves. The
# platform-specific facts live beside this file: compute.py (Compute Engine instances and networks),
# host_stacks.py (Container-Optimized OS hosts: driver, RxDM, NCCL plugin), gke.py and openshift.py.
#
# Sources (the vendor manuals are copied into tests/unit/seeds/ and the unit tests check every
# string below against them):
#
# * Google's Compute Engine GPUDirect guide -- Compute Engine, "GPUDirect を有効にして A3 Mega、A3 High、または A3 Edge
#   インスタンスを作成する" (Japanese).
# * Google's GKE GPUDirect RDMA guide -- GKE, "自動 NCCL インストーラを使用して GPUDirect RDMA を構成する" (Japanese).
# * Google's GKE GPUDirect-TCPX/TCPXO guide -- GKE, "Maximiza el ancho de banda de red de la GPU con GPUDirect y redes
#   múltiples" (Spanish).
# * Red Hat's GPUDirect RDMA chapter -- OpenShift, "第5章 NVIDIA GPUDirect Remote Direct Memory Access (RDMA)" (Japanese).
# * design.md / references.md -- facts from the vendors' public repositories (public known-good
#   version pairs, OLM package names). These are marked ``source=...`` and checked against a
#   documented table in the tests, never against a seed.
# * NCCL reference curves (NcclReference below) -- the example outputs published in
#   GoogleCloudPlatform/cluster-toolkit, each cited beside its numbers (repository path and release).
#
# Standard library only: this file is imported on Container-Optimized OS targets as well as on
# the controller, and must import under Python 3.8.
#

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Optional, Tuple

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.compute import (
    COS_IMAGE_FAMILY, COS_IMAGE_PROJECT, FLEX_START, GCE_METADATA, GCE_SCOPES, RESERVATION_BOUND, SPOT, STANDARD,
)
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.links import resource_name
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

# ---------------------------------------------------------------------------------------------
# Technologies and platforms
# ---------------------------------------------------------------------------------------------

TCPXO = 'TCPXO'
# GPUDirect-TCPXO, A3 Mega (Google's Compute Engine GPUDirect guide intro; Google's GKE GPUDirect-TCPX/TCPXO guide "Funciones y capacidades ...").
TCPX = 'TCPX'
# GPUDirect-TCPX, A3 High and A3 Edge (Google's Compute Engine GPUDirect guide intro; Google's GKE GPUDirect-TCPX/TCPXO guide).
RDMA = 'RDMA'
# GPUDirect RDMA over RoCE on CX7 NICs, A3 Ultra and A4 (Google's GKE GPUDirect RDMA guide intro).
TECHNOLOGIES = (TCPXO, TCPX, RDMA)

GCE = 'gce'
GKE = 'gke'
PLATFORMS = (GCE, GKE)

GVNIC = 'GVNIC'
# Compute API nicType for Google Virtual NIC (Google's Compute Engine GPUDirect guide ``nic-type=GVNIC``).
MRDMA = 'MRDMA'
# Compute API nicType of the CX7 RDMA NICs; GKE's DRA device class is ``mrdma.google.com`` (Google's GKE GPUDirect RDMA guide).

MIN_NVIDIA_DRIVER = 535
# Google's GKE GPUDirect-TCPX/TCPXO guide "Requirements": NVIDIA driver 535 or later (GKE ``gpu-driver-version=LATEST``); the NCCL
# preflight checks the same floor on Compute Engine hosts.

# The NCCL network (``NCCL INFO Using network NAME``) that proves each technology carries the traffic:
# TCPX, the Compute Engine GPUDirect guide's success line ``NET/GPUDirectTCPX``; TCPXO, the FasTrak plugin (the NCCL_FASTRAK_*
# environment of Google's GKE GPUDirect-TCPX/TCPXO guide); RDMA, the gIB plugin of the GKE GPUDirect RDMA guide's NCCL/gIB installer, or NCCL's own IB verbs.
NCCL_NETWORKS = MappingProxyType({
    TCPXO: ('FasTrak',),
    TCPX: ('GPUDirectTCPX',),
    RDMA: ('gIB', 'IB'),
})

# ---------------------------------------------------------------------------------------------
# Machine families
# ---------------------------------------------------------------------------------------------


def eth_names(count):
    """Guest interface names of ``count`` data NICs: eth1 .. ethN (eth0 is the management NIC)."""
    return tuple('eth%d' % n for n in range(1, count + 1))


# ---------------------------------------------------------------------------------------------
# NCCL reference curves
# ---------------------------------------------------------------------------------------------

GIB = 1 << 30
MIB = 1 << 20

CLUSTER_TOOLKIT = 'cluster-toolkit v1.95.0'
CLUSTER_TOOLKIT_URL = 'https://github.com/GoogleCloudPlatform/cluster-toolkit/blob/1047080375afbb44da4b596be314634e7486af4a/'
# The public repository and release ("Release candidate: v1.95.0", commit 1047080375afbb44da4b596be314634e7486af4a,
# 2026-06-25) whose example outputs the curves below are copied from.


@dataclass(frozen=True)
class NcclReference:
    """A published nccl-tests result of a healthy cluster: bus bandwidth against message size.

    ``points``: ``((message bytes, busbw GB/s), ...)`` in ascending size, from 64 MiB up (smaller messages
    measure latency, not the fabric); each busbw is the larger of the published out-of-place and in-place
    columns. ``source``: the public page the numbers are copied from (``url``: the same at its commit). ``derived_from``: set when no source
    gives this machine type's own figure and the curve is another family's (the reason follows it).
    """

    collective: str
    nodes: int
    gpus_per_node: int
    points: Tuple[Tuple[int, float], ...]
    source: str
    url: str
    derived_from: Optional[str] = None

    @property
    def largest_size(self):
        return self.points[-1][0]


# A3 Mega, 2 nodes x 8 GPUs, GKE with GPUDirect-TCPXO, all_gather (step 5 "Example Output", 256 B .. 8 GiB;
# 1 GiB: 182.00 out-of-place / 183.38 in-place; 8 GiB: 188.73 / 188.90).
A3_MEGA_ALL_GATHER = NcclReference(
    collective='all_gather', nodes=2, gpus_per_node=8,
    points=((64 * MIB, 141.61), (128 * MIB, 159.14), (256 * MIB, 166.94), (512 * MIB, 175.23),
            (1 * GIB, 183.38), (2 * GIB, 186.32), (4 * GIB, 188.04), (8 * GIB, 188.90)),
    source=CLUSTER_TOOLKIT + ' examples/gke-a3-megagpu/README.md', url=CLUSTER_TOOLKIT_URL + 'examples/gke-a3-megagpu/README.md')
# A3 High, 2 nodes x 8 GPUs, GKE with GPUDirect-TCPX, all_gather ("Example Output", 1 MiB .. 512 MiB;
# 512 MiB: 70.90 out-of-place / 71.35 in-place).
A3_HIGH_ALL_GATHER = NcclReference(
    collective='all_gather', nodes=2, gpus_per_node=8,
    points=((64 * MIB, 47.14), (128 * MIB, 64.83), (256 * MIB, 70.99), (512 * MIB, 71.35)),
    source=CLUSTER_TOOLKIT + ' examples/gke-a3-highgpu/multi-node-test-plan.md', url=CLUSTER_TOOLKIT_URL + 'examples/gke-a3-highgpu/multi-node-test-plan.md')
# A3 Ultra, 2 nodes x 8 GPUs, GKE with GPUDirect RDMA (DWS flex-start example), all_gather (1 KiB .. 8 GiB;
# 8 GiB: 328.85 out-of-place / 335.67 in-place).
A3_ULTRA_ALL_GATHER = NcclReference(
    collective='all_gather', nodes=2, gpus_per_node=8,
    points=((64 * MIB, 226.52), (128 * MIB, 257.43), (256 * MIB, 292.17), (512 * MIB, 319.33),
            (1 * GIB, 327.98), (2 * GIB, 331.64), (4 * GIB, 334.08), (8 * GIB, 335.67)),
    source=CLUSTER_TOOLKIT + ' examples/gke-consumption-options/dws-flex-start/README.md',
    url=CLUSTER_TOOLKIT_URL + 'examples/gke-consumption-options/dws-flex-start/README.md')

# A4, 2 nodes x 8 GPUs, GKE with GPUDirect RDMA, all_gather ("Deploy and run NCCL test with Topology Aware Scheduling",
# 1 KiB .. 8 GiB; 1 GiB: 358.32 out-of-place / 361.02 in-place; 8 GiB: 366.29 / 374.57). The cluster-toolkit release the
# other curves come from printed XXX.XX in this example; a later commit of its main branch prints the figures.
A4_ALL_GATHER = NcclReference(
    collective='all_gather', nodes=2, gpus_per_node=8,
    points=((64 * MIB, 220.32), (128 * MIB, 267.28), (256 * MIB, 324.40), (512 * MIB, 348.07),
            (1 * GIB, 361.02), (2 * GIB, 368.87), (4 * GIB, 372.63), (8 * GIB, 374.57)),
    source='cluster-toolkit main at 2c54caa examples/gke-a4/README.md',
    url='https://github.com/GoogleCloudPlatform/cluster-toolkit/blob/2c54caab14d8822f2fa91dd388f0eb5a6c3833fc/examples/gke-a4/README.md')


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
    # Published healthy nccl-tests curves (NcclReference), at most one per collective; () when no source gives one.
    nccl_references: Tuple[NcclReference, ...]
    min_gvnic_driver: Optional[str] = None
    mig_max_instances: Optional[int] = None
    mig_instance_memory_gb: Optional[int] = None
    # Line rate of one data NIC in Gb/s; data_nic_count x this is the ceiling of a measured bus bandwidth.
    nic_bandwidth_gbps: Optional[int] = None
    local_ssd_count: Optional[int] = None
    management_nic_type: str = GVNIC
    # Models the family's sources disagree on: (model, what each source says). Refused unless the user accepts the dispute.
    disputed_provisioning_models: Tuple[Tuple[str, str], ...] = ()
    # The regional Compute Engine quota its GPUs count against ("GPU quota",
    # https://cloud.google.com/compute/resource-usage#gpu_quota: one metric per GPU model; Spot and preemptible
    # VMs count against PREEMPTIBLE_ + the metric); GKE nodes are VMs and count the same.
    gpu_quota_metric: Optional[str] = None

    @property
    def reservation_bound_allowed(self):
        """Whether the family takes the RESERVATION_BOUND model (None when no source lists its models)."""
        return None if self.provisioning_models is None else RESERVATION_BOUND in self.provisioning_models

    @property
    def line_rate_gbps(self):
        """All data NICs together in Gb/s (None when no source gives the NIC bandwidth)."""
        return None if self.nic_bandwidth_gbps is None else self.data_nic_count * self.nic_bandwidth_gbps

    def nccl_reference(self, collective):
        """The family's published curve for ``collective`` (None when there is none)."""
        return next((ref for ref in self.nccl_references if ref.collective == collective), None)

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
    # Google's GKE GPUDirect RDMA guide: GPU-to-GPU traffic over 3.2 Tbps of CX7 RoCE NICs, 8 data NICs: 400 Gb/s each.
    nic_bandwidth_gbps=400,
)

FAMILIES = MappingProxyType({
    # Google's Compute Engine GPUDirect guide intro + "A3 Mega インスタンスを作成する（GPUDirect-TCPXO）" (9 gVNICs: 1 mgmt + 8 data, four
    # provisioning tabs); Google's GKE GPUDirect-TCPX/TCPXO guide node pool (--accelerator=type=nvidia-h100-mega-80gb) and
    # "Supercomputadoras" (up to 8 secondary NICs of 200 Gbps).
    'a3-megagpu-8g': Family(
        machine_type='a3-megagpu-8g', series='A3 Mega', technology=TCPXO, platforms=(GCE, GKE), gke_accelerator='nvidia-h100-mega-80gb',
        gpu_quota_metric='NVIDIA_H100_MEGA_GPUS',
        data_nic_count=8, data_interface_names=eth_names(8),
        provisioning_models=(STANDARD, SPOT, FLEX_START, RESERVATION_BOUND),
        nccl_references=(A3_MEGA_ALL_GATHER,), **_A3_GCE),
    # Google's Compute Engine GPUDirect guide "A3 High インスタンスと Edge インスタンスを作成する（GPUDirect-TCPX）" (1 + 4 gVNICs, driver
    # 1.4.0rc3+); Google's GKE GPUDirect-TCPX/TCPXO guide node pool (--accelerator=type=nvidia-h100-80gb).
    'a3-highgpu-8g': Family(
        machine_type='a3-highgpu-8g', series='A3 High', technology=TCPX, platforms=(GCE, GKE), gke_accelerator='nvidia-h100-80gb',
        gpu_quota_metric='NVIDIA_H100_GPUS',
        data_nic_count=4, data_interface_names=eth_names(4),
        provisioning_models=(STANDARD, SPOT, FLEX_START, RESERVATION_BOUND), min_gvnic_driver='1.4.0rc3',
        nccl_references=(A3_HIGH_ALL_GATHER,), **_A3_GCE),
    # Same section of Google's Compute Engine GPUDirect guide. Provisioning models: its 予約で制限 tab says "予約型プロビジョニングモデル
    # では、a3-edgegpu-8g マシンタイプはサポートされていません", but Google's current page,
    # https://docs.cloud.google.com/compute/docs/instances/about-reservation-bound-instances ("A4X Max, A4X, A4,
    # A3 Ultra, A3 Mega, A3 High with 8 GPUs, A3 Edge, and H4D instances"), lists A3 Edge (the test sandbox,
    # tests/sandbox/rules.py, follows that page). The two disagree, so RESERVATION_BOUND is disputed: refused unless
    # the user accepts it (gce_gpudirect_instance's accept_disputed_provisioning_model).
    # Google's GKE GPUDirect-TCPX/TCPXO guide covers A3 High/Mega only: no GKE accelerator, GCE only.
    # NCCL reference: no source publishes an A3 Edge run; derived from A3 High's (the same TCPX stack and 4 x 200 Gb/s NICs).
    'a3-edgegpu-8g': Family(
        machine_type='a3-edgegpu-8g', series='A3 Edge', technology=TCPX, gke_accelerator=None,
        gpu_quota_metric='NVIDIA_H100_GPUS',
        data_nic_count=4, data_interface_names=eth_names(4),
        provisioning_models=(STANDARD, SPOT, FLEX_START, RESERVATION_BOUND), min_gvnic_driver='1.4.0rc3',
        disputed_provisioning_models=((RESERVATION_BOUND, "Google's Compute Engine GPUDirect guide says a3-edgegpu-8g does not support "
                                       "it; Google's page on reservation-bound instances lists A3 Edge"),),
        nccl_references=(replace(A3_HIGH_ALL_GATHER, derived_from=('a3-highgpu-8g (the same GPUDirect-TCPX stack and '
                                                                   '4 x 200 Gb/s data NICs; no source publishes an A3 Edge run)')),),
        platforms=(GCE,), **_A3_GCE),
    # Google's GKE GPUDirect RDMA guide: CX7 RoCE, 3.2 Tbps; nvidia-h200-141gb; node pool with 1 extra gVNIC network + 8 RDMA
    # subnets ("Advanced configuration"); Terraform example: local_ssd_count = 32 for a3-ultragpu-8g. GKE only.
    'a3-ultragpu-8g': Family(
        machine_type='a3-ultragpu-8g', series='A3 Ultra', technology=RDMA, gke_accelerator='nvidia-h200-141gb',
        gpu_quota_metric='NVIDIA_H200_GPUS',
        gpu_model='NVIDIA H200', gpu_count=8, gpu_memory_gb=141, local_ssd_count=32,
        nccl_references=(A3_ULTRA_ALL_GATHER,), **_RDMA_GKE),
    # Google's GKE GPUDirect RDMA guide as above; nvidia-b200. No source gives B200 memory per GPU. NCCL reference: cluster-toolkit's
    # A4 example output (A4_ALL_GATHER).
    'a4-highgpu-8g': Family(
        machine_type='a4-highgpu-8g', series='A4', technology=RDMA, gke_accelerator='nvidia-b200',
        gpu_quota_metric='NVIDIA_B200_GPUS',
        gpu_model='NVIDIA B200', gpu_count=8, gpu_memory_gb=None,
        nccl_references=(A4_ALL_GATHER,),
        **_RDMA_GKE),
})


def choices_text(values):
    return ', '.join(sorted(values))


def check_technology(technology, field='technology'):
    tech = str(technology or '').upper().replace('GPUDIRECT-', '')
    if tech not in TECHNOLOGIES:
        raise InputError('%s: unknown GPUDirect technology %r; choose one of: %s'
                         % (field, technology, ', '.join(TECHNOLOGIES)))
    return tech


def check_platform(platform, field='platform'):
    plat = str(platform or '').lower()
    if plat not in PLATFORMS:
        raise InputError('%s: unknown platform %r; choose one of: %s' % (field, platform, ', '.join(PLATFORMS)))
    return plat


def get_family(machine_type, field='machine_type'):
    """Return the :class:`Family` of ``machine_type``.

    Accepts a bare name (``a3-megagpu-8g``) or a Compute API URL / partial URL ending in
    ``machineTypes/NAME``. Raises ValueError naming ``field`` and the known families.
    """
    try:
        return FAMILIES[resource_name(machine_type)]
    except KeyError:
        raise InputError('%s: %r is not a GPUDirect machine family known to aiinfra.gpudirect; choose one of: %s'
                         % (field, machine_type, choices_text(FAMILIES))) from None


def families_for_technology(technology):
    """Families that use ``technology``, in catalog order."""
    tech = check_technology(technology)
    return tuple(f for f in FAMILIES.values() if f.technology == tech)


DEFAULT_NODE_COUNT = 2
# Nodes (VMs, or GPU nodes per zone of a new GKE pool) the playbooks make when no count is given: the two hosts
# of the guides' NCCL all_gather test (Google's Compute Engine GPUDirect guide and its GKE GPUDirect-TCPX/TCPXO guide run
# it between two hosts, its GKE GPUDirect RDMA guide between nccl-host-1 and nccl-host-2).

GCE_MACHINE_TYPES = tuple(name for name, family in FAMILIES.items() if GCE in family.platforms)
# The machine types the Compute Engine path (modules, roles, playbooks) accepts, in catalog order;
# the argument specs and docs that must list them literally are checked against this by
# tests/unit/test_catalog_copies.py.
