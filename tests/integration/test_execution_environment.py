# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""execution-environment.yml rendered by the real ansible-builder (create: the build context, offline),
and meta/execution-environment.yml read by ansible-builder's own introspection, as a controller build
that includes this collection reads it. Building the image needs an engine and registries, which CI lacks."""
from __future__ import annotations

import glob
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

from playbook_runner import collection_root

BIN = os.path.dirname(sys.executable)


def requirement_lines(path):
    return [line.split('#', 1)[0].strip() for line in path.read_text().splitlines() if line.split('#', 1)[0].strip()]


def render(tmp_path):
    root = collection_root()
    work = tmp_path / 'ee'
    work.mkdir()
    for name in ('execution-environment.yml', 'requirements.txt', 'requirements.yml', 'bindep.txt'):
        shutil.copy(root / name, work / name)
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--output-path', str(work / 'dist'), str(root)],
                   check=True, capture_output=True, text=True, timeout=120)
    result = subprocess.run([os.path.join(BIN, 'ansible-builder'), 'create', '-f', 'execution-environment.yml', '--context', 'context'],
                            cwd=work, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return root, work / 'context'


def test_the_build_context_holds_every_requirement(tmp_path):
    root, context = render(tmp_path)
    containerfile = (context / 'Containerfile').read_text()
    galaxy = yaml.safe_load((root / 'galaxy.yml').read_text())
    runtime = yaml.safe_load((root / 'meta' / 'runtime.yml').read_text())
    # ansible-core: the range meta/runtime.yml claims (and CI tests), and ansible-runner, which AWX runs jobs with
    refs = next(line for line in containerfile.splitlines() if line.startswith('ARG ANSIBLE_INSTALL_REFS='))
    assert 'ansible-core%s ' % runtime['requires_ansible'] in refs and 'ansible-runner' in refs
    # a maintained base (CentOS Stream 10) and its own Python 3.12, which every ansible-core the collection claims runs on
    assert 'ARG EE_BASE_IMAGE="quay.io/centos/centos:stream10"' in containerfile
    assert 'ARG PYCMD="/usr/bin/python3.12"' in containerfile and 'ARG PYPKG="python3"' in containerfile
    # Python and system requirements of the collection, as they are
    assert requirement_lines(context / '_build' / 'requirements.txt') == requirement_lines(root / 'requirements.txt')
    assert requirement_lines(context / '_build' / 'bindep.txt') == requirement_lines(root / 'bindep.txt')
    assert 'introspect --user-pip=requirements.txt --user-bindep=bindep.txt' in containerfile
    # kubernetes.core, at the version galaxy.yml depends on
    collections = yaml.safe_load((context / '_build' / 'requirements.yml').read_text())['collections']
    assert {c['name']: c['version'] for c in collections} == galaxy['dependencies']
    assert 'ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml' in containerfile
    # this collection, from the tarball built above, installed in the final image
    tarball = context / '_build' / 'collection' / ('aiinfra-gpudirect-%s.tar.gz' % galaxy['version'])
    with tarfile.open(tarball) as archive:
        manifest = json.load(archive.extractfile('MANIFEST.json'))['collection_info']
    assert (manifest['namespace'], manifest['name'], manifest['version']) == ('aiinfra', 'gpudirect', galaxy['version'])
    final = containerfile[containerfile.index('FROM base AS final'):]
    assert 'COPY _build/collection/ /tmp/aiinfra-gpudirect/' in final
    assert 'ansible-galaxy collection install --offline -p /usr/share/ansible/collections /tmp/aiinfra-gpudirect/aiinfra-gpudirect-*.tar.gz' in final


def test_a_controller_build_finds_the_collections_requirements(tmp_path):
    """ansible-builder's introspect (what every EE build runs over its collections) reads meta/execution-environment.yml."""
    root, context = render(tmp_path)
    tarball = next((tmp_path / 'ee' / 'dist').glob('aiinfra-gpudirect-*.tar.gz'))
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '--offline', '--no-deps', '--force', '-p', str(tmp_path / 'installed'),
                    str(tarball)], check=True, capture_output=True, text=True, timeout=120)
    result = subprocess.run([sys.executable, str(context / '_build' / 'scripts' / 'introspect.py'), 'introspect', str(tmp_path / 'installed')],
                            capture_output=True, text=True, timeout=120, check=True)
    found = yaml.safe_load(result.stdout)  # --force: the collection under test is on PYTHONPATH, which ansible-galaxy counts as installed
    assert [line.split('  #', 1)[0] for line in found['python']] == requirement_lines(root / 'requirements.txt')
    assert [line.split('  #', 1)[0] for line in found['system']] == requirement_lines(root / 'bindep.txt')


# ---------------------------------------------------------------------------------------------
# A GKE playbook with only the execution environment's Python packages, and no gcloud


def ee_python():
    """The Python 3.12 the execution environment runs on (CentOS Stream 10's), here from pyenv or PATH (as scripts/lib.sh
    core_python finds it); None without one that runs."""
    root = os.environ.get('PYENV_ROOT', os.path.expanduser('~/.pyenv'))
    for candidate in [*sorted(glob.glob(os.path.join(root, 'versions', '3.12*', 'bin', 'python3.12')), reverse=True), shutil.which('python3.12')]:
        if candidate and subprocess.run([candidate, '-c', ''], capture_output=True, check=False).returncode == 0:
            return candidate
    return None


def ee_virtualenv():
    """A virtualenv with what the execution environment's image installs with pip, and nothing else: ansible-core and
    ansible-runner (execution-environment.yml) and requirements.txt. Made once per content under the build's deps/
    (pip reaches PyPI); (path, None), or (None, why) when it cannot be made here."""
    root = collection_root()
    definition = yaml.safe_load((root / 'execution-environment.yml').read_text())['dependencies']
    pins = [definition['ansible_core']['package_pip'], definition['ansible_runner']['package_pip'], *requirement_lines(root / 'requirements.txt')]
    python = ee_python()
    if python is None:
        return None, 'no Python 3.12 here (the execution environment\'s interpreter): pyenv install 3.12'
    key = hashlib.sha256(json.dumps([pins, subprocess.run([python, '-VV'], capture_output=True, text=True, check=False).stdout]).encode()).hexdigest()[:16]
    venv = pathlib.Path(collection_root().parents[2]) / 'deps' / ('ee-venv-' + key)
    if not (venv / '.complete').exists():
        shutil.rmtree(venv, ignore_errors=True)
        made = subprocess.run([python, '-m', 'venv', str(venv)], capture_output=True, text=True, timeout=300, check=False)
        if made.returncode == 0:
            made = subprocess.run([str(venv / 'bin' / 'pip'), 'install', '-q', *pins], capture_output=True, text=True, timeout=900, check=False)
        if made.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            return None, 'the execution environment\'s packages could not be installed here: ' + (made.stdout + made.stderr)[-500:]
        (venv / '.complete').write_text('\n'.join(pins) + '\n')
    return venv, None


def path_without_gcloud(tmp_path, venv):
    """PATH of the run: the virtualenv's bin, then the system's tools without the Cloud SDK (gcloud, gke-gcloud-auth-plugin,
    kubectl), as links in a folder of their own (gcloud is in /usr/bin here)."""
    tools = tmp_path / 'tools'
    tools.mkdir()
    for folder in ('/usr/local/bin', '/usr/bin'):
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            if 'gcloud' in name or name.startswith('kubectl') or name in ('gsutil', 'bq') or (tools / name).exists():
                continue
            (tools / name).symlink_to(os.path.join(folder, name))
    path = '%s:%s' % (venv / 'bin', tools)
    assert shutil.which('gcloud', path=path) is None and shutil.which('gke-gcloud-auth-plugin', path=path) is None
    return path


def test_a_gke_playbook_runs_with_only_the_execution_environments_packages_and_no_gcloud(tmp_path):
    """gke_a3high.yml through the Kubernetes stage on the sandbox (its GKE cluster a real kube-apiserver that takes only the
    sandbox's access token), run by the ansible-playbook of a virtualenv with only the execution environment's pip
    packages, on a PATH without gcloud and gke-gcloud-auth-plugin: gpudirect_kube_credentials auto picks google_auth,
    and kubernetes.core gets the token from google-auth (GCP_AUTH_KIND accesstoken, as a credential could set it). Then
    the teardown's Kubernetes stage deletes the objects the same way."""
    from sandbox import Sandbox   # pylint: disable=import-outside-toplevel
    from sandbox.kube.controlplane import ACCESS_TOKEN   # pylint: disable=import-outside-toplevel
    from sandbox.kube.gke import GkeClusters   # pylint: disable=import-outside-toplevel
    from playbook_runner import sandbox_environment   # pylint: disable=import-outside-toplevel
    venv, why = ee_virtualenv()
    if venv is None:
        pytest.skip(why)
    sandbox = Sandbox(latency=0.0, project='ee-project').start()
    sandbox.kube = GkeClusters()
    try:
        env = dict(sandbox_environment(sandbox, 'ee-project'), PATH=path_without_gcloud(tmp_path, venv), HOME=str(tmp_path),
                   GCP_AUTH_KIND='accesstoken', GCP_ACCESS_TOKEN=ACCESS_TOKEN, NO_PROXY='127.0.0.1,localhost',
                   ANSIBLE_ASYNC_DIR=str(tmp_path / 'async'))
        extra = {'gpudirect_project': 'ee-project', 'gpudirect_location': 'us-central1-a', 'gke_gpudirect_wait_delay': 1}

        def playbook(name, *args):
            return subprocess.run([str(venv / 'bin' / 'ansible-playbook'), '-i', str(collection_root() / 'inventories' / 'sandbox'),
                                   str(collection_root() / 'playbooks' / name), '-e', json.dumps(extra), *args],
                                  env=env, capture_output=True, text=True, timeout=900, check=False)
        run = playbook('gke_a3high.yml', '--skip-tags', 'nccl')
        kube = sandbox.kube.cluster('projects/ee-project/locations/us-central1-a/clusters/a3high')
        daemonsets = sorted(d['metadata']['name'] for d in kube.store.list('daemonsets.apps')) if kube else []
        # and the teardown's Kubernetes stage, which reaches the cluster the same way
        extra['gpudirect_machine_type'] = 'a3-highgpu-8g'
        teardown = playbook('gke_teardown.yml', '--tags', 'k8s') if run.returncode == 0 else None
        left = sorted(d['metadata']['name'] for d in kube.store.list('daemonsets.apps')) if kube else []
    finally:
        sandbox.kube.stop()
        sandbox.stop()
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
    core = subprocess.run([str(venv / 'bin' / 'python'), '-c', 'import ansible.release as r; print(r.__version__)'],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert re.search(r'\nDaemonSets [\w, -]+ on the 2 GPU nodes: ready', run.stdout), (core, run.stdout[-4000:])
    assert 'nccl-tcpx-installer' in daemonsets, daemonsets
    assert ACCESS_TOKEN not in run.stdout
    assert teardown.returncode == 0, teardown.stdout[-4000:] + teardown.stderr[-2000:]
    assert 'nccl-tcpx-installer' not in left, left
