# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of nccl_diagnose: planning a round and judging the results (no O(dest)) is computation only, so where
the module would run on the controller with the controller's own Python it runs in the task's worker process
(plugins/plugin_utils/module_in_worker.py says when and why). A diagnosis plans every round with it; as a module process
each plan cost 3 to 4.5 s at 64 nodes on a loaded 2-core machine (bench/README.md). The call that writes the report
(O(dest): files, and the pair plot through matplotlib) keeps the module process."""

from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.module_in_worker import ModuleInWorkerAction


class ActionModule(ModuleInWorkerAction):
    """ModuleInWorkerAction, without O(dest) only."""

    def _module_process_reason(self, task_vars):
        if self._task.args.get('dest'):
            return 'dest: it writes the report'
        return super()._module_process_reason(task_vars)
