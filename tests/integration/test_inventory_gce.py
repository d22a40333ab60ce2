"""The aiinfra.gpudirect.gce inventory with the real ansible-inventory against the sandbox.

VMs are made the way the playbooks make them (gce_gpudirect_network + gce_gpudirect_instance), so
the inventory reads exactly what our modules leave in the API; the expected addresses are read from
the sandbox's own records. Failures are injected with the sandbox's fault rules (tests/sandbox/faults.py).
"""

import base64
import json
import os
import subprocess
import sys
import zlib

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.inventory import gce
from ansible_collections.aiinfra.gpudirect.plugins.modules import gce_gpudirect_instance, gce_gpudirect_network
from module_runner import run_module
from playbook_runner import sandbox_environment
from sandbox import catalog

PROJECT = 'inv-project'
OTHER = 'inv-other'
TCPX_GROUP, MEGA_GROUP = 'gpudirect_a3_highgpu_8g', 'gpudirect_a3_megagpu_8g'


def make_vms(sandbox, project, family, prefix, zone, count):
    connection = {'project': project, 'auth_kind': 'none', 'compute_endpoint': sandbox.compute_url, 'retry_deadline': 30}
    region = zone.rsplit('-', 1)[0]
    fabric = run_module(gce_gpudirect_network.main, dict(connection, region=region, machine_type=family, network_prefix=prefix, ssh_source_ranges=[]))
    assert fabric.get('failed') is not True, fabric
    args = dict(connection, zone=zone, machine_type=family, network_prefix=prefix, count=count, boot_disk_size_gb=50)
    result = run_module(gce_gpudirect_instance.main, args)
    assert result.get('failed') is not True, result
    return result['instances']


def make_plain_vm(sandbox, project, name, zone='us-east1-b', labels=None):
    from sandbox.client import SandboxClient
    client = SandboxClient(sandbox.url)
    region = zone.rsplit('-', 1)[0]
    if client.get('compute/v1/projects/%s/global/networks/ops-net' % project).status == 404:
        client.create_vpc(project, 'ops-net', 'ops-sub', region, '10.20.0.0/24', mtu=1460)
    body = {'name': name, 'machineType': 'zones/%s/machineTypes/e2-standard-4' % zone,
            'networkInterfaces': [{'subnetwork': 'regions/%s/subnetworks/ops-sub' % region}],
            'disks': [{'boot': True, 'autoDelete': True, 'initializeParams': {'sourceImage': 'projects/debian-cloud/global/images/family/debian-12'}}]}
    if labels:
        body['labels'] = labels
    client.must('POST', 'compute/v1/projects/%s/zones/%s/instances' % (project, zone), body)


@pytest.fixture(scope='module')
def fleet():
    """Two A3 High VMs and an A3 Mega VM in PROJECT (one A3 High stopped later by a test that needs it), and a
    plain VM in OTHER; a sandbox of its own, shared by the read-only tests of this module."""
    from sandbox import Sandbox
    with Sandbox(latency=0.0) as sandbox:
        high = make_vms(sandbox, PROJECT, 'a3-highgpu-8g', 'a3high', 'us-central1-a', 2)
        mega = make_vms(sandbox, PROJECT, 'a3-megagpu-8g', 'a3mega', 'us-east5-a', 1)
        make_plain_vm(sandbox, OTHER, 'ops-1', labels={'role': 'bastion'})
        make_plain_vm(sandbox, OTHER, 'ops-2', zone='us-east1-c')
        yield sandbox, {vm['name']: vm for vm in high + mega}


def inventory(sandbox, tmp_path, config, *args, project=PROJECT, fail_on_unparsed=True, name='test.gce.yml', check=True):
    """Run ansible-inventory over a config file of this plugin; return the CompletedProcess (JSON for --list / --host)."""
    source = tmp_path / name
    source.write_text(config if config.startswith('plugin:') else 'plugin: aiinfra.gpudirect.gce\n' + config)
    env = sandbox_environment(sandbox, project)
    env['ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED'] = 'True' if fail_on_unparsed else 'False'
    env['ANSIBLE_INVENTORY_ENABLED'] = 'auto,yaml'
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-inventory'), '-i', str(source), *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def listing(sandbox, tmp_path, config='', **kwargs):
    return json.loads(inventory(sandbox, tmp_path, config, '--list', **kwargs).stdout)


def unsafe(value):
    """ansible-inventory marks values from inventory plugins as unsafe ({'__ansible_unsafe': ...}); the plain value."""
    if isinstance(value, dict):
        if set(value) == {'__ansible_unsafe'}:
            return value['__ansible_unsafe']
        return {key: unsafe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unsafe(item) for item in value]
    return value


def aggregated_calls(sandbox, since=0):
    return [entry for entry in sandbox.request_log()[since:] if entry['api_method'] == 'compute.instances.aggregatedList']


def graph_tree(text):
    """ansible-inventory --graph output -> {group: (child groups, hosts)}, both in the order shown."""
    tree, path = {}, []
    for line in text.splitlines():
        depth = line.index('--') // 3 if '--' in line else 0
        name = line.split('--', 1)[-1].strip()
        del path[depth:]
        if name.startswith('@'):
            group = name[1:].rstrip(':')
            tree.setdefault(group, ([], []))
            if path:
                tree[path[-1]][0].append(group)
            path.append(group)
        else:
            tree[path[-1]][1].append(name)
    return tree


def hosts_under(tree, group):
    """The hosts of a group and of its descendants, as ansible-inventory --graph shows them."""
    children, hosts = tree[group]
    return hosts + [host for child in children for host in hosts_under(tree, child)]


def test_graph_shows_the_vms_by_technology_and_family(fleet, tmp_path):
    sandbox, vms = fleet
    tree = graph_tree(inventory(sandbox, tmp_path, '', '--graph').stdout)
    # hosts come in the order of their instance ids (the module makes VMs concurrently: either order)
    ids = {item['name']: int(item['id']) for item in sandbox.resources('compute.instances')}
    # the family group is a child of its technology group; the VMs are members of the family group
    assert tree['gpudirect_tcpx'] == ([TCPX_GROUP], [])
    assert tree[TCPX_GROUP] == ([], sorted(['a3high-vm-1', 'a3high-vm-2'], key=ids.get))
    assert hosts_under(tree, 'gpudirect_tcpxo') == tree[MEGA_GROUP][1] == ['a3mega-vm-1']
    assert sorted(tree['gpudirect_network_a3high'][1]) == ['a3high-vm-1', 'a3high-vm-2']
    # a zone group is a child of its region group
    assert tree['gpudirect_region_us_east5'] == (['gpudirect_zone_us_east5_a'], [])
    assert hosts_under(tree, 'gpudirect_region_us_east5') == ['a3mega-vm-1']
    # every host is in its technology, family, zone, region, project and fabric group, and in no other
    for name in vms:
        memberships = sorted(group for group in tree if group != 'all' and name in hosts_under(tree, group))
        prefix = name.split('-vm-')[0]
        family, technology, zone = {'a3high': (TCPX_GROUP, 'gpudirect_tcpx', 'us_central1_a'),
                                    'a3mega': (MEGA_GROUP, 'gpudirect_tcpxo', 'us_east5_a')}[prefix]
        assert memberships == sorted([family, technology, 'gpudirect_zone_' + zone, 'gpudirect_region_' + zone[:-2],
                                      'gpudirect_project_inv_project', 'gpudirect_network_' + prefix])


def test_host_shows_the_data_nic_addresses_the_api_holds(fleet, tmp_path):
    sandbox, vms = fleet
    host = unsafe(json.loads(inventory(sandbox, tmp_path, '', '--host', 'a3high-vm-2').stdout))
    stored = {item['name']: item for item in sandbox.resources('compute.instances')}['a3high-vm-2']
    nics = stored['networkInterfaces']
    assert host['gpudirect_data_ips'] == [nic['networkIP'] for nic in nics[1:]] == vms['a3high-vm-2']['data_ips']
    assert host['gpudirect_data_interfaces'] == ['eth1', 'eth2', 'eth3', 'eth4']
    assert host['gpudirect_data_networks'] == ['a3high-data-net-%d' % n for n in range(1, 5)]
    assert host['gpudirect_management_ip'] == nics[0]['networkIP']
    assert host['ansible_host'] == host['gpudirect_external_ip'] == nics[0]['accessConfigs'][0]['natIP']
    assert host['gpudirect_technology'] == 'tcpx' and host['gpudirect_machine_type'] == 'a3-highgpu-8g'
    assert host['gpudirect_nccl_interfaces'] == 'eth1,eth2,eth3,eth4'
    assert (host['gpudirect_gpu_count'], host['gpudirect_gpu_model']) == (8, 'NVIDIA H100')
    assert (host['gpudirect_zone'], host['gpudirect_region'], host['gpudirect_project']) == ('us-central1-a', 'us-central1', PROJECT)
    assert host['gpudirect_status'] == 'RUNNING' and host['gpudirect_provisioning_model'] == 'STANDARD'


def test_projects_are_listed_concurrently_with_one_masked_paged_call_each(fleet, tmp_path):
    sandbox, _vms = fleet
    before = len(sandbox.request_log())
    data = listing(sandbox, tmp_path, 'projects: [%s, %s]\n' % (PROJECT, OTHER))
    calls = aggregated_calls(sandbox, before)
    assert sorted(call['path'].split('/')[4] for call in calls) == sorted([PROJECT, OTHER])
    for call in calls:
        assert 'maxResults=500' in call['path'] and 'fields=' in call['path'] and 'filter=status' in call['path']
    hosts = set(data['_meta']['hostvars'])
    assert hosts == {'a3high-vm-1', 'a3high-vm-2', 'a3mega-vm-1', 'ops-1', 'ops-2'}
    assert sorted(data['gpudirect_none']['hosts']) == ['ops-1', 'ops-2']
    assert data['gpudirect_project_inv_other']['hosts'] == ['ops-1', 'ops-2']


def test_zones_regions_and_labels_select_on_the_controller(fleet, tmp_path):
    sandbox, _vms = fleet
    config = 'projects: [%s, %s]\n' % (PROJECT, OTHER)
    assert set(listing(sandbox, tmp_path, config + 'zones: [us-east5-a]\n')['_meta']['hostvars']) == {'a3mega-vm-1'}
    assert set(listing(sandbox, tmp_path, config + 'regions: [us-central1]\nzones: [us-east1-c]\n')['_meta']['hostvars']) == \
        {'a3high-vm-1', 'a3high-vm-2', 'ops-2'}
    assert set(listing(sandbox, tmp_path, config + 'labels: {role: "*"}\n')['_meta']['hostvars']) == {'ops-1'}


def test_api_filters_are_sent_and_honoured(fleet, tmp_path):
    sandbox, _vms = fleet
    before = len(sandbox.request_log())
    data = listing(sandbox, tmp_path, 'filters: ["name = a3high-vm-2"]\n')
    assert set(data['_meta']['hostvars']) == {'a3high-vm-2'}
    assert 'a3high-vm-2' in aggregated_calls(sandbox, before)[0]['path']


def test_hostnames_fall_back_to_the_name_when_a_label_is_missing(fleet, tmp_path):
    sandbox, _vms = fleet
    data = listing(sandbox, tmp_path, 'projects: [%s]\nhostnames: [labels.role, name]\n' % OTHER)
    assert set(data['_meta']['hostvars']) == {'bastion', 'ops-2'}
    data = listing(sandbox, tmp_path, 'projects: [%s]\nhostnames: [fqdn]\n' % OTHER)
    assert 'ops-1.us-east1-b.c.%s.internal' % OTHER in data['_meta']['hostvars']


def test_constructed_options_and_address_kinds(fleet, tmp_path):
    sandbox, _vms = fleet
    config = ('ansible_host: iap\nvars_prefix: gd_\ngroup_prefix: gpu_\nstrict: false\n'
              'compose:\n  nccl_peers: gd_data_ips | join(",")\n  first_nic_type: instance.networkInterfaces[0].nicType\n'
              'groups:\n  big_fabric: gd_data_ips | length >= 8\n'
              'keyed_groups:\n  - key: gd_labels.team | default("nobody")\n    prefix: team\n')
    data = listing(sandbox, tmp_path, config)
    mega = unsafe(data['_meta']['hostvars']['a3mega-vm-1'])
    assert mega['ansible_host'] == 'a3mega-vm-1'
    assert 'gcloud compute start-iap-tunnel a3mega-vm-1 22 --listen-on-stdin --project=%s --zone=us-east5-a' % PROJECT \
        in mega['ansible_ssh_common_args']
    assert mega['nccl_peers'] == ','.join(mega['gd_data_ips']) and len(mega['gd_data_ips']) == 8
    assert mega['first_nic_type'] == 'GVNIC'
    assert data['big_fabric']['hosts'] == ['a3mega-vm-1']
    assert sorted(data['team_nobody']['hosts']) == ['a3high-vm-1', 'a3high-vm-2', 'a3mega-vm-1']
    assert 'gpu_tcpxo' in data and 'gpudirect_tcpxo' not in data
    internal = unsafe(listing(sandbox, tmp_path, 'ansible_host: internal\n')['_meta']['hostvars']['a3mega-vm-1'])
    assert internal['ansible_host'] == internal['gpudirect_management_ip']


def test_only_running_vms_by_default(sandbox, tmp_path):
    make_vms(sandbox, PROJECT, 'a3-highgpu-8g', 'a3high', 'us-central1-a', 2)
    from sandbox.client import SandboxClient
    SandboxClient(sandbox.url).must('POST', 'compute/v1/projects/%s/zones/us-central1-a/instances/a3high-vm-1/stop' % PROJECT)
    assert set(listing(sandbox, tmp_path)['_meta']['hostvars']) == {'a3high-vm-2'}
    every = listing(sandbox, tmp_path, 'status: []\n')['_meta']['hostvars']
    assert unsafe(every['a3high-vm-1']['gpudirect_status']) == 'TERMINATED'


def test_paging_uses_the_fewest_requests(sandbox, tmp_path):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', 'bench'))
    from _sandbox_seed import seed_fleet
    from sandbox.store import COMPUTE_LINK
    counts = seed_fleet(sandbox, [PROJECT, OTHER], 2300)
    running = {project: sum(1 for item in sandbox.resources('compute.instances', project) if item['status'] == 'RUNNING')
               for project in counts}
    before = len(sandbox.request_log())
    data = listing(sandbox, tmp_path, 'projects: [%s, %s]\nhostnames: [fqdn]\n' % (PROJECT, OTHER))
    assert len(data['_meta']['hostvars']) == sum(running.values())
    pages = sum(-(-count // 500) for count in running.values())   # ceil(RUNNING VMs / 500) per project
    assert len(aggregated_calls(sandbox, before)) == pages == 6
    # every zone of the catalog has VMs, and sorting by id gives one stable order
    assert len([name for name in data if name.startswith('gpudirect_zone_')]) == len(catalog.ZONES) == 127
    again = listing(sandbox, tmp_path, 'projects: [%s, %s]\nhostnames: [fqdn]\n' % (OTHER, PROJECT))
    assert data[TCPX_GROUP]['hosts'] == again[TCPX_GROUP]['hosts']
    # Each host's variables as Ansible resolves them (its own, then those of its groups and their parents)
    # are exactly the facts of its instance, though most are held once by a group.
    for vm in sandbox.resources('compute.instances'):
        if vm['status'] != 'RUNNING':
            continue
        # the sandbox stores Google's links and serves its own address in them
        facts = gce.instance_facts(json.loads(json.dumps(vm).replace(COMPUTE_LINK, sandbox.compute_url)))
        hostvars = unsafe(data['_meta']['hostvars'][gce.fqdn(facts)])
        assert {name: hostvars.get('gpudirect_' + name, 'MISSING') for name in facts} == facts, vm['name']


def test_the_cache_keeps_raw_pages_and_answers_without_requests(sandbox, tmp_path):
    make_vms(sandbox, PROJECT, 'a3-highgpu-8g', 'a3high', 'us-central1-a', 2)
    cache = 'cache: true\ncache_plugin: ansible.builtin.jsonfile\ncache_connection: %s\n' % (tmp_path / 'cache')
    first = listing(sandbox, tmp_path, cache)
    before = len(sandbox.request_log())
    # compose and groups are built on every run from the cached pages
    second = listing(sandbox, tmp_path, cache + 'groups:\n  two: true\n')
    assert len(sandbox.request_log()) == before, 'a cached run makes no request'
    assert second['_meta'] == first['_meta'] and sorted(second['two']['hosts']) == ['a3high-vm-1', 'a3high-vm-2']
    stored = json.loads(next((tmp_path / 'cache').iterdir()).read_text())
    stored = json.loads(stored['__payload__']) if '__payload__' in stored else stored   # ansible-core 2.19 wraps it
    # the raw pages (after the field mask), packed into one string
    pages = json.loads(zlib.decompress(base64.b64decode(stored['pages'])))
    assert list(pages) == [PROJECT] and len(pages[PROJECT]) == 1 and 'nextPageToken' not in pages[PROJECT][0]
    vms = [vm for scope in pages[PROJECT][0]['items'].values() for vm in scope.get('instances', [])]
    assert sorted(vm['name'] for vm in vms) == ['a3high-vm-1', 'a3high-vm-2'] and 'disks' not in vms[0]
    assert stored['query']['projects'] == [PROJECT]
    listing(sandbox, tmp_path, cache + 'filters: ["name = a3high-*"]\n')
    assert len(aggregated_calls(sandbox, before)) == 1, 'another query is a cache miss'


def test_retryable_errors_are_retried(sandbox, tmp_path):
    make_vms(sandbox, PROJECT, 'a3-highgpu-8g', 'a3high', 'us-central1-a', 1)
    sandbox.inject_fault('compute.instances.aggregatedList', 'http_503', count=1)
    sandbox.inject_fault('compute.instances.aggregatedList', 'reset', count=1)
    before = len(sandbox.request_log())
    assert set(listing(sandbox, tmp_path, 'retry_deadline: 60\n')['_meta']['hostvars']) == {'a3high-vm-1'}
    assert [call['fault'] for call in aggregated_calls(sandbox, before)] == ['http_503', 'reset', None]


def test_a_project_that_403s_stops_the_inventory_naming_it(sandbox, tmp_path):
    make_vms(sandbox, PROJECT, 'a3-highgpu-8g', 'a3high', 'us-central1-a', 1)
    sandbox.inject_fault('compute.instances.aggregatedList', 'http_403', rate=1.0, project=OTHER)
    config = 'projects: [%s, %s]\n' % (PROJECT, OTHER)
    result = inventory(sandbox, tmp_path, config, '--list', check=False)
    assert result.returncode != 0
    message = ' '.join(result.stderr.split())
    assert "project '%s': Failed to list the instances of project '%s' (HTTP 403, forbidden): Required " \
           "'compute.instances.list' permission for 'projects/%s'" % (OTHER, OTHER, OTHER) in message
    assert 'strict_permissions: false' in message and "project '%s'" % PROJECT not in message
    # Ansible's own default only warns about a source that failed: the message is still there
    lenient = inventory(sandbox, tmp_path, config, '--list', fail_on_unparsed=False)
    assert 'HTTP 403' in lenient.stderr
    # strict_permissions: false leaves the project out, with a warning naming it
    kept = inventory(sandbox, tmp_path, config + 'strict_permissions: false\n', '--list')
    assert set(json.loads(kept.stdout)['_meta']['hostvars']) == {'a3high-vm-1'}
    assert 'project %s is left out' % OTHER in ' '.join(kept.stderr.split())


def test_a_zone_that_is_down_stops_the_inventory_naming_it(sandbox, tmp_path):
    make_vms(sandbox, PROJECT, 'a3-highgpu-8g', 'a3high', 'us-central1-a', 1)
    make_vms(sandbox, PROJECT, 'a3-megagpu-8g', 'a3mega', 'us-east5-a', 1)
    sandbox.inject_fault('compute.instances.aggregatedList', 'unreachable', rate=1.0, zone='us-east5-a')
    result = inventory(sandbox, tmp_path, '', '--list', check=False)
    assert result.returncode != 0
    message = ' '.join(result.stderr.split())
    assert "project '%s': the API could not reach us-east5-a" % PROJECT in message and 'allow_unreachable_zones' in message
    # a selection without that zone is complete, so it is not an error
    assert set(listing(sandbox, tmp_path, 'zones: [us-central1-a]\n')['_meta']['hostvars']) == {'a3high-vm-1'}
    lenient = inventory(sandbox, tmp_path, 'allow_unreachable_zones: true\n', '--list')
    assert set(json.loads(lenient.stdout)['_meta']['hostvars']) == {'a3high-vm-1'}
    assert 'us-east5-a unreachable' in ' '.join(lenient.stderr.split())


@pytest.mark.parametrize('config, expected', [
    ('status: [RUNING]\n', "status: 'RUNING' is not an instance status; use any of"),
    ('hostnames: [public_ip]\n', "hostnames: 'public_ip' is not a hostname source; use name, fqdn, id, internal_ip, external_ip"),
    ('zones: [us-central1]\n', "zones: 'us-central1' is not a zone name (a region: put it under regions)"),
    ('regions: [us-central1-a]\n', "regions: 'us-central1-a' is not a region name (a zone: put it under zones)"),
    ('projects: [a, a]\n', 'projects: a is listed twice'),
    ('extra_fields: ["metadata("]\n', "extra_fields: 'metadata(' is not an Instance field path"),
    ('labels: {team: {a: b}}\n', "labels: the value of 'team' must be a string"),
    ('auth_kind: magic\n', 'auth_kind'),
    ('ansible_host: public\n', 'ansible_host'),
    ('projectz: [x]\n', 'projectz'),
    ('vars_prefix: gpu-\n', "vars_prefix: 'gpu-' cannot start a variable name; use letters, digits and _"),
])
def test_bad_configuration_fails_naming_the_option(sandbox, tmp_path, config, expected):
    result = inventory(sandbox, tmp_path, config, '--list', check=False)
    assert result.returncode != 0
    assert expected in ' '.join(result.stderr.split())


def test_no_project_at_all_says_how_to_give_one(sandbox, tmp_path):
    source = tmp_path / 'none.gce.yml'
    source.write_text('plugin: aiinfra.gpudirect.gce\n')
    env = {key: value for key, value in sandbox_environment(sandbox, PROJECT).items() if key != 'GCP_PROJECT'}
    env['ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED'] = 'True'
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-inventory'), '-i', str(source), '--list'],
                            env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode != 0
    assert 'projects: no project to list; set projects (a list of project IDs) or GCP_PROJECT' in ' '.join(result.stderr.split())


def test_a_token_refresh_failure_is_one_authentication_error(sandbox, tmp_path):
    """A service account whose token_uri answers with an error (the sandbox's 404): the inventory fails with
    'Failed to authenticate: ...' for the project, not google-auth's raw (message, response) tuple, and no key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    account = {'type': 'service_account', 'project_id': PROJECT, 'private_key_id': 'k1', 'private_key': key,
               'client_email': 'runner@%s.iam.gserviceaccount.com' % PROJECT, 'client_id': '1',
               'token_uri': sandbox.url + '/no-such-token-endpoint'}
    key_file = tmp_path / 'account.json'
    key_file.write_text(json.dumps(account))
    config = 'auth_kind: serviceaccount\nservice_account_file: %s\nretry_deadline: 5\n' % key_file
    result = inventory(sandbox, tmp_path, config, '--list', check=False)
    assert result.returncode != 0
    message = ' '.join(result.stderr.split())
    assert "project '%s': Failed to authenticate: " % PROJECT in message, message[-2000:]
    assert "{'error'" not in message and '<Response' not in message
    assert 'BEGIN PRIVATE KEY' not in result.stderr + result.stdout
    assert [e for e in sandbox.request_log() if e['path'].startswith('/compute/')] == []


def test_secrets_never_reach_the_output(sandbox, tmp_path):
    secret = 'ya29.not-a-real-token-but-secret'
    result = inventory(sandbox, tmp_path, 'auth_kind: accesstoken\naccess_token: %s\n' % secret, '--list', check=False)
    sandbox.inject_fault('compute.instances.aggregatedList', 'http_403', rate=1.0)
    failed = inventory(sandbox, tmp_path, 'auth_kind: accesstoken\naccess_token: %s\n' % secret, '--list', '-vvv', check=False)
    assert failed.returncode != 0
    for run in (result, failed):
        assert secret not in run.stdout and secret not in run.stderr


def test_a_host_that_differs_from_its_group_keeps_its_own_facts(sandbox, tmp_path):
    """Shared facts are group variables; a VM whose NICs differ from its fabric's gets host variables that win."""
    make_vms(sandbox, PROJECT, 'a3-highgpu-8g', 'a3high', 'us-central1-a', 2)
    with sandbox.store.lock:
        for key, vm in sandbox.store.items('compute.instances'):
            if vm['name'] == 'a3high-vm-2':
                nic = vm['networkInterfaces'][2]
                nic['subnetwork'] = nic['subnetwork'].replace('a3high-data-sub-2', 'a3high-data-sub-2b')
                nic['nicType'] = 'VIRTIO_NET'
    layout = ['a3high-data-sub-%d' % n for n in range(1, 5)]
    mine = {'a3high-vm-1': layout, 'a3high-vm-2': ['a3high-data-sub-1', 'a3high-data-sub-2b', 'a3high-data-sub-3', 'a3high-data-sub-4']}
    exported = json.loads(inventory(sandbox, tmp_path, '', '--list', '--export').stdout)
    group = unsafe(exported['gpudirect_network_a3high']['vars'])['gpudirect_data_subnetworks']
    own = {name: unsafe(exported['_meta']['hostvars'][name]).get('gpudirect_data_subnetworks') for name in mine}
    # the group holds the layout of the VM with the lower id; the other VM has its own, as a host variable
    holder = next(name for name in mine if mine[name] == group)
    other = next(name for name in mine if name != holder)
    assert own[holder] is None and own[other] == mine[other]
    hosts = {name: unsafe(json.loads(inventory(sandbox, tmp_path, '', '--host', name).stdout)) for name in mine}
    assert hosts['a3high-vm-2']['gpudirect_data_subnetworks'] == mine['a3high-vm-2']
    assert hosts['a3high-vm-2']['gpudirect_data_nic_types'] == ['GVNIC', 'VIRTIO_NET', 'GVNIC', 'GVNIC']
    assert hosts['a3high-vm-1']['gpudirect_data_subnetworks'] == layout


def test_facts_are_data_never_templates(sandbox, tmp_path):
    """The facts go to Ansible's inventory without its inspection; they must still be untrusted, so that a
    value from the API that looks like a template is never rendered (the API forbids braces in labels; the
    sandbox's store does not, which lets this test plant one)."""
    make_vms(sandbox, PROJECT, 'a3-highgpu-8g', 'a3high', 'us-central1-a', 1)
    with sandbox.store.lock:
        for _key, vm in sandbox.store.items('compute.instances'):
            vm['labels'] = {'team': "{{ 6 * 7 }}{{ lookup('env', 'HOME') }}"}
    (tmp_path / 'test.gce.yml').write_text('plugin: aiinfra.gpudirect.gce\n')
    playbook = tmp_path / 'show.yml'
    playbook.write_text('- hosts: all\n  gather_facts: false\n  tasks:\n'
                        '    - ansible.builtin.debug:\n        msg: "team=[{{ gpudirect_labels.team }}]"\n')
    env = dict(sandbox_environment(sandbox, PROJECT), ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED='True')
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(tmp_path / 'test.gce.yml'),
                             str(playbook)], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "team=[{{ 6 * 7 }}{{ lookup('env', 'HOME') }}]" in result.stdout
    assert 'team=[42' not in result.stdout


def test_two_sources_with_one_fabric_name_keep_each_hosts_facts(sandbox, tmp_path):
    """Two sources of this plugin share group names (the fabric 'gpu' is A3 High in one project and A3 Mega in
    the other): the second source must not change the group variables the first one's hosts rely on."""
    make_vms(sandbox, PROJECT, 'a3-highgpu-8g', 'gpu', 'us-central1-a', 1)
    make_vms(sandbox, OTHER, 'a3-megagpu-8g', 'gpu', 'us-east5-a', 1)
    first, second, again = tmp_path / 'first.gce.yml', tmp_path / 'second.gce.yml', tmp_path / 'again.gce.yml'
    first.write_text('plugin: aiinfra.gpudirect.gce\nprojects: [%s]\nhostnames: [fqdn]\n' % PROJECT)
    second.write_text('plugin: aiinfra.gpudirect.gce\nprojects: [%s]\nhostnames: [fqdn]\n' % OTHER)
    # a third source lists the first one's VM again: its host exists already, and keeps the same facts
    again.write_text(first.read_text())
    env = dict(sandbox_environment(sandbox, PROJECT), ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED='True')
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-inventory'), '-i', str(first), '-i', str(second),
                             '-i', str(again), '--list'], env=env, capture_output=True, text=True, timeout=300, check=True)
    hostvars = unsafe(json.loads(result.stdout)['_meta']['hostvars'])
    high = hostvars['gpu-vm-1.us-central1-a.c.%s.internal' % PROJECT]
    mega = hostvars['gpu-vm-1.us-east5-a.c.%s.internal' % OTHER]
    assert high['gpudirect_data_networks'] == ['gpu-data-net-%d' % n for n in range(1, 5)]
    assert mega['gpudirect_data_networks'] == ['gpu-data-net-%d' % n for n in range(1, 9)]
    assert (high['gpudirect_technology'], mega['gpudirect_technology']) == ('tcpx', 'tcpxo')
    assert high['gpudirect_labels'] == {'aiinfra-gpudirect': 'managed', 'aiinfra-gpudirect-group': 'gpu'} and high['gpudirect_data_ips'] == [
        nic['networkIP'] for nic in sandbox.resources('compute.instances', PROJECT)[0]['networkInterfaces'][1:]]


BUILD_CHILD = r'''
import json, sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader()
from ansible_collections.aiinfra.gpudirect.plugins.inventory import gce
used = {'fast_data': False, 'public_host_vars': 0}
inventory_data, host_vars_dict = gce.inventory_data, gce.host_vars_dict
if sys.argv[2] == 'public':
    # As if a release dropped the internals: no __wrapped__ data, no Host.vars dict.
    gce.inventory_data = lambda inventory: inventory
    def no_host_vars(host):
        used['public_host_vars'] += 1
        return None
    gce.host_vars_dict = no_host_vars
else:
    def record(inventory):
        data = inventory_data(inventory)
        used['fast_data'] = used['fast_data'] or data is not inventory
        return data
    gce.inventory_data = record
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
inventory = InventoryManager(loader=DataLoader(), sources=[sys.argv[1]])
skip = ('inventory_dir', 'inventory_file')
print(json.dumps({
    'used': used,
    'hosts': {h.name: {k: v for k, v in h.get_vars().items() if k not in skip} for h in inventory.get_hosts()},
    'groups': {g.name: [sorted(h.name for h in g.get_hosts()), sorted(c.name for c in g.child_groups),
                        {k: v for k, v in g.get_vars().items() if k not in skip}] for g in inventory.groups.values()},
}, default=str, sort_keys=True))
'''


def test_the_public_inventory_api_builds_the_same_inventory_as_the_fast_path(fleet, tmp_path):
    """The plugin writes past ansible-core 2.19's inventory wrapper (__wrapped__) and into Host.vars for speed;
    without those internals it must fall back to the public API and build the very same inventory."""
    sandbox, _vms = fleet
    source = tmp_path / 'fallback.gce.yml'
    source.write_text('plugin: aiinfra.gpudirect.gce\nprojects: [%s, %s]\ncompose:\n  gd_nics: gpudirect_data_ips | length\n'
                      % (PROJECT, OTHER))
    env = dict(sandbox_environment(sandbox, PROJECT), ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED='True')

    def build(mode):
        result = subprocess.run([sys.executable, '-c', BUILD_CHILD, str(source), mode], env=env, capture_output=True,
                                text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout)

    fast, public = build('fast'), build('public')
    assert public['used']['public_host_vars'] == len(public['hosts']) == 5   # every host took the public path
    has_wrapper = hasattr(__import__('ansible.inventory.manager', fromlist=['x']), '_InventoryDataWrapper')
    assert fast['used']['fast_data'] is has_wrapper   # 2.19 has the wrapper the fast path goes around
    assert public['hosts'] == fast['hosts'] and public['groups'] == fast['groups']
    assert len(public['hosts']['a3high-vm-1']['gpudirect_data_ips']) == 4
    assert str(public['hosts']['a3high-vm-1']['gd_nics']) == '4'  # a string before ansible-core 2.19's native types
    assert public['groups']['gpudirect_network_a3high'][2]['gpudirect_network_prefix'] == 'a3high'
