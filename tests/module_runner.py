"""Run one of the collection's modules in-process, exactly as Ansible would hand it its arguments.

The module's main() reads its arguments the way AnsibleModule always does, exits through
exit_json/fail_json, and prints its JSON result; this returns that result as a dict.
"""

import io
import json
import contextlib

try:
    from ansible.module_utils.testing import patch_module_args  # ansible-core 2.19 and later
except ImportError:
    from ansible.module_utils import basic

    @contextlib.contextmanager
    def patch_module_args(args):
        """ansible-core 2.17 and 2.18: AnsibleModule reads its arguments from basic._ANSIBLE_ARGS."""
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = json.dumps({'ANSIBLE_MODULE_ARGS': args}).encode('utf-8')
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved


def run_module(main, args, check_mode=False, diff=False):
    args = dict(args)
    if check_mode:
        args['_ansible_check_mode'] = True
    if diff:
        args['_ansible_diff'] = True
    out = io.StringIO()
    with patch_module_args(args), contextlib.redirect_stdout(out):
        try:
            main()
        except SystemExit:
            return json.loads(out.getvalue())
    raise AssertionError('the module returned without exit_json or fail_json')
