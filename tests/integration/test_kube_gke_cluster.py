"""Issue 10's closing demonstration, as a test: a GKE cluster created with the real gcloud against
the Container API sandbox comes alive as a real Kubernetes control plane (tests/sandbox/kube/controlplane.py:
kube-apiserver, controller manager, scheduler, kwok Nodes), and the real kubectl 1.33 (through
the kubeconfig ``gcloud container clusters get-credentials`` writes, whose user runs the real
gke-gcloud-auth-plugin) and kubernetes.core work with it:

- an A3 Mega node pool's Nodes appear with GKE's labels (``kubectl get nodes -L
  cloud.google.com/gke-accelerator``), and follow ``gcloud container clusters resize``;
- the TCPXO installer DaemonSet of seed 003 (vendored under tests/sandbox/kube/manifests/, see its
  SOURCES.md) is applied with ``kubectl apply -f`` and ``kubectl rollout status`` finishes (the real
  DaemonSet controller, kwok's Pods); ``kubectl logs`` reaches the node's kubelet endpoint (empty: no container
  runs here), and the seed's NCCL test Pods run ``kubectl exec`` (tests/sandbox/kube/exec.py's stand-in tools);
- a Pod asking for more GPUs than a node has stays Pending with the scheduler's message;
- kubernetes.core.k8s ``wait: true`` on a DaemonSet and kubernetes.core.k8s_exec (v4 channel, the
  rc of a failing command);
- a bad manifest is refused with 422 (the real API server's validation, reached through the same kubeconfig);
- seed 001's RDMA pool with DRANET (node pool through the API: SDK 528 lacks the flags).

gke-gcloud-auth-plugin prints a token from gcloud's configuration: the test sets
``auth/access_token_file`` in its own CLOUDSDK_CONFIG (with ``auth/disable_credentials`` gcloud has
no account, and the plugin then fails with "You do not currently have an active account selected").
The API server accepts that token (its --token-auth-file) and refuses any other with 401.

One sandbox (and cluster) per test module; each test leaves the cluster as it found it.
"""

import json
import os
import subprocess
import sys

import pytest

from sandbox import Sandbox
from sandbox.client import SandboxClient
from sandbox.gcloud import GcloudRunner, kubectl_binary
from sandbox.kube import vendored
from waiting import wait_until
from playbook_runner import ansible_playbook_command

PROJECT = 'sandbox-project'
REGION = 'us-central1'
ZONE = 'us-central1-a'
RDMA_ZONE = 'us-central1-b'   # A3 Ultra runs in us-central1-b, not -a (Google's GPU locations page; tests/sandbox/data)
VERSION = '1.33.5-gke.1308000'
MANIFESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'sandbox', 'kube', 'manifests')
INSTALLER = vendored.path('gpudirect-tcpxo/nccl-tcpxo-installer.yaml')
NCCL_TEST = vendored.path('gpudirect-tcpxo/nccl-test-latest.yaml')
NRI_INJECTOR = vendored.path('nri_device_injector/nri-device-injector.yaml')
A3_MEGA = 'nvidia-h100-mega-80gb'


KUBECTL = kubectl_binary()
pytestmark = pytest.mark.skipif(KUBECTL is None, reason='the Cloud SDK with kubectl.1.33 is not installed')


def ok(result):
    assert result.returncode == 0, 'exit %d\nstdout:\n%s\nstderr:\n%s' % (result.returncode, result.stdout, result.stderr)
    return result


class Live:
    """The module's sandbox, gcloud and kubectl."""

    def __init__(self, sandbox, gcloud):
        self.sandbox, self.gcloud = sandbox, gcloud

    def kubectl(self, *args, timeout=120, stdin=None):
        return subprocess.run([KUBECTL, *args], env=self.gcloud.env, capture_output=True, text=True, timeout=timeout,
                              input=stdin, check=False)

    def nodes(self, pool=None):
        """The cluster's Nodes, read from the stand-in's store (polling through kubectl would run the
        auth plugin, about a second, each time)."""
        kube = self.sandbox.kube.cluster('projects/%s/locations/%s/clusters/tcpxo' % (PROJECT, ZONE))
        selector = 'cloud.google.com/gke-nodepool=' + pool if pool else None
        return kube.store.list('nodes', label_selector=selector) if kube else []


@pytest.fixture(scope='module')
def live(tmp_path_factory):
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(latency=0.0, project=PROJECT).start()
    sandbox.kube = GkeClusters()
    try:
        config = tmp_path_factory.mktemp('gcloud-config')
        gcloud = GcloudRunner(sandbox, str(config))
        token = config / 'access-token'
        token.write_text('sandbox-token\n', encoding='ascii')
        ok(gcloud('config', 'set', 'auth/access_token_file', str(token)))
        api = SandboxClient(sandbox.url)
        for number in range(1, 9):
            api.create_vpc(PROJECT, '%s-net-%d' % (PROJECT, number), '%s-sub-%d' % (PROJECT, number), REGION, '192.168.%d.0/24' % number)
        # Seed 003's TCPXO cluster and A3 Mega node pool (smaller: one default node, two A3 Mega nodes).
        ok(gcloud('--project', PROJECT, 'beta', 'container', 'clusters', 'create', 'tcpxo', '--enable-dataplane-v2',
                  '--enable-ip-alias', '--zone=' + ZONE, '--enable-multi-networking', '--cluster-version=' + VERSION,
                  '--no-enable-autoupgrade', '--num-nodes=1'))
        networks = []
        for number in range(1, 9):
            networks += ['--additional-node-network', 'network=%s-net-%d,subnetwork=%s-sub-%d' % (PROJECT, number, PROJECT, number)]
        ok(gcloud('beta', 'container', 'node-pools', 'create', 'a3mega', '--zone=' + ZONE, '--cluster=tcpxo',
                  '--accelerator=type=%s,count=8,gpu-driver-version=LATEST' % A3_MEGA, '--machine-type=a3-megagpu-8g',
                  '--num-nodes=2', *networks, '--enable-gvnic', '--no-enable-autoupgrade'))
        ok(gcloud('container', 'clusters', 'get-credentials', 'tcpxo', '--zone=' + ZONE))
        state = Live(sandbox, gcloud)
        wait_until(lambda: len(state.nodes()) == 3, 'the three nodes')
        yield state
    finally:
        sandbox.stop()


def test_get_credentials_kubeconfig_runs_the_auth_plugin_against_the_cluster_endpoint(live):
    with open(live.gcloud.kubeconfig, encoding='utf-8') as handle:
        kubeconfig = handle.read()
    cluster = json.loads(ok(live.gcloud('container', 'clusters', 'describe', 'tcpxo', '--zone=' + ZONE, '--format=json')).stdout)
    assert cluster['endpoint'].startswith('127.0.0.1:')
    assert 'server: https://%s' % cluster['endpoint'] in kubeconfig and 'command: gke-gcloud-auth-plugin' in kubeconfig
    # The real kube-apiserver of tests/controlplane (GKE's would say v1.33.5-gke.1308000), emulating the cluster's minor.
    version = json.loads(ok(live.kubectl('version', '-o', 'json')).stdout)['serverVersion']
    assert version['gitVersion'] == 'v1.34.12' and version['emulationMinor'] == VERSION.split('.')[1]


def test_get_nodes_lists_the_pool_nodes_with_gke_labels(live):
    listing = ok(live.kubectl('get', 'nodes', '-L', 'cloud.google.com/gke-accelerator')).stdout.splitlines()
    assert 'GKE-ACCELERATOR' in listing[0]
    gpu_rows = [line for line in listing[1:] if line.split()[-1] == A3_MEGA]
    assert len(gpu_rows) == 2 and all(line.startswith('gke-tcpxo-a3mega-') for line in gpu_rows)
    node = json.loads(ok(live.kubectl('get', 'nodes', '-l', 'cloud.google.com/gke-nodepool=a3mega', '-o', 'json')).stdout)['items'][0]
    labels = node['metadata']['labels']
    assert labels['node.kubernetes.io/instance-type'] == 'a3-megagpu-8g'
    assert labels['topology.kubernetes.io/zone'] == ZONE and labels['topology.kubernetes.io/region'] == REGION
    assert labels['cloud.google.com/gke-gpu-driver-version'] == 'latest'
    assert labels['kubernetes.io/hostname'] == node['metadata']['name']
    assert node['status']['capacity']['nvidia.com/gpu'] == '8'   # A3 Mega's GPUs (the Compute sandbox's machine data)
    assert node['status']['capacity']['cpu'] == '208'
    assert {'key': 'nvidia.com/gpu', 'value': 'present', 'effect': 'NoSchedule'} in node['spec']['taints']
    nics = json.loads(node['metadata']['annotations']['networking.gke.io/nic-info'])
    assert [nic['birthName'] for nic in nics] == ['eth%d' % n for n in range(9)]
    ready = next(c for c in node['status']['conditions'] if c['type'] == 'Ready')
    assert ready['status'] == 'True'
    default_pool = live.nodes('default-pool')[0]
    assert 'nvidia.com/gpu' not in default_pool['status']['capacity'] and not default_pool['spec'].get('taints')


def test_gke_installs_the_default_network_and_its_crds_on_multi_networking_clusters(live):
    network = json.loads(ok(live.kubectl('get', 'networks.networking.gke.io', 'default', '-o', 'json')).stdout)
    assert network['spec']['type'] == 'L3'
    ok(live.kubectl('get', 'crd', 'computeclasses.cloud.google.com'))


def test_tcpxo_installer_daemonset_rolls_out_and_logs(live):
    """Seed 003, TCPXO: the installer and the NRI device injector DaemonSets, and the seed's checks."""
    ok(live.kubectl('apply', '-f', INSTALLER))
    ok(live.kubectl('apply', '-f', NRI_INJECTOR))
    try:
        rollout = ok(live.kubectl('rollout', 'status', 'ds/nccl-tcpxo-installer', '-n', 'kube-system', '--timeout=90s', timeout=120))
        assert 'daemon set "nccl-tcpxo-installer" successfully rolled out' in rollout.stdout
        ds = json.loads(ok(live.kubectl('get', 'ds', 'nccl-tcpxo-installer', '-n', 'kube-system', '-o', 'json')).stdout)
        assert ds['status']['desiredNumberScheduled'] == 2 and ds['status']['numberReady'] == 2   # the A3 Mega nodes only
        # kubectl logs reaches the node's kubelet endpoint; no container runs here, so there is nothing in it.
        logs = ok(live.kubectl('logs', '-n', 'kube-system', 'ds/nccl-tcpxo-installer', '-c', 'nccl-tcpxo-installer'))
        assert logs.stdout == '' and 'Found 2 pods, using pod/nccl-tcpxo-installer-' in logs.stderr
        ok(live.kubectl('rollout', 'status', 'ds/device-injector', '-n', 'kube-system', '--timeout=90s', timeout=120))
        listing = ok(live.kubectl('get', 'pods', '-n=kube-system', '-l=name=device-injector')).stdout.splitlines()
        assert len(listing) == 3 and all(' Running ' in line for line in listing[1:])
    finally:
        ok(live.kubectl('delete', '-f', INSTALLER, '-f', NRI_INJECTOR, '--wait=true'))


BAD_DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: no-selector, namespace: kube-system}
spec:
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: main, image: busybox}]
"""


def test_a_bad_manifest_is_refused_with_422(live):
    """The closing note's last step: the real API server's validation through the same kubeconfig."""
    refused = live.kubectl('apply', '-f', '-', '-v=6', stdin=BAD_DAEMONSET)
    assert refused.returncode == 1
    assert 'status="422 Unprocessable Entity"' in refused.stderr
    assert 'The DaemonSet "no-selector" is invalid' in refused.stderr
    assert 'spec.template.metadata.labels: Invalid value: {"app":"x"}: `selector` does not match template `labels`' in refused.stderr


def test_resize_the_pool_and_the_nodes_follow(live):
    resize = ['container', 'clusters', 'resize', 'tcpxo', '--node-pool=a3mega', '--zone=' + ZONE, '--quiet']
    ok(live.gcloud(*resize, '--num-nodes=3'))
    try:
        wait_until(lambda: len(live.nodes('a3mega')) == 3, 'three A3 Mega nodes')
        assert json.loads(ok(live.gcloud('container', 'node-pools', 'describe', 'a3mega', '--cluster=tcpxo', '--zone=' + ZONE,
                                         '--format=json')).stdout)['initialNodeCount'] == 3
    finally:
        ok(live.gcloud(*resize, '--num-nodes=2'))
    wait_until(lambda: len(live.nodes('a3mega')) == 2, 'two A3 Mega nodes again')


POD_TOO_BIG = """
apiVersion: v1
kind: Pod
metadata:
  name: too-many-gpus
spec:
  containers:
  - name: main
    image: us-docker.pkg.dev/example/cuda:latest
    command: ["sleep", "infinity"]
    resources:
      limits:
        nvidia.com/gpu: 16
"""


def test_pod_asking_for_more_gpus_than_a_node_has_stays_pending_with_the_scheduler_message(live):
    ok(live.kubectl('apply', '-f', '-', stdin=POD_TOO_BIG))
    try:
        def scheduled_condition():
            pod = json.loads(ok(live.kubectl('get', 'pod', 'too-many-gpus', '-o', 'json')).stdout)
            return next((c for c in (pod.get('status') or {}).get('conditions') or [] if c['type'] == 'PodScheduled'), None)
        condition = wait_until(scheduled_condition, 'the PodScheduled condition')
        assert condition['status'] == 'False' and condition['reason'] == 'Unschedulable'
        assert condition['message'] == ('0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are '
                                        'available: 3 Preemption is not helpful for scheduling.')
        phase = ok(live.kubectl('get', 'pod', 'too-many-gpus', '-o', 'jsonpath={.status.phase}')).stdout
        assert phase == 'Pending'
    finally:
        ok(live.kubectl('delete', 'pod', 'too-many-gpus', '--wait=true'))


def test_seed_nccl_test_pods_run_and_kubectl_exec_reaches_them(live):
    ok(live.kubectl('apply', '-f', NCCL_TEST))
    try:
        ok(live.kubectl('wait', '--for=condition=Ready', 'pod/nccl-test-host-1', 'pod/nccl-test-host-2', '--timeout=90s', timeout=120))
        pods = [json.loads(ok(live.kubectl('get', 'pod', name, '-o', 'json')).stdout) for name in ('nccl-test-host-1', 'nccl-test-host-2')]
        assert len({pod['spec']['nodeName'] for pod in pods}) == 2   # the seed's podAntiAffinity on kubernetes.io/hostname
        # The seed's own command (kubectl exec --stdin --tty ... /scripts/allgather.sh); without a terminal kubectl says so and goes on.
        run = ok(live.kubectl('exec', '--stdin', '--tty', '--container=nccl-test', 'nccl-test-host-1', '--',
                              '/scripts/allgather.sh', 'nccl-host-1', 'nccl-host-2'))
        assert 'synthetic' in run.stdout and '# Avg bus bandwidth' in run.stdout
        failing = live.kubectl('exec', 'nccl-test-host-1', '-c', 'nccl-test', '--', 'sh', '-c', 'echo to-stderr >&2; exit 7')
        assert failing.returncode == 7 and 'to-stderr' in failing.stderr
        assert 'command terminated with exit code 7' in failing.stderr
        piped = ok(live.kubectl('exec', '-i', 'nccl-test-host-2', '-c', 'nccl-test', '--', 'cat', stdin='through stdin\n'))
        assert piped.stdout == 'through stdin\n'
    finally:
        ok(live.kubectl('delete', '-f', NCCL_TEST, '--wait=true'))


PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: {python}
  module_defaults:
    group/kubernetes.core.k8s:
      kubeconfig: {kubeconfig}
  tasks:
    - name: A DaemonSet on the A3 Mega nodes, waited for
      kubernetes.core.k8s:
        state: present
        wait: true
        wait_timeout: 90
        definition:
          apiVersion: apps/v1
          kind: DaemonSet
          metadata: {{name: probe, namespace: default}}
          spec:
            selector: {{matchLabels: {{app: probe}}}}
            template:
              metadata: {{labels: {{app: probe}}}}
              spec:
                nodeSelector: {{cloud.google.com/gke-accelerator: {accelerator}}}
                tolerations: [{{operator: Exists}}]
                containers:
                  - {{name: main, image: busybox, command: [sleep, infinity]}}
      register: daemonset
    - name: One of its Pods
      kubernetes.core.k8s_info:
        kind: Pod
        namespace: default
        label_selectors: [app=probe]
      register: pods
    - name: A command that succeeds
      kubernetes.core.k8s_exec:
        namespace: default
        pod: "{{{{ pods.resources[0].metadata.name }}}}"
        container: main
        command: sh -c 'echo hello from $HOSTNAME'
      register: succeeded
    - name: A command that fails (the module sets rc; ansible fails a result whose rc is not 0)
      kubernetes.core.k8s_exec:
        namespace: default
        pod: "{{{{ pods.resources[0].metadata.name }}}}"
        container: main
        command: sh -c 'exit 3'
      register: failed
      failed_when: false
    - name: The same through the collection's pod_exec (in the worker)
      aiinfra.gpudirect.pod_exec:
        pod: "{{{{ pods.resources[0].metadata.name }}}}"
        container: main
        command: [sh, -c, 'echo hello from $HOSTNAME']
      register: ours_succeeded
    - name: A command that fails, through pod_exec (it fails, named with its exit code and stderr)
      aiinfra.gpudirect.pod_exec:
        pod: "{{{{ pods.resources[0].metadata.name }}}}"
        container: main
        command: sh -c 'echo the disk is full >&2; exit 3'
      register: ours_failed
      ignore_errors: true
    - name: A command that does not exist in the image, through pod_exec
      aiinfra.gpudirect.pod_exec:
        pod: "{{{{ pods.resources[0].metadata.name }}}}"
        container: main
        command: /opt/not-in-the-image/run.sh
      register: ours_missing
      ignore_errors: true
    - name: A container the Pod does not have, through pod_exec
      aiinfra.gpudirect.pod_exec:
        pod: "{{{{ pods.resources[0].metadata.name }}}}"
        container: nccl-test
        command: 'true'
      register: ours_no_container
      ignore_errors: true
    - name: Several commands at once through pod_exec runs (one fails, one is refused; the task does not fail)
      aiinfra.gpudirect.pod_exec:
        container: main
        runs:
          - {{pod: "{{{{ pods.resources[0].metadata.name }}}}", command: [sh, -c, 'sleep 1; echo first']}}
          - {{pod: "{{{{ pods.resources[1].metadata.name }}}}", command: [sh, -c, 'sleep 1; echo second; exit 4']}}
          - {{pod: "{{{{ pods.resources[0].metadata.name }}}}", container: nccl-test, command: 'true'}}
      register: ours_runs
    - name: Results for the test
      ansible.builtin.copy:
        dest: {results}
        content: "{{{{ {{'daemonset': daemonset, 'succeeded': succeeded, 'failed': failed, 'ours_succeeded': ours_succeeded,
                      'ours_failed': ours_failed, 'ours_missing': ours_missing, 'ours_no_container': ours_no_container,
                      'ours_runs': ours_runs}} | to_json }}}}"
        mode: "0600"
    - name: Clean up
      kubernetes.core.k8s:
        state: absent
        kind: DaemonSet
        name: probe
        namespace: default
        wait: true
"""


def _collections_path():
    for entry in [*sys.path, *os.environ.get('PYTHONPATH', '').split(os.pathsep)]:
        if entry and os.path.isdir(os.path.join(entry, 'ansible_collections', 'kubernetes', 'core')):
            return entry
    return None


def test_kubernetes_core_waits_for_a_daemonset_and_k8s_exec_reports_rc(live, tmp_path):
    collections = _collections_path()
    if collections is None:
        pytest.skip('kubernetes.core is not installed beside the collection (scripts/test build installs it)')
    results = tmp_path / 'results.json'
    playbook = tmp_path / 'playbook.yml'
    playbook.write_text(PLAYBOOK.format(python=sys.executable, kubeconfig=live.gcloud.kubeconfig, accelerator=A3_MEGA,
                                        results=results), encoding='utf-8')
    env = dict(live.gcloud.env, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_INVENTORY_UNPARSED_WARNING='False')
    run = subprocess.run([*ansible_playbook_command(kubernetes=True), str(playbook)], env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    outcome = json.loads(results.read_text(encoding='utf-8'))
    status = outcome['daemonset']['result']['status']
    assert status['desiredNumberScheduled'] == 2 and status['numberReady'] == 2 and status['updatedNumberScheduled'] == 2
    assert outcome['succeeded']['rc'] == 0 and outcome['succeeded']['stdout'].startswith('hello from probe-')
    assert outcome['failed']['rc'] == 3 and outcome['failed']['return_code'] == 3
    # aiinfra.gpudirect.pod_exec: the same outcomes, and a failure says why in the command's own terms.
    ours = {key: outcome['ours_' + key] for key in ('succeeded', 'failed', 'missing', 'no_container')}
    assert ours['succeeded']['rc'] == 0 and ours['succeeded']['stdout'].startswith('hello from probe-'), ours['succeeded']
    assert ours['failed']['failed'] and ours['failed']['rc'] == 3, ours['failed']
    assert ours['failed']['msg'].startswith("sh -c 'echo the disk is full >&2; exit 3' in default/probe-") \
        and ours['failed']['msg'].endswith(' container main exited with 3: the disk is full'), ours['failed']['msg']
    assert ours['missing']['failed'] and '/opt/not-in-the-image/run.sh' in ours['missing']['msg'], ours['missing']
    assert 'invalid literal' not in ours['missing']['msg'] and 'Unknown error' not in ours['missing']['msg'], ours['missing']
    assert ours['no_container']['failed'] and 'was not run: 400' in ours['no_container']['msg'] \
        and 'nccl-test' in ours['no_container']['msg'], ours['no_container']
    # runs: every command at once, each result in order, a failed or refused run a result, not the task's failure.
    runs = outcome['ours_runs']
    assert not runs.get('failed') and [r.get('rc') for r in runs['results']] == [0, 4, None], runs
    first, second, refused = runs['results']
    assert first['stdout'] == 'first\n' and not first.get('failed') and first['container'] == 'main', first
    assert second['failed'] and second['stdout'] == 'second\n' and second['msg'].endswith(' container main exited with 4: second'), second
    assert refused['failed'] and 'was not run: 400' in refused['msg'] and refused['container'] == 'nccl-test', refused


WORKLOADS = """
apiVersion: batch/v1
kind: Job
metadata:
  name: once
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["sh", "-c", "echo job ran on $HOSTNAME"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: nginx
"""


def test_job_completes_and_deployment_rolls_out(live):
    ok(live.kubectl('apply', '-f', '-', stdin=WORKLOADS))
    try:
        ok(live.kubectl('wait', '--for=condition=complete', 'job/once', '--timeout=90s', timeout=120))
        # The real Job controller's selector finds the Job's Pod (kwok completed it; no container ran, so no output).
        logs = ok(live.kubectl('logs', 'job/once'))
        assert logs.stdout == '' and logs.stderr == ''
        rollout = ok(live.kubectl('rollout', 'status', 'deployment/web', '--timeout=90s', timeout=120))
        assert 'deployment "web" successfully rolled out' in rollout.stdout
    finally:
        ok(live.kubectl('delete', '-f', '-', '--wait=true', stdin=WORKLOADS))


RDMA_VERSION = '1.34.8-gke.1278000'   # seed 001's floor for gpuDirectStrategy RDMA; resource.k8s.io/v1 is served from 1.34
SEED_001 = os.path.join(MANIFESTS, 'seeds')


def test_seed_001_rdma_pool_gets_dranet_and_its_pods_claim_rdma_devices(live, tmp_path):
    """Seed 001 (A3 Ultra, GPUDirect-RDMA with GKE managed DRANET).  SDK 528's gcloud has no
    --gpudirect-strategy or --accelerator-network-profile (seed 001 needs SDK 550+), so the node pool
    is created through the API, with the fields those flags set; everything else is gcloud and kubectl."""
    env = dict(live.gcloud.env, KUBECONFIG=str(tmp_path / 'kubeconfig'))
    gcloud = GcloudRunner(live.sandbox, live.gcloud.config_dir)
    gcloud.env = env
    ok(gcloud('container', 'clusters', 'create', 'rdma', '--zone=' + RDMA_ZONE, '--cluster-version=' + RDMA_VERSION,
              '--enable-dataplane-v2', '--enable-ip-alias', '--num-nodes=1', '--no-enable-autoupgrade'))
    try:
        SandboxClient(live.sandbox.url).must('POST', 'v1/projects/%s/locations/%s/clusters/rdma/nodePools' % (PROJECT, RDMA_ZONE), {'nodePool': {
            'name': 'a3ultra', 'initialNodeCount': 2,
            'config': {'machineType': 'a3-ultragpu-8g', 'gpuDirectConfig': {'gpuDirectStrategy': 'RDMA'},
                       'labels': {'cloud.google.com/gke-networking-dra-driver': 'true'},
                       'accelerators': [{'acceleratorType': 'nvidia-h200-141gb', 'acceleratorCount': '8',
                                         'gpuDriverInstallationConfig': {'gpuDriverVersion': 'LATEST'}}]},
            'networkConfig': {'acceleratorNetworkProfile': 'auto'}}})
        ok(gcloud('container', 'clusters', 'get-credentials', 'rdma', '--zone=' + RDMA_ZONE))

        def kubectl(*args, stdin=None):
            return subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=120, input=stdin, check=False)
        # GKE's install of DRANET's DeviceClass follows the RDMA pool.
        wait_until(lambda: kubectl('get', 'deviceclass', 'mrdma.google.com').returncode == 0, "DRANET's DeviceClass mrdma.google.com",
                   interval=0.5)
        ok(kubectl('apply', '-f', os.path.join(SEED_001, '001-rdma-compute-class.yaml')))
        ok(kubectl('apply', '-f', os.path.join(SEED_001, '001-all-mrdma-template.yaml')))
        ok(kubectl('apply', '-f', vendored.path('seeds/001-nccl-test-workload.yaml')))
        ok(kubectl('wait', '--for=condition=Ready', 'pod/nccl-test-host-1', 'pod/nccl-test-host-2', '--timeout=90s'))
        nodes = {json.loads(ok(kubectl('get', 'pod', name, '-o', 'json')).stdout)['spec']['nodeName'] for name in ('nccl-test-host-1', 'nccl-test-host-2')}
        assert len(nodes) == 2 and all(node.startswith('gke-rdma-a3ultra-') for node in nodes)   # 8 GPUs each: one per node
        # The seed's own check (without -it: no terminal here).
        run = ok(kubectl('exec', 'nccl-test-host-1', '--', '/usr/local/gib/scripts/run_nccl_tests.sh', '-t', 'all_gather',
                         '-b', '1K', '-e', '8G', 'nccl-host-1', 'nccl-host-2'))
        assert 'synthetic' in run.stdout and '# Avg bus bandwidth' in run.stdout
    finally:
        ok(gcloud('container', 'clusters', 'delete', 'rdma', '--zone=' + RDMA_ZONE, '--quiet'))
