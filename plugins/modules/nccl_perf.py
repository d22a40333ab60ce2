#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_perf
short_description: Run an NCCL test (nccl-tests) and return parsed results with a pass/fail verdict
version_added: 0.1.0
description:
  - Runs an nccl-tests benchmark and returns every result it printed, parsed, with a verdict that
    says pass or fail and why, from the machine type's thresholds in the collection's catalog.
  - "O(mode=gce): the vendor manual's flow on Compute Engine: inside the running NCCL test container (which
    M(aiinfra.gpudirect.nccl_container) starts) it runs C(/scripts/init_ssh.sh), C(/scripts/gen_hostfiles.sh) and the
    per-technology run script (C(run-nccl-tcpxo.sh) for GPUDirect-TCPXO, C(run-allgather.sh) for GPUDirect-TCPX) with the
    guide's arguments, as C(docker exec) does, through the Docker Engine API on O(docker_socket)."
  - "O(mode=local): runs an nccl-tests binary installed on the host (for example C(all_gather_perf))
    with C(-b/-e/-f/-g/-n/-w/-c), an optional launcher (C(mpirun ...)) and environment."
  - "O(mode=parse): parses output gathered elsewhere (O(output) text or a file at O(path)), such as
    what C(kubectl exec) printed on GKE, or the C(-J) JSON results file."
  - "Before running (modes V(gce) and V(local)) it checks the GPUs with C(nvidia-smi) -- count, model,
    driver, MIG mode and NVLink topology, and each GPU's health -- and fails before the test when they are not fit.
    Health, each finding named with the GPU index: uncorrected ECC errors since the driver loaded (volatile; the
    aggregate count is returned, not judged, as it outlives resets and repaired rows), retired pages or remapped rows
    pending, a row remapping failure (C(-q -d ROW_REMAPPER)), and, on a host of more than one GPU, NVLink links
    inactive (C(nvlink -s)). A health query that C(nvidia-smi) refuses is listed in RV(preflight.not_read), not judged."
  - "Xid events, which C(nvidia-smi) does not show, are read from the kernel log (C(dmesg), the driver's C(NVRM: Xid) lines
    since boot): an Xid after which NVIDIA's Xid catalog has the GPU reset or the machine rebooted (46, 48, 62, 64, 74, 79,
    95, 109, 119, 120, 136, 140, 143, 155, 158) is a finding naming the GPU; an application's Xid (13, 31, ...) is kept, not
    judged. Reading the kernel log needs root (or C(kernel.dmesg_restrict=0)); when it cannot be read it is listed in
    RV(preflight.not_read)."
  - The raw output is kept in a log file on the target when the verdict fails (or always, see O(keep_log)).
  - Standard library only; runs on Container-Optimized OS.
author:
  - aiinfra.gpudirect contributors (@aiinfra)
attributes:
  check_mode:
    support: partial
    details: In check mode modes V(gce) and V(local) report the command they would run and run nothing; V(parse) runs fully.
  diff_mode:
    support: none
    details: Running a test changes no managed state, so there is nothing to diff.
  platform:
    support: full
    platforms: posix
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
options:
  mode:
    description: How to get the nccl-tests output.
    type: str
    choices: [gce, local, parse]
    default: local
  machine_type:
    description:
      - Machine type (for example V(a3-megagpu-8g)); selects the reference bandwidth curve and line rate, the GPUDirect
        network NCCL must use, the expected GPUs for the preflight and, in O(mode=gce), the technology's run script.
    type: str
  technology:
    description:
      - GPUDirect technology when no O(machine_type) is given (V(TCPX), V(TCPXO) or V(RDMA)).
    type: str
  collective:
    description:
      - The collective the output holds when the output does not name it (the guides' scripts print only
        the table). A name printed in the output always wins. In O(mode=local) the binary's name is used.
    type: str
  thresholds:
    description:
      - "Fixed thresholds per collective (V(*) for all), in GB/s, for example C({all_gather: {avg_busbw_gbps: 30, large_busbw_gbps: 60}}):
        C(avg_busbw_gbps) gates the average bus bandwidth, C(large_busbw_gbps) the bus bandwidth at the largest size in place of the
        catalog's reference curve. A value of V(null) removes a threshold (C(large_busbw_gbps: null) the reference too)."
    type: dict
    default: {}
  require_network_evidence:
    description:
      - Fail when the output holds no NCCL network line (run with C(NCCL_DEBUG=INFO)) instead of skipping the GPUDirect check.
      - "Unset, it is V(true) for the runs the module makes (O(mode=gce) and O(mode=local), which add C(NCCL_DEBUG=INFO) and
        C(NCCL_DEBUG_SUBSYS=INIT,NET) to the environment unless O(env) sets them) and V(false) for O(mode=parse): a saved log
        without NCCL's INFO lines is judged on bandwidth, and the verdict says the network was not judged."
    type: bool
  fail_on_verdict:
    description: "Fail the task when the verdict is FAIL (the results are returned either way; a NOT JUDGED verdict does not fail)."
    type: bool
    default: false
  output:
    description: The output to parse (O(mode=parse)); nccl-tests text or its C(-J) JSON.
    type: str
  path:
    description: A file on the target holding the output to parse (O(mode=parse)).
    type: path
  hosts:
    description:
      - VM names of the test (O(mode=gce)), passed to C(init_ssh.sh) and C(gen_hostfiles.sh). At least two.
    type: list
    elements: str
  container:
    description:
      - The running NCCL test container to exec into (O(mode=gce)). Defaults to the catalog's name, V(nccl), which
        M(aiinfra.gpudirect.nccl_container) gives it for both technologies.
    type: str
  docker_socket:
    description: Unix socket of the Docker Engine API (O(mode=gce)).
    type: path
    default: /var/run/docker.sock
  test_command:
    description:
      - Replaces the guide's run command in O(mode=gce) (for example other sizes or another collective).
      - The alias C(command) is the option's name in the P(aiinfra.gpudirect.nccl_test#role) role's variable C(nccl_test_command).
    type: str
    aliases: [command]
  binary:
    description: The nccl-tests binary to run (O(mode=local)), for example C(/opt/nccl-tests/build/all_gather_perf).
    type: path
  launcher:
    description: Words put before the binary (O(mode=local)), for example C([mpirun, -np, 16, --hostfile, /etc/hosts16]).
    type: list
    elements: str
    default: []
  minbytes:
    description: C(-b), smallest message size (nccl-tests syntax, for example V(1M)).
    type: str
    default: 1M
  maxbytes:
    description: C(-e), largest message size (for example V(512M)).
    type: str
    default: 512M
  stepfactor:
    description: C(-f), multiplication factor between sizes.
    type: int
    default: 2
  ngpus:
    description: C(-g), GPUs per process; defaults to the machine type's GPU count, else nccl-tests' default (1).
    type: int
  iters:
    description: C(-n), timed iterations per size (nccl-tests' default when unset).
    type: int
  warmup_iters:
    description: C(-w), warm-up iterations (nccl-tests' default when unset).
    type: int
  check:
    description: C(-c), data checks per size; V(0) turns validation off (then C(#wrong) reads N/A).
    type: int
  extra_args:
    description: More nccl-tests arguments (O(mode=local)).
    type: list
    elements: str
    default: []
  env:
    description:
      - "Environment for the test (O(mode=local) and O(mode=gce)), on top of C(NCCL_DEBUG=INFO) and C(NCCL_DEBUG_SUBSYS=INIT,NET),
        for example C({NCCL_DEBUG: WARN}) to run quieter (then give O(require_network_evidence=false))."
    type: dict
    default: {}
  timeout:
    description:
      - Seconds the test may run before coreutils C(timeout) stops it (its partial output is parsed and kept).
      - In O(mode=gce) this stops waiting for the exec; the Docker Engine API cannot stop an exec, so the test inside the
        container may run on (removing the container stops it).
    type: int
    default: 1800
  keep_log:
    description: When to keep the raw output in O(log_path).
    type: str
    choices: [on_failure, always, never]
    default: on_failure
  log_path:
    description: Where the raw output is kept on the target; default a new file in the temporary directory.
    type: path
  preflight:
    description: Check the GPUs with C(nvidia-smi) before the test (modes V(gce) and V(local)).
    type: bool
    default: true
  expected_gpus:
    description: GPUs the preflight expects; defaults to the machine type's GPU count (not checked without O(machine_type)).
    type: int
  nvidia_smi:
    description:
      - The C(nvidia-smi) to use; default the one on C(PATH), else C(/var/lib/nvidia/bin/nvidia-smi) (COS after
        C(cos-extensions install gpu)), else C(/usr/local/nvidia/bin/nvidia-smi).
    type: path
notes:
  - "The verdict judges the bus bandwidth at the sweep's largest message size against 0.6 of a published reference curve at that
    size (the catalog, C(module_utils/catalog/families.py): a 2-node all_gather per machine type, from cluster-toolkit's public
    examples, for example 183.38 GB/s at 1 GiB and 188.90 GB/s at 8 GiB on A3 Mega; A3 Edge's and A4's are derived from A3 High's
    and A3 Ultra's). A sweep that stops below 64 MiB is not judged on bandwidth. No source gives curves for other collectives;
    give O(thresholds) to gate on them. The average bus bandwidth is reported, and gates only when O(thresholds) sets it."
  - Any bus bandwidth above the data NICs' line rate (for example 8 x 200 Gb/s = 200 GB/s on A3 Mega) fails the verdict, as not a
    measurement of the network (all_reduce excepted, which NCCL's tree and NVLS algorithms can carry above it).
  - A run with no bandwidth criterion judged and nothing failed is V(NOT JUDGED), never V(PASS).
  - "GPUDirect check: when NCCL logs C(Using network Socket) although the machine type uses TCPX/TCPXO/RDMA, the test
    fails even if the bandwidth passes -- the GPUDirect plugin was not loaded."
seealso:
  - name: nccl-tests
    description: NVIDIA's NCCL performance tests.
    link: https://github.com/NVIDIA/nccl-tests
"""

EXAMPLES = r"""
- name: Run the guide's GPUDirect-TCPXO all_gather test between two A3 Mega VMs
  aiinfra.gpudirect.nccl_perf:
    mode: gce
    machine_type: a3-megagpu-8g
    hosts: [a3mega-vm-1, a3mega-vm-2]
  register: nccl

- name: Run all_gather_perf installed on the host and fail on a bad verdict
  aiinfra.gpudirect.nccl_perf:
    mode: local
    machine_type: a3-ultragpu-8g
    binary: /opt/nccl-tests/build/all_gather_perf
    minbytes: 1K
    maxbytes: 8G
    env:
      NCCL_DEBUG: INFO
    fail_on_verdict: true

- name: Judge output that kubectl exec printed on GKE
  aiinfra.gpudirect.nccl_perf:
    mode: parse
    machine_type: a3-highgpu-8g
    collective: all_gather
    output: "{{ exec_result.stdout }}"
  register: nccl

- name: Print the verdict
  ansible.builtin.debug:
    msg: "{{ nccl.verdict.summary }}"
"""

RETURN = r"""
parsed:
  description: Everything parsed from the output (see module_utils/nccl/parse.py parse()).
  returned: always
  type: dict
  contains:
    format:
      description: V(text) or V(json).
      type: str
    collectives:
      description:
        - One entry per collective test in the output, with C(name), C(rows) (size, count, type, redop, root,
          C(out_of_place)/C(in_place) with time_us, algbw, busbw, wrong, error), C(avg_busbw) (as printed),
          C(avg_busbw_recomputed), C(peak_busbw), C(busbw_at_largest_size), C(out_of_bounds),
          C(out_of_bounds_status), C(ranks), C(gpus_per_rank), C(nccl_version), C(network), C(warnings),
          C(malformed_rows), C(complete).
      type: list
      elements: dict
    unparsed_lines:
      description: Lines that are neither nccl-tests nor NCCL output (wrapper lines), with their numbers.
      type: list
      elements: dict
    networks:
      description: NCCL networks the output shows in use (for example V(FasTrak), V(GPUDirectTCPX), V(Socket)).
      type: list
      elements: str
    warnings:
      description: Every NCCL WARN line.
      type: list
      elements: dict
verdict:
  description: Pass/fail with reasons.
  returned: always
  type: dict
  contains:
    passed:
      description: True when the verdict is V(PASS) only.
      type: bool
    verdict:
      description: "V(PASS), V(FAIL) or V(NOT JUDGED) (nothing failed and no bandwidth criterion could be judged: no reference
        curve or thresholds for the collective, or a sweep that stops below 64 MiB)."
      type: str
    summary:
      description: "One line, for example C(FAIL -- all_gather: bus bandwidth at 1 GiB 61.20 GB/s < 110.03 GB/s (0.6 of 183.38 GB/s, ...)."
      type: str
    reasons:
      description: Every failed criterion, as a sentence.
      type: list
      elements: str
    checks:
      description: Every criterion of every collective (collective, criterion, status, message, value, threshold).
      type: list
      elements: dict
  sample:
    passed: false
    verdict: FAIL
    summary: "FAIL -- all_gather: NCCL used Socket, not GPUDirect-TCPXO (FasTrak) ..."
command:
  description: The command run (modes gce and local).
  returned: when a command was built
  type: list
  elements: str
rc:
  description: Exit status of the test command (modes gce and local); null when it was stopped by the timeout.
  returned: when a command ran
  type: int
timed_out:
  description: Whether the test was stopped by O(timeout).
  returned: when a command ran
  type: bool
run_problems:
  description: Failures of the run itself (timeout, non-zero exit status), also listed in the verdict's reasons.
  returned: when a command ran
  type: list
  elements: str
host_evidence:
  description:
    - "What the output shows of each host, by host name (nccl-tests' device list and NCCL's INFO lines of that host):
      C(gpus) (devices listed), C(network) and C(network_line) (NCCL's C(Using network) line), C(plugin) (the GPUDirect
      plugin's banner, for example V(FasTrak 1.0.13)) and C(nccl_version); null where the output does not say."
    - "C(gpu_problems): on the host the module ran on (its short host name), the preflight's RV(preflight.problems),
      [] when it passed; null on other hosts and without preflight. Also returned when the preflight fails the
      module, so that M(aiinfra.gpudirect.nccl_diagnose) names the host with them."
  returned: when output was judged, or the preflight failed
  type: dict
  sample: {"vm-1": {"gpus": 8, "network": "FasTrak", "network_line": "Using network FasTrak", "plugin": "FasTrak 1.0.13",
           "nccl_version": null, "gpu_problems": []}}
log_path:
  description: The file holding the raw output, when kept.
  returned: when the log was kept
  type: str
preflight:
  description: What nvidia-smi showed and the problems found; also returned when the preflight fails the module.
  returned: when the preflight ran
  type: dict
  contains:
    nvidia_smi:
      description: The nvidia-smi run.
      type: str
    gpus:
      description: C(--query-gpu) per GPU (C(index), C(name), C(driver_version), C(mig_mode), C(memory_mib), C(pci_bus_id)).
      type: list
      elements: dict
    topology:
      description: "C(topo -m)'s GPU-to-GPU links, for example C({GPU0: {GPU1: NV18}})."
      type: dict
    ecc:
      description:
        - Per GPU C(index), C(ecc_mode), C(uncorrected_volatile), C(uncorrected_aggregate) (counts; null where not
          supported) and C(retired_pages_pending) (null where the GPU remaps rows instead); null when not read.
      type: list
      elements: dict
    remapped_rows:
      description: By PCI bus id, C(correctable), C(uncorrectable), C(pending), C(failure) (from C(-q -d ROW_REMAPPER)); null when not read.
      type: dict
    nvlink:
      description: By GPU index, each link's state (V(up) when C(nvlink -s) gives it a speed, else V(inactive)); null when not read.
      type: dict
    xids:
      description: The kernel log's Xid lines since boot, each C({pci, xid, line}) (C(pci) is the GPU's C(BUS:DEVICE)); null when not read.
      type: list
      elements: dict
    findings:
      description:
        - The health problems, each C({gpu, problem, detail}); C(problem) is one of V(uncorrected_ecc),
          V(retired_pages_pending), V(row_remap_pending), V(row_remap_failure), V(nvlink_down), V(xid).
      type: list
      elements: dict
    not_read:
      description: The health queries that failed or printed something unreadable (command, exit status, output).
      type: list
      elements: str
    problems:
      description: Every problem as a sentence (the checks above and the findings' C(detail)); empty when fit.
      type: list
      elements: str
    passed:
      description: No problem found.
      type: bool
"""

import os
import shlex
import socket
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import docker_api
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import command as nccl_command
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import parse as nccl_parse
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import verdict as nccl_verdict
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import preflight as nccl_preflight
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

NVIDIA_SMI_FALLBACKS = ('/var/lib/nvidia/bin/nvidia-smi', '/usr/local/nvidia/bin/nvidia-smi')


argument_spec = nccl_command.argument_spec


TIMEOUT_EXIT_CODES = (124, 137)
# coreutils timeout(1): 124 when it stopped the command with TERM, 137 when KILL was needed.
KILL_AFTER_SECONDS = 30


def run_with_timeout(module, command, env, timeout):
    """Run ``command`` under coreutils ``timeout``; (rc or None when stopped, output, timed_out).

    run_command has no time limit of its own; timeout(1) is on every Linux host (COS included) and
    stops the command with TERM, then KILL after KILL_AFTER_SECONDS. NCCL logs to stdout; nccl-tests
    and MPI write errors to stderr, which is appended.
    """
    binary = module.get_bin_path('timeout', required=True)
    wrapped = [binary, '--kill-after=%d' % KILL_AFTER_SECONDS, str(timeout)] + list(command)
    rc, out, err = module.run_command(wrapped, environ_update={str(k): str(v) for k, v in env.items()})
    output = out + (('\n' if out and not out.endswith('\n') else '') + err if err else '')
    if rc in TIMEOUT_EXIT_CODES:
        return None, output, True
    return rc, output, False


def exec_in_container(module, technology):
    """The Compute Engine GPUDirect guide's test in the NCCL test container, as ``docker exec`` runs it: (rc or None when stopped, output, timed_out)."""
    container, argv = nccl_command.gce_exec(module.params, technology)
    client = docker_api.DockerClient(module.params['docker_socket'])
    try:
        if not ((client.inspect_container(container) or {}).get('State') or {}).get('Running'):
            module.fail_json(msg='container: the NCCL test container %s is not running on this host; start it with '
                                 'aiinfra.gpudirect.nccl_container (role nccl_test does in mode gce)' % container)
        return docker_api.exec_run(client, container, argv, module.params['timeout'])
    except docker_api.DockerError as exc:
        module.fail_json(msg='container: %s' % exc)


def find_nvidia_smi(module):
    if module.params['nvidia_smi']:
        return module.params['nvidia_smi']
    found = module.get_bin_path('nvidia-smi')
    if found:
        return found
    for candidate in NVIDIA_SMI_FALLBACKS:
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def read_gpu_health(module, binary, gpus):
    """The health queries' parsed output and findings; a query this nvidia-smi (or GPU) refuses is listed as not read."""
    health, not_read = {}, []
    # The kernel log needs dmesg and the right to read it (root, or kernel.dmesg_restrict=0); without, Xids are not judged.
    dmesg = module.get_bin_path(nccl_preflight.KERNEL_LOG[0])
    for key, command, parse in (('ecc', [binary, *nccl_preflight.NVIDIA_SMI_ECC], nccl_preflight.parse_nvidia_smi_ecc),
                                ('remapped_rows', [binary, *nccl_preflight.NVIDIA_SMI_ROW_REMAPPER], nccl_preflight.parse_nvidia_smi_row_remapper),
                                ('nvlink', [binary, *nccl_preflight.NVIDIA_SMI_NVLINK], nccl_preflight.parse_nvidia_smi_nvlink),
                                ('xids', [dmesg, *nccl_preflight.KERNEL_LOG[1:]] if dmesg else None, nccl_preflight.parse_kernel_xids)):
        if command is None:
            health[key] = None
            not_read.append('%s: not found on PATH' % nccl_preflight.KERNEL_LOG[0])
            continue
        rc, out, err = module.run_command(command)
        try:
            health[key] = parse(out) if rc == 0 else None
        except ValueError as exc:
            health[key], err = None, str(exc)
        if health[key] is None:
            not_read.append('%s (rc %d): %s' % (' '.join(command), rc, (err or out).strip()[-200:]))
    health['findings'] = nccl_preflight.check_gpu_health(gpus, **{k: health[k] for k in ('ecc', 'remapped_rows', 'nvlink', 'xids')})
    health['not_read'] = not_read
    return health


def preflight(module, family):
    """nvidia-smi facts and problems; fails the module when the GPUs are not fit for the test."""
    binary = find_nvidia_smi(module)
    if not binary:
        module.fail_json(msg='preflight: nvidia-smi not found on PATH, %s; install the GPU driver (COS: '
                             'cos-extensions install gpu) or set nvidia_smi, or preflight: false' % ', '.join(NVIDIA_SMI_FALLBACKS))
    rc, out, err = module.run_command([binary] + list(nccl_preflight.NVIDIA_SMI_QUERY))
    if rc != 0:
        module.fail_json(msg='preflight: %s failed (rc %d): %s' % (binary, rc, (err or out).strip()))
    rc, topo_out, err = module.run_command([binary] + list(nccl_preflight.NVIDIA_SMI_TOPOLOGY))
    try:
        gpus = nccl_preflight.parse_nvidia_smi_gpus(out)
        topology = nccl_preflight.parse_nvidia_smi_topology(topo_out) if rc == 0 else {}
    except ValueError as exc:
        module.fail_json(msg='preflight: cannot read what %s printed (%s); set nvidia_smi to the real nvidia-smi, or preflight: false'
                             % (binary, exc))
    health = read_gpu_health(module, binary, gpus)
    expected = module.params['expected_gpus'] or (family.gpu_count if family else None)
    problems = nccl_preflight.check_gpus(gpus, topology, expected_count=expected, gpu_model=family.gpu_model if family else None,
                                         min_driver=families.MIN_NVIDIA_DRIVER, requested=module.params['ngpus'])
    problems += [f['detail'] for f in health['findings']]
    facts = dict(health, nvidia_smi=binary, gpus=gpus, topology=topology, problems=problems, passed=not problems)
    if problems:
        module.fail_json(msg='preflight: the GPUs are not fit for an NCCL test: %s' % '; '.join(problems), preflight=facts,
                         host_evidence=this_host_evidence({}, facts))
    return facts


def this_host_evidence(evidence, preflight_facts):
    """``host_evidence`` with this host's preflight problems (C(gpu_problems)) added under its short host name, the
    name nccl-tests prints."""
    if preflight_facts is not None:
        name = socket.gethostname().split('.')[0]
        evidence.setdefault(name, nccl_parse.empty_host_evidence())['gpu_problems'] = list(preflight_facts['problems'])
    return evidence


def keep_log(module, text, failed):
    policy = module.params['keep_log']
    if policy == 'never' or (policy == 'on_failure' and not failed) or module.check_mode:
        return None
    path = module.params['log_path']
    if path:
        with open(path, 'w', encoding='utf-8') as handle:
            handle.write(text)
        return path
    handle, path = tempfile.mkstemp(prefix='nccl_perf-%s-' % time.strftime('%Y%m%dT%H%M%S'), suffix='.log')
    with os.fdopen(handle, 'w', encoding='utf-8') as stream:
        stream.write(text)
    return path


def read_parse_input(params):
    if params['output'] is not None and params['path']:
        raise InputError('output / path: give one of them, not both')
    if params['output'] is not None:
        return params['output']
    if params['path']:
        try:
            with open(params['path'], encoding='utf-8', errors='replace') as handle:
                return handle.read()
        except OSError as exc:
            raise InputError('path: cannot read %s (%s); give the file nccl-tests output was saved to' % (params['path'], exc)) from None
    raise InputError('output: mode parse needs the output to judge; give output (text) or path (a file on the target)')


def run_problems(module, extra):
    """Failures of the run itself, which the output may not show (a timeout, a non-zero exit)."""
    if extra.get('timed_out'):
        return ['stopped after the %d s timeout' % module.params['timeout']]
    if extra.get('rc') not in (None, 0):
        return ['exited with status %d' % extra['rc']]
    return []


def judge(module, text, family_name, technology, hint, extra):
    problems = run_problems(module, extra)
    if 'rc' in extra:
        extra['run_problems'] = problems
    try:
        results = nccl_parse.parse(text, collective=hint)
        verdict = nccl_verdict.evaluate(results, machine_type=family_name, thresholds=module.params['thresholds'], technology=technology,
                                        require_network_evidence=nccl_command.evidence_required(module.params), run_problems=problems)
    except ValueError as exc:
        module.fail_json(msg=str(exc), **extra)
    extra['host_evidence'] = this_host_evidence(nccl_parse.host_evidence(text), extra.get('preflight'))
    failed = verdict['verdict'] == nccl_verdict.FAIL
    log_path = keep_log(module, text, failed)
    if log_path:
        extra['log_path'] = log_path
    if module.params['fail_on_verdict'] and failed:
        module.fail_json(msg='NCCL test verdict: %s' % verdict['summary'], changed=False, parsed=results, verdict=verdict, **extra)
    module.exit_json(changed=False, parsed=results, verdict=verdict, **extra)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    if params['mode'] == 'parse':
        try:
            family_name, _family, technology = nccl_command.check_inputs(params)[:3]
            text = read_parse_input(params)
        except ValueError as exc:
            module.fail_json(msg=str(exc))
        judge(module, text, family_name, technology, params['collective'], {})
        return
    try:
        family_name, family, technology, command, hint = nccl_command.check_inputs(params)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, command=command,
                         msg='check mode: would run %s' % ' '.join(shlex.quote(c) for c in command))
    extra = {'command': command}
    if params['preflight']:
        extra['preflight'] = preflight(module, family)
    if params['mode'] == 'gce':
        rc, output, timed_out = exec_in_container(module, technology)
    else:
        rc, output, timed_out = run_with_timeout(module, command, nccl_command.run_env(params), params['timeout'])
    if rc in (126, 127):
        field = 'binary' if params['mode'] == 'local' else 'container'
        module.fail_json(msg='%s: cannot run %s (exit %d: not found or not executable): %s'
                             % (field, command[0], rc, output.strip()[-300:]), rc=rc, **extra)
    extra.update(rc=rc, timed_out=timed_out)
    judge(module, output, family_name, technology, hint, extra)


if __name__ == '__main__':
    main()
