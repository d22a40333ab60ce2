# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU preflight of an NCCL test host: nvidia-smi's GPU list and topology, checked against the machine type.

Standard library only: the nccl_perf module runs it on the target.
"""

from __future__ import annotations

import re

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl.parse import ANSI_ESCAPE

# ---------------------------------------------------------------------------------------------
# GPU preflight (nvidia-smi)
# ---------------------------------------------------------------------------------------------

NVIDIA_SMI_QUERY = ('--query-gpu=index,name,driver_version,mig.mode.current,memory.total,pci.bus_id', '--format=csv,noheader')
NVIDIA_SMI_TOPOLOGY = ('topo', '-m')


def parse_nvidia_smi_gpus(text):
    """``nvidia-smi --query-gpu=index,name,driver_version,mig.mode.current,memory.total,pci.bus_id --format=csv,noheader``."""
    gpus = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lower().startswith('index,'):
            continue
        fields = [f.strip() for f in line.split(',')]
        if len(fields) != 6 or not fields[0].isdigit():
            raise ValueError('nvidia-smi line %d: %r is not index, name, driver_version, mig.mode.current, memory.total, '
                             'pci.bus_id' % (number, line))
        memory = re.match(r'^(\d+)\s*MiB$', fields[4])
        gpus.append({'index': int(fields[0]), 'name': fields[1], 'driver_version': fields[2], 'mig_mode': fields[3],
                     'memory_mib': int(memory.group(1)) if memory else None, 'pci_bus_id': fields[5]})
    return gpus


def parse_nvidia_smi_topology(text):
    """``nvidia-smi topo -m`` -> ``{'GPU0': {'GPU1': 'NV18', ...}, ...}`` (GPU-to-GPU links only)."""
    lines = [ANSI_ESCAPE.sub('', line) for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    header = lines[0].split('\t')
    columns = [h.strip() for h in header]
    gpus = [c for c in columns if re.match(r'^GPU\d+$', c)]
    matrix = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.split('\t')]
        if not cells or not re.match(r'^GPU\d+$', cells[0]):
            if matrix:
                break
            continue
        links = {}
        for gpu in gpus:
            position = columns.index(gpu)
            if position < len(cells) and gpu != cells[0]:
                links[gpu] = cells[position]
        matrix[cells[0]] = links
    return matrix


def _driver_major(version):
    match = re.match(r'^(\d+)', str(version or ''))
    return int(match.group(1)) if match else None


def check_gpus(gpus, topology, expected_count=None, gpu_model=None, min_driver=None, requested=None):
    """Preflight problems (a list of sentences; empty when fit for an NCCL test).

    Checks: the GPUs the run asks for (``requested``, nccl-tests' ``-g``) are there, GPU count, model (``name`` starts
    with ``gpu_model``), one driver version of at least ``min_driver`` (major), MIG off on every GPU, every GPU pair
    linked by NVLink (``NV#``).
    """
    problems = []
    if requested is not None and requested > len(gpus):
        # nccl-tests itself would only print "Invalid number of GPUs: N requested but only M were found".
        problems.append('ngpus: the test asks for %d GPU(s) per process and nvidia-smi shows %d; give ngpus %d or less'
                        % (requested, len(gpus), len(gpus)))
    if expected_count is not None and len(gpus) != expected_count:
        problems.append('nvidia-smi shows %d GPU(s); the family has %d: a GPU is missing or the driver is not loaded'
                        % (len(gpus), expected_count))
    if gpu_model:
        wrong = sorted({g['name'] for g in gpus if not g['name'].startswith(gpu_model)})
        if wrong:
            problems.append('GPU model %s, expected %s' % (', '.join(wrong), gpu_model))
    drivers = sorted({g['driver_version'] for g in gpus})
    if len(drivers) > 1:
        problems.append('GPUs report different driver versions: %s' % ', '.join(drivers))
    if min_driver is not None and drivers and (_driver_major(drivers[0]) or 0) < int(min_driver):
        problems.append('NVIDIA driver %s is older than %s' % (drivers[0], min_driver))
    mig = [g for g in gpus if g['mig_mode'].lower() == 'enabled']
    if mig:
        problems.append('MIG mode is Enabled on GPU %s: NCCL tests need whole GPUs; disable MIG first'
                        % ', '.join(str(g['index']) for g in mig))
    if len(gpus) > 1:
        not_nvlink = sorted('%s-%s %s' % (a, b, link) for a, row in topology.items() for b, link in row.items()
                            if a < b and not link.startswith('NV'))
        if not topology:
            problems.append('nvidia-smi topo -m printed no GPU matrix')
        elif not_nvlink:
            problems.append('GPU pairs not linked by NVLink: %s' % ', '.join(not_nvlink))
    return problems
