# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubernetes.core's client for the collection's Kubernetes actions (k8s_converge, k8s_wait, pod_exec), in the task's worker.

The client and its configuration are kubernetes.core's own (module_utils/k8s/client.py ``get_api_client``: the same
kubeconfig and context handling as its modules), with the connection options a play's ``module_defaults`` give
``group/kubernetes.core.k8s``, so a role's one ``module_defaults`` entry reaches kubernetes.core's tasks and ours.
"""

from __future__ import annotations

import json
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import converge

# pods/exec's channels (k8s.io/apimachinery remotecommand): 1 stdout, 2 stderr, 3 the error channel, where the kubelet
# writes the command's outcome as a Status once it ends.
ERROR_CHANNEL = 3


def _status_body(text):
    """The API server's Status in an error's body (a dict; {'message': text} when it is not JSON)."""
    try:
        return json.loads(text) if text else {}
    except (TypeError, ValueError):
        return {'message': str(text)}


def exec_outcome(status_text):
    """(rc, message) of an exec from the Status on its error channel: (0, None) for Success; (N, None) for a command that
    exited with N (reason NonZeroExitCode, its ExitCode cause); (None, the kubelet's message) when the command did not
    run to an exit code (not started: an executable not found; the container gone), which kubernetes.core's k8s_exec
    turned into "invalid literal for int()"."""
    status = _status_body(status_text)
    if status.get('status') == 'Success':
        return 0, None
    for cause in (status.get('details') or {}).get('causes') or []:
        if cause.get('reason') == 'ExitCode':
            try:
                return int(cause.get('message')), None
            except (TypeError, ValueError):
                break
    return None, status.get('message') or 'the exec ended with no status (the connection closed before the command ended)'


class KubeApi:
    """The calls the collection's Kubernetes actions make, over kubernetes.core's client: the five of converge (an error
    status becomes ``converge.ApiRefusal``) and ``exec``."""

    def __init__(self, client):
        self.client = client
        from kubernetes.dynamic import exceptions   # pylint: disable=import-outside-toplevel; kubernetes.core's requirement
        self.exceptions = exceptions

    def _refusal(self, exc):
        return converge.ApiRefusal(getattr(exc, 'status', None), _status_body(getattr(exc, 'body', None)))

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

    def list(self, resource, namespace, label_selector=None, field_selector=None):
        try:
            return resource.get(namespace=namespace, label_selector=label_selector,
                                field_selector=field_selector).to_dict().get('items') or []
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

    def exec(self, namespace, pod, container, argv, timeout):
        """Run ``argv`` in the container as ``kubectl exec`` does (pods/exec over a websocket, no stdin, no tty):
        (stdout, stderr, the error channel's Status text, or None when the command outlived ``timeout`` seconds)."""
        from kubernetes.client.api import core_v1_api   # pylint: disable=import-outside-toplevel; kubernetes.core's requirement
        from kubernetes.stream import stream   # pylint: disable=import-outside-toplevel
        from kubernetes.client.exceptions import ApiException   # pylint: disable=import-outside-toplevel
        from kubernetes.client.api_client import ApiClient   # pylint: disable=import-outside-toplevel
        # An ApiClient of its own per exec: the client's stream() swaps the ApiClient's call_api for its websocket call
        # while it runs, so two execs at once (pod_exec runs) on one ApiClient would undo each other's swap.
        core = core_v1_api.CoreV1Api(ApiClient(configuration=self.client.client.client.configuration))
        try:
            response = stream(core.connect_get_namespaced_pod_exec, pod, namespace, container=container, command=argv,
                              stdout=True, stderr=True, stdin=False, tty=False, _preload_content=False)
        except ApiException as exc:
            # The exec is a websocket: a refusal is its handshake's HTTP status, which the client wraps as status 0 with
            # the websocket library's exception (status_code, resp_body: the API server's Status) as the context.
            handshake = exc.__context__
            body = _status_body(getattr(handshake, 'resp_body', None) or exc.body) or {'message': str(exc.reason or exc)}
            raise converge.ApiRefusal(getattr(handshake, 'status_code', None) or exc.status, body) from None
        stdout, stderr = [], []
        deadline = time.monotonic() + timeout
        try:
            while response.is_open() and time.monotonic() < deadline:
                response.update(timeout=1)
                if response.peek_stdout():
                    stdout.append(response.read_stdout())
                if response.peek_stderr():
                    stderr.append(response.read_stderr())
            status = None if response.is_open() else response.read_channel(ERROR_CHANNEL)
        finally:
            response.close()
        return ''.join(stdout), ''.join(stderr), status


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
    # ``default(omit)`` there: ansible-core 2.19 and later drop the key when templating; older ones leave omit's
    # placeholder string, which only a module's arguments are cleaned of.
    return {name: value for name, value in template(found).items()
            if value is not None and value != '' and not str(value).startswith('__omit_place_holder__')}


def api_client(auth, action):
    """kubernetes.core's client for these connection options (unset ones: its defaults, K8S_AUTH_*, ~/.kube/config);
    ``action``: the action's name, for its errors."""
    try:
        from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client   # pylint: disable=import-outside-toplevel
        from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException   # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise AnsibleActionFail('%s needs the kubernetes.core collection and the kubernetes Python library: %s' % (action, exc)) from exc
    try:
        return KubeApi(get_api_client(**auth))
    except CoreException as exc:
        raise AnsibleActionFail('%s: %s' % (action, exc)) from exc


# The options of every Kubernetes action (doc fragment aiinfra.gpudirect.kube_action).
CONNECTION_OPTIONS = {'kubeconfig': {'type': 'raw', 'no_log': True}, 'context': {'type': 'str'}, 'host': {'type': 'str'},
                      'api_key': {'type': 'str', 'no_log': True}, 'ca_cert': {'type': 'path'}}


class KubeAction(ActionBase):
    """The base of the collection's Kubernetes actions: run in the worker, check mode theirs to judge, and ``client``."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def client(self, args):
        """kubernetes.core's client for this task: the connection options the play's module_defaults give
        kubernetes.core.k8s, below the task's own (``kubeconfig``, ``context``, ``host``, ``api_key``, ``ca_cert``)."""
        auth = kubernetes_core_defaults(self._task.module_defaults, self._templar.template)
        auth.update({key: args[key] for key in CONNECTION_OPTIONS if args.get(key)})
        return api_client(auth, self._task.action.rsplit('.', 1)[-1])
