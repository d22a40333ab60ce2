#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: perftest_report
short_description: Write an ib_write_bw report directory (JSON, JUnit XML, Markdown, PNG) with its verdict
version_added: 0.1.0
description:
  - Judges a parsed perftest result (what the P(aiinfra.gpudirect.perftest_results#filter) filter returns for
    C(ib_write_bw)'s output) against a fraction of the link rate and writes a report directory, in the formats of
    the NCCL reports (M(aiinfra.gpudirect.nccl_report)).
  - "Files: C(report.json) (schema C(aiinfra.gpudirect/perftest-report/1): the configuration, the result table,
    the verdict), C(junit.xml) (one test case, C(bw_average)), C(summary.md), and C(bandwidth.png) (BW average
    and BW peak in Gb/s against message size on a log axis, with the threshold line)."
  - A file is written only when its content differs; the report holds no time stamp, so the same result again
    changes nothing.
  - "Meant to run on the controller (C(delegate_to: localhost)); the plot needs matplotlib there."
author:
  - aiinfra.gpudirect contributors (@aiinfra)
extends_documentation_fragment:
  - aiinfra.gpudirect.report_dir
options:
  parsed:
    description:
      - A parsed C(ib_write_bw) result, as the P(aiinfra.gpudirect.perftest_results#filter) filter returns it (the
        result table in C(rows), C(bw_average_gbps), C(bw_peak_gbps), C(msg_rate_mpps)).
    type: dict
    required: true
  configuration:
    description: What was measured, recorded in the report and its titles (the openshift_rdma role gives C(METHOD/LINK)).
    type: str
    required: true
  link_gbps:
    description:
      - The link rate in Gb/s (for example the C(Rate) line of C(ibstat)'s output).
      - Without it, the catalog's default rate (200 Gb/s).
    type: float
  threshold_fraction:
    description: The verdict passes when the BW average reaches this fraction of O(link_gbps).
    type: float
    default: 0.75
  plot:
    description: Draw C(bandwidth.png).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Judge ib_write_bw and write the report on the controller
  aiinfra.gpudirect.perftest_report:
    parsed: "{{ client.stdout | aiinfra.gpudirect.perftest_results }}"
    configuration: shared_device/roce
    link_gbps: 200
    dest: "{{ playbook_dir }}/openshift-rdma-report"
  delegate_to: localhost
  register: report

- name: Without matplotlib on the controller
  aiinfra.gpudirect.perftest_report:
    parsed: "{{ client.stdout | aiinfra.gpudirect.perftest_results }}"
    configuration: sriov_legacy/infiniband
    dest: /tmp/rdma-report
    plot: false
  delegate_to: localhost
"""

RETURN = r"""
verdict:
  description: The verdict (PASS when the BW average reaches O(threshold_fraction) of the link rate).
  returned: always
  type: dict
  sample:
    verdict: FAIL
    reasons: ["BW average 60.00 Gb/s is below 150.00 Gb/s (75% of the 200 Gb/s link)"]
    threshold_gbps: 150.0
    link_gbps: 200.0
    fraction: 0.75
    bw_average_gbps: 60.0
    bw_peak_gbps: 61.2
    msg_rate_mpps: 0.114
report:
  description: The content of C(report.json).
  returned: always
  type: dict
files:
  description: Paths of the report directory's files (none in check mode).
  returned: always
  type: list
  elements: str
  sample: [/tmp/r/report.json, /tmp/r/junit.xml, /tmp/r/summary.md, /tmp/r/bandwidth.png]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.gpudirect.plugins.module_utils import report_dir
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.perftest import output as perftest

# What perftest_results returns and the report reads.
PARSED_KEYS = ('test', 'device', 'link_type', 'unit', 'rows', 'dmabuf', 'bw_average_gbps', 'bw_peak_gbps', 'msg_rate_mpps')
ROW_KEYS = ('bytes', 'bw_peak', 'bw_average')


def check_input(module):
    """Each bad option fails naming it and the fix, before anything is written."""
    params = module.params
    missing = [key for key in PARSED_KEYS if key not in params['parsed']]
    if missing:
        module.fail_json(msg='parsed: not a parsed ib_write_bw result (no %s); pass what the perftest_results filter '
                             'returns, e.g. "{{ client.stdout | aiinfra.gpudirect.perftest_results }}"' % ', '.join(missing))
    rows = params['parsed']['rows']
    if not rows or not all(isinstance(row, dict) and all(key in row for key in ROW_KEYS) for row in rows):
        module.fail_json(msg='parsed: rows must be the result table, one {%s, ...} per message size, as perftest_results '
                             'returns it' % ', '.join(ROW_KEYS))
    if params['parsed']['unit'] not in perftest.GBPS_PER_UNIT:
        module.fail_json(msg='parsed: unknown bandwidth unit %r (perftest prints %s)'
                             % (params['parsed']['unit'], ' or '.join(perftest.GBPS_PER_UNIT)))
    if params['link_gbps'] is not None and params['link_gbps'] <= 0:
        module.fail_json(msg='link_gbps: %r is not a link rate; give the rate in Gb/s (for example 200) or leave it out'
                             % params['link_gbps'])
    if not 0 < params['threshold_fraction'] <= 1:
        module.fail_json(msg='threshold_fraction: %r is outside (0, 1]; give for example 0.75' % params['threshold_fraction'])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            parsed=dict(type='dict', required=True),
            configuration=dict(type='str', required=True),
            dest=dict(type='path', required=True),
            link_gbps=dict(type='float'),
            threshold_fraction=dict(type='float', default=catalog.PROOF_THRESHOLD_FRACTION),
            plot=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    check_input(module)
    plot_name = perftest.PLOT if params['plot'] else None
    if plot_name:
        report_dir.require_matplotlib(module, plot_name)
    verdict = perftest.evaluate(params['parsed'], params['link_gbps'], params['threshold_fraction'])
    report = perftest.build_report(params['parsed'], verdict, params['configuration'])
    written = report_dir.sync(module, params['dest'], perftest.render(report), plot_name,
                              draw=lambda path: perftest.plot_png(report, path))
    module.exit_json(verdict=verdict, report=report, **written)


if __name__ == '__main__':
    main()
