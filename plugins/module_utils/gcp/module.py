# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one base of the collection's Google Cloud modules.

GpuDirectModule adds the connection options (documented in doc_fragments/gcp.py) to a module's
argument spec, with the GCP_* / CLOUDSDK_* environment fallbacks, builds the clients of gcp/clients.py
once asked, and turns a GcpError into one fail_json call that carries the status, reason and
operation error codes.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule, env_fallback

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import transport
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.clients import clients_from
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links

_CONNECTION_OPTIONS = {
    'project': {'type': 'str'},
    'auth_kind': {'type': 'str', 'default': 'application', 'choices': list(transport.AUTH_KINDS)},
    'service_account_file': {'type': 'path'},
    'service_account_contents': {'type': 'jsonarg', 'no_log': True},
    'access_token': {'type': 'str', 'no_log': True},
    'scopes': {'type': 'list', 'elements': 'str', 'default': list(transport.DEFAULT_SCOPES)},
    'compute_endpoint': {'type': 'str', 'default': transport.COMPUTE_DEFAULT_ENDPOINT},
    'container_endpoint': {'type': 'str', 'default': transport.CONTAINER_DEFAULT_ENDPOINT},
}
CONNECTION_ARGUMENT_SPEC = dict(
    {name: dict(spec, fallback=(env_fallback, [transport.ENVIRONMENT[name]])) for name, spec in _CONNECTION_OPTIONS.items()},
    retry_deadline={'type': 'float', 'default': 300.0},
)


class GpuDirectModule:
    """An AnsibleModule with the Google Cloud connection options and clients.

    module_class is injectable so that unit tests can run a module body without Ansible's
    process plumbing.
    """

    def __init__(self, argument_spec, module_class=AnsibleModule, **kwargs):
        spec = dict(CONNECTION_ARGUMENT_SPEC)
        spec.update(argument_spec)
        self.module = module_class(argument_spec=spec, **kwargs)
        self._clients = None

    @property
    def params(self):
        return self.module.params

    @property
    def check_mode(self):
        return self.module.check_mode

    @property
    def clients(self):
        if self._clients is None:
            params = self.module.params
            if not params.get('project'):
                self.module.fail_json(msg='project is required: set the project option or the GCP_PROJECT environment variable')
            if links.project_id_problem(params['project']):
                self.module.fail_json(msg=links.project_id_problem(params['project']))
            retry = transport.RetryPolicy(deadline=params['retry_deadline'])
            try:
                self._clients = clients_from(params, environ={}, retry=retry)
            except GcpError as exc:
                self.fail_from_error(exc)
        return self._clients

    @property
    def compute(self):
        return self.clients.compute

    @property
    def container(self):
        return self.clients.container

    @property
    def container_beta(self):
        return self.clients.container_beta

    def warn(self, message):
        self.module.warn(message)

    def exit_json(self, **result):
        self.module.exit_json(**result)

    def fail_json(self, msg, **result):
        self.module.fail_json(msg=msg, **result)

    def fail_from(self, error, **result):
        """Fail with an InputError's text (it names the field and the fix) or a GcpError's text and parts."""
        if isinstance(error, GcpError):
            self.fail_from_error(error, **result)
        self.module.fail_json(msg=str(error), **result)

    def fail_from_error(self, error, **result):
        """Fail with the error's one-line text plus its structured parts."""
        self.module.fail_json(msg=str(error), error=error.to_dict(), **result)
