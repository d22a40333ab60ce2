# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/gcp/module.py, the base of the Google Cloud modules, with the real AnsibleModule and no API: what it
refuses before it builds a client, and the one failure shape (tests/integration/test_gcp_module.py runs it against
the sandbox). The endpoint is a closed local port, so a request that should not be made fails loudly instead."""
from __future__ import annotations

import json

import pytest

from module_runner import patch_module_args
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import ENVIRONMENT
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import module as gcp_module

CLOSED = 'http://127.0.0.1:9/compute/v1/'


def run(capsys, args, body):
    """body(module) inside a GpuDirectModule built from args; the JSON it exited with."""
    with patch_module_args(dict({'compute_endpoint': CLOSED, 'retry_deadline': 1}, **args)):
        module = gcp_module.GpuDirectModule({'name': {'type': 'str'}}, supports_check_mode=True)
        with pytest.raises(SystemExit):
            body(module)
    return json.loads(capsys.readouterr().out)


def list_networks(module):
    list(module.compute.list('global/networks'))
    module.exit_json(changed=False)


@pytest.mark.parametrize('args, message', [
    ({'project': 'Bad_Project', 'auth_kind': 'none'}, 'project'),
    ({'project': 'test-project', 'auth_kind': 'serviceaccount'},
     'Failed to authenticate: auth_kind serviceaccount needs service_account_file or service_account_contents'),
    ({'project': 'test-project', 'auth_kind': 'accesstoken'}, 'Failed to authenticate: auth_kind accesstoken needs access_token'),
])
def test_bad_connection_input_fails_before_any_request(capsys, monkeypatch, args, message):
    for variable in ENVIRONMENT.values():
        monkeypatch.delenv(variable, raising=False)
    result = run(capsys, args, list_networks)
    assert result['failed'] is True and message in result['msg'], result['msg']
    assert 'Connection refused' not in result['msg'] and '127.0.0.1:9' not in result['msg']


def test_an_invalid_project_id_is_named_with_the_rule(capsys):
    result = run(capsys, {'project': 'Bad_Project', 'auth_kind': 'none'}, list_networks)
    assert result['msg'].startswith("project: 'Bad_Project'"), result['msg']


def test_fail_from_error_is_one_line_with_its_parts(capsys):
    error = GcpError("create instance 'vm-1'", 'no room\n in the zone', status=503, reason='unavailable',
                     codes=['ZONE_RESOURCE_POOL_EXHAUSTED'])
    result = run(capsys, {'project': 'test-project', 'auth_kind': 'none'}, lambda module: module.fail_from_error(error, instances=[]))
    assert result['msg'] == "Failed to create instance 'vm-1' (HTTP 503, unavailable, ZONE_RESOURCE_POOL_EXHAUSTED): no room in the zone"
    assert result['error'] == {'action': "create instance 'vm-1'", 'message': 'no room in the zone', 'status': 503,
                               'reason': 'unavailable', 'codes': ['ZONE_RESOURCE_POOL_EXHAUSTED']}
    assert result['instances'] == []


def test_the_modules_options_join_the_connection_options_and_secrets_are_no_log():
    assert {name for name, spec in gcp_module.CONNECTION_ARGUMENT_SPEC.items() if spec.get('no_log')} == {
        'service_account_contents', 'access_token'}
    for name, variable in ENVIRONMENT.items():
        assert gcp_module.CONNECTION_ARGUMENT_SPEC[name]['fallback'][1] == [variable], name


def test_clients_are_built_once_and_only_when_asked(capsys):
    def body(module):
        assert module._clients is None            # nothing built by the constructor
        first = module.clients
        assert module.clients is first and module.compute.project == 'test-project'
        module.exit_json(changed=False, name=module.params['name'])
    result = run(capsys, {'project': 'test-project', 'auth_kind': 'none', 'name': 'x'}, body)
    assert result['changed'] is False and result['name'] == 'x'
