#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_diagnose
short_description: Plan the next round of an NCCL fabric diagnosis, name the bad hosts and NICs, write its report
version_added: 0.2.0
description:
  - "The controller's side of a fabric diagnosis (the entry point C(diagnose) of role P(aiinfra.gpudirect.nccl_test#role)):
    given the hosts and the results of the pair runs so far (what M(aiinfra.gpudirect.nccl_perf) returned on the host that
    led each pair), it returns the runs of the next round, and, once no run is left, the verdict per host and NIC."
  - "Round 1 pairs the hosts disjointly (N/2 pairs at once); the next round pairs each host of a failed pair (and an odd
    host left over) with a host that passed. A host is V(bad) when every pair it was in failed and a partner is known
    healthy, V(suspect) when that is not known, V(healthy) when a pair of it passed. A host is V(bad) also when its output
    shows fewer GPUs than O(expected_gpus), a network other than the GPUDirect one, or a plugin or NCCL version the other
    hosts do not run (mixed plugin versions hang NCCL), or when the GPU preflight of M(aiinfra.gpudirect.nccl_perf) on it
    found a problem (its C(host_evidence) C(gpu_problems): uncorrected ECC errors, remapped rows pending or failed, NVLink
    links down, GPU count or model), also from a run that the preflight stopped."
  - "Per NIC (GPUDirect-TCPX and TCPXO, O(nics=true)): each host named bad by its pairs runs once per data NIC with a
    healthy host, NCCL restricted to that NIC (the guide's run command with one NIC in its NIC list, which its scripts hand
    to NCCL_FASTRAK_IFNAME or NCCL_GPUDIRECTTCPX_SOCKET_IFNAME); a NIC below its share of the line rate (line rate / data
    NICs x 0.6, the verdict's reference fraction) is named."
  - "Per HCA (GPUDirect RDMA with O(measure=nccl), the GKE diagnosis of role P(aiinfra.gpudirect.gke_rdma#role)): each host
    named bad by its pairs runs once per HCA of O(hcas) with a healthy host, NCCL restricted to that HCA (C(NCCL_IB_HCA));
    an HCA below its share of the line rate (the same rule) is named."
  - With O(dest), once the diagnosis is done, writes C(report.json), C(junit.xml), C(summary.md) (one table of hosts with
    their evidence) and C(pairs.png) (the pair bandwidth matrix) there.
  - A pair is judged by the calibrated NCCL verdict (PASS passes). Verdicts computed on stand-in output say so.
  - "With O(measure=ib_write_bw) (the OpenShift diagnosis of role P(aiinfra.gpudirect.openshift_rdma#role)), a run is
    C(ib_write_bw) with GPU memory between two nodes' test Pods, judged by its BW average against O(threshold_fraction) of one
    HCA's link rate (the machine type's line rate / data NICs, 400 Gb/s on A3 Ultra and A4, else O(link_gbps)); the same rounds
    name the bad nodes, and per HCA (O(hcas)) each bad node's HCA runs against the same HCA of a healthy node, so an HCA below
    the threshold while another HCA of its node reaches it is named."
author:
  - aiinfra.gpudirect contributors (@aiinfra)
extends_documentation_fragment:
  - aiinfra.gpudirect.report_dir
options:
  hosts:
    description: The hosts to diagnose, by the names the NCCL test scripts take (VM names); at least two, each once.
    type: list
    elements: str
    required: true
  machine_type:
    description: Machine type (for example V(a3-megagpu-8g)); its data NICs, line rate and GPU count.
    type: str
  technology:
    description: GPUDirect technology when no O(machine_type) is given (V(TCPX), V(TCPXO) or V(RDMA)).
    type: str
  collective:
    description: The collective of the runs (the guide's, all_gather, when unset); used to build the per-NIC command.
    type: str
  results:
    description:
      - The runs done so far, each C({hosts, round, nic, result}) with C(result) what M(aiinfra.gpudirect.nccl_perf)
        returned for that run (a failed task counts as a failed pair; a skipped one is ignored).
    type: list
    elements: dict
    default: []
  max_rounds:
    description: Host rounds at most (two localise one bad host, a third pairs an odd one); what is still unknown is suspect.
    type: int
    default: 3
  nics:
    description: Test each data NIC of a bad host alone (GPUDirect-TCPX and TCPXO; GPUDirect RDMA each HCA of O(hcas)).
    type: bool
    default: true
  expected_gpus:
    description: GPUs each host must show; default the machine type's count.
    type: int
  dest:
    description: The report directory on the controller (created if missing), written once no run is left; unset, no report.
    type: path
    required: false
  plot:
    description: Draw C(pairs.png) (needs matplotlib on the controller).
    type: bool
    default: true
  measure:
    description:
      - "What a run is. V(nccl) (default): C(result) of each O(results) entry is what M(aiinfra.gpudirect.nccl_perf) returned."
      - "V(ib_write_bw): C(result) is the client side's command result (C(stdout), C(rc), C(failed), C(msg), as
        M(aiinfra.gpudirect.pod_exec) returns it), or C(hcas), a list of them each with its C(nic) (every HCA run at once
        between the two hosts: the pair passes when every HCA passes), with an optional C(host_evidence) (per host C(gpus),
        C(network)); the per-NIC runs are per HCA (O(hcas)); the runs have no C(test_command)."
    type: str
    choices: [nccl, ib_write_bw]
    default: nccl
  hcas:
    description:
      - The RDMA devices (for example V(mlx5_0)) each bad host tests alone against a healthy one, with O(measure=ib_write_bw)
        (C(ib_write_bw) on that HCA), or with O(measure=nccl) on GPUDirect RDMA (NCCL restricted to that HCA by C(NCCL_IB_HCA)).
      - Empty with O(measure=nccl) on GPUDirect RDMA, no per-HCA run.
    type: list
    elements: str
    default: []
  link_gbps:
    description: With O(measure=ib_write_bw), one HCA's link rate in Gb/s when no O(machine_type) gives it (for example C(ibstat)'s Rate).
    type: float
  threshold_fraction:
    description: With O(measure=ib_write_bw), a run passes when its BW average reaches this fraction of one HCA's link rate.
    type: float
    default: 0.75
"""

EXAMPLES = r"""
- name: Plan round 1
  aiinfra.gpudirect.nccl_diagnose:
    hosts: [vm-1, vm-2, vm-3, vm-4]
    machine_type: a3-megagpu-8g
  register: diagnosis

- name: Judge the runs and write the report
  aiinfra.gpudirect.nccl_diagnose:
    hosts: [vm-1, vm-2, vm-3, vm-4]
    machine_type: a3-megagpu-8g
    results: "{{ pair_results }}"
    dest: /tmp/nccl-diagnosis
  register: diagnosis

- name: Leave the bad hosts out of the next play
  ansible.builtin.debug:
    msg: "--limit '{{ diagnosis.bad_hosts | map('regex_replace', '^', '!') | join(',') }}'"
"""

RETURN = r"""
plan:
  description: The rounds a diagnosis of these hosts makes (round 1's pairs; the rule of the later rounds).
  returned: always
  type: list
  elements: dict
next_runs:
  description:
    - The runs of the next round, all at once, each C({hosts, round, nic, test_command}); the first host leads the run
      (runs M(aiinfra.gpudirect.nccl_perf) with O(aiinfra.gpudirect.nccl_perf#module:hosts) the pair, and
      O(aiinfra.gpudirect.nccl_perf#module:test_command) C(test_command) when it is not null). Empty when the diagnosis is done.
  returned: always
  type: list
  elements: dict
done:
  description: No run is left; the verdicts below are final.
  returned: always
  type: bool
rounds:
  description: Rounds run so far (host and NIC rounds).
  returned: always
  type: int
hosts:
  description: Per host C(status) (V(healthy), V(suspect), V(bad)), C(reasons), C(evidence) (gpus, network, plugin,
    nccl_version, gpu_problems), C(pairs) and C(bad_nics).
  returned: always
  type: dict
bad_hosts:
  description: The hosts named bad (for example to C(--limit) them out).
  returned: always
  type: list
  elements: str
suspect_hosts:
  description: The hosts whose state the runs could not establish.
  returned: always
  type: list
  elements: str
bad_nics:
  description:
    - "The NICs named, each C({host, nic, busbw_gbps, threshold_gbps}): below the threshold while another NIC of the same host
      reaches it (a host whose every NIC is slow is bad as a whole, and no NIC of it is named)."
  returned: always
  type: list
  elements: dict
synthetic:
  description: Some run's output was a stand-in's (synthetic numbers); the report says so.
  returned: always
  type: bool
report:
  description: The report.json document (when O(dest) is given and the diagnosis is done).
  returned: when written
  type: dict
files:
  description: The report files (empty in check mode).
  returned: when O(dest) is given and the diagnosis is done
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.perftest import output as perftest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils import report_dir
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as openshift_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import command as nccl_command
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import diagnose
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import report as nccl_report
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl.verdict import FAIL, PASS, REFERENCE_FRACTION

PER_NIC_TECHNOLOGIES = (families.TCPX, families.TCPXO)
# The GPUDirect plugins whose NIC list NCCL takes per run; RDMA's per-HCA run is NCCL with NCCL_IB_HCA (GKE, given hcas),
# or measure ib_write_bw (OpenShift).
IB_WRITE_BW = 'ib_write_bw'


def check_inputs(params):
    """(family or None, technology); ValueError naming the option on bad input."""
    hosts = params['hosts']
    if len(hosts) < 2:
        raise ValueError('hosts: a diagnosis tests pairs of hosts; give at least two, for example [vm-1, vm-2]')
    twice = sorted({h for h in hosts if hosts.count(h) > 1})
    if twice:
        raise ValueError('hosts: %s given more than once; name each host once' % ', '.join(twice))
    if params['max_rounds'] < 1:
        raise ValueError('max_rounds: %d; give 1 or more (3 localises one bad host among any count)' % params['max_rounds'])
    _name, family, technology = nccl_command.verdict_target(params)
    if params['measure'] == IB_WRITE_BW:
        if technology and technology != families.RDMA:
            raise ValueError('measure: ib_write_bw measures RDMA HCAs; %s uses GPUDirect-%s: drop measure or give an RDMA machine_type'
                             % (params['machine_type'] or 'technology', technology))
        if hca_gbps(params, family) is None:
            raise ValueError('link_gbps: measure ib_write_bw judges a run against one HCA\'s link rate; give machine_type '
                             '(for example a3-ultragpu-8g) or link_gbps (for example 400)')
        if not 0 < params['threshold_fraction'] <= 1:
            raise ValueError('threshold_fraction: %r is outside (0, 1]; give for example 0.75' % params['threshold_fraction'])
    for index, entry in enumerate(params['results']):
        if not isinstance(entry.get('hosts'), list) or len(entry['hosts']) != 2 or not set(entry['hosts']) <= set(hosts):
            raise ValueError('results[%d].hosts: %r is not a pair of the hosts diagnosed' % (index, entry.get('hosts')))
    return family, technology


def hca_gbps(params, family):
    """One HCA's link rate in Gb/s (ib_write_bw): the machine type's line rate / data NICs, else link_gbps."""
    if family is not None and family.nic_bandwidth_gbps:
        return float(family.nic_bandwidth_gbps)
    return params['link_gbps'] if params['link_gbps'] and params['link_gbps'] > 0 else None


def _perftest_side(side, link_gbps, fraction):
    """(verdict, BW average or None, reasons, synthetic) of one ib_write_bw client's output."""
    try:
        parsed = perftest.parse(side.get('stdout'))
    except ValueError as exc:
        said = (side.get('stdout') or '').strip().splitlines()[-1:] or [side.get('msg') or str(exc)]
        return FAIL, None, ['ib_write_bw: %s' % said[0]], False
    verdict = perftest.evaluate(parsed, link_gbps, fraction)
    return verdict['verdict'], verdict['bw_average_gbps'], verdict['reasons'], verdict['synthetic']


def perftest_pair_result(entry, link_gbps, fraction):
    """An ib_write_bw run's result as the core reads it. ``result`` is one client's output, or ``{'hcas': [{'nic', 'stdout',
    ...}]}``, one per HCA run at once between the two hosts: the pair passes when every HCA does, its figure the slowest."""
    client = entry.get('result') or {}
    run = {'hosts': list(entry['hosts']), 'round': int(entry.get('round') or 1), 'nic': entry.get('nic'),
           'host_evidence': client.get('host_evidence') or {}}
    if client.get('skipped'):
        return None
    sides = client.get('hcas') or [dict(client, nic=None)]
    judged = [(side.get('nic'), _perftest_side(side, link_gbps, fraction)) for side in sides]
    figures = [figure for _nic, (_v, figure, _r, _s) in judged if figure is not None]
    failed = [(nic, reasons) for nic, (verdict, _f, reasons, _s) in judged if verdict != PASS]
    reasons = ['%s%s' % ('%s: ' % nic if nic else '', reason) for nic, found in failed for reason in found]
    return dict(run, verdict=FAIL if failed else PASS, busbw_gbps=min(figures) if len(figures) == len(judged) else None,
                reasons=reasons, synthetic=any(s for _nic, (_v, _f, _r, s) in judged))


def pair_result(entry):
    """A run's result as the core reads it: verdict, bus bandwidth at the largest size, host evidence."""
    perf = entry.get('result') or {}
    run = {'hosts': list(entry['hosts']), 'round': int(entry.get('round') or 1), 'nic': entry.get('nic')}
    if perf.get('skipped'):
        return None
    if perf.get('failed') or 'verdict' not in perf:
        return dict(run, verdict=FAIL, busbw_gbps=None, reasons=[perf.get('msg') or 'the run returned no verdict'],
                    host_evidence=perf.get('host_evidence') or {}, synthetic=False)
    verdict = perf['verdict']
    measured = [c['value'] for c in verdict.get('checks') or [] if c['criterion'] == 'large_message_busbw' and c['value'] is not None]
    if not measured:
        measured = [c.get('busbw_at_largest_size') for c in (perf.get('parsed') or {}).get('collectives') or []
                    if c.get('busbw_at_largest_size') is not None]
    return dict(run, verdict=verdict['verdict'], busbw_gbps=measured[0] if measured else None, reasons=verdict.get('reasons') or [],
                host_evidence=perf.get('host_evidence') or {}, synthetic=bool(verdict.get('synthetic')))


def upcoming(params, family, technology, results):
    """The next round's runs, with the NIC-restricted command of a per-NIC run."""
    runs = diagnose.next_runs(params['hosts'], results, params['max_rounds'])
    by_hca = params['measure'] == IB_WRITE_BW or technology == families.RDMA
    if runs or not params['nics'] or not (by_hca or technology in PER_NIC_TECHNOLOGIES):
        return [dict(r, test_command=None) for r in runs]
    done = {r['round'] for r in results if r['nic']}
    nics = params['hcas'] if by_hca else (family.data_interface_names if family else ())
    left = [r for r in diagnose.nic_runs(params['hosts'], results, nics) if r['round'] not in done]
    first = min([r['round'] for r in left] or [0])
    return [dict(r, test_command=None if by_hca else nccl_command.nic_restricted_command(technology, params['collective'], r['nic']))
            for r in left if r['round'] == first]


def build_report(params, family, technology, results, table, findings, limit):
    if params['measure'] == IB_WRITE_BW:
        extra = {'measure': IB_WRITE_BW, 'unit': 'Gb/s', 'fraction': params['threshold_fraction'], 'hca_gbps': hca_gbps(params, family),
                 'pair_criterion': 'ib_write_bw BW average >= %s Gb/s, %s of one HCA\'s %s Gb/s' % (
                     limit, params['threshold_fraction'], hca_gbps(params, family))}
    else:
        extra = {'measure': 'nccl', 'unit': 'GB/s', 'fraction': REFERENCE_FRACTION}
    return dict(extra, **{
        'schema': nccl_report.DIAGNOSIS_SCHEMA,
        'machine_type': family.machine_type if family else None, 'technology': technology,
        'synthetic': any(r['synthetic'] for r in results),
        'rounds': len({r['round'] for r in results}), 'host_rounds': diagnose.host_rounds(results),
        'hosts': table, 'bad_hosts': diagnose.bad_hosts(table),
        'suspect_hosts': [h for h, row in table.items() if row['status'] == diagnose.SUSPECT],
        'pairs': [{k: r[k] for k in ('hosts', 'round', 'nic', 'verdict', 'busbw_gbps', 'reasons')} for r in results if not r['nic']],
        'nics': findings, 'nic_threshold_gbps': limit,
    })


def main():
    module = AnsibleModule(
        argument_spec=dict(
            hosts=dict(type='list', elements='str', required=True),
            machine_type=dict(type='str'),
            technology=dict(type='str'),
            collective=dict(type='str'),
            results=dict(type='list', elements='dict', default=[]),
            max_rounds=dict(type='int', default=diagnose.MAX_HOST_ROUNDS),
            nics=dict(type='bool', default=True),
            expected_gpus=dict(type='int'),
            dest=dict(type='path'),
            plot=dict(type='bool', default=True),
            measure=dict(type='str', choices=['nccl', IB_WRITE_BW], default='nccl'),
            hcas=dict(type='list', elements='str', default=[]),
            link_gbps=dict(type='float'),
            threshold_fraction=dict(type='float', default=openshift_catalog.PROOF_THRESHOLD_FRACTION),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        family, technology = check_inputs(params)
        if params['measure'] == IB_WRITE_BW:
            link = hca_gbps(params, family)
            results = [r for r in (perftest_pair_result(e, link, params['threshold_fraction']) for e in params['results']) if r is not None]
            limit = round(link * params['threshold_fraction'], 2)
        else:
            results = [r for r in (pair_result(e) for e in params['results']) if r is not None]
            limit = diagnose.nic_threshold(family)
        runs = upcoming(params, family, technology, results)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    findings = diagnose.judge_nics(results, limit)
    expected_networks = families.NCCL_NETWORKS.get(technology, ()) if technology and params['measure'] != IB_WRITE_BW else ()
    table = diagnose.classify(params['hosts'], results, expected_gpus=params['expected_gpus'] or (family.gpu_count if family else None),
                              expected_networks=expected_networks, nic_findings=findings,
                              unit='Gb/s' if params['measure'] == IB_WRITE_BW else 'GB/s',
                              nic_name='HCA' if technology == families.RDMA and params['measure'] != IB_WRITE_BW else 'NIC')
    report = build_report(params, family, technology, results, table, findings, limit)
    result = dict(changed=False, plan=diagnose.plan(params['hosts'], params['max_rounds']), next_runs=runs, done=not runs,
                  rounds=report['rounds'], hosts=table, bad_hosts=report['bad_hosts'], suspect_hosts=report['suspect_hosts'],
                  bad_nics=[{k: f[k] for k in ('host', 'nic', 'busbw_gbps', 'threshold_gbps')} for f in findings if f['named']],
                  synthetic=report['synthetic'])
    if params['dest'] and not runs:
        plot_name = nccl_report.PAIR_PLOT if params['plot'] else None
        if plot_name:
            report_dir.require_matplotlib(module, plot_name)
        unwritable = report_dir.unwritable(params['dest'])
        if unwritable:
            module.fail_json(msg='dest: %s' % unwritable)
        result.update(report_dir.sync(module, params['dest'], nccl_report.render_diagnosis(report), plot_name,
                                      draw=lambda path: nccl_report.plot_pairs(report, path)))
        result['report'] = report
        result['report_dir'] = os.path.abspath(params['dest'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
