# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that give a workload of your own GPUDirect on GKE (documentation: the .yml file of each filter beside this
one). The work is in plugins/module_utils/k8s/workload.py; the filters the roles render with are private (_roles.py)."""

from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import workload
from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.filters import as_filter


def gke_gpudirect_workload(obj, technology, nccl_env='required', daemon_image=None, shared_memory_limit=None):
    return workload.gpudirect_workload(obj, technology, nccl_env_mode=nccl_env, daemon_image=daemon_image or None,
                                       shared_memory_limit=shared_memory_limit or None)


def gke_rdma_workload(obj, claim_template=None, shared_memory_limit=None):
    return workload.rdma_workload(obj, claim_template=claim_template or None, shared_memory_limit=shared_memory_limit or None)


class FilterModule:
    """aiinfra.gpudirect GKE filters."""

    def filters(self):
        functions = (gke_gpudirect_workload, gke_rdma_workload)
        return {function.__name__: as_filter(function.__name__, function) for function in functions}
