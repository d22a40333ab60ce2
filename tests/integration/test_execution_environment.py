# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""execution-environment.yml rendered by the real ansible-builder (create: the build context, offline),
and meta/execution-environment.yml read by ansible-builder's own introspection, as a controller build
that includes this collection reads it. Building the image needs an engine and registries, which CI lacks."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile

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
