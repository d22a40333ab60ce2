# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aiinfra.gpudirect.k8s_converge: the roles' one way to write to a Kubernetes cluster, run in the task's worker.

Why an action and not kubernetes.core.k8s: each kubernetes.core.k8s task is a module process that imports the
Kubernetes client anew (about 1.2 s of CPU, 38 % of an OpenShift run's CPU in a profile: docs/worklog/GKE_NOTES.md, issue 22);
it PATCHes every object it is given, so the roles read first in YAML to skip those that hold; it stops a list at
the first conflict; and it shows no diff for several objects or for a deletion. Here the worker that already has
the client reads once per kind, applies only what differs, shows a diff per object and goes on after a conflict
(plugins/module_utils/k8s/converge.py). The client and its configuration are kubernetes.core's own
(module_utils/k8s/client.py ``get_api_client``: the same kubeconfig and context handling as its modules).
Documentation: plugins/modules/k8s_converge.py."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.utils.display import Display

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import converge
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import live_output
from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.kube_client import CONNECTION_OPTIONS, KubeAction

ARGUMENT_SPEC = {
    'objects': {'type': 'list', 'elements': 'dict', 'required': True},
    'state': {'type': 'str', 'choices': ['present', 'absent'], 'default': 'present'},
    'field_manager': {'type': 'str', 'required': True},
    'delete_managers': {'type': 'list', 'elements': 'str'},
    'delete_unmanaged': {'type': 'bool', 'default': False},
    'force_conflicts': {'type': 'bool', 'default': False},
    'force_conflicts_variable': {'type': 'str', 'default': 'force_conflicts'},
    'wait': {'type': 'bool', 'default': False},
    'timeout': {'type': 'int', 'default': 120, 'aliases': ['wait_timeout'],
                'deprecated_aliases': [{'name': 'wait_timeout', 'version': '1.0.0', 'collection_name': 'aiinfra.gpudirect'}]},
    **CONNECTION_OPTIONS,
}

display = Display()


class ActionModule(KubeAction):
    """See the module docstring."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            converge.check_objects(args['objects'])
            if not args['objects']:
                return dict(result, changed=False, applied=[], unchanged=[], removed=[], left_alone=[])
            api = self.client(args)
            if args['state'] == 'present':
                outcome = converge.converge(api, args['objects'], args['field_manager'], force=args['force_conflicts'],
                                            dry_run=self._task.check_mode, force_option=args['force_conflicts_variable'])
            else:
                managers = None if args['delete_unmanaged'] else (args['delete_managers'] or [args['field_manager']])
                with live_output(display.display):   # a deletion a finalizer holds says so while it waits
                    outcome = converge.remove(api, args['objects'], managers, dry_run=self._task.check_mode,
                                              wait=args['wait'], timeout=args['timeout'])
        except (converge.ConvergeError, converge.ApiRefusal) as exc:
            raise AnsibleActionFail('k8s_converge: %s' % exc) from None
        return self._report(result, args, outcome)

    def _report(self, result, args, outcome):
        done = outcome.get('applied', outcome.get('removed'))
        result.update(changed=bool(done), **{key: value for key, value in outcome.items() if key not in ('diff', 'failed', 'conflicts')})
        if self._task.diff and outcome['diff']:
            result['diff'] = outcome['diff']
        if outcome.get('left_alone'):
            owners = ' or '.join(args['delete_managers'] or [args['field_manager']])
            result['warnings'] = ['not deleted, not made by %s: %s' % (owners, '; '.join(outcome['left_alone']))]
        problems = outcome.get('conflicts', []) + ([outcome['failed']] if outcome['failed'] else [])
        if problems:
            rest = (' The other objects that differed were applied: %s.' % ', '.join(outcome['applied'])
                    if outcome.get('conflicts') and outcome.get('applied') else '')
            result.update(failed=True, msg=' '.join(problems) + rest, conflicts=outcome.get('conflicts', []))
        return result
