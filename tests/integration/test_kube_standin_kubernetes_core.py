"""kubernetes.core 6.x (k8s, k8s_info) against a standalone Kubernetes API stand-in cluster.

What it shows: the second ``state: present`` / ``apply: true`` / ``server_side_apply`` run reports
``changed: false`` (kubernetes.core compares the object before and after, so a no-op write must
leave resourceVersion and managedFields alone); check mode stores nothing; a CRD then its custom
resource in one play works (``wait`` on the CRD's Established condition); ``state: absent``.
"""

import json
import os
import subprocess
import sys

import pytest

from sandbox.kube import KubeHub

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: {python}
    configmap:
      apiVersion: v1
      kind: ConfigMap
      metadata: {{name: settings, namespace: apps, labels: {{tier: demo}}}}
      data: {{NCCL_DEBUG: INFO}}
    deployment:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: web, namespace: apps}}
      spec:
        replicas: 2
        selector: {{matchLabels: {{app: web}}}}
        template:
          metadata: {{labels: {{app: web}}}}
          spec:
            containers:
              - {{name: main, image: busybox, ports: [{{containerPort: 80}}]}}
  module_defaults:
    group/kubernetes.core.k8s:
      kubeconfig: {kubeconfig}
  tasks:
    - name: Namespace
      kubernetes.core.k8s:
        definition: {{apiVersion: v1, kind: Namespace, metadata: {{name: apps}}}}
    - name: Present, first
      kubernetes.core.k8s: {{state: present, definition: "{{{{ item }}}}"}}
      loop: ["{{{{ configmap }}}}", "{{{{ deployment }}}}"]
      register: present_1
    - name: Present, second
      kubernetes.core.k8s: {{state: present, definition: "{{{{ item }}}}"}}
      loop: ["{{{{ configmap }}}}", "{{{{ deployment }}}}"]
      register: present_2
    - name: Apply, first (changes a value)
      kubernetes.core.k8s:
        apply: true
        definition: "{{{{ configmap | combine({{'data': {{'NCCL_DEBUG': 'WARN'}}}}) }}}}"
      register: apply_1
    - name: Apply, second
      kubernetes.core.k8s:
        apply: true
        definition: "{{{{ configmap | combine({{'data': {{'NCCL_DEBUG': 'WARN'}}}}) }}}}"
      register: apply_2
    - name: Server-side apply, first
      kubernetes.core.k8s:
        apply: true
        server_side_apply: {{field_manager: gpudirect, force_conflicts: true}}
        definition: "{{{{ deployment }}}}"
      register: ssa_1
    - name: Server-side apply, second
      kubernetes.core.k8s:
        apply: true
        server_side_apply: {{field_manager: gpudirect, force_conflicts: true}}
        definition: "{{{{ deployment }}}}"
      register: ssa_2
    - name: Check mode create
      kubernetes.core.k8s:
        definition: "{{{{ configmap | combine({{'metadata': {{'name': 'only-checked', 'namespace': 'apps'}}}}) }}}}"
      check_mode: true
      register: checked
    - name: A CRD, waited for
      kubernetes.core.k8s:
        src: {network_crd}
        wait: true
        wait_condition: {{type: Established}}
    - name: Its custom resource
      kubernetes.core.k8s:
        definition:
          apiVersion: networking.gke.io/v1
          kind: Network
          metadata: {{name: vpc1}}
          spec: {{type: Device, parametersRef: {{group: networking.gke.io, kind: GKENetworkParamSet, name: vpc1}}}}
      register: network
    - name: Info
      kubernetes.core.k8s_info: {{kind: ConfigMap, namespace: apps, label_selectors: [tier=demo]}}
      register: info
    - name: Absent, first
      kubernetes.core.k8s: {{state: absent, kind: ConfigMap, namespace: apps, name: settings}}
      register: absent_1
    - name: Absent, second
      kubernetes.core.k8s: {{state: absent, kind: ConfigMap, namespace: apps, name: settings}}
      register: absent_2
    - name: Results for the test
      ansible.builtin.copy:
        dest: {results}
        mode: "0600"
        content: "{{{{ {{'present_1': present_1.results | map(attribute='changed'), 'present_2': present_2.results | map(attribute='changed'),
                   'apply_1': apply_1.changed, 'apply_2': apply_2.changed, 'ssa_1': ssa_1.changed, 'ssa_2': ssa_2.changed,
                   'checked': checked.changed, 'network': network.changed, 'info': info.resources | map(attribute='metadata.name'),
                   'absent_1': absent_1.changed, 'absent_2': absent_2.changed}} | to_json }}}}"
"""


def collections_path():
    for entry in [*sys.path, *os.environ.get('PYTHONPATH', '').split(os.pathsep)]:
        if entry and os.path.isdir(os.path.join(entry, 'ansible_collections', 'kubernetes', 'core')):
            return entry
    return None


@pytest.fixture(scope='module')
def cluster():
    hub = KubeHub()
    yield hub.start_cluster('kubernetes-core')
    hub.stop_all()


def test_kubernetes_core_idempotence_check_mode_crd_and_absent(cluster, tmp_path):
    collections = collections_path()
    if collections is None:
        pytest.skip('kubernetes.core is not installed beside the collection (scripts/test build installs it)')
    kubeconfig = cluster.write_kubeconfig(str(tmp_path / 'kubeconfig'))
    results = tmp_path / 'results.json'
    playbook = tmp_path / 'playbook.yml'
    network_crd = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'sandbox', 'kube', 'crds',
                               'Network.yaml')
    playbook.write_text(PLAYBOOK.format(python=sys.executable, kubeconfig=kubeconfig, results=results,
                                        network_crd=network_crd), encoding='utf-8')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='False', HOME=str(tmp_path))
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), str(playbook)], env=env,
                         cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    outcome = json.loads(results.read_text(encoding='utf-8'))
    assert outcome['present_1'] == [True, True] and outcome['present_2'] == [False, False]
    assert (outcome['apply_1'], outcome['apply_2']) == (True, False)
    assert (outcome['ssa_1'], outcome['ssa_2']) == (True, False)   # the first adds the gpudirect manager
    managers = [entry['manager'] for entry in cluster.store.get('deployments.apps', 'web', 'apps')['metadata']['managedFields']]
    assert 'gpudirect' in managers
    assert outcome['checked'] is True and cluster.store.get('configmaps', 'only-checked', 'apps') is None
    assert outcome['network'] is True and cluster.store.get('networks.networking.gke.io', 'vpc1') is not None
    assert outcome['info'] == ['settings']
    assert (outcome['absent_1'], outcome['absent_2']) == (True, False)
    assert cluster.store.get('configmaps', 'settings', 'apps') is None
