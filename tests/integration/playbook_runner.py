"""Run the collection's playbooks with the real ansible-playbook against a sandbox."""

import json
import os
import pathlib
import subprocess
import sys

import yaml

# A value of the wrong type for each type of a role's argument spec; an option with choices gets one outside them. A
# str, path or raw option has no wrong type (any text converts): the plan tests check those the playbooks set through
# their contradiction cases.
WRONG_TYPE = {'int': 'abc', 'float': 'abc', 'bool': 'maybe', 'list': {'not': 'a list'}, 'dict': 'notadict'}


def collections_path():
    """The directory that holds ansible_collections/aiinfra/gpudirect (the copy under test): PYTHONPATH's first, as
    scripts/test sets it to the build, which holds kubernetes.core beside ours; a test module may have put another
    link to the collection on sys.path, alone (tests/images/build.py, load_families)."""
    for entry in [*os.environ.get('PYTHONPATH', '').split(os.pathsep), *sys.path]:
        if entry and (pathlib.Path(entry) / 'ansible_collections' / 'aiinfra' / 'gpudirect' / 'galaxy.yml').is_file():
            return str(pathlib.Path(entry).resolve())
    raise RuntimeError('no ansible_collections/aiinfra/gpudirect on sys.path; run the tests through scripts/test')


def collection_root():
    return pathlib.Path(collections_path()) / 'ansible_collections' / 'aiinfra' / 'gpudirect'


def ansible_playbook_command(kubernetes=False):
    """``ansible-playbook`` as a command of this Python.  With ``kubernetes``, the Kubernetes client is imported
    before Ansible forks its workers: the roles read through kubernetes.core's k8s lookup, which runs in the forked
    worker and would import the client there, about 0.6 s of CPU per task; imported once in the parent, every
    worker inherits it.  Nothing else changes."""
    if not kubernetes:
        return [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')]
    return [sys.executable, '-c', 'import sys, kubernetes.config, kubernetes.dynamic; from ansible.cli.playbook import main; '
            'sys.argv[0] = "ansible-playbook"; sys.exit(main())']


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
    too unless ``env`` says otherwise; return the CompletedProcess. ``project`` None: no gpudirect_project (a playbook
    that talks to no project, such as nccl_test.yml, refuses it as a variable it does not read)."""
    root = collection_root()
    given = dict(extra_vars, gpudirect_project=project) if project else dict(extra_vars)
    command = [*ansible_playbook_command(kubernetes=playbook.startswith(('gke_', 'openshift_'))), '-i', str(root / 'inventories' / 'sandbox'),
               str(root / 'playbooks' / playbook), '-e', json.dumps(given), *args]
    return subprocess.run(command, env=dict(sandbox_environment(sandbox, project or 'sandbox-project'), **(env or {})), capture_output=True,
                          text=True, timeout=timeout, check=False)


def wrong_values(role, entry_points=('main',)):
    """{variable: a value its role's argument spec refuses} for every option of the role's entry points that has one."""
    with open(collection_root() / 'roles' / role / 'meta' / 'argument_specs.yml', encoding='utf-8') as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    return {name: 'not-one-of-the-choices' if option.get('choices') else WRONG_TYPE[option.get('type', 'str')]
            for point in entry_points for name, option in specs[point]['options'].items()
            if option.get('choices') or option.get('type', 'str') in WRONG_TYPE}
