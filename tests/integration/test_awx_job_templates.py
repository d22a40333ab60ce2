# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job templates of awx/job_templates.yml run as AWX runs a job, against the stand-ins, and the workflow of
awx/workflow_job_templates.yml stage by stage.

AWX hands a job to ansible-runner: a private data directory with the project (here a copy of awx/project/, the thin
project of wrapper playbooks), the template's playbook, the job's inventory, the survey's answers as extra vars, the
launch's tags and limit, the environment its credentials inject, and no terminal. ansible_runner.run does the same here,
with the process environment emptied first, so the playbook sees only what the credential gives: the built-in Google
Compute Engine credential's GCE_* and GCP_* variables (awx/main/models/credential/injectors.py, gce()), PATH and HOME,
plus what an administrator adds as the job's extra environment (the stand-ins' endpoints) and what the execution
environment holds (its collections: here the build's, where scripts/lib.sh installs ours and kubernetes.core; AWX would
install those collections/requirements.yml pins). One difference, because the sandbox has no OAuth token endpoint:
GCP_AUTH_KIND is none, where the credential sets serviceaccount.

What AWX keeps of a job besides its events is its artifacts: the playbook_on_stats event's artifact_data, which
ansible-runner's callback fills from set_stats. The tests read the verdicts and report paths there.

Runs kept cheap: the Compute Engine templates run their network stage (the workflow runs every stage), the GKE ones
their input check and network stage (tag network: no cluster is created), the NCCL test parses a seed log, the
diagnosis runs over four podman stand-in hosts; the OpenShift ones run whole on the OpenShift stand-in (minutes)."""
from __future__ import annotations

import base64
import json
import os
import pwd
import shutil
import sys

import ansible_runner
import pytest
import yaml

from playbook_runner import collection_root, collections_path

PROJECT = 'awx-project'
SEED_LOG = 'tests/fixtures/nccl/seed003_tcpxo_all_gather.txt'


def job_templates():
    return {template['name']: template for template in
            yaml.safe_load((collection_root() / 'awx' / 'job_templates.yml').read_text())['job_templates']}


def survey_answers(survey, **answers):
    """What the survey sends for a launch that takes its defaults except ``answers`` (a question without a default
    that is not answered is not sent, as AWX leaves out an empty optional answer)."""
    values = {question['variable']: question['default'] for question in (survey or {}).get('spec', []) if 'default' in question}
    values.update(answers)
    return values


def credential_environment(sandbox, tmp_path):
    key = tmp_path / 'credential.json'   # the credential's key file (its content is never used: auth_kind none)
    key.write_text(json.dumps({'type': 'service_account', 'client_email': 'gpu@%s.iam.gserviceaccount.com' % PROJECT,
                               'project_id': PROJECT, 'token_uri': 'https://oauth2.googleapis.com/token'}))
    return {
        # HOME as the user's own (an execution environment's is): ansible-core finds async jobs under ~USER, the module
        # writes them under $HOME; the GKE playbooks' network stage is an async job.
        'PATH': os.path.dirname(sys.executable) + os.pathsep + '/usr/bin:/bin', 'HOME': pwd.getpwuid(os.getuid()).pw_dir,
        # as the Google Compute Engine credential injects them
        'GCE_EMAIL': 'gpu@%s.iam.gserviceaccount.com' % PROJECT, 'GCE_PROJECT': PROJECT,
        'GCE_CREDENTIALS_FILE_PATH': str(key), 'GCP_SERVICE_ACCOUNT_FILE': str(key), 'GOOGLE_APPLICATION_CREDENTIALS': str(key),
        'GCP_AUTH_KIND': 'none', 'GCP_PROJECT': PROJECT, 'GCP_ENV_TYPE': 'tower',
        # the job's extra environment (the stand-ins' addresses) and the execution environment's collections
        'CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE': sandbox.compute_url,
        'CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER': sandbox.container_url,
        'ANSIBLE_COLLECTIONS_PATH': collections_path(),
    }


def job_inventory(tmp_path):
    """The job's inventory, as the AWX inventory GPUDirect of awx/job_templates.yml: localhost, and the inventory
    plugin's source (inventories/sandbox/gce.yml, which reads the project from the credential); gpudirect_api_only
    because the sandbox's VMs have no machine behind them, on the VMs only (the plugin's group of A3 High VMs), so that
    the host and NCCL stages find them (set for all hosts, as inventories/sandbox does, those plays take no VM). No
    gpudirect_project: the project is the credential's."""
    inventory = tmp_path / 'inventory'
    (inventory / 'group_vars').mkdir(parents=True, exist_ok=True)
    shutil.copy(collection_root() / 'inventories' / 'sandbox' / 'gce.yml', inventory / 'gce.yml')
    (inventory / 'hosts.yml').write_text(yaml.safe_dump({'all': {'hosts': {'localhost': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}}}))
    (inventory / 'group_vars' / 'gpudirect_tcpx.yml').write_text(yaml.safe_dump({'gpudirect_api_only': True}))
    return str(inventory)


class Job:
    """One job: its runner, its status and the artifacts AWX would keep."""

    def __init__(self, runner):
        self.runner = runner
        self.status = runner.status
        stats = [event for event in runner.events if event.get('event') == 'playbook_on_stats']
        self.artifacts = stats[-1]['event_data'].get('artifact_data', {}) if stats else None
        self.output = runner.stdout.read()

    def __repr__(self):
        return 'job %s: %s' % (self.status, self.output[-6000:])


@pytest.fixture
def launch(monkeypatch, tmp_path):
    """launch(template, environment, answers=None, tags=None, inventory=None) -> Job, as AWX launches the template
    (survey answers over its defaults, tags of the launch or the workflow node)."""
    jobs = []

    def run(template, environment, answers=None, tags=None, inventory=None):
        private = tmp_path / ('job-%d' % (len(jobs) + 1))
        shutil.copytree(collection_root() / 'awx' / 'project', private / 'project')
        for name in list(os.environ):   # only the credential's environment reaches the job
            monkeypatch.delenv(name)
        try:
            runner = ansible_runner.run(
                private_data_dir=str(private), playbook=template['playbook'],
                inventory=inventory or job_inventory(tmp_path),
                extravars=survey_answers(template.get('survey_spec'), **(answers or {})),
                tags=tags or template.get('job_tags') or None, limit=template.get('limit') or None,
                forks=template.get('forks'), envvars=environment, quiet=True, timeout=template['timeout'])
        finally:
            monkeypatch.undo()
        jobs.append(Job(runner))
        return jobs[-1]
    return run


def networks(sandbox):
    return sorted(network['name'] for network in sandbox.resources('compute.networks', project=PROJECT))


def test_the_workflow_runs_its_stages_in_order_and_its_failure_branch_tears_down_only_when_asked(sandbox, tmp_path, launch):
    templates = job_templates()
    (workflow,) = yaml.safe_load((collection_root() / 'awx' / 'workflow_job_templates.yml').read_text())['workflow_job_templates']
    nodes = {node['identifier']: node for node in workflow['workflow_nodes']}
    answers = survey_answers(workflow['survey_spec'], gpudirect_network_prefix='wf', gpudirect_ssh_source_ranges='203.0.113.0/24')
    env = credential_environment(sandbox, tmp_path)

    artifacts = {}

    def stage(identifier, **more):
        """The node's job, with the workflow's answers and, as AWX passes them on, the artifacts of the jobs before."""
        node = nodes[identifier]
        job = launch(templates[node['unified_job_template']['name']], env, answers=dict(answers, **artifacts, **more), tags=node.get('job_tags'))
        artifacts.update(job.artifacts or {})
        return job

    network = stage('network')
    assert network.status == 'successful', network
    assert networks(sandbox) == ['wf-data-net-1', 'wf-data-net-2', 'wf-data-net-3', 'wf-data-net-4', 'wf-mgmt-net']
    assert sandbox.resources('compute.instances', project=PROJECT) == []
    assert network.artifacts['aiinfra_gpudirect']['cluster'] == {
        'machine_type': 'a3-highgpu-8g', 'network_prefix': 'wf',
        'networks': ['wf-mgmt-net', 'wf-data-net-1', 'wf-data-net-2', 'wf-data-net-3', 'wf-data-net-4']}

    instances = stage('instances')
    assert instances.status == 'successful', instances
    assert instances.artifacts['aiinfra_gpudirect']['cluster']['vms'] == {'wf-vm-1': 'RUNNING', 'wf-vm-2': 'RUNNING'}
    assert 'networks' not in instances.artifacts['aiinfra_gpudirect']['cluster']   # the network stage did not run in this job

    # the host and NCCL stages find the VMs through the inventory source (the plays have hosts) and end for them (API
    # records, no machine behind them)
    for identifier in ('host', 'nccl'):
        job = stage(identifier)
        assert job.status == 'successful' and 'no hosts matched' not in job.output, job

    # the failure branch: with the survey's "no" it deletes nothing, with "yes" what the stages made
    kept = stage('teardown')
    assert kept.status == 'successful' and len(sandbox.resources('compute.instances', project=PROJECT)) == 2, kept
    assert 'teardown' not in kept.artifacts.get('aiinfra_gpudirect', {})
    removed = stage('teardown', teardown_on_failure='yes')
    assert removed.status == 'successful', removed
    assert sandbox.resources('compute.instances', project=PROJECT) == [] and networks(sandbox) == []
    assert removed.artifacts['aiinfra_gpudirect']['teardown'] == {
        'machine_type': 'a3-highgpu-8g', 'network_prefix': 'wf', 'vms': {'wf-vm-1': 'ABSENT', 'wf-vm-2': 'ABSENT'}, 'network': 'absent'}


@pytest.mark.parametrize('name, machine_type, prefix', [
    ('GPUDirect A3 High cluster (Compute Engine)', 'a3-highgpu-8g', 'a3high'),
    ('GPUDirect A3 Mega cluster (Compute Engine)', 'a3-megagpu-8g', 'a3mega'),
    ('GPUDirect A3 Edge cluster (Compute Engine)', 'a3-edgegpu-8g', 'a3edge'),
])
def test_each_compute_engine_template_makes_its_network_and_the_teardown_template_removes_it(sandbox, tmp_path, launch, name, machine_type, prefix):
    templates = job_templates()
    env = credential_environment(sandbox, tmp_path)
    made = launch(templates[name], env, answers={'gpudirect_ssh_source_ranges': '203.0.113.0/24, 198.51.100.0/24'}, tags='network')
    assert made.status == 'successful', made
    assert made.artifacts['aiinfra_gpudirect']['cluster']['machine_type'] == machine_type
    assert made.artifacts['aiinfra_gpudirect']['cluster']['networks'][0] == '%s-mgmt-net' % prefix
    ssh = [rule['sourceRanges'] for rule in sandbox.resources('compute.firewalls', project=PROJECT) if rule['name'] == '%s-mgmt-external-ssh' % prefix]
    assert ssh == [['203.0.113.0/24', '198.51.100.0/24']]
    gone = launch(templates['GPUDirect teardown (Compute Engine)'], env, answers={'gpudirect_machine_type': machine_type})
    assert gone.status == 'successful', gone
    assert networks(sandbox) == [] and gone.artifacts['aiinfra_gpudirect']['teardown']['network'] == 'absent'


def test_an_empty_ssh_answer_makes_no_ssh_rule(sandbox, tmp_path, launch):
    template = job_templates()['GPUDirect cluster (Compute Engine)']
    job = launch(template, credential_environment(sandbox, tmp_path), answers={'gpudirect_node_count': 1}, tags='network')
    assert job.status == 'successful', job
    rules = [rule['name'] for rule in sandbox.resources('compute.firewalls', project=PROJECT)]
    assert 'a3high-mgmt-internal' in rules and 'a3high-mgmt-external-ssh' not in rules


@pytest.mark.parametrize('name', ['GPUDirect A3 High on GKE', 'GPUDirect A3 Mega on GKE', 'GPUDirect A3 Ultra on GKE',
                                  'GPUDirect A4 on GKE', 'GPUDirect on GKE', 'GPUDirect teardown on GKE'])
def test_each_gke_template_checks_its_input_and_runs_its_network_stage(sandbox, tmp_path, launch, name):
    template = job_templates()[name]
    job = launch(template, credential_environment(sandbox, tmp_path), tags='network')
    assert job.status == 'successful', job
    if 'teardown' not in name:
        assert job.artifacts['aiinfra_gpudirect']['gke']['status'] == 'not run (tags)' and job.artifacts['aiinfra_gpudirect']['gke']['cluster']
    if name != 'GPUDirect on GKE':
        return
    # a misspelt answer is refused by the job before anything is made
    refused = launch(template, credential_environment(sandbox, tmp_path), answers={'gpudirect_clusterr': 'x'}, tags='network')
    assert refused.status == 'failed' and 'gpudirect_clusterr' in refused.output, refused


def test_the_nccl_template_returns_the_verdict_and_the_report_paths(sandbox, tmp_path, launch):
    """The NCCL test template on a log the host already holds: the job's inventory says so (parse mode, the log's path),
    as an AWX inventory's host variables would; the survey names the hosts, the machine type and the report directory."""
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(yaml.safe_dump({'all': {'hosts': {'localhost': {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
        'nccl_test_mode': 'parse', 'nccl_test_log': str(collection_root() / SEED_LOG)}}}}))
    report = tmp_path / 'report'
    job = launch(job_templates()['GPUDirect NCCL test'], credential_environment(sandbox, tmp_path), inventory=str(inventory),
                 answers={'gpudirect_nccl_hosts': 'localhost', 'nccl_test_machine_type': 'a3-megagpu-8g', 'nccl_test_report_dir': str(report)})
    assert job.status == 'successful', job
    nccl = job.artifacts['aiinfra_gpudirect']['nccl']
    assert nccl['verdict'] == json.loads((report / 'report.json').read_text())['verdict'] == 'PASS'
    assert nccl['report_dir'] == str(report) and sorted(nccl['files']) == sorted(str(path) for path in report.iterdir())


def test_the_openshift_templates_install_prove_return_the_verdict_and_tear_down(tmp_path, launch):
    """The OpenShift templates on the OpenShift stand-in (the real control plane, tests/sandbox/kube/openshift.py), with
    the environment the built-in "OpenShift or Kubernetes API Bearer Token" credential injects (K8S_AUTH_HOST,
    K8S_AUTH_API_KEY, K8S_AUTH_SSL_CA_CERT, K8S_AUTH_VERIFY_SSL; awx/main/models/credential/injectors.py) and no
    kubeconfig; the stand-in's short polls are the inventory's host variables."""
    from test_openshift_rdma_playbook import OpenShift, POLL_SECONDS   # pylint: disable=import-outside-toplevel
    openshift = OpenShift(tmp_path)
    try:
        config = yaml.safe_load(open(openshift.kubeconfig, encoding='utf-8'))
        ca = tmp_path / 'ca.crt'
        ca.write_bytes(base64.b64decode(config['clusters'][0]['cluster']['certificate-authority-data']))
        env = {'PATH': os.path.dirname(sys.executable) + os.pathsep + '/usr/bin:/bin', 'HOME': pwd.getpwuid(os.getuid()).pw_dir,
               'K8S_AUTH_HOST': config['clusters'][0]['cluster']['server'], 'K8S_AUTH_API_KEY': config['users'][0]['user']['token'],
               'K8S_AUTH_SSL_CA_CERT': str(ca), 'K8S_AUTH_VERIFY_SSL': 'True', 'ANSIBLE_COLLECTIONS_PATH': collections_path()}
        inventory = tmp_path / 'inventory.yml'
        inventory.write_text(yaml.safe_dump({'all': {'hosts': {'localhost': {
            'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable, 'openshift_rdma_poll_seconds': POLL_SECONDS}}}}))
        templates = job_templates()
        report = tmp_path / 'rdma-report'
        proved = launch(templates['GPUDirect RDMA on OpenShift'], env, inventory=str(inventory), answers={'openshift_rdma_report_dir': str(report)})
        assert proved.status == 'successful', proved
        rdma = proved.artifacts['aiinfra_gpudirect']['openshift_rdma']
        assert rdma['verdict'] == json.loads((report / 'report.json').read_text())['verdict']['verdict'] == 'PASS'
        assert rdma['report_dir'] == str(report) and rdma['configuration'] == 'shared_device/roce'
        removed = launch(templates['GPUDirect RDMA teardown on OpenShift'], env, inventory=str(inventory))
        assert removed.status == 'successful', removed
        assert openshift.get('macvlannetworks.mellanox.com', 'rdmashared-net') is None
    finally:
        openshift.stop()


@pytest.mark.skipif(not os.environ.get('GPUDIRECT_DOCKER_SOCKET'), reason='GPUDIRECT_DOCKER_SOCKET is not set: source tests/ci/podman.sh')
def test_the_nccl_diagnosis_template_names_the_bad_host_in_the_artifacts(tmp_path, launch):
    """The diagnosis template over four stand-in hosts of tests/integration/test_nccl_diagnose.py (an NCCL test container
    each on podman, SYNTHETIC output, one host broken by its faults file); the stand-in's image and socket are the
    inventory's variables, as an AWX inventory's would be."""
    from test_nccl_diagnose import Fabric, IMAGE, SOCKET   # pylint: disable=import-outside-toplevel
    fabric = Fabric(4)
    try:
        fabric.start(['bad-host %s' % fabric.hosts[2]])
        inventory = tmp_path / 'inventory.yml'
        inventory.write_text(yaml.safe_dump({'all': {
            'hosts': {host: {'ansible_connection': 'local', 'nccl_test_container': fabric.containers[host]} for host in fabric.hosts},
            'vars': {'ansible_python_interpreter': sys.executable, 'nccl_test_preflight': False, 'nccl_test_pull': 'never',
                     'nccl_test_image': IMAGE, 'nccl_test_force_version_pair': True, 'nccl_test_docker_socket': SOCKET,
                     'nccl_test_fail_on_verdict': False}}}))
        env = {'PATH': os.path.dirname(sys.executable) + os.pathsep + '/usr/bin:/bin', 'HOME': pwd.getpwuid(os.getuid()).pw_dir,
               'ANSIBLE_COLLECTIONS_PATH': collections_path()}
        report = tmp_path / 'report'
        job = launch(job_templates()['GPUDirect NCCL fabric diagnosis'], env, inventory=str(inventory),
                     answers={'gpudirect_nccl_hosts': 'all', 'nccl_test_machine_type': 'a3-megagpu-8g', 'nccl_test_report_dir': str(report)})
        assert job.status == 'successful', job
        diagnosis = job.artifacts['aiinfra_gpudirect']['nccl_diagnosis']
        assert diagnosis['bad_hosts'] == [fabric.hosts[2]] == json.loads((report / 'report.json').read_text())['bad_hosts']
        assert diagnosis['suspect_hosts'] == [] and diagnosis['synthetic'] is True and diagnosis['report_dir'] == str(report)
    finally:
        fabric.remove()
