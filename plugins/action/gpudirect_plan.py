# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of gpudirect_plan: the module runs in the task's worker process where that is the controller's own Python
(plugins/plugin_utils/module_in_worker.py says when and why)."""

from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.module_in_worker import ModuleInWorkerAction


class ActionModule(ModuleInWorkerAction):
    pass
