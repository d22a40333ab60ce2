# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for your own workloads on OpenShift: give a Pod or Job the RDMA network of a GPUDirect RDMA method, parse
ib_write_bw output (documentation: the .yml file of each filter beside this one).

Each is a thin wrapper over plugins/module_utils/openshift/render.py and plugins/module_utils/perftest/output.py; their errors become
AnsibleFilterError with the same message (naming the option and the fix). The filters the openshift_rdma role renders
and decides with are private (_roles.py).
"""

from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.perftest import output as perftest
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import render
from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.filters import as_filter


class FilterModule:
    """aiinfra.gpudirect OpenShift filters."""

    def filters(self):
        return {
            'openshift_rdma_workload': as_filter('openshift_rdma_workload', render.rdma_workload),
            'perftest_results': as_filter('perftest_results', perftest.parse),
        }
