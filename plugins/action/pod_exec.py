# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aiinfra.gpudirect.pod_exec: a command in a Pod's container, run from the task's worker. Documentation:
plugins/modules/pod_exec.py.

Why not kubernetes.core.k8s_exec: each of its tasks is a module process that imports the Kubernetes client anew (about
1.1 s of CPU; the ib_write_bw proof and the NCCL tests run four or five), and a command that does not start (an
executable not found, a container gone) ends in "invalid literal for int()" instead of the kubelet's message."""

from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor

from ansible.errors import AnsibleActionFail

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import converge
from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.kube_client import CONNECTION_OPTIONS, KubeAction, exec_outcome

ARGUMENT_SPEC = {
    'namespace': {'type': 'str', 'default': 'default'},
    'pod': {'type': 'str'},
    'container': {'type': 'str'},
    'command': {'type': 'raw'},
    'runs': {'type': 'list', 'elements': 'dict'},
    'timeout': {'type': 'int', 'default': 3600},
    **CONNECTION_OPTIONS,
}


class ActionModule(KubeAction):
    """See the module docstring."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, mutually_exclusive=[('runs', 'pod'), ('runs', 'command')],
                                                        required_one_of=[('runs', 'pod')], required_by={'pod': ('container', 'command')})
        if args['runs'] is None:
            execs = [self._one(args, args)]
        else:
            execs = [self._one(args, dict(args, **{key: run.get(key, args.get(key)) for key in ('pod', 'container', 'command')}), index)
                     for index, run in enumerate(args['runs'])]
        if self._task.check_mode:
            # A command's effects are unknown: as ansible.builtin.command, check mode does not run it.
            said = '; '.join('%s in %s' % (shown, where) for _argv, shown, where, _run in execs)
            return dict(result, changed=False, skipped=True, msg='check mode: would run %s' % said)
        api = self.client(args)
        if args['runs'] is None:
            argv, shown, where, run = execs[0]
            return dict(result, **self._exec(api, argv, shown, where, run, args['timeout']))
        # Every run at once, each on its own exec stream; a run that fails is a result, not the task's failure.
        with ThreadPoolExecutor(max_workers=max(1, len(execs))) as pool:
            outcomes = list(pool.map(lambda item: self._exec(api, *item, args['timeout'], refusal_fails=False), execs))
        return dict(result, changed=True, results=[dict(outcome, pod=run['pod'], container=run['container'], command=shown)
                                                   for outcome, (_argv, shown, _where, run) in zip(outcomes, execs)])

    @staticmethod
    def _one(args, run, index=None):
        """(argv, the command as shown, where it runs, the run's options) of one exec; a bad run fails the task first."""
        name = 'runs[%d]' % index if index is not None else 'command'
        for key in ('pod', 'container', 'command'):
            if not run.get(key):
                raise AnsibleActionFail('pod_exec: %s: %s is missing; give pod, container and command' % (name, key))
        command = run['command']
        argv = shlex.split(command) if isinstance(command, str) else [str(item) for item in command or []]
        if not argv:
            raise AnsibleActionFail('pod_exec: %s is empty: give the command as a string or a list of arguments' % name)
        return argv, shlex.join(argv), '%s/%s container %s' % (args['namespace'], run['pod'], run['container']), run

    @staticmethod
    def _exec(api, argv, shown, where, run, timeout, refusal_fails=True):
        try:
            stdout, stderr, status = api.exec(run.get('namespace') or 'default', run['pod'], run['container'], argv, timeout)
        except converge.ApiRefusal as refusal:
            msg = 'pod_exec: %s in %s was not run: %s %s: %s' % (
                shown, where, refusal.status, refusal.body.get('reason') or 'refused', refusal.body.get('message') or '')
            if refusal_fails:
                raise AnsibleActionFail(msg) from None
            return {'failed': True, 'rc': None, 'msg': msg, 'stdout': '', 'stderr': ''}
        result = dict(changed=True, stdout=stdout, stderr=stderr, stdout_lines=stdout.splitlines(), stderr_lines=stderr.splitlines())
        if status is None:
            return dict(result, failed=True, rc=None, msg='%s in %s was still running after %s s (timeout); its output so far is in stdout'
                        % (shown, where, timeout))
        rc, message = exec_outcome(status)
        result['rc'] = rc
        if rc is None:
            return dict(result, failed=True, msg='%s in %s did not run to an exit code: %s' % (shown, where, message))
        if rc != 0:
            last = (stderr.strip() or stdout.strip()).splitlines()[-5:]
            said = (': ' + ' / '.join(last)) if last else ' and printed nothing'
            return dict(result, failed=True, msg='%s in %s exited with %d%s' % (shown, where, rc, said))
        return result
