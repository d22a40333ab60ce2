"""PROTOTYPE, for measurement only: the collection's three API modules run inside the task's worker process.

Not part of the collection and not fit to ship as written: it is what `bench/provision.py --in-process-prototype`
measures, to show how much of our time beyond the critical path is Ansible's way of running a module (templating,
building the AnsiballZ payload, a new Python process importing everything from a zip) rather than the modules' work.
It copies the checkout and adds an action plugin for each module that calls the module's main() in the worker
with ansible-core's ``patch_module_args``, which ansible-core documents as "not supported for use cases other than
testing". A real version would also have to keep the normal path wherever the module does not run on the controller
with the controller's Python (another connection or interpreter, become, async, delegation), apply the task's
``environment``, pass every internal ``_ansible_*`` argument, read the result as the controller reads a module's
(warnings, deprecations, no_log), turn an exception in main() into a module failure, and work on ansible-core
2.17 and 2.18 (no ``patch_module_args`` there).
"""

import pathlib
import shutil
import subprocess
import tempfile

MODULES = ('gpudirect_plan', 'gce_gpudirect_network', 'gce_gpudirect_instance')

ACTION = '''"""PROTOTYPE (bench/inprocess_prototype.py): run the module's main() in the worker process."""
import contextlib
import importlib
import io
import json

from ansible.module_utils.testing import patch_module_args
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args, _ansible_check_mode=self._play_context.check_mode, _ansible_diff=self._play_context.diff)
        main = importlib.import_module('ansible_collections.aiinfra.gpudirect.plugins.modules.%s' % self._task.action.split('.')[-1]).main
        out = io.StringIO()
        with patch_module_args(args), contextlib.redirect_stdout(out):
            try:
                main()
            except SystemExit:
                pass
        result.update(json.loads(out.getvalue()))
        return result
'''


def prototype_collections(root):
    """A temporary ANSIBLE_COLLECTIONS_PATH whose aiinfra/gpudirect is a copy of the checkout's files with the
    prototype's action plugins added."""
    path = pathlib.Path(tempfile.mkdtemp(prefix='bench-inprocess-'))
    copy = path / 'ansible_collections' / 'aiinfra' / 'gpudirect'
    files = subprocess.run(['git', 'ls-files', '--cached', '--others', '--exclude-standard'], cwd=root, capture_output=True,
                           text=True, check=True).stdout.split('\n')
    for name in filter(None, files):
        source = pathlib.Path(root) / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    (copy / 'plugins' / 'action').mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        (copy / 'plugins' / 'action' / ('%s.py' % module)).write_text(ACTION, encoding='utf-8')
    return path
