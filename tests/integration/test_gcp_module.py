"""module_utils/gcp/module.py: the module base, run as Ansible runs it, against the sandbox."""

import json

import pytest
from module_runner import patch_module_args

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import module as gcp_module
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError


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
    args = {'project': 'test-project', 'auth_kind': 'none', 'compute_endpoint': sandbox.compute_url}

    def body(module):
        module.compute.run('POST', 'global/networks', "create network 'bad'", body={'name': 'bad', 'mtu': 9000})

    def guarded(module):
        try:
            body(module)
        except GcpError as exc:
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
    result = run_module(capsys, {'project': 'test-project', 'auth_kind': 'accesstoken', 'access_token': token},
                        lambda module: module.exit_json(changed=False, echo='token is %s' % token))
    assert token not in json.dumps(result)


def test_a_token_refresh_failure_is_one_authentication_error(sandbox, capsys):
    """A service account whose token_uri answers with an error (here the sandbox's 404): the module fails with
    'Failed to authenticate: ...', not with google-auth's raw (message, response) tuple."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    contents = {'type': 'service_account', 'project_id': 'test-project', 'private_key_id': 'k1', 'private_key': key,
                'client_email': 'runner@test-project.iam.gserviceaccount.com', 'client_id': '1',
                'token_uri': sandbox.url + '/no-such-token-endpoint'}
    args = {'project': 'test-project', 'auth_kind': 'serviceaccount', 'service_account_contents': json.dumps(contents),
            'compute_endpoint': sandbox.compute_url, 'retry_deadline': 5}

    def guarded(module):
        try:
            list(module.compute.list('global/networks'))
        except GcpError as exc:
            module.fail_from_error(exc)

    result = run_module(capsys, args, guarded)
    assert result['failed'] is True
    assert result['msg'].startswith('Failed to authenticate: '), result['msg']
    assert 'BEGIN PRIVATE KEY' not in json.dumps(result)
