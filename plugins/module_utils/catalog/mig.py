# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

# Multi-instance GPU (MIG) facts: the GPU instance profiles of each GPU model the Compute Engine
# families carry, where each profile can be placed, which compute instances fit in a GPU instance,
# and which GPUDirect technologies cannot run beside MIG.
#
# Sources:
# * Google's Compute Engine GPUDirect guide "マルチインスタンス GPU": up to 7 instances on an H100 80GB, 10 GB each (the 1g.10gb
#   profile; families.py mig_max_instances / mig_instance_memory_gb, checked by tests against the seed).
# * Google's GKE GPUDirect-TCPX/TCPXO guide "Limitations": "GPUDirect-TCPX y GPUDirect-TCPXO no son compatibles con GPU de varias
#   instancias" (GPUDirect-TCPX/TCPXO do not work with MIG).
# * NVIDIA H200: what the real nvidia-smi 580.159.04 printed for `nvidia-smi mig -lgip` and
#   `nvidia-smi mig -lgipp` on an H200 with MIG disabled (tests/fixtures/mig/h200x1-2026-11-30/;
#   a unit test parses those files and compares them with this table).
# * NVIDIA H100 80GB: NVIDIA's MIG User Guide, "Supported MIG Profiles" (H100 80GB names: 1g.10gb,
#   1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb, the same profile IDs and instance
#   counts as the A100-80GB table) and "Getting Started with MIG" (`nvidia-smi mig -lgipp`: the same
#   placements as printed on the H200 above: both are GH100 with 8 memory slices and 7 compute slices).
# * Compute instance profiles: MIG User Guide, "Compute Instances" (`nvidia-smi mig -lcip -gi 1` on a
#   3g GPU instance lists 1c.3g (3 of them), 2c.3g (1) and the default 3g (1)): a GPU instance of g
#   compute slices takes compute instances of 1, 2, 3 or 4 slices smaller than g, or one of all g
#   (the default that `nvidia-smi mig -cgi ... -C` creates), their slices adding up to at most g.
#
# Standard library only: imported on Container-Optimized OS targets by the gpu_mig module.

from dataclasses import dataclass
from types import MappingProxyType
from typing import Tuple

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.families import TCPX, TCPXO
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

MEMORY_SLICES = 8
COMPUTE_SLICES = 7
TECHNOLOGIES_WITHOUT_MIG = (TCPX, TCPXO)
# Google's GKE GPUDirect-TCPX/TCPXO guide "Limitations"; RDMA families run on GKE, where the collection does not manage MIG.
NO_GPUDIRECT = 'none'


@dataclass(frozen=True)
class GpuInstanceProfile:
    """One GPU instance profile: ``name`` as nvidia-smi prints it without ``MIG `` (``1g.10gb``), its
    profile ID, compute slices (the ``g``), the memory slices it occupies, the placement starts
    (``-lgipp``) and how many instances of it one GPU can hold (``-lgip`` Total)."""

    name: str
    profile_id: int
    compute_slices: int
    memory_slices: int
    placements: Tuple[int, ...]
    max_count: int


def _gh100_profiles(one, one_double, two, three, four, seven):
    """The seven GH100 profiles, by name: the IDs, slices, placements and counts are the same on H100 and H200."""
    return (
        GpuInstanceProfile(one, 19, 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
        GpuInstanceProfile(one + '+me', 20, 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
        GpuInstanceProfile(one_double, 15, 1, 2, (0, 2, 4, 6), 4),
        GpuInstanceProfile(two, 14, 2, 2, (0, 2, 4), 3),
        GpuInstanceProfile(three, 9, 3, 4, (0, 4), 2),
        GpuInstanceProfile(four, 5, 4, 4, (0,), 1),
        GpuInstanceProfile(seven, 0, 7, 8, (0,), 1),
    )


# Keyed by the product name nvidia-smi prints (`--query-gpu=name`).
GPU_PROFILES = MappingProxyType({
    'NVIDIA H100 80GB HBM3': _gh100_profiles('1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb'),
    'NVIDIA H200': _gh100_profiles('1g.18gb', '1g.35gb', '2g.35gb', '3g.71gb', '4g.71gb', '7g.141gb'),
})
# The machine families' GPUs (families.py gpu_model, gpu_memory_gb) -> the product name above.
FAMILY_GPU_NAMES = MappingProxyType({
    ('NVIDIA H100', 80): 'NVIDIA H100 80GB HBM3',
    ('NVIDIA H200', 141): 'NVIDIA H200',
})


def profiles_for_gpu(name):
    """The profiles of the GPU nvidia-smi calls ``name``; ValueError when the catalog has none."""
    try:
        return GPU_PROFILES[name]
    except KeyError:
        raise InputError('no MIG profiles are known for %r; known GPUs: %s' % (name, ', '.join(sorted(GPU_PROFILES)))) from None


def gpu_name_for_family(family):
    """The nvidia-smi product name of a families.Family's GPUs (None when the catalog has no MIG facts for it)."""
    return FAMILY_GPU_NAMES.get((family.gpu_model, family.gpu_memory_gb))


def compute_instance_profiles(gpu_instance):
    """{compute instance name: compute slices} that fit in a GPU instance profile (default: its own name)."""
    sizes = {'%dc.%s' % (n, gpu_instance.name): n for n in (1, 2, 3, 4) if n < gpu_instance.compute_slices}
    sizes[gpu_instance.name] = gpu_instance.compute_slices
    return sizes
