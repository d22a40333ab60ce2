"""tests/sandbox/kube/exec.py on its own: the WebSocket remote-command protocol and pod logs, spoken
to by an independent client (websocket-client, the library under the kubernetes Python client), with
the commands running in real podman containers of the stand-in image.

The full path (kubectl and kubernetes.core through the API stand-in) is test_kube_gke_cluster.py.
"""

import json
import os
import shutil
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from sandbox.kube import exec as kube_exec

websocket = pytest.importorskip('websocket')

pytestmark = pytest.mark.skipif(not (shutil.which('podman') and os.environ.get('CONTAINERS_CONF')),
                                reason='podman with CONTAINERS_CONF is needed: source tests/ci/podman.sh')
CLUSTER = 'test-kube-exec/%s' % uuid.uuid4().hex[:8]


def make_pod(name, containers, init_containers=()):
    return {'metadata': {'name': name, 'namespace': 'default', 'uid': str(uuid.uuid4())},
            'spec': {'nodeName': 'node-1', 'containers': list(containers), 'initContainers': list(init_containers)},
            'status': {}}


@pytest.fixture(scope='module')
def runtime():
    instance = kube_exec.PodRuntime()
    yield instance
    instance.remove_cluster(CLUSTER)


@pytest.fixture(scope='module')
def pod(runtime):
    """A pod with an init container and two containers, started as controllers.py starts one."""
    spec = make_pod('exec-test', [
        {'name': 'main', 'image': 'us-docker.pkg.dev/vendor/image:v1', 'command': ['/bin/sh', '-c'],
         'args': ['echo main-started; echo to-stderr >&2; exec sleep infinity'], 'env': [{'name': 'GREETING', 'value': 'hello'}]},
        {'name': 'pause', 'image': 'gke.gcr.io/pause:3.8'},
        {'name': 'ticker', 'image': 'busybox', 'command': ['sh', '-c', 'i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.2; done']},
    ], [{'name': 'init', 'image': 'ubuntu', 'command': ['nsenter', '-at', '1', '--', 'sh', '-c', 'modprobe x']}])
    states = runtime.start_pod(CLUSTER, spec)
    assert states['init'].state == 'terminated' and states['init'].exit_code == 0
    assert all(states[name].state == 'running' for name in ('main', 'pause', 'ticker'))
    spec['status'] = {'containerStatuses': [{'name': name, 'state': state.to_status()} for name, state in states.items()]}
    return spec


@pytest.fixture(scope='module')
def server(runtime, pod):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def do_GET(self):  # noqa: N802  (http.server's naming)
            split = urlsplit(self.path)
            query = parse_qs(split.query)
            if split.path.endswith('/log'):
                kube_exec.serve_log(runtime, self, pod, query)
            else:
                kube_exec.serve_exec(runtime, self, pod, query)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d' % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def run_exec(server, command, protocol='v4.channel.k8s.io', container='main', stdin_data=None):
    """-> (channel -> bytes, the negotiated subprotocol, whether the server closed with 1000)."""
    query = urlencode([('command', part) for part in command] + [('container', container), ('stdout', 'true'), ('stderr', 'true')]
                      + ([('stdin', 'true')] if stdin_data is not None else []))
    client = websocket.create_connection(server.replace('http', 'ws') + '/exec?' + query, subprotocols=[protocol], timeout=20)
    if stdin_data is not None:
        client.send_binary(b'\x00' + stdin_data)
        client.send_binary(bytes([255, 0]))   # v5 CLOSE signal for stdin
    channels = {}
    close_code = None
    while True:
        opcode, data = client.recv_data(control_frame=True)
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            close_code = int.from_bytes(data[:2], 'big')
            break
        if data:
            channels[data[0]] = channels.get(data[0], b'') + data[1:]
    client.close()
    return channels, client.subprotocol, close_code


def test_exec_v4_success_streams_stdout_and_stderr(server):
    channels, protocol, close_code = run_exec(server, ['sh', '-c', 'echo $GREETING; echo oops >&2'])
    assert protocol == 'v4.channel.k8s.io' and close_code == 1000
    assert channels[1] == b'hello\n' and channels[2] == b'oops\n'
    assert json.loads(channels[3]) == {'metadata': {}, 'status': 'Success'}


def test_exec_v4_non_zero_exit_is_a_failure_status_with_the_exit_code(server):
    channels, _protocol, _code = run_exec(server, ['sh', '-c', 'exit 3'])
    status = json.loads(channels[3])
    assert status['status'] == 'Failure' and status['reason'] == 'NonZeroExitCode'
    assert status['details']['causes'] == [{'reason': 'ExitCode', 'message': '3'}]
    assert status['message'].startswith('command terminated with non-zero exit code: ')


def test_exec_v5_stdin_and_close_signal(server):
    channels, protocol, close_code = run_exec(server, ['cat'], protocol='v5.channel.k8s.io', stdin_data=b'through stdin\n')
    assert protocol == 'v5.channel.k8s.io' and close_code == 1000
    assert channels[1] == b'through stdin\n' and json.loads(channels[3])['status'] == 'Success'


def test_exec_missing_binary_is_an_internal_error(server):
    channels, _protocol, _code = run_exec(server, ['/no/such/binary'])
    status = json.loads(channels[3])
    assert status['status'] == 'Failure' and status['reason'] == 'InternalError' and status['code'] == 500


def test_exec_refusals_are_the_real_api_400s(server):
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        run_exec(server, ['true'], container='nope')
    assert refused.value.status_code == 400
    assert json.loads(refused.value.resp_body)['message'] == 'container nope is not valid for pod exec-test'
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        run_exec(server, ['true'], protocol='v3.channel.k8s.io')
    assert refused.value.status_code == 400
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:   # no stream asked for (the kubelet's rule)
        websocket.create_connection(server.replace('http', 'ws') + '/exec?command=true&container=main',
                                    subprotocols=['v4.channel.k8s.io'], timeout=20)
    assert json.loads(refused.value.resp_body)['message'] == 'you must specify at least 1 of stdin, stdout, stderr'


def http_get(server, path):
    import urllib.request  # pylint: disable=import-outside-toplevel
    with urllib.request.urlopen(server + path, timeout=20) as answer:
        return answer.read().decode()


def test_logs_of_each_container_with_tail_and_timestamps(server):
    # stdout and stderr both, as the kubelet's log has them (their order across the two streams may vary)
    assert sorted(http_get(server, '/log?container=main').splitlines()) == ['main-started', 'to-stderr']
    assert 'nsenter: host namespaces are not entered; skipped: sh -c modprobe x' in http_get(server, '/log?container=init')
    assert 'started without a command; idling' in http_get(server, '/log?container=pause')
    stamped = http_get(server, '/log?container=main&timestamps=true&tailLines=1').splitlines()
    assert len(stamped) == 1 and stamped[0][4] == '-' and stamped[0][29:31] == 'Z '


def test_log_without_container_on_a_multi_container_pod_is_refused(server):
    import urllib.error  # pylint: disable=import-outside-toplevel
    with pytest.raises(urllib.error.HTTPError) as refused:
        http_get(server, '/log')
    body = json.loads(refused.value.read())
    assert refused.value.code == 400
    assert body['message'] == 'a container name must be specified for pod exec-test, choose one of: [init main pause ticker]'


def test_log_follow_streams_new_lines_until_the_client_leaves(server):
    import urllib.request  # pylint: disable=import-outside-toplevel
    with urllib.request.urlopen(server + '/log?container=ticker&follow=true&tailLines=1', timeout=20) as answer:
        assert answer.headers['Transfer-Encoding'] == 'chunked'
        first, second, third = answer.readline(), answer.readline(), answer.readline()
    numbers = [int(line.split()[1]) for line in (first, second, third)]
    assert numbers == [numbers[0], numbers[0] + 1, numbers[0] + 2]   # new lines arrive as the container prints them


def test_exec_with_a_tty_follows_resize_messages(server):
    query = urlencode([('command', 'sh'), ('command', '-c'), ('command', 'sleep 1; stty size'), ('container', 'main'),
                       ('stdout', 'true'), ('tty', 'true')])
    client = websocket.create_connection(server.replace('http', 'ws') + '/exec?' + query, subprotocols=['v5.channel.k8s.io'], timeout=20)
    client.send_binary(b'\x04' + json.dumps({'Width': 123, 'Height': 45}).encode())
    output, status = b'', None
    while True:
        opcode, data = client.recv_data(control_frame=True)
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            break
        if data[:1] == b'\x01':
            output += data[1:]
        elif data[:1] == b'\x03':
            status = json.loads(data[1:])
    client.close()
    assert output.strip() == b'45 123' and status['status'] == 'Success'
