# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL test reports: report.json, JUnit XML, a Markdown summary and a PNG plot (controller side).

Everything but the plot is standard library. The plot needs matplotlib, imported only when a plot
is drawn (the ``nccl_report`` module turns its absence into a missing_required_lib message); the
directory is written, and the plot drawn, by ``report_dir`` (shared with the perftest report).

Report directory:

* ``report.json``  -- schema ``aiinfra.gpudirect/nccl-report/1``: per collective ``name``,
  ``avg_busbw`` (as printed), ``avg_busbw_recomputed``, ``busbw_at_largest_size``, ``network``,
  ``verdict`` (PASS, FAIL or NOT JUDGED), ``reasons`` and ``reference`` (the published curve the
  largest size was judged against: size, reference and threshold GB/s, fraction, public source),
  plus the rows; the whole verdict; the line rate; the baseline comparison.
* ``junit.xml``    -- one test case per collective and criterion (Jenkins junit-10.xsd); a criterion not
  judged is skipped.
* ``summary.md``   -- a table people read at a glance.
* ``busbw.png``    -- busbw against message size (log axis) with the threshold line.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from ansible_collections.aiinfra.gpudirect.plugins.module_utils import report_dir
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl.parse import SYNTHETIC_PREFIX
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl.verdict import collective_label, collective_limits

REPORT_SCHEMA = 'aiinfra.gpudirect/nccl-report/1'
PLOT = 'busbw.png'
FILES = ('report.json', 'junit.xml', 'summary.md', PLOT)


def _collective_entry(index, coll, verdict):
    name = collective_label(coll, index)
    own = verdict['collectives'].get(name, {'verdict': 'FAIL', 'reasons': ['not judged'], 'reference': None})
    limits = collective_limits(verdict['thresholds'], coll)
    return {
        'name': name,
        'name_source': coll.get('name_source'),
        'avg_busbw': coll['avg_busbw'],
        'avg_busbw_recomputed': coll['avg_busbw_recomputed'],
        'busbw_at_largest_size': coll['busbw_at_largest_size'],
        'largest_size': coll['largest_size'],
        'peak_busbw': coll['peak_busbw'],
        'peak_busbw_size': coll['peak_busbw_size'],
        'network': coll['network'],
        'out_of_bounds': coll['out_of_bounds'],
        'out_of_bounds_status': coll['out_of_bounds_status'],
        'wrong_total': coll['wrong_total'],
        'ranks': coll['ranks'],
        'ranks_source': coll['ranks_source'],
        'gpus_per_rank': coll['gpus_per_rank'],
        'nccl_version': coll['nccl_version'],
        'complete': coll['complete'],
        'thresholds': {k: v for k, v in limits.items() if k not in ('source', 'reference')},
        'reference': own.get('reference'),
        'verdict': own['verdict'],
        'reasons': own['reasons'],
        'warnings': [w['text'] for w in coll['warnings']],
        'rows': coll['rows'],
    }


def build_report(results, verdict, source=None, generated_at=None, baseline_path=None):
    """The report.json document for parsed ``results`` and their ``verdict`` (verdict.evaluate)."""
    return {
        'schema': REPORT_SCHEMA,
        'generated_at': generated_at,
        'source': source,
        'machine_type': verdict['machine_type'],
        'technology': verdict['technology'],
        'verdict': verdict['verdict'],
        'passed': verdict['passed'],
        'summary': verdict['summary'],
        'synthetic': bool(verdict.get('synthetic')),
        'reasons': verdict['reasons'],
        'line_rate': verdict.get('line_rate'),
        'collectives': [_collective_entry(i, c, verdict) for i, c in enumerate(results.get('collectives') or [], 1)],
        'checks': verdict['checks'],
        'networks': results.get('networks') or [],
        'nccl_version': results.get('nccl_version'),
        'unparsed_lines': results.get('unparsed_lines') or [],
        'baseline': {'path': baseline_path, 'regressions': verdict.get('regressions') or []} if baseline_path else None,
    }


def junit_xml(report):
    """JUnit XML: a test suite per collective, a test case per criterion (failed / skipped / passed)."""
    checks = report['checks']
    suites = ET.Element('testsuites', name='nccl-tests', tests=str(len(checks)),
                        failures=str(sum(c['status'] == 'failed' for c in checks)), errors='0', time='0')
    machine_type = report.get('machine_type') or 'any'
    for name in dict.fromkeys(c['collective'] for c in checks):
        mine = [c for c in checks if c['collective'] == name]
        suite = ET.SubElement(suites, 'testsuite', name='nccl.%s' % name, tests=str(len(mine)),
                              failures=str(sum(c['status'] == 'failed' for c in mine)), errors='0',
                              skipped=str(sum(c['status'] == 'skipped' for c in mine)), time='0',
                              timestamp=str(report.get('generated_at') or ''))
        properties = ET.SubElement(suite, 'properties')
        for key in ('machine_type', 'technology', 'nccl_version', 'source'):
            ET.SubElement(properties, 'property', name=key, value=str(report.get(key) or ''))
        for check in mine:
            case = ET.SubElement(suite, 'testcase', name=check['criterion'], classname='nccl.%s.%s' % (machine_type, name), time='0')
            if check['status'] == 'failed':
                failure = ET.SubElement(case, 'failure', message=check['message'], type=check['criterion'])
                failure.text = 'value: %s\nthreshold: %s' % (check['value'], check['threshold'])
            elif check['status'] == 'skipped':
                ET.SubElement(case, 'skipped', message=check['message'])
            else:
                ET.SubElement(case, 'system-out').text = check['message']
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding='unicode') + '\n'


def _gb(value):
    return '-' if value is None else '%.2f' % value


def _size(value):
    if value is None:
        return '-'
    for unit, scale in (('GiB', 1 << 30), ('MiB', 1 << 20), ('KiB', 1 << 10)):
        if value >= scale and value % scale == 0:
            return '%d %s' % (value // scale, unit)
    return '%d B' % value


def _judged_against(coll):
    """What the collective's bandwidth was judged against, in a table cell."""
    ref, limits = coll.get('reference'), coll['thresholds']
    parts = []
    if ref:
        derived = ', derived' if ref.get('derived_from') else ''
        parts.append('>= %s GB/s at %s (%s of the reference%s)' % (_gb(ref['threshold_gbps']), _size(ref['judged_size']), ref['fraction'], derived))
    if limits.get('large_busbw_gbps') is not None:
        parts.append('largest size >= %s GB/s (override)' % _gb(limits['large_busbw_gbps']))
    if limits.get('avg_busbw_gbps') is not None:
        parts.append('average >= %s GB/s (override)' % _gb(limits['avg_busbw_gbps']))
    return '; '.join(parts) or 'not judged'


def markdown(report):
    """A summary people read at a glance: verdict, one line per collective, the reasons."""
    lines = ['# NCCL test: **%s**' % report['verdict'], '']
    if report.get('synthetic'):
        lines += ['**%s**' % SYNTHETIC_PREFIX.rstrip(': '), '']
    lines.append('Family: `%s` (GPUDirect-%s); NCCL %s; networks: %s' % (
        report.get('machine_type') or 'not given', report.get('technology') or '?', report.get('nccl_version') or '?',
        ', '.join(report.get('networks') or []) or 'not logged'))
    lines += ['', '| collective | verdict | avg busbw (printed) | avg busbw (rows) | busbw at largest size | '
                  'judged against | network | ranks |',
              '|---|---|---:|---:|---:|---|---|---:|']
    for coll in report['collectives']:
        lines.append('| %s | %s | %s | %s | %s (%s) | %s | %s | %s |' % (
            coll['name'], coll['verdict'], _gb(coll['avg_busbw']), _gb(coll['avg_busbw_recomputed']),
            _gb(coll['busbw_at_largest_size']), _size(coll['largest_size']), _judged_against(coll),
            coll['network'] or '-', coll['ranks'] or '-'))
    references = [c['reference'] for c in report['collectives'] if c.get('reference')]
    if references:
        lines += ['', '## References', '']
        lines += ['- %s: %s of %s GB/s at %s = %s GB/s; %s all_gather, %d nodes: %s (%s)%s' % (
            ref['collective'], ref['fraction'], _gb(ref['reference_gbps']), _size(ref['judged_size']), _gb(ref['threshold_gbps']),
            ref['machine_type'], ref['nodes'], ref['source'], ref.get('url') or '-',
            '; derived from %s' % ref['derived_from'] if ref.get('derived_from') else '') for ref in references]
    if report.get('line_rate'):
        rate = report['line_rate']
        lines += ['', 'Line rate (the ceiling of a measured bus bandwidth): %s GB/s (%d x %d Gb/s data NICs)'
                  % (_gb(rate['gbytes_per_s']), rate['data_nics'], rate['nic_gbps'])]
    lines += ['', '## Reasons', '']
    lines += ['- %s' % reason for reason in report['reasons']] or ['- %s' % report['summary']]
    if report.get('baseline'):
        lines += ['', '## Against the baseline', '', 'Baseline: `%s`' % report['baseline']['path'], '']
        lines += ['- %s: %s' % (r['collective'], r['message']) for r in report['baseline']['regressions']] or ['- no regression']
    if report.get('unparsed_lines'):
        lines += ['', '## Lines that are not nccl-tests output', '']
        lines += ['- line %d: `%s`' % (u['line'], u['text'].replace('`', "'")) for u in report['unparsed_lines'][:20]]
    return '\n'.join(lines) + '\n'


def plot_png(report, path):
    """busbw (GB/s) against message size, one line per collective and placement, each collective's threshold."""
    series, thresholds = [], []
    for coll in report['collectives']:
        for placement, style in (('out_of_place', '-o'), ('in_place', '--s')):
            series.append(('%s %s' % (coll['name'], placement.replace('_', '-')), style,
                           [(r['size'], r[placement]['busbw']) for r in coll['rows'] if r.get(placement)]))
        ref = coll.get('reference')
        limit = (ref or {}).get('threshold_gbps') or coll['thresholds'].get('large_busbw_gbps') or coll['thresholds'].get('avg_busbw_gbps')
        thresholds.append((limit, '%s threshold %.0f GB/s' % (coll['name'], limit or 0)))
    return report_dir.plot_bandwidth(path, series, thresholds, ylabel='bus bandwidth (GB/s)',
                                     title='NCCL %s -- %s' % (report.get('machine_type') or '', report['verdict']))


def render(report):
    """The text files of a report directory, name -> content (the PNG is drawn by plot_png)."""
    return {
        'report.json': json.dumps(report, indent=2, sort_keys=True) + '\n',
        'junit.xml': junit_xml(report),
        'summary.md': markdown(report),
    }


# ---------------------------------------------------------------------------------------------
# The fabric diagnosis (module nccl_diagnose): which host, which NIC
# ---------------------------------------------------------------------------------------------

DIAGNOSIS_SCHEMA = 'aiinfra.gpudirect/nccl-diagnosis/1'
PAIR_PLOT = 'pairs.png'
# What a diagnosis's runs measure (report 'measure'): its title, the quantity of a pair and a NIC run.
MEASURES = {
    'nccl': {'title': 'NCCL', 'pair': 'bus bandwidth at the largest size', 'nic': 'NCCL restricted to one NIC', 'nic_name': 'NIC'},
    'ib_write_bw': {'title': 'ib_write_bw (GPU memory)', 'pair': 'ib_write_bw BW average',
                    'nic': 'ib_write_bw on one HCA, the same HCA of a healthy node', 'nic_name': 'HCA'},
}


# GPUDirect RDMA's per-rail NCCL runs (GKE) restrict NCCL to one HCA.
RDMA_NCCL_MEASURE = dict(MEASURES['nccl'], nic='NCCL restricted to one HCA (NCCL_IB_HCA)', nic_name='HCA')


def _measure(report):
    measure = report.get('measure') or 'nccl'
    if measure == 'nccl' and report.get('technology') == 'RDMA':
        return RDMA_NCCL_MEASURE, report.get('unit') or 'GB/s'
    return MEASURES[measure], report.get('unit') or 'GB/s'


def _evidence_text(evidence):
    parts = []
    if evidence.get('gpus') is not None:
        parts.append('GPUs %s' % evidence['gpus'])
    parts.append('network %s' % (evidence.get('network') or 'not logged'))
    parts.append('plugin %s' % (evidence.get('plugin') or 'not logged'))
    if evidence.get('nccl_version'):
        parts.append('NCCL %s' % evidence['nccl_version'])
    if evidence.get('daemons'):
        parts.append('DaemonSet Pods %s' % evidence['daemons'])
    if evidence.get('gpu_problems') is not None:
        parts.append('nvidia-smi: %s' % ('; '.join(evidence['gpu_problems']) or 'no GPU problem'))
    return ', '.join(parts)


def diagnosis_markdown(report):
    """One table of hosts (healthy / suspect / bad, with the evidence), the pairs by round, the NIC runs."""
    bad = report['bad_hosts']
    measure, unit = _measure(report)
    # Kubernetes: the installer / RxDM DaemonSet Pods per node (a column only where some node has them).
    daemons = any((row.get('evidence') or {}).get('daemons') for row in report['hosts'].values())
    lines = ['# %s fabric diagnosis: **%s**' % (measure['title'], 'bad: ' + ', '.join(bad) if bad else 'no bad host'), '']
    if report.get('synthetic'):
        lines += ['**%s**' % SYNTHETIC_PREFIX.rstrip(': '), '']
    lines += ['Family: `%s` (GPUDirect-%s); %d hosts, %d rounds; pairs judged by %s (%s)' % (
        report.get('machine_type') or 'not given', report.get('technology') or '?', len(report['hosts']), report['rounds'],
        'the NCCL verdict' if measure['title'] == 'NCCL' else measure['pair'], report.get('pair_criterion') or 'PASS'), '',
        '| host | status | reasons | GPUs | network | plugin | NCCL |%s pairs (round: partner verdict %s) |' % (
            ' installer / RxDM Pods |' if daemons else '', unit),
        '|---|---|---|---:|---|---|---|%s---|' % ('---|' if daemons else '')]
    for name, row in report['hosts'].items():
        evidence = row['evidence']
        pairs = '; '.join('%s: %s %s %s' % (p['round'], p['partner'], p['verdict'], _gb(p['busbw_gbps'])) for p in row['pairs'])
        lines.append('| %s | %s | %s | %s | %s | %s | %s |%s %s |' % (
            name, row['status'], '; '.join(row['reasons']) or '-', '-' if evidence.get('gpus') is None else evidence['gpus'],
            evidence.get('network') or '-', evidence.get('plugin') or '-', evidence.get('nccl_version') or '-',
            ' %s |' % (evidence.get('daemons') or '-') if daemons else '', pairs or '-'))
    if report['nics']:
        lines += ['', '## %ss (%s; must reach %s %s, its share of the line rate x %s)' % (
            measure['nic_name'], measure['nic'], _gb(report['nic_threshold_gbps']), unit, report.get('fraction')), '',
            '| host | partner | %s | %s (%s) | |' % (measure['nic_name'], measure['pair'], unit), '|---|---|---|---:|---|']
        every = 'below (as every %s of the host)' % measure['nic_name']
        lines += ['| %s | %s | %s | %s | %s |' % (f['host'], f['partner'], f['nic'], _gb(f['busbw_gbps']),
                                                  'ok' if f['passed'] else '**named**' if f['named'] else every)
                  for f in report['nics']]
    lines += ['', 'Bad hosts (for `--limit`): `%s`' % (','.join('!' + h for h in bad) if bad else 'none'),
              '', 'Pair bandwidth matrix: `%s`' % PAIR_PLOT]
    return '\n'.join(lines) + '\n'


def diagnosis_junit(report):
    """JUnit XML: one test case per host (failed when bad, skipped when suspect)."""
    rows = report['hosts']
    suites = ET.Element('testsuites', name='nccl-diagnosis', tests=str(len(rows)),
                        failures=str(sum(r['status'] == 'bad' for r in rows.values())), errors='0', time='0')
    suite = ET.SubElement(suites, 'testsuite', name='nccl.diagnosis', tests=str(len(rows)),
                          failures=str(sum(r['status'] == 'bad' for r in rows.values())), errors='0',
                          skipped=str(sum(r['status'] == 'suspect' for r in rows.values())), time='0',
                          timestamp=str(report.get('generated_at') or ''))
    for name, row in rows.items():
        case = ET.SubElement(suite, 'testcase', name=name, classname='nccl.diagnosis.%s' % (report.get('machine_type') or 'any'), time='0')
        text = '; '.join(row['reasons']) or 'a pair of it passed'
        if row['status'] == 'bad':
            ET.SubElement(case, 'failure', message=text, type='bad_host').text = _evidence_text(row['evidence'])
        elif row['status'] == 'suspect':
            ET.SubElement(case, 'skipped', message=text)
        else:
            ET.SubElement(case, 'system-out').text = _evidence_text(row['evidence'])
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding='unicode') + '\n'


def render_diagnosis(report):
    """The text files of a diagnosis report directory (the heat map is drawn by plot_pairs)."""
    return {
        'report.json': json.dumps(report, indent=2, sort_keys=True) + '\n',
        'junit.xml': diagnosis_junit(report),
        'summary.md': diagnosis_markdown(report),
    }


def short_names(hosts):
    """({host: label}, prefix): each host's name without the ``-``-separated words every name starts with (GKE's
    ``gke-CLUSTER-POOL-HASH-`` leaves ``sncp``), so that 8 to 64 labels stay legible; the names themselves when that
    would leave a label empty or two alike."""
    words = [h.split('-') for h in hosts]
    common = 0
    while words and all(len(w) > common + 1 and w[common] == words[0][common] for w in words):
        common += 1
    labels = {h: '-'.join(w[common:]) for h, w in zip(hosts, words)}
    if len(hosts) < 2 or not common or len(set(labels.values())) != len(hosts):
        return {h: h for h in hosts}, ''
    return labels, '-'.join(words[0][:common]) + '-'


def plot_pairs(report, path):
    """The pair bus bandwidth matrix as a heat map (hosts on both axes, by their short names: the summary's host table has
    the full ones)."""
    labels, prefix = short_names(list(report['hosts']))
    values = {(labels[p['hosts'][0]], labels[p['hosts'][1]]): p['busbw_gbps'] for p in report['pairs'] if p['busbw_gbps'] is not None}
    values.update({(b, a): v for (a, b), v in list(values.items())})
    measure, unit = _measure(report)
    title = '%s pairs -- %s%s\nbad (red): %s%s' % (
        measure['title'], report.get('machine_type') or '', ' (STAND-IN OUTPUT)' if report.get('synthetic') else '',
        ', '.join(labels[h] for h in report['bad_hosts']) or 'none', '\nhosts: %s...' % prefix if prefix else '')
    return report_dir.plot_matrix(path, [labels[h] for h in report['hosts']], values, '%s (%s)' % (measure['pair'], unit), title,
                                  marked={labels[h] for h in report['bad_hosts']})
