"""The google.cloud contender of bench/provision.py: the same fabric and VMs with google.cloud's modules.

google.cloud (from the `ansible` package on PyPI) always calls https://compute.googleapis.com, so it
runs through the sandbox's HTTPS CONNECT-proxy mode (tests/sandbox/proxy.py), which serves that host
from the sandbox and refuses every other. The playbook is what a user of that collection writes:
a loop per resource kind, GVNIC NICs, standard VMs (its modules have no Spot, flex-start or
reservation-bound model).
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import zipfile

from sandbox.proxy import ConnectProxy
import _process

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get('GPUDIRECT_BUILD', str(ROOT / 'build')))
# The `ansible` wheel scripts/test keeps for kubernetes.core and containers.podman.
WHEELS = BUILD / 'deps' / 'wheel'
REGION, ZONE, PREFIX, FAMILY, DATA_NETWORKS = 'us-central1', 'us-central1-a', 'bench', 'a3-megagpu-8g', 8


def google_cloud_collection(target, wheels=WHEELS):
    """Put google.cloud from the `ansible` 12 wheel (downloaded into ``wheels`` when missing) under the
    collections directory ``target``; returns (wheel file name, google.cloud version)."""
    found = sorted(wheels.glob('ansible-12*.whl'))
    if not found:
        wheels.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, '-m', 'pip', 'download', '-q', '--no-deps', '-d', str(wheels), 'ansible>=12,<13'], check=True)
        found = sorted(wheels.glob('ansible-12*.whl'))
    manifest = target / 'ansible_collections' / 'google' / 'cloud' / 'MANIFEST.json'
    if not manifest.is_file():
        with zipfile.ZipFile(found[-1]) as wheel:
            for name in wheel.namelist():
                if name.startswith('ansible_collections/google/cloud/'):
                    wheel.extract(name, target)
    return found[-1].name, json.loads(manifest.read_text())['collection_info']['version']


def playbook(project, nodes, ranges=None):
    """The google.cloud playbook; ``ranges``: the subnets' ranges, management first (the manual's 192.168.N.0/24 when None)."""
    networks = [PREFIX + '-mgmt-net'] + ['%s-data-net-%d' % (PREFIX, n) for n in range(1, DATA_NETWORKS + 1)]
    ranges = ranges or ['192.168.%d.0/24' % index for index in range(len(networks))]
    subnets = [{'name': net.replace('-net', '-sub'), 'index': index, 'cidr': ranges[index]} for index, net in enumerate(networks)]
    internal = [{'ip_protocol': 'tcp', 'ports': ['0-65535']}, {'ip_protocol': 'udp', 'ports': ['0-65535']}, {'ip_protocol': 'icmp'}]
    rules = [{'name': PREFIX + '-mgmt-internal', 'index': 0, 'allowed': internal, 'sources': ['192.168.0.0/16']},
             {'name': PREFIX + '-mgmt-external-ssh', 'index': 0, 'allowed': [{'ip_protocol': 'tcp', 'ports': ['22']}],
              'sources': ['203.0.113.0/24']},
             {'name': PREFIX + '-mgmt-external-ping', 'index': 0, 'allowed': [{'ip_protocol': 'icmp'}], 'sources': ['0.0.0.0/0']}]
    rules += [{'name': '%s-data-internal-%d' % (PREFIX, n), 'index': n, 'allowed': rules[0]['allowed'], 'sources': ['192.168.0.0/16']}
              for n in range(1, DATA_NETWORKS + 1)]
    auth = {'project': project, 'auth_kind': 'accesstoken', 'access_token': 'bench-token'}
    nic = ('{{ nics | default([]) + [{"network": nets.results[i], "subnetwork": subs.results[i], "nic_type": "GVNIC", '
           '"access_configs": ([{"name": "External NAT", "type": "ONE_TO_ONE_NAT"}] if i == 0 else [])}] }}')
    return [{
        'name': 'google.cloud run', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
        'tasks': [
            {'name': 'networks', 'google.cloud.gcp_compute_network': dict(auth, name='{{ item }}', auto_create_subnetworks=False, mtu=8244),
             'loop': networks, 'register': 'nets'},
            {'name': 'subnetworks', 'google.cloud.gcp_compute_subnetwork': dict(
                auth, name='{{ item.name }}', region=REGION, ip_cidr_range='{{ item.cidr }}', network='{{ nets.results[item.index] }}'),
             'loop': subnets, 'register': 'subs'},
            {'name': 'firewall rules', 'google.cloud.gcp_compute_firewall': dict(
                auth, name='{{ item.name }}', network={'selfLink': 'global/networks/{{ nets.results[item.index].name }}'}, allowed='{{ item.allowed }}',
                source_ranges='{{ item.sources }}'), 'loop': rules},
            {'name': 'NIC list, management first', 'ansible.builtin.set_fact': {'nics': nic},
             'loop': list(range(DATA_NETWORKS + 1)), 'loop_control': {'loop_var': 'i'}},
            {'name': 'VMs', 'google.cloud.gcp_compute_instance': dict(
                auth, name='{{ item }}', zone=ZONE, machine_type=FAMILY,
                disks=[{'auto_delete': True, 'boot': True, 'initialize_params': {
                    'source_image': 'projects/cos-cloud/global/images/family/cos-121-lts', 'disk_size_gb': 200}}],
                metadata={'cos-update-strategy': 'update_disabled'},
                scheduling={'on_host_maintenance': 'TERMINATE', 'automatic_restart': True},
                service_accounts=[{'email': 'default', 'scopes': ['https://www.googleapis.com/auth/cloud-platform']}],
                network_interfaces='{{ nics }}'),
             'loop': ['%s-vm-%d' % (PREFIX, index) for index in range(1, nodes + 1)]},
        ],
    }]


def run(sandbox, project, nodes, _collections_path, usage=None, ranges=None):
    """The google.cloud playbook in ``project``; its processes' cost added to ``usage`` (a _process.Usage) when given."""
    collections_path = BUILD / 'bench' / 'collections'
    google_cloud_collection(collections_path)
    plays = playbook(project, nodes, ranges)
    with tempfile.TemporaryDirectory(prefix='bench-google-cloud-') as work:
        path = pathlib.Path(work) / 'playbook.yml'
        path.write_text(json.dumps(plays))
        proxy = ConnectProxy(sandbox).start()
        try:
            env = {key: value for key, value in os.environ.items() if not key.startswith(('GCP_', 'CLOUDSDK_', 'ANSIBLE_'))}
            env.update(HTTPS_PROXY=proxy.url, https_proxy=proxy.url, REQUESTS_CA_BUNDLE=proxy.ca_file, NO_PROXY='', no_proxy='',
                       ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_NOCOLOR='1')
            command = [str(pathlib.Path(sys.executable).parent / 'ansible-playbook'), '-i', 'localhost,',
                       '-e', 'ansible_python_interpreter=' + sys.executable, str(path)]
            result = _process.run(command, env, usage)
        finally:
            proxy.stop()
    if result.returncode != 0:
        raise SystemExit('the google.cloud playbook failed:\n' + result.stdout[-4000:])
