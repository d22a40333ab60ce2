"""Run the collection's playbooks with the real ansible-playbook against a sandbox."""

import json
import os
import pathlib
import subprocess
import sys


def collections_path():
    """The directory that holds ansible_collections/aiinfra/gpudirect (the copy under test)."""
    for entry in [*sys.path, *os.environ.get('PYTHONPATH', '').split(os.pathsep)]:
        if entry and (pathlib.Path(entry) / 'ansible_collections' / 'aiinfra' / 'gpudirect' / 'galaxy.yml').is_file():
            return str(pathlib.Path(entry).resolve())
    raise RuntimeError('no ansible_collections/aiinfra/gpudirect on sys.path; run the tests through scripts/test')


def collection_root():
    return pathlib.Path(collections_path()) / 'ansible_collections' / 'aiinfra' / 'gpudirect'


def sandbox_environment(sandbox, project):
    env = {key: value for key, value in os.environ.items() if not key.startswith(('GCP_', 'CLOUDSDK_', 'ANSIBLE_'))}
    env.update({
        'GCP_AUTH_KIND': 'none', 'GCP_PROJECT': project,
        'CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE': sandbox.compute_url,
        'CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER': sandbox.container_url,
        'ANSIBLE_COLLECTIONS_PATH': collections_path(), 'ANSIBLE_NOCOLOR': '1', 'ANSIBLE_FORCE_COLOR': '0',
        'ANSIBLE_LOCALHOST_WARNING': 'False', 'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'False',
    })
    return env


def ansible_playbook(sandbox, playbook, extra_vars, project='sandbox-project', args=(), timeout=600, env=None):
    """Run playbooks/PLAYBOOK with extra vars (as JSON) and gpudirect_project=PROJECT, the environment's GCP_PROJECT
    too unless ``env`` says otherwise; return the CompletedProcess."""
    root = collection_root()
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(root / 'inventories' / 'sandbox'),
               str(root / 'playbooks' / playbook), '-e', json.dumps(dict(extra_vars, gpudirect_project=project)), *args]
    return subprocess.run(command, env=dict(sandbox_environment(sandbox, project), **(env or {})), capture_output=True, text=True,
                          timeout=timeout, check=False)
