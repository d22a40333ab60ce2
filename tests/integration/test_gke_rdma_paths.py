"""Role gke_rdma on seed 001's ComputeClass path and manual multi-network path, with the real ansible-playbook and
kubernetes.core against an A3 Ultra cluster of the sandbox that comes alive (a Kubernetes API stand-in whose GKE
network controllers validate each GKENetworkParamSet against the Compute sandbox's VPCs and mark it Ready).

The cluster half is made with the collection's modules: seed 001's gVNIC VPC and RDMA VPC with 8 subnets
(gce_gpudirect_network layout gke_rdma), the cluster, the multi-network A3 Ultra pool (9 additional networks).
One playbook applies both paths (ComputeClass; gvnic-1 and rdma-0..7 Ready at their generation, the RDMA
installer DaemonSet on both RDMA nodes), after a check-mode run that sends only server-side dry runs; a rerun
changes nothing (and sends no write); the path's objects go with state absent (four ansible-playbook runs in all:
each costs seconds on two cores).

Parity (issue 12, item 8): seed 001's own manifests sent by the real kubectl (``create --dry-run=server``, under
another name) are stored by the server exactly as the objects the role applied.

The NCCL test of both paths runs in the first playbook: seed 001's all_gather command through kubernetes.core.k8s_exec,
judged and written up by the nccl_test role.  On the ComputeClass path the seed's test Pods select the class; the
stand-in's simulated node pool auto-creation (tests/sandbox/kube/autoprovisioning.py) gives them a pool of the class's
priority (A3 Ultra on the reservation ``my-reservation``, which the fixture creates in the Compute sandbox).  On the
manual path the test Pods are the vendor's, attached to rdma-0..7 by annotation.  Pods
do not run on podman here: the stand-in's synthetic runtime (exec.SyntheticRuntime) reports every container running
at once and answers exec with the stand-in image's own NCCL wrapper (tests/images/kube-pod/tools/nccl_tests.sh, its
synthetic table) run on this host, for the seed's command in container ``test`` only.
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.aiinfra.gpudirect.plugins.modules import gce_gpudirect_network, gke_gpudirect_cluster, gke_gpudirect_node_pool
from module_runner import run_module
from playbook_runner import ansible_playbook_command, collections_path
from sandbox.kube import vendored

PROJECT = 'sandbox-project'
ZONE = 'us-central1-b'
SEEDS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'sandbox', 'kube', 'manifests', 'seeds')
KUBECTL = os.path.join(os.path.dirname(os.path.realpath(shutil.which('gcloud'))), 'kubectl.1.33') if shutil.which('gcloud') else ''
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason='the Cloud SDK with kubectl.1.33 is not installed')

COMPUTE_CLASS = {'gke_rdma_networking': 'compute_class', 'gke_rdma_compute_class': 'rdma-class', 'gke_rdma_nccl_test': False, 'gke_rdma_wait_delay': 1,
                 'gke_rdma_compute_class_priorities': [{'machine_type': 'a3-ultragpu-8g', 'reservation': 'my-reservation',
                                                        'reservation_zones': [ZONE]}]}
MULTI_NETWORK = {'gke_rdma_networking': 'multi_network', 'gke_rdma_network_prefix': 'u', 'gke_rdma_node_pool': 'manual',
                 'gke_rdma_installer_daemonset': True, 'gke_rdma_nccl_test': False, 'gke_rdma_wait_delay': 1}
# A threshold the stand-in's synthetic table meets, and no network evidence asked (the table has no NET lines).
SYNTHETIC_PASS = {'gke_rdma_nccl_test': True, 'gke_rdma_nccl_require_network_evidence': False,
                  'gke_rdma_nccl_thresholds': {'all_gather': {'avg_busbw_gbps': 0.001, 'large_busbw_gbps': 0.001}}}
TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'sandbox', 'kube', 'pod-tools')
SEED_COMMAND = '/usr/local/gib/scripts/run_nccl_tests.sh -t all_gather -b 1K -e 8G nccl-host-1 nccl-host-2'
EXECS = []


def stand_in_exec(pod, container, command):
    """The stand-in NCCL wrapper (pod-tools/nccl_tests.sh), run on this host under the seed's name for seed 001's
    command in container ``test``; else exit 127."""
    EXECS.append((pod['metadata']['name'], container, command))
    if container != 'test' or command != SEED_COMMAND.split():
        return ['sh', '-c', 'echo "stand-in: no such command in this test: $*" >&2; exit 127', 'exec', *command]
    return ['env', 'STANDIN_TOOLS=' + TOOLS, 'sh', '-c', '. "$STANDIN_TOOLS/nccl_tests.sh"', *command]


@pytest.fixture(scope='module')
def ultra(tmp_path_factory):
    from sandbox import Sandbox  # pylint: disable=import-outside-toplevel
    from sandbox.client import SandboxClient  # pylint: disable=import-outside-toplevel
    from sandbox.kube.exec import ExecRuntime  # pylint: disable=import-outside-toplevel
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(latency=0.0, project=PROJECT).start()
    sandbox.kube = GkeClusters(runtime=ExecRuntime(stand_in_exec))
    try:
        common = {'project': PROJECT, 'auth_kind': 'accesstoken', 'access_token': 'sandbox-token',
                  'container_endpoint': sandbox.container_url, 'compute_endpoint': sandbox.compute_url}
        # Seed 001's ComputeClass names the reservation my-reservation in us-central1-b: it exists here.
        SandboxClient(sandbox.compute_url).must('POST', 'projects/%s/zones/%s/reservations' % (PROJECT, ZONE), {
            'name': 'my-reservation', 'specificReservation': {'count': '2', 'instanceProperties': {'machineType': 'a3-ultragpu-8g'}}})
        assert run_module(gce_gpudirect_network.main, dict(common, region='us-central1', zone=ZONE, machine_type='a3-ultragpu-8g',
                                                           layout='gke_rdma', network_prefix='u'))['changed']
        assert run_module(gke_gpudirect_cluster.main, dict(common, cluster='ultra', location=ZONE, machine_type='a3-ultragpu-8g',
                                                           default_pool_node_count=1))['changed']
        pool = run_module(gke_gpudirect_node_pool.main, dict(common, cluster='ultra', location=ZONE, name='manual', machine_type='a3-ultragpu-8g',
                                                             networking='multi_network', network_prefix='u', nodes_timeout=60))
        assert len(pool['nodes']) == 2, pool
        sandbox.tmp = tmp_path_factory.mktemp('rdma-paths')
        sandbox.api = SandboxClient(sandbox.container_url)
        sandbox.cluster = sandbox.kube.cluster('projects/%s/locations/%s/clusters/ultra' % (PROJECT, ZONE))
        sandbox.cluster.write_kubeconfig(str(sandbox.tmp / 'kubeconfig'), context='ultra', token='sandbox-token')
        yield sandbox
    finally:
        sandbox.kube.stop()
        sandbox.stop()


def play(ultra, *plays, check=False, diff=False, output=None, fails=False):
    """One ansible-playbook run, a play per role variables dict (``check``, ``diff``: with --check, --diff); -> per play,
    the changed task names (and ``output``, a list, gets each play's output). ``fails``: the run must fail."""
    playbook = ultra.tmp / 'play.yml'
    playbook.write_text(json.dumps([{
        'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
        # The role reads through the kubernetes.core.k8s lookup, which module_defaults do not reach.
        'vars': {'ansible_python_interpreter': sys.executable, 'gke_rdma_kubeconfig': str(ultra.tmp / 'kubeconfig')},
        'module_defaults': {'group/kubernetes.core.k8s': {'kubeconfig': str(ultra.tmp / 'kubeconfig')}},
        'tasks': [{'ansible.builtin.include_role': {'name': 'aiinfra.gpudirect.gke_rdma'}, 'vars': variables}]} for variables in plays]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='False')
    command = [*ansible_playbook_command(kubernetes=True), str(playbook)] + (['--check'] if check else []) \
        + (['--diff'] if diff else [])
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400, check=False)
    assert (run.returncode != 0) == fails, run.stdout[-6000:] + run.stderr[-2000:]
    changed = []
    for section in run.stdout.split('\nPLAY [')[1:]:
        if output is not None:
            output.append(section)
        tasks = re.findall(r'^TASK \[(?:[\w.]+ : )?(.*?)\] \**\n(.*?)(?=^TASK \[|^PLAY|\Z)', section, re.M | re.S)
        changed.append([name for name, body in tasks if re.search(r'^changed:', body, re.M)])
    return changed


def stored(ultra, ref, name, namespace=None):
    return ultra.cluster.store.get(ref, name, namespace)


def test_compute_class_and_manual_networks_apply_rerun_delete(ultra):
    reports = {'compute_class': ultra.tmp / 'compute-class-report', 'multi_network': ultra.tmp / 'manual-report'}
    # Check mode: the applies are server-side dry runs (dryRun=All), nothing else is sent that could change the cluster;
    # --diff shows each object that would be created.
    since, checked = len(ultra.cluster.requests), []
    assert play(ultra, COMPUTE_CLASS, MULTI_NETWORK, check=True, diff=True, output=checked) == [
        ['Apply the objects that differ (server-side apply)']] * 2
    for section, names in zip(checked, (['ComputeClass rdma-class', 'ResourceClaimTemplate default/all-mrdma'],
                                        ['GKENetworkParamSet rdma-7', 'Network gvnic-1', 'DaemonSet kube-system/nccl-rdma-installer'])):
        diffs = section[section.index('TASK [aiinfra.gpudirect.gke_rdma : Apply the objects that differ (server-side apply)]'):]
        assert all('--- before: %s\n+++ after: %s\n' % (name, name) in diffs for name in names) and '\n-{}\n' in diffs, diffs[:3000]
    writes = [(method, path) for method, path, *_rest in ultra.cluster.requests[since:] if method in ('POST', 'PUT', 'PATCH', 'DELETE')]
    assert writes and all('dryRun=All' in path for _method, path in writes), writes
    assert stored(ultra, 'computeclasses.cloud.google.com', 'rdma-class') is None
    assert ultra.cluster.store.list('gkenetworkparamsets.networking.gke.io') == []

    first = play(ultra, dict(COMPUTE_CLASS, **SYNTHETIC_PASS, gke_rdma_report_dir=str(reports['compute_class'])),
                 dict(MULTI_NETWORK, **SYNTHETIC_PASS, gke_rdma_report_dir=str(reports['multi_network'])))
    assert first == [['Apply the objects that differ (server-side apply)', 'Apply the test workload (server-side apply)',
                      'Create the report directory on the controller', 'Save the test output on the controller',
                      'Write the report directory on the controller', 'Delete the test workload']] * 2, first
    nccl_tests_of_both_paths(ultra, reports)
    compute_class = stored(ultra, 'computeclasses.cloud.google.com', 'rdma-class')
    assert compute_class['spec']['priorities'][0]['gpuDirect'] == 'rdma'
    assert stored(ultra, 'resourceclaimtemplates.resource.k8s.io', 'all-mrdma', 'default') is not None
    params = {o['metadata']['name']: o for o in ultra.cluster.store.list('gkenetworkparamsets.networking.gke.io')}
    assert sorted(params) == ['gvnic-1'] + ['rdma-%d' % n for n in range(8)]
    assert params['rdma-3']['spec'] == {'vpc': 'u-rdma-net', 'vpcSubnet': 'u-rdma-sub-3', 'deviceMode': 'RDMA'}
    assert all(any(c['type'] == 'Ready' and c['status'] == 'True' for c in p['status']['conditions']) for p in params.values())
    installer = stored(ultra, 'daemonsets.apps', 'nccl-rdma-installer', 'kube-system')
    assert installer['status']['desiredNumberScheduled'] == installer['status']['numberReady'] == 2
    seed_manifests_are_stored_as_the_roles(ultra)

    since = len(ultra.cluster.requests)
    assert play(ultra, COMPUTE_CLASS, MULTI_NETWORK) == [[], []], 'a rerun changes nothing (without the NCCL test, which always runs)'
    assert [method for method, *_rest in ultra.cluster.requests[since:] if method in ('POST', 'PUT', 'PATCH', 'DELETE')] == []

    field_taken_by_someone_else_is_named_and_taken_back_when_asked(ultra)

    play(ultra, dict(COMPUTE_CLASS, gke_rdma_state='absent'), dict(MULTI_NETWORK, gke_rdma_state='absent'))
    assert stored(ultra, 'computeclasses.cloud.google.com', 'rdma-class') is None
    assert ultra.cluster.store.list('gkenetworkparamsets.networking.gke.io') == []
    assert [n['metadata']['name'] for n in ultra.cluster.store.list('networks.networking.gke.io')] == ['default']
    assert stored(ultra, 'daemonsets.apps', 'nccl-rdma-installer', 'kube-system') is None


def field_taken_by_someone_else_is_named_and_taken_back_when_asked(ultra):
    """Someone else takes the installer's image (a forced server-side apply of another field manager, as kubectl set image
    does): the rerun names the object, the field and its manager with the way out; gke_rdma_force_conflicts: true takes
    the field back."""
    installer = stored(ultra, 'daemonsets.apps', 'nccl-rdma-installer', 'kube-system')
    image = installer['spec']['template']['spec']['initContainers'][0]['image']
    theirs = {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'nccl-rdma-installer', 'namespace': 'kube-system'},
              'spec': {'selector': installer['spec']['selector'], 'template': {
                  'metadata': {'labels': installer['spec']['template']['metadata']['labels']},
                  'spec': {'initContainers': [{'name': 'nccl-rdma-installer', 'image': 'example/other:1'}],
                           'containers': [dict(installer['spec']['template']['spec']['containers'][0])]}}}}
    env = dict(os.environ, KUBECONFIG=str(ultra.tmp / 'kubeconfig'))
    taken = subprocess.run([KUBECTL, 'apply', '--server-side', '--force-conflicts', '--field-manager=someone-else', '-f', '-'],
                           input=json.dumps(theirs), env=env, capture_output=True, text=True, timeout=60, check=False)
    assert taken.returncode == 0, taken.stderr
    output = []
    play(ultra, MULTI_NETWORK, fails=True, output=output)
    assert ('DaemonSet kube-system/nccl-rdma-installer was not applied: ' in output[0]
            and 'owned by \\"someone-else\\"' in output[0] and 'gke_rdma_force_conflicts: true' in output[0]), output[0][-4000:]
    assert stored(ultra, 'daemonsets.apps', 'nccl-rdma-installer', 'kube-system')['spec']['template']['spec']['initContainers'][0][
        'image'] == 'example/other:1'
    assert play(ultra, dict(MULTI_NETWORK, gke_rdma_force_conflicts=True)) == [['Apply the objects that differ (server-side apply)']]
    assert stored(ultra, 'daemonsets.apps', 'nccl-rdma-installer', 'kube-system')['spec']['template']['spec']['initContainers'][0][
        'image'] == image


def nccl_tests_of_both_paths(ultra, reports):
    """Each path's test Pods ran the seed's command (once, in nccl-test-host-1's container test), the verdict is the
    collection's, and the workload is gone again; the Pods ran where each path puts them."""
    assert EXECS == [('nccl-test-host-1', 'test', SEED_COMMAND.split())] * 2, EXECS
    for report in reports.values():
        with open(str(report / 'nccl-test.log'), encoding='utf-8') as handle:
            log = handle.read()
        assert 'run_nccl_tests.sh ' + SEED_COMMAND.split(' ', 1)[1] in log and 'synthetic' in log
        with open(str(report / 'report.json'), encoding='utf-8') as handle:
            verdict = json.load(handle)
        assert verdict['verdict'] == 'PASS' and not verdict['reasons'], verdict
    assert ultra.cluster.store.get('pods', 'nccl-test-host-1', 'default') is None
    assert ultra.cluster.store.get('services', 'nccl-host-2', 'default') is None
    events = [e for e in ultra.cluster.store.list('events', namespace='default') if e.get('reason') == 'Scheduled'
              and e['involvedObject']['name'].startswith('nccl-test-host-')]
    nodes = sorted({e['message'].rsplit(' to ', 1)[1] for e in events})
    assert len(nodes) == 4, events
    pool_of = {n: ultra.cluster.store.get('nodes', n)['metadata']['labels']['cloud.google.com/gke-nodepool'] for n in nodes}
    # ComputeClass path: a pool GKE's auto-creation (simulated) made for the class, in the Container API as gcloud lists it,
    # with the seed's priority: A3 Ultra, the reservation, gpuDirect RDMA, DRANET on its nodes, one node per test Pod.
    auto = sorted({p for p in pool_of.values() if p.startswith('nap-a3-ultragpu-8g-')})
    assert len(auto) == 1 and sorted(pool_of.values()).count(auto[0]) == 2, pool_of
    pool = ultra.api.must('GET', 'v1/projects/%s/locations/%s/clusters/ultra/nodePools/%s' % (PROJECT, ZONE, auto[0]))
    assert pool['config']['reservationAffinity']['values'] == ['my-reservation'] and pool['autoscaling']['autoprovisioned']
    assert pool['config']['gpuDirectConfig'] == {'gpuDirectStrategy': 'RDMA'} and pool['initialNodeCount'] == 2
    for name in (n for n, p in pool_of.items() if p == auto[0]):
        labels = ultra.cluster.store.get('nodes', name)['metadata']['labels']
        assert labels['cloud.google.com/compute-class'] == 'rdma-class' and labels['cloud.google.com/gke-networking-dra-driver'] == 'true'
    # Manual path: the two A3 Ultra nodes of the multi-network pool, one Pod each (8 GPUs each), nodes that report
    # rdma-0..7 as extended resources (the Networks Ready).
    manual = [n for n, p in pool_of.items() if p == 'manual']
    assert len(manual) == 2, pool_of
    for name in manual:
        allocatable = ultra.cluster.store.get('nodes', name)['status']['allocatable']
        assert all(allocatable.get('networking.gke.io.networks/rdma-%d' % n) == '1' for n in range(8)), allocatable
    vendor_and_ours_through_kubectl(ultra)


def vendor_and_ours_through_kubectl(ultra):
    """The vendor's file as it is and the role's rendering, each sent by the real kubectl (create --dry-run=server):
    the server stores the same Pods but for the two differences test_k8s_render.py lists (image, cpu request)."""
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import render  # pylint: disable=import-outside-toplevel
    env = dict(os.environ, KUBECONFIG=str(ultra.tmp / 'kubeconfig'))

    def dry_run(args, text=None):
        run = subprocess.run([KUBECTL, 'create', '--dry-run=server', '-o', 'json', '-n', 'default', *args], input=text, env=env,
                             capture_output=True, text=True, timeout=60, check=False)
        assert run.returncode == 0, run.stderr
        objects, decoder, at = [], json.JSONDecoder(), 0
        while run.stdout[at:].strip():   # kubectl prints one JSON document per object of a file, a List for a List
            out, end = decoder.raw_decode(run.stdout, at + len(run.stdout[at:]) - len(run.stdout[at:].lstrip()))
            objects += out.get('items', [out])
            at = end
        return {(o['kind'], o['metadata']['name']): o for o in objects}

    vendor = dry_run(['-f', vendored.path(render.MULTI_NETWORK_TEST_MANIFEST)])
    ours = dry_run(['-f', '-'], json.dumps({'apiVersion': 'v1', 'kind': 'List', 'items': render.nccl_test_objects('RDMA', multi_network=True)}))
    assert sorted(vendor) == sorted(ours) == [('Pod', 'nccl-test-host-1'), ('Pod', 'nccl-test-host-2'),
                                              ('Service', 'nccl-host-1'), ('Service', 'nccl-host-2')]
    for key, theirs in vendor.items():
        mine = ours[key]
        assert mine['metadata'].get('annotations') == theirs['metadata'].get('annotations')
        if key[0] == 'Pod':
            test, vendor_test = mine['spec']['containers'][0], theirs['spec']['containers'][0]
            # kubectl too keeps only the last `resources:` of the vendor file; the server defaults a Pod's missing requests
            # from its limits (SetDefaults_Pod) and answers every quantity as a string.
            assert vendor_test['resources'] == {'limits': {'nvidia.com/gpu': '8'}, 'requests': {'nvidia.com/gpu': '8'}}
            assert test['resources'] == {'limits': {'nvidia.com/gpu': '8'}, 'requests': {'cpu': '150m', 'nvidia.com/gpu': '8'}}
            # The file ends without a line break, inside nccl-test-host-2's `args: |` block: kubectl's YAML reader ends
            # that block with one, PyYAML (the role's) does not; the shell runs the same lines.
            if test['args'] != vendor_test['args']:
                assert key == ('Pod', 'nccl-test-host-2') and [a + '\n' for a in test['args']] == vendor_test['args']
            # The collection's own run adds NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET (NCCL names its network and versions).
            assert test['env'] == (vendor_test.get('env') or []) + [{'name': 'NCCL_DEBUG', 'value': 'INFO'},
                                                                    {'name': 'NCCL_DEBUG_SUBSYS', 'value': 'INIT,NET'}], test['env']
            mine['spec']['containers'][0] = dict(test, image=vendor_test['image'], resources=vendor_test['resources'],
                                                 args=vendor_test['args'], env=vendor_test.get('env'))
            if vendor_test.get('env') is None:
                del mine['spec']['containers'][0]['env']
        # The ServiceAccount admission plugin mounts the API token in a volume with a random name (kube-api-access-XXXXX).
        assert same_token_volume(mine['spec']) == same_token_volume(theirs['spec']), key


def same_token_volume(spec):
    return json.loads(re.sub(r'kube-api-access-[a-z0-9]{5}', 'kube-api-access-', json.dumps(spec)))


def seed_manifests_are_stored_as_the_roles(ultra):
    """Parity: seed 001's ComputeClass and all-mrdma through the real kubectl, as the server would store them."""
    env = dict(os.environ, KUBECONFIG=str(ultra.tmp / 'kubeconfig'))
    for path, ref, namespace in (('001-rdma-compute-class.yaml', 'computeclasses.cloud.google.com', None),
                                 ('001-all-mrdma-template.yaml', 'resourceclaimtemplates.resource.k8s.io', 'default')):
        with open(os.path.join(SEEDS, path), encoding='utf-8') as handle:
            seed = yaml.safe_load(handle)
        ours = stored(ultra, ref, seed['metadata']['name'], namespace)
        renamed = copy.deepcopy(seed)
        renamed['metadata']['name'] = 'seed-' + seed['metadata']['name']   # beside ours: the server stores it as it would
        run = subprocess.run([KUBECTL, 'create', '--dry-run=server', '-o', 'json', '-n', 'default', '-f', '-'], input=json.dumps(renamed),
                             env=env, capture_output=True, text=True, timeout=60, check=False)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)['spec'] == ours['spec'], path
