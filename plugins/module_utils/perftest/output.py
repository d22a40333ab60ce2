# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest (``ib_write_bw``) output: the parser, the verdict against the link rate, the report files.

perftest prints a header block, then the table ``#bytes #iterations BW peak[UNIT] BW average[UNIT]
MsgRate[Mpps]`` (UNIT ``Gb/sec`` with ``--report_gbits``, else ``MB/sec``) and one row per size.  The
report follows the NCCL reports' set of formats (report.json, junit.xml, summary.md, and a plot of BW average
and peak against message size drawn by ``report_dir``, as the NCCL one) with its own schema.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from ansible_collections.aiinfra.gpudirect.plugins.module_utils import report_dir
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl.parse import SYNTHETIC_OUTPUT, SYNTHETIC_PREFIX

REPORT_SCHEMA = 'aiinfra.gpudirect/perftest-report/1'
PLOT = 'bandwidth.png'
FILES = ('report.json', 'junit.xml', 'summary.md', PLOT)
# Gb/s per unit of perftest's BW columns: --report_gbits prints Gb/sec, else MB/sec (10^6 bytes).
GBPS_PER_UNIT = {'Gb/sec': 1.0, 'MB/sec': 8 / 1000.0}
_HEADER = re.compile(r'#bytes\s+#iterations\s+BW peak\[(?P<unit>[^\]]+)\]\s+BW average\[[^\]]+\](?:\s+MsgRate\[Mpps\])?')
_ROW = re.compile(r'^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)(?:\s+([\d.]+))?\s*$')
_RATE = re.compile(r'Rate:\s*(\d+(?:\.\d+)?)')


def parse(output):
    """{'test', 'device', 'link_type', 'unit', 'rows': [{bytes, iterations, bw_peak, bw_average, msg_rate_mpps}],
    'bw_average_gbps', 'bw_peak_gbps', 'msg_rate_mpps', 'dmabuf'} from one side's output."""
    text = str(output or '')
    header = _HEADER.search(text)
    if not header:
        raise ValueError('no perftest result table (#bytes #iterations BW peak ...) in the output')
    unit = header.group('unit')
    if unit not in GBPS_PER_UNIT:
        raise ValueError('unknown bandwidth unit %s' % unit)
    to_gbps = GBPS_PER_UNIT[unit]
    rows = []
    for line in text[header.end():].splitlines():
        match = _ROW.match(line)
        if match:
            size, iterations, peak, average, rate = match.groups()
            rows.append({'bytes': int(size), 'iterations': int(iterations), 'bw_peak': float(peak),
                         'bw_average': float(average), 'msg_rate_mpps': float(rate) if rate else None})
        elif rows and line.strip().startswith('---'):
            break
    if not rows:
        raise ValueError('the perftest result table has no rows')
    last = rows[-1]
    test = re.search(r'^\s*(\S.*\S)\s+Test\s*$', text, re.MULTILINE)
    device = re.search(r'Device\s*:\s*(\S+)', text)
    link = re.search(r'Link type\s*:\s*(\S+)', text)
    return {'test': test.group(1) + ' Test' if test else None, 'device': device.group(1) if device else None,
            'link_type': link.group(1) if link else None, 'unit': unit, 'rows': rows,
            'bw_average_gbps': round(last['bw_average'] * to_gbps, 4), 'bw_peak_gbps': round(last['bw_peak'] * to_gbps, 4),
            'msg_rate_mpps': last['msg_rate_mpps'], 'dmabuf': 'ibv_reg_dmabuf_mr' in text or 'DMA-BUF' in text,
            'synthetic': bool(SYNTHETIC_OUTPUT.search(text))}


def link_rate(ibstat_output):
    """The port's rate in Gb/s from ``ibstat`` ("Rate: 200"), or None."""
    match = _RATE.search(str(ibstat_output or ''))
    return float(match.group(1)) if match else None


def evaluate(parsed, link_gbps=None, fraction=None):
    """PASS when the BW average reaches ``fraction`` of the link rate (catalog defaults)."""
    fraction = catalog.PROOF_THRESHOLD_FRACTION if fraction is None else float(fraction)
    link_gbps = float(link_gbps or catalog.DEFAULT_LINK_GBPS)
    threshold = round(link_gbps * fraction, 2)
    average = parsed['bw_average_gbps']
    reasons = []
    if average < threshold:
        reasons.append('BW average %.2f Gb/s is below %.2f Gb/s (%.0f%% of the %g Gb/s link)'
                       % (average, threshold, fraction * 100, link_gbps))
    if not parsed.get('msg_rate_mpps'):
        reasons.append('no message rate reported')
    verdict = 'FAIL' if reasons else 'PASS'
    summary = '%s%s -- BW average %.2f Gb/s (threshold %.2f Gb/s), MsgRate %s Mpps%s' % (
        SYNTHETIC_PREFIX if parsed.get('synthetic') else '', verdict, average, threshold, parsed.get('msg_rate_mpps'),
        ''.join('; ' + reason for reason in reasons))
    return {'verdict': verdict, 'synthetic': bool(parsed.get('synthetic')), 'summary': summary, 'reasons': reasons, 'threshold_gbps': threshold,
            'link_gbps': link_gbps, 'fraction': fraction, 'bw_average_gbps': average,
            'bw_peak_gbps': parsed['bw_peak_gbps'], 'msg_rate_mpps': parsed.get('msg_rate_mpps')}


def build_report(parsed, verdict, configuration, generated_at=None):
    return {'schema': REPORT_SCHEMA, 'configuration': configuration, 'generated_at': generated_at,
            'result': {key: parsed[key] for key in ('test', 'device', 'link_type', 'unit', 'rows', 'dmabuf')},
            'verdict': verdict}


def junit_xml(report):
    verdict = report['verdict']
    suite = ET.Element('testsuite', name='ib_write_bw', tests='1', failures='0' if verdict['verdict'] == 'PASS' else '1')
    case = ET.SubElement(suite, 'testcase', classname='openshift_rdma.%s' % report['configuration'], name='bw_average')
    if verdict['verdict'] != 'PASS':
        ET.SubElement(case, 'failure', message='; '.join(verdict['reasons']))
    return ET.tostring(suite, encoding='unicode')


def markdown(report):
    verdict = report['verdict']
    lines = ['# ib_write_bw: %s' % report['configuration'], '',
             '| BW average (Gb/s) | BW peak (Gb/s) | MsgRate (Mpps) | threshold (Gb/s) | verdict |',
             '|---|---|---|---|---|',
             '| %.2f | %.2f | %s | %.2f | %s |' % (
                 verdict['bw_average_gbps'], verdict['bw_peak_gbps'], verdict['msg_rate_mpps'], verdict['threshold_gbps'],
                 verdict['verdict'])]
    lines += ['', *('- %s' % reason for reason in verdict['reasons'])]
    return '\n'.join(lines).rstrip() + '\n'


def plot_lines(report):
    """What the plot shows: BW average and BW peak in Gb/s per message size, the verdict's threshold, the titles."""
    result, verdict = report['result'], report['verdict']
    to_gbps = GBPS_PER_UNIT[result['unit']]
    series = [(label, style, [(row['bytes'], round(row[column] * to_gbps, 4)) for row in result['rows']])
              for label, style, column in (('BW average', '-o', 'bw_average'), ('BW peak', '--s', 'bw_peak'))]
    threshold = (verdict['threshold_gbps'], 'threshold %.2f Gb/s (%.0f%% of the %g Gb/s link)'
                 % (verdict['threshold_gbps'], verdict['fraction'] * 100, verdict['link_gbps']))
    return {'series': series, 'thresholds': [threshold], 'ylabel': 'bandwidth (Gb/s)',
            'title': 'ib_write_bw %s -- %s' % (report['configuration'], verdict['verdict'])}


def plot_png(report, path):
    """The plot of the report directory (report_dir draws it as it draws the NCCL one)."""
    return report_dir.plot_bandwidth(path, **plot_lines(report))


def render(report):
    """{file name: text} for report.json, junit.xml and summary.md."""
    return {'report.json': json.dumps(report, indent=2, sort_keys=True) + '\n', 'junit.xml': junit_xml(report) + '\n',
            'summary.md': markdown(report)}
