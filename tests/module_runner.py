"""Run one of the collection's modules in-process, exactly as Ansible would hand it its arguments.

The module's main() reads its arguments the way AnsibleModule always does, exits through
exit_json/fail_json, and prints its JSON result; this returns that result as a dict. It is the
mechanism of the collection's in-worker action (plugins/plugin_utils/module_in_worker.py), without
the action around it.
"""

import contextlib
import json
import types

from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.module_in_worker import (
    encoded_module_args, module_process_state, run_main)


@contextlib.contextmanager
def patch_module_args(args):
    """AnsibleModule instances made within this context read ``args`` (and no warning of an earlier run)."""
    with module_process_state(encoded_module_args(args), {}):
        yield


def run_module(main, args, check_mode=False, diff=False, environment=None):
    args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
    with module_process_state(encoded_module_args(args), environment or {}):
        output = run_main(types.SimpleNamespace(main=main))[0]
    if not output.strip():
        raise AssertionError('the module returned without exit_json or fail_json')
    return json.loads(output)
