# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mechanism that runs a module in the task's worker (plugins/plugin_utils/module_in_worker.py), with a real
AnsibleModule, on every ansible-core the collection claims (the cores stage runs tests/unit on each): arguments as
AnsiballZ hands them, nothing carried from one module run to the next, the process state put back. The action
around it is run by the real ansible-playbook in tests/integration/test_module_in_worker.py."""
from __future__ import annotations

import json
import os
import types

from ansible.module_utils import basic
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common import warnings as module_warnings

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils import module_in_worker
from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.module_in_worker import (
    encoded_module_args, module_process_state, run_main)


def echo_main():
    """A module: echoes its options, warns when asked, fails when asked, reports the environment variable X."""
    module = AnsibleModule(argument_spec={'name': {'type': 'str', 'required': True}, 'token': {'type': 'str', 'no_log': True},
                                          'warn': {'type': 'bool', 'default': False}, 'fail': {'type': 'bool', 'default': False}},
                           supports_check_mode=True)
    if module.params['warn']:
        module.warn('careful with %s' % module.params['name'])
    if module.params['fail']:
        module.fail_json(msg='refused %s' % module.params['name'])
    module.exit_json(changed=not module.check_mode, name=module.params['name'], check_mode=module.check_mode,
                     x=os.environ.get('X'))


def run(args, environment=None):
    with module_process_state(encoded_module_args(args), environment or {}):
        output, status = run_main(types.SimpleNamespace(main=echo_main))
    return json.loads(output), status


@pytest.mark.skipif(module_in_worker.remove_internal_keys is None, reason='this ansible-core runs the modules as module processes')
def test_arguments_reach_the_module_as_ansiballz_hands_them():
    result, status = run({'name': 'a', 'token': 's3cret', '_ansible_check_mode': True})
    assert status == 0
    assert (result['name'], result['check_mode'], result['changed']) == ('a', True, False)
    # AnsibleModule masked the no_log option in what it returns, as in a module process
    assert result['invocation']['module_args']['token'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
    assert 's3cret' not in json.dumps(result)


def test_a_warning_is_reported_by_its_run_only(capfd):
    """ansible-core 2.17/2.18 return a module's warnings in its result; 2.19 shows those of module code that runs on
    the controller at once, through Display (module_utils/common/warnings.py, ``_internal.is_controller``)."""
    warned = run({'name': 'first', 'warn': True})[0]
    shown_first = capfd.readouterr().err
    quiet = run({'name': 'second'})[0]
    shown_second = capfd.readouterr().err
    assert 'careful with first' in ' '.join(map(str, warned.get('warnings', []))) + shown_first
    assert 'careful' not in ' '.join(map(str, quiet.get('warnings', []))) + shown_second


def test_the_environment_is_the_tasks_while_main_runs_then_restored():
    before = dict(os.environ)
    result = run({'name': 'a'}, environment={'X': 42})[0]
    assert result['x'] == '42'
    assert dict(os.environ) == before


def test_the_module_globals_are_put_back():
    saved = (basic._ANSIBLE_ARGS, getattr(basic, '_ANSIBLE_PROFILE', None), module_warnings._global_warnings,
             module_warnings._global_deprecations)
    run({'name': 'a', 'warn': True})
    assert (basic._ANSIBLE_ARGS, getattr(basic, '_ANSIBLE_PROFILE', None), module_warnings._global_warnings,
            module_warnings._global_deprecations) == saved
    assert not module_warnings._global_warnings


def test_fail_json_is_a_failed_result_with_status_1():
    result, status = run({'name': 'b', 'fail': True})
    assert status == 1
    assert result['failed'] is True and result['msg'] == 'refused b'


def test_an_exception_in_main_is_a_failed_result_with_its_traceback():
    def broken_main():
        print('partial output that must not reach the result')
        raise KeyError('zone')

    with module_process_state(encoded_module_args({}), {}):
        output, status = run_main(types.SimpleNamespace(main=broken_main))
    result = json.loads(output)
    assert status == 1
    assert result['failed'] is True
    assert result['msg'] == "MODULE FAILURE: KeyError: 'zone'"
    assert 'broken_main' in result['exception']
