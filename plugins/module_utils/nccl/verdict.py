# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pass/fail verdicts over parsed nccl-tests results (parse.py): thresholds from the catalog,
table, average, bandwidth and GPUDirect-network checks, and comparison with a baseline report.

Standard library only: the nccl_perf module runs it on the target.
"""

from __future__ import annotations


from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl.parse import (
    PASSED, FAILED, SKIPPED, SOCKET_NETWORK, SYNTHETIC_PREFIX, collective_name,
)

# ---------------------------------------------------------------------------------------------
# Verdicts
# ---------------------------------------------------------------------------------------------

THRESHOLD_KEYS = ('avg_busbw_gbps', 'large_busbw_gbps')


def thresholds_for(machine_type=None, overrides=None):
    """The bandwidth thresholds (GB/s) per collective for ``machine_type``, with ``overrides`` on top.

    The catalog's value (families.Family.nccl_min_avg_busbw_gbps: a 2-node all_gather's average
    bus bandwidth) is the all_gather threshold for the average and for the largest message (a
    healthy run's busbw at its largest size is above its average; no source gives a separate
    large-message figure). ``overrides``: ``{collective: {'avg_busbw_gbps': x, 'large_busbw_gbps': y}}``
    (``'*'`` for every collective); a value of None removes that threshold.
    """
    table = {}
    if machine_type:
        fam = families.get_family(machine_type, field='machine_type')
        if fam.nccl_min_avg_busbw_gbps is not None:
            table['all_gather'] = {'avg_busbw_gbps': fam.nccl_min_avg_busbw_gbps,
                                   'large_busbw_gbps': fam.nccl_min_avg_busbw_gbps,
                                   'source': fam.nccl_threshold_source}
    for name, values in (overrides or {}).items():
        if not isinstance(values, dict):
            raise ValueError('thresholds.%s: give a mapping such as {avg_busbw_gbps: 30, large_busbw_gbps: 60}, not %r'
                             % (name, values))
        unknown = sorted(set(values) - set(THRESHOLD_KEYS))
        if unknown:
            raise ValueError('thresholds.%s: unknown key(s) %s; use %s' % (name, ', '.join(unknown), ', '.join(THRESHOLD_KEYS)))
        key = name if name == '*' else collective_name(name)
        entry = dict(table.get(key, {}))
        for threshold, value in values.items():
            if value is not None:
                try:
                    value = float(value)
                except (TypeError, ValueError):
                    raise ValueError('thresholds.%s.%s: %r is not a number of GB/s' % (name, threshold, value)) from None
                if value < 0:
                    raise ValueError('thresholds.%s.%s: %r is negative; give GB/s >= 0' % (name, threshold, value))
            entry[threshold] = value
        entry['source'] = 'override'
        table[key] = entry
    return table


def _check(coll, criterion, status, message, value=None, threshold=None):
    return {'collective': coll, 'criterion': criterion, 'status': status, 'message': message,
            'value': value, 'threshold': threshold}


def collective_label(coll, index):
    """The name a collective is reported under: its own, or collective-N (1-based) when the output gave none."""
    return coll['name'] or 'collective-%d' % index


def collective_limits(limits, coll):
    """The thresholds of one collective: those for every collective ('*') with its own on top."""
    return dict(limits.get('*', {}), **limits.get(coll['name'] or '', {}))


def _fmt(value):
    return 'n/a' if value is None else ('%.2f' % value)


def _table_checks(name, coll):
    checks = []
    problems = []
    if coll['malformed_rows']:
        first = coll['malformed_rows'][0]
        problems.append('%d row(s) could not be read (first at line %d: %s)' % (len(coll['malformed_rows']), first['line'], first['why']))
    problems += ['nccl-tests reported an error: %s' % e['text'] for e in coll['errors']]
    if not coll['rows']:
        problems.insert(0, 'no result rows')
    checks.append(_check(name, 'results', FAILED if problems else PASSED,
                         '; '.join(problems) if problems else '%d rows read' % len(coll['rows']), len(coll['rows'])))
    if coll['complete']:
        checks.append(_check(name, 'complete', PASSED, 'footer present (out-of-bounds count and average bus bandwidth)'))
    else:
        checks.append(_check(name, 'complete', FAILED, 'the run stopped before its footer (no "Avg bus bandwidth" / '
                                                       '"Out of bounds values" line): truncated or crashed'))
    if coll['wrong_total'] is None:
        checks.append(_check(name, 'wrong_values', SKIPPED, 'no #wrong counts (data check off: -c 0, or an older build)'))
    elif coll['wrong_total']:
        bad = [r['size'] for r in coll['rows'] if any((r.get(p) or {}).get('wrong') for p in ('out_of_place', 'in_place'))]
        checks.append(_check(name, 'wrong_values', FAILED, '%d wrong values at sizes %s: the collective returned corrupt data'
                             % (coll['wrong_total'], ', '.join(str(s) for s in bad[:8])), coll['wrong_total'], 0))
    else:
        checks.append(_check(name, 'wrong_values', PASSED, 'no wrong values', 0, 0))
    if coll['out_of_bounds'] is None:
        checks.append(_check(name, 'out_of_bounds', SKIPPED, 'no out-of-bounds line'))
    elif coll['out_of_bounds'] or coll['out_of_bounds_status'] == 'FAILED':
        checks.append(_check(name, 'out_of_bounds', FAILED, 'out of bounds values: %d FAILED' % coll['out_of_bounds'],
                             coll['out_of_bounds'], 0))
    else:
        checks.append(_check(name, 'out_of_bounds', PASSED, 'out of bounds values: 0 OK', 0, 0))
    return checks


def _average_checks(name, coll):
    checks = []
    printed, recomputed = coll['avg_busbw'], coll['avg_busbw_recomputed']
    if printed is None or recomputed is None:
        checks.append(_check(name, 'average_consistent', SKIPPED, 'no printed average to compare with the rows'))
    elif abs(printed - recomputed) <= coll['avg_busbw_tolerance']:
        checks.append(_check(name, 'average_consistent', PASSED, 'printed average %s matches the rows (%.4f)'
                             % (printed, recomputed), recomputed, printed))
    else:
        checks.append(_check(name, 'average_consistent', FAILED,
                             'printed average %s GB/s differs from the mean of the rows (%.4f GB/s): rows are missing '
                             'or the log mixes two runs' % (printed, recomputed), recomputed, printed))
    if coll['avg_busbw_check'] == 'FAILED':
        checks.append(_check(name, 'nccl_tests_min_bw', FAILED, 'nccl-tests marked the average FAILED (below NCCL_TESTS_MIN_BW)'))
    elif coll['avg_busbw_check'] == 'OK':
        checks.append(_check(name, 'nccl_tests_min_bw', PASSED, 'nccl-tests marked the average OK (NCCL_TESTS_MIN_BW)'))
    return checks


def _bandwidth_checks(name, coll, limits, machine_type):
    checks = []
    where = ' (%s, %s)' % (machine_type, limits.get('source')) if machine_type else ' (%s)' % limits.get('source', 'override')
    avg = coll['avg_busbw'] if coll['avg_busbw'] is not None else coll['avg_busbw_recomputed']
    limit = limits.get('avg_busbw_gbps')
    if limit is None:
        checks.append(_check(name, 'avg_busbw', SKIPPED, 'no average bus bandwidth threshold for %s%s; set thresholds to gate on it'
                             % (name, ' on ' + machine_type if machine_type else '')))
    elif avg is None:
        checks.append(_check(name, 'avg_busbw', FAILED, 'no bus bandwidth to compare with %s GB/s' % _fmt(limit), None, limit))
    else:
        ok = avg >= limit
        checks.append(_check(name, 'avg_busbw', PASSED if ok else FAILED, 'average bus bandwidth %s GB/s %s %s GB/s%s'
                             % (_fmt(avg), '>=' if ok else '<', _fmt(limit), where), avg, limit))
    limit = limits.get('large_busbw_gbps')
    large = coll['busbw_at_largest_size']
    if limit is None:
        checks.append(_check(name, 'large_message_busbw', SKIPPED, 'no large-message threshold for %s' % name))
    elif large is None:
        checks.append(_check(name, 'large_message_busbw', FAILED, 'no rows to compare with %s GB/s' % _fmt(limit), None, limit))
    else:
        ok = large >= limit
        checks.append(_check(name, 'large_message_busbw', PASSED if ok else FAILED,
                             'bus bandwidth at the largest size (%d B) %s GB/s %s %s GB/s%s'
                             % (coll['largest_size'], _fmt(large), '>=' if ok else '<', _fmt(limit), where), large, limit))
    return checks


def _network_check(name, coll, expected, technology, require_evidence):
    used = coll['networks']
    if not expected:
        return _check(name, 'gpudirect', SKIPPED, 'no machine_type or technology given: the network NCCL used (%s) is not judged'
                      % (', '.join(used) or 'not logged'))
    want = ' or '.join(expected)
    if not used:
        status = FAILED if require_evidence else SKIPPED
        return _check(name, 'gpudirect', status, 'the log holds no NCCL network line; run with NCCL_DEBUG=INFO to prove '
                      'GPUDirect-%s (%s) is in use' % (technology, want), None, want)
    lowered = [u.lower() for u in used]
    if SOCKET_NETWORK.lower() in lowered or not any(e.lower() in lowered for e in expected):
        hint = ''
        if coll['plugin_problems']:
            hint = ' (%s)' % coll['plugin_problems'][0]['text']
        return _check(name, 'gpudirect', FAILED,
                      'NCCL used %s, not GPUDirect-%s (%s): the GPUDirect NCCL plugin was not loaded%s -- this looks like '
                      'low bandwidth but is a misconfiguration (LD_LIBRARY_PATH, plugin install, NCCL env)'
                      % ('/'.join(used), technology, want, hint), ','.join(used), want)
    if coll['gpudirect_rdma'] is False and technology == families.RDMA:
        return _check(name, 'gpudirect', FAILED, 'NCCL used %s without GPUDirect RDMA (no /GDRDMA on its channels)'
                      % '/'.join(used), ','.join(used), want)
    return _check(name, 'gpudirect', PASSED, 'NCCL used %s (GPUDirect-%s)' % ('/'.join(used), technology), ','.join(used), want)


def evaluate(results, machine_type=None, thresholds=None, technology=None, require_network_evidence=False,
             baseline=None, max_regression_pct=10.0, run_problems=()):
    """A pass/fail verdict with reasons for parsed ``results`` (see :func:`parse`).

    ``machine_type``: machine type (catalog thresholds and expected GPUDirect network); ``thresholds``:
    overrides (see :func:`thresholds_for`); ``technology``: TCPX/TCPXO/RDMA when no machine_type is given;
    ``require_network_evidence``: fail when the log holds no NCCL network line; ``baseline``: an
    earlier report (``report.json``) to compare with, failing on a drop over ``max_regression_pct``;
    ``run_problems``: what went wrong with the run itself (exit status, timeout), each a failed check.

    Returns ``{'passed', 'verdict': 'PASS'|'FAIL', 'summary', 'reasons', 'checks', 'collectives',
    'machine_type', 'technology', 'expected_networks', 'thresholds', 'regressions'}``.
    """
    limits = thresholds_for(machine_type, thresholds)
    if machine_type and not technology:
        technology = families.get_family(machine_type, field='machine_type').technology
    elif technology:
        technology = families.check_technology(technology, field='technology')
    expected = families.NCCL_NETWORKS.get(technology, ())
    checks, verdicts = [], {}
    collectives = results.get('collectives') or []
    if not collectives:
        unread = results.get('unparsed_lines') or []
        # What nccl-tests printed instead of a table is its own error ("Invalid number of GPUs: 4 requested but only 1
        # were found."): quote it, so the reason is in the verdict and not only in unparsed_lines.
        said = '; it printed: %s' % ' / '.join(entry['text'] for entry in unread[-2:]) if unread else ''
        checks.append(_check('nccl-tests', 'results', FAILED, 'no nccl-tests results in the output (%d unreadable lines)%s'
                             % (len(unread), said)))
    for message in results.get('errors') or []:
        checks.append(_check('nccl-tests', 'results', FAILED, message))
    regressions = compare_with_baseline(results, baseline, max_regression_pct) if baseline else []
    for index, coll in enumerate(collectives, 1):
        name = collective_label(coll, index)
        own = _table_checks(name, coll) + _average_checks(name, coll)
        own += _bandwidth_checks(name, coll, collective_limits(limits, coll), machine_type)
        own.append(_network_check(name, coll, expected, technology, require_network_evidence))
        if baseline:
            mine = [r for r in regressions if r['collective'] == name]
            if mine:
                own.append(_check(name, 'baseline', FAILED, '; '.join(r['message'] for r in mine)))
            else:
                own.append(_check(name, 'baseline', PASSED, 'no drop over %s%% against the baseline' % _fmt(max_regression_pct)))
        checks.extend(own)
        failed = [c['message'] for c in own if c['status'] == FAILED]
        verdicts[name] = {'passed': not failed, 'verdict': 'FAIL' if failed else 'PASS', 'reasons': failed}
    checks.extend(_check('nccl-tests', 'run', FAILED, problem) for problem in run_problems)
    reasons = ['%s: %s' % (c['collective'], c['message']) for c in checks if c['status'] == FAILED]
    passed = not reasons
    summary = 'PASS' if passed else 'FAIL'
    detail = reasons or ['%s: %s' % (n, _pass_detail(checks, n)) for n in verdicts]
    return {
        'passed': passed, 'verdict': summary, 'synthetic': bool(results.get('synthetic')),
        'summary': '%s%s -- %s' % (SYNTHETIC_PREFIX if results.get('synthetic') else '', summary, '; '.join(detail)),
        'reasons': reasons, 'checks': checks, 'collectives': verdicts,
        'machine_type': machine_type, 'technology': technology, 'expected_networks': list(expected),
        'require_network_evidence': bool(require_network_evidence), 'thresholds': limits, 'regressions': regressions,
    }


def _pass_detail(checks, name):
    """What a passing collective passed on, and that its network was not judged when it was not (a log without NCCL's
    network lines passes on bandwidth alone, and the summary must not read as if GPUDirect were proven)."""
    mine = [c for c in checks if c['collective'] == name and c['criterion'] in ('avg_busbw', 'gpudirect')
            and (c['status'] == PASSED or c['criterion'] == 'gpudirect' and c['status'] == SKIPPED)]
    return '; '.join(c['message'] if c['status'] == PASSED else 'network not judged: ' + c['message'] for c in mine) \
        or 'all criteria with a threshold passed'


def compare_with_baseline(results, baseline, max_regression_pct=10.0):
    """Drops of more than ``max_regression_pct`` percent against ``baseline`` (a report or parsed results).

    Compared per collective (by name): the average bus bandwidth (printed, else recomputed) and the
    bus bandwidth at the largest message size.
    """
    try:
        limit = float(max_regression_pct)
    except (TypeError, ValueError):
        raise ValueError('max_regression_pct: %r is not a number of percent' % (max_regression_pct,)) from None
    old = {c.get('name'): c for c in (baseline or {}).get('collectives') or []}
    found = []
    for index, coll in enumerate(results.get('collectives') or [], 1):
        name = collective_label(coll, index)
        before = old.get(coll['name'])
        if not before:
            continue
        for key, label in (('avg_busbw', 'average bus bandwidth'), ('busbw_at_largest_size', 'bus bandwidth at the largest size')):
            now = coll.get(key) if coll.get(key) is not None else coll.get('avg_busbw_recomputed') if key == 'avg_busbw' else None
            then = before.get(key) if before.get(key) is not None else before.get('avg_busbw_recomputed') if key == 'avg_busbw' else None
            if now is None or not then:
                continue
            drop = (then - now) / then * 100.0
            if drop > limit:
                found.append({'collective': name, 'metric': key, 'baseline': then, 'current': now, 'drop_pct': round(drop, 2),
                              'message': '%s fell %.1f%% (%s -> %s GB/s; limit %s%%)' % (label, drop, _fmt(then), _fmt(now), _fmt(limit))})
    return found
