"""gpudirect_rxdm run as Ansible runs it on a target (this machine), with podman's Docker API as the engine.

Covers what the Molecule scenarios do not: drift (another version pair recreates the container),
check mode with diff, a refused version pair creating nothing, and state=absent. Needs
GPUDIRECT_DOCKER_SOCKET and the stand-in images and device nodes of tests/ci/podman.sh.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import docker_api

SOCKET = os.environ.get('GPUDIRECT_DOCKER_SOCKET')
pytestmark = pytest.mark.skipif(not SOCKET, reason='GPUDIRECT_DOCKER_SOCKET is not set: source tests/ci/podman.sh')
# The collections path the tests import our collection from: <path>/ansible_collections/aiinfra/gpudirect/...
COLLECTIONS_PATH = str(pathlib.Path(docker_api.__file__).parents[6])
NAME = 'test-rxdm-%d' % os.getpid()


def rxdm(check=False, diff=False, **args):
    """Run the module once as Ansible runs it on a target (python, JSON arguments file); return its result."""
    args = dict(dict(technology='TCPX', name=NAME, pull='missing', ready_timeout=30, docker_socket=SOCKET), **args)
    args.update(_ansible_check_mode=check, _ansible_diff=diff)
    with tempfile.NamedTemporaryFile('w', suffix='.json') as handle:
        json.dump({'ANSIBLE_MODULE_ARGS': args}, handle)
        handle.flush()
        out = subprocess.run([sys.executable, '-m', 'ansible_collections.aiinfra.gpudirect.plugins.modules.gpudirect_rxdm',
                              handle.name], env=dict(os.environ, PYTHONPATH=COLLECTIONS_PATH),
                             capture_output=True, text=True, timeout=180, check=False)
    return json.loads(out.stdout)


@pytest.fixture
def engine():
    client = docker_api.DockerClient(SOCKET)
    yield client
    found = client.inspect_container(NAME)
    if found:
        client.remove_container(found['Id'])


def test_start_rerun_drift_check_mode_and_remove(engine):
    planned = rxdm(check=True)
    assert planned['changed'] and planned['container_id'] is None
    assert engine.inspect_container(NAME) is None            # check mode created nothing

    started = rxdm()
    assert started['changed'] and started['ready']
    assert 'Rx Rule Manager server(s) started' in started['ready_line']
    assert started['version_pair']['name'] == 'compute-engine-guide'

    again = rxdm()
    assert not again['changed'] and again['container_id'] == started['container_id']

    drift_plan = rxdm(check=True, diff=True, rxdm_version='v2.0.12', plugin_version='v3.1.9')
    assert drift_plan['changed']
    assert any('configuration changed (image)' in a for a in drift_plan['actions'])
    assert drift_plan['diff']['after']['image'].endswith('tcpgpudmarxd-dev:v2.0.12')
    assert engine.inspect_container(NAME)['Id'].startswith(started['container_id'])

    drifted = rxdm(rxdm_version='v2.0.12', plugin_version='v3.1.9')
    assert drifted['changed'] and drifted['ready'] and drifted['container_id'] != started['container_id']

    removed = rxdm(state='absent')
    assert removed['changed'] and engine.inspect_container(NAME) is None
    assert not rxdm(state='absent')['changed']


def test_unknown_pair_fails_naming_the_fields_and_creates_nothing(engine):
    result = rxdm(rxdm_version='v2.0.12', plugin_version='v1.0.13-1')
    assert result.get('failed')
    assert result['msg'].startswith('rxdm_version / plugin_version:')
    assert 'use one of' in result['msg']
    assert engine.inspect_container(NAME) is None


def test_a_foreign_container_of_that_name_is_adopted_by_recreating_it(engine):
    engine.create_container(NAME, {'Image': 'localhost/aiinfra-standin/rxdm-never-ready:latest', 'Cmd': []})
    result = rxdm()
    assert result['changed'] and result['ready']
    assert any('not created by this collection' in a for a in result['actions'])
