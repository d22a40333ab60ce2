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

GPU_FIELDS = ('index', 'name', 'driver_version', 'mig.mode.current', 'memory.total', 'pci.bus_id')
NVIDIA_SMI_QUERY = ('--query-gpu=' + ','.join(GPU_FIELDS), '--format=csv,noheader')
NVIDIA_SMI_TOPOLOGY = ('topo', '-m')


def _query_rows(text, fields):
    """The rows of ``nvidia-smi --query-gpu=FIELDS --format=csv[,noheader]`` (the header line skipped), each a list of
    stripped fields; ValueError naming the line and the fields asked for when a line is not such a row."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lower().startswith('index,'):
            continue
        row = [f.strip() for f in line.split(',')]
        if len(row) != len(fields) or not row[0].isdigit():
            raise ValueError('nvidia-smi line %d: %r is not %s' % (number, line, ', '.join(fields)))
        rows.append(row)
    return rows


def parse_nvidia_smi_gpus(text):
    """``nvidia-smi --query-gpu=index,name,driver_version,mig.mode.current,memory.total,pci.bus_id --format=csv,noheader``."""
    gpus = []
    for fields in _query_rows(text, GPU_FIELDS):
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


# ---------------------------------------------------------------------------------------------
# GPU health (nvidia-smi): uncorrected ECC errors, retired pages and remapped rows, NVLink links
# ---------------------------------------------------------------------------------------------
# What NVIDIA's GPU memory error management guide makes actionable: an uncorrected ECC error since the driver loaded
# (volatile), a row remap or page retirement pending (applied at the next GPU reset), a row remap that failed (the
# memory can no longer repair itself). The aggregate (lifetime) count is kept as evidence, not judged: it survives
# resets and remaps that already repaired the memory. Xid events are not in nvidia-smi's output: the driver writes them to
# the kernel log (``NVRM: Xid (PCI:0000:3b:00): 79, ...``), read here with dmesg (parse_kernel_xids).

ECC_FIELDS = ('index', 'ecc.mode.current', 'ecc.errors.uncorrected.volatile.total', 'ecc.errors.uncorrected.aggregate.total',
              'retired_pages.pending')
NVIDIA_SMI_ECC = ('--query-gpu=' + ','.join(ECC_FIELDS), '--format=csv,noheader')
NVIDIA_SMI_ROW_REMAPPER = ('-q', '-d', 'ROW_REMAPPER')
NVIDIA_SMI_NVLINK = ('nvlink', '-s')

KERNEL_LOG = ('dmesg',)

# The Xids after which the GPU, not the application, needs an action before a fabric test means anything: those whose
# "Resolution Bucket (Immediate Action)" in NVIDIA's Xid catalog for Ampere and newer GPUs
# (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) is RESET_GPU, RESTART_BM (reboot the machine)
# or a hardware workflow (WORKFLOW_XID_48, the double bit ECC error's; WORKFLOW_NVLINK_ERR), with its description there.
# The other Xids (RESTART_APP: an application's fault, such as 13 or 31; IGNORE: 63, 92, ...) are kept as evidence and
# not judged.
XID_GPU_ACTIONS = {
    46: ('GPU stopped processing', 'RESET_GPU'),
    48: ('double bit ECC error', 'WORKFLOW_XID_48'),
    62: ('internal micro-controller halt', 'RESET_GPU'),
    64: ('GPU memory remapping failure', 'RESET_GPU'),
    74: ('NVLink error', 'WORKFLOW_NVLINK_ERR'),
    79: ('GPU has fallen off the bus', 'RESTART_BM'),
    95: ('uncontained memory error', 'RESET_GPU'),
    109: ('context switch timeout', 'RESET_GPU'),
    119: ('GSP RPC timeout', 'RESET_GPU'),
    120: ('GSP error', 'RESET_GPU'),
    136: ('link training failed', 'RESET_GPU'),
    140: ('ECC unrecovered error', 'RESET_GPU'),
    143: ('GPU initialization error', 'RESET_GPU'),
    155: ('NVLink SW defined error', 'RESET_GPU'),
    158: ('GPU fatal timeout', 'RESET_GPU'),
}
XID_ACTION_WORDS = {'RESET_GPU': 'reset the GPU (nvidia-smi -r, or reboot the VM)', 'RESTART_BM': 'reboot the VM',
                    'WORKFLOW_XID_48': "reset the GPU; NVIDIA's Xid 48 workflow: replace it if the error comes back",
                    'WORKFLOW_NVLINK_ERR': "reset the GPU; NVIDIA's NVLink error workflow: report the host if it comes back"}

UNCORRECTED_ECC, RETIRED_PAGES_PENDING = 'uncorrected_ecc', 'retired_pages_pending'
GPU_XID = 'xid'
ROW_REMAP_PENDING, ROW_REMAP_FAILURE, NVLINK_DOWN = 'row_remap_pending', 'row_remap_failure', 'nvlink_down'


def _count(value):
    """An nvidia-smi counter: int, or None for [N/A] / [Not Supported] / N/A."""
    value = value.strip()
    return int(value) if value.isdigit() else None


def _flag(value):
    """An nvidia-smi yes/no field: True, False, or None when not supported."""
    value = value.strip().lower()
    return True if value in ('yes', '1', 'true') else False if value in ('no', '0', 'false') else None


def parse_nvidia_smi_ecc(text):
    """``nvidia-smi --query-gpu=index,ecc.mode.current,ecc.errors.uncorrected.volatile.total,
    ecc.errors.uncorrected.aggregate.total,retired_pages.pending --format=csv,noheader``."""
    return [{'index': int(fields[0]), 'ecc_mode': fields[1], 'uncorrected_volatile': _count(fields[2]),
             'uncorrected_aggregate': _count(fields[3]), 'retired_pages_pending': _flag(fields[4])}
            for fields in _query_rows(text, ECC_FIELDS)]


_SECTION_GPU = re.compile(r'^GPU\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$')
_FIELD = re.compile(r'^\s+(?P<key>[^:]+?)\s*:\s*(?P<value>.*?)\s*$')
_REMAPPER_FIELDS = {'correctable error': ('correctable', _count), 'uncorrectable error': ('uncorrectable', _count),
                    'pending': ('pending', _flag), 'remapping failure occurred': ('failure', _flag)}


def parse_nvidia_smi_row_remapper(text):
    """``nvidia-smi -q -d ROW_REMAPPER`` -> ``{pci_bus_id: {'correctable', 'uncorrectable', 'pending', 'failure'}}``
    (None where the GPU does not remap rows: ``Remapped Rows : N/A``)."""
    found, current = {}, None
    for line in text.splitlines():
        gpu = _SECTION_GPU.match(line)
        if gpu:
            current = found.setdefault(gpu.group('bus').upper(),
                                       {'correctable': None, 'uncorrectable': None, 'pending': None, 'failure': None})
            continue
        field = _FIELD.match(line)
        if current is not None and field and field.group('key').lower() in _REMAPPER_FIELDS:
            name, read = _REMAPPER_FIELDS[field.group('key').lower()]
            current[name] = read(field.group('value'))
    if not found:
        raise ValueError('nvidia-smi -q -d ROW_REMAPPER printed no GPU section (GPU 00000000:00:06.0 ...)')
    return found


_NVLINK_GPU = re.compile(r'^GPU\s+(?P<index>\d+):')
_NVLINK_LINK = re.compile(r'^\s+Link\s+(?P<link>\d+):\s*(?P<state>.*?)\s*$')


def parse_nvidia_smi_nvlink(text):
    """``nvidia-smi nvlink -s`` -> ``{gpu_index: {link: 'up' | 'inactive'}}`` (a link with a speed is up); a GPU with
    no link listed (no NVLink, or NVML's ``all links are inActive``) maps to {}."""
    found, current = {}, None
    for line in text.splitlines():
        gpu = _NVLINK_GPU.match(line)
        if gpu:
            current = found.setdefault(int(gpu.group('index')), {})
            continue
        link = _NVLINK_LINK.match(line)
        if current is not None and link:
            current[int(link.group('link'))] = 'up' if re.search(r'\d\s*[GM]B/s', link.group('state')) else 'inactive'
    return found


# The driver's kernel log line (NVIDIA's Xid documentation: ``NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper:
# ...``): the GPU's PCI domain:bus:device, then the Xid.
_XID = re.compile(r'NVRM: Xid \((?:PCI:)?[0-9A-Fa-f]{4,8}:(?P<bus>[0-9A-Fa-f]{2}):(?P<device>[0-9A-Fa-f]{2})[^)]*\): (?P<xid>\d+)')


def parse_kernel_xids(text):
    """The Xid lines of the kernel log (``dmesg``) -> ``[{'pci': 'BUS:DEVICE', 'xid': int, 'line': str}]``, oldest first."""
    found = []
    for line in text.splitlines():
        match = _XID.search(line)
        if match:
            found.append({'pci': '%s:%s' % (match.group('bus').upper(), match.group('device').upper()), 'xid': int(match.group('xid')),
                          'line': line.strip()[-300:]})
    return found


def _finding(gpu, problem, detail):
    return {'gpu': gpu, 'problem': problem, 'detail': 'GPU %s: %s' % (gpu, detail)}


def check_gpu_health(gpus, ecc=None, remapped_rows=None, nvlink=None, xids=None):
    """Named problems of each GPU (``[{'gpu': index, 'problem': name, 'detail': sentence}]``; empty when healthy).

    ``ecc``: parse_nvidia_smi_ecc; ``remapped_rows``: parse_nvidia_smi_row_remapper (by PCI bus id, matched to the GPU
    list's ``pci_bus_id``); ``nvlink``: parse_nvidia_smi_nvlink, judged only on a host of more than one GPU (a lone GPU
    has no peer to link to); ``xids``: parse_kernel_xids, the Xids of XID_GPU_ACTIONS logged since boot, once per GPU and
    Xid. None: not read, not judged.
    """
    findings = []
    for gpu in ecc or ():
        if gpu['uncorrected_volatile']:
            findings.append(_finding(gpu['index'], UNCORRECTED_ECC, '%d uncorrected ECC error(s) since the driver loaded '
                                     '(volatile); reset the GPU, and replace it if they come back' % gpu['uncorrected_volatile']))
        if gpu['retired_pages_pending']:
            findings.append(_finding(gpu['index'], RETIRED_PAGES_PENDING,
                                     'retired pages pending; reset the GPU (or reboot) to retire them'))
    by_bus = {g['pci_bus_id'].upper(): g['index'] for g in gpus}
    for bus, rows in sorted((remapped_rows or {}).items()):
        index = by_bus.get(bus, bus)
        if rows['failure']:
            findings.append(_finding(index, ROW_REMAP_FAILURE, 'row remapping failed: the memory can no longer repair '
                                     'itself; replace the GPU (on Compute Engine, report the host faulty)'))
        if rows['pending']:
            findings.append(_finding(index, ROW_REMAP_PENDING, 'remapped rows pending; reset the GPU (or reboot) to apply them'))
    by_pci = {':'.join(g['pci_bus_id'].upper().split(':')[1:3]).split('.', maxsplit=1)[0]: g['index'] for g in gpus}
    seen = {}
    for event in xids or ():
        if event['xid'] in XID_GPU_ACTIONS:
            seen.setdefault((by_pci.get(event['pci'], 'PCI ' + event['pci']), event['xid']), []).append(event)
    for (index, xid), events in seen.items():
        description, action = XID_GPU_ACTIONS[xid]
        findings.append(_finding(index, GPU_XID, 'Xid %d (%s) in the kernel log since boot (%d time%s; last: %s); %s'
                                 % (xid, description, len(events), '' if len(events) == 1 else 's', events[-1]['line'],
                                    XID_ACTION_WORDS[action])))
    if len(gpus) > 1:
        for index, links in sorted((nvlink or {}).items()):
            down = sorted(link for link, state in links.items() if state != 'up')
            if down:
                findings.append(_finding(index, NVLINK_DOWN, 'NVLink link(s) %s of %d inactive (nvidia-smi nvlink -s)'
                                         % (', '.join(str(d) for d in down), len(links))))
    return findings
