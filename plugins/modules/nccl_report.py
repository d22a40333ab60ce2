#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_report
short_description: Write an NCCL test report directory (JSON, JUnit XML, Markdown, PNG) with a final verdict
version_added: 0.1.0
description:
  - Judges parsed NCCL test results (the C(parsed) results that M(aiinfra.gpudirect.nccl_perf) returns) against the
    machine type's reference curve and line rate and, if given, a baseline report, and writes a report directory.
  - "Files: C(report.json) (per collective: name, printed and recomputed average bus bandwidth, bus bandwidth
    at the largest size, network used, verdict and reasons), C(junit.xml) (one test case per collective and
    criterion, for AWX and CI), C(summary.md), and C(busbw.png) (bus bandwidth against message size on a log
    axis with the threshold line)."
  - "Meant to run on the controller (C(delegate_to: localhost)); the plot needs matplotlib there."
author:
  - aiinfra.gpudirect contributors (@aiinfra)
extends_documentation_fragment:
  - aiinfra.gpudirect.report_dir
options:
  parsed:
    description: Parsed results, as returned by M(aiinfra.gpudirect.nccl_perf) in RV(aiinfra.gpudirect.nccl_perf#module:parsed).
    type: dict
    required: true
  machine_type:
    description: Machine type whose reference bandwidth curve, line rate and GPUDirect network apply (for example V(a3-megagpu-8g)).
    type: str
  technology:
    description: GPUDirect technology when no O(machine_type) is given.
    type: str
  thresholds:
    description: Threshold overrides per collective in GB/s (see M(aiinfra.gpudirect.nccl_perf)).
    type: dict
    default: {}
  require_network_evidence:
    description: Fail when the output holds no NCCL network line.
    type: bool
    default: false
  baseline:
    description: An earlier C(report.json) to compare with; a drop over O(max_regression_pct) fails the verdict.
    type: path
  max_regression_pct:
    description: Largest drop, in percent, of the average and largest-size bus bandwidth against O(baseline).
    type: float
    default: 10.0
  extra_reasons:
    description: Failures found outside the output (for example the test's exit status); they fail the verdict.
    type: list
    elements: str
    default: []
  source:
    description: Where the output came from (a log path, a host), recorded in the report.
    type: str
  plot:
    description: Draw C(busbw.png).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Write the report on the controller
  aiinfra.gpudirect.nccl_report:
    parsed: "{{ nccl.parsed }}"
    machine_type: a3-megagpu-8g
    dest: "{{ playbook_dir }}/nccl-report"
    baseline: "{{ playbook_dir }}/baseline/report.json"
    max_regression_pct: 10
  delegate_to: localhost
  register: report
"""

RETURN = r"""
verdict:
  description: The final verdict (with baseline regressions and O(extra_reasons)); see M(aiinfra.gpudirect.nccl_perf).
  returned: always
  type: dict
  sample:
    passed: false
    verdict: FAIL
    summary: "FAIL -- all_gather: bus bandwidth at 1 GiB 61.20 GB/s < 110.03 GB/s (0.6 of 183.38 GB/s, a3-megagpu-8g all_gather 2 nodes, ...)"
report:
  description: The content of C(report.json).
  returned: always
  type: dict
files:
  description: Paths written (none in check mode).
  returned: always
  type: list
  elements: str
  sample: [/tmp/r/report.json, /tmp/r/junit.xml, /tmp/r/summary.md, /tmp/r/busbw.png]
"""

import datetime
import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.gpudirect.plugins.module_utils import report_dir
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import verdict as nccl_verdict
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import report as nccl_report


def load_baseline(module, path):
    try:
        with open(path, encoding='utf-8') as handle:
            baseline = json.load(handle)
    except (OSError, ValueError) as exc:
        module.fail_json(msg='baseline: cannot read %s as a report.json (%s); give a report.json an earlier run wrote' % (path, exc))
    if baseline.get('schema') != nccl_report.REPORT_SCHEMA:
        module.fail_json(msg='baseline: %s is not an NCCL report (schema %r, expected %r)'
                             % (path, baseline.get('schema'), nccl_report.REPORT_SCHEMA))
    return baseline


def final_verdict(module, results, baseline):
    params = module.params
    try:
        verdict = nccl_verdict.evaluate(results, machine_type=params['machine_type'], thresholds=params['thresholds'],
                                        technology=params['technology'], require_network_evidence=params['require_network_evidence'],
                                        baseline=baseline, max_regression_pct=params['max_regression_pct'],
                                        run_problems=params['extra_reasons'])
    except (ValueError, KeyError, TypeError) as exc:
        module.fail_json(msg='parsed / machine_type / thresholds: %s' % exc)
    return verdict


def main():
    module = AnsibleModule(
        argument_spec=dict(
            parsed=dict(type='dict', required=True),
            dest=dict(type='path', required=True),
            machine_type=dict(type='str'),
            technology=dict(type='str'),
            thresholds=dict(type='dict', default={}),
            require_network_evidence=dict(type='bool', default=False),
            baseline=dict(type='path'),
            max_regression_pct=dict(type='float', default=10.0),
            extra_reasons=dict(type='list', elements='str', default=[]),
            source=dict(type='str'),
            plot=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if 'collectives' not in params['parsed']:
        module.fail_json(msg='parsed: not parsed NCCL results (no "collectives"); pass what '
                             'aiinfra.gpudirect.nccl_perf returned, e.g. "{{ nccl.parsed }}"')
    plot_name = nccl_report.PLOT if params['plot'] else None
    if plot_name:
        report_dir.require_matplotlib(module, plot_name)
    baseline = load_baseline(module, params['baseline']) if params['baseline'] else None
    verdict = final_verdict(module, params['parsed'], baseline)
    before = report_dir.previous_text(os.path.join(params['dest'], report_dir.REPORT))   # read before this run writes it
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    report = nccl_report.build_report(params['parsed'], verdict, source=params['source'], generated_at=stamp,
                                      baseline_path=params['baseline'])
    # The same results as the report already there: keep its time stamp, so that only a different result is a change.
    try:
        earlier = json.loads(before).get('generated_at') if before else None
    except ValueError:
        earlier = None
    if earlier:
        same = nccl_report.build_report(params['parsed'], verdict, source=params['source'], generated_at=earlier,
                                        baseline_path=params['baseline'])
        if not report_dir.stale(params['dest'], nccl_report.render(same), plot_name):
            report = same
    written = report_dir.sync(module, params['dest'], nccl_report.render(report), plot_name,
                              draw=lambda path: nccl_report.plot_png(report, path))
    module.exit_json(verdict=verdict, report=report, **written)


if __name__ == '__main__':
    main()
