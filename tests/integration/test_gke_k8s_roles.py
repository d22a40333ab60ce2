"""Roles gke_gpudirect (seed 003, TCPXO) and gke_rdma (seed 001, DRANET) with the real ansible-playbook and
kubernetes.core against GKE clusters of the Container API sandbox that come alive as Kubernetes API
stand-ins (nodes from the node pools, DaemonSet and Pod controllers, Pods on podman running the stand-in
image, whose NCCL scripts print a clearly-synthetic nccl-tests table: the published healthy figure of the stand-in's own data,
a tenth of it for a run touching a node marked slow).

Sequence (style-kubernetes.md item 8): check mode (changed, nothing created), apply (changed, DaemonSets
ready on exactly the GPU nodes, the seed's NCCL test run through k8s_exec and judged), re-apply (not
changed), fields verified, one input changed (only that object changes), cleanup (state absent).
Failure paths: no GPU node matches (clear message, nothing applied), params whose VPCs do not exist (the wait
names the generations), a field-manager conflict, the catalog thresholds failing the synthetic numbers of a slow node.

GKE's network controllers are the stand-in's (controllers.py ``gke_networks``): Ready for params whose VPC and
subnet exist in the Compute sandbox, without observedGeneration, as real GKE writes it; ``pause('gke-networks')``
leaves a Ready from an older spec in place.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from sandbox import Sandbox
from sandbox.client import SandboxClient
from sandbox.gcloud import GcloudRunner
from sandbox.kube.exec import FAULT_SLOW_NODE
from waiting import wait_until
from playbook_runner import ansible_playbook_command

PROJECT = 'sandbox-project'
REGION = 'us-central1'
ZONE = 'us-central1-a'
VERSION = '1.33.5-gke.1308000'
RDMA_ZONE = 'us-central1-b'            # where the sandbox's catalog offers a3-ultragpu-8g
RDMA_VERSION = '1.34.8-gke.1278000'   # seed 001's floor for gpuDirectStrategy RDMA (resource.k8s.io/v1 from 1.34)
PREFIX = 'gpud'


def _collections_path():
    for entry in [*sys.path, *os.environ.get('PYTHONPATH', '').split(os.pathsep)]:
        if entry and os.path.isdir(os.path.join(entry, 'ansible_collections', 'kubernetes', 'core')) \
                and os.path.isdir(os.path.join(entry, 'ansible_collections', 'aiinfra', 'gpudirect')):
            return entry
    return None


def _kubectl_binary():
    gcloud = shutil.which('gcloud')
    candidate = os.path.join(os.path.dirname(os.path.realpath(gcloud)), 'kubectl.1.33') if gcloud else ''
    return candidate if os.path.exists(candidate) else None


COLLECTIONS = _collections_path()
KUBECTL = _kubectl_binary()
pytestmark = [
    pytest.mark.skipif(COLLECTIONS is None, reason='kubernetes.core beside the collection is needed (scripts/test build installs it)'),
    pytest.mark.skipif(KUBECTL is None, reason='the Cloud SDK with kubectl.1.33 is not installed'),
    pytest.mark.skipif(not (shutil.which('podman') and os.environ.get('CONTAINERS_CONF')),
                       reason='podman with CONTAINERS_CONF is needed: source tests/ci/podman.sh'),
]


def ok(result):
    assert result.returncode == 0, 'exit %d\nstdout:\n%s\nstderr:\n%s' % (result.returncode, result.stdout[-6000:], result.stderr[-3000:])
    return result


def task_output(run, name, role='gke_gpudirect'):
    """The lines ansible-playbook printed for the task ``name`` (from its TASK header to the next header)."""
    start = run.stdout.index('TASK [aiinfra.gpudirect.%s : %s]' % (role, name))
    end = run.stdout.find('\nTASK [', start + 1)
    return run.stdout[start:end if end > 0 else None]


class Live:
    def __init__(self, sandbox, gcloud, tmp):
        self.sandbox, self.gcloud, self.tmp = sandbox, gcloud, tmp

    def kube(self, cluster='gpud'):
        zone = RDMA_ZONE if cluster == 'rdma' else ZONE
        return self.sandbox.kube.cluster('projects/%s/locations/%s/clusters/%s' % (PROJECT, zone, cluster))

    def kubeconfig(self, cluster):
        """A kubeconfig with a bearer token (the stand-in accepts any): the auth plugin of gcloud's
        kubeconfig costs about a second per kubernetes.core call."""
        path = os.path.join(self.tmp, 'kubeconfig-' + cluster)
        self.kube(cluster).write_kubeconfig(path, context=cluster, token='sandbox-token')
        return path

    def play(self, cluster, role, variables, check=False, diff=False):
        """Run one role in a play against ``cluster`` (``check``, ``diff``: with --check, --diff); returns (CompletedProcess,
        recap counts)."""
        kubeconfig = self.kubeconfig(cluster)
        plays = [{'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
                  # The roles read through the kubernetes.core.k8s lookup, which module_defaults do not reach.
                  'vars': {'ansible_python_interpreter': sys.executable, 'gke_gpudirect_kubeconfig': kubeconfig,
                           'gke_rdma_kubeconfig': kubeconfig},
                  'module_defaults': {'group/kubernetes.core.k8s': {'kubeconfig': kubeconfig}},
                  'tasks': [{'name': 'The role', 'ansible.builtin.include_role': {'name': 'aiinfra.gpudirect.' + role}}]}]
        return self._run(plays, ['-e', json.dumps(variables)] + (['--check'] if check else []) + (['--diff'] if diff else []))

    def cases(self, cluster, role, cases):
        """Run the role once per variables in ``cases``, each in its own play of ONE ansible-playbook run (a run costs
        seconds), a failure rescued so the next case runs (its section then says ``case N failed``); returns each
        case's output (its PLAY section)."""
        kubeconfig = self.kubeconfig(cluster)
        plays = [{'name': 'case %d' % number, 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
                  'vars': {'ansible_python_interpreter': sys.executable, 'gke_gpudirect_kubeconfig': kubeconfig,
                           'gke_rdma_kubeconfig': kubeconfig},
                  'module_defaults': {'group/kubernetes.core.k8s': {'kubeconfig': kubeconfig}},
                  'tasks': [{'block': [{'name': 'The role', 'ansible.builtin.include_role': {'name': 'aiinfra.gpudirect.' + role},
                                        'vars': variables}],
                             'rescue': [{'name': 'Case %d failed' % number, 'ansible.builtin.debug': {'msg': 'case %d failed' % number}}]}]}
                 for number, variables in enumerate(cases)]
        run, _counts = self._run(plays, [])
        ok(run)
        sections = run.stdout.split('\nPLAY [case ')[1:]
        assert len(sections) == len(cases), run.stdout[-3000:]
        return sections

    def _run(self, plays, arguments):
        playbook = os.path.join(self.tmp, 'play.yml')
        with open(playbook, 'w', encoding='utf-8') as handle:
            json.dump(plays, handle)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
                   ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_INVENTORY_UNPARSED_WARNING='False')
        command = [*ansible_playbook_command(kubernetes=True), playbook, *arguments]
        started, cpu = time.monotonic(), os.times()
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400, check=False)
        if os.environ.get('GPUDIRECT_PLAY_TIMES'):   # where the time goes: wall and CPU seconds per ansible-playbook run
            spent = os.times()
            with open(os.environ['GPUDIRECT_PLAY_TIMES'], 'a', encoding='utf-8') as log:
                log.write('%6.1fs wall %6.1fs cpu rc=%d plays=%d %s\n' % (
                    time.monotonic() - started, spent.children_user + spent.children_system - cpu.children_user - cpu.children_system,
                    run.returncode, len(plays), ' '.join(arguments)[:140]))
        recap = re.search(r'localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)', run.stdout)
        counts = {'ok': int(recap.group(1)), 'changed': int(recap.group(2)), 'failed': int(recap.group(3))} if recap else {}
        return run, counts


@pytest.fixture(scope='module')
def live(tmp_path_factory):
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(latency=0.0, project=PROJECT).start()
    sandbox.kube = GkeClusters()
    try:
        config = tmp_path_factory.mktemp('gcloud-config')
        gcloud = GcloudRunner(sandbox, str(config))
        api = SandboxClient(sandbox.url)
        for number in range(1, 9):
            api.create_vpc(PROJECT, '%s-net-%d' % (PREFIX, number), '%s-sub-%d' % (PREFIX, number), REGION, '192.168.%d.0/24' % number)
        # Seed 003's TCPXO cluster and A3 Mega node pool (smaller: one default node, two A3 Mega nodes).
        ok(gcloud('--project', PROJECT, 'beta', 'container', 'clusters', 'create', 'gpud', '--enable-dataplane-v2',
                  '--enable-ip-alias', '--zone=' + ZONE, '--enable-multi-networking', '--cluster-version=' + VERSION,
                  '--no-enable-autoupgrade', '--num-nodes=1'))
        networks = []
        for number in range(1, 9):
            networks += ['--additional-node-network', 'network=%s-net-%d,subnetwork=%s-sub-%d' % (PREFIX, number, PREFIX, number)]
        ok(gcloud('beta', 'container', 'node-pools', 'create', 'a3mega', '--zone=' + ZONE, '--cluster=gpud',
                  '--accelerator=type=nvidia-h100-mega-80gb,count=8,gpu-driver-version=LATEST', '--machine-type=a3-megagpu-8g',
                  '--num-nodes=2', *networks, '--enable-gvnic', '--no-enable-autoupgrade'))
        state = Live(sandbox, gcloud, str(tmp_path_factory.mktemp('plays')))
        wait_until(lambda: state.kube() and len(state.kube().store.list('nodes')) == 3, 'the three nodes')
        state.controllers = sandbox.kube.controllers('projects/%s/locations/%s/clusters/gpud' % (PROJECT, ZONE))
        yield state
    finally:
        sandbox.stop()


def leftover_test_pod(name, label):
    """A Pod with a test Pod's name and label and another spec (one container, as seed 001's RDMA test Pods have)."""
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name, 'namespace': 'default', 'labels': {'name': label}},
            'spec': {'containers': [{'name': 'theirs', 'image': 'registry.example/other:1', 'command': ['sleep', 'infinity']}]}}


def _tcpxo(**extra):
    return dict({'gke_gpudirect_technology': 'TCPXO', 'gke_gpudirect_network_prefix': PREFIX, 'gke_gpudirect_node_pool': 'a3mega',
                 'gke_gpudirect_nccl_test': False, 'gke_gpudirect_wait_retries': 60, 'gke_gpudirect_wait_delay': 1}, **extra)


def test_gke_gpudirect_tcpxo_sequence(live, tmp_path):
    """One cluster state through the whole sequence (each play costs seconds: fewer plays, one test)."""
    store = live.kube().store
    cleaned = False
    try:
        # 1. Check mode: changed, nothing stored; --diff shows each object that would be created, one diff per object
        #    (k8s_converge's, the API server's dry-run answer after).
        run, counts = live.play('gpud', 'gke_gpudirect', _tcpxo(), check=True, diff=True)
        ok(run)
        # The role's deprecated way to name the technology still works, and says it is deprecated.
        assert 'gke_gpudirect_technology is deprecated: give gke_gpudirect_machine_type' in run.stderr, run.stderr[-3000:]
        assert counts['changed'] > 0 and counts['failed'] == 0
        diffs = task_output(run, 'Apply the objects that differ (server-side apply)')
        for name in ('DaemonSet kube-system/nccl-tcpxo-installer', 'DaemonSet kube-system/device-injector', 'Network vpc8', 'GKENetworkParamSet vpc1'):
            assert '--- before: %s\n+++ after: %s\n' % (name, name) in diffs, diffs[:3000]
        assert 'gpud-net-8' in diffs, diffs[:3000]
        assert store.get('networks.networking.gke.io', 'vpc1') is None
        assert store.get('daemonsets.apps', 'nccl-tcpxo-installer', 'kube-system') is None

        # 2. Apply, then the seed's NCCL test judged with a threshold the synthetic table meets: the verdict passes (the
        #    stand-in prints nccl-tests' own footer, so the run is complete) and the play does not fail.
        low = {'all_gather': {'avg_busbw_gbps': 0.001, 'large_busbw_gbps': 0.001}}
        run, counts = live.play('gpud', 'gke_gpudirect', _tcpxo(gke_gpudirect_nccl_test=True, gke_gpudirect_report_dir=str(tmp_path / 'pass'),
                                                                gke_gpudirect_nccl_thresholds=low))
        ok(run)
        assert counts['changed'] > 0
        assert '\nnvidia.com/gpu on the 2 GPU nodes: ready (' in run.stdout, run.stdout[-4000:]   # seed 003: 8 allocatable each
        assert re.search(r'\nDaemonSets (nccl-tcpxo-installer, device-injector|device-injector, nccl-tcpxo-installer) on the 2 GPU '
                         r'nodes: ready \(\d+ reads?, \d+ s\)\n', run.stdout), run.stdout[-4000:]
        with open(str(tmp_path / 'pass' / 'nccl-test.log'), encoding='utf-8') as handle:
            log = handle.read()
        assert 'synthetic' in log and 'demo-run-nccl-test-tcpxo-via-mpi.sh' in log   # the seed's /scripts/allgather.sh ran
        # The test Pods run with NCCL_DEBUG=INFO, so NCCL's network line is in the log, and the verdict requires it (issue 24
        # item 7: the GKE path passed on bandwidth alone).
        assert 'NCCL INFO Using network FasTrak' in log, log
        with open(str(tmp_path / 'pass' / 'report.json'), encoding='utf-8') as handle:
            verdict = json.load(handle)
        assert verdict['verdict'] == 'PASS' and not verdict['reasons'], verdict
        assert [check['message'] for check in verdict['checks'] if check['criterion'] == 'gpudirect'] == [
            'NCCL used FasTrak (GPUDirect-TCPXO)'], verdict['checks']
        assert verdict['synthetic'] and verdict['summary'].startswith('STAND-IN OUTPUT (synthetic numbers, nothing measured): PASS -- ')
        assert store.get('pods', 'nccl-test-host-1', 'default') is None    # the test workload is deleted

        # 3. Re-apply (nothing changes), and the test again judged with the catalog's A3 Mega reference, one GPU node marked
        #    slow by the stand-in's fault annotation (its figure a tenth of its healthy one): the synthetic
        #    table fails it, the play fails, and the test workload is deleted also on failure. A test Pod of ours left by an
        #    earlier run with another spec (as the RDMA seed's Pod of the same name would be) is replaced first: a Pod's
        #    spec cannot change in place, the API server would refuse the apply with 422.
        store.create(leftover_test_pod('nccl-test-host-1', 'nccl-host-1'), field_manager='aiinfra.gpudirect.gke_nccl_test')
        slow = store.list('nodes', label_selector='cloud.google.com/gke-nodepool=a3mega')[0]
        slow['metadata']['annotations'][FAULT_SLOW_NODE] = 'true'
        store.update(slow)
        try:
            run, counts = live.play('gpud', 'gke_gpudirect', _tcpxo(gke_gpudirect_nccl_test=True, gke_gpudirect_report_dir=str(tmp_path / 'fail')))
        finally:
            slow = store.get('nodes', slow['metadata']['name'])
            del slow['metadata']['annotations'][FAULT_SLOW_NODE]
            store.update(slow)
        assert run.returncode != 0 and counts['failed'] == 1, run.stdout[-4000:]
        applied = task_output(run, 'Apply the objects that differ (server-side apply)')   # nothing differs: no write at all
        assert 'skipping: [localhost]' in applied and 'changed:' not in applied, applied
        replaced = task_output(run, 'Replace the test Pods left from an earlier run (nccl-test-host-1)')
        assert 'changed: [localhost]' in replaced, run.stdout[-4000:]   # the task's name names the Pod: nccl-test-host-1
        assert re.search(r'NCCL test failed: .*bus bandwidth at 8 GiB 18\.89 GB/s < \d+\.\d+ GB/s \(0\.6 of ', run.stdout), run.stdout[-3000:]
        assert store.get('pods', 'nccl-test-host-1', 'default') is None

        # 3b. A Pod of that name that someone else made stays, and the play says whose name is taken before applying anything.
        store.create(leftover_test_pod('nccl-test-host-2', 'nccl-host-2'), field_manager='kubectl-client-side-apply')
        try:
            run, counts = live.play('gpud', 'gke_gpudirect', _tcpxo(gke_gpudirect_nccl_test=True))
            assert run.returncode != 0 and counts['failed'] == 1, run.stdout[-4000:]
            assert ('Pods nccl-test-host-2 in namespace default have the test Pods\' names but were not made by this collection'
                    in run.stdout), run.stdout[-3000:]
            assert store.get('pods', 'nccl-test-host-2', 'default')['spec']['containers'][0]['name'] == 'theirs'
            assert store.get('pods', 'nccl-test-host-1', 'default') is None   # the workload was not applied
        finally:
            store.delete('pods', 'nccl-test-host-2', 'default')

        # 5. Fields, read back.
        params = store.get('gkenetworkparamsets.networking.gke.io', 'vpc8')
        assert params['spec'] == {'vpc': 'gpud-net-8', 'vpcSubnet': 'gpud-sub-8', 'deviceMode': 'NetDevice'}
        assert store.get('networks.networking.gke.io', 'vpc8')['spec']['type'] == 'Device'
        installer = store.get('daemonsets.apps', 'nccl-tcpxo-installer', 'kube-system')
        assert {m['manager'] for m in installer['metadata']['managedFields'] if m['operation'] == 'Apply'} == {'aiinfra.gpudirect.gke_gpudirect'}
        assert installer['status']['desiredNumberScheduled'] == 2 and installer['status']['numberReady'] == 2
        node = store.list('nodes', label_selector='cloud.google.com/gke-nodepool=a3mega')[0]
        assert 'networking.gke.io/north-interfaces' in node['metadata']['annotations']   # the Networks reached the nodes

        # 6. One input changed: only the installer changes.
        image = 'us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.14'
        run, counts = live.play('gpud', 'gke_gpudirect', _tcpxo(gke_gpudirect_plugin_image=image))
        ok(run)
        assert counts['changed'] == 1, run.stdout[-4000:]
        assert '"msg": "applied: DaemonSet/nccl-tcpxo-installer"' in run.stdout, run.stdout[-4000:]
        installer = store.get('daemonsets.apps', 'nccl-tcpxo-installer', 'kube-system')
        assert installer['spec']['template']['spec']['initContainers'][1]['image'] == image

        # 6b. A DaemonSet that does not become ready in time (the kubelet paused, a new image rolling out): the wait
        #     ends, and the check names the DaemonSet's verdict and the GPU nodes without a ready Pod of it.
        live.kube().plane.pause('kwok')   # every node's kubelet frozen: the new Pods stay Pending
        try:
            stuck = _tcpxo(gke_gpudirect_plugin_image=image.replace('v1.0.14', 'v1.0.13'), gke_gpudirect_wait_retries=2)
            run, counts = live.play('gpud', 'gke_gpudirect', stuck)
        finally:
            live.kube().plane.resume('kwok')
        assert run.returncode != 0 and counts['failed'] == 1, run.stdout[-4000:]
        assert re.search(r'on the 2 GPU nodes: pending: DaemonSet kube-system/nccl-tcpxo-installer \w+ \d of 2 \(still pending after '
                         r'\d+ s, \d+ reads\);[^"]* nodes without a ready Pod of its current spec: gke-\S+', run.stdout), run.stdout[-4000:]
        ok(live.play('gpud', 'gke_gpudirect', _tcpxo(gke_gpudirect_plugin_image=image))[0])   # back to step 6's installer, ready

        # 7. Params that point at VPCs which do not exist (another prefix: generation 2 of every GKENetworkParamSet).
        #    a) GKE's network controller paused: the Ready of generation 1 stays. Real GKE writes no observedGeneration
        #       on these conditions, so nothing tells a stale Ready from a current one: the role passes (a limit of
        #       what GKE reports, named in docs/worklog/GKE_NOTES.md).
        live.controllers.pause('gke-networks')
        other = _tcpxo(gke_gpudirect_network_prefix='other', gke_gpudirect_plugin_image=image, gke_gpudirect_wait_retries=3)
        run, counts = live.play('gpud', 'gke_gpudirect', other)
        ok(run)
        assert store.get('gkenetworkparamsets.networking.gke.io', 'vpc1')['metadata']['generation'] == 2
        #    b) The controller running: it validates the params against Compute Engine and the role's wait names why.
        live.controllers.resume('gke-networks')
        run, counts = live.play('gpud', 'gke_gpudirect', other)
        assert run.returncode != 0 and counts['failed'] == 1
        assert 'pending: GKENetworkParamSet vpc1 Ready=False (SubnetNotFound) subnet: other-sub-1 not found in VPC: other-net-1' \
            in run.stdout, run.stdout[-3000:]

        # 8. A field-manager conflict: someone else takes the installer's image with a forced server-side apply;
        #    the role does not force it back.
        env = dict(live.gcloud.env, KUBECONFIG=live.kubeconfig('gpud'))
        other = {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'nccl-tcpxo-installer', 'namespace': 'kube-system'},
                 'spec': {'selector': {'matchLabels': {'k8s-app': 'nccl-tcpxo-installer'}}, 'template': {
                     'metadata': {'labels': {'k8s-app': 'nccl-tcpxo-installer'}},
                     'spec': {'initContainers': [{'name': 'nccl-tcpxo-installer', 'image': 'example/other:1'}],
                              'containers': [{'name': 'pause', 'image': 'gke.gcr.io/pause:3.8'}]}}}}
        ok(subprocess.run([KUBECTL, 'apply', '--server-side', '--force-conflicts', '--field-manager=someone-else', '-f', '-'],
                          input=json.dumps(other), env=env, capture_output=True, text=True, timeout=60, check=False))
        conflict, = live.cases('gpud', 'gke_gpudirect', [_tcpxo()])
        assert 'case 0 failed' in conflict and 'Conflict' in conflict and 'someone-else' in conflict, conflict[-3000:]
        #    The failure says which object, which fields and whose they are, and the way out.
        assert ('DaemonSet kube-system/nccl-tcpxo-installer was not applied: .spec.template.spec.containers[name=\\"pause\\"].image, '
                '.spec.template.spec.initContainers[name=\\"nccl-tcpxo-installer\\"].image are owned by \\"someone-else\\", which '
                'changed them after the collection applied it') in conflict, conflict[-3000:]
        assert 'Take them back with gke_gpudirect_force_conflicts: true' in conflict, conflict[-3000:]
        #    The way out: the forced apply takes the fields back.
        ok(live.play('gpud', 'gke_gpudirect', _tcpxo(gke_gpudirect_force_conflicts=True))[0])
        installer = store.get('daemonsets.apps', 'nccl-tcpxo-installer', 'kube-system')['spec']['template']['spec']
        assert 'example/other:1' not in [container['image'] for container in installer['initContainers'] + installer['containers']]
        # 9. Cleanup (state absent), with a DaemonSet of one of the role's names that someone else made (the role's own
        #    deleted first): the cleanup leaves it, as everything the collection did not apply, and says so.
        store.delete('daemonsets.apps', 'device-injector', 'kube-system')
        wait_until(lambda: store.get('daemonsets.apps', 'device-injector', 'kube-system') is None, 'DaemonSet device-injector to go',
                   timeout=120)
        labels = {'app': 'theirs'}
        store.create({'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'device-injector', 'namespace': 'kube-system'},
                      'spec': {'selector': {'matchLabels': labels}, 'template': {'metadata': {'labels': labels}, 'spec': {
                          'nodeSelector': {'theirs': 'nowhere'}, 'containers': [{'name': 'pause', 'image': 'gke.gcr.io/pause:3.8'}]}}}},
                     field_manager='kubectl-client-side-apply')
        run, _counts = live.play('gpud', 'gke_gpudirect', _tcpxo(gke_gpudirect_state='absent'))
        ok(run)
        assert 'not deleted, not made by aiinfra.gpudirect.gke_gpudirect or aiinfra.gpudirect.gke_nccl_test: DaemonSet ' \
            'kube-system/device-injector (written by kube-controller-manager, kubectl-client-side-apply)' in run.stderr, run.stderr[-3000:]
        assert store.get('daemonsets.apps', 'device-injector', 'kube-system')['spec']['selector'] == {'matchLabels': labels}
        store.delete('daemonsets.apps', 'device-injector', 'kube-system')
        wait_until(lambda: store.get('daemonsets.apps', 'device-injector', 'kube-system') is None, 'their DaemonSet to go', timeout=120)
        cleaned = True
    finally:
        live.controllers.resume('gke-networks')
        if not cleaned:
            ok(live.play('gpud', 'gke_gpudirect', _tcpxo(gke_gpudirect_state='absent'))[0])
    assert store.get('networks.networking.gke.io', 'vpc1') is None
    assert store.get('daemonsets.apps', 'device-injector', 'kube-system') is None


def test_bad_input_and_no_gpu_node_fail_before_applying(live):
    no_pool, no_vpcs, bad_technology = live.cases('gpud', 'gke_gpudirect', [
        _tcpxo(gke_gpudirect_node_pool='no-such-pool'),
        _tcpxo(gke_gpudirect_network_prefix='', gke_gpudirect_networks=[{'name': 'a', 'subnet': 'b'}]),
        _tcpxo(gke_gpudirect_technology='RDMA')])
    assert 'case 0 failed' in no_pool and ('no GPU node matches cloud.google.com/gke-accelerator in (nvidia-h100-mega-80gb), '
                                           'cloud.google.com/gke-nodepool=no-such-pool: the DaemonSets would run nowhere') in no_pool
    assert 'case 1 failed' in no_vpcs and 'networks: GPUDirect-TCPXO needs 8 data VPCs' in no_vpcs
    assert 'case 2 failed' in bad_technology and 'gke_gpudirect_technology' in bad_technology   # argument_specs: choices TCPXO, TCPX
    assert live.kube().store.get('networks.networking.gke.io', 'vpc1') is None


def test_workload_filter_output_is_accepted_by_the_server(live):
    """Issue 11 item 5: the filter's Job and JobSet-free Deployment pass `kubectl apply --dry-run=server`."""
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import workload  # pylint: disable=import-outside-toplevel
    job = {'apiVersion': 'batch/v1', 'kind': 'Job', 'metadata': {'name': 'train', 'namespace': 'default'}, 'spec': {'template': {'spec': {
        'restartPolicy': 'Never', 'containers': [{'name': 'main', 'image': 'example/train:1', 'command': ['python', 'train.py']}]}}}}
    env = dict(live.gcloud.env, KUBECONFIG=live.kubeconfig('gpud'))
    for technology in ('TCPXO', 'TCPX'):
        body = json.dumps(workload.gpudirect_workload(job, technology, nccl_env_mode='recommended'))
        run = ok(subprocess.run([KUBECTL, 'apply', '--dry-run=server', '--validate=strict', '-f', '-'], input=body, env=env,
                                capture_output=True, text=True, timeout=60, check=False))
        assert 'job.batch/train created (server dry run)' in run.stdout
    assert live.kube().store.get('jobs.batch', 'train', 'default') is None


def test_gke_rdma_all_mrdma_and_the_seed_test(live, tmp_path):
    api = SandboxClient(live.sandbox.url)
    ok(live.gcloud('container', 'clusters', 'create', 'rdma', '--zone=' + RDMA_ZONE, '--cluster-version=' + RDMA_VERSION,
                   '--enable-dataplane-v2', '--enable-ip-alias', '--num-nodes=1', '--no-enable-autoupgrade'))
    try:
        # SDK 528's gcloud has no --gpudirect-strategy (seed 001 needs SDK 550+): the pool through the API, with the fields those flags set.
        api.must('POST', 'v1/projects/%s/locations/%s/clusters/rdma/nodePools' % (PROJECT, RDMA_ZONE), {'nodePool': {
            'name': 'a3ultra', 'initialNodeCount': 2,
            'config': {'machineType': 'a3-ultragpu-8g', 'gpuDirectConfig': {'gpuDirectStrategy': 'RDMA'},
                       'labels': {'cloud.google.com/gke-networking-dra-driver': 'true'},
                       'accelerators': [{'acceleratorType': 'nvidia-h200-141gb', 'acceleratorCount': '8',
                                         'gpuDriverInstallationConfig': {'gpuDriverVersion': 'LATEST'}}]},
            'networkConfig': {'acceleratorNetworkProfile': 'auto'}}})
        wait_until(lambda: live.kube('rdma') and live.kube('rdma').store.get('deviceclasses.resource.k8s.io', 'mrdma.google.com')
                   and len(live.kube('rdma').store.list('nodes')) == 3, 'the RDMA nodes and DRANET DeviceClass')
        variables = {'gke_rdma_node_pool': 'a3ultra', 'gke_rdma_wait_delay': 1}
        # A threshold the synthetic table meets and no network evidence asked: the verdict passes.
        run, counts = live.play('rdma', 'gke_rdma', dict(
            variables, gke_rdma_report_dir=str(tmp_path / 'pass'), gke_rdma_nccl_require_network_evidence=False,
            gke_rdma_nccl_thresholds={'all_gather': {'avg_busbw_gbps': 0.001, 'large_busbw_gbps': 0.001}}))
        ok(run)
        with open(str(tmp_path / 'pass' / 'nccl-test.log'), encoding='utf-8') as handle:
            assert 'run_nccl_tests.sh -t all_gather -b 1K -e 8G nccl-host-1 nccl-host-2' in handle.read()
        with open(str(tmp_path / 'pass' / 'report.json'), encoding='utf-8') as handle:
            verdict = json.load(handle)
        assert verdict['verdict'] == 'PASS' and not verdict['reasons'], verdict
        assert live.kube('rdma').store.get('pods', 'nccl-test-host-1', 'default') is None
        template = live.kube('rdma').store.get('resourceclaimtemplates.resource.k8s.io', 'all-mrdma', 'default')
        assert template['spec']['spec']['devices']['requests'][0]['exactly'] == {'deviceClassName': 'mrdma.google.com', 'allocationMode': 'All'}
        # Re-applied (nothing changes), then the catalog's A3 Ultra reference and the network evidence RDMA needs: the
        # stand-in's wrapper prints the published healthy A3 Ultra figure (pod-tools/nccl-figures) and gIB's lines.
        run, counts = live.play('rdma', 'gke_rdma', dict(variables, gke_rdma_report_dir=str(tmp_path / 'healthy')))
        ok(run)
        applied = task_output(run, 'Apply the objects that differ (server-side apply)', role='gke_rdma')   # nothing differs: no write
        assert 'ok: [localhost]' in applied and 'changed:' not in applied, applied
        assert '"msg": "applied: none (every object is as rendered)"' in run.stdout, run.stdout[-3000:]
        with open(str(tmp_path / 'healthy' / 'report.json'), encoding='utf-8') as handle:
            verdict = json.load(handle)
        assert verdict['verdict'] == 'PASS' and verdict['synthetic'], verdict
        # Another machine type than the pool's: no node matches; then cleanup, in the same ansible-playbook run.
        mismatch, cleanup = live.cases('rdma', 'gke_rdma', [dict(variables, gke_rdma_machine_type='a4-highgpu-8g', gke_rdma_nccl_test=False),
                                                            dict(variables, gke_rdma_state='absent')])
        assert 'case 0 failed' in mismatch and 'no node matches cloud.google.com/gke-accelerator in (nvidia-b200)' in mismatch
        assert 'case 1 failed' not in cleanup, cleanup[-3000:]
        assert live.kube('rdma').store.get('resourceclaimtemplates.resource.k8s.io', 'all-mrdma', 'default') is None
        # gke_gpudirect on this cluster, made without --enable-multi-networking: refused before anything is applied, and
        # its delete leaves the kinds the cluster does not serve alone.
        no_multi_network, deleted = live.cases('rdma', 'gke_gpudirect', [_tcpxo(), _tcpxo(gke_gpudirect_state='absent')])
        assert 'case 0 failed' in no_multi_network and (
            'the cluster has no multi-networking (CRD networks.networking.gke.io, gkenetworkparamsets.networking.gke.io missing)'
            in no_multi_network), no_multi_network[-3000:]
        assert live.kube('rdma').store.get('daemonsets.apps', 'nccl-tcpxo-installer', 'kube-system') is None
        assert 'case 1 failed' not in deleted, deleted[-3000:]
    finally:
        ok(live.gcloud('container', 'clusters', 'delete', 'rdma', '--zone=' + RDMA_ZONE, '--quiet'))
