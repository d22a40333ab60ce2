# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl_container and nccl_perf's gce mode, run in-process as Ansible hands them their arguments, against a real
engine: podman's Docker API service (tests/ci/podman.sh) with the stand-in plugin image, whose run scripts print
SYNTHETIC nccl-tests output (tests/images/installer/scripts/README). Without GPUDIRECT_DOCKER_SOCKET the engine
tests are skipped; the input checks need no engine."""
from __future__ import annotations

import os
import uuid

import pytest

from module_runner import run_module
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import docker_api
from ansible_collections.aiinfra.gpudirect.plugins.modules import nccl_container, nccl_perf

SOCKET = os.environ.get('GPUDIRECT_DOCKER_SOCKET')
needs_engine = pytest.mark.skipif(not SOCKET, reason='GPUDIRECT_DOCKER_SOCKET is not set: source tests/ci/podman.sh')


@pytest.fixture
def name():
    """A container name of this test only (tests run in parallel on one engine); removed afterwards."""
    value = 'test-nccl-container-%s' % uuid.uuid4().hex[:8]
    yield value
    client = docker_api.DockerClient(SOCKET)
    found = client.inspect_container(value)
    if found:
        client.remove_container(found['Id'])


def container(name, check_mode=False, diff=False, **args):
    base = {'machine_type': 'a3-megagpu-8g', 'name': name, 'pull': 'missing', 'docker_socket': SOCKET}
    return run_module(nccl_container.main, dict(base, **args), check_mode=check_mode, diff=diff)


@pytest.mark.parametrize('args, message', [
    ({'ulimits': {'memlok': -1}}, 'ulimits: memlok is not a ulimit name'),
    ({'ulimits': {'memlock': 'lots'}}, "ulimits.memlock: 'lots' is not a number"),
    ({'plugin_version': 'v9.9.9'}, 'plugin_version: plugin v9.9.9 is not in a known-good TCPXO pair'),
    ({'machine_type': 'a3-ultragpu-8g'}, 'technology: RDMA has no Compute Engine host stack'),
])
def test_bad_input_names_the_option_before_the_engine(args, message):
    result = container('unused', docker_socket='/nonexistent/docker.sock', **args)
    assert result['failed'] and result['msg'].startswith(message), result['msg']


def test_ulimits_replace_the_seeds_values_by_name_and_add_others():
    spec = nccl_container.container_spec('TCPX', {'memlock': 8388608, 'nofile': '20000'})
    assert dict(spec.ulimits) == {'memlock': '8388608', 'stack': '67108864', 'nofile': '20000'}
    assert nccl_container.container_spec('TCPX', {}).ulimits == (('memlock', '-1'), ('stack', '67108864'))


@needs_engine
def test_started_is_idempotent_and_absent_removes(name):
    would = container(name, check_mode=True, diff=True)
    assert would['changed'] and would['created'] and would['container_id'] is None
    assert docker_api.DockerClient(SOCKET).inspect_container(name) is None
    started = container(name)
    assert started['changed'] and started['created'] and started['image'].endswith('nccl-plugin-gpudirecttcpx-dev:v1.0.13-1')
    assert started['actions'] == ['create: no container of that name']
    again = container(name, diff=True)
    assert not again['changed'] and not again['created'] and again['container_id'] == started['container_id']
    assert again['diff']['before'] == again['diff']['after']
    removed = container(name, state='absent')
    assert removed['changed'] and docker_api.DockerClient(SOCKET).inspect_container(name) is None
    assert not container(name, state='absent')['changed']


@needs_engine
def test_a_drifted_container_is_recreated_and_not_reported_as_created(name):
    client = docker_api.DockerClient(SOCKET)
    body = {'Image': container(name, check_mode=True)['image'], 'Cmd': ['daemon']}
    client.start_container(client.create_container(name, body))   # same name, made outside the collection
    result = container(name)
    assert result['changed'] and not result['created']
    assert result['actions'] == ['recreate: it was not created by this collection (no configuration label)']


@needs_engine
def test_gce_mode_runs_the_seeds_test_in_the_started_container(name):
    container(name)
    result = run_module(nccl_perf.main, {'mode': 'gce', 'machine_type': 'a3-megagpu-8g', 'hosts': ['vm-1', 'vm-2'],
                                         'container': name, 'preflight': False, 'docker_socket': SOCKET})
    assert result['rc'] == 0 and not result['timed_out'], result
    # The stand-in logs the plugin's network only when libnccl-net.so is in the mounted plugin directory.
    if os.path.exists('/var/lib/tcpxo/lib64/libnccl-net.so'):
        assert result['parsed']['networks'] == ['FasTrak'] and result['verdict']['passed'], result['verdict']['summary']
    else:
        assert result['parsed']['networks'] == ['Socket'] and 'NCCL used Socket' in result['verdict']['summary']
    assert [r['size'] for r in result['parsed']['collectives'][0]['rows']][-1] == 512 * 1024 ** 2
    container(name, state='absent')
    gone = run_module(nccl_perf.main, {'mode': 'gce', 'machine_type': 'a3-megagpu-8g', 'hosts': ['vm-1', 'vm-2'],
                                       'container': name, 'preflight': False, 'docker_socket': SOCKET})
    assert gone['failed'] and gone['msg'].startswith('container: the NCCL test container %s is not running on this host' % name)
