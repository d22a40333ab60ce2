# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Localising a broken host (and NIC) of a GPUDirect fabric from NCCL tests between pairs of hosts.

The method is cluster-health-scanner's (GoogleCloudPlatform/cluster-health-scanner, its NCCL health check: pairs,
then each host of a failed pair with a passed one), extended to NICs:

* round 1 pairs the hosts disjointly (host 1 with 2, 3 with 4, ...): N/2 pairs tested at once;
* the next round pairs every host not yet in a passed pair -- each host of a failed pair, and an odd host left over --
  with a host that passed (one partner per host, so the pairs of a round stay disjoint and run at once); with one bad
  host that is two rounds, three with an odd host;
* a host is **bad** when every pair it was in failed and one of its partners is known good (was in a passed pair),
  **suspect** when that is not known (no partner passed, or it was never tested), **healthy** when a pair of it passed;
  the evidence of the output can name a host bad too: fewer GPUs than expected, a network other than the GPUDirect one,
  a GPUDirect plugin (or NCCL) version the other hosts do not run (NCCL ranks with mixed plugin versions hang), or a
  problem the GPU preflight of the host that led a run found (nvidia-smi: uncorrected ECC errors, remapped rows pending
  or failed, NVLink links down; nccl_perf's ``host_evidence`` ``gpu_problems``);
* per NIC (TCPX/TCPXO, which restrict NCCL to the NICs of one list): each bad host is tested with a healthy one once per
  data NIC, NCCL restricted to that NIC; a NIC whose bus bandwidth stays below its share of the line rate (line rate /
  data NICs x verdict.REFERENCE_FRACTION) is named.

A pair is judged by the calibrated verdict (verdict.evaluate, run by nccl_perf on the host that led the pair): it
passed when its verdict is PASS. Pure Python, standard library only: the nccl_diagnose module runs it on the controller
between rounds, bench/diagnose.py with a simulated pair runner.
"""

from __future__ import annotations

from collections import Counter

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl.verdict import PASS, REFERENCE_FRACTION

HEALTHY, SUSPECT, BAD = 'healthy', 'suspect', 'bad'
MAX_HOST_ROUNDS = 3
# Two rounds localise one bad host; a third pairs a host left over from an odd count. More bad hosts may need more:
# what is still unknown after these rounds is reported suspect, not guessed.


def first_round(hosts):
    """Round 1: disjoint pairs in the order given (an odd last host waits for a host that passed)."""
    return [[a, b] for a, b in zip(hosts[0::2], hosts[1::2])]


def known_good(results):
    """Hosts of a pair that passed (host rounds only: a run restricted to one NIC says nothing of the whole host)."""
    return {h for r in results if r.get('nic') is None and r['verdict'] == PASS for h in r['hosts']}


def host_rounds(results):
    return max([r['round'] for r in results if r.get('nic') is None] or [0])


def next_runs(hosts, results, max_rounds=MAX_HOST_ROUNDS):
    """The pairs of the next host round (``[{'hosts': [a, b], 'round': n, 'nic': None}]``), [] when the hosts are known
    or nothing more can be learnt (no host passed to pair with, or ``max_rounds`` done)."""
    done = host_rounds(results)
    if done >= max_rounds:
        return []
    if not done:
        return [{'hosts': pair, 'round': 1, 'nic': None} for pair in first_round(hosts)]
    good = known_good(results)
    with_good = {h for r in results if r.get('nic') is None for h in r['hosts'] if set(r['hosts']) - {h} <= good}
    unknown = [h for h in hosts if h not in good and h not in with_good]
    partners = [h for h in hosts if h in good]
    return [{'hosts': [host, partner], 'round': done + 1, 'nic': None} for host, partner in zip(unknown, partners)]


def plan(hosts, max_rounds=MAX_HOST_ROUNDS):
    """What a diagnosis would run, for check mode: round 1's pairs; the later rounds depend on its results."""
    rounds = [{'round': 1, 'pairs': first_round(hosts)}]
    later = 'each host of a failed pair%s with a host that passed, one pair per host, all at once' % (
        ' (and %s, left over)' % hosts[-1] if len(hosts) % 2 else '')
    rounds.append({'round': '2..%d' % max_rounds, 'pairs': [], 'rule': later})
    return rounds


def nic_threshold(family):
    """The bus bandwidth (GB/s) one data NIC must carry: its share of the line rate x REFERENCE_FRACTION; None when the
    catalog gives no NIC bandwidth."""
    if family is None or family.line_rate_gbps is None or not family.data_nic_count:
        return None
    return round(family.line_rate_gbps / 8.0 / family.data_nic_count * REFERENCE_FRACTION, 2)


def nic_runs(hosts, results, nics):
    """One run per data NIC between each host named bad by its pairs and a healthy partner (disjoint pairs, so a NIC's
    runs go at once): ``[{'hosts': [bad, healthy], 'nic': 'eth3', 'round': n}]``."""
    status = classify(hosts, results)
    good = [h for h in hosts if status[h]['status'] == HEALTHY]
    bad = [h for h in hosts if status[h]['status'] == BAD and status[h]['by_pairs']]
    start = host_rounds(results)
    pairs = list(zip(bad, good))
    return [{'hosts': [host, partner], 'nic': nic, 'round': start + 1 + index}
            for index, nic in enumerate(nics) for host, partner in pairs]


def judge_nics(results, threshold):
    """Per-NIC findings of the NIC runs: ``[{'host', 'partner', 'nic', 'busbw_gbps', 'threshold_gbps', 'passed', 'named'}]``.

    A NIC is named (``named``) when it stays below ``threshold`` while another NIC of the same host reaches it: when every
    NIC of a host is slow, the fault is the host's, and naming all its NICs would say nothing."""
    found = []
    for run in (r for r in results if r.get('nic')):
        value = run.get('busbw_gbps')
        passed = threshold is not None and value is not None and value >= threshold
        found.append({'host': run['hosts'][0], 'partner': run['hosts'][1], 'nic': run['nic'], 'busbw_gbps': value,
                      'threshold_gbps': threshold, 'passed': passed})
    fine = {f['host'] for f in found if f['passed']}
    for finding in found:
        finding['named'] = not finding['passed'] and finding['host'] in fine
    return found


def host_facts(results):
    """Every host's evidence merged over the runs it was in (the first value seen wins; GPUs: the fewest seen).
    ``daemons``: on Kubernetes, whether the node's installer / RxDM DaemonSet Pods are ready (``ready: NAME, ...`` or
    ``not ready: NAME``), as the platform's tasks read it."""
    facts = {}
    for run in results:
        for host, seen in (run.get('host_evidence') or {}).items():
            mine = facts.setdefault(host, {'gpus': None, 'network': None, 'network_line': None, 'plugin': None,
                                           'nccl_version': None, 'gpu_problems': None, 'daemons': None})
            if seen.get('gpus'):
                mine['gpus'] = seen['gpus'] if mine['gpus'] is None else min(mine['gpus'], seen['gpus'])
            if seen.get('gpu_problems') is not None:
                mine['gpu_problems'] = (mine['gpu_problems'] or []) + [p for p in seen['gpu_problems']
                                                                       if p not in (mine['gpu_problems'] or [])]
            for key in ('network', 'network_line', 'plugin', 'nccl_version', 'daemons'):
                if mine[key] is None and seen.get(key):
                    mine[key] = seen[key]
    return facts


def _odd_ones(facts, key):
    """Hosts whose ``key`` differs from the one most hosts show ({host: (theirs, most)}); {} without a clear majority."""
    values = Counter(f[key] for f in facts.values() if f.get(key))
    if len(values) < 2:
        return {}
    (most, count), (_second, runner_up) = values.most_common(2)
    if count == runner_up:
        return {h: (f[key], None) for h, f in facts.items() if f.get(key)}
    return {h: (f[key], most) for h, f in facts.items() if f.get(key) and f[key] != most}


def evidence_problems(facts, expected_gpus=None, expected_networks=()):
    """{host: [problem, ...]} from what the output shows of each host."""
    problems = {}
    for host, fact in facts.items():
        mine = problems.setdefault(host, [])
        if expected_gpus and fact['gpus'] is not None and fact['gpus'] < expected_gpus:
            mine.append('GPUs seen: %d of %d' % (fact['gpus'], expected_gpus))
        if expected_networks and fact['network'] and fact['network'] not in expected_networks:
            mine.append('NCCL used %s, not %s' % (fact['network'], ' or '.join(expected_networks)))
        mine.extend('nvidia-smi: %s' % p for p in fact.get('gpu_problems') or ())
    for key, label in (('plugin', 'GPUDirect plugin'), ('nccl_version', 'NCCL')):
        for host, (theirs, most) in _odd_ones(facts, key).items():
            problems[host].append('%s %s differs from %s (mixed versions hang NCCL)'
                                  % (label, theirs, most if most else 'the other hosts\' (no majority)'))
    return {h: p for h, p in problems.items() if p}


def classify(hosts, results, expected_gpus=None, expected_networks=(), nic_findings=(), unit='GB/s', nic_name='NIC'):
    """{host: {'status', 'reasons', 'evidence', 'pairs', 'by_pairs'}} from the pairs' results and the output's evidence."""
    good = known_good(results)
    facts = host_facts(results)
    problems = evidence_problems(facts, expected_gpus, expected_networks)
    table = {}
    for host in hosts:
        mine = [r for r in results if r.get('nic') is None and host in r['hosts']]
        partners = [p for r in mine for p in r['hosts'] if p != host]
        failed_with_good = sorted({p for r in mine if r['verdict'] != PASS for p in r['hosts'] if p != host and p in good})
        reasons, by_pairs = [], False
        if host in good:
            status = HEALTHY
        elif not mine:
            status = SUSPECT
            reasons.append('not tested: no host passed to pair it with')
        elif failed_with_good:
            status, by_pairs = BAD, True
            reasons.append('every pair failed, also with healthy %s' % ', '.join(failed_with_good))
        else:
            status = SUSPECT
            reasons.append('its pairs failed (with %s), but no partner is known healthy' % ', '.join(partners))
        if problems.get(host):
            status = BAD
            reasons.extend(problems[host])
        weak = [f for f in nic_findings if f['host'] == host and f['named']]
        reasons.extend('%s %s: %s %s < %s %s (its share of the line rate)' % (
            nic_name, f['nic'], 'n/a' if f['busbw_gbps'] is None else '%.2f' % f['busbw_gbps'], unit, f['threshold_gbps'], unit) for f in weak)
        table[host] = {'status': status, 'reasons': reasons, 'by_pairs': by_pairs, 'evidence': facts.get(host, {}),
                       'pairs': [{'partner': p, 'round': r['round'], 'verdict': r['verdict'], 'busbw_gbps': r.get('busbw_gbps')}
                                 for r, p in zip(mine, partners)],
                       'bad_nics': [f['nic'] for f in weak]}
    return table


def diagnose(hosts, run_round, max_rounds=MAX_HOST_ROUNDS, nics=(), nic_limit=None, expected_gpus=None):
    """The whole diagnosis with ``run_round(runs) -> results`` (one result per run: the run with 'verdict',
    'busbw_gbps' and optionally 'host_evidence'); what bench/ and the unit tests drive with a simulated runner.

    Returns {'rounds': [[run, ...], ...], 'results': [...], 'hosts': classify(...), 'nics': judge_nics(...)}."""
    results, rounds = [], []
    while True:
        runs = next_runs(hosts, results, max_rounds)
        if not runs:
            break
        rounds.append(runs)
        results.extend(run_round(runs))
    by_nic = {}
    for run in nic_runs(hosts, results, nics):
        by_nic.setdefault(run['round'], []).append(run)
    for round_number in sorted(by_nic):
        rounds.append(by_nic[round_number])
        results.extend(run_round(by_nic[round_number]))
    findings = judge_nics(results, nic_limit)
    return {'rounds': rounds, 'results': results, 'nics': findings,
            'hosts': classify(hosts, results, expected_gpus=expected_gpus, nic_findings=findings)}


def bad_hosts(table):
    return [h for h, row in table.items() if row['status'] == BAD]
