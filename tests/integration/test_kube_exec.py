"""Exec and logs into a test cluster's Pods along the real path: kubectl (or kubernetes.core's k8s_exec) ->
the real kube-apiserver (``pods/exec``: its checks of the Pod and container, its stream handling) -> the kwok
Node's kubelet endpoint (kubelet-streams) -> podexec.py -> the cluster's exec runtime (tests/sandbox/kube/
exec.py), here ``StandinTools``, the runtime every GKE cluster of the sandbox gets.

What these tests hold: a command's stdout, stderr, stdin and exit code come back as the container's would; a
command found nowhere ends with 126 (a CRI exec of a missing binary); a vendor image's path runs its labelled
stand-in tool; what the real API server refuses (a container the Pod lacks, a Pod with no node) is refused
before any runtime is asked; logs are the file the runtime wrote, else empty.
"""

import json
import os
import subprocess
import sys

import pytest

from sandbox.gcloud import kubectl_binary
from sandbox.kube.exec import StandinTools
from playbook_runner import ansible_playbook_command, collections_path
from waiting import wait_until

KUBECTL = kubectl_binary()
pytestmark = pytest.mark.skipif(KUBECTL is None, reason='the Cloud SDK with kubectl.1.33 is not installed')
# Generous: CI is a loaded 2-core machine, and kwok, the scheduler and the kubelet-streams hook share it.
WAIT = 120


def kubectl(cluster, *args, stdin=None):
    return subprocess.run([KUBECTL, *args], env=dict(os.environ, KUBECONFIG=cluster.kubeconfig_path), capture_output=True,
                          text=True, input=stdin, timeout=WAIT, check=False)


def phase(cluster, name):
    return ((cluster.store.get('pods', name, 'default') or {}).get('status') or {}).get('phase')


@pytest.fixture(scope='module')
def runtime(kube_cluster):
    instance = StandinTools().serve(kube_cluster.plane)
    yield instance
    instance.stop()


@pytest.fixture(scope='module')
def pod(kube_cluster, runtime):
    """One Node (kwok makes it Ready and serves its kubelet endpoint) and one Running two-container Pod on it."""
    del runtime
    kube_cluster.store.create({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'worker-0'}})
    kube_cluster.store.create({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'tools', 'namespace': 'default'}, 'spec': {
        'containers': [{'name': 'main', 'image': 'us-docker.pkg.dev/vendor/tools:v1', 'env': [{'name': 'GREETING', 'value': 'hello'}]},
                       {'name': 'side', 'image': 'busybox'}],
        # kwok's Nodes carry kwok's taint only when asked; tolerate everything so the test does not depend on it.
        'tolerations': [{'operator': 'Exists'}]}})
    wait_until(lambda: phase(kube_cluster, 'tools') == 'Running', 'Pod tools Running on the kwok Node (scheduler, then kwok)',
               timeout=WAIT)
    return 'tools'


def test_exec_returns_stdout_stderr_and_the_exit_code(kube_cluster, pod, runtime):
    result = kubectl(kube_cluster, 'exec', pod, '-c', 'main', '--', 'sh', '-c', 'echo "$GREETING"; echo oops >&2; exit 3')
    assert result.stdout == 'hello\n', result.stderr   # the container's env value reaches the command
    assert 'oops' in result.stderr
    assert result.returncode == 3, result.stderr
    # The runtime was asked for exactly this container and command (what the API server passed through).
    assert ('default', pod, 'main', ['sh', '-c', 'echo "$GREETING"; echo oops >&2; exit 3']) in runtime.execs


def test_exec_passes_stdin_through(kube_cluster, pod):
    result = kubectl(kube_cluster, 'exec', '-i', pod, '-c', 'main', '--', 'cat', stdin='through stdin\n')
    assert (result.returncode, result.stdout) == (0, 'through stdin\n'), result.stderr


def test_a_missing_command_ends_with_126(kube_cluster, pod):
    result = kubectl(kube_cluster, 'exec', pod, '-c', 'main', '--', 'no-such-binary', '--flag')
    assert result.returncode == 126, (result.stdout, result.stderr)
    assert 'executable file not found in $PATH' in result.stderr


def test_a_vendor_image_path_runs_its_labelled_stand_in(kube_cluster, pod):
    """The installers' init containers run host commands through nsenter; the stand-in says what it skipped."""
    result = kubectl(kube_cluster, 'exec', pod, '-c', 'main', '--', 'nsenter', '-at', '1', '--', 'modprobe', 'x')
    assert result.returncode == 0, result.stderr
    assert result.stdout == ('[aiinfra sandbox stand-in: synthetic output, no GPU/NCCL/host access] nsenter: host namespaces '
                             'are not entered; skipped: modprobe x\n')


def test_a_container_the_pod_lacks_is_refused_by_the_api_server(kube_cluster, pod, runtime):
    asked = len(runtime.execs)
    result = kubectl(kube_cluster, 'exec', pod, '-c', 'nope', '--', 'true')
    assert result.returncode != 0
    # pkg/registry/core/pod/strategy.go (streamLocation): the API server's own 400, before any kubelet is called.
    assert 'container nope is not valid for pod tools' in result.stderr, result.stderr
    assert len(runtime.execs) == asked


def test_a_pod_without_a_node_is_refused_and_has_no_logs(kube_cluster, runtime):
    # A nodeSelector no Node matches: the real scheduler leaves it Pending, unbound.
    kube_cluster.store.create({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'lonely', 'namespace': 'default'},
                               'spec': {'nodeSelector': {'example.com/none': 'x'}, 'containers': [{'name': 'c', 'image': 'busybox'}]}})
    try:
        asked = len(runtime.execs)
        result = kubectl(kube_cluster, 'exec', 'lonely', '--', 'true')
        assert result.returncode != 0
        assert 'pod lonely does not have a host assigned' in result.stderr, result.stderr
        assert len(runtime.execs) == asked
    finally:
        kube_cluster.store.delete('pods', 'lonely', 'default')


def test_logs_are_empty_until_the_runtime_wrote_some(kube_cluster, pod):
    empty = kubectl(kube_cluster, 'logs', pod, '-c', 'side')
    assert (empty.returncode, empty.stdout) == (0, ''), empty.stderr
    # kubelet-streams answers /containerLogs with LOGDIR/NAMESPACE_POD_CONTAINER.log, as a kubelet answers with the runtime's log.
    path = os.path.join(kube_cluster.plane.log_dir, 'default_%s_main.log' % pod)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write('first\nsecond\n')
    try:
        logged = kubectl(kube_cluster, 'logs', pod, '-c', 'main')
        assert (logged.returncode, logged.stdout) == (0, 'first\nsecond\n'), logged.stderr
    finally:
        os.remove(path)


K8S_EXEC_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: {python}
  tasks:
    - name: A command with output on both streams and a non-zero exit
      kubernetes.core.k8s_exec:
        kubeconfig: {kubeconfig}
        namespace: default
        pod: {pod}
        container: main
        command: sh -c 'echo out-$GREETING; echo err >&2; exit 4'
      register: failing
      failed_when: false
    - name: The results for the test
      ansible.builtin.copy:
        dest: {results}
        mode: "0600"
        content: "{{{{ {{'rc': failing.rc, 'return_code': failing.return_code, 'stdout': failing.stdout,
                   'stderr': failing.stderr}} | to_json }}}}"
"""


def test_kubernetes_core_k8s_exec_gets_the_streams_and_the_exit_code(kube_cluster, pod, tmp_path):
    """kubernetes.core.k8s_exec speaks the WebSocket protocol of the kubernetes Python client (not kubectl's);
    the collection's roles run their in-Pod checks through it."""
    results = tmp_path / 'results.json'
    play = tmp_path / 'play.yml'
    play.write_text(K8S_EXEC_PLAY.format(python=sys.executable, kubeconfig=kube_cluster.kubeconfig_path, pod=pod,
                                         results=results), encoding='utf-8')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='False', HOME=str(tmp_path))
    run = subprocess.run([*ansible_playbook_command(kubernetes=True), str(play)], env=env, cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    outcome = json.loads(results.read_text(encoding='utf-8'))
    assert outcome == {'rc': 4, 'return_code': 4, 'stdout': 'out-hello\n', 'stderr': 'err\n'}, outcome
