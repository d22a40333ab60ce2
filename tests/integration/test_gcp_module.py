"""module_utils/gcp/module.py: the module base, run as Ansible runs it, against the sandbox."""

import json

import pytest
from module_runner import patch_module_args

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import module as gcp_module


def run_module(capsys, args, body):
    """Run body(module) inside a GpuDirectModule built from args; return the JSON it exited with."""
    with patch_module_args(args):
        module = gcp_module.GpuDirectModule({'name': {'type': 'str'}}, supports_check_mode=True)
        with pytest.raises(SystemExit):
            body(module)
    return json.loads(capsys.readouterr().out)


def test_connection_options_fall_back_to_the_environment(sandbox, capsys, monkeypatch):
    monkeypatch.setenv('GCP_PROJECT', 'env-project')
    monkeypatch.setenv('GCP_AUTH_KIND', 'none')
    monkeypatch.setenv('CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE', sandbox.compute_url)
    result = run_module(capsys, {'name': 'x'}, lambda module: module.exit_json(
        changed=False, project=module.compute.project, networks=list(module.compute.list('global/networks'))))
    assert result['project'] == 'env-project'
    assert result['networks'] == []
    assert sandbox.request_log()[-1]['path'] == '/compute/v1/projects/env-project/global/networks'


def test_errors_fail_once_with_their_parts(sandbox, capsys):
    args = {'project': 'p', 'auth_kind': 'none', 'compute_endpoint': sandbox.compute_url}

    def body(module):
        module.compute.run('POST', 'global/networks', "create network 'bad'", body={'name': 'bad', 'mtu': 9000})

    def guarded(module):
        try:
            body(module)
        except gcp_module.gcp_client.GcpError as exc:
            module.fail_from_error(exc)

    result = run_module(capsys, args, guarded)
    assert result['failed'] is True
    assert result['msg'].startswith("Failed to create network 'bad' (HTTP 400")
    assert result['error']['status'] == 400


def test_missing_project_names_the_option_and_the_variable(capsys, monkeypatch):
    monkeypatch.delenv('GCP_PROJECT', raising=False)
    result = run_module(capsys, {'auth_kind': 'none'}, lambda module: module.compute)
    assert result['msg'] == 'project is required: set the project option or the GCP_PROJECT environment variable'


def test_secrets_never_reach_the_output(capsys):
    token = 'ya29.secret-token-value'
    result = run_module(capsys, {'project': 'p', 'auth_kind': 'accesstoken', 'access_token': token},
                        lambda module: module.exit_json(changed=False, echo='token is %s' % token))
    assert token not in json.dumps(result)
