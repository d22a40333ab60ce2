"""What runs when `kubectl exec` reaches a Pod of a test cluster: the exec runtime of one cluster.

The path is the real one up to the kubelet: kubectl or kubernetes.core's k8s_exec -> kube-apiserver
(``pods/exec``, its validation of the Pod and container, its stream translation) -> the Node's kubelet
endpoint, which for kwok Nodes is ``kubelet-streams`` (the kubelet's own remotecommand server code) ->
``podexec.py`` -> this runtime, over a Unix socket, which says which argv runs on this host.

SIMULATION (the container).  A real kubelet runs the command inside the container, in the image's root
filesystem, with the container's environment.  No container exists here.  ``ExecRuntime(exec_argv)``
asks ``exec_argv(pod, container, command)`` (the Pod as the API server serves it) for the argv to run on
this host instead; ``StandinTools()`` is the default for GKE clusters:

- a command that names one of the vendor images' files the seeds call (``/scripts/run-nccl.sh``,
  ``/usr/local/gib/scripts/run_nccl_tests.sh``, ``nsenter``, ...; the table is ``pod-tools/install``)
  runs the labelled stand-in of ``pod-tools/`` (its README lists them), with the container's ``env``
  values (``valueFrom`` is not resolved);
- any other command runs as it is from this host's PATH (the vendor images are Debian or Ubuntu based:
  ``sh``, ``cat``, ``ls`` exist there too), in a directory of its own per Pod;
- a command found nowhere ends as a CRI exec of a missing binary does: exit code 126, "executable file
  not found in $PATH";
- ``env NAME=VALUE ... COMMAND ARGS`` runs COMMAND as above with those variables added, as env(1) does
  (the NCCL diagnosis restricts NCCL to one NIC that way).

SIMULATION (faults).  Real: a node whose every NCCL run is slow (a host-wide fault), or one data NIC that is slow (a
bad link or cable), slows every run that includes that node, or uses that NIC on it.  Here a Node annotated
FAULT_SLOW_NODE ``"true"`` or FAULT_SLOW_NICS ``"eth3"`` (comma-separated NIC names) is such a node; when an NCCL
stand-in runs, the runtime names the marked nodes and NICs among the nodes of the run -- the Pod's own node and the
nodes of the Pods behind each argument that names a Service of its namespace (the guide's ``nccl-host-N``) -- to the
tool in STANDIN_SLOW_NODES and STANDIN_SLOW_NICS, and the tool prints slow figures (pod-tools/nccl_tests.sh and its
nccl-figures).  For a demo, the sandbox marks Nodes as they register from the environment (controllers.py
``standin_faults``): GPUDIRECT_STANDIN_SLOW_NODE=N (the N-th GPU node of each GPU pool, from 1) and
GPUDIRECT_STANDIN_SLOW_NIC=N:eth3 (that NIC on that node).  A Node annotated FAULT_NCCL_VERSION (``2.23.4+cuda12.6``)
runs another NCCL: its rank-0 version line says so, and a run that includes it is slow (real: mixed NCCL versions hang).

Host names: a container's host name is the node's with hostNetwork, else the Pod's spec.hostname, else its name, as
the kubelet sets it; the NCCL stand-ins print their log lines with it (``HOST:PID:TID [RANK] NCCL INFO ...``), for every
Pod of the run (STANDIN_RUN_HOSTS, this Pod's first: NCCL's rank 0).

Use::

    runtime = ExecRuntime(lambda pod, container, command: ['sh', '-c', '...'])   # or StandinTools()
    runtime.serve(plane)        # plane: controlplane.ControlPlane (its exec_socket, its admin requests)
    runtime.stop()
"""

import json
import os
import pathlib
import re
import shutil
import socket
import tempfile
import threading
import traceback
import urllib.error
import urllib.parse

TOOLS = pathlib.Path(__file__).resolve().parent / 'pod-tools'
FAULT_SLOW_NODE = 'standin.aiinfra.gpudirect/slow-node'
FAULT_SLOW_NICS = 'standin.aiinfra.gpudirect/slow-nics'
# A node whose NCCL library is another version than the stand-in's own (nccl-figures NCCL_VERSION): the value is the
# version its NCCL prints ("2.23.4+cuda12.6"). Real: ranks of mixed NCCL versions hang or fail; here the run is slow.
FAULT_NCCL_VERSION = 'standin.aiinfra.gpudirect/nccl-version'


def install_table():
    """``pod-tools/install``'s ``link SOURCE PATH`` lines: {PATH: the stand-in's file}."""
    table = {}
    for line in (TOOLS / 'install').read_text(encoding='utf-8').splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == 'link':
            table[words[2]] = str(TOOLS / words[1])
    return table


class ExecRuntime:
    """See the module docstring."""

    def __init__(self, exec_argv):
        self.exec_argv = exec_argv
        self.execs = []            # (namespace, pod, container, command) of every exec asked, in order
        self._server = None
        self._thread = None
        self._plane = None

    def serve(self, plane):
        self._plane = plane
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:   # a runtime that served this cluster before
            os.unlink(plane.exec_socket)
        except FileNotFoundError:
            pass
        self._server.bind(plane.exec_socket)
        self._server.listen(16)
        self._thread = threading.Thread(target=self._accept, name='exec-%s' % plane.key, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._server is not None:
            try:
                self._server.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._server.close()
            self._server = None

    def _accept(self):
        while self._server is not None:
            try:
                connection, _address = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection):
        with connection:
            try:
                data = b''
                while not data.endswith(b'\n'):
                    chunk = connection.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                question = json.loads(data)
                self.execs.append((question['namespace'], question['pod'], question['container'], question['command']))
                pod = self._pod(question['namespace'], question['pod'])
                answer = self.answer(pod, question['container'], question['command'])
            except Exception as error:  # pylint: disable=broad-exception-caught
                traceback.print_exc()
                answer = {'error': 'stand-in exec runtime: %s' % error}
            connection.sendall(json.dumps(answer).encode() + b'\n')

    def _pod(self, namespace, name):
        path = '/api/v1/namespaces/%s/pods/%s' % (urllib.parse.quote(namespace), urllib.parse.quote(name))
        return json.loads(self._plane.request('GET', path))

    def answer(self, pod, container, command):
        """-> {'argv': [...], 'env': {...}} or {'error': ...} for podexec.py."""
        argv = self.exec_argv(pod, container, command)
        return {'argv': list(argv), 'env': {}}


def container_hostname(pod):
    """The host name a container of ``pod`` has, as the kubelet sets it: the node's with hostNetwork, else the Pod's
    spec.hostname, else the Pod's name (what NCCL prints before each of its log lines)."""
    spec = pod.get('spec') or {}
    if spec.get('hostNetwork') and spec.get('nodeName'):
        return spec['nodeName']
    return spec.get('hostname') or pod['metadata']['name']


class StandinTools(ExecRuntime):
    """The default runtime of GKE clusters (see the module docstring)."""

    def __init__(self):
        super().__init__(None)
        self.table = install_table()
        self._dirs = {}
        self._root = tempfile.mkdtemp(prefix='pod-exec-')

    def stop(self):
        super().stop()
        shutil.rmtree(self._root, ignore_errors=True)

    def answer(self, pod, container, command):
        if not command:
            return {'error': 'unable to start container process: exec: no command'}
        spec = next((item for item in pod['spec'].get('containers', []) if item['name'] == container), {})
        env = {item['name']: str(item.get('value', '')) for item in spec.get('env') or [] if 'value' in item}
        env.update({'HOSTNAME': container_hostname(pod), 'STANDIN_TOOLS': str(TOOLS), 'HOME': self._dir(pod)})
        if command[0] == 'env' and len(command) > 1:   # env NAME=VALUE ... COMMAND ARGS
            while len(command) > 1 and '=' in command[1] and not command[1].startswith('='):
                name, value = command[1].split('=', 1)
                env[name] = value
                command = [command[0]] + command[2:]
            command = command[1:]
        program = self.table.get(command[0])
        if program is None and '/' not in command[0]:   # a bare name, looked up on the image's PATH
            program = next((tool for path, tool in self.table.items() if os.path.basename(path) == command[0]), None)
        if program is not None:
            env.update(self._faults(pod, command[1:]))
            # Sourced under the name the Pod called it by, so the tool's $0 is the vendor image's path.
            return {'argv': ['sh', '-c', '. "$STANDIN_PROGRAM"', command[0], *command[1:]], 'env': dict(env, STANDIN_PROGRAM=program)}
        if shutil.which(command[0]) is None:
            return {'error': 'unable to start container process: exec: "%s": executable file not found in $PATH' % command[0]}
        return {'argv': ['sh', '-c', 'cd "$HOME" && exec "$@"', 'exec', *command], 'env': env}

    def _faults(self, pod, args):
        """STANDIN_SLOW_NODES / STANDIN_SLOW_NICS: the nodes of this run marked slow, and the NICs marked slow on them
        (see the module docstring); STANDIN_RUN_HOSTS: the host names of the run's Pods, this Pod's first (NCCL's rank 0),
        as ``HOSTNAME=NCCL_VERSION`` where the node is marked with another NCCL version (FAULT_NCCL_VERSION); STANDIN_MACHINE_TYPE:
        the machine type of this Pod's node (its node.kubernetes.io/instance-type label), whose figure the tool prints."""
        namespace = pod['metadata']['namespace']
        nodes = {pod['spec'].get('nodeName')}
        members = [pod]
        for arg in args:
            if not re.match(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', arg):
                continue
            try:
                service = json.loads(self._plane.request('GET', '/api/v1/namespaces/%s/services/%s' % (namespace, arg)))
            except urllib.error.HTTPError:
                continue
            selector = ','.join('%s=%s' % item for item in sorted((service.get('spec') or {}).get('selector', {}).items()))
            if selector:
                pods = json.loads(self._plane.request('GET', '/api/v1/namespaces/%s/pods?labelSelector=%s' % (
                    namespace, urllib.parse.quote(selector))))['items']
                nodes.update(item['spec'].get('nodeName') for item in pods)
                members += [item for item in pods if item['metadata']['name'] not in {m['metadata']['name'] for m in members}]
        slow_nodes, slow_nics, versions, machine_type = [], [], {}, ''
        for name in sorted(n for n in nodes if n):
            try:
                metadata = json.loads(self._plane.request('GET', '/api/v1/nodes/%s' % name))['metadata']
            except urllib.error.HTTPError:
                continue
            annotations = metadata.get('annotations') or {}
            if name == pod['spec'].get('nodeName'):
                machine_type = (metadata.get('labels') or {}).get('node.kubernetes.io/instance-type', '')
            if annotations.get(FAULT_SLOW_NODE) == 'true':
                slow_nodes.append(name)
            slow_nics += [nic.strip() for nic in (annotations.get(FAULT_SLOW_NICS) or '').split(',') if nic.strip() and nic.strip() not in slow_nics]
            if annotations.get(FAULT_NCCL_VERSION):
                versions[name] = annotations[FAULT_NCCL_VERSION].strip()
        hosts = ['%s%s' % (container_hostname(m), '=' + versions[m['spec']['nodeName']] if m['spec'].get('nodeName') in versions else '')
                 for m in members]
        return {'STANDIN_SLOW_NODES': ' '.join(slow_nodes), 'STANDIN_SLOW_NICS': ' '.join(slow_nics), 'STANDIN_RUN_HOSTS': ' '.join(hosts),
                'STANDIN_MACHINE_TYPE': machine_type}

    def _dir(self, pod):
        uid = pod['metadata']['uid']
        if uid not in self._dirs:
            self._dirs[uid] = tempfile.mkdtemp(prefix=pod['metadata']['name'] + '-', dir=self._root)
        return self._dirs[uid]
