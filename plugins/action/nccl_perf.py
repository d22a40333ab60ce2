# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of nccl_perf: with O(mode=parse) the module only judges text, so where it would run on the controller with
the controller's own Python it runs in the task's worker process (plugins/plugin_utils/module_in_worker.py says when and
why). A GKE NCCL diagnosis judges every run of a round in a loop on the controller: as module processes each item cost
about 2 s on a loaded 2-core machine (69 s for the 32 runs of a 64-node round, bench/README.md). The modes that run
NCCL (local, gce) keep the module process: they start commands and wait on them with their own timeouts."""

from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.module_in_worker import ModuleInWorkerAction


class ActionModule(ModuleInWorkerAction):
    """ModuleInWorkerAction, for mode parse only."""

    def _module_process_reason(self, task_vars):
        mode = self._task.args.get('mode')
        if mode != 'parse':
            return 'mode %s runs NCCL, not only a parse' % (mode or 'unset')
        return super()._module_process_reason(task_vars)
