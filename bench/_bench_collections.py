"""The ANSIBLE_COLLECTIONS_PATH a benchmark runs its playbooks with."""

import os
import pathlib
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get('GPUDIRECT_BUILD') or ROOT / 'build')


def collections_dir(links, profile=False):
    """A temporary collections path holding ``links`` ({(namespace, name): target directory}); with ``profile``,
    ansible.posix (for its profile_tasks callback) from the `ansible` wheel scripts/test keeps in
    $GPUDIRECT_BUILD/deps/wheel."""
    path = pathlib.Path(tempfile.mkdtemp(prefix='bench-collections-'))
    for (namespace, name), target in links.items():
        (path / 'ansible_collections' / namespace).mkdir(parents=True, exist_ok=True)
        (path / 'ansible_collections' / namespace / name).symlink_to(target)
    if profile:
        wheels = sorted((BUILD / 'deps' / 'wheel').glob('ansible-*.whl'))
        if not wheels:
            raise SystemExit('--profile takes ansible.posix from the ansible wheel in %s: run `bash scripts/test` once' % (BUILD / 'deps'))
        with zipfile.ZipFile(wheels[-1]) as wheel:
            wheel.extractall(path, [name for name in wheel.namelist() if name.startswith('ansible_collections/ansible/posix/')])
    return path
