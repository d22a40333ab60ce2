# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWX objects under awx/ checked against awx.awx's own argument specs, and the thin AWX project against the
collection's pins. No AWX runs here (nor any network): each module's spec is the one its main() builds, taken from the
awx.awx collection that scripts/lib.sh installs beside ours (dependency_collections), and checked with ansible-core's
ArgumentSpecValidator, as AnsibleModule checks a task's arguments. A workflow node's fields are a plain dict in that
spec; the module documents them (DOCUMENTATION's workflow_nodes suboptions), and that documentation is their spec here."""
from __future__ import annotations

import ast
import importlib
import re

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from playbook_runner import collection_root


class _SpecTaken(Exception):
    pass


def awx_module(name):
    """The Python module of awx.awx's module NAME (ImportError when awx.awx is not installed: run scripts/test)."""
    return importlib.import_module('ansible_collections.awx.awx.plugins.modules.%s' % name)


def argument_spec(name):
    """(argument_spec, the other AnsibleModule keywords) that awx.awx's module NAME builds in its main(): main() runs
    until it makes its ControllerAPIModule, which is replaced by one that keeps the arguments and stops."""
    module = awx_module(name)
    taken = {}

    class Taking:
        def __init__(self, argument_spec, **keywords):
            taken.update(keywords, argument_spec=argument_spec)
            raise _SpecTaken()

    real = module.ControllerAPIModule
    module.ControllerAPIModule = Taking
    try:
        module.main()
    except _SpecTaken:
        pass
    finally:
        module.ControllerAPIModule = real
    spec = taken.pop('argument_spec')
    return spec, {key: value for key, value in taken.items()
                  if key in ('mutually_exclusive', 'required_together', 'required_one_of', 'required_if', 'required_by')}


def documented_suboptions(name, option):
    """The argument spec that DOCUMENTATION of awx.awx's module NAME gives for the suboptions of OPTION."""
    tree = ast.parse(open(awx_module(name).__file__, encoding='utf-8').read())
    documentation = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                         and getattr(node.targets[0], 'id', None) == 'DOCUMENTATION')

    def spec(options):
        return {key: {k: v for k, v in dict(
            type=entry.get('type', 'str'), elements=entry.get('elements'), choices=entry.get('choices'),
            required=entry.get('required', False), options=spec(entry['suboptions']) if 'suboptions' in entry else None,
        ).items() if v is not None} for key, entry in options.items()}
    return spec(yaml.safe_load(documentation)['options'][option]['suboptions'])


def errors(name, arguments, spec=None):
    """What awx.awx's module NAME says of ``arguments`` (its own spec, or ``spec``): the validator's messages."""
    spec, keywords = (spec, {}) if spec is not None else argument_spec(name)
    result = ArgumentSpecValidator(spec, **keywords).validate(arguments)
    return [str(error) for error in result.errors]


def awx_file(name):
    return yaml.safe_load((collection_root() / 'awx' / name).read_text())


def job_templates():
    return awx_file('job_templates.yml')['job_templates']


def workflow_job_templates():
    return awx_file('workflow_job_templates.yml')['workflow_job_templates']


def test_the_specs_are_awx_awx_own_and_refuse_what_they_should():
    """The validator refuses a misspelt key and a wrong type with these specs (so the checks below can fail)."""
    assert any('tags_on_launch' in error for error in errors('job_template', {'name': 'x', 'tags_on_launch': True}))
    assert any('timeout' in error for error in errors('job_template', {'name': 'x', 'timeout': 'an hour'}))
    nodes = [{'identifier': 'a', 'job_tag': 'network'}, {'identifier': 'b', 'forks': 'many'}]
    node_errors = errors('workflow_job_template', {'name': 'x', 'workflow_nodes': nodes}, spec=workflow_spec()[0])
    assert any('job_tag' in error for error in node_errors) and any('forks' in error for error in node_errors)


@pytest.mark.parametrize('module, name', [('organization', 'organization.yml'), ('project', 'project.yml'),
                                          ('execution_environment', 'execution_environment.yml')])
def test_the_organization_project_and_execution_environment_fit_their_modules(module, name):
    assert errors(module, awx_file(name)) == []


def test_every_job_template_fits_awx_awx_job_template():
    found = {template['name']: errors('job_template', template) for template in job_templates()}
    assert found == {name: [] for name in found}


def test_every_playbook_has_a_job_template_through_a_wrapper_of_the_project():
    root = collection_root()
    wrappers = root / 'awx' / 'project' / 'playbooks'
    run = {template['playbook'] for template in job_templates()}
    # every collection playbook is run by a template, through a wrapper of the same name that imports it
    assert {'playbooks/%s' % path.name for path in (root / 'playbooks').glob('*.yml')} <= run
    for playbook in run:
        wrapper = yaml.safe_load((wrappers.parent / playbook).read_text())
        imported = [play['ansible.builtin.import_playbook'] for play in wrapper]
        name = playbook.rsplit('/', 1)[-1][:-len('.yml')]
        assert imported == ['aiinfra.gpudirect.%s' % ('teardown' if name == 'teardown_on_failure' else name)], playbook


def test_every_job_template_names_organization_tags_on_launch_timeout_environment_credentials():
    project, environment, organization = awx_file('project.yml'), awx_file('execution_environment.yml'), awx_file('organization.yml')
    for template in job_templates():
        assert template['organization'] == organization['name'], template['name']
        assert template['project'] == project['name'] and template['execution_environment'] == environment['name'], template['name']
        assert template['ask_tags_on_launch'] is True and template['timeout'] > 0 and template['credentials'], template['name']


def test_every_survey_variable_is_one_its_playbook_reads():
    """A survey answer the playbook does not read would be refused by the playbook's input check (or, for a role's
    variable, set a role the playbook does not run)."""
    root = collection_root()
    for template in job_templates():
        name = template['playbook'].rsplit('/', 1)[-1]
        playbook = root / 'playbooks' / ('teardown.yml' if name == 'teardown_on_failure.yml' else name)
        text = playbook.read_text()
        for imported in re.findall(r'import_playbook: (\S+)', text):
            text += (root / 'playbooks' / imported).read_text()
        roles = set(re.findall(r'aiinfra\.gpudirect\.(\w+)', text))
        for question in template['survey_spec'].get('spec', []):
            variable = question['variable']
            role = next((role for role in roles if variable.startswith(role + '_')), None)
            if role:
                spec = yaml.safe_load((root / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())['argument_specs']
                assert any(variable in point['options'] for point in spec.values()), (template['name'], variable)
            else:
                assert re.search(r'\b%s\b' % variable, text), (template['name'], variable)
            assert question['type'] in ('text', 'textarea', 'password', 'integer', 'float', 'multiplechoice', 'multiselect')
            assert question.get('default', '') in ('', *question.get('choices', [question.get('default', '')]))


def workflow_spec():
    spec, keywords = argument_spec('workflow_job_template')
    return dict(spec, workflow_nodes=dict(spec['workflow_nodes'], options=documented_suboptions('workflow_job_template', 'workflow_nodes'))), keywords


def test_the_workflow_fits_awx_awx_workflow_job_template_nodes_included():
    spec, keywords = workflow_spec()
    for workflow in workflow_job_templates():
        result = ArgumentSpecValidator(spec, **keywords).validate(workflow)
        assert [str(error) for error in result.errors] == [], workflow['name']


def test_the_workflow_runs_network_instances_host_nccl_and_tears_down_on_a_failure():
    templates = {template['name']: template for template in job_templates()}
    (workflow,) = workflow_job_templates()
    nodes = {node['identifier']: node for node in workflow['workflow_nodes']}
    # the success edges, from the one node no edge leads to
    targets = {edge['identifier'] for node in nodes.values() for edges in node.get('related', {}).values() for edge in edges}
    (start,) = set(nodes) - targets
    order = [start]
    while nodes[order[-1]].get('related', {}).get('success_nodes'):
        (after,) = nodes[order[-1]]['related']['success_nodes']
        order.append(after['identifier'])
    assert [nodes[identifier]['job_tags'] for identifier in order] == ['network', 'instances', 'host', 'nccl']
    for identifier in order:
        template = templates[nodes[identifier]['unified_job_template']['name']]
        assert template['playbook'] == 'playbooks/gce_cluster.yml' and template['ask_tags_on_launch']
        assert nodes[identifier]['related']['failure_nodes'] == [{'identifier': 'teardown'}]
    teardown = templates[nodes['teardown']['unified_job_template']['name']]
    assert teardown['playbook'] == 'playbooks/teardown_on_failure.yml'
    # the workflow's survey asks every stage's questions, and whether to tear down
    asked = {question['variable'] for question in workflow['survey_spec']['spec']}
    stage_questions = {question['variable'] for question in templates[nodes[start]['unified_job_template']['name']]['survey_spec']['spec']}
    assert stage_questions - {'gpudirect_provisioning_model'} <= asked and 'teardown_on_failure' in asked


def test_the_project_pins_the_collection_and_kubernetes_core_as_the_execution_environment_does():
    root = collection_root()
    pins = {entry['name']: entry['version'] for entry in
            yaml.safe_load((root / 'awx' / 'project' / 'collections' / 'requirements.yml').read_text())['collections']}
    galaxy = yaml.safe_load((root / 'galaxy.yml').read_text())
    assert pins.pop('aiinfra.gpudirect') == '==%s' % galaxy['version']
    # the execution environment installs the collection's Galaxy requirements file and the collection's own tarball
    environment = yaml.safe_load((root / 'execution-environment.yml').read_text())
    requirements = yaml.safe_load((root / environment['dependencies']['galaxy']).read_text())
    assert pins == {entry['name']: entry['version'] for entry in requirements['collections']}
    assert pins == galaxy['dependencies']   # and as the collection itself declares
