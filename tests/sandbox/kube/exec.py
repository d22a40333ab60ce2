"""``pods/log`` and ``pods/exec`` of the Kubernetes API stand-in, with podman containers standing in
for the Pods' containers.

SIMULATION (the container runtime).  A real node's kubelet pulls each container's image and runs it
with the Pod's volumes, devices, resources and network.  The stand-in runs every container of a Pod
as a podman container of ONE locally built image, ``STANDIN_IMAGE`` (tests/images/kube-pod: Debian
minbase plus labelled stand-ins for the vendor tools the seeds' Pods call; its tools/README lists
them).  The image rule (``standin_image_for``): every image reference, whatever its registry, tag or
digest, maps to ``STANDIN_IMAGE``; the reference the Pod asked for is kept in the container's labels
and reported back in ``containerStatuses[].image``.  Further rules, each what the stand-in does
instead of the real thing:

- the container runs the Pod's ``command`` + ``args`` with its ``env`` values (``valueFrom`` is not
  resolved), ``workingDir`` and the Pod's hostname; a container without ``command`` runs the
  stand-in's idle program (``/standin/idle``, as ``pause`` does), since the vendor image's own
  entrypoint is not known here;
- no volume, device, resource limit, capability or privilege is applied, and the network is podman's
  ``none``: nothing a Pod runs can reach the host or the network;
- init containers run one after another to completion before the main containers start; a failing
  one leaves the Pod Pending with its terminated status (the real kubelet retries with back-off);
- logs are the container's stdout and stderr as podman records them.

``pods/exec`` speaks the WebSocket remote-command protocols that kubectl 1.33 (``v5.channel.k8s.io``;
it falls back to SPDY only when the upgrade fails) and the kubernetes Python client behind
``kubernetes.core.k8s_exec`` (``v4.channel.k8s.io``) ask for.  Every binary message is one channel
byte and the payload: 0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize (``{"Width": W, "Height": H}``),
255 close (v5: ``[255, N]`` half-closes stream N).  Channel numbers and protocol names:
kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/util/remotecommand/constants.go.  After
the command ends, channel 3 carries a metav1.Status as the kubelet writes it
(staging/src/k8s.io/kubelet/pkg/cri/streaming/remotecommand/exec.go ``ServeExec``): ``{"status":
"Success"}``, or ``{"status": "Failure", "reason": "NonZeroExitCode", "details": {"causes":
[{"reason": "ExitCode", "message": "N"}]}, "message": "command terminated with non-zero exit code:
..."}`` (metav1.StatusCause's Go field ``Type`` is ``reason`` in JSON); then the server closes
the WebSocket normally (1000), which is how both clients learn the stream ended.  As in kubelet's
websocket.go ``createWebSocketStreams``, an empty message on the lowest writable channel tells the
client the streams are open.  The WebSocket server side is the
standard library only (RFC 6455: handshake with Sec-WebSocket-Accept, masked client frames,
fragmentation, ping/pong, close); one thread owns the socket, so TLS reads and writes never race.

Refusals, as pkg/registry/core/pod/strategy.go makes them (400 BadRequest): a container name the Pod
does not have (``container X is not valid for pod P``), no container named on a Pod with several
(``a container name must be specified for pod P, choose one of: [a b]``), exec on a Pod with no
node (``pod P does not have a host assigned``; its logs are an empty 200 answer, as LogLocation's).
As the kubelet's remotecommand options
(staging/src/k8s.io/kubelet/pkg/cri/streaming/remotecommand/httpstream.go ``NewOptions``): no stream
asked for is 400 ``you must specify at least 1 of stdin, stdout, stderr``, and with a TTY stderr is
dropped (it travels on the terminal).  A container that has not started answers as the kubelet does:
``container "C" in pod "P" is waiting to start: REASON``.  A command podman cannot start (missing
binary, empty command) ends with an InternalError Status on channel 3, as a CRI exec failure does.

Use (``controllers.py`` owns the Pod lifecycle)::

    runtime = PodRuntime()                       # or PodRuntime(enabled=False): no containers at all
    runtime = SyntheticRuntime(exec_argv)        # no podman: containers "run" at once, exec runs exec_argv(...)
    runtime.start_pod(cluster_key, pod)          # blocking; -> {container: state} (see ContainerState)
    runtime.states(pod)                          # current states of its main containers
    runtime.remove_pod(pod); runtime.remove_cluster(cluster_key)
    install_handlers(cluster, runtime)           # cluster.subresource_handlers['pods/log'|'pods/exec']
"""

import base64
import hashlib
import json
import os
import pathlib
import re
import select
import shutil
import struct
import subprocess
import sys
import threading
import time

STANDIN_IMAGE = 'localhost/aiinfra-standin/kube-pod:latest'   # tests/images/build.py KUBE_POD
IMAGE_DIR = pathlib.Path(__file__).resolve().parents[2] / 'images'
LABEL_CLUSTER = 'aiinfra.kube.cluster'
LABEL_POD_UID = 'aiinfra.kube.pod-uid'
LABEL_IMAGE = 'aiinfra.kube.image'
IDLE = '/standin/idle'

WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'   # RFC 6455 section 1.3
EXEC_PROTOCOLS = ('v5.channel.k8s.io', 'v4.channel.k8s.io', 'channel.k8s.io')
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


def standin_image_for(image):
    """The image rule: every Pod image runs as the one stand-in image (see the module docstring)."""
    del image
    return STANDIN_IMAGE


def _truthy(query, name, default=False):
    values = query.get(name)
    if not values:
        return default
    return str(values[-1]).lower() in ('true', '1', 'yes')


def _safe(text):
    return re.sub(r'[^a-zA-Z0-9_.-]', '-', text)


class ContainerState:
    """What the runtime knows about one container: ``waiting`` (reason), ``running`` or ``terminated``."""

    def __init__(self, state, reason=None, exit_code=None, started_at=None, finished_at=None, container_id=None):
        self.state = state
        self.reason = reason
        self.exit_code = exit_code
        self.started_at = started_at
        self.finished_at = finished_at
        self.container_id = container_id

    def to_status(self):
        """The ``state`` field of a containerStatus."""
        if self.state == 'running':
            return {'running': {'startedAt': self.started_at}}
        if self.state == 'terminated':
            return {'terminated': {'exitCode': self.exit_code, 'reason': 'Completed' if self.exit_code == 0 else 'Error',
                                   'startedAt': self.started_at, 'finishedAt': self.finished_at,
                                   'containerID': 'containerd://' + (self.container_id or '')}}
        return {'waiting': {'reason': self.reason or 'ContainerCreating'}}


def _k8s_time(podman_time):
    """podman's '2026-11-30T08:07:36.868735185Z' -> the API's second-precision '2026-11-30T08:07:36Z'."""
    if not podman_time or podman_time.startswith('0001-'):
        return None
    return podman_time[:19] + 'Z'


class PodRuntime:
    """Podman containers standing in for the containers of Pods (see the module docstring)."""

    def __init__(self, enabled=True, podman=None):
        self.enabled = enabled
        self.podman = podman or shutil.which('podman') or 'podman'
        self._image_lock = threading.Lock()
        self._image_ready = False

    # image -----------------------------------------------------------------------------------
    def ensure_image(self):
        """Build the stand-in image once per process (tests/images/build.py skips an up-to-date one)."""
        with self._image_lock:
            if self._image_ready:
                return
            sys.path.insert(0, str(IMAGE_DIR))
            try:
                import build as image_build  # pylint: disable=import-outside-toplevel,import-error
            finally:
                sys.path.remove(str(IMAGE_DIR))
            image_build.build_base()
            image_build.build_kube_pod()   # a no-op when tests/ci/podman.sh has built it already
            self._image_ready = True

    # names -----------------------------------------------------------------------------------
    @staticmethod
    def container_name(pod, container):
        meta = pod['metadata']
        return 'k8s_%s_%s_%s_%s' % (_safe(container), _safe(meta['name']), _safe(meta.get('namespace', 'default')), meta['uid'][:12])

    def _run(self, *args, check=False, timeout=120):
        return subprocess.run((self.podman,) + args, capture_output=True, text=True, timeout=timeout, check=check)

    # lifecycle -------------------------------------------------------------------------------
    def _podman_run_args(self, cluster_key, pod, container, detach):
        meta, spec = pod['metadata'], pod['spec']
        args = ['run', '--name', self.container_name(pod, container['name']), '--network=none',
                '--hostname', (spec.get('hostname') or meta['name'])[:63],
                '--label', '%s=%s' % (LABEL_CLUSTER, cluster_key), '--label', '%s=%s' % (LABEL_POD_UID, meta['uid']),
                '--label', '%s=%s' % (LABEL_IMAGE, container.get('image', ''))]
        if detach:
            args.append('-d')
        for variable in container.get('env') or []:
            if 'value' in variable:
                args += ['-e', '%s=%s' % (variable['name'], variable['value'])]
        if container.get('workingDir'):
            args += ['--workdir', container['workingDir']]
        command = list(container.get('command') or [])
        if command:
            args += ['--entrypoint', json.dumps(command[:1]), standin_image_for(container.get('image'))]
            args += command[1:] + list(container.get('args') or [])
        else:
            args += ['--entrypoint', json.dumps([IDLE]), standin_image_for(container.get('image'))]
            args += list(container.get('args') or [])
        return args

    def start_pod(self, cluster_key, pod):
        """Run the Pod's init containers to completion, then start its containers; -> states by name.

        Stops at the first init container that fails (its state is returned as terminated)."""
        states = {}
        if not self.enabled:
            return {c['name']: ContainerState('running', started_at=_now()) for c in pod['spec']['containers']}
        self.ensure_image()
        for container in pod['spec'].get('initContainers') or []:
            self._run(*self._podman_run_args(cluster_key, pod, container, detach=False), timeout=300)
            states[container['name']] = self.state(pod, container['name'])
            if states[container['name']].exit_code != 0:
                return states
        for container in pod['spec']['containers']:
            result = self._run(*self._podman_run_args(cluster_key, pod, container, detach=True))
            if result.returncode != 0:
                states[container['name']] = ContainerState('waiting', reason='RunContainerError')
                sys.stderr.write('kube stand-in: podman run failed for %s: %s\n' % (container['name'], result.stderr.strip()))
                continue
            states[container['name']] = self.state(pod, container['name'])
        return states

    def state(self, pod, container):
        if not self.enabled:
            return ContainerState('running', started_at=_now())
        result = self._run('inspect', '--type', 'container', '--format', '{{json .State}} {{.Id}}',
                           self.container_name(pod, container))
        if result.returncode != 0:
            return ContainerState('waiting', reason='ContainerCreating')
        state_json, container_id = result.stdout.strip().rsplit(' ', 1)
        state = json.loads(state_json)
        started, finished = _k8s_time(state.get('StartedAt')), _k8s_time(state.get('FinishedAt'))
        if state.get('Running'):
            return ContainerState('running', started_at=started, container_id=container_id)
        if state.get('Status') in ('exited', 'stopped'):
            return ContainerState('terminated', exit_code=state.get('ExitCode', 0), started_at=started,
                                  finished_at=finished, container_id=container_id)
        return ContainerState('waiting', reason='ContainerCreating', container_id=container_id)

    def states(self, pod):
        """Current states of the Pod's main containers, by name (one podman call for all)."""
        if not self.enabled:
            return {}
        names = {self.container_name(pod, c['name']): c['name'] for c in pod['spec']['containers']}
        result = self._run('inspect', '--type', 'container', '--format', '{{.Name}} {{.Id}} {{json .State}}', *names)
        found = {}
        for line in result.stdout.splitlines():
            name, container_id, state_json = line.split(' ', 2)
            state = json.loads(state_json)
            started, finished = _k8s_time(state.get('StartedAt')), _k8s_time(state.get('FinishedAt'))
            if state.get('Running'):
                found[names[name]] = ContainerState('running', started_at=started, container_id=container_id)
            elif state.get('Status') in ('exited', 'stopped'):
                found[names[name]] = ContainerState('terminated', exit_code=state.get('ExitCode', 0), started_at=started,
                                                    finished_at=finished, container_id=container_id)
        return found

    def remove_pod(self, pod):
        if self.enabled:
            self._remove_by_label(LABEL_POD_UID, pod['metadata']['uid'])

    def remove_cluster(self, cluster_key):
        if self.enabled:
            self._remove_by_label(LABEL_CLUSTER, cluster_key)

    def _remove_by_label(self, label, value):
        listed = self._run('ps', '-a', '-q', '--filter', 'label=%s=%s' % (label, value))
        ids = listed.stdout.split()
        if ids:
            self._run('rm', '-f', '-t', '0', *ids)

    # logs and exec ---------------------------------------------------------------------------
    def logs_command(self, pod, container, follow=False, tail=None, timestamps=False, since_seconds=None, since_time=None):
        args = [self.podman, 'logs']
        if follow:
            args.append('-f')
        if tail is not None:
            args += ['--tail', str(tail)]
        if timestamps:
            args.append('-t')
        if since_seconds is not None:
            args += ['--since', '%ds' % since_seconds]
        elif since_time:
            args += ['--since', since_time]
        return args + [self.container_name(pod, container)]

    def exec_command(self, pod, container, command, stdin, tty):
        args = [self.podman, 'exec']
        if stdin:
            args.append('-i')
        if tty:
            args.append('-t')
        return args + [self.container_name(pod, container)] + list(command)


class SyntheticRuntime(PodRuntime):
    """A runtime without podman, for simulations whose Pods need no process of their own (openshift.py).

    SIMULATION (the container runtime, synthetic).  Real: the kubelet's CRI runs each container.  Here
    every container of a Pod reports ``running`` the moment the kubelet starts it (no image, no process);
    ``pods/exec`` runs ``exec_argv(pod, container, command)`` -- an argv list -- as a process on THIS host,
    with the exec session's stdin/stdout/stderr, tty and exit code wired as for podman (so the Status on
    channel 3 carries its exit code); ``pods/log`` answers an empty log.  ``exec_argv`` decides what each
    command prints; it must not touch the host beyond its own temporary files.  Use::

        runtime = SyntheticRuntime(lambda pod, container, command: [sys.executable, 'tool.py', *command])
        controllers = ClusterControllers(cluster, runtime); install_handlers(cluster, runtime)
    """

    def __init__(self, exec_argv):
        super().__init__(enabled=True, podman='podman-not-used')
        self.exec_argv = exec_argv

    def ensure_image(self):
        return None

    def start_pod(self, cluster_key, pod):
        return self.states(pod)

    def state(self, pod, container):
        return ContainerState('running', started_at=_now())

    def states(self, pod):
        return {c['name']: ContainerState('running', started_at=_now()) for c in pod['spec']['containers']}

    def remove_pod(self, pod):
        return None

    def remove_cluster(self, cluster_key):
        return None

    def logs_command(self, pod, container, follow=False, tail=None, timestamps=False, since_seconds=None, since_time=None):
        return ['true']

    def exec_command(self, pod, container, command, stdin, tty):
        return list(self.exec_argv(pod, container, list(command)))


def _now():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


# HTTP answers ------------------------------------------------------------------------------------
def _status_body(code, reason, message):
    return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': message,
            'reason': reason, 'code': code}


def _answer(request, code, reason, message):
    body = json.dumps(_status_body(code, reason, message)).encode()
    request.send_response(code)
    request.send_header('Content-Type', 'application/json')
    request.send_header('Content-Length', str(len(body)))
    request.end_headers()
    request.wfile.write(body)


class Refusal(Exception):
    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def bad_request(message):
    return Refusal(400, 'BadRequest', message)


def pick_container(pod, query):
    """The container a log/exec call means, or the 400 of pkg/registry/core/pod/strategy.go validateContainer."""
    names = [c['name'] for c in pod['spec'].get('initContainers') or []] + [c['name'] for c in pod['spec']['containers']]
    wanted = (query.get('container') or [''])[-1]
    if not wanted:
        if len(pod['spec']['containers']) == 1:
            return pod['spec']['containers'][0]['name']
        raise bad_request('a container name must be specified for pod %s, choose one of: [%s]' % (pod['metadata']['name'], ' '.join(names)))
    if wanted not in names:
        raise bad_request('container %s is not valid for pod %s' % (wanted, pod['metadata']['name']))
    return wanted


def _require_started(pod, container):
    """The kubelet's answer for a container that has not started (pkg/kubelet/kubelet_pods.go validateContainerLogStatus)."""
    if not pod['spec'].get('nodeName'):
        raise bad_request('pod %s does not have a host assigned' % pod['metadata']['name'])
    status = pod.get('status') or {}
    for entry in (status.get('containerStatuses') or []) + (status.get('initContainerStatuses') or []):
        if entry['name'] == container:
            if 'waiting' in entry.get('state', {}) and not entry.get('lastState', {}).get('terminated'):
                raise bad_request('container "%s" in pod "%s" is waiting to start: %s'
                                  % (container, pod['metadata']['name'], entry['state']['waiting'].get('reason', 'ContainerCreating')))
            return
    raise bad_request('container "%s" in pod "%s" is waiting to start: ContainerCreating' % (container, pod['metadata']['name']))


def serve_log(runtime, request, pod, query):
    """GET pods/NAME/log: the container's output, streamed (chunked) while ``follow`` lasts."""
    try:
        container = pick_container(pod, query)
        if not pod['spec'].get('nodeName'):
            # pkg/registry/core/pod/strategy.go LogLocation: "If pod has not been assigned a host, return an
            # empty location", which the log REST streams as an empty 200 answer.
            request.send_response(200)
            request.send_header('Content-Type', 'text/plain')
            request.send_header('Content-Length', '0')
            request.end_headers()
            return
        _require_started(pod, container)
        tail = (query.get('tailLines') or [None])[-1]
        since = (query.get('sinceSeconds') or [None])[-1]
        if not runtime.enabled:
            raise bad_request('the Kubernetes API stand-in runs without containers (PodRuntime(enabled=False)): no logs')
        command = runtime.logs_command(pod, container, follow=_truthy(query, 'follow'), tail=int(tail) if tail is not None else None,
                                       timestamps=_truthy(query, 'timestamps'), since_seconds=int(since) if since else None,
                                       since_time=(query.get('sinceTime') or [None])[-1])
    except (Refusal, ValueError) as error:
        refusal = error if isinstance(error, Refusal) else bad_request(str(error))
        _answer(request, refusal.code, refusal.reason, refusal.message)
        return
    limit = int((query.get('limitBytes') or [0])[-1] or 0)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    request.send_response(200)
    request.send_header('Content-Type', 'text/plain')
    request.send_header('Transfer-Encoding', 'chunked')
    request.end_headers()
    sent = 0
    try:
        while True:
            data = os.read(process.stdout.fileno(), 65536)
            if not data:
                break
            if limit:
                data = data[:limit - sent]
            request.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))
            sent += len(data)
            if limit and sent >= limit:
                break
        request.wfile.write(b'0\r\n\r\n')
    except OSError:
        pass   # the client went away (kubectl logs -f interrupted)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()
        request.close_connection = True


# WebSocket (RFC 6455), server side -----------------------------------------------------------------
def websocket_accept(key):
    """Sec-WebSocket-Accept for a client's Sec-WebSocket-Key (RFC 6455 section 4.2.2)."""
    return base64.b64encode(hashlib.sha1((key + WEBSOCKET_GUID).encode()).digest()).decode()


class WebSocket:
    """One server-side WebSocket over a connected socket; one thread uses it (see ``ExecSession``)."""

    def __init__(self, sock):
        self.sock = sock
        self.closed = False

    def _read_exact(self, count):
        data = b''
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError('the client closed the connection')
            data += chunk
        return data

    def readable(self, timeout):
        pending = getattr(self.sock, 'pending', None)
        if pending is not None and pending():
            return True
        return bool(select.select([self.sock], [], [], timeout)[0])

    def send(self, opcode, payload=b''):
        header = bytes([0x80 | opcode])
        length = len(payload)
        if length < 126:
            header += bytes([length])
        elif length < 65536:
            header += bytes([126]) + struct.pack('!H', length)
        else:
            header += bytes([127]) + struct.pack('!Q', length)
        self.sock.sendall(header + payload)   # server frames are never masked (section 5.1)

    def send_channel(self, channel, data=b''):
        self.send(OP_BINARY, bytes([channel]) + data)

    def close(self, code=1000, reason=''):
        if not self.closed:
            self.closed = True
            try:
                self.send(OP_CLOSE, struct.pack('!H', code) + reason.encode())
            except OSError:
                pass

    def receive(self):
        """The next data message as ``(opcode, payload)``; answers pings; ``(OP_CLOSE, b'')`` at the end."""
        message, message_opcode = b'', None
        while True:
            first, second = self._read_exact(2)
            fin, opcode = first & 0x80, first & 0x0F
            if not second & 0x80:
                self.close(1002, 'client frames must be masked')   # RFC 6455 section 5.1
                return OP_CLOSE, b''
            length = second & 0x7F
            if length == 126:
                length = struct.unpack('!H', self._read_exact(2))[0]
            elif length == 127:
                length = struct.unpack('!Q', self._read_exact(8))[0]
            mask = self._read_exact(4)
            payload = bytes(byte ^ mask[index % 4] for index, byte in enumerate(self._read_exact(length)))
            if opcode == OP_PING:
                self.send(OP_PONG, payload)
                continue
            if opcode == OP_PONG:
                continue
            if opcode == OP_CLOSE:
                self.close()
                return OP_CLOSE, b''
            if opcode != OP_CONTINUATION:
                message_opcode = opcode
            message += payload
            if fin:
                return message_opcode, message


def negotiate(request, supported):
    """The subprotocol to answer with: the client's first one the server supports (None if none)."""
    offered = [item.strip() for header in request.headers.get_all('Sec-WebSocket-Protocol') or [] for item in header.split(',')]
    for protocol in offered:
        if protocol in supported:
            return protocol
    return None


def upgrade(request, protocol):
    """Answer 101 Switching Protocols; -> the WebSocket on the request's socket."""
    key = request.headers.get('Sec-WebSocket-Key', '')
    request.wfile.write(('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
                         'Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: %s\r\n\r\n' % (websocket_accept(key), protocol)).encode())
    request.wfile.flush()
    request.close_connection = True
    return WebSocket(request.connection)


def exit_status(returncode, command, runtime_error=None):
    """The metav1.Status the kubelet writes on the error channel when a command ends (see the docstring);
    the exit error's text is containerd's (``error executing command [ARGS], exit code N``)."""
    if runtime_error:
        message = 'error executing command in container: %s' % runtime_error
        return {'metadata': {}, 'status': 'Failure', 'message': 'Internal error occurred: ' + message,
                'reason': 'InternalError', 'details': {'causes': [{'message': message}]}, 'code': 500}
    if returncode == 0:
        return {'metadata': {}, 'status': 'Success'}
    return {'metadata': {}, 'status': 'Failure',
            'message': 'command terminated with non-zero exit code: error executing command [%s], exit code %d' % (' '.join(command), returncode),
            'reason': 'NonZeroExitCode', 'details': {'causes': [{'reason': 'ExitCode', 'message': str(returncode)}]}}


class ExecSession:
    """One ``pods/exec`` call: a ``podman exec`` whose streams travel as channels of a WebSocket."""

    def __init__(self, websocket, protocol, command, stdin, stdout, stderr, tty, pod_command=()):
        self.pod_command = list(pod_command)
        self.ws = websocket
        self.protocol = protocol
        self.stdin, self.stdout, self.stderr, self.tty = stdin, stdout, stderr, tty
        self.command = command
        self.stderr_tail = b''

    def run(self):
        master = None
        if self.tty:
            import pty  # pylint: disable=import-outside-toplevel
            master, slave = pty.openpty()
            process = subprocess.Popen(self.command, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                                       preexec_fn=_controlling_tty)
            os.close(slave)
            outputs = {master: STDOUT}
        else:
            process = subprocess.Popen(self.command, stdin=subprocess.PIPE if self.stdin else subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            outputs = {process.stdout.fileno(): STDOUT, process.stderr.fileno(): STDERR}
        self.process, self.master = process, master
        self.stdin_open = self.stdin
        try:
            self._pump(outputs)
        finally:
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            if master is not None:
                os.close(master)

    def _pump(self, outputs):
        process = self.process
        # kubelet's createWebSocketStreams: an empty message on the lowest writable channel first.
        self.ws.send_channel(STDOUT if self.stdout else STDERR if self.stderr else ERROR)
        client_open = True
        while outputs:
            watched = list(outputs) + ([self.ws.sock] if client_open else [])
            pending = client_open and getattr(self.ws.sock, 'pending', lambda: 0)()
            ready = watched if pending else select.select(watched, [], [], 1.0)[0]
            if client_open and self.ws.sock in ready:
                client_open = self._from_client()
                if not client_open and process.poll() is None:
                    process.terminate()
            for fd in [fd for fd in ready if fd in outputs]:
                try:
                    data = os.read(fd, 65536)
                except OSError:   # EIO on a pty once the process is gone
                    data = b''
                if not data:
                    del outputs[fd]
                    continue
                if outputs[fd] == STDERR:
                    self.stderr_tail = (self.stderr_tail + data)[-2000:]
                wanted = self.stdout if outputs[fd] == STDOUT else self.stderr
                if wanted and client_open:
                    self.ws.send_channel(outputs[fd], data)
        returncode = process.wait()
        if client_open:
            runtime_error = self._runtime_error(returncode)
            status = exit_status(returncode, self.pod_command, runtime_error)
            if self.protocol == 'channel.k8s.io':   # v1: a plain error text, nothing on success
                if status['status'] != 'Success':
                    self.ws.send_channel(ERROR, status['message'].encode())
            else:
                self.ws.send_channel(ERROR, json.dumps(status).encode())
            self.ws.close(1000)
            self._drain_until_close()

    def _runtime_error(self, returncode):
        """podman's own failure to start the command (125, or 126/127 with an OCI runtime 'Error: ...'
        line), as the CRI reports an exec it could not start."""
        if returncode in (125, 126, 127):
            for line in self.stderr_tail.decode('utf-8', 'replace').splitlines():
                if line.startswith('Error: ') and (returncode == 125 or 'OCI runtime' in line or 'executable file' in line):
                    return line[len('Error: '):]
        return None

    def _from_client(self):
        """Handle one client message; -> whether the client is still there."""
        try:
            opcode, message = self.ws.receive()
        except (ConnectionError, OSError, ValueError):
            return False
        if opcode == OP_CLOSE:
            return False
        if not message:
            return True
        channel, data = message[0], message[1:]
        if channel == STDIN and self.stdin_open and data:
            if self.master is not None:
                os.write(self.master, data)
            else:
                self.process.stdin.write(data)
                self.process.stdin.flush()
        elif channel == RESIZE and self.master is not None:
            size = json.loads(data or b'{}')
            _set_window(self.master, size.get('Height', 24), size.get('Width', 80))
        elif channel == CLOSE and data[:1] == bytes([STDIN]) and self.stdin_open:
            self.stdin_open = False
            if self.master is not None:
                os.write(self.master, b'\x04')   # end of input on a terminal
            else:
                self.process.stdin.close()
        return True

    def _drain_until_close(self):
        """Wait briefly for the client's close frame so the TCP connection ends cleanly."""
        deadline = time.monotonic() + 2
        try:
            while time.monotonic() < deadline and self.ws.readable(deadline - time.monotonic()):
                if self.ws.receive()[0] == OP_CLOSE:
                    return
        except (ConnectionError, OSError, ValueError):
            return


def _controlling_tty():
    import fcntl  # pylint: disable=import-outside-toplevel
    import termios  # pylint: disable=import-outside-toplevel
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _set_window(fd, rows, columns):
    import fcntl  # pylint: disable=import-outside-toplevel
    import termios  # pylint: disable=import-outside-toplevel
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', rows, columns, 0, 0))


def serve_exec(runtime, request, pod, query):
    """GET/POST pods/NAME/exec with a WebSocket upgrade (see the module docstring)."""
    try:
        container = pick_container(pod, query)
        command = query.get('command') or []
        stdin, stdout, tty = _truthy(query, 'stdin'), _truthy(query, 'stdout'), _truthy(query, 'tty')
        stderr = _truthy(query, 'stderr') and not tty
        if not (stdin or stdout or stderr):
            raise bad_request('you must specify at least 1 of stdin, stdout, stderr')
        _require_started(pod, container)
        if not runtime.enabled:
            raise bad_request('the Kubernetes API stand-in runs without containers (PodRuntime(enabled=False)): no exec')
        if request.headers.get('Upgrade', '').lower() != 'websocket':
            # SPDY (kubectl's fallback) is not served: the stand-in speaks only the WebSocket protocols.
            raise bad_request('the Kubernetes API stand-in serves exec over WebSocket (%s) only' % ', '.join(EXEC_PROTOCOLS))
        protocol = negotiate(request, EXEC_PROTOCOLS)
        if protocol is None:
            raise bad_request('none of the offered subprotocols is served; the stand-in speaks %s' % ', '.join(EXEC_PROTOCOLS))
    except Refusal as refusal:
        _answer(request, refusal.code, refusal.reason, refusal.message)
        return
    websocket = upgrade(request, protocol)
    session = ExecSession(websocket, protocol, runtime.exec_command(pod, container, command, stdin, tty), stdin,
                          stdout, stderr, tty, command)
    try:
        session.run()
    except (ConnectionError, OSError):
        pass   # the client went away mid-stream


def install_handlers(cluster, runtime):
    """Register ``pods/log`` and ``pods/exec`` on a KubeCluster (see the contract in __init__.py)."""
    cluster.subresource_handlers['pods/log'] = lambda request, pod, query: serve_log(runtime, request, pod, query)
    cluster.subresource_handlers['pods/exec'] = lambda request, pod, query: serve_exec(runtime, request, pod, query)
