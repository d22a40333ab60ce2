"""Action k8s_wait through the real ansible-playbook against a real Kubernetes control plane (kube-apiserver, the
controller manager, the scheduler and kwok's kubelets; tests/sandbox/kube/controlplane.py): a DaemonSet that reaches
its node is ready; one whose node selection matches no node fails at once, not at the timeout; a Pod the scheduler
cannot place is named with the scheduler's own event when the wait gives up, after the wait said where it stood; a kind
the server does not serve is an error that says so."""

import json
import os
import subprocess
import sys
import time

import pytest

from playbook_runner import ansible_playbook_command, collections_path
from sandbox.gcloud import kubectl_binary

KUBECTL = kubectl_binary()
pytestmark = pytest.mark.skipif(KUBECTL is None, reason='the Cloud SDK with kubectl.1.33 is not installed')

NODE = {'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'wait-node', 'labels': {'pool': 'wait'}},
        'status': {'capacity': {'cpu': '8', 'memory': '32Gi', 'pods': '110'},
                   'allocatable': {'cpu': '8', 'memory': '32Gi', 'pods': '110'},
                   'addresses': [{'type': 'InternalIP', 'address': '127.0.0.1'}]}}


def daemonset(name, node_selector):
    labels = {'app': name}
    return {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': name, 'namespace': 'default'},
            'spec': {'selector': {'matchLabels': labels}, 'template': {'metadata': {'labels': labels}, 'spec': {
                'nodeSelector': node_selector, 'containers': [{'name': 'main', 'image': 'registry.k8s.io/pause:3.10'}]}}}}


UNPLACEABLE = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'wants-widgets', 'namespace': 'default'},
               'spec': {'containers': [{'name': 'main', 'image': 'registry.k8s.io/pause:3.10',
                                        'resources': {'limits': {'example.com/widget': '4'}}}]}}

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The DaemonSet that reaches the node
      aiinfra.gpudirect.k8s_wait:
        api_version: apps/v1
        kind: DaemonSet
        namespace: default
        names: [on-the-node]
        expect: {{nodes: [wait-node]}}
        timeout: 120
        delay: 0.5
      register: reaches
    - name: The DaemonSet whose node selection matches nothing
      aiinfra.gpudirect.k8s_wait:
        api_version: apps/v1
        kind: DaemonSet
        namespace: default
        names: [nowhere]
        timeout: 120
        delay: 0.5
      register: nowhere
      ignore_errors: true
    - name: The Pod the scheduler cannot place
      aiinfra.gpudirect.k8s_wait:
        objects: [{unplaceable}]
        description: the widget Pod
        timeout: 13
        delay: 1
      register: unplaceable
      ignore_errors: true
    - name: A kind the server does not serve
      aiinfra.gpudirect.k8s_wait:
        api_version: example.com/v1
        kind: Widget
        timeout: 5
      register: unserved
      ignore_errors: true
    - name: Keep the results
      ansible.builtin.copy:
        content: "{{{{ {{'reaches': reaches, 'nowhere': nowhere, 'unplaceable': unplaceable, 'unserved': unserved}} | to_json }}}}"
        dest: {results}
"""


def kubectl(cluster, *args, stdin=None):
    run = subprocess.run([KUBECTL, *args], env=dict(os.environ, KUBECONFIG=cluster.kubeconfig_path), capture_output=True, text=True,
                         input=stdin, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def test_k8s_wait_judges_names_and_explains_on_the_real_control_plane(kube_cluster, tmp_path):
    for obj in (NODE, daemonset('on-the-node', {'pool': 'wait'}), daemonset('nowhere', {'pool': 'none-such'}), UNPLACEABLE):
        kubectl(kube_cluster, 'apply', '-f', '-', stdin=json.dumps(obj))
    results = tmp_path / 'results.json'
    playbook = tmp_path / 'wait.yml'
    playbook.write_text(PLAYBOOK.format(unplaceable=json.dumps(UNPLACEABLE), results=results), encoding='utf-8')
    env = dict(os.environ, K8S_AUTH_KUBECONFIG=kube_cluster.kubeconfig_path, ANSIBLE_COLLECTIONS_PATH=collections_path(),
               ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_INVENTORY_UNPARSED_WARNING='False')
    started = time.monotonic()
    run = subprocess.run([*ansible_playbook_command(kubernetes=True), '-i', 'localhost,', '-e', 'ansible_python_interpreter=' + sys.executable,
                          str(playbook)], env=env, capture_output=True, text=True, timeout=400, check=False)
    took = time.monotonic() - started
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    outcome = json.loads(results.read_text(encoding='utf-8'))

    assert '\nDaemonSet: ready (' in run.stdout, run.stdout   # what is ready is said at the default verbosity
    reaches = outcome['reaches']
    assert reaches['verdict'] == 'ready' and not reaches.get('failed'), reaches
    assert reaches['objects'] == [{'kind': 'DaemonSet', 'name': 'on-the-node', 'namespace': 'default', 'verdict': 'ready'}]

    nowhere = outcome['nowhere']
    assert nowhere['failed'] and nowhere['reads'] <= 20, nowhere   # ended by the verdict, not by the 120 s timeout
    assert nowhere['msg'].startswith('DaemonSet: failed: DaemonSet default/nowhere it schedules on 0 nodes: its node selection '
                                     'matches no node'), nowhere['msg']

    unplaceable = outcome['unplaceable']
    assert unplaceable['failed'] and unplaceable['verdict'].startswith('pending: Pod default/wants-widgets not scheduled: '), unplaceable
    assert '(still pending after 13 s, ' in unplaceable['msg'], unplaceable['msg']
    # The scheduler's word, once: its FailedScheduling event says what the PodScheduled condition says.
    assert unplaceable['msg'].count('0/1 nodes are available: 1 Insufficient example.com/widget.') == 1, unplaceable['msg']
    # A wait of more than ten seconds said where it stood.
    assert 'The Pod the scheduler cannot place [the widget Pod]: pending: Pod default/wants-widgets not scheduled' in run.stdout, run.stdout

    assert outcome['unserved']['failed'] and outcome['unserved']['msg'] == (
        'k8s_wait: Widget: the API server serves no Widget in example.com/v1: check api_version and kind, or install its CRD first')
    assert took < 300
