"""module_utils/cos/docker_api.py against a real engine: podman's Docker API service (tests/ci/podman.sh).

The engine tests need GPUDIRECT_DOCKER_SOCKET (exported by tests/ci/podman.sh, with the stand-in
images built); without it they are skipped, and with it an unreachable socket is a failure. The
pure helpers are tested without an engine.
"""

import os
import uuid

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import docker_api
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks

SOCKET = os.environ.get('GPUDIRECT_DOCKER_SOCKET')
needs_engine = pytest.mark.skipif(not SOCKET, reason='GPUDIRECT_DOCKER_SOCKET is not set: source tests/ci/podman.sh')
TCPX = host_stacks.host_stack('TCPX')
RXDM_IMAGE = host_stacks.version_pair('TCPX').rxdm_image          # stand-in tagged with the catalog's reference
NEVER_READY_IMAGE = 'localhost/aiinfra-standin/rxdm-never-ready:latest'


@pytest.fixture
def client():
    engine = docker_api.DockerClient(SOCKET, timeout=60)
    assert engine.ping(), 'no engine answers on %s' % SOCKET
    return engine


@pytest.fixture
def name(client):
    """A unique container name, removed after the test whatever happened."""
    value = 'test-docker-api-%s' % uuid.uuid4().hex[:8]
    yield value
    found = client.inspect_container(value)
    if found:
        client.remove_container(found['Id'])


def shell_body(image, script, **host_config):
    return {'Image': image, 'Entrypoint': ['/bin/sh', '-c', script], 'Cmd': [], 'HostConfig': host_config}


# -- engine ----------------------------------------------------------------------------------------


@needs_engine
def test_version_negotiates_the_api_version_we_speak(client):
    assert client.version()['ApiVersion'] >= docker_api.API_VERSION


@needs_engine
def test_catalog_rxdm_spec_is_created_started_inspected_and_removed(client, name):
    body = docker_api.create_body(TCPX.rxdm, RXDM_IMAGE, 'tests')
    container_id = client.create_container(name, body)
    client.start_container(container_id)

    line, seconds = docker_api.wait_for_log_line(client, container_id, TCPX.rxdm_ready_line, timeout=30)

    assert TCPX.rxdm_ready_line in line
    assert seconds is not None and 0 <= seconds < 30
    info = client.inspect_container(name)
    assert info['State']['Running']
    assert info['HostConfig']['NetworkMode'] == 'host'
    assert info['HostConfig']['Privileged'] is True
    assert {b.split(':')[0] + ':' + b.split(':')[1] for b in info['HostConfig']['Binds']} == set(TCPX.rxdm.volumes)
    assert info['Config']['Entrypoint'][0] == TCPX.rxdm.entrypoint
    assert docker_api.labelled_summary(info) == docker_api.container_summary(TCPX.rxdm, RXDM_IMAGE)
    logs = client.container_logs(container_id)
    assert ' '.join(TCPX.rxdm.args) in logs        # the stand-in prints the arguments it got
    assert client.remove_container(container_id) is True
    assert client.inspect_container(name) is None
    assert client.remove_container(container_id) is False


@needs_engine
def test_devices_are_passed_through_and_the_cgroup_denies_others(client, name):
    # Stand-in node of the NVIDIA major: opening an allowed one gives ENXIO (no driver behind it);
    # a node of the same major that the container makes itself is refused by the device cgroup.
    script = ('head -c 1 /dev/nvidia0 2>&1; mknod /dev/other c 195 1 && head -c 1 /dev/other 2>&1; true')
    body = shell_body(RXDM_IMAGE, script, Devices=[
        {'PathOnHost': '/dev/nvidia0', 'PathInContainer': '/dev/nvidia0', 'CgroupPermissions': 'rwm'}])
    code, logs = docker_api.run_to_completion(client, name, body, timeout=60)
    assert code == 0
    first, second = logs.splitlines()[:2]
    assert 'No such device or address' in first
    assert 'Operation not permitted' in second


@needs_engine
def test_run_to_completion_returns_exit_code_and_logs_and_removes_the_container(client, name):
    code, logs = docker_api.run_to_completion(client, name, shell_body(RXDM_IMAGE, 'echo out; echo err >&2; exit 3'), 60)
    assert code == 3
    assert logs.splitlines() == ['out', 'err']
    assert client.inspect_container(name) is None


@needs_engine
def test_wait_times_out_with_the_log_tail(client, name):
    container_id = client.create_container(name, docker_api.create_body(TCPX.rxdm, NEVER_READY_IMAGE, 'tests'))
    client.start_container(container_id)
    with pytest.raises(docker_api.WaitTimeout) as caught:
        docker_api.wait_for_log_line(client, container_id, TCPX.rxdm_ready_line, timeout=3, tail_lines=5)
    assert 'within 3 s' in str(caught.value)
    assert 'Number of GPUs detected 7' in caught.value.log_tail


@needs_engine
def test_wait_reports_a_container_that_exits_first(client, name):
    container_id = client.create_container(name, shell_body(RXDM_IMAGE, 'echo dying; exit 7'))
    client.start_container(container_id)
    with pytest.raises(docker_api.ContainerExited) as caught:
        docker_api.wait_for_log_line(client, container_id, 'never printed', timeout=30)
    assert caught.value.exit_code == 7
    assert 'dying' in caught.value.log_tail


@needs_engine
def test_exec_run_returns_exit_code_and_both_streams_or_a_timeout(client, name):
    container_id = client.create_container(name, shell_body(RXDM_IMAGE, 'sleep 60'))
    client.start_container(container_id)
    code, output, timed_out = docker_api.exec_run(client, name, ['sh', '-c', 'echo out; echo err >&2; exit 3'], timeout=30)
    assert (code, timed_out) == (3, False) and output.split() == ['out', 'err']
    assert docker_api.exec_run(client, name, ['sleep', '10'], timeout=1) == (None, '', True)


@needs_engine
def test_errors_are_typed(client, name):
    assert client.inspect_container('no-such-container-%s' % name) is None
    assert client.inspect_image('localhost/no-such-image:missing') is None
    with pytest.raises(docker_api.NotFound):
        client.start_container('no-such-container-%s' % name)
    client.create_container(name, shell_body(RXDM_IMAGE, 'true'))
    with pytest.raises(docker_api.Conflict):
        client.create_container(name, shell_body(RXDM_IMAGE, 'true'))


@needs_engine
def test_pull_policy(client):
    assert docker_api.ensure_image(client, RXDM_IMAGE, 'missing')[1] == 'present'
    assert docker_api.ensure_image(client, RXDM_IMAGE, 'never')[1] == 'present'
    missing = 'localhost/aiinfra-standin/absent:never-built'
    with pytest.raises(docker_api.DockerError, match='pull is never'):
        docker_api.ensure_image(client, missing, 'never')
    assert docker_api.ensure_image(client, missing, 'missing', check_mode=True) == (None, 'would pull')


def test_unreachable_socket_names_the_socket(tmp_path):
    path = str(tmp_path / 'absent.sock')
    with pytest.raises(docker_api.DockerConnectionError, match='unix://%s' % path):
        docker_api.DockerClient(path).ping()


# -- pure helpers ----------------------------------------------------------------------------------


def test_demux_strips_stream_headers_and_passes_tty_logs_through():
    framed = b'\x01\x00\x00\x00\x00\x00\x00\x04out\n' + b'\x02\x00\x00\x00\x00\x00\x00\x04err\n'
    assert docker_api.demux_logs(framed) == b'out\nerr\n'
    assert docker_api.demux_logs(b'plain tty output\n') == b'plain tty output\n'


@pytest.mark.parametrize('ref, expected', [
    ('us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd', ('us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd', 'latest')),
    ('us-docker.pkg.dev/x/tcpgpudmarxd-dev:v1.0.19', ('us-docker.pkg.dev/x/tcpgpudmarxd-dev', 'v1.0.19')),
    ('registry:5000/repo/name', ('registry:5000/repo/name', 'latest')),
    ('repo/name@sha256:abc', ('repo/name', 'sha256:abc')),
])
def test_split_image_ref(ref, expected):
    assert docker_api.split_image_ref(ref) == expected


def test_parse_timestamp_keeps_microseconds_and_offsets():
    utc = docker_api.parse_timestamp('2026-11-30T01:36:43.148484243Z')
    assert utc.microsecond == 148484
    assert docker_api.parse_timestamp('2026-11-30T02:36:43.148484+01:00') == utc
    assert docker_api.parse_timestamp('garbage') is None


def test_create_body_translates_the_seed_docker_run():
    spec = host_stacks.host_stack('TCPXO').rxdm
    body = docker_api.create_body(spec, 'img:v1', 'tests')
    assert body['Cmd'] == ['--num_hops=2', '--num_nics=8']
    assert [d['PathOnHost'] for d in body['HostConfig']['Devices']] == list(spec.devices)
    assert body['HostConfig']['NetworkMode'] == 'host'
    assert 'AutoRemove' not in body['HostConfig']      # kept so its logs survive an exit
    assert body['Env'] == ['LD_LIBRARY_PATH=/usr/local/nvidia/lib64']
    tcpx_nccl = docker_api.create_body(host_stacks.host_stack('TCPX').nccl_container, 'img', 'tests')['HostConfig']
    assert tcpx_nccl['ShmSize'] == 1024 ** 3
    assert tcpx_nccl['UsernsMode'] == 'host'
    assert {'Name': 'memlock', 'Soft': -1, 'Hard': -1} in tcpx_nccl['Ulimits']


def test_the_tcpx_test_container_is_interactive_as_the_seeds_run_tcpx_container_dash_it():
    tcpx = docker_api.create_body(host_stacks.host_stack('TCPX').nccl_container, 'img', 'tests')
    assert (tcpx['Tty'], tcpx['OpenStdin'], tcpx['Cmd']) == (True, True, ['shell'])
    tcpxo = docker_api.create_body(host_stacks.host_stack('TCPXO').nccl_container, 'img', 'tests')
    assert 'Tty' not in tcpxo and tcpxo['Cmd'] == ['daemon'] and tcpxo['HostConfig']['ShmSize'] == 8 * 1024 ** 3
    # Only a container that asks for it carries the key, so labels written before it existed still match.
    assert 'interactive' not in docker_api.container_summary(host_stacks.host_stack('TCPX').rxdm, 'img')
    assert docker_api.container_summary(host_stacks.host_stack('TCPX').nccl_container, 'img')['interactive'] is True


def test_missing_devices(tmp_path):
    regular = tmp_path / 'file'
    regular.write_text('')
    assert docker_api.missing_devices(['/dev/null', str(regular), str(tmp_path / 'absent')]) == [
        str(regular), str(tmp_path / 'absent')]
