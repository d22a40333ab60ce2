# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One fact, one place: the literal copies that argument specs and docs must carry equal the catalog.

Module docs and role argument specs are YAML that Ansible reads without running our code, so a few
facts (the Compute Engine machine types, the management range, the COS image family, the
credentials' environment variables) are written there again. Each copy is checked here; and each
literal may appear only in the catalog and in the copies listed here, so a new copy fails until
it is added to this test.
"""
from __future__ import annotations

import pathlib
import re

import pytest
import yaml

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute, families, gke, openshift
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import ENVIRONMENT

ROOT = pathlib.Path(__file__).resolve().parents[2]


def module_doc(path):
    """DOCUMENTATION of a plugin file, parsed (the same text ansible-doc reads)."""
    source = (ROOT / path).read_text(encoding='utf-8')
    match = re.search(r'^\s*DOCUMENTATION = r?("""|\'\'\')\n(.*?)\1', source, re.S | re.M)
    return yaml.safe_load(match.group(2))


def role_options(role):
    specs = yaml.safe_load((ROOT / 'roles' / role / 'meta' / 'argument_specs.yml').read_text(encoding='utf-8'))
    return specs['argument_specs']['main']['options']


def argument_spec(module_name):
    module = __import__('ansible_collections.aiinfra.gpudirect.plugins.modules.' + module_name, fromlist=['ARGUMENT_SPEC'])
    return module.ARGUMENT_SPEC


# -- the Compute Engine machine types ----------------------------------------------------------

@pytest.mark.parametrize('path, option, machine_types', [
    ('plugins/modules/gce_gpudirect_network.py', 'machine_type', families.FAMILIES),
    ('plugins/modules/gce_gpudirect_instance.py', 'machine_type', families.GCE_MACHINE_TYPES),
    ('plugins/modules/gke_gpudirect_cluster.py', 'machine_type', gke.GKE_MACHINE_TYPES),
    ('plugins/modules/gke_gpudirect_node_pool.py', 'machine_type', gke.GKE_MACHINE_TYPES),
])
def test_module_docs_list_the_catalogs_machine_types(path, option, machine_types):
    # gce_gpudirect_network takes every family: its gce layout the Compute Engine ones, its gke layouts the GKE ones.
    assert module_doc(path)['options'][option]['choices'] == list(machine_types)


@pytest.mark.parametrize('module_name, machine_types', [
    ('gce_gpudirect_network', families.FAMILIES), ('gce_gpudirect_instance', families.GCE_MACHINE_TYPES),
    ('gke_gpudirect_cluster', gke.GKE_MACHINE_TYPES), ('gke_gpudirect_node_pool', gke.GKE_MACHINE_TYPES),
])
def test_argument_specs_take_the_machine_types_from_the_catalog(module_name, machine_types):
    assert argument_spec(module_name)['machine_type']['choices'] == list(machine_types)


@pytest.mark.parametrize('module_name, option, values', [
    ('gke_gpudirect_node_pool', 'gpu_driver_version', gke.GKE_GPU_DRIVER_VERSION_CHOICES),
])
def test_gke_choices_are_the_catalogs(module_name, option, values):
    path = 'plugins/modules/%s.py' % module_name
    assert module_doc(path)['options'][option]['choices'] == list(values)
    assert argument_spec(module_name)[option]['choices'] == list(values)


def test_gke_defaults_are_the_catalogs():
    assert module_doc('plugins/modules/gke_gpudirect_cluster.py')['options']['default_pool_node_count']['default'] == \
        gke.GKE_DEFAULT_POOL_NODE_COUNT


@pytest.mark.parametrize('role, option', [
    ('gce_network', 'gce_network_machine_type'),
    ('gce_instances', 'gce_instances_machine_type'),
    ('cos_host_prep', 'cos_host_prep_machine_type'),
])
def test_role_argument_specs_list_the_catalogs_machine_types(role, option):
    assert role_options(role)[option]['choices'] == list(families.GCE_MACHINE_TYPES)


def test_the_compute_engine_machine_types_are_those_with_a_host_stack():
    # cos_host_prep takes the same list: every Compute Engine machine type has a COS host stack.
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks
    assert {families.FAMILIES[name].technology for name in families.GCE_MACHINE_TYPES} <= set(host_stacks.HOST_STACKS)


# -- management range and boot image -------------------------------------------------------------

def test_management_range_default_is_the_catalogs():
    assert module_doc('plugins/modules/gce_gpudirect_network.py')['options']['management_cidr']['default'] == \
        compute.GCE_NETWORK['mgmt_subnet_range']
    assert argument_spec('gce_gpudirect_network')['management_cidr']['default'] == compute.GCE_NETWORK['mgmt_subnet_range']


def test_image_docs_name_the_catalogs_image():
    options = module_doc('plugins/modules/gce_gpudirect_instance.py')['options']
    assert 'C(%s) when unset' % compute.COS_IMAGE_FAMILY in ' '.join(options['image_family']['description'])
    assert 'C(%s) when unset' % compute.COS_IMAGE_PROJECT in ' '.join(options['image_project']['description'])


def test_perftest_report_defaults_are_the_catalogs():
    options = module_doc('plugins/modules/perftest_report.py')['options']
    assert options['threshold_fraction']['default'] == openshift.PROOF_THRESHOLD_FRACTION
    assert 'default rate (%d Gb/s)' % openshift.DEFAULT_LINK_GBPS in ' '.join(options['link_gbps']['description'])
    assert role_options('openshift_rdma')['openshift_rdma_threshold_fraction']['default'] == openshift.PROOF_THRESHOLD_FRACTION


# Each literal fact, and the only files outside the catalog allowed to write it (each checked above
# or below). Tests, seeds and the sandbox (which stands in for Google's side) are not collection code.
LITERALS = {
    compute.GCE_NETWORK['mgmt_subnet_range']: {'plugins/modules/gce_gpudirect_network.py'},
    compute.COS_IMAGE_FAMILY: {'plugins/modules/gce_gpudirect_instance.py'},
}
CODE = ('plugins', 'roles', 'playbooks', 'inventories')


@pytest.mark.parametrize('literal', sorted(LITERALS))
def test_a_literal_fact_lives_in_the_catalog_and_its_checked_copies_only(literal):
    found = {str(path.relative_to(ROOT)) for top in CODE for path in (ROOT / top).rglob('*')
             if path.is_file() and '__pycache__' not in path.parts and 'molecule' not in path.parts
             and literal in path.read_text(encoding='utf-8', errors='replace')}
    catalog = {p for p in found if p.startswith('plugins/module_utils/catalog/')}
    assert catalog, 'the catalog no longer holds %s' % literal
    assert found - catalog == LITERALS[literal]


def test_machine_type_lists_appear_only_in_the_checked_specs():
    listing = re.compile(r'\[\s*' + r',\s*'.join(re.escape(name) for name in families.GCE_MACHINE_TYPES) + r'\s*\]')
    found = {str(path.relative_to(ROOT)) for top in CODE for path in (ROOT / top).rglob('*.*')
             if '__pycache__' not in path.parts and listing.search(path.read_text(encoding='utf-8', errors='replace'))}
    assert found == {'plugins/modules/gce_gpudirect_instance.py',
                     'roles/gce_network/meta/argument_specs.yml', 'roles/gce_instances/meta/argument_specs.yml',
                     'roles/cos_host_prep/meta/argument_specs.yml'}


# -- credentials' environment variables ----------------------------------------------------------

@pytest.mark.parametrize('path', ['plugins/doc_fragments/gcp.py', 'plugins/inventory/gce.py'])
def test_documented_fallbacks_are_the_clients_table(path):
    options = module_doc(path)['options']
    documented = {}
    for name, option in options.items():
        text = ' '.join(option.get('description', []) if isinstance(option.get('description'), list) else [option.get('description', '')])
        variables = re.findall(r'Falls back to (?:the )?E\(([A-Z_]+)\)', text)
        if variables:
            documented[name] = variables[0]
    expected = dict(ENVIRONMENT)
    if path.endswith('inventory/gce.py'):
        # The inventory lists projects (plural) from GCP_PROJECT and has no Kubernetes Engine endpoint.
        expected['projects'] = expected.pop('project')
        expected.pop('container_endpoint')
    assert documented == expected


def test_modules_fall_back_to_the_clients_table():
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import module as gcp_module
    fallbacks = {name: spec['fallback'][1] for name, spec in gcp_module.CONNECTION_ARGUMENT_SPEC.items() if 'fallback' in spec}
    assert fallbacks == {name: [variable] for name, variable in ENVIRONMENT.items()}


# -- what the sandbox serves as Google's side ----------------------------------------------------

def test_boot_disk_types_are_the_sandboxs():
    """The catalog's boot disk types per series are what the test sandbox serves as Compute Engine (Google's
    accelerator-optimized machines page), so the modules refuse exactly what the API would. (Zones per machine type
    are not in the catalog: the modules read them from the API, gce/lookups.py.)"""
    # tests/ is on sys.path (tests/conftest.py)
    from sandbox import rules  # pylint: disable=import-outside-toplevel
    assert dict(compute.BOOT_DISK_TYPES) == rules.DISK_TYPES_BY_MACHINE


# -- zone to region ------------------------------------------------------------------------------

def test_zone_to_region_is_worked_out_in_one_place():
    found = {str(path.relative_to(ROOT)) for path in (ROOT / 'plugins').rglob('*.py')
             if re.search(r"rsplit\('-', 1\)", path.read_text(encoding='utf-8'))}
    assert found == {'plugins/module_utils/gcp/links.py'}
