# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of the collection's API modules: run the module in the task's worker process when it would run on the
controller with the controller's own Python anyway.

Why: the API modules (Compute Engine, Container API, the plan step) only send HTTPS requests, so they run on the
controller (``connection: local``). Run the usual way, each task costs 0.6-1.0 s beyond the module's own work:
ansible-core parses every module_utils file the module imports to build its AnsiballZ payload, then a new Python
process imports ansible's module_utils, requests and ours from that zip, compiled anew (bench/README.md, "Where the
time beyond the critical path goes"). In the worker, the module's code is imported from the controller's own files,
already compiled.

What stays the same: the module is the same file and its main() runs unchanged. Its arguments are what
ansible-core's own ``_execute_module`` sends (the task's arguments with module_defaults, then
``_update_module_args``: check mode, diff, no_log, verbosity and the other ``_ansible_*`` keys), handed to
AnsibleModule through ``ansible.module_utils.basic._ANSIBLE_ARGS`` (and ``_ANSIBLE_PROFILE`` on ansible-core 2.19),
the way AnsiballZ's own wrapper hands them; the task's ``environment`` is in ``os.environ`` while it runs; its JSON
output is read by ansible-core's ``_parse_returned_data`` and cleaned by ``remove_internal_keys``, as a module
process's would be. An exception in main() is a failed result with its traceback, as AnsiballZ reports one.
One difference is ansible-core's own: on 2.19, module code that runs on the controller shows its warnings and
deprecations at once through Display (module_utils/common/warnings.py, ``_internal.is_controller``) instead of
returning them in the result, so a registered result has no ``warnings`` key; they are still shown.
One difference is ours: the progress lines of a long wait (poll.WaitReport: an operation's status every 20 s) are
shown while the module runs, through Display, which in a worker process sends them to ansible-playbook over its
final queue (ansible-core 2.17 to 2.21 alike); a module process can only return them in its result.

The usual way is kept wherever the module would not run in this very Python (each case is the reason given at
-vvv): an ansible-core whose internals this relies on have moved (2.21: ``remove_internal_keys``), a connection
other than local, become, async, delegation, or an ``ansible_python_interpreter`` other than the controller's
(``{{ ansible_playbook_python }}``; the implicit localhost has it). ``ANSIBLE_GPUDIRECT_MODULE_PROCESS`` set to a
true value forces the usual way everywhere.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import sys
import threading
import traceback

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.utils.display import Display
from ansible.release import __version__ as ANSIBLE_CORE_VERSION

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import live_output

try:   # gone in ansible-core 2.21, whose module results are a UnifiedTaskResult: there the module runs as its process
    from ansible.vars.clean import remove_internal_keys
except ImportError:
    remove_internal_keys = None

try:   # ansible-core 2.19: arguments and results go through a serialization profile
    from ansible.module_utils.common.json import Direction, get_module_encoder
except ImportError:   # ansible-core 2.17 and 2.18: module_common's AnsibleJSONEncoder
    from ansible.module_utils.common.json import AnsibleJSONEncoder

    PROFILE = None

    def _encode(params):
        return json.dumps(params, cls=AnsibleJSONEncoder, vault_to_text=True)
else:
    PROFILE = 'legacy'   # what ansible-core gives a module that declares no profile of its own

    def _encode(params):
        return json.dumps(params, cls=get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE))

display = Display()

FORCE_MODULE_PROCESS = 'ANSIBLE_GPUDIRECT_MODULE_PROCESS'


def encoded_module_args(args):
    """``args`` as the JSON bytes AnsiballZ hands AnsibleModule (module_common's encoding of each ansible-core)."""
    return _encode({'ANSIBLE_MODULE_ARGS': args}).encode('utf-8')


@contextlib.contextmanager
def module_process_state(encoded_args, environment):
    """What a module process starts with, for the time main() runs: its arguments, the task's environment, no
    warning or deprecation left by an earlier module run in this worker (AnsibleModule collects them in
    module-level globals). Everything is put back afterwards, os.environ included (AnsibleModule may set the
    locale variables)."""
    saved_args = basic._ANSIBLE_ARGS, getattr(basic, '_ANSIBLE_PROFILE', None)
    saved_warnings = module_warnings._global_warnings, module_warnings._global_deprecations
    saved_environ = dict(os.environ)
    basic._ANSIBLE_ARGS = encoded_args
    if PROFILE is not None:
        basic._ANSIBLE_PROFILE = PROFILE
    module_warnings._global_warnings = type(saved_warnings[0])()
    module_warnings._global_deprecations = type(saved_warnings[1])()
    os.environ.update({name: str(value) for name, value in environment.items()})
    try:
        yield
    finally:
        basic._ANSIBLE_ARGS = saved_args[0]
        if PROFILE is not None:
            basic._ANSIBLE_PROFILE = saved_args[1]
        module_warnings._global_warnings, module_warnings._global_deprecations = saved_warnings
        os.environ.clear()
        os.environ.update(saved_environ)


def run_main(python_module):
    """Run ``python_module``'s main() and return (its printed output, exit status). An exception is turned into
    the failed result a module process would print (the message and the traceback)."""
    out = io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out):
        try:
            python_module.main()
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:   # pylint: disable=broad-except; a module process reports any exception likewise
            out.seek(0)
            out.truncate()
            print(json.dumps({'failed': True, 'msg': 'MODULE FAILURE: %s: %s' % (type(exc).__name__, exc),
                              'exception': traceback.format_exc()}))
            status = 1
    return out.getvalue(), status


def progress_line_printer(stdout):
    """A progress line's way out while main() runs: Display, with the standard output it would write to outside
    run_main (in a worker process it writes none: it sends the line to ansible-playbook; elsewhere the line must not
    land in the module's captured output). Lines come from the threads that wait on operations side by side, and
    sys.stdout is one for all threads: two redirections that overlap would restore it out of order and leave the
    module's result printed past its capture, so one line is shown at a time."""
    lock = threading.Lock()

    def show(line):
        with lock, contextlib.redirect_stdout(stdout):
            display.display(line)
    return show


class ModuleInWorkerAction(NormalAction):
    """ansible.builtin.normal, with the module run in the worker process when that is the same Python."""

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars if task_vars is not None else {}
        reason = self._module_process_reason(task_vars)
        if reason:
            display.vvv('%s: as a module process (%s)' % (self._task.action, reason))
            return super().run(tmp, task_vars)
        display.vvv('%s: in the worker process (the local connection with the controller\'s Python)' % self._task.action)
        result = super(NormalAction, self).run(tmp, task_vars)   # ActionBase.run: the check-mode/async checks only
        result.update(self._run_in_worker(task_vars))
        return result

    def _module_process_reason(self, task_vars):
        """Why the module must run as its own process here, or None."""
        if boolean(os.environ.get(FORCE_MODULE_PROCESS, 'false'), strict=False):
            return '%s is set' % FORCE_MODULE_PROCESS
        if remove_internal_keys is None:
            return 'ansible-core %s has no ansible.vars.clean.remove_internal_keys, which the in-worker run needs' % ANSIBLE_CORE_VERSION
        if self._connection.transport != 'local':
            return 'connection %s' % self._connection.transport
        if self._play_context.become:
            return 'become'
        if self._task.async_val:
            return 'async'
        if self._task.delegate_to:
            return 'delegate_to'
        interpreter = task_vars.get('ansible_python_interpreter')
        if interpreter is None:
            return 'no ansible_python_interpreter: interpreter discovery picks it'
        interpreter = self._templar.template(interpreter)
        if os.path.abspath(str(interpreter)) != os.path.abspath(sys.executable):
            return 'ansible_python_interpreter %s is not the controller\'s %s' % (interpreter, sys.executable)
        return None

    def _run_in_worker(self, task_vars):
        args = dict(self._task.args)
        self._update_module_args(self._task.action, args, task_vars)
        environment = {}
        self._compute_environment_string(environment)
        namespace, collection, name = self._task.resolved_action.split('.')
        python_module = importlib.import_module('ansible_collections.%s.%s.plugins.modules.%s' % (namespace, collection, name))
        with module_process_state(encoded_module_args(args), environment), live_output(progress_line_printer(sys.stdout)):
            stdout, status = run_main(python_module)
        output = {'stdout': stdout, 'stderr': '', 'rc': status}
        data = self._parse_returned_data(output) if PROFILE is None else self._parse_returned_data(output, PROFILE)
        data.pop('_ansible_suppress_tmpdir_delete', None)
        remove_internal_keys(data)
        return data
