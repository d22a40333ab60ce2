"""Run the real gcloud CLI against a sandbox: a private configuration directory, no credentials,
and endpoint overrides for Compute, Kubernetes Engine and Service Usage (without the last one
``gcloud container`` waits ~30 s trying to reach serviceusage.googleapis.com).
"""

import os
import shutil
import subprocess


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
