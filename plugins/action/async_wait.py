# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aiinfra.gpudirect.async_wait: wait for an async job of this host and return its result. Documentation:
plugins/modules/async_wait.py.

Why not ansible.builtin.async_status with ``until``, as the role gke_cluster did: each look that finds the job running is
a "FAILED - RETRYING" line (3600 of them for a job of an hour, one a second), and a wait that runs out says nothing of
the job. Here the looks go through the collection's one wait (poll.until), its WaitReport says where the job stands
(a line at first, then one every ANSIBLE_GPUDIRECT_PROGRESS_INTERVAL seconds, 20 by default, and a summary), and the
job's result file is removed once read."""

from __future__ import annotations

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import WaitReport, every, until

ARGUMENT_SPEC = {
    'jid': {'type': 'str', 'required': True},
    'timeout': {'type': 'float', 'default': 3600},
    'delay': {'type': 'float', 'default': 1},
    'description': {'type': 'str'},
    'cleanup': {'type': 'bool', 'default': True},
}
display = Display()


def job_state(status):
    """What a look at the job shows: running, or its end."""
    if not status.get('finished') and 'started' in status:
        return 'running'
    return 'failed' if status.get('failed') else 'finished'


class ActionModule(ActionBase):
    """See the module docstring."""

    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        what = args['description'] or 'async job %s' % args['jid']
        # Where ansible.builtin.async_status looks (its action plugin): the shell's async_dir.
        async_dir = self._remote_expand_user(self.get_shell_option('async_dir', default='~/.ansible_async'))
        started = time.monotonic()

        def look(mode='status'):
            return self._execute_module(module_name='ansible.legacy.async_status', task_vars=task_vars,
                                        module_args={'jid': args['jid'], 'mode': mode, '_async_dir': async_dir})

        report = WaitReport('%s [%s]' % (self._task.get_name(), what), describe=job_state, emit=display.display)
        status, finished = until(look, lambda status: bool(status.get('finished')) or 'started' not in status,
                                 args['timeout'], every(args['delay']), report=report)
        waited = round(time.monotonic() - started, 1)
        if not finished:
            raise AnsibleActionFail('%s: still running after %.0f s (timeout %s s); its result file stays in %s'
                                    % (what, waited, args['timeout'], async_dir))
        if args['cleanup'] and status.get('finished'):
            look('cleanup')
        # The job's own result (changed, failed, msg, its return values), as async_status gives it.
        job = {key: value for key, value in status.items() if key not in ('started', 'finished', 'results_file', 'invocation')}
        return dict(result, **dict(job, waited=waited, ansible_job_id=args['jid']))
