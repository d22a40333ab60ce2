"""A real Kubernetes control plane for one test cluster, on loopback ports, from the binaries that
``tests/controlplane/build.sh`` builds (``build/controlplane/bin``):

- ``etcd`` (one per process, shared: each cluster's API server keeps its objects under its own
  ``--etcd-prefix``, as several API servers can share one etcd);
- ``kube-apiserver`` with its own CA, serving certificate and service-account keys, static bearer
  tokens (``--token-auth-file``: the sandbox's access token and one admin token for the components;
  any other token is refused with 401), RBAC, and the admission plugins the cluster asks for;
- ``kube-controller-manager`` and ``kube-scheduler``, with the admin token;
- ``kwok``: the cluster's Nodes report Ready and keep their Lease, its Pods go Running (kwok's fast
  stages), and each Node's kubelet endpoint is ``kubelet-streams``;
- ``kubelet-streams``: the kubelet's ``/exec`` and ``/containerLogs`` endpoints (tests/controlplane/
  kubernetes/cmd/kubelet-streams), whose commands go through ``podexec.py`` to the cluster's exec
  runtime (``exec.py``).

Every process is started with a parent-death signal, so none outlives the test process; ``stop()``
ends them and removes the cluster's directory.

SIMULATION (what is not a real cluster): no kubelet, container runtime, kube-proxy or CNI; Pods never
run their containers (kwok writes their status), and Services have no endpoints behind them that carry
traffic. Everything the API server, the controller manager and the scheduler do is real.
"""

import base64
import ctypes
import http.client
import io
import json
import os
import pathlib
import queue
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
BUILD_SCRIPT = ROOT / 'tests' / 'controlplane' / 'build.sh'
PODEXEC = pathlib.Path(__file__).resolve().parent / 'podexec.py'
# The sandbox's Google access token (gcloud's auth/access_token_file in the tests and the demo); the
# API servers accept it as gke-gcloud-auth-plugin sends it, and no other user token.
ACCESS_TOKEN = 'sandbox-token'
ACCESS_USER = 'sandbox-user@sandbox-project.iam.gserviceaccount.com'
START_TIMEOUT = 180      # seconds for an API server to answer /readyz; generous: CI machines are slow and loaded


def bin_dir():
    """The directory of the built binaries: $GPUDIRECT_CONTROLPLANE_BIN (scripts/lib.sh sets it), else the
    checkout's build/controlplane/bin, else that of the checkout whose build/ holds this copy of the tests
    (scripts/test runs them from build/ansible_collections/aiinfra/gpudirect)."""
    if os.environ.get('GPUDIRECT_CONTROLPLANE_BIN'):
        return pathlib.Path(os.environ['GPUDIRECT_CONTROLPLANE_BIN'])
    for candidate in (ROOT / 'build', *ROOT.parents[2:3]):
        if (candidate / 'controlplane' / 'bin').is_dir():
            return candidate / 'controlplane' / 'bin'
    return ROOT / 'build' / 'controlplane' / 'bin'


def binary(name):
    path = bin_dir() / name
    if not os.access(path, os.X_OK):
        raise RuntimeError('%s is not built: run `bash %s` (scripts/test and scripts/demo run it)' % (path, BUILD_SCRIPT))
    return str(path)


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    # In the child, before exec: SIGKILL when the process that started it ends, however it ends.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class _Spawner:
    """Starts every control-plane process from one thread that lives as long as this process: Linux sends
    the parent-death signal when the *thread* that forked a child ends, so children started from a
    short-lived thread (gke.py starts clusters in the background) would be killed with it."""

    _lock = threading.Lock()
    _queue = None

    @classmethod
    def popen(cls, *args, **kwargs):
        with cls._lock:
            if cls._queue is None:
                cls._queue = queue.Queue()
                threading.Thread(target=cls._serve, name='controlplane-spawner', daemon=True).start()
        answer = queue.Queue(maxsize=1)
        cls._queue.put((args, kwargs, answer))
        result = answer.get()
        if isinstance(result, BaseException):
            raise result
        return result

    @classmethod
    def _serve(cls):
        while True:
            args, kwargs, answer = cls._queue.get()
            try:
                answer.put(subprocess.Popen(*args, preexec_fn=_die_with_parent, **kwargs))  # pylint: disable=consider-using-with
            except Exception as error:  # pylint: disable=broad-exception-caught
                answer.put(error)


class Processes:
    """The processes of one component set: started with their log files, stopped together."""

    def __init__(self, directory):
        self.directory = directory
        self.running = []

    def start(self, name, argv, env=None):
        log = open(os.path.join(self.directory, name + '.log'), 'ab')  # pylint: disable=consider-using-with
        process = _Spawner.popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=self.directory)
        log.close()
        self.running.append((name, process))
        return process

    def check(self):
        """Raise when a process has ended, with the end of its log."""
        for name, process in self.running:
            if process.poll() is not None:
                raise RuntimeError('%s exited with %s:\n%s' % (name, process.returncode, self.tail(name)))

    def signal(self, name, number):
        for running, process in self.running:
            if running == name and process.poll() is None:
                process.send_signal(number)

    def tail(self, name, lines=30):
        try:
            with open(os.path.join(self.directory, name + '.log'), encoding='utf-8', errors='replace') as handle:
                return ''.join(handle.readlines()[-lines:])
        except OSError:
            return ''

    def stop(self):
        for _name, process in reversed(self.running):
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + 10
        for _name, process in reversed(self.running):
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.running = []


class Etcd:
    """One etcd for the process, started on first use; API servers keep apart by --etcd-prefix."""

    _lock = threading.Lock()
    _shared = None

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix='kube-etcd-')
        self.processes = Processes(self.directory)
        self.client_port, peer_port = free_port(), free_port()
        self.url = 'http://127.0.0.1:%d' % self.client_port
        self.processes.start('etcd', [
            binary('etcd'), '--name', 'test', '--data-dir', os.path.join(self.directory, 'data'),
            '--listen-client-urls', self.url, '--advertise-client-urls', self.url,
            '--listen-peer-urls', 'http://127.0.0.1:%d' % peer_port,
            '--initial-advertise-peer-urls', 'http://127.0.0.1:%d' % peer_port,
            '--initial-cluster', 'test=http://127.0.0.1:%d' % peer_port,
            # Test data: losing it on a crash costs nothing, and fsync on a loaded CI disk costs seconds.
            '--unsafe-no-fsync', '--quota-backend-bytes', str(2 * 1024 ** 3), '--log-level', 'warn'])
        self._wait()

    def _wait(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            self.processes.check()
            try:
                with urllib.request.urlopen(self.url + '/health', timeout=2) as answer:
                    if b'"true"' in answer.read():
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError('etcd did not become healthy in %d s:\n%s' % (START_TIMEOUT, self.processes.tail('etcd')))

    @classmethod
    def shared(cls):
        with cls._lock:
            if cls._shared is None or cls._shared.processes.running[0][1].poll() is not None:
                cls._shared = cls()
            return cls._shared


def _write_pki(directory):
    """CA, the API server's serving certificate (127.0.0.1, localhost, kubernetes.default.svc), the
    service-account signing key; -> dict of paths."""
    from ..proxy import make_test_ca  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives import serialization  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives.asymmetric import rsa  # pylint: disable=import-outside-toplevel
    ca, cert, key = make_test_ca(directory, ['127.0.0.1', 'localhost', 'kubernetes', 'kubernetes.default',
                                             'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'])
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sa = os.path.join(directory, 'sa.key')
    with open(sa, 'wb') as handle:
        handle.write(sa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    sa_pub = os.path.join(directory, 'sa.pub')
    with open(sa_pub, 'wb') as handle:
        handle.write(sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return {'ca': ca, 'cert': cert, 'key': key, 'sa_key': sa, 'sa_pub': sa_pub}


def kubeconfig(name, server, ca_pem, token):
    return {'apiVersion': 'v1', 'kind': 'Config', 'current-context': name, 'preferences': {},
            'clusters': [{'name': name, 'cluster': {'server': server, 'certificate-authority-data':
                                                    base64.b64encode(ca_pem.encode()).decode()}}],
            'contexts': [{'name': name, 'context': {'cluster': name, 'user': name}}],
            'users': [{'name': name, 'user': {'token': token}}]}


class ControlPlane:  # pylint: disable=too-many-instance-attributes
    """The processes of one cluster. ``start()`` returns when the API server is ready and kwok,
    the controller manager and the scheduler run; ``stop()`` ends them."""

    def __init__(self, key, admission_plugins=(), emulated_minor=None):
        self.key = key
        self.admission_plugins = tuple(admission_plugins)
        self.emulated_minor = emulated_minor
        self.directory = tempfile.mkdtemp(prefix='kube-cluster-')
        self.processes = Processes(self.directory)
        self.pki = _write_pki(self.directory)
        with open(self.pki['ca'], encoding='ascii') as handle:
            self.ca_pem = handle.read()
        self.port = free_port()
        self.url = 'https://127.0.0.1:%d' % self.port
        self.admin_token = secrets.token_hex(16)
        self.exec_socket = os.path.join(self.directory, 'exec.sock')
        self.audit_log = os.path.join(self.directory, 'audit.log')
        self.log_dir = os.path.join(self.directory, 'pod-logs')
        os.makedirs(self.log_dir)
        self.admin_kubeconfig = os.path.join(self.directory, 'admin.kubeconfig')
        with open(self.admin_kubeconfig, 'w', encoding='utf-8') as handle:
            yaml.safe_dump(kubeconfig('admin', self.url, self.ca_pem, self.admin_token), handle)
        self._context = ssl.create_default_context(cafile=self.pki['ca'])
        self._connections = threading.local()

    def start(self):
        try:
            self._start_apiserver()
            self.wait_ready()
            self._start_components()
        except Exception:
            self.stop()
            raise
        return self

    def _start_apiserver(self):
        tokens = os.path.join(self.directory, 'tokens.csv')
        with open(tokens, 'w', encoding='ascii') as handle:
            # token,user,uid,"group1,group2"
            handle.write('%s,system:admin,admin,"system:masters"\n' % self.admin_token)
            handle.write('%s,%s,sandbox-user,"system:masters,system:authenticated"\n' % (ACCESS_TOKEN, ACCESS_USER))
        # The clients' requests (the sandbox user's), one audit event each when it ends: what
        # tests read as ``requests`` (which calls a playbook made, whether it wrote).
        policy = os.path.join(self.directory, 'audit-policy.yaml')
        with open(policy, 'w', encoding='ascii') as handle:
            yaml.safe_dump({'apiVersion': 'audit.k8s.io/v1', 'kind': 'Policy', 'omitStages': ['RequestReceived', 'ResponseStarted'],
                            # Only the sandbox's user: the components (system:admin) and the API server's own loopback
                            # client (system:apiserver, its leases) are not the clients under test.
                            'rules': [{'level': 'Metadata', 'users': [ACCESS_USER]}, {'level': 'None'}]}, handle)
        etcd = Etcd.shared()
        argv = [
            binary('kube-apiserver'), '--bind-address', '127.0.0.1', '--advertise-address', '127.0.0.1',
            '--secure-port', str(self.port), '--tls-cert-file', self.pki['cert'], '--tls-private-key-file', self.pki['key'],
            '--etcd-servers', etcd.url, '--etcd-prefix', '/clusters/%s' % secrets.token_hex(8),
            '--token-auth-file', tokens, '--authorization-mode', 'Node,RBAC', '--anonymous-auth=false',
            '--service-account-issuer', 'https://kubernetes.default.svc.cluster.local',
            '--service-account-key-file', self.pki['sa_pub'], '--service-account-signing-key-file', self.pki['sa_key'],
            '--service-cluster-ip-range', '10.96.0.0/16', '--allow-privileged=true',
            '--kubelet-preferred-address-types', 'InternalIP',
            '--audit-policy-file', policy, '--audit-log-path', self.audit_log,
            '--profiling=false', '--v', '1']
        if self.admission_plugins:
            argv += ['--enable-admission-plugins', ','.join(self.admission_plugins)]
        argv += self._emulation()
        self.processes.start('kube-apiserver', argv)

    def _emulation(self):
        return ['--emulated-version', '1.%d' % self.emulated_minor] if self.emulated_minor else []

    def _start_components(self):
        kc = self.admin_kubeconfig
        self.processes.start('kube-controller-manager', [
            binary('kube-controller-manager'), '--kubeconfig', kc, '--authentication-kubeconfig', kc,
            '--authorization-kubeconfig', kc, '--leader-elect=false', '--bind-address', '127.0.0.1', '--secure-port', '0',
            '--service-account-private-key-file', self.pki['sa_key'], '--root-ca-file', self.pki['ca'],
            '--use-service-account-credentials=false', '--controllers', '*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller',
            '--v', '1', *self._emulation()])
        self.processes.start('kube-scheduler', [
            binary('kube-scheduler'), '--kubeconfig', kc, '--authentication-kubeconfig', kc, '--authorization-kubeconfig', kc,
            '--leader-elect=false', '--bind-address', '127.0.0.1', '--secure-port', '0', '--v', '1', *self._emulation()])
        streams_port = free_port()
        self.processes.start('kubelet-streams', [
            binary('kubelet-streams'), '--address', '127.0.0.1:%d' % streams_port, '--tls-cert-file', self.pki['cert'],
            '--tls-private-key-file', self.pki['key'], '--log-dir', self.log_dir, '--',
            sys.executable, '-I', str(PODEXEC), self.exec_socket])
        self.processes.start('kwok', [
            binary('kwok'), '--config', str(bin_dir() / 'kwok-stages.yaml'), '--kubeconfig', kc, '--manage-all-nodes=true', '--node-ip', '127.0.0.1',
            '--node-port', str(streams_port), '--cidr', '10.0.0.1/16', '--node-lease-duration-seconds', '40',
            # kwok's own server (metrics, its debugging endpoints) on a port of its own; Nodes name kubelet-streams'.
            '--server-address', '127.0.0.1:%d' % free_port()])

    def wait_ready(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            self.processes.check()
            try:
                self.request('GET', '/readyz')
                return
            except (OSError, http.client.HTTPException) as error:
                last = error
            time.sleep(0.2)
        raise RuntimeError('kube-apiserver of %s not ready in %d s (%s):\n%s' % (
            self.key, timeout, last, self.processes.tail('kube-apiserver')))

    def request(self, method, path, body=None, content_type='application/json', timeout=30):
        """One request as the admin; -> the answer's bytes (raises urllib.error.HTTPError on >= 400).

        Over one kept-alive connection per thread: the simulations read the API server several times a second,
        and a TLS handshake per request would cost more than the requests themselves."""
        data = body if body is None or isinstance(body, bytes) else body.encode()
        headers = {'Authorization': 'Bearer ' + self.admin_token, 'Content-Type': content_type, 'Accept': 'application/json'}
        for attempt in (1, 2):
            connection = getattr(self._connections, 'connection', None)
            if connection is None:
                connection = http.client.HTTPSConnection('127.0.0.1', self.port, context=self._context, timeout=timeout)
                self._connections.connection = connection
            try:
                connection.timeout = timeout
                connection.request(method, path, body=data, headers=headers)
                answer = connection.getresponse()
                payload = answer.read()
                break
            except (http.client.HTTPException, OSError):
                # The server closed an idle connection (or stopped): one new connection, then the error is the caller's.
                connection.close()
                self._connections.connection = None
                if attempt == 2:
                    raise
        if answer.status >= 400:
            raise urllib.error.HTTPError(self.url + path, answer.status, answer.reason, answer.headers, io.BytesIO(payload))
        return payload

    def requests(self):
        """(HTTP method, request URI, user, user agent) of each client request that ended, from the audit log."""
        methods = {'create': 'POST', 'update': 'PUT', 'patch': 'PATCH', 'delete': 'DELETE', 'deletecollection': 'DELETE'}
        try:
            with open(self.audit_log, encoding='utf-8') as handle:
                events = [json.loads(line) for line in handle if line.endswith('\n')]
        except FileNotFoundError:
            return []
        return [(methods.get(event['verb'], 'GET' if 'objectRef' in event else event['verb'].upper()), event['requestURI'],
                 event['user'].get('username'), event.get('userAgent', '')) for event in events]

    def pause(self, name):
        """Freeze one component (SIGSTOP) until resume(): 'kwok' is every node's kubelet paused at once (no Pod
        status moves on, leases stop being renewed), 'kube-controller-manager' or 'kube-scheduler' a stuck controller."""
        self.processes.signal(name, signal.SIGSTOP)

    def resume(self, name):
        self.processes.signal(name, signal.SIGCONT)

    def stop(self):
        for name, _process in self.processes.running:   # a frozen process does not act on SIGTERM
            self.processes.signal(name, signal.SIGCONT)
        self.processes.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
