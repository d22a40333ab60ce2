"""playbooks/openshift_rdma.yml with the real ansible-playbook and kubernetes.core against the OpenShift
stand-in (tests/sandbox/kube/openshift.py): the six configurations, check mode, idempotence, switching
methods, the failure paths of OLM, refused input, teardown; every rendered object through the real
kubectl ``apply --dry-run=server --validate=strict``."""

import copy
import json
import os
import re
import resource
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml
from PIL import Image

from sandbox.kube import KubeHub
from sandbox.kube.controlplane import ACCESS_TOKEN
from sandbox.kube.openshift import OpenShiftSimulation, PACKAGES, SRIOV_NETWORK_FINALIZER

from playbook_runner import ansible_playbook_command, collection_root, collections_path, wrong_values
from waiting import wait_until
from ansible_collections.aiinfra.gpudirect.plugins.module_utils import report_dir
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.perftest import output as perftest

MUTATING = ('POST', 'PUT', 'PATCH', 'DELETE')
DELAY = 0.05
POLL_SECONDS = 0.2


def kubernetes_core_path():
    for entry in [*sys.path, *os.environ.get('PYTHONPATH', '').split(os.pathsep)]:
        if entry and os.path.isdir(os.path.join(entry, 'ansible_collections', 'kubernetes', 'core')):
            return entry
    return None


class OpenShift:
    """A stand-in OpenShift with its kubeconfig, and a way to run the collection's playbooks at it."""

    def __init__(self, tmp_path, **options):
        self.hub = KubeHub()
        self.cluster = self.hub.start_cluster('openshift', version='1.30.6', openshift=True)
        # Each simulated operator step takes DELAY seconds (the real ones take minutes) and the role polls every
        # POLL_SECONDS: a wait ends after a poll or two.
        self.sim = OpenShiftSimulation(self.cluster, delay=DELAY, **options).start()
        self.tmp = tmp_path
        self.kubeconfig = self.cluster.write_kubeconfig(str(tmp_path / 'kubeconfig'))
        self.report_dir = tmp_path / 'report'

    def run(self, playbook='openshift_rdma.yml', extra=None, args=()):
        core = kubernetes_core_path()
        if core is None:
            pytest.skip('kubernetes.core is not installed beside the collection (scripts/test build installs it)')
        extra_vars = {'openshift_rdma_kubeconfig': self.kubeconfig, 'openshift_rdma_poll_seconds': POLL_SECONDS,
                      'openshift_rdma_report_dir': str(self.report_dir), 'openshift_rdma_plot': True,
                      'ansible_python_interpreter': sys.executable}
        extra_vars.update(extra or {})
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.pathsep.join(dict.fromkeys([collections_path(), core])),
                   ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_INVENTORY_UNPARSED_WARNING='False',
                   HOME=str(self.tmp))
        started = len(self.cluster.requests)
        cpu = _children_cpu()
        command = [*ansible_playbook_command(kubernetes=True), os.path.join(collection_root(), 'playbooks', playbook), '-e', json.dumps(extra_vars)]
        run = subprocess.run([*command, *args], env=env, capture_output=True, text=True, timeout=1200, check=False)
        # Check mode's server-side dry runs (dryRun=All) write nothing: they are not mutations.
        run.mutations = [request for request in self.cluster.requests[started:]
                         if request[0] in MUTATING and 'dryRun=All' not in request[1]]
        run.recap = _recap(run.stdout)
        run.cpu = round(_children_cpu() - cpu, 1)
        return run

    def get(self, ref, name, namespace=None):
        return self.cluster.store.get(ref, name, namespace)

    def report(self):
        return json.loads((self.report_dir / 'report.json').read_text(encoding='utf-8'))

    def report_files(self):
        """The report directory's files by name (bytes, mtime), once the plot is seen to be a PNG of its size."""
        assert sorted(os.listdir(self.report_dir)) == sorted(perftest.FILES)
        with Image.open(self.report_dir / perftest.PLOT) as image:
            assert image.format == 'PNG'
            assert image.size == (report_dir.PLOT_SIZE_INCHES[0] * report_dir.PLOT_DPI, report_dir.PLOT_SIZE_INCHES[1] * report_dir.PLOT_DPI)
        return {name: ((self.report_dir / name).read_bytes(), os.stat(self.report_dir / name).st_mtime_ns) for name in perftest.FILES}

    def stop(self):
        assert not self.sim.errors, self.sim.errors
        self.sim.stop()
        self.hub.stop_all()


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _recap(stdout):
    line = next((line for line in stdout.splitlines() if line.startswith('localhost ') and 'ok=' in line), '')
    return {key: int(value) for key, value in (item.split('=') for item in line.split()[2:])}


def _out(run):
    return run.stdout[-6000:] + run.stderr[-2000:]


@pytest.fixture
def openshift(tmp_path):
    instance = OpenShift(tmp_path)
    yield instance
    instance.stop()


CONFIGURATIONS = [  # (method, link): (network object's plural, name, namespace); the first is the chapter's first configuration
    (('shared_device', 'roce'), ('macvlannetworks.mellanox.com', 'rdmashared-net', None)),
    (('shared_device', 'infiniband'), ('ipoibnetworks.mellanox.com', 'example-ipoibnetwork', None)),
    (('host_device', 'roce'), ('hostdevicenetworks.mellanox.com', 'hostdev-net', None)),
    (('host_device', 'infiniband'), ('hostdevicenetworks.mellanox.com', 'hostdev-ib-net', None)),
    (('sriov_legacy', 'roce'), ('sriovnetworks.sriovnetwork.openshift.io', 'sriov-network', 'openshift-sriov-network-operator')),
    (('sriov_legacy', 'infiniband'), ('sriovibnetworks.sriovnetwork.openshift.io', 'sriov-ib-network', 'openshift-sriov-network-operator')),
]


def test_six_configurations_end_to_end_check_mode_rerun_switch_slow_fabric_and_teardown(openshift):
    """One cluster, operators installed once: check mode, the chapter's first configuration with every stage, a
    re-run that writes nothing, then each other configuration (tags cluster,network,proof) replacing the
    previous one, a slow fabric, teardown."""
    timings = {}

    def run(method, link, args=(), playbook='openshift_rdma.yml', **extra):
        started = time.monotonic()
        result = openshift.run(playbook, extra=dict({'openshift_rdma_method': method, 'openshift_rdma_link': link}, **extra), args=args)
        timings['%s %s/%s %s' % (playbook, method, link, ' '.join(args))] = {'wall_s': round(time.monotonic() - started, 1), 'cpu_s': result.cpu}
        return result

    # Check mode on a fresh cluster: reports changes, writes nothing.
    checked = run('shared_device', 'roce', args=['--check'])
    assert checked.returncode == 0, _out(checked)
    assert checked.recap['changed'] > 0 and not checked.mutations
    assert openshift.get('namespaces', 'nvidia-gpu-operator') is None

    # The chapter's first configuration, every stage.
    first = run('shared_device', 'roce')
    assert first.returncode == 0, _out(first)
    sub = openshift.get('subscriptions.operators.coreos.com', 'gpu-operator-certified', 'nvidia-gpu-operator')
    assert sub['spec']['installPlanApproval'] == 'Manual' and sub['spec']['startingCSV'] == 'gpu-operator-certified.v24.9.2'
    assert sub['status']['installedCSV'] == 'gpu-operator-certified.v24.9.2'
    nfd = openshift.get('nodefeaturediscoveries.nfd.openshift.io', 'nfd-instance', 'openshift-nfd')
    assert nfd['spec']['operand']['image'] == PACKAGES['nfd']['alm'][0]['spec']['operand']['image']
    assert openshift.get('macvlannetworks.mellanox.com', 'rdmashared-net')['status']['state'] == 'ready'
    assert openshift.get('machineconfigpools.machineconfiguration.openshift.io', 'worker')['spec']['configuration']['name'] != 'rendered-worker-0'
    report = openshift.report()
    assert report['verdict']['verdict'] == 'PASS' and report['verdict']['bw_average_gbps'] == 180.47
    # Numbers the stand-in's tools made up: the verdict line says so (issue 24 item 12).
    assert 'ib_write_bw shared_device/roce: STAND-IN OUTPUT (synthetic numbers, nothing measured): PASS -- BW average ' in first.stdout
    written = openshift.report_files()   # report.json, junit.xml, summary.md and the plot

    # The same again, the measurement too: nothing changes in the cluster, no report file is rewritten.
    again = run('shared_device', 'roce', args=['--tags', 'operators,cluster,network,proof'])
    assert again.returncode == 0, _out(again)
    assert again.recap['changed'] == 0 and not again.mutations, _out(again)
    assert openshift.report_files() == written

    # Switching in check mode with --diff shows what would be removed, and removes nothing.
    previous = CONFIGURATIONS[0][1]
    would = run(*CONFIGURATIONS[1][0], args=['--tags', 'network', '--check', '--diff'])
    assert would.returncode == 0 and not would.mutations, _out(would)
    assert _removed_in_diff(openshift, would, previous) and openshift.get(*previous) is not None, _out(would)

    # Each other configuration replaces the previous one: its objects removed (reported and in the diff), the new
    # ones ready, PASS.
    for (method, link), network in CONFIGURATIONS[1:]:
        switched = run(method, link, args=['--tags', 'cluster,network,proof', '--diff'])
        assert switched.returncode == 0, _out(switched)
        assert openshift.get(*previous) is None, (method, link, previous)
        removed = next((line for line in switched.stdout.splitlines() if 'Removed objects of other configurations:' in line), '')
        assert _title(openshift, previous) in removed and _removed_in_diff(openshift, switched, previous), _out(switched)
        assert openshift.get(*network) is not None
        assert openshift.get('network-attachment-definitions.k8s.cni.cncf.io', network[1], 'default') is not None
        assert openshift.report()['configuration'] == '%s/%s' % (method, link)
        assert openshift.report()['verdict']['verdict'] == 'PASS'
        now = openshift.report_files()
        assert now[perftest.PLOT][0] != written[perftest.PLOT][0]   # redrawn: its title names the configuration
        written = now
        assert ('derived: the chapter does not show this configuration' in switched.stdout) == \
            ((method, link) in (('host_device', 'infiniband'), ('sriov_legacy', 'infiniband')))
        previous = network
    policy = openshift.get('sriovnetworknodepolicies.sriovnetwork.openshift.io', 'sriov-legacy-ib-policy', 'openshift-sriov-network-operator')
    assert policy['spec']['linkType'] == 'IB'
    assert openshift.get('nodes', 'worker-0')['status']['allocatable']['openshift.io/sriovlegacyib'] == '8'

    # A slow fabric: the verdict fails the play and the report says why.
    openshift.sim.bandwidth_gbps = 60.0
    slow = run('sriov_legacy', 'infiniband', args=['--tags', 'proof'])
    assert slow.returncode != 0 and 'ib_write_bw verdict FAIL: BW average 60.00 Gb/s is below 150.00 Gb/s' in slow.stdout, _out(slow)
    assert openshift.report()['verdict']['verdict'] == 'FAIL'
    assert openshift.report_files()[perftest.PLOT][0] != written[perftest.PLOT][0]

    # Teardown leaves the operators, removes the rest.
    down = run('sriov_legacy', 'infiniband', playbook='openshift_rdma_teardown.yml')
    assert down.returncode == 0, _out(down)
    assert openshift.get(*previous) is None
    assert openshift.get('nicclusterpolicies.mellanox.com', 'nic-cluster-policy') is None
    assert openshift.get('clusterpolicies.nvidia.com', 'gpu-cluster-policy') is None
    assert openshift.get('subscriptions.operators.coreos.com', 'nfd', 'openshift-nfd') is not None
    sys.stderr.write('openshift_rdma playbook runs: %s\n' % json.dumps(timings))


def test_operator_teardown_names_what_holds_a_namespace_and_completes_once_it_goes(openshift):
    """A SriovNetwork someone else made holds the SR-IOV operator's finalizer; while the operator does not run (the
    stand-in's reconcilers paused) its namespace cannot go: the teardown fails naming the namespace, the kind and
    the finalizer that hold it, and once the operator runs again the same teardown completes."""
    installed = openshift.run(args=['--tags', 'operators'])
    assert installed.returncode == 0, _out(installed)
    store, namespace = openshift.cluster.store, 'openshift-sriov-network-operator'
    store.create({'apiVersion': 'sriovnetwork.openshift.io/v1', 'kind': 'SriovNetwork', 'metadata': {'name': 'someone-elses', 'namespace': namespace},
                  'spec': {'resourceName': 'theirs', 'networkNamespace': 'default', 'ipam': '{}'}})
    wait_until(lambda: SRIOV_NETWORK_FINALIZER in (store.get('sriovnetworks.sriovnetwork.openshift.io', 'someone-elses', namespace)['metadata']
                                                   .get('finalizers') or []), 'the SR-IOV operator to hold its SriovNetwork', timeout=60)
    teardown = {'openshift_rdma_teardown_operators': True}
    openshift.sim.controllers.pause('reconcile')
    try:
        held = openshift.run('openshift_rdma_teardown.yml', extra=dict(teardown, openshift_rdma_timeouts={'olm': 30}))
    finally:
        openshift.sim.controllers.resume('reconcile')
    assert held.returncode != 0
    assert "The operators' namespaces were not removed in 30 s: " in held.stdout, _out(held)
    shown = held.stdout.split("namespaces were not removed", 1)[1]
    assert namespace + ' (' in shown and 'sriovnetworks.sriovnetwork.openshift.io has 1 resource instances' in shown, _out(held)
    assert 'finalizers remaining: %s in 1 resource instances' % SRIOV_NETWORK_FINALIZER in shown, _out(held)

    done = openshift.run('openshift_rdma_teardown.yml', extra=teardown)
    assert done.returncode == 0, _out(done)
    assert [name for name in ('openshift-nfd', namespace, 'nvidia-network-operator', 'nvidia-gpu-operator')
            if openshift.get('namespaces', name) is not None] == []


def test_teardown_removes_only_what_the_role_installed_or_applied(openshift):
    """An operator someone else installed (NFD, from an older catalog) and an object of the role's names that someone else
    made (a NicClusterPolicy) stay through a teardown with openshift_rdma_teardown_operators, named; the operators the
    role installed go, namespaces and all; the SR-IOV operator's own SriovOperatorConfig is never the teardown's."""
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as catalog  # pylint: disable=import-outside-toplevel
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import render  # pylint: disable=import-outside-toplevel
    store = openshift.cluster.store
    openshift.sim.installed_before(render.operator_objects(catalog.OPERATORS[0], 'stable'), 'nfd.4.15.0-202410081504')
    installed = openshift.run(args=['--tags', 'operators'])
    assert installed.returncode == 0, _out(installed)
    theirs = store.create({'apiVersion': 'mellanox.com/v1alpha1', 'kind': 'NicClusterPolicy',
                           'metadata': {'name': catalog.NIC_CLUSTER_POLICY_NAME},
                           'spec': {}})
    down = openshift.run('openshift_rdma_teardown.yml', extra={'openshift_rdma_teardown_operators': True})
    assert down.returncode == 0, _out(down)
    assert openshift.get('nicclusterpolicies.mellanox.com', theirs['metadata']['name']) is not None
    assert 'not deleted, not made by aiinfra.gpudirect.openshift_rdma: NicClusterPolicy %s (written by' % theirs['metadata']['name'] \
        in down.stderr, _out(down)
    assert openshift.get('namespaces', 'openshift-nfd') is not None and openshift.get('subscriptions.operators.coreos.com', 'nfd', 'openshift-nfd')
    assert 'Left alone, not installed by aiinfra.gpudirect (their Subscriptions were not written by its applies): the operators in openshift-nfd' \
        in down.stdout, _out(down)
    assert [name for name in ('openshift-sriov-network-operator', 'nvidia-network-operator', 'nvidia-gpu-operator')
            if openshift.get('namespaces', name) is not None] == []
    assert not [request for request in down.mutations if request[0] == 'DELETE' and 'sriovoperatorconfigs' in request[1]]
    assert not [request for request in down.mutations if '/namespaces/openshift-nfd' in request[1]], down.mutations
    # the playbook's summary: what went, what stayed
    summary = down.stdout.split('TASK [Summary]', 1)[1]
    assert '"OpenShift GPUDirect RDMA teardown: none of the role\'s objects was left"' in summary, summary   # (only --tags operators ran)
    assert re.search(r'"operators: removed: [^"]*Namespace nvidia-network-operator', summary), summary
    assert '"left alone (not made by the collection): NicClusterPolicy %s (written by' % theirs['metadata']['name'] in summary, summary


def test_a_field_someone_else_took_is_named_with_the_way_out_and_taken_back_when_asked(openshift):
    """After the operators are installed, another field manager takes the NFD Subscription's channel with a forced
    server-side apply: the rerun fails with the object, the field, its manager and openshift_rdma_force_conflicts (not
    kubernetes.core's raw 409), and with that option true it takes the field back."""
    installed = openshift.run(args=['--tags', 'operators'])
    assert installed.returncode == 0, _out(installed)
    sub = openshift.get('subscriptions.operators.coreos.com', 'nfd', 'openshift-nfd')
    theirs = {'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'Subscription', 'metadata': {'name': 'nfd', 'namespace': 'openshift-nfd'},
              'spec': {'channel': 'someone-elses-channel', 'name': sub['spec']['name'], 'source': sub['spec']['source'],
                       'sourceNamespace': sub['spec']['sourceNamespace']}}
    request = urllib.request.Request(
        openshift.cluster.url + '/apis/operators.coreos.com/v1alpha1/namespaces/openshift-nfd/subscriptions/nfd?fieldManager=someone-else&force=true',
        method='PATCH', data=json.dumps(theirs).encode(),
        headers={'Authorization': 'Bearer ' + ACCESS_TOKEN, 'Content-Type': 'application/apply-patch+yaml'})
    with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=openshift.cluster.ca_file), timeout=30) as answer:
        assert answer.status == 200
    conflict = openshift.run(args=['--tags', 'operators'])
    assert conflict.returncode != 0, _out(conflict)
    assert ('Subscription openshift-nfd/nfd was not applied: .spec.channel is owned by \\"someone-else\\", which changed it after the '
            'collection applied it') in conflict.stdout, _out(conflict)
    assert 'Take it back with openshift_rdma_force_conflicts: true' in conflict.stdout, _out(conflict)
    forced = openshift.run(args=['--tags', 'operators'], extra={'openshift_rdma_force_conflicts': True})
    assert forced.returncode == 0, _out(forced)
    assert openshift.get('subscriptions.operators.coreos.com', 'nfd', 'openshift-nfd')['spec']['channel'] == sub['spec']['channel']


def _title(openshift, network):
    """How the role names a removed network object: KIND NAME, or KIND NAMESPACE/NAME."""
    plural, name, namespace = network
    kind = openshift.cluster.store.resource(plural).kind
    return '%s %s%s' % (kind, namespace + '/' if namespace else '', name)


def _removed_in_diff(openshift, run, network):
    """The --diff output of the run shows the network object deleted: its definition before, nothing after."""
    header = '--- before: {0}\n+++ after: {0} (deleted)\n'.format(_title(openshift, network))
    return header in run.stdout and '-        "name": "%s",' % network[1] in run.stdout.split(header, 1)[-1]


def _as_user(openshift, method, path, body=None):
    """One request with the kubeconfig's token (the test user, not the simulation): (HTTP code, Status or object)."""
    request = urllib.request.Request(openshift.cluster.url + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={'Authorization': 'Bearer ' + ACCESS_TOKEN, 'Accept': 'application/json',
                                              'Content-Type': 'application/merge-patch+json' if method == 'PATCH' else 'application/json'})
    try:
        with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=openshift.cluster.ca_file), timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_package_manifests_are_read_only_for_users(openshift):
    """OLM's packageserver serves PackageManifests for reading only; the stand-in refuses a user's create, patch and delete
    (403, naming the real 405 MethodNotAllowed) and keeps its catalog as it was."""
    base = '/apis/packages.operators.coreos.com/v1/namespaces/openshift-marketplace/packagemanifests'
    code, listed = _as_user(openshift, 'GET', base)
    assert code == 200 and sorted(item['metadata']['name'] for item in listed['items']) == sorted(PACKAGES)
    before = openshift.get('packagemanifests.packages.operators.coreos.com', 'nfd', 'openshift-marketplace')
    # The policy is in force once the API server has read it (a moment after the simulation created it).
    wait_until(lambda: _as_user(openshift, 'DELETE', base + '/nfd')[0] == 403, 'PackageManifest deletes to be refused', timeout=60, interval=0.5)
    copied = {'apiVersion': 'packages.operators.coreos.com/v1', 'kind': 'PackageManifest',
              'metadata': {'name': 'mine', 'namespace': 'openshift-marketplace'}, 'status': before['status']}
    for method, path, body in (('DELETE', base + '/nfd', None), ('PATCH', base + '/nfd', {'status': {'defaultChannel': 'alpha'}}),
                               ('POST', base, copied)):
        code, status = _as_user(openshift, method, path, body)
        assert code == 403 and status['reason'] == 'Forbidden', (method, code, status)
        assert 'the server does not allow this method on the requested resource' in status['message'] and '405' in status['message']
    assert openshift.get('packagemanifests.packages.operators.coreos.com', 'nfd', 'openshift-marketplace') == before
    assert openshift.get('packagemanifests.packages.operators.coreos.com', 'mine', 'openshift-marketplace') is None


def test_failed_csv_stops_at_once_naming_operator_phase_and_message(tmp_path):
    failure = ('InstallComponentFailed', 'install strategy failed: Deployment nvidia-network-operator-controller-manager not available')
    openshift = OpenShift(tmp_path, csv_failures={'nvidia-network-operator': failure})
    try:
        started = time.monotonic()
        run = openshift.run(extra={'openshift_rdma_timeouts': {'olm': 600}}, args=['--tags', 'operators'])
        assert run.returncode != 0
        assert ('failed: NVIDIA Network Operator: phase ClusterServiceVersion: ClusterServiceVersion '
                'nvidia-network-operator/nvidia-network-operator.v24.10.0 phase Failed reason InstallComponentFailed: '
                'install strategy failed') in run.stdout, _out(run)
        assert time.monotonic() - started < 300   # stopped at once, not after the 600 s timeout
    finally:
        openshift.stop()


def test_timeout_names_the_object_and_its_last_status(tmp_path):
    openshift = OpenShift(tmp_path, csv_stalls={'nfd'})
    try:
        run = openshift.run(extra={'openshift_rdma_timeouts': {'olm': 4}}, args=['--tags', 'operators'])
        assert run.returncode != 0
        assert ('pending: Node Feature Discovery Operator: phase ClusterServiceVersion: ClusterServiceVersion '
                'openshift-nfd/nfd.4.17.0-202411251103 phase Installing') in run.stdout, _out(run)
        assert re.search(r'\(still pending after [45] s, \d+ reads\)', run.stdout), _out(run)   # k8s_wait's words for a timeout
    finally:
        openshift.stop()


def test_installplan_for_another_csv_stays_unapproved_older_install_reported_and_second_operator_group_refused(openshift):
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as catalog  # pylint: disable=import-outside-toplevel
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import render  # pylint: disable=import-outside-toplevel
    store = openshift.cluster.store
    # NFD installed earlier, as the chapter says, from a catalog of OpenShift 4.15: below the floor 4.16.0.
    nfd = catalog.OPERATORS[0]
    openshift.sim.installed_before(render.operator_objects(nfd, 'stable'), 'nfd.4.15.0-202410081504')
    store.create({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nvidia-gpu-operator'}})
    other = store.create({'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'InstallPlan',
                          'metadata': {'name': 'install-upgrade', 'namespace': 'nvidia-gpu-operator'},
                          'spec': {'approval': 'Manual', 'approved': False, 'clusterServiceVersionNames': ['gpu-operator-certified.v99.0.0']}})
    store.update_status(dict(other, status={'phase': 'RequiresApproval', 'catalogSources': []}))
    run = openshift.run(args=['--tags', 'operators'])
    assert run.returncode == 0, _out(run)
    assert ('Node Feature Discovery Operator: installed nfd.4.15.0-202410081504 is older than the floor 4.16.0; upgrade it '
            'through its Subscription') in run.stdout, _out(run)
    assert [request for request in run.mutations if '/namespaces/openshift-nfd/' in request[1]] == []   # left alone
    assert store.get('subscriptions.operators.coreos.com', 'nfd', 'openshift-nfd')['status']['installedCSV'] == 'nfd.4.15.0-202410081504'
    assert openshift.get('installplans.operators.coreos.com', 'install-upgrade', 'nvidia-gpu-operator')['spec']['approved'] is False
    pinned = [plan for plan in store.list('installplans.operators.coreos.com', 'nvidia-gpu-operator') if plan['metadata']['name'] != 'install-upgrade']
    assert [plan['spec']['approved'] for plan in pinned] == [True]
    assert pinned[0]['spec']['clusterServiceVersionNames'] == ['gpu-operator-certified.v24.9.2']
    assert store.get('subscriptions.operators.coreos.com', 'gpu-operator-certified', 'nvidia-gpu-operator')['spec']['installPlanApproval'] == 'Manual'

    store.create({'apiVersion': 'operators.coreos.com/v1', 'kind': 'OperatorGroup',
                  'metadata': {'name': 'someone-elses', 'namespace': 'openshift-nfd'}, 'spec': {}})
    refused = openshift.run(args=['--tags', 'operators'])
    assert refused.returncode != 0
    assert 'Node Feature Discovery Operator: namespace openshift-nfd already holds OperatorGroup someone-elses' in refused.stdout, _out(refused)
    assert not refused.mutations


# Each bad input with the message it must be refused with; all of them in one ansible-playbook run (a
# playbook per input costs seconds of CPU each: ansible-playbook's start and the Kubernetes client's import).
BAD_INPUTS = [
    ({'openshift_rdma_method': 'macvlan'}, 'value of openshift_rdma_method must be one of: shared_device, host_device, sriov_legacy'),
    ({'openshift_rdma_link': 'ethernet'}, 'value of openshift_rdma_link must be one of: roce, infiniband'),
    ({'openshift_rdma_ipam': {'range': 'not-a-range'}}, 'openshift_rdma_ipam.range'),
    ({'openshift_rdma_ipam': {'gateway': '192.168.9.1'}}, 'openshift_rdma_ipam.range is required'),
    ({'openshift_rdma_ipam': {'range': '192.168.9.0/24', 'gateway': '192.168.8.1'}}, 'openshift_rdma_ipam.gateway'),
    ({'openshift_rdma_ipam': {'range': '192.168.9.0/24', 'exclude': ['192.168.10.0/30']}}, 'openshift_rdma_ipam.exclude'),
    ({'openshift_rdma_ipam': {'range': '10.128.4.0/24'}}, 'overlaps the cluster range 10.128.0.0/14'),
    ({'openshift_rdma_ipam': {'range': '192.168.9.0/24'}, 'openshift_rdma_reserved_ranges': ['192.168.0.0/16']},
     'overlaps the cluster range 192.168.0.0/16'),
    ({'openshift_rdma_ipam': {'range': '192.168.9.0/31'}}, 'fewer than 4 addresses'),
    ({'openshift_rdma_nic_vendor': '15B3X'}, 'openshift_rdma_nic_vendor'),
    ({'openshift_rdma_nic_device_ids': ['a2d']}, 'openshift_rdma_nic_device_ids'),
    ({'openshift_rdma_nic_pf_names': ['ens8f0np0#0-']}, 'openshift_rdma_nic_pf_names'),
    ({'openshift_rdma_method': 'sriov_legacy', 'openshift_rdma_num_vfs': -1}, 'openshift_rdma_num_vfs=-1'),
    ({'openshift_rdma_num_vfs': 4}, 'openshift_rdma_num_vfs applies to method sriov_legacy only'),
    ({'openshift_rdma_network_namespace': 'Bad_NS'}, 'openshift_rdma_network_namespace'),
    ({'openshift_rdma_mtu': 100}, 'openshift_rdma_mtu'),
    ({'openshift_rdma_threshold_fraction': 1.5}, 'openshift_rdma_threshold_fraction'),
    ({'openshift_rdma_link_gbps': 0}, 'openshift_rdma_link_gbps'),
]
ROLE_DEFAULTS = os.path.join(os.path.dirname(__file__), '..', '..', 'roles', 'openshift_rdma', 'defaults', 'main.yml')


def bad_inputs_playbook(path):
    """A playbook that includes the role once per case (its variables from the case, else the role's defaults)
    inside block/rescue and prints each refusal as ``REFUSED <index>: <message>``."""
    with open(ROLE_DEFAULTS, encoding='utf-8') as handle:
        names = sorted({name for name in yaml.safe_load(handle) if name not in ('openshift_rdma_kubeconfig', 'openshift_rdma_context')})
    used = sorted({name for given, _message in BAD_INPUTS for name in given})
    assert set(used) <= set(names), set(used) - set(names)
    one = [{'name': 'One bad input', 'block': [
        {'name': 'The role with this input', 'ansible.builtin.include_role': {'name': 'aiinfra.gpudirect.openshift_rdma'},
         'vars': {name: '{{ case.%s }}' % name for name in used}},
        {'name': 'Accepted', 'ansible.builtin.fail': {'msg': 'ACCEPTED {{ case_index }}'}}],
        'rescue': [{'name': 'Refused', 'ansible.builtin.debug': {'msg': 'REFUSED {{ case_index }}: {{ ansible_failed_result.msg | string }}'}}]}]
    (path / 'one_bad_input.yml').write_text(yaml.safe_dump(one), encoding='utf-8')
    play = [{'name': 'Bad inputs', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': [
        {'name': 'Each case', 'ansible.builtin.include_tasks': str(path / 'one_bad_input.yml'),
         'loop': '{{ cases }}', 'loop_control': {'loop_var': 'case', 'index_var': 'case_index'}}]}]
    (path / 'bad_inputs.yml').write_text(yaml.safe_dump(play), encoding='utf-8')
    with open(ROLE_DEFAULTS, encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    return str(path / 'bad_inputs.yml'), [dict({name: defaults[name] for name in used}, **given) for given, _message in BAD_INPUTS]


def test_bad_inputs_are_refused_naming_the_field_before_any_write(openshift, tmp_path):
    assert len(BAD_INPUTS) >= 15
    playbook, cases = bad_inputs_playbook(tmp_path)
    run = openshift.run(playbook, extra={'cases': cases})
    assert run.returncode == 0, _out(run)
    refused = dict(re.findall(r'"msg": "REFUSED (\d+): (.*)"', run.stdout))
    for index, (given, message) in enumerate(BAD_INPUTS):
        assert message in refused.get(str(index), ''), (given, message, refused.get(str(index)), _out(run))
    assert 'ACCEPTED' not in run.stdout
    assert not run.mutations, run.mutations


def _cluster_with_nfd_labels_and_sriov_node_states(openshift):
    """The state an earlier run (or an admin) leaves: NFD has labelled the workers and the SR-IOV operator's config
    daemon has reported each node's PFs (SriovNetworkNodeState interfaces[].totalvfs), through the stand-in's
    operators (the objects written to its store, as OLM and an admin would have)."""
    store = openshift.cluster.store
    for namespace in ('openshift-nfd', 'openshift-sriov-network-operator'):
        store.create({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': namespace}})
    for package in ('nfd', 'sriov-network-operator', 'gpu-operator-certified'):
        for relative in PACKAGES[package]['crds']:
            openshift.sim._install_openshift_crd(relative)   # pylint: disable=protected-access
    store.create({'apiVersion': 'nfd.openshift.io/v1', 'kind': 'NodeFeatureDiscovery',
                  'metadata': {'name': 'nfd-instance', 'namespace': 'openshift-nfd'}, 'spec': {}})
    store.create({'apiVersion': 'sriovnetwork.openshift.io/v1', 'kind': 'SriovOperatorConfig',
                  'metadata': {'name': 'default', 'namespace': 'openshift-sriov-network-operator'},
                  'spec': {'configDaemonNodeSelector': {'node-role.kubernetes.io/worker': ''}}})
    wait_until(lambda: all(
        (store.get('nodes', name)['metadata'].get('labels') or {}).get('feature.node.kubernetes.io/pci-15b3.present') == 'true'
        and (store.get('sriovnetworknodestates.sriovnetwork.openshift.io', name, 'openshift-sriov-network-operator') or {}).get('status')
        for name in openshift.sim.workers), 'the stand-in to reach NFD labels and SR-IOV node states', timeout=20, interval=DELAY)


def _set_cluster_version(openshift, version):
    store = openshift.cluster.store
    current = store.get('clusterversions.config.openshift.io', 'version')
    store.update_status(dict(current, status=dict(current['status'], desired=dict(current['status']['desired'], version=version))))


# The GPU Operator's sample (its CSV's alm-examples) with the host's MOFED for RDMA: what the chapter's Network
# Operator driver conflicts with.
CONFLICTING_GPU_POLICY = copy.deepcopy(PACKAGES['gpu-operator-certified']['alm'][0])
CONFLICTING_GPU_POLICY['spec']['driver']['rdma'] = {'enabled': True, 'useHostMofed': True}

# Each refusal that depends on the cluster: how the stand-in is set for it (and set back), the input, the message.
CLUSTER_REFUSALS = [
    ('NIC selector matching no node (NFD labels)', None, None,
     {'openshift_rdma_node_selector': {'feature.node.kubernetes.io/pci-15b3.present': 'true', 'topology.kubernetes.io/zone': 'rack-9'}},
     'openshift_rdma_node_selector {"feature.node.kubernetes.io/pci-15b3.present": "true", "topology.kubernetes.io/zone": '
     '"rack-9"} matches none of the 2 nodes: check the NIC is installed and NFD labels it, or change the selector'),
    ('numVfs above the NIC\'s limit', None, None,
     {'openshift_rdma_method': 'sriov_legacy', 'openshift_rdma_link': 'roce', 'openshift_rdma_num_vfs': 32},
     'openshift_rdma_num_vfs=32 exceeds the 16 VFs that ens8f0np0 supports (SriovNetworkNodeState interfaces[].totalvfs): use at most 16'),
    ('GPU Operator ClusterPolicy configured in a conflicting way',
     lambda openshift: openshift.cluster.store.create(copy.deepcopy(CONFLICTING_GPU_POLICY)),
     lambda openshift: openshift.cluster.store.delete('clusterpolicies.nvidia.com', 'gpu-cluster-policy'), {},
     'ClusterPolicy gpu-cluster-policy sets driver.rdma.useHostMofed, which conflicts with the Network Operator driver: set it false'),
    # Each of these was found only after the writes (16, 20 or all of them) or after a wait ran out.
    ('misspelt variable (it ran the default configuration)', None, None, {'openshift_rdma_metod': 'host_device'},
     'openshift_rdma_metod: role openshift_rdma has no such variable; did you mean openshift_rdma_method?'),
    ('network namespace that does not exist', None, None, {'openshift_rdma_network_namespace': 'no-such-namespace'},
     "openshift_rdma_network_namespace='no-such-namespace' does not exist in the cluster: create it first or give an existing namespace"),
    ('MachineConfig the chapter does not have', None, None, {'openshift_rdma_machine_configs': ['crio_memlock', 'bogus']},
     "openshift_rdma_machine_configs: 'bogus' is not one of the chapter's MachineConfigs; use "),
    ('report directory that cannot be made', None, None, {'openshift_rdma_report_dir': '/dev/null/report'},
     'openshift_rdma_report_dir: /dev/null is a file, so /dev/null/report cannot be made; give a directory path'),
    ('cluster version outside the chapter\'s range', lambda openshift: _set_cluster_version(openshift, '4.12.9'),
     lambda openshift: _set_cluster_version(openshift, openshift.sim.version), {},
     'cluster version 4.12.9 is outside the range the chapter covers (4.16 to 4.22): use a supported OpenShift release'),
]


def test_every_role_variable_of_a_wrong_type_is_refused_before_any_write(openshift):
    """Every openshift_rdma_* variable at once with a value of the wrong type (a choice outside the choices): the run stops
    before its first write, each variable named (the role's argument spec, checked as the role starts)."""
    values = wrong_values('openshift_rdma')
    assert len(values) >= 15, values
    run = openshift.run(extra=values)
    assert run.returncode != 0, _out(run)
    assert [name for name in values if name not in run.stdout] == [], _out(run)
    assert 'Operators through OLM' not in run.stdout and not run.mutations, (_out(run), run.mutations)


def test_cluster_dependent_refusals_end_to_end_before_any_write(openshift):
    """openshift_rdma.yml against a stand-in whose state conflicts in one way at a time: each run is refused with
    the one message naming the variable or field and the fix, and sends no POST/PUT/PATCH/DELETE."""
    _cluster_with_nfd_labels_and_sriov_node_states(openshift)
    messages = [message for *_rest, message in CLUSTER_REFUSALS]
    for what, conflict, undo, extra, message in CLUSTER_REFUSALS:
        if conflict:
            conflict(openshift)
        try:
            run = openshift.run(extra=extra)
        finally:
            if undo:
                undo(openshift)
        assert run.returncode != 0, (what, _out(run))
        assert message in run.stdout, (what, _out(run))
        assert [other for other in messages if other != message and other in run.stdout] == [], (what, _out(run))
        assert 'Checks before anything is created' in run.stdout and 'Operators through OLM' not in run.stdout, (what, _out(run))
        assert not run.mutations, (what, run.mutations)


def test_a_node_selector_matching_no_node_is_refused_before_nfd_runs_and_again_once_it_has_labelled_the_nodes(openshift):
    """On a fresh cluster NFD's labels do not exist yet: a label of the selector that is not NFD's and that no node carries
    is refused before any write (it waited 30 minutes after 20 writes). An NFD label no node gets is refused once NFD has
    labelled the nodes, before the first object the selector steers (SriovOperatorConfig, the policies, the networks)."""
    run = openshift.run(extra={'openshift_rdma_node_selector': {'feature.node.kubernetes.io/pci-15b3.present': 'true', 'rack': 'r9'}})
    assert run.returncode != 0, _out(run)
    assert ('openshift_rdma_node_selector {\\"rack\\": \\"r9\\"} matches none of the 2 nodes (NFD has not labelled them yet'
            in run.stdout), _out(run)
    assert 'Operators through OLM' not in run.stdout and not run.mutations, (_out(run), run.mutations)

    absent = {'feature.node.kubernetes.io/pci-1d0f.present': 'true'}   # a NIC vendor no node of the stand-in has
    run = openshift.run(extra={'openshift_rdma_node_selector': absent})
    assert run.returncode != 0, _out(run)
    assert ('openshift_rdma_node_selector {\\"feature.node.kubernetes.io/pci-1d0f.present\\": \\"true\\"} matches none of the 2 '
            'nodes: check the NIC is installed and NFD labels it' in run.stdout), _out(run)
    assert 'TASK [aiinfra.gpudirect.openshift_rdma : The node selector matches a node now that NFD has labelled them]' in run.stdout
    assert 'TASK [aiinfra.gpudirect.openshift_rdma : SriovOperatorConfig]' not in run.stdout, _out(run)


def test_k8s_converge_absent_shows_each_deleted_object_in_the_diff_and_check_mode_deletes_nothing(openshift, tmp_path):
    """aiinfra.gpudirect.k8s_converge state=absent (what the roles delete with) on the real API server, every object given:
    --check --diff shows what would go and sends no DELETE; --diff deletes and shows the same; again: no change."""
    store = openshift.cluster.store
    store.create({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'demo'}})
    for name in ('old-a', 'old-b'):
        store.create({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name, 'namespace': 'demo', 'labels': {'release': 'old'}},
                      'data': {'origin': 'release %s' % name}})
    store.create({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'kept', 'namespace': 'demo'}, 'data': {'origin': 'new'}})
    play = [{'name': 'Delete the old release', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': [
        {'name': 'Read', 'ansible.builtin.set_fact': {'old': "{{ query('kubernetes.core.k8s', kind='ConfigMap', namespace='demo', "
                                                             "label_selector='release=old', kubeconfig=openshift_rdma_kubeconfig) }}"}},
        {'name': 'Delete', 'aiinfra.gpudirect.k8s_converge': {'objects': '{{ old }}', 'kubeconfig': '{{ openshift_rdma_kubeconfig }}',
                                                              'state': 'absent', 'field_manager': 'unused', 'delete_unmanaged': True,
                                                              'wait': True}, 'register': 'deleted'},
        {'name': 'Removed', 'ansible.builtin.debug': {'msg': 'REMOVED {{ deleted.removed | join(", ") }}'}}]}]
    (tmp_path / 'delete.yml').write_text(yaml.safe_dump(play), encoding='utf-8')
    shown = ['--- before: ConfigMap demo/old-a\n+++ after: ConfigMap demo/old-a (deleted)\n', '-        "origin": "release old-a"',
             '--- before: ConfigMap demo/old-b\n+++ after: ConfigMap demo/old-b (deleted)\n']

    checked = openshift.run(str(tmp_path / 'delete.yml'), args=['--check', '--diff'])
    assert checked.returncode == 0 and all(line in checked.stdout for line in shown), _out(checked)
    assert 'REMOVED ConfigMap demo/old-a, ConfigMap demo/old-b' in checked.stdout and 'managedFields' not in checked.stdout
    assert not checked.mutations and store.get('configmaps', 'old-a', 'demo') is not None

    done = openshift.run(str(tmp_path / 'delete.yml'), args=['--diff'])
    assert done.returncode == 0 and all(line in done.stdout for line in shown), _out(done)
    assert [request[0] for request in done.mutations] == ['DELETE', 'DELETE']
    assert store.get('configmaps', 'old-a', 'demo') is None and store.get('configmaps', 'kept', 'demo') is not None

    again = openshift.run(str(tmp_path / 'delete.yml'), args=['--diff'])
    assert again.returncode == 0 and again.recap['changed'] == 0 and '--- before' not in again.stdout, _out(again)


def test_every_rendered_object_passes_kubectl_server_dry_run(openshift, tmp_path):
    binary = os.path.join(os.path.dirname(os.path.realpath(_which('gcloud') or '/nonexistent')), 'kubectl.1.33')
    if not os.path.exists(binary):
        pytest.skip('the Cloud SDK kubectl.1.33 is not installed')
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as catalog  # pylint: disable=import-outside-toplevel
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import render  # pylint: disable=import-outside-toplevel
    for entry in PACKAGES.values():
        for relative in entry['crds']:
            openshift.sim._install_openshift_crd(relative)   # pylint: disable=protected-access
    for operator in catalog.OPERATORS:
        openshift.cluster.store.create({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': operator['namespace']}})
    # One kubectl call per configuration (its documents as one stream) and one for the shared objects.
    batches = {'%s/%s' % (method, link): [render.nic_cluster_policy({'method': method, 'link': link}),
                                          *render.method_objects({'method': method, 'link': link}),
                                          *render.test_pods({'method': method, 'link': link}, ['worker-0', 'worker-1'])]
               for method, link in catalog.CONFIGURATIONS}
    batches['shared'] = [obj for operator in catalog.OPERATORS for obj in render.operator_objects(operator, 'stable', 'x.v1.0.0')[1:]]
    batches['shared'] += [render.nfd_instance('image'), render.sriov_operator_config(),
                          render.cluster_policy(PACKAGES['gpu-operator-certified']['alm'][0]),
                          *render.machine_configs(list(catalog.MACHINE_CONFIGS), 'SUBSYSTEM=="net"\n')]
    for name, documents in batches.items():
        run = subprocess.run([binary, '--kubeconfig', openshift.kubeconfig, 'apply', '--dry-run=server', '--validate=strict',
                              '-f', '-'], input=yaml.safe_dump_all(documents), capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 0, (name, run.stdout, run.stderr)
        assert run.stdout.count('(server dry run)') == len(documents), (name, run.stdout)
    broken = render.nic_cluster_policy({'method': 'shared_device', 'link': 'roce'})
    broken['spec']['ofedDriver']['imageX'] = 'x'
    run = subprocess.run([binary, '--kubeconfig', openshift.kubeconfig, 'apply', '--dry-run=server', '--validate=strict', '-f', '-'],
                         input=yaml.safe_dump(broken), capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode != 0 and 'unknown field "spec.ofedDriver.imageX"' in run.stderr


def _which(name):
    import shutil  # pylint: disable=import-outside-toplevel
    return shutil.which(name)
