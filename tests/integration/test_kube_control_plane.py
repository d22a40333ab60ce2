"""The test clusters are a real Kubernetes control plane (tests/sandbox/kube/controlplane.py), shown with the real
kubectl of the Cloud SDK: the API server is kube-apiserver v1.34.12 (tests/controlplane/build.sh); its rules are
its own (an immutable Job template, a CRD's schema bounds, a namespace held by a finalizer, the bearer tokens
it accepts, an admission plugin); and what the collection's seeds apply (the vendored CRDs and manifests of
tests/sandbox/kube) is accepted by it.

One cluster for the module (``kube_cluster``), with the admission plugin GKE enables, as every GKE cluster of the
sandbox has it (gke.py).
"""

import glob
import json
import os
import re
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest
import yaml

from sandbox.gcloud import kubectl_binary
from sandbox.kube import KubeHub, vendored
from sandbox.kube.controllers import ClusterControllers
from sandbox.kube.controlplane import binary
from sandbox.kube.errors import KubeError
from sandbox.kube.gke import GKE_ADMISSION_PLUGINS
from waiting import wait_until

KUBECTL = kubectl_binary()
pytestmark = pytest.mark.skipif(KUBECTL is None, reason='the Cloud SDK with kubectl.1.33 is not installed')
KUBE_ADMISSION_PLUGINS = GKE_ADMISSION_PLUGINS
KUBE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'sandbox', 'kube')
CRDS = sorted(glob.glob(os.path.join(KUBE_DIR, 'crds', '*.yaml')))   # GKE's; crds/openshift/ is the OpenShift half's
MANIFESTS = vendored.every()
RELEASE = 'v1.34.12'   # tests/controlplane/kubernetes/go.mod's k8s.io/kubernetes
# Generous: CI is a loaded 2-core machine, and the controller manager's namespace and garbage collectors back off.
WAIT = 120


def kubectl(cluster, *args, stdin=None, kubeconfig=None):
    return subprocess.run([KUBECTL, *args], env=dict(os.environ, KUBECONFIG=kubeconfig or cluster.kubeconfig_path),
                          capture_output=True, text=True, input=stdin, timeout=WAIT + 60, check=False)


def ok(result):
    assert result.returncode == 0, 'kubectl failed (%d):\n%s%s' % (result.returncode, result.stdout, result.stderr)
    return result


def documents(path):
    with open(path, encoding='utf-8') as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]


def test_the_server_is_the_real_kube_apiserver(kube_cluster):
    version = json.loads(ok(kubectl(kube_cluster, 'version', '-o', 'json')).stdout)
    assert version['serverVersion']['gitVersion'] == RELEASE
    assert (version['serverVersion']['major'], version['serverVersion']['minor']) == ('1', '34')
    built = subprocess.run([binary('kube-apiserver'), '--version'], capture_output=True, text=True, timeout=60, check=True)
    assert built.stdout.strip() == 'Kubernetes ' + RELEASE


def test_an_older_gke_version_runs_emulated_and_serves_no_resource_k8s_io(tmp_path):
    """A cluster of GKE 1.33 is the same binaries with --emulated-version 1.33 (cluster.py): the APIs of 1.33, so no
    resource.k8s.io/v1 (GA in 1.34): the DeviceClass DRANET's path needs is not served, which gke_rdma reports.
    A control plane of its own: the version is fixed when its API server starts."""
    hub = KubeHub()
    try:
        cluster = hub.start_cluster('emulated-1-33', version='1.33.5-gke.1308000')
        kubeconfig = cluster.write_kubeconfig(str(tmp_path / 'config'))
        version = json.loads(ok(kubectl(cluster, 'version', '-o', 'json', kubeconfig=kubeconfig)).stdout)['serverVersion']
        assert (version['gitVersion'], version['emulationMajor'], version['emulationMinor']) == (RELEASE, '1', '33')
        resources = ok(kubectl(cluster, 'api-resources', '-o', 'name', kubeconfig=kubeconfig)).stdout.split()
        assert 'pods' in resources and 'daemonsets.apps' in resources
        assert not [name for name in resources if name.endswith('.resource.k8s.io')], resources
    finally:
        hub.stop_all()


JOB = '''apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: %s}]
'''


def test_a_jobs_pod_template_is_immutable(kube_cluster):
    ok(kubectl(kube_cluster, 'apply', '-f', '-', stdin=JOB % 'busybox:1.36'))
    try:
        # -v=6 makes kubectl log each request with the status the server answered.
        changed = kubectl(kube_cluster, 'apply', '-v=6', '-f', '-', stdin=JOB % 'busybox:1.37')
        assert changed.returncode != 0
        [patch] = [line for line in changed.stderr.splitlines() if 'verb="PATCH"' in line and '/jobs/once?' in line]
        assert 'status="422 Unprocessable Entity"' in patch, patch
        assert 'The Job "once" is invalid: spec.template: Invalid value:' in changed.stderr, changed.stderr
        assert 'field is immutable' in changed.stderr, changed.stderr
        stored = kube_cluster.store.get('jobs.batch', 'once', 'default')
        assert stored['spec']['template']['spec']['containers'][0]['image'] == 'busybox:1.36'
    finally:
        ok(kubectl(kube_cluster, 'delete', 'job', 'once', '-n', 'default', '--cascade=foreground', '--timeout=%ds' % WAIT))


@pytest.fixture(scope='module')
def gke_crds(kube_cluster):
    """The CRDs as GKE installs them on a multi-networking cluster (controllers.ClusterControllers.gke_installs),
    then Established. A pass right after the CRDs' create may meet the API server's "not served yet" (discovery
    without the new resource: KeyError; its watch cache starting: 429); the pass is repeated, as the controllers'
    loop repeats it."""
    installs = ClusterControllers(kube_cluster)
    gke_cluster = {'name': 'c1', 'networkConfig': {'enableMultiNetworking': True}}

    def one_pass():
        try:
            installs.gke_installs(gke_cluster, [], 'sandbox-project')
        except KeyError:
            return False
        except KubeError as error:
            if error.code != 429:
                raise
            return False
        return True
    wait_until(one_pass, 'a clean pass of gke_installs', timeout=WAIT)
    ok(kubectl(kube_cluster, 'wait', '--for=condition=Established', '--timeout=%ds' % WAIT, 'crd/networks.networking.gke.io',
               'crd/gkenetworkparamsets.networking.gke.io', 'crd/computeclasses.cloud.google.com'))


def l2_network(name, vlan):
    return json.dumps({'apiVersion': 'networking.gke.io/v1', 'kind': 'Network', 'metadata': {'name': name},
                       'spec': {'type': 'L2', 'l2NetworkConfig': {'vlanID': vlan}}})


def test_the_vendored_network_crd_bounds_the_vlan_id(kube_cluster, gke_crds):
    """crds/Network.yaml (gke-networking-api, verbatim): spec.l2NetworkConfig.vlanID has minimum 1, maximum 4094."""
    del gke_crds
    crd = documents(os.path.join(KUBE_DIR, 'crds', 'Network.yaml'))[0]
    vlan = crd['spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec']['properties']['l2NetworkConfig'][
        'properties']['vlanID']
    assert (vlan['minimum'], vlan['maximum']) == (1, 4094)   # what the refusal below rests on
    refused = kubectl(kube_cluster, 'apply', '-f', '-', stdin=l2_network('vlan-too-big', 5000))
    assert refused.returncode != 0
    assert ('The Network "vlan-too-big" is invalid: spec.l2NetworkConfig.vlanID: Invalid value: 5000: '
            'spec.l2NetworkConfig.vlanID in body should be less than or equal to 4094') in refused.stderr, refused.stderr
    assert kube_cluster.store.get('networks.networking.gke.io', 'vlan-too-big') is None
    # The same Network within the bound is stored: the refusal was the bound's.
    ok(kubectl(kube_cluster, 'apply', '-f', '-', stdin=l2_network('vlan-in-range', 4094)))
    try:
        assert kube_cluster.store.get('networks.networking.gke.io', 'vlan-in-range')['spec']['l2NetworkConfig'] == {'vlanID': 4094}
    finally:
        ok(kubectl(kube_cluster, 'delete', 'networks.networking.gke.io', 'vlan-in-range'))


def namespace_condition(cluster, name, kind):
    namespace = cluster.store.get('namespaces', name) or {}
    return next((c for c in (namespace.get('status') or {}).get('conditions') or [] if c['type'] == kind), None)


def test_a_finalizer_holds_its_namespace_in_terminating_until_it_is_removed(kube_cluster):
    ok(kubectl(kube_cluster, 'create', 'namespace', 'held'))
    ok(kubectl(kube_cluster, 'apply', '-f', '-', stdin=json.dumps({
        'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'pinned', 'namespace': 'held', 'finalizers': ['example.com/hold']},
        'data': {'a': 'b'}})))
    try:
        ok(kubectl(kube_cluster, 'delete', 'namespace', 'held', '--wait=false'))
        # The namespace controller (kube-controller-manager) deletes the content, then reports what holds it.
        remaining = wait_until(lambda: (namespace_condition(kube_cluster, 'held', 'NamespaceFinalizersRemaining') or {}).get('status') == 'True'
                               and namespace_condition(kube_cluster, 'held', 'NamespaceFinalizersRemaining'),
                               'the namespace controller to report the finalizer left in namespace held', timeout=WAIT)
        assert 'example.com/hold in 1 resource instances' in remaining['message'], remaining
        assert kube_cluster.store.get('namespaces', 'held')['status']['phase'] == 'Terminating'
        assert kube_cluster.store.get('configmaps', 'pinned', 'held')['metadata']['deletionTimestamp']
        late = kubectl(kube_cluster, 'create', 'configmap', 'late', '-n', 'held', '--from-literal=a=b')
        assert 'unable to create new content in namespace held because it is being terminated' in late.stderr, late.stderr
    finally:
        ok(kubectl(kube_cluster, 'patch', 'configmap', 'pinned', '-n', 'held', '--type=json',
                   '-p', '[{"op": "remove", "path": "/metadata/finalizers"}]'))
    ok(kubectl(kube_cluster, 'wait', '--for=delete', 'namespace/held', '--timeout=%ds' % WAIT))
    assert kube_cluster.store.get('namespaces', 'held') is None


def get_api(cluster, token):
    """GET /api with ``token`` (None: no Authorization header) -> (HTTP status, the answer's JSON)."""
    request = urllib.request.Request(cluster.url + '/api', headers={'Authorization': 'Bearer ' + token} if token else {})
    context = ssl.create_default_context(cafile=cluster.ca_file)
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_only_the_sandbox_token_is_accepted(kube_cluster, tmp_path):
    assert get_api(kube_cluster, 'sandbox-token')[0] == 200
    for token in ('not-the-sandbox-token', None):   # a wrong token, and none (anonymous requests are off)
        status, answer = get_api(kube_cluster, token)
        assert (status, answer['reason'], answer['message']) == (401, 'Unauthorized', 'Unauthorized'), (token, answer)
    wrong = kube_cluster.write_kubeconfig(str(tmp_path / 'wrong'), token='not-the-sandbox-token')
    refused = kubectl(kube_cluster, 'get', 'namespaces', kubeconfig=wrong)
    assert refused.returncode != 0
    assert 'error: You must be logged in to the server (Unauthorized)' in refused.stderr, refused.stderr
    ok(kubectl(kube_cluster, 'get', 'namespaces'))   # the same request with the sandbox's token


def pod(name, resources, tolerations=None):
    spec = {'containers': [{'name': 'main', 'image': 'example', 'resources': resources}]}
    if tolerations:
        spec['tolerations'] = tolerations
    return json.dumps({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name, 'namespace': 'default'}, 'spec': spec})


def test_extended_resource_toleration_admission_adds_the_gpu_toleration(kube_cluster):
    """ExtendedResourceToleration (enabled here, as on GKE): a Pod requesting nvidia.com/gpu is stored tolerating
    the taint of that name (beside its own tolerations); a Pod without such a request gets none."""
    names = ['gpu', 'cpu-only']
    try:
        gpu_pod = pod('gpu', {'limits': {'nvidia.com/gpu': '8'}}, [{'key': 'other', 'operator': 'Exists'}])
        ok(kubectl(kube_cluster, 'apply', '-f', '-', stdin=gpu_pod))
        ok(kubectl(kube_cluster, 'apply', '-f', '-', stdin=pod('cpu-only', {'limits': {'cpu': '1'}})))
        gpu = json.loads(ok(kubectl(kube_cluster, 'get', 'pod', 'gpu', '-n', 'default', '-o', 'json')).stdout)
        assert {'key': 'other', 'operator': 'Exists'} in gpu['spec']['tolerations']
        assert {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'} in gpu['spec']['tolerations']
        cpu = json.loads(ok(kubectl(kube_cluster, 'get', 'pod', 'cpu-only', '-n', 'default', '-o', 'json')).stdout)
        assert not any(item.get('key') == 'nvidia.com/gpu' for item in cpu['spec'].get('tolerations') or [])
    finally:
        ok(kubectl(kube_cluster, 'delete', 'pod', *names, '-n', 'default', '--ignore-not-found', '--wait=false'))


def test_the_vendored_crds_and_manifests_the_seeds_apply_are_accepted(kube_cluster, gke_crds):
    """Each manifest under tests/sandbox/kube/manifests (the container-engine-accelerators files and the seeds'
    inline manifests) passes the real API server's decoding, validation and admission: a server-side dry run,
    each file judged on its own as on a fresh cluster (nothing is stored, so two files' Pods of one name do not
    meet). Its namespaces and the CRDs (crds/*.yaml, which `kubectl apply` leaves as GKE installed them) are real."""
    del gke_crds
    for path in CRDS:
        ok(kubectl(kube_cluster, 'apply', '-f', path))
    names = [documents(path)[0]['metadata']['name'] for path in CRDS]
    ok(kubectl(kube_cluster, 'wait', '--for=condition=Established', '--timeout=%ds' % WAIT, *['crd/' + name for name in names]))
    namespaces = sorted({doc['metadata']['namespace'] for path in MANIFESTS for doc in documents(path)
                         if doc['metadata'].get('namespace')} - {'default', 'kube-system'})
    for namespace in namespaces:
        ok(kubectl(kube_cluster, 'create', 'namespace', namespace))
    try:
        for path in MANIFESTS:
            result = ok(kubectl(kube_cluster, 'apply', '--dry-run=server', '-f', path))
            for doc in documents(path):
                # created; configured for a namespace the file declares and this test made real above.
                assert re.search(r'/%s (created|configured) \(server dry run\)' % re.escape(doc['metadata']['name']), result.stdout), \
                    (path, result.stdout)
    finally:
        for namespace in namespaces:
            ok(kubectl(kube_cluster, 'delete', 'namespace', namespace, '--wait=false'))
