"""nccl_plugin's decisions that need no container engine: what it reads from an install directory, when it
reinstalls, and the profile it writes (the install itself runs against podman in Molecule, tests/ci/molecule.sh)."""
from __future__ import annotations

import json
import os
import shlex
import subprocess

from ansible_collections.aiinfra.gpudirect.plugins.modules import nccl_plugin

REQUIRED = ['libnccl-net.so', 'libnccl.so.2']


def test_no_stamp_means_install(tmp_path):
    assert nccl_plugin.read_stamp(str(tmp_path)) is None
    assert nccl_plugin.install_reasons(None, 'sha256:aaaa', [], REQUIRED) == ['install: no record of an install in this directory']


def test_a_stamp_of_the_same_image_with_every_library_is_not_reinstalled(tmp_path):
    (tmp_path / nccl_plugin.STAMP_FILE).write_text(json.dumps({'image_id': 'sha256:' + 'a' * 64}))
    stamp = nccl_plugin.read_stamp(str(tmp_path))
    assert nccl_plugin.install_reasons(stamp, 'sha256:' + 'a' * 64, REQUIRED, REQUIRED) == []


def test_another_image_or_a_missing_library_is_named(tmp_path):
    stamp = {'image_id': 'sha256:' + 'a' * 64}
    reasons = nccl_plugin.install_reasons(stamp, 'sha256:' + 'b' * 64, ['libnccl.so.2'], REQUIRED)
    assert len(reasons) == 2
    assert reasons[0].startswith('install: installed by image ') and reasons[1] == 'install: missing libnccl-net.so'


def test_a_broken_stamp_reads_as_none(tmp_path):
    (tmp_path / nccl_plugin.STAMP_FILE).write_text('{not json')
    assert nccl_plugin.read_stamp(str(tmp_path)) is None


def test_present_libraries_lists_only_shared_libraries(tmp_path):
    for name in ('libnccl.so.2', 'libnccl-net.so', 'README', 'lib-notes.txt'):
        (tmp_path / name).write_text('')
    assert nccl_plugin.present_libraries(str(tmp_path)) == ['libnccl-net.so', 'libnccl.so.2']
    assert nccl_plugin.present_libraries(str(tmp_path / 'missing')) == []


def test_the_profile_exports_the_catalogs_environment_and_sources_in_sh(tmp_path):
    env = nccl_plugin.nccl_profile_env('TCPXO', logging=False)
    assert env, 'the catalog has a TCPXO workload environment'
    env = dict(env, LD_LIBRARY_PATH='${LD_LIBRARY_PATH}:/usr/local/nvidia/lib64', ODD="it's")
    profile = tmp_path / 'nccl-env-profile.sh'
    profile.write_text(nccl_plugin.render_profile('TCPXO', env))
    names = ' '.join(env)
    script = 'LD_LIBRARY_PATH=/base; . %s; for n in %s; do eval "echo $n=\\${$n}"; done' % (shlex.quote(str(profile)), names)
    out = subprocess.run(['sh', '-c', script], capture_output=True, text=True, check=True).stdout.splitlines()
    seen = dict(line.split('=', 1) for line in out)
    assert seen['LD_LIBRARY_PATH'] == '/base:/usr/local/nvidia/lib64'
    assert seen['ODD'] == "it's"
    for name, value in env.items():
        if '${' not in value:
            assert seen[name] == value, name


def test_logging_adds_the_manuals_debug_variables():
    quiet, loud = nccl_plugin.nccl_profile_env('TCPXO', logging=False), nccl_plugin.nccl_profile_env('TCPXO', logging=True)
    assert set(quiet) < set(loud) and 'NCCL_DEBUG' in loud


def test_versions_from_the_installed_files(tmp_path):
    assert nccl_plugin.versions(str(tmp_path)) == (None, None)
    (tmp_path / 'libnccl.so.2.21.5').write_text('')
    os.symlink('libnccl.so.2.21.5', tmp_path / 'libnccl.so')
    (tmp_path / 'libnccl-net.so').write_bytes(b'\x7fELF...NCCL FasTrak plugin ver. 1.0.3\x00...')
    assert nccl_plugin.versions(str(tmp_path)) == ('1.0.3', '2.21.5')
