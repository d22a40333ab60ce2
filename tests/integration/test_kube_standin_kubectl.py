"""The Kubernetes API stand-in (tests/sandbox/kube) driven by the real kubectl 1.33 of the Cloud SDK.

One stand-in kube_cluster for the module; every manifest the seeds apply (tests/sandbox/kube/manifests:
the container-engine-accelerators files of ../shared/manifests and the seeds' inline manifests) is
applied client-side, with ``--server-side`` and with ``--dry-run=server``; CRDs become Established;
delete removes.  Each assertion reads what the real kubectl printed or what the stand-in stored.
"""

import glob
import json
import os
import subprocess
import sys
import threading
import time

import pytest
import yaml

from sandbox.gcloud import kubectl_binary

KUBE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'sandbox', 'kube')
CRDS = sorted(glob.glob(os.path.join(KUBE_DIR, 'crds', '*.yaml')))
MANIFESTS = sorted(glob.glob(os.path.join(KUBE_DIR, 'manifests', '*', '*.yaml')))


@pytest.fixture(scope='module')
def kubectl(kube_cluster):
    binary = kubectl_binary()
    if binary is None:
        pytest.skip('the Cloud SDK kubectl.1.33 is not installed')
    env = dict(os.environ, KUBECONFIG=kube_cluster.kubeconfig_path)

    def run(*args, stdin=None, check=True, timeout=120):
        result = subprocess.run([binary, *args], env=env, capture_output=True, text=True, input=stdin, timeout=timeout,
                                check=False)
        if check and result.returncode != 0:
            raise AssertionError('kubectl %s failed:\n%s%s' % (' '.join(args), result.stdout, result.stderr))
        return result
    return run


def documents(path):
    with open(path, encoding='utf-8') as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]


def namespaces_of(paths):
    return sorted({doc['metadata']['namespace'] for path in paths for doc in documents(path)
                   if doc['metadata'].get('namespace')} - {'default', 'kube-system'})


def test_version_and_discovery(kubectl):
    assert 'Server Version: v1.34.8-gke.1278000' in kubectl('version').stdout
    resources = kubectl('api-resources', '-o', 'name').stdout.split()
    assert {'daemonsets.apps', 'pods', 'deviceclasses.resource.k8s.io', 'customresourcedefinitions.apiextensions.k8s.io'} \
        <= set(resources)
    assert 'networks.networking.gke.io' not in resources


def test_custom_resource_before_its_crd_is_refused_by_discovery(kubectl):
    result = kubectl('apply', '-f', os.path.join(KUBE_DIR, 'manifests', 'seeds', '001-rdma-compute-class.yaml'), check=False)
    assert result.returncode != 0
    assert 'no matches for kind "ComputeClass" in version "cloud.google.com/v1"' in result.stderr


def test_crds_apply_and_become_established(kubectl, kube_cluster):
    for path in CRDS:
        kubectl('apply', '--server-side', '-f', path)
    names = [documents(path)[0]['metadata']['name'] for path in CRDS]
    waited = kubectl('wait', '--for=condition=Established', '--timeout=20s', *['crd/' + name for name in names])
    assert waited.stdout.count('condition met') == len(names)
    assert 'networks.networking.gke.io' in kubectl('api-resources', '-o', 'name').stdout.split()
    crd = kube_cluster.store.get('customresourcedefinitions.apiextensions.k8s.io', 'networks.networking.gke.io')
    assert {c['type']: c['status'] for c in crd['status']['conditions']} == {'NamesAccepted': 'True', 'Established': 'True'}


@pytest.mark.parametrize('mode', ['client', 'server-side', 'dry-run'])
def test_every_manifest_applies(kubectl, kube_cluster, mode):
    for namespace in namespaces_of(MANIFESTS):
        kubectl('apply', '-f', '-', stdin='apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n' % namespace)
    before = kube_cluster.store.revision
    args = {'client': [], 'server-side': ['--server-side', '--force-conflicts'], 'dry-run': ['--dry-run=server']}[mode]
    for path in MANIFESTS:
        result = kubectl('apply', *args, '-f', path)
        for doc in documents(path):
            assert '%s/%s' % (doc['kind'].lower(), doc['metadata']['name']) in result.stdout.replace('.apps', '').replace(
                '.networking.gke.io', '').replace('.resource.k8s.io', '').replace('.cloud.google.com', '')
    if mode == 'dry-run':
        assert kube_cluster.store.revision == before   # nothing stored
    else:
        for path in MANIFESTS:
            for doc in documents(path):
                resource = kube_cluster.api.find_kind(doc['apiVersion'], doc['kind'])
                stored = kube_cluster.store.get(resource.ref, doc['metadata']['name'], doc['metadata'].get('namespace', 'default'))
                assert stored is not None, (path, doc['metadata']['name'])


def test_second_client_apply_is_unchanged_and_writes_nothing(kubectl, kube_cluster):
    path = os.path.join(KUBE_DIR, 'manifests', 'gpudirect-tcpxo', 'nccl-tcpxo-installer.yaml')
    kubectl('apply', '-f', path)
    before = kube_cluster.store.revision
    result = kubectl('apply', '-f', path)
    assert 'daemonset.apps/nccl-tcpxo-installer unchanged' in result.stdout
    assert kube_cluster.store.revision == before


def test_get_wait_and_rollout_status_and_delete(kubectl, kube_cluster):
    path = os.path.join(KUBE_DIR, 'manifests', 'gpudirect-tcpxo', 'nccl-tcpxo-installer.yaml')
    kubectl('apply', '-f', path)
    listing = kubectl('get', 'ds', '-n', 'kube-system', '-o', 'json').stdout
    assert 'nccl-tcpxo-installer' in [item['metadata']['name'] for item in json.loads(listing)['items']]
    table = kubectl('get', 'ds', 'nccl-tcpxo-installer', '-n', 'kube-system').stdout.splitlines()
    # The columns of pkg/printers/internalversion/printers.go's DaemonSet printer (a Table answer).
    assert table[0].split() == ['NAME', 'DESIRED', 'CURRENT', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'NODE', 'SELECTOR', 'AGE']
    assert table[1].split()[:7] == ['nccl-tcpxo-installer', '0', '0', '0', '0', '0', '<none>']
    ds = kube_cluster.store.get('daemonsets.apps', 'nccl-tcpxo-installer', 'kube-system')
    # The stand-in's system write of status (what KUBE-RUNTIME's DaemonSet controller does) ends the rollout.
    ds['status'] = {'currentNumberScheduled': 2, 'desiredNumberScheduled': 2, 'numberMisscheduled': 0, 'numberReady': 2,
                    'numberAvailable': 2, 'updatedNumberScheduled': 2, 'observedGeneration': ds['metadata']['generation']}
    kube_cluster.store.update_status(ds)
    rollout = kubectl('rollout', 'status', 'ds/nccl-tcpxo-installer', '-n', 'kube-system', '--timeout=20s')
    assert 'successfully rolled out' in rollout.stdout
    deleted = kubectl('delete', '-f', path, '--wait=true', '--timeout=20s')
    assert 'daemonset.apps "nccl-tcpxo-installer" deleted' in deleted.stdout
    assert kube_cluster.store.get('daemonsets.apps', 'nccl-tcpxo-installer', 'kube-system') is None
    missing = kubectl('get', 'ds', 'nccl-tcpxo-installer', '-n', 'kube-system', check=False)
    assert 'Error from server (NotFound): daemonsets.apps "nccl-tcpxo-installer" not found' in missing.stderr


def test_wait_for_delete_of_a_namespace(kubectl, kube_cluster):
    kubectl('apply', '-f', '-', stdin='apiVersion: v1\nkind: Namespace\nmetadata:\n  name: doomed\n')
    kubectl('apply', '-n', 'doomed', '-f', '-', stdin='apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n')
    kubectl('delete', 'ns', 'doomed', '--wait=false')
    assert kube_cluster.store.get('namespaces', 'doomed')['status']['phase'] == 'Terminating'
    kubectl('wait', '--for=delete', 'ns/doomed', '--timeout=20s')
    assert kube_cluster.store.get('configmaps', 'c', 'doomed') is None


def test_strict_validation_refuses_an_unknown_field(kubectl):
    manifest = ('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: strict\n  namespace: default\ndata:\n  a: b\n'
                'datum:\n  c: d\n')
    result = kubectl('apply', '-f', '-', stdin=manifest, check=False)
    # The wording kubectl users see from a real apiserver (strict decoding of the request body).
    assert 'Error from server (BadRequest): error when creating "STDIN": ConfigMap in version "v1" cannot be handled as a ' \
           'ConfigMap: strict decoding error: unknown field "datum"' in result.stderr


def test_wait_for_a_condition_that_arrives_later_through_the_watch(kubectl, kube_cluster):
    """kubectl wait GETs, LISTs and then WATCHes; the condition set while it watches ends the wait."""
    manifest = ('apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: later\n  namespace: default\nspec:\n'
                '  selector:\n    matchLabels: {app: later}\n  template:\n    metadata:\n      labels: {app: later}\n'
                '    spec:\n      containers:\n      - {name: c, image: busybox}\n')
    kubectl('apply', '-f', '-', stdin=manifest)

    def become_available():
        time.sleep(1.5)
        deploy = kube_cluster.store.get('deployments.apps', 'later', 'default')
        deploy['status'] = {'conditions': [{'type': 'Available', 'status': 'True', 'reason': 'MinimumReplicasAvailable',
                                            'message': 'Deployment has minimum availability.'}]}
        kube_cluster.store.update_status(deploy)
    thread = threading.Thread(target=become_available)
    thread.start()
    requests_before = len(kube_cluster.requests)
    waited = kubectl('wait', '--for=condition=Available', 'deployment/later', '--timeout=20s')
    thread.join()
    assert 'deployment.apps/later condition met' in waited.stdout
    assert any('watch=true' in request[1] for request in kube_cluster.requests[requests_before:])


def test_standalone_cluster_from_the_run_script(tmp_path):
    """tests/sandbox/run --kube-standalone prints the cluster's URL and a kubeconfig kubectl can use."""
    binary = kubectl_binary()
    if binary is None:
        pytest.skip('the Cloud SDK kubectl.1.33 is not installed')
    run_script = os.path.join(os.path.dirname(KUBE_DIR), 'run')
    process = subprocess.Popen([sys.executable, run_script, '--kube-standalone', 'ocp', '--kube-version', '1.33.5'],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = [process.stdout.readline(), process.stdout.readline()]
        kube_line = next(line for line in lines if line.startswith('kube ocp on https://127.0.0.1:'))
        kubeconfig = kube_line.split(' kubeconfig ')[1].strip()
        version = subprocess.run([binary, 'version', '-o', 'json'], env=dict(os.environ, KUBECONFIG=kubeconfig),
                                 capture_output=True, text=True, timeout=60, check=True)
        assert json.loads(version.stdout)['serverVersion']['gitVersion'] == 'v1.33.5'
        resources = subprocess.run([binary, 'api-resources', '-o', 'name'], env=dict(os.environ, KUBECONFIG=kubeconfig),
                                   capture_output=True, text=True, timeout=60, check=True).stdout.split()
        assert 'deviceclasses.resource.k8s.io' not in resources   # resource.k8s.io/v1 is GA from 1.34 on
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_no_op_server_side_apply_keeps_every_managed_fields_entry_and_the_resource_version(kubectl, kube_cluster):
    """OPENSHIFT_NOTES.md item 6: the real apiserver writes managedFields sorted (operation, time, manager, apiVersion,
    subresource), so re-applying the same body by the same manager is no write at all: other managers' entries
    (a status writer's included) and resourceVersion and generation stay."""
    kubectl('apply', '--server-side', '-f', os.path.join(KUBE_DIR, 'crds', 'Network.yaml'))
    network = json.dumps({'apiVersion': 'networking.gke.io/v1', 'kind': 'Network', 'metadata': {'name': 'ssa-noop', 'labels': {'a': 'b'}},
                          'spec': {'type': 'Device'}})
    kubectl('apply', '--server-side', '--field-manager=applier', '-f', '-', stdin=network)
    kubectl('patch', 'networks.networking.gke.io', 'ssa-noop', '--subresource=status', '--type=merge', '--field-manager=controller', '-p',
            json.dumps({'status': {'conditions': [{'type': 'Ready', 'status': 'True', 'reason': 'NetworkReady', 'message': '',
                                                   'lastTransitionTime': '2026-01-01T00:00:00Z'}]}}))
    kubectl('label', 'networks.networking.gke.io', 'ssa-noop', 'x=y', '--field-manager=labeler')

    def read():
        return json.loads(kubectl('get', 'networks.networking.gke.io', 'ssa-noop', '-o', 'json', '--show-managed-fields').stdout)
    before = read()
    assert [(e['manager'], e['operation'], e.get('subresource')) for e in before['metadata']['managedFields']] == [
        ('applier', 'Apply', None), ('controller', 'Update', 'status'), ('labeler', 'Update', None)]
    kubectl('apply', '--server-side', '--field-manager=applier', '-f', '-', stdin=network)
    after = read()
    assert after['metadata']['managedFields'] == before['metadata']['managedFields']
    assert (after['metadata']['resourceVersion'], after['metadata']['generation']) == \
        (before['metadata']['resourceVersion'], before['metadata']['generation'])
    kubectl('delete', 'networks.networking.gke.io', 'ssa-noop')


def test_printer_columns_with_jsonpath_filters(kubectl):
    """OPENSHIFT_NOTES.md item 7: additionalPrinterColumns such as MachineConfigPool's UPDATED
    (``.status.conditions[?(@.type=="Updated")].status``) are filled as apiextensions' table convertor fills them
    (client-go jsonpath, first result)."""
    crd = {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition', 'metadata': {'name': 'pools.example.com'},
           'spec': {'group': 'example.com', 'scope': 'Cluster', 'names': {'plural': 'pools', 'singular': 'pool', 'kind': 'Pool'},
                    'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                                  'schema': {'openAPIV3Schema': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}},
                                  'additionalPrinterColumns': [
                                      {'name': 'Updated', 'type': 'string', 'jsonPath': '.status.conditions[?(@.type=="Updated")].status'},
                                      {'name': 'Degraded', 'type': 'string', 'jsonPath': '.status.conditions[?(@.type=="Degraded")].status'},
                                      {'name': 'Missing', 'type': 'string', 'jsonPath': '.status.conditions[?(@.type=="Nope")].status'},
                                      {'name': 'Machines', 'type': 'integer', 'jsonPath': '.status.machineCount'}]}]}}
    kubectl('apply', '-f', '-', stdin=json.dumps(crd))
    kubectl('wait', '--for=condition=Established', 'crd/pools.example.com', '--timeout=30s')
    kubectl('apply', '-f', '-', stdin=json.dumps({'apiVersion': 'example.com/v1', 'kind': 'Pool', 'metadata': {'name': 'worker'}}))
    kubectl('patch', 'pools.example.com', 'worker', '--subresource=status', '--type=merge', '-p', json.dumps({'status': {
        'machineCount': 2, 'conditions': [{'type': 'Updated', 'status': 'True'}, {'type': 'Degraded', 'status': 'False'}]}}))
    lines = kubectl('get', 'pools.example.com', 'worker').stdout.splitlines()
    assert lines[0].split() == ['NAME', 'UPDATED', 'DEGRADED', 'MISSING', 'MACHINES']
    assert lines[1].split() == ['worker', 'True', 'False', '2'], lines   # an empty cell prints as nothing
    kubectl('delete', 'crd', 'pools.example.com')
