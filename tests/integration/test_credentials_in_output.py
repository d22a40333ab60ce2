"""No credential reaches the output: the roles that take a kubeconfig (gke_gpudirect, gke_rdma, openshift_rdma) given
one inline, as a dict with a bearer token (and the GKE roles given kubernetes.core's host, api_key and ca_cert as
<role>_kube_connection, as the GKE playbooks give them from the gke_kube_connection lookup), run at -vvv (every task's
arguments and results printed) against a real API server, and the token appears nowhere in what ansible-playbook prints.

The cluster is a plain one (no GPU nodes, no GKE or OpenShift CRDs): each role runs its argument validation, its
facts and its first reads with the credentials, then stops where the cluster lacks what it needs; every play is
rescued so the next role runs. The reads must have happened (the API server's audit log names them), or the test
would pass on a role that never used the kubeconfig.
"""

import hashlib
import json
import os
import subprocess
import sys

import pytest

from sandbox.kube.controlplane import ACCESS_TOKEN
from playbook_runner import ansible_playbook_command, collections_path

ROLES = {
    'gke_gpudirect': {'gke_gpudirect_technology': 'TCPXO', 'gke_gpudirect_network_prefix': 'secret', 'gke_gpudirect_nccl_test': False},
    'gke_rdma': {'gke_rdma_machine_type': 'a3-ultragpu-8g', 'gke_rdma_nccl_test': False},
    'openshift_rdma': {'openshift_rdma_method': 'shared_device', 'openshift_rdma_link': 'roce'},
}


@pytest.mark.parametrize('given', ['kubeconfig', 'kube_connection'])
def test_an_inline_kubeconfig_token_is_never_printed_at_vvv(kube_cluster, tmp_path, given):
    token = ACCESS_TOKEN   # the sandbox user's bearer token, which the API server accepts (and audits)
    inline = kube_cluster.kubeconfig(context='inline', token=token)
    connection = {'host': kube_cluster.url, 'api_key': token, 'ca_cert': kube_cluster.ca_file}
    plays = [{'name': role, 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
              'vars': {'ansible_python_interpreter': sys.executable},
              'tasks': [{'block': [{'name': 'The role', 'ansible.builtin.include_role': {'name': 'aiinfra.gpudirect.' + role},
                                    'vars': dict(variables, **({role + '_kube_connection': connection}
                                                               if given == 'kube_connection' and role.startswith('gke_')
                                                               else {role + '_kubeconfig': inline}))}],
                         'rescue': [{'name': 'Stopped', 'ansible.builtin.debug': {'msg': '%s stopped' % role}}]}]}
             for role, variables in ROLES.items()]
    playbook = tmp_path / 'play.yml'
    playbook.write_text(json.dumps(plays), encoding='utf-8')
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='False', HOME=str(tmp_path))
    reads = len(kube_cluster.requests)
    run = subprocess.run([*ansible_playbook_command(kubernetes=True), str(playbook), '--check', '-vvv'], env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    for role in ROLES:
        assert 'PLAY [%s]' % role in run.stdout
    assert len(kube_cluster.requests) > reads, 'the roles never read the cluster with the inline kubeconfig'
    assert token not in run.stdout and token not in run.stderr


def test_a_google_cloud_access_token_is_sent_and_never_printed_at_vvv(tmp_path):
    """GCP_ACCESS_TOKEN (auth_kind accesstoken; the playbooks' connection options come from the GCP_* variables) through a
    Compute Engine and a GKE playbook at -vvv: every module's arguments and results are printed, the token is not; the
    sandbox's log shows that the requests carried it (as a hash: the log never holds the credential)."""
    from sandbox import Sandbox   # pylint: disable=import-outside-toplevel
    from playbook_runner import ansible_playbook   # pylint: disable=import-outside-toplevel
    token = 'ya29.' + hashlib.sha256(str(tmp_path).encode()).hexdigest()
    env = {'GCP_AUTH_KIND': 'accesstoken', 'GCP_ACCESS_TOKEN': token}
    sandbox = Sandbox(latency=0.0, seed=0, project='sandbox-project').start()
    try:
        runs = [ansible_playbook(sandbox, 'a3high.yml', {'gpudirect_ssh_source_ranges': ['203.0.113.0/24']}, project='token-gce',
                                 args=('--tags', 'network,instances', '-vvv'), env=env, timeout=600),
                ansible_playbook(sandbox, 'gke_a3mega.yml', {'gpudirect_read_nodes': False}, project='token-gke',
                                 args=('--tags', 'network,cluster,nodepool', '--check', '-vvv'), env=env, timeout=600)]
        log = sandbox.request_log()
    finally:
        sandbox.stop()
    for run in runs:
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert token not in run.stdout and token not in run.stderr
        assert 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER' in run.stdout   # -vvv printed the module arguments, access_token masked
    sent = hashlib.sha256(('Bearer ' + token).encode()).hexdigest()
    for project in ('token-gce', 'token-gke'):
        requests = [entry for entry in log if '/projects/%s/' % project in entry['path']]
        assert requests and all(entry['credential'] == sent for entry in requests), (project, len(requests))


def test_a_service_account_key_is_never_printed_at_vvv_even_when_it_is_refused():
    """GCP_SERVICE_ACCOUNT_CONTENTS (auth_kind serviceaccount) through a Compute Engine playbook at -vvv, with a key that
    google-auth cannot load: the run stops at the plan step naming the authentication problem, the module's arguments
    are printed with the key masked, and no part of the key is in the output."""
    from sandbox import Sandbox   # pylint: disable=import-outside-toplevel
    from playbook_runner import ansible_playbook   # pylint: disable=import-outside-toplevel
    marker = 'KEYMATERIAL' + hashlib.sha256(b'service-account').hexdigest()[:24]
    key = json.dumps({'type': 'service_account', 'project_id': 'key-project', 'private_key_id': 'k1',
                      'private_key': '-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----\n' % marker,
                      'client_email': 'runner@key-project.iam.gserviceaccount.com', 'token_uri': 'http://127.0.0.1:9/token'})
    sandbox = Sandbox(latency=0.0, seed=0, project='sandbox-project').start()
    try:
        run = ansible_playbook(sandbox, 'a3high.yml', {'gpudirect_ssh_source_ranges': ['203.0.113.0/24']}, project='key-gce',
                               args=('--tags', 'network', '-vvv'),
                               env={'GCP_AUTH_KIND': 'serviceaccount', 'GCP_SERVICE_ACCOUNT_CONTENTS': key}, timeout=600)
    finally:
        sandbox.stop()
    output = run.stdout + run.stderr
    assert run.returncode != 0 and 'Failed to authenticate: auth_kind serviceaccount' in output, output[-3000:]
    assert '"service_account_contents": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"' in output
    assert marker not in output and 'runner@key-project' not in output
