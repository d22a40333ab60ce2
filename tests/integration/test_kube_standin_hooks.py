"""The stand-in's hooks for other simulations (tests/sandbox/kube/README.md "Hooks"), driven by the real kubectl
1.33: a read-only resource (an aggregated API such as OLM's packageserver) and the synthetic-exec runtime.
The controller-loop hooks (``ClusterControllers.add``, ``pause``) are in test_kube_controllers.py."""

import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from sandbox.gcloud import kubectl_binary
from sandbox.kube.controllers import ClusterControllers
from sandbox.kube.exec import SyntheticRuntime, install_handlers


KUBECTL = kubectl_binary()
pytestmark = pytest.mark.skipif(KUBECTL is None, reason='the Cloud SDK with kubectl.1.33 is not installed')


def kubectl(kube_cluster, *args, stdin=None):
    return subprocess.run([KUBECTL, *args], env=dict(os.environ, KUBECONFIG=kube_cluster.kubeconfig_path), capture_output=True,
                          text=True, input=stdin, timeout=60, check=False)


def test_read_only_resource_serves_reads_and_refuses_writes_with_405(kube_cluster):
    kube_cluster.add_readonly('packages.operators.coreos.com/v1', 'packagemanifests', 'PackageManifest')
    kube_cluster.store.create({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'openshift-marketplace'}})
    kube_cluster.store.create({'apiVersion': 'packages.operators.coreos.com/v1', 'kind': 'PackageManifest',
                               'metadata': {'name': 'sriov-network-operator', 'namespace': 'openshift-marketplace'},
                               'status': {'catalogSource': 'redhat-operators', 'defaultChannel': 'stable'}})
    resources = kubectl(kube_cluster, 'api-resources', '--api-group=packages.operators.coreos.com', '-o', 'wide')
    assert resources.returncode == 0, resources.stderr
    assert 'packagemanifests' in resources.stdout and ' get,list,watch ' in resources.stdout, resources.stdout
    got = kubectl(kube_cluster, 'get', 'packagemanifests', '-n', 'openshift-marketplace', '-o', 'json')
    assert got.returncode == 0 and json.loads(got.stdout)['items'][0]['status']['defaultChannel'] == 'stable', got.stderr
    body = json.dumps({'apiVersion': 'packages.operators.coreos.com/v1', 'kind': 'PackageManifest',
                       'metadata': {'name': 'other', 'namespace': 'openshift-marketplace'}})
    created = kubectl(kube_cluster, 'create', '-f', '-', stdin=body)
    assert created.returncode != 0
    assert 'the server does not allow this method on the requested resource' in created.stderr, created.stderr
    deleted = kubectl(kube_cluster, 'delete', 'packagemanifest', 'sriov-network-operator', '-n', 'openshift-marketplace')
    assert deleted.returncode != 0 and 'does not allow this method' in deleted.stderr, deleted.stderr
    # The Status body as the apiserver's go-restful 405 writes it (errors.NewGenericServerResponse).
    request = urllib.request.Request(kube_cluster.url + '/apis/packages.operators.coreos.com/v1/namespaces/openshift-marketplace/'
                                     'packagemanifests', data=body.encode(), method='POST',
                                     headers={'Authorization': 'Bearer any', 'Content-Type': 'application/json'})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, context=ssl.create_default_context(cafile=kube_cluster.ca_file), timeout=10)
    assert refused.value.code == 405 and json.loads(refused.value.read()) == {
        'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
        'message': 'the server does not allow this method on the requested resource', 'reason': 'MethodNotAllowed',
        'details': {}, 'code': 405}
    assert kube_cluster.store.get('packagemanifests.packages.operators.coreos.com', 'other', 'openshift-marketplace') is None


def test_synthetic_runtime_runs_pods_without_podman_and_maps_exec_to_a_host_command(kube_cluster):
    seen = []

    def exec_argv(pod, container, command):
        seen.append((pod['metadata']['name'], container, command))
        return [sys.executable, '-c', 'import sys; print("synthetic:", *sys.argv[1:]); sys.exit(3)', *command]
    runtime = SyntheticRuntime(exec_argv)
    install_handlers(kube_cluster, runtime)
    controllers = ClusterControllers(kube_cluster, runtime, ready_delay=0).start()
    try:
        kube_cluster.store.create({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'worker-0'}, 'spec': {'podCIDR': '10.4.0.0/24'},
                                   'status': {'allocatable': {'cpu': '8', 'memory': '32Gi', 'pods': '110'},
                                              'capacity': {'cpu': '8', 'memory': '32Gi', 'pods': '110'},
                                              'conditions': [{'type': 'Ready', 'status': 'True'}]}})
        kube_cluster.store.create({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'tools', 'namespace': 'default'},
                                   'spec': {'containers': [{'name': 'main', 'image': 'example/tools:1'}]}})
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (kube_cluster.store.get('pods', 'tools', 'default').get('status') or {}).get('phase') != 'Running':
            time.sleep(0.1)
        result = kubectl(kube_cluster, 'exec', 'tools', '--', 'ibstat', '-v')
        assert result.stdout == 'synthetic: ibstat -v\n' and result.returncode == 3, (result.stdout, result.stderr)
        assert seen == [('tools', 'main', ['ibstat', '-v'])]
        logs = kubectl(kube_cluster, 'logs', 'tools')
        assert logs.returncode == 0 and logs.stdout == ''
    finally:
        controllers.stop()
    assert not controllers.errors, controllers.errors
