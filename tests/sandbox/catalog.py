"""Read-only Google Cloud facts the sandbox serves: regions and zones, machine types, public images
and GKE versions.

Machine-type figures are the published ones (guestCpus, memoryMb, attached GPUs, bundled Local SSD).
``max_nics`` and ``nic_types`` are not fields of the MachineType resource; they are the documented
per-type limits that the rules in ``rules.py`` enforce.
"""

import json
import os

# Regions, zones, auto-mode ranges and the zones of each accelerator-optimized machine type, from one
# data file that names its sources (Google's region list, the VPC subnet page and the GPU locations page).
with open(os.path.join(os.path.dirname(__file__), 'data', 'locations.json'), encoding='utf-8') as _handle:
    LOCATIONS = json.load(_handle)

REGIONS = {region: tuple(zone.rsplit('-', 1)[1] for zone in facts['zones']) for region, facts in sorted(LOCATIONS['regions'].items())}
ZONES = {zone: region for region, facts in sorted(LOCATIONS['regions'].items()) for zone in facts['zones']}
AUTO_MODE_RANGES = {region: facts['auto_mode_range'] for region, facts in sorted(LOCATIONS['regions'].items())}
# Machine types not listed here (the general-purpose ones) are served in every zone: a simplification,
# the sandbox's own, that no test relies on for refusals.
MACHINE_TYPE_ZONES = {name: frozenset(zones) for name, zones in LOCATIONS['machine_type_zones'].items()}


def machine_type_in_zone(name, zone):
    """Whether ``zone`` offers machine type ``name`` (GPU locations page for accelerator-optimized types)."""
    return name in MACHINE_TYPES and (name not in MACHINE_TYPE_ZONES or zone in MACHINE_TYPE_ZONES[name])


def region_of_zone(zone):
    return ZONES.get(zone)


# Documented limits for accelerator-optimized types (cloud.google.com/compute/docs/accelerator-optimized-machines):
# A3 Mega: 9 gVNIC (1 + 8 data); A3 High / Edge: 5 gVNIC (1 + 4); A3 Ultra / A4: 10 (2 gVNIC + 8 MRDMA).
# nic_family 'A3_TCP' means every NIC must be GVNIC; 'RDMA' means nic0 GVNIC, the others GVNIC or MRDMA.

_GIB = 1024


def _machine(cpus, memory_gb, max_nics, cpu_platform, accelerator=None, gpus=0, local_ssd_gib=0, nic_family=None, shared=False):
    machine = {
        'guestCpus': cpus,
        'memoryMb': int(memory_gb * _GIB),
        'maximumPersistentDisks': 128,
        'maximumPersistentDisksSizeGb': '263168',
        'isSharedCpu': shared,
        'max_nics': max_nics,
        'cpu_platform': cpu_platform,
        'nic_family': nic_family,
    }
    if accelerator:
        machine['accelerators'] = [{'guestAcceleratorType': accelerator, 'guestAcceleratorCount': gpus}]
    if local_ssd_gib:
        machine['bundledLocalSsds'] = {'defaultInterface': 'NVME', 'partitionCount': local_ssd_gib // 375, 'supportedInterfaces': ['NVME']}
    return machine


MACHINE_TYPES = {
    'a3-megagpu-8g': _machine(208, 1872, 9, 'Intel Sapphire Rapids', 'nvidia-h100-mega-80gb', 8, 6000, 'A3_TCP'),
    'a3-highgpu-8g': _machine(208, 1872, 5, 'Intel Sapphire Rapids', 'nvidia-h100-80gb', 8, 6000, 'A3_TCP'),
    'a3-edgegpu-8g': _machine(208, 1872, 5, 'Intel Sapphire Rapids', 'nvidia-h100-80gb', 8, 6000, 'A3_TCP'),
    'a3-ultragpu-8g': _machine(224, 2952, 10, 'Intel Emerald Rapids', 'nvidia-h200-141gb', 8, 12000, 'RDMA'),
    'a4-highgpu-8g': _machine(224, 3968, 10, 'Intel Emerald Rapids', 'nvidia-b200', 8, 12000, 'RDMA'),
    'e2-medium': _machine(2, 4, 2, 'Intel Broadwell', shared=True),
    'e2-standard-2': _machine(2, 8, 2, 'Intel Broadwell'),
    'e2-standard-4': _machine(4, 16, 4, 'Intel Broadwell'),
    'e2-standard-8': _machine(8, 32, 8, 'Intel Broadwell'),
    'n1-standard-4': _machine(4, 15, 4, 'Intel Haswell'),
    'n2-standard-4': _machine(4, 16, 4, 'Intel Cascade Lake'),
    'n2-standard-8': _machine(8, 32, 8, 'Intel Cascade Lake'),
    'n2-standard-32': _machine(32, 128, 8, 'Intel Cascade Lake'),
    'c3-standard-8': _machine(8, 32, 8, 'Intel Sapphire Rapids'),
}


def machine_type_resource(name):
    """The public MachineType fields for ``name`` (without zone, id, selfLink), or None."""
    spec = MACHINE_TYPES.get(name)
    if spec is None:
        return None
    public = {key: value for key, value in spec.items() if key not in ('max_nics', 'cpu_platform', 'nic_family')}
    gpus = spec.get('accelerators', [{}])[0].get('guestAcceleratorCount')
    if gpus:
        public['description'] = '%d vCPUs, %d GB RAM, %d GPUs' % (spec['guestCpus'], spec['memoryMb'] // _GIB, gpus)
    else:
        public['description'] = '%d vCPUs, %d GB RAM' % (spec['guestCpus'], spec['memoryMb'] // _GIB)
    return public


_GVNIC_IMAGE_FEATURES = [
    {'type': 'VIRTIO_SCSI_MULTIQUEUE'}, {'type': 'SEV_CAPABLE'}, {'type': 'SEV_SNP_CAPABLE'},
    {'type': 'UEFI_COMPATIBLE'}, {'type': 'GVNIC'}, {'type': 'IDPF'},
]

# project -> image name -> facts.  The newest non-deprecated image of a family is what the family resolves to.
IMAGES = {
    'cos-cloud': {
        'cos-113-18244-382-24': {'family': 'cos-113-lts', 'diskSizeGb': '10'},
        'cos-117-18613-339-14': {'family': 'cos-117-lts', 'diskSizeGb': '10'},
        'cos-121-18867-90-38': {'family': 'cos-121-lts', 'diskSizeGb': '10', 'deprecated': 'cos-121-18867-199-28'},
        'cos-121-18867-199-28': {'family': 'cos-121-lts', 'diskSizeGb': '10'},
        'cos-stable-121-18867-199-28': {'family': 'cos-stable', 'diskSizeGb': '10'},
        'cos-beta-125-19216-0-21': {'family': 'cos-beta', 'diskSizeGb': '10'},
        'cos-arm64-121-18867-199-28': {'family': 'cos-arm64-121-lts', 'diskSizeGb': '10', 'architecture': 'ARM64'},
    },
    'debian-cloud': {
        'debian-12-bookworm-v20251111': {'family': 'debian-12', 'diskSizeGb': '10'},
    },
    'ubuntu-os-cloud': {
        'ubuntu-2204-jammy-v20251113': {'family': 'ubuntu-2204-lts', 'diskSizeGb': '10'},
    },
    # An image imported without the GVNIC guest OS feature, as images made by `gcloud compute images create` are unless
    # the feature is declared (siderolabs/pkgs#1295): the stand-in for "This boot disk source does not support gVNIC."
    'sandbox-images': {
        'imported-no-gvnic-v1': {'family': 'imported-no-gvnic', 'diskSizeGb': '10', 'features': ['UEFI_COMPATIBLE', 'VIRTIO_SCSI_MULTIQUEUE']},
    },
}


def image_resource(project, name):
    facts = IMAGES.get(project, {}).get(name)
    if facts is None:
        return None
    image = {
        'kind': 'compute#image',
        'name': name,
        'family': facts['family'],
        'description': 'Public image %s' % name,
        'sourceType': 'RAW',
        'rawDisk': {'source': '', 'containerType': 'TAR'},
        'status': 'READY',
        'archiveSizeBytes': '1610612736',
        'diskSizeGb': facts['diskSizeGb'],
        'architecture': facts.get('architecture', 'X86_64'),
        'guestOsFeatures': [{'type': name} for name in facts['features']] if 'features' in facts else list(_GVNIC_IMAGE_FEATURES),
        'licenses': ['https://www.googleapis.com/compute/v1/projects/%s/global/licenses/%s' % (project, facts['family'])],
        'storageLocations': ['eu', 'asia', 'us'],
        'labelFingerprint': '42WmSpB8rSM=',
        'creationTimestamp': '2025-11-11T10:00:00.000-08:00',
    }
    if facts.get('deprecated'):
        image['deprecated'] = {
            'state': 'DEPRECATED',
            'replacement': 'https://www.googleapis.com/compute/v1/projects/%s/global/images/%s' % (project, facts['deprecated']),
        }
    return image


def image_from_family(project, family):
    """Newest non-deprecated image name of ``family`` (names sort by version here), or None."""
    names = sorted(name for name, facts in IMAGES.get(project, {}).items()
                   if facts['family'] == family and not facts.get('deprecated'))
    return names[-1] if names else None


# GKE versions offered by getServerConfig, as GKE offers them today. Source: the "Current versions" table of the GKE
# release notes (https://docs.cloud.google.com/kubernetes-engine/docs/release-notes, read 2026-12): default patch version
# for cluster creation per channel (Rapid 1.36.4-gke.1082000, Regular 1.35.7-gke.1222000, Stable 1.35.6-gke.1250000,
# Extended 1.35.7-gke.1222000, no channel 1.35.7-gke.1222000) and the recommended auto-upgrade targets (Stable and no
# channel 1.34.9-gke.1655001, Extended 1.32.13-gke.2268000); available minors: Rapid 1.34-1.37, Regular and no channel
# 1.34-1.36, Stable 1.34-1.35, Extended 1.31-1.36. Each channel's list starts with its default. Autopilot's floor for the
# automatic RDMA NCCL installer, 1.36.2-gke.1368000 (seed 001), is met by Rapid's 1.36.4-gke.1082000; 1.34.8-gke.1278000 is
# seed 001's floor for Standard clusters (gpuDirectStrategy RDMA).
# SIMULATION: outside a channel GKE offers the minors 1.34-1.36 only; the sandbox also keeps offering the older patches
# below the first five (versions GKE offered earlier), so that a test can still create a cluster of an older minor (the
# control plane's emulation of 1.33, seed 003's TCPX/TCPXO floors per minor). A real cluster of those minors today is an
# Extended-channel cluster.
GKE_DEFAULT_VERSION = '1.35.7-gke.1222000'
GKE_RDMA_INSTALLER_MIN_VERSION = '1.34.8-gke.1278000'
GKE_VERSIONS = [
    '1.36.4-gke.1082000',
    '1.35.7-gke.1222000',
    '1.35.6-gke.1250000',
    '1.34.9-gke.1655001',
    '1.34.8-gke.1278000',
    '1.34.1-gke.1829001',
    '1.33.5-gke.1308000',
    '1.33.4-gke.1245000',
    '1.32.9-gke.1108000',
    '1.31.13-gke.1023000',
    '1.30.14-gke.1734000',
    '1.30.4-gke.1129000',
    '1.29.15-gke.1382000',
]
GKE_CHANNELS = {
    'RAPID': ['1.36.4-gke.1082000', '1.35.7-gke.1222000', '1.34.9-gke.1655001'],
    'REGULAR': ['1.35.7-gke.1222000', '1.35.6-gke.1250000', '1.34.9-gke.1655001'],
    'STABLE': ['1.35.6-gke.1250000', '1.34.9-gke.1655001'],
    'EXTENDED': ['1.35.7-gke.1222000', '1.34.9-gke.1655001', '1.32.13-gke.2268000'],
}
GKE_IMAGE_TYPES = ['COS_CONTAINERD', 'UBUNTU_CONTAINERD', 'WINDOWS_LTSC_CONTAINERD']


def gke_version_key(version):
    """``1.34.8-gke.1278000`` -> (1, 34, 8, 1278000), for ordering GKE versions."""
    numbers = [int(part) for part in version.replace('-gke.', '.').split('.') if part.isdigit()]
    return tuple(numbers)
