# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verdicts over parsed nccl-tests results (parse.py): PASS, FAIL or NOT JUDGED, with reasons. Table, average,
bandwidth (against the catalog's published reference curve, or the user's thresholds), line-rate and GPUDirect-network
checks, and comparison with a baseline report.

Standard library only: the nccl_perf module runs it on the target.
"""

from __future__ import annotations

import math

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl.parse import (
    PASSED, FAILED, SKIPPED, SOCKET_NETWORK, SYNTHETIC_PREFIX, collective_name,
)

# ---------------------------------------------------------------------------------------------
# Verdicts
# ---------------------------------------------------------------------------------------------

PASS, FAIL, NOT_JUDGED = 'PASS', 'FAIL', 'NOT JUDGED'
VERDICTS = (PASS, FAIL, NOT_JUDGED)

THRESHOLD_KEYS = ('avg_busbw_gbps', 'large_busbw_gbps')

REFERENCE_FRACTION = 0.6
# The share of the published healthy bus bandwidth (the catalog's reference curve at the sweep's largest size) a run must
# reach. A fault (NCCL's Socket fallback, a data NIC down, the GPUDirect plugin or its receive-datapath manager missing)
# halves the bandwidth or worse, while a healthy run stays well above the bar: the GKE GPUDirect-TCPX/TCPXO guide's own healthy TCPXO sample reaches
# 0.67 of A3 Mega's curve at 1 GiB (122.14 of 183.38 GB/s), so the bar must sit below that and above one half.

MIN_JUDGED_SIZE = 64 << 20
# A sweep whose largest message is smaller measures latency, not the fabric: its bandwidth is not judged (the catalog's
# curves start here).

CEILING_EXEMPT = ('all_reduce',)
# Collectives whose bus bandwidth may exceed the data NICs' line rate on a healthy cluster: NCCL's tree and NVLS algorithms
# reduce inside the node before the network, so all_reduce's busbw over 2 nodes can reach about twice the line rate.

# The criteria that judge the bandwidth itself: a verdict with none of them judged (and nothing failed) is NOT JUDGED.
BANDWIDTH_CRITERIA = ('avg_busbw', 'large_message_busbw', 'nccl_tests_min_bw')


def _reference_entry(machine_type, ref):
    return {'machine_type': machine_type, 'collective': ref.collective, 'nodes': ref.nodes, 'gpus_per_node': ref.gpus_per_node,
            'points': [list(point) for point in ref.points], 'fraction': REFERENCE_FRACTION, 'source': ref.source,
            'url': ref.url, 'derived_from': ref.derived_from}


def thresholds_for(machine_type=None, overrides=None):
    """The bandwidth criteria per collective for ``machine_type``, with ``overrides`` on top.

    From the catalog: ``{collective: {'reference': {...}, 'source': 'catalog'}}`` for each published reference curve
    of the family (families.NcclReference: the bus bandwidth at the sweep's largest size must reach
    REFERENCE_FRACTION of the curve at that size). ``overrides``: ``{collective: {'avg_busbw_gbps': x,
    'large_busbw_gbps': y}}`` (``'*'`` for every collective), fixed GB/s gates on the average and on the largest
    size; a ``large_busbw_gbps`` replaces the reference for that collective, and a value of None removes that threshold
    (``large_busbw_gbps: null`` removes the reference too).
    """
    table = {}
    if machine_type:
        fam = families.get_family(machine_type, field='machine_type')
        for ref in fam.nccl_references:
            table[ref.collective] = {'reference': _reference_entry(fam.machine_type, ref), 'source': 'catalog'}
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
        if 'large_busbw_gbps' in values:
            entry.pop('reference', None)
        entry['source'] = 'override'
        table[key] = entry
    return table


def reference_busbw(points, size):
    """The reference bus bandwidth (GB/s) at ``size`` bytes: the curve's point at that size, else log2-linear between
    its neighbours; above the curve's largest size, its last point; below its smallest, its first."""
    points = sorted((int(b), float(g)) for b, g in points)
    if size >= points[-1][0]:
        return points[-1][1]
    if size <= points[0][0]:
        return points[0][1]
    for (low, low_bw), (high, high_bw) in zip(points, points[1:]):
        if low <= size <= high:
            if size == low:
                return low_bw
            share = (math.log2(size) - math.log2(low)) / (math.log2(high) - math.log2(low))
            return low_bw + share * (high_bw - low_bw)
    raise AssertionError('unreachable')


def size_text(size):
    """A message size as people write it: 1 GiB, 512 MiB, 4 KiB, 1000 B."""
    if size is None:
        return 'n/a'
    for unit, shift in (('GiB', 30), ('MiB', 20), ('KiB', 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return '%d %s' % (size >> shift, unit)
    return '%d B' % size


def reference_text(ref):
    """Whose curve and where it is published: 'a3-megagpu-8g all_gather 2 nodes, <source>' (derived: say from what)."""
    text = '%s %s %d nodes, %s' % (ref['machine_type'], ref['collective'], ref['nodes'], ref['source'])
    if ref.get('derived_from'):
        text += '; derived from %s' % ref['derived_from']
    return text


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


def _best_at_largest(coll):
    """The larger of the out-of-place and in-place busbw at the largest size (the reference curves hold the larger too)."""
    rows = [r for r in coll['rows'] if r['size'] == coll['largest_size']]
    values = [r[p]['busbw'] for r in rows for p in ('out_of_place', 'in_place') if r.get(p) and r[p].get('busbw') is not None]
    return max(values) if values else None


def _reference_check(name, coll, ref):
    largest = coll['largest_size']
    if largest is None:
        return _check(name, 'large_message_busbw', SKIPPED, 'no rows to judge against %s' % reference_text(ref)), None
    if largest < MIN_JUDGED_SIZE:
        return _check(name, 'large_message_busbw', SKIPPED,
                      'the sweep stops at %s, below %s: small messages measure latency, not the fabric (run to 1 GiB or more '
                      'to judge the bandwidth against %s)' % (size_text(largest), size_text(MIN_JUDGED_SIZE), reference_text(ref))), None
    expected = reference_busbw(ref['points'], largest)
    limit = round(ref['fraction'] * expected, 2)
    measured = _best_at_largest(coll)
    judged = {'judged_size': largest, 'reference_gbps': round(expected, 2), 'threshold_gbps': limit, 'measured_gbps': measured,
              'fraction': ref['fraction'], 'machine_type': ref['machine_type'], 'collective': ref['collective'],
              'nodes': ref['nodes'], 'source': ref['source'], 'url': ref.get('url'), 'derived_from': ref.get('derived_from')}
    if measured is None:
        return _check(name, 'large_message_busbw', FAILED, 'no bus bandwidth at %s to compare with %s GB/s'
                      % (size_text(largest), _fmt(limit)), None, limit), judged
    ok = measured >= limit
    return _check(name, 'large_message_busbw', PASSED if ok else FAILED,
                  'bus bandwidth at %s %s GB/s %s %s GB/s (%s of %s GB/s, %s)'
                  % (size_text(largest), _fmt(measured), '>=' if ok else '<', _fmt(limit), ref['fraction'], _fmt(expected),
                     reference_text(ref)), measured, limit), judged


def _bandwidth_checks(name, coll, limits, machine_type):
    """The average and large-message checks, and what the large message was judged against (None when nothing)."""
    checks = []
    where = ' (%s, %s)' % (machine_type, limits.get('source')) if machine_type else ' (%s)' % limits.get('source', 'override')
    avg = coll['avg_busbw'] if coll['avg_busbw'] is not None else coll['avg_busbw_recomputed']
    limit = limits.get('avg_busbw_gbps')
    if limit is None:
        checks.append(_check(name, 'avg_busbw', SKIPPED, 'average bus bandwidth %s GB/s, for information (an average over a sweep '
                             'from small messages is dominated by them; set thresholds.%s.avg_busbw_gbps to gate on it)'
                             % (_fmt(avg), name), avg))
    elif avg is None:
        checks.append(_check(name, 'avg_busbw', FAILED, 'no bus bandwidth to compare with %s GB/s' % _fmt(limit), None, limit))
    else:
        ok = avg >= limit
        checks.append(_check(name, 'avg_busbw', PASSED if ok else FAILED, 'average bus bandwidth %s GB/s %s %s GB/s%s'
                             % (_fmt(avg), '>=' if ok else '<', _fmt(limit), where), avg, limit))
    limit = limits.get('large_busbw_gbps')
    large = coll['busbw_at_largest_size']
    judged = None
    if limit is None and limits.get('reference'):
        check, judged = _reference_check(name, coll, limits['reference'])
        checks.append(check)
    elif limit is None:
        checks.append(_check(name, 'large_message_busbw', SKIPPED, 'no published reference for %s%s and no thresholds given'
                             % (name, ' on ' + machine_type if machine_type else '')))
    elif large is None:
        checks.append(_check(name, 'large_message_busbw', FAILED, 'no rows to compare with %s GB/s' % _fmt(limit), None, limit))
    else:
        ok = large >= limit
        checks.append(_check(name, 'large_message_busbw', PASSED if ok else FAILED,
                             'bus bandwidth at the largest size (%s) %s GB/s %s %s GB/s%s'
                             % (size_text(coll['largest_size']), _fmt(large), '>=' if ok else '<', _fmt(limit), where), large, limit))
    return checks, judged


def _line_rate_check(name, coll, fam):
    """Every row's busbw at most the data NICs' line rate: above it the run did not measure the network."""
    if fam is None or fam.line_rate_gbps is None:
        return []
    ceiling = fam.line_rate_gbps / 8.0
    nics = '%d x %d Gb/s data NICs of %s' % (fam.data_nic_count, fam.nic_bandwidth_gbps, fam.machine_type)
    if (coll['name'] or '') in CEILING_EXEMPT:
        return [_check(name, 'line_rate', SKIPPED, '%s may exceed the line rate (%s GB/s, %s) on a healthy cluster (NCCL '
                       'reduces inside the node first): not checked' % (name, _fmt(ceiling), nics))]
    above = [(r['size'], r[p]['busbw']) for r in coll['rows'] for p in ('out_of_place', 'in_place')
             if r.get(p) and r[p].get('busbw') is not None and r[p]['busbw'] > ceiling]
    if above:
        size, busbw = max(above, key=lambda item: item[1])
        return [_check(name, 'line_rate', FAILED, 'bus bandwidth %s GB/s at %s is above the line rate, %s GB/s (%s): not a '
                       'measurement of the network (all ranks on one host, or a wrong size or rank count)'
                       % (_fmt(busbw), size_text(size), _fmt(ceiling), nics), busbw, ceiling)]
    return [_check(name, 'line_rate', PASSED, 'every row within the line rate, %s GB/s (%s)' % (_fmt(ceiling), nics),
                   coll['peak_busbw'], ceiling)]


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


def _collective_verdict(own):
    failed = [c['message'] for c in own if c['status'] == FAILED]
    if failed:
        return FAIL, failed
    if any(c['criterion'] in BANDWIDTH_CRITERIA and c['status'] == PASSED for c in own):
        return PASS, []
    return NOT_JUDGED, []


def evaluate(results, machine_type=None, thresholds=None, technology=None, require_network_evidence=False,
             baseline=None, max_regression_pct=10.0, run_problems=()):
    """A verdict with reasons for parsed ``results`` (see :func:`parse`): PASS, FAIL or NOT JUDGED.

    ``machine_type``: machine type (catalog reference curves, line rate and expected GPUDirect network); ``thresholds``:
    overrides (see :func:`thresholds_for`); ``technology``: TCPX/TCPXO/RDMA when no machine_type is given;
    ``require_network_evidence``: fail when the log holds no NCCL network line; ``baseline``: an
    earlier report (``report.json``) to compare with, failing on a drop over ``max_regression_pct``;
    ``run_problems``: what went wrong with the run itself (exit status, timeout), each a failed check.

    FAIL when any check failed; else PASS when a bandwidth criterion (reference curve, override, nccl-tests'
    NCCL_TESTS_MIN_BW) passed for some collective; else NOT JUDGED. ``passed`` is true for PASS only.

    Returns ``{'passed', 'verdict': 'PASS'|'FAIL'|'NOT JUDGED', 'summary', 'reasons', 'checks', 'collectives',
    'machine_type', 'technology', 'expected_networks', 'thresholds', 'line_rate', 'regressions'}``.
    """
    limits = thresholds_for(machine_type, thresholds)
    fam = families.get_family(machine_type, field='machine_type') if machine_type else None
    if fam and not technology:
        technology = fam.technology
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
        bandwidth, judged = _bandwidth_checks(name, coll, collective_limits(limits, coll), machine_type)
        own = _table_checks(name, coll) + _average_checks(name, coll) + bandwidth + _line_rate_check(name, coll, fam)
        own.append(_network_check(name, coll, expected, technology, require_network_evidence))
        if baseline:
            mine = [r for r in regressions if r['collective'] == name]
            if mine:
                own.append(_check(name, 'baseline', FAILED, '; '.join(r['message'] for r in mine)))
            else:
                own.append(_check(name, 'baseline', PASSED, 'no drop over %s%% against the baseline' % _fmt(max_regression_pct)))
        checks.extend(own)
        word, failed = _collective_verdict(own)
        verdicts[name] = {'passed': word == PASS, 'verdict': word, 'reasons': failed, 'reference': judged}
    checks.extend(_check('nccl-tests', 'run', FAILED, problem) for problem in run_problems)
    reasons = ['%s: %s' % (c['collective'], c['message']) for c in checks if c['status'] == FAILED]
    if reasons:
        summary = FAIL
    elif any(v['verdict'] == PASS for v in verdicts.values()):
        summary = PASS
    else:
        summary = NOT_JUDGED
    detail = reasons or ['%s: %s' % (n, _pass_detail(checks, n)) for n in verdicts]
    line_rate = None
    if fam and fam.line_rate_gbps is not None:
        line_rate = {'gbytes_per_s': fam.line_rate_gbps / 8.0, 'data_nics': fam.data_nic_count, 'nic_gbps': fam.nic_bandwidth_gbps}
    return {
        'passed': summary == PASS, 'verdict': summary, 'synthetic': bool(results.get('synthetic')),
        'summary': '%s%s -- %s' % (SYNTHETIC_PREFIX if results.get('synthetic') else '', summary, '; '.join(detail)),
        'reasons': reasons, 'checks': checks, 'collectives': verdicts,
        'machine_type': machine_type, 'technology': technology, 'expected_networks': list(expected),
        'require_network_evidence': bool(require_network_evidence), 'thresholds': limits, 'line_rate': line_rate,
        'regressions': regressions,
    }


def _pass_detail(checks, name):
    """What a collective that did not fail passed on; that its bandwidth was not judged, when it was not; and that its
    network was not judged when it was not (a log without NCCL's network lines passes on bandwidth alone, and the
    summary must not read as if GPUDirect were proven)."""
    mine = [c for c in checks if c['collective'] == name]
    parts = [c['message'] for c in mine if c['criterion'] in BANDWIDTH_CRITERIA and c['status'] == PASSED]
    if not parts:
        skipped = [c['message'] for c in mine if c['criterion'] == 'large_message_busbw' and c['status'] == SKIPPED]
        parts.append('bandwidth not judged: %s' % (skipped[0] if skipped else 'no bandwidth criterion'))
    parts += [c['message'] if c['status'] == PASSED else 'network not judged: ' + c['message']
              for c in mine if c['criterion'] == 'gpudirect' and c['status'] in (PASSED, SKIPPED)]
    return '; '.join(parts)


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
