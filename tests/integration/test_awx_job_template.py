# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""awx/job_template.yml run the way AWX / Automation Controller runs it, against the sandbox.

The controller (through ansible-runner) starts ansible-playbook in the project directory with the
template's playbook and inventory, writes the survey's answers to an extra-vars file (-e @FILE),
gives it no terminal (nothing may prompt), and sets the environment from the job's credentials: the
built-in Google Compute Engine credential injects GCE_* and GCP_* variables (awx/main/models/
credential/injectors.py, gce()). Here the environment holds only those, PATH and HOME, plus what an
administrator would add as extra environment: the endpoint override that points at the sandbox.
One difference, because the sandbox has no OAuth token endpoint: GCP_AUTH_KIND is none, where the
credential sets serviceaccount.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import yaml

from playbook_runner import collection_root, collections_path

PROJECT = 'awx-project'


def controller_environment(sandbox, tmp_path):
    key = tmp_path / 'credential.json'   # the credential's key file (its content is never used: auth_kind none)
    key.write_text(json.dumps({'type': 'service_account', 'client_email': 'gpu@%s.iam.gserviceaccount.com' % PROJECT,
                               'project_id': PROJECT, 'token_uri': 'https://oauth2.googleapis.com/token'}))
    return {
        'PATH': os.path.dirname(sys.executable) + os.pathsep + '/usr/bin:/bin', 'HOME': str(tmp_path),
        # as the Google Compute Engine credential injects them
        'GCE_EMAIL': 'gpu@%s.iam.gserviceaccount.com' % PROJECT, 'GCE_PROJECT': PROJECT,
        'GCE_CREDENTIALS_FILE_PATH': str(key), 'GCP_SERVICE_ACCOUNT_FILE': str(key), 'GOOGLE_APPLICATION_CREDENTIALS': str(key),
        'GCP_AUTH_KIND': 'none', 'GCP_PROJECT': PROJECT, 'GCP_ENV_TYPE': 'tower',
        # extra environment of the job (the sandbox's address) and the execution environment's collections
        'CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE': sandbox.compute_url,
        'ANSIBLE_COLLECTIONS_PATH': collections_path(),
    }


def controller_inventory(tmp_path):
    """The job's inventory: localhost, and gpudirect_api_only because the sandbox's VMs have no machine behind
    them. It sets no gpudirect_project: the project is the credential's (GCP_PROJECT)."""
    path = tmp_path / 'inventory.yml'
    path.write_text(yaml.safe_dump({'all': {
        'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}},
        'vars': {'gpudirect_api_only': True}}}))
    return str(path)


def survey_answers(survey, **answers):
    """What the survey gives for a launch that accepts the defaults, except ``answers``."""
    values = {question['variable']: question['default'] for question in survey['spec']}
    values.update(answers)
    return values


def test_the_job_template_runs_as_the_controller_runs_it(sandbox, tmp_path):
    root = collection_root()
    template = yaml.safe_load((root / 'awx' / 'job_template.yml').read_text())
    survey = json.loads((root / 'awx' / 'survey.json').read_text())
    assert template['survey_enabled'] and not template['ask_variables_on_launch']
    # every survey variable is an extra var the playbooks document
    documented = (root / 'playbooks' / 'gce_cluster.yml').read_text().split('- name:', 1)[0]
    assert {q['variable'] for q in survey['spec']} <= set(re.findall(r'\bgpudirect_\w+', documented))

    extravars = tmp_path / 'extravars'
    extravars.write_text(json.dumps(survey_answers(survey, gpudirect_ssh_source_ranges='203.0.113.0/24, 198.51.100.0/24')))
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', controller_inventory(tmp_path),
               '-e', '@' + str(extravars), template['playbook']]
    result = subprocess.run(command, cwd=root, env=controller_environment(sandbox, tmp_path), stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    # what the survey's defaults ask for, in the credential's project
    instances = sandbox.resources('compute.instances', project=PROJECT)
    assert sorted(vm['name'] for vm in instances) == ['a3high-vm-1', 'a3high-vm-2']
    assert {vm['zone'].rsplit('/', 1)[-1] for vm in instances} == {'us-central1-a'}
    ssh = [rule for rule in sandbox.resources('compute.firewalls', project=PROJECT) if rule['name'] == 'a3high-mgmt-external-ssh']
    assert [rule['sourceRanges'] for rule in ssh] == [['203.0.113.0/24', '198.51.100.0/24']]


def test_an_empty_ssh_answer_makes_no_ssh_rule(sandbox, tmp_path):
    root = collection_root()
    survey = json.loads((root / 'awx' / 'survey.json').read_text())
    extravars = tmp_path / 'extravars'
    extravars.write_text(json.dumps(survey_answers(survey, gpudirect_node_count=1)))
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', controller_inventory(tmp_path),
               '-e', '@' + str(extravars), '--tags', 'network', 'playbooks/a3high.yml']
    result = subprocess.run(command, cwd=root, env=controller_environment(sandbox, tmp_path), stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rules = [rule['name'] for rule in sandbox.resources('compute.firewalls', project=PROJECT)]
    assert 'a3high-mgmt-internal' in rules and 'a3high-mgmt-external-ssh' not in rules
