# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a Google Cloud module acts on its plan, and the only reader of check mode.

A module reads what exists and plans; each change of the plan is a step handed to the executor: the line that says
what it does (the result's ``actions``) and the call that does it. In check mode the executor records the line and
calls nothing; otherwise it records the line and makes the call. What a module reads only once its changes are made
(a resource settled, re-read) goes through ``live`` with the planned value that stands for it in check mode, and a
missing prerequisite that an earlier task of the same --check run would have made goes through ``assume``. The
executor also gathers the progress lines of operations, and ends the run: one exit_json with the actions and the
before/after diff, or one fail_json that keeps what was gathered.
"""

from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.operations import operation_state


class Progress:
    """Progress lines for the result: one per change of a Container operation's status or progress (the executor
    passes it as the operations' progress callback), and the lines a module notes itself."""

    def __init__(self):
        self.lines = []
        self._last = {}

    def __call__(self, operation):
        name = operation.get('name', '?')
        state = operation_state(operation, with_type=False)
        if self._last.get(name) == state:
            return
        self._last[name] = state
        self.lines.append('%s %s: %s' % (operation.get('operationType') or 'operation', name, state))

    def note(self, line):
        self.lines.append(line)


class Executor:
    """Carries out (or, in check mode, only lists) the steps of one module run, and reports it.

    ``progress_keys``: the result keys under which the module returns its progress lines (its RETURN names them).
    """

    def __init__(self, module, progress_keys=()):
        self.module = module
        self._check_mode = module.check_mode
        self.progress = Progress()
        self.result = {'actions': []}
        for key in progress_keys:
            self.result[key] = self.progress.lines

    @property
    def actions(self):
        return self.result['actions']

    def do(self, actions, call=None, planned=None):
        """Record what a step does (a line, or the lines of the steps that one call carries out together) and, unless
        in check mode, make the call: its value, or in check mode ``planned``, which stands for it."""
        self.actions.extend([actions] if isinstance(actions, str) else actions)
        if call is None or self._check_mode:
            return planned
        return call()

    def live(self, call, planned=None):
        """call() in a run that acts; in check mode nothing was done, and ``planned`` stands for what call() would read."""
        return planned if self._check_mode else call()

    def assume(self, warning):
        """Whether a missing prerequisite may be assumed: in check mode yes, with the warning (a --check run of a
        playbook plans, in an earlier task, what it does not create); in a run that acts no, and the caller refuses."""
        if self._check_mode:
            self.module.warn(warning)
        return self._check_mode

    def report(self, before, after, changed=None, **result):
        """Exit with the actions, the diff and ``result``; changed: whether there were actions, unless given."""
        self.result.update(result)
        self.module.exit_json(changed=bool(self.actions) if changed is None else changed, diff={'before': before, 'after': after},
                              **self.result)

    def fail(self, error, **result):
        """Fail with an error (InputError, GcpError or a message), keeping what the run gathered."""
        self.result.update(result)
        if isinstance(error, str):
            self.module.fail_json(msg=error, **self.result)
        self.module.fail_from(error, **self.result)
