# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aiinfra.gpudirect.pod_exec: a command in a Pod's container, run from the task's worker. Documentation:
plugins/modules/pod_exec.py.

Why not kubernetes.core.k8s_exec: each of its tasks is a module process that imports the Kubernetes client anew (about
1.1 s of CPU; the ib_write_bw proof and the NCCL tests run four or five), and a command that does not start (an
executable not found, a container gone) ends in "invalid literal for int()" instead of the kubelet's message."""

from __future__ import annotations

import shlex

from ansible.errors import AnsibleActionFail

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import converge
from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.kube_client import CONNECTION_OPTIONS, KubeAction, exec_outcome

ARGUMENT_SPEC = {
    'namespace': {'type': 'str', 'default': 'default'},
    'pod': {'type': 'str', 'required': True},
    'container': {'type': 'str', 'required': True},
    'command': {'type': 'raw', 'required': True},
    'timeout': {'type': 'int', 'default': 3600},
    **CONNECTION_OPTIONS,
}


class ActionModule(KubeAction):
    """See the module docstring."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        command = args['command']
        argv = shlex.split(command) if isinstance(command, str) else [str(item) for item in command or []]
        if not argv:
            raise AnsibleActionFail('pod_exec: command is empty: give the command as a string or a list of arguments')
        where = '%s/%s container %s' % (args['namespace'], args['pod'], args['container'])
        shown = shlex.join(argv)
        if self._task.check_mode:
            # A command's effects are unknown: as ansible.builtin.command, check mode does not run it.
            return dict(result, changed=False, skipped=True, msg='check mode: would run %s in %s' % (shown, where))
        try:
            api = self.client(args)
            stdout, stderr, status = api.exec(args['namespace'], args['pod'], args['container'], argv, args['timeout'])
        except converge.ApiRefusal as refusal:
            raise AnsibleActionFail('pod_exec: %s in %s was not run: %s %s: %s' % (
                shown, where, refusal.status, refusal.body.get('reason') or 'refused', refusal.body.get('message') or '')) from None
        result.update(changed=True, stdout=stdout, stderr=stderr, stdout_lines=stdout.splitlines(), stderr_lines=stderr.splitlines())
        if status is None:
            return dict(result, failed=True, rc=None, msg='%s in %s was still running after %s s (timeout); its output so far is in stdout'
                        % (shown, where, args['timeout']))
        rc, message = exec_outcome(status)
        result['rc'] = rc
        if rc is None:
            return dict(result, failed=True, msg='%s in %s did not run to an exit code: %s' % (shown, where, message))
        if rc != 0:
            last = (stderr.strip() or stdout.strip()).splitlines()[-5:]
            said = (': ' + ' / '.join(last)) if last else ' and printed nothing'
            return dict(result, failed=True, msg='%s in %s exited with %d%s' % (shown, where, rc, said))
        return result
