"""Run the real gcloud CLI against a sandbox: a private configuration directory, no credentials,
and endpoint overrides for Compute, Kubernetes Engine and Service Usage (without the last one
``gcloud container`` waits ~30 s trying to reach serviceusage.googleapis.com).

``GcloudRunner`` starts one ``gcloud`` process per command, as a user does. ``GcloudSession`` loads the
CLI once and runs many commands in that one process (gcloud_session.py): the same SDK code from
argument parsing to the HTTP request, without the ~1 s of CPU each process spends starting Python
and loading the CLI -- for tests that compare what many commands send, not how gcloud starts.
"""

import json
import os
import shutil
import subprocess
import threading


def gcloud_environment(sandbox, config_dir, project=None):
    """Environment variables that point gcloud (and kubectl) at ``sandbox``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(('CLOUDSDK_', 'GOOGLE_'))}
    env.update({
        'CLOUDSDK_CONFIG': config_dir,
        'CLOUDSDK_CORE_PROJECT': project or sandbox.project,
        'CLOUDSDK_AUTH_DISABLE_CREDENTIALS': 'True',
        'CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE': sandbox.compute_url,
        'CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER': sandbox.container_url,
        'CLOUDSDK_API_ENDPOINT_OVERRIDES_SERVICEUSAGE': sandbox.container_url,
        'CLOUDSDK_CORE_DISABLE_PROMPTS': '1',
        'CLOUDSDK_CORE_DISABLE_USAGE_REPORTING': 'True',
        'CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK': 'True',
        'CLOUDSDK_CORE_CHECK_GCE_METADATA': 'False',
        'KUBECONFIG': os.path.join(config_dir, 'kubeconfig'),
        'NO_PROXY': '127.0.0.1,localhost',
    })
    return env


def kubectl_binary(version='1.33'):
    """The Cloud SDK's ``kubectl.VERSION`` beside the gcloud on PATH, or None when it is not installed."""
    gcloud = shutil.which('gcloud')
    candidate = os.path.join(os.path.dirname(os.path.realpath(gcloud)), 'kubectl.' + version) if gcloud else ''
    return candidate if os.path.exists(candidate) else None


class GcloudRunner:
    """``runner(*args) -> subprocess.CompletedProcess`` running gcloud against one sandbox."""

    def __init__(self, sandbox, config_dir, project=None):
        os.makedirs(config_dir, exist_ok=True)
        self.sandbox = sandbox
        self.config_dir = config_dir
        self.env = gcloud_environment(sandbox, config_dir, project)
        self.executable = shutil.which('gcloud')

    @property
    def kubeconfig(self):
        return self.env['KUBECONFIG']

    def __call__(self, *args, check=False, timeout=120):
        command = [self.executable, *[str(arg) for arg in args]]
        result = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError('gcloud %s failed (exit %d):\n%s' % (' '.join(command[1:]), result.returncode, result.stderr))
        return result


class GcloudSession:
    """``session(*args) -> subprocess.CompletedProcess``: like GcloudRunner, in one long-lived gcloud process
    (see the module docstring); commands run one at a time, in the order of the calls. Use as a context
    manager, or call ``close()``."""

    def __init__(self, sandbox, config_dir, project=None):
        os.makedirs(config_dir, exist_ok=True)
        self.env = gcloud_environment(sandbox, config_dir, project)
        sdk = os.path.dirname(os.path.dirname(os.path.realpath(shutil.which('gcloud'))))
        bundled = os.path.join(sdk, 'platform', 'bundledpythonunix', 'bin', 'python3')
        # bin/gcloud's choice: CLOUDSDK_PYTHON, else the bundled interpreter, else python3; always -S.
        python = os.environ.get('CLOUDSDK_PYTHON') or (bundled if os.access(bundled, os.X_OK) else shutil.which('python3'))
        answers, child_end = os.pipe()
        self._process = subprocess.Popen(  # pylint: disable=consider-using-with
            [python, '-S', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'gcloud_session.py'), str(child_end)],
            env=dict(self.env, CLOUDSDK_ROOT_DIR=sdk), stdin=subprocess.PIPE, pass_fds=(child_end,), text=True)
        os.close(child_end)
        self._answers = os.fdopen(answers, encoding='utf-8')
        self._lock = threading.Lock()

    def __call__(self, *args, check=False):
        args = [str(arg) for arg in args]
        with self._lock:
            self._process.stdin.write(json.dumps(args) + '\n')
            self._process.stdin.flush()
            line = self._answers.readline()
        if not line:
            raise RuntimeError('the gcloud session ended (exit %s)' % self._process.wait())
        answer = json.loads(line)
        result = subprocess.CompletedProcess(['gcloud', *args], answer['returncode'], answer['stdout'], answer['stderr'])
        if check and result.returncode != 0:
            raise AssertionError('gcloud %s failed (exit %d):\n%s' % (' '.join(args), result.returncode, result.stderr))
        return result

    def close(self):
        """End the process at once: every command's answer has been read, and it keeps nothing to save."""
        self._process.kill()
        self._process.wait()
        self._process.stdin.close()
        self._answers.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
