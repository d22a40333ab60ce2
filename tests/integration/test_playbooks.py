"""The family playbooks and teardown.yml with the real ansible-playbook against the sandbox."""

import json
import os
import re
import subprocess
import sys

import yaml

from playbook_runner import ansible_playbook, collection_root, sandbox_environment

MUTATING = ('POST', 'PATCH', 'PUT', 'DELETE')


def mutating(sandbox):
    return [e for e in sandbox.request_log() if e['method'] in MUTATING and not e['path'].split('?')[0].endswith('/wait')]


def ansible_inventory(sandbox, source, *args):
    """ansible-inventory over inventories/sandbox/SOURCE, as a newcomer would run it after the main job."""
    command = [os.path.join(os.path.dirname(sys.executable), 'ansible-inventory'),
               '-i', str(collection_root() / 'inventories' / 'sandbox' / source), *args]
    env = dict(sandbox_environment(sandbox, 'sandbox-project'), ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED='True')
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def instance_ids(sandbox):
    return {vm['name']: int(vm['id']) for vm in sandbox.resources('compute.instances')}


def plain(value):
    """ansible-inventory writes strings from an inventory plugin as {'__ansible_unsafe': text}."""
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value['__ansible_unsafe'] if isinstance(value, dict) and set(value) == {'__ansible_unsafe'} else value


def test_check_mode_run_calls_nothing_mutating(sandbox):
    result = ansible_playbook(sandbox, 'a3high.yml', {}, args=['--check'])
    assert result.returncode == 0, result.stdout[-3000:]
    assert mutating(sandbox) == []
    assert re.search(r'localhost\s+:.*changed=[1-9]', result.stdout), 'check mode reports what would change'


def test_main_job_output_then_teardown_twice(sandbox):
    made = ansible_playbook(sandbox, 'a3high.yml', {})
    assert made.returncode == 0, made.stdout[-3000:]
    assert 'a3-highgpu-8g cluster a3high: 5 networks (1 management + 4 data), 2 of 2 VMs RUNNING' in made.stdout
    # A stage that tags left out is said to be left out (it was "1 management + -1 data").
    only_vms = ansible_playbook(sandbox, 'a3high.yml', {}, args=['--tags', 'instances'])
    assert only_vms.returncode == 0, only_vms.stdout[-3000:]
    assert 'a3-highgpu-8g cluster a3high: networks not run (tags), 2 of 2 VMs RUNNING' in only_vms.stdout, only_vms.stdout[-2000:]
    assert made.stdout.count('5 NICs (GVNIC)') == 2
    assert 'management network a3high-mgmt-net: subnet a3high-mgmt-sub 192.168.0.0/24, MTU 8244' in made.stdout
    # inventories/sandbox sets gpudirect_api_only for all its hosts: the host and NCCL plays take no VM at all (ending
    # each VM in turn is Ansible's work per host for nothing)
    assert 'gpudirect_api_only is true in this inventory: the VMs are API records with no machine behind them, ' \
        'so the host and NCCL stages skip them' in made.stdout
    host_stages = made.stdout[made.stdout.index('PLAY [Prepare the hosts]'):]
    assert re.findall(r'TASK \[([^\]]*)\]', host_stages) == []
    assert host_stages.count('skipping: no hosts matched') == 2, host_stages[:2000]

    # the inventory of the sandbox shows the VMs the main job made, with their data NIC addresses
    graph = ansible_inventory(sandbox, 'gce.yml', '--graph', 'gpudirect_tcpx').stdout
    assert [line.strip(' |-') for line in graph.splitlines()] == \
        ['@gpudirect_tcpx:', '@gpudirect_a3_highgpu_8g:'] + sorted(['a3high-vm-1', 'a3high-vm-2'], key=instance_ids(sandbox).get)
    host = json.loads(ansible_inventory(sandbox, 'gce.yml', '--host', 'a3high-vm-1').stdout)
    nics = {vm['name']: vm['networkInterfaces'] for vm in sandbox.resources('compute.instances')}['a3high-vm-1']
    assert plain(host['gpudirect_data_ips']) == [nic['networkIP'] for nic in nics[1:]] and len(nics) == 5
    assert plain(host['gpudirect_data_interfaces']) == ['eth1', 'eth2', 'eth3', 'eth4']

    gone = ansible_playbook(sandbox, 'teardown.yml', {'gpudirect_machine_type': 'a3-highgpu-8g'})
    assert gone.returncode == 0, gone.stdout[-3000:]
    for collection in ('compute.instances', 'compute.firewalls', 'compute.subnetworks', 'compute.networks'):
        assert sandbox.resources(collection) == [], collection
    # the summary says what each stage deleted, and on a rerun that nothing was left
    assert re.search(r'"teardown of a3high: VMs: [^"]*a3high-vm-1[^"]*a3high-vm-2[^"]*; network: [^"]*a3high-mgmt-net[^"]*"', gone.stdout), \
        gone.stdout[-3000:]
    count = len(mutating(sandbox))
    again = ansible_playbook(sandbox, 'teardown.yml', {'gpudirect_machine_type': 'a3-highgpu-8g'})
    assert again.returncode == 0, again.stdout[-3000:]
    assert len(mutating(sandbox)) == count, 'a second teardown changes nothing'
    assert '"teardown of a3high: VMs: none left to delete; network: nothing left to delete"' in again.stdout, again.stdout[-3000:]


def test_teardown_finds_the_runs_vms_by_label_and_refuses_while_other_vms_use_the_fabric(sandbox, api):
    """A run of 5 VMs torn down without the count: its VMs go (found by their group label, not by the default count of 2).
    A VM someone else put on the fabric (here: one whose labels were replaced, as on a VM made another way) stays, and
    the networks stay while it uses them."""
    made = ansible_playbook(sandbox, 'a3high.yml', {'gpudirect_node_count': 5})
    assert made.returncode == 0, made.stdout[-3000:]
    theirs = next(vm for vm in sandbox.resources('compute.instances') if vm['name'] == 'a3high-vm-5')
    api.must('POST', 'compute/v1/projects/sandbox-project/zones/us-central1-a/instances/a3high-vm-5/setLabels',
             {'labels': {'team': 'theirs'}, 'labelFingerprint': theirs.get('labelFingerprint')})
    refused = ansible_playbook(sandbox, 'teardown.yml', {'gpudirect_machine_type': 'a3-highgpu-8g'})
    assert refused.returncode != 0
    assert sorted(vm['name'] for vm in sandbox.resources('compute.instances')) == ['a3high-vm-5'], refused.stdout[-3000:]
    assert 'still used by instances a3high-vm-5 (us-central1-a)' in refused.stdout
    assert len(sandbox.resources('compute.networks')) == 5


def test_only_gpudirect_api_only_makes_the_host_stages_skip():
    """No rule guesses that a VM is a sandbox VM (an API on loopback may be a real user's proxy): the host and
    NCCL plays take every VM of the cluster and network groups and end early only for gpudirect_api_only: none when the
    inventory sets it for all its hosts (localhost's value), else each VM that has it in their first task."""
    plays = yaml.safe_load((collection_root() / 'playbooks' / 'gce_cluster.yml').read_text(encoding='utf-8'))
    host_plays = [play for play in plays if play['hosts'] != 'localhost']
    assert [play['name'] for play in host_plays] == ['Prepare the hosts', 'Prove the GPUDirect network with an NCCL all_gather between the VMs']
    assert plays[0]['vars']['__gpudirect_vm_hosts'].split() == \
        ["{{", "[]", "if", "hostvars['localhost']['gpudirect_api_only']", "|", "default(false)", "|", "bool", "else",
         "'gpudirect_cluster:gpudirect_network_'", "~", "(__gpudirect_network_prefix", "|", "regex_replace('[^A-Za-z0-9_]',", "'_'))", "}}"]
    for play in host_plays:
        assert play['hosts'] == '{{ __gpudirect_vm_hosts }}'
        assert play['pre_tasks'] == [{'name': 'Skip VMs that are API records only (gpudirect_api_only, set by inventories/sandbox)',
                                      'when': 'gpudirect_api_only | default(false) | bool',
                                      'ansible.builtin.meta': 'end_host', 'tags': ['always']}]
    sandbox_vars = yaml.safe_load((collection_root() / 'inventories' / 'sandbox' / 'group_vars' / 'all.yml').read_text(encoding='utf-8'))
    assert sandbox_vars['gpudirect_api_only'] is True
    assert 'gpudirect_api_only' not in (collection_root() / 'inventories' / 'example' / 'group_vars' / 'all.yml').read_text(encoding='utf-8') \
        or yaml.safe_load((collection_root() / 'inventories' / 'example' / 'group_vars' / 'all.yml').read_text(encoding='utf-8'))['gpudirect_api_only'] is False
    for path in ('roles', 'playbooks', 'inventories', 'plugins'):
        for file in (collection_root() / path).rglob('*'):
            if file.is_file() and '__pycache__' not in file.parts:
                assert 'sandbox_vms' not in file.read_text(encoding='utf-8', errors='replace'), file
