# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over nccl-tests output (documentation: nccl_results.yml beside this file)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import parse as nccl_parse
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import verdict as nccl_verdict


def nccl_results(output, collective=None, machine_type=None, thresholds=None, technology=None):
    """Parse nccl-tests output (text or -J JSON); with ``machine_type``/``technology``/``thresholds`` add ``verdict``."""
    try:
        results = nccl_parse.parse(output, collective=collective)
        if machine_type or technology or thresholds:
            results['verdict'] = nccl_verdict.evaluate(results, machine_type=machine_type, thresholds=thresholds, technology=technology)
    except ValueError as exc:
        raise AnsibleFilterError('nccl_results: %s' % exc) from None
    return results


class FilterModule:
    """aiinfra.gpudirect NCCL filters."""

    def filters(self):
        return {'nccl_results': nccl_results}
