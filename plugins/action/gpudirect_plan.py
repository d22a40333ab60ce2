# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of gpudirect_plan: each role its task names gets the role's argument spec and the user's role variables
from the task's variables (plugins/plugin_utils/role_variables.py), which only the controller has; then the module runs
in the task's worker process where that is the controller's own Python (plugins/plugin_utils/module_in_worker.py says
when and why)."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail

from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils import role_variables
from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.module_in_worker import ModuleInWorkerAction


class ActionModule(ModuleInWorkerAction):

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars if task_vars is not None else {}
        roles = self._task.args.get('roles')
        # Given in the task, ``unread`` would let a playbook pass its own verdict on its extra vars.
        self._task.args = {key: value for key, value in self._task.args.items() if key != 'unread'}
        if roles:
            if not isinstance(roles, list) or not all(isinstance(entry, dict) and entry.get('role') for entry in roles):
                raise AnsibleActionFail('roles: give a list of {role, entry_points, vars, sources}')
            try:
                resolved = [role_variables.resolve(entry, task_vars, self._templar.template) for entry in roles]
            except (OSError, ValueError) as exc:
                raise AnsibleActionFail('roles: %s' % exc) from exc
            self._task.args = dict(self._task.args, roles=resolved)
        if self._task.args.get('unread_extra_vars', 'ignore') != 'ignore':
            extra_vars = self._task.get_variable_manager().extra_vars
            playbook = (self._task.get_path() or '').rsplit(':', 1)[0]
            checked = {entry['role'] for entry in self._task.args.get('roles') or []}
            unread = role_variables.unread_extra_vars(extra_vars, playbook, checked, self._task.args.get('undoes'))
            self._task.args = dict(self._task.args, unread=unread)
        return super().run(tmp, task_vars)
