# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aiinfra.gpudirect.k8s_converge: the roles' one way to write to a Kubernetes cluster, run in the task's worker.

Why an action and not kubernetes.core.k8s: each kubernetes.core.k8s task is a module process that imports the
Kubernetes client anew (about 1.2 s of CPU, 38 % of an OpenShift run's CPU in a profile: GKE_NOTES.md, issue 22);
it PATCHes every object it is given, so the roles read first in YAML to skip those that hold; it stops a list at
the first conflict; and it shows no diff for several objects or for a deletion. Here the worker that already has
the client reads once per kind, applies only what differs, shows a diff per object and goes on after a conflict
(plugins/module_utils/k8s/converge.py). The client and its configuration are kubernetes.core's own
(module_utils/k8s/client.py ``get_api_client``: the same kubeconfig and context handling as its modules).
Documentation: plugins/modules/k8s_converge.py."""

from __future__ import annotations

import json

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import converge

ARGUMENT_SPEC = {
    'objects': {'type': 'list', 'elements': 'dict', 'required': True},
    'state': {'type': 'str', 'choices': ['present', 'absent'], 'default': 'present'},
    'field_manager': {'type': 'str', 'required': True},
    'delete_managers': {'type': 'list', 'elements': 'str'},
    'delete_unmanaged': {'type': 'bool', 'default': False},
    'force_conflicts': {'type': 'bool', 'default': False},
    'force_conflicts_variable': {'type': 'str', 'default': 'force_conflicts'},
    'wait': {'type': 'bool', 'default': False},
    'wait_timeout': {'type': 'int', 'default': 120},
    'kubeconfig': {'type': 'raw', 'no_log': True},
    'context': {'type': 'str'},
}


class KubeApi:
    """The five calls converge makes, over kubernetes.core's client; an error status becomes ``converge.ApiRefusal``."""

    def __init__(self, client):
        self.client = client
        from kubernetes.dynamic import exceptions   # pylint: disable=import-outside-toplevel; kubernetes.core's requirement
        self.exceptions = exceptions

    def _refusal(self, exc):
        try:
            body = json.loads(exc.body) if getattr(exc, 'body', None) else {}
        except (TypeError, ValueError):
            body = {'message': str(exc.body)}
        return converge.ApiRefusal(getattr(exc, 'status', None), body)

    def resource(self, api_version, kind):
        try:
            return self.client.resource(kind, api_version)
        except (self.exceptions.ResourceNotFoundError, self.exceptions.ResourceNotUniqueError):
            return None

    def get(self, resource, name, namespace):
        try:
            return resource.get(name=name, namespace=namespace).to_dict()
        except self.exceptions.NotFoundError:
            return None
        except self.exceptions.DynamicApiError as exc:
            raise self._refusal(exc) from None

    def list(self, resource, namespace):
        try:
            return resource.get(namespace=namespace).to_dict().get('items') or []
        except self.exceptions.DynamicApiError as exc:
            raise self._refusal(exc) from None

    def apply(self, resource, obj, field_manager, force, dry_run):
        try:
            return self.client.client.server_side_apply(resource, body=obj, namespace=obj['metadata'].get('namespace'),
                                                        field_manager=field_manager, force_conflicts=True if force else None,
                                                        dry_run='All' if dry_run else None).to_dict()
        except self.exceptions.DynamicApiError as exc:
            raise self._refusal(exc) from None

    def delete(self, resource, name, namespace):
        try:
            resource.delete(name=name, namespace=namespace)
        except self.exceptions.DynamicApiError as exc:
            raise self._refusal(exc) from None


# kubernetes.core's connection options (module_utils/k8s/args_common.py AUTH_ARG_SPEC), taken from a play's
# module_defaults for kubernetes.core.k8s or its group, as a kubernetes.core.k8s task there would get them.
AUTH_OPTIONS = ('kubeconfig', 'context', 'host', 'api_key', 'username', 'password', 'validate_certs', 'ca_cert', 'client_cert',
                'client_key', 'proxy', 'no_proxy', 'proxy_headers', 'persist_config', 'impersonate_user', 'impersonate_groups')
KUBERNETES_CORE_DEFAULTS = ('group/kubernetes.core.k8s', 'kubernetes.core.k8s')


def kubernetes_core_defaults(module_defaults, template):
    """The connection options a play's module_defaults give kubernetes.core.k8s (the group's, then the module's own)."""
    merged = {}
    for entry in module_defaults or []:
        merged.update(entry)
    found = {}
    for key in KUBERNETES_CORE_DEFAULTS:
        found.update({name: value for name, value in (merged.get(key) or {}).items() if name in AUTH_OPTIONS})
    return {name: value for name, value in template(found).items() if value is not None and value != ''}


def api_client(auth):
    """kubernetes.core's client for these connection options (unset ones: its defaults, K8S_AUTH_*, ~/.kube/config)."""
    try:
        from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client   # pylint: disable=import-outside-toplevel
        from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException   # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise AnsibleActionFail('k8s_converge needs the kubernetes.core collection and the kubernetes Python library: %s' % exc) from exc
    try:
        return KubeApi(get_api_client(**auth))
    except CoreException as exc:
        raise AnsibleActionFail('k8s_converge: %s' % exc) from exc


class ActionModule(ActionBase):
    """See the module docstring."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            converge.check_objects(args['objects'])
            if not args['objects']:
                return dict(result, changed=False, applied=[], unchanged=[], removed=[], left_alone=[])
            auth = kubernetes_core_defaults(self._task.module_defaults, self._templar.template)
            auth.update({key: args[key] for key in ('kubeconfig', 'context') if args[key]})
            api = api_client(auth)
            if args['state'] == 'present':
                outcome = converge.converge(api, args['objects'], args['field_manager'], force=args['force_conflicts'],
                                            dry_run=self._task.check_mode, force_option=args['force_conflicts_variable'])
            else:
                managers = None if args['delete_unmanaged'] else (args['delete_managers'] or [args['field_manager']])
                outcome = converge.remove(api, args['objects'], managers, dry_run=self._task.check_mode,
                                          wait=args['wait'], timeout=args['wait_timeout'])
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
