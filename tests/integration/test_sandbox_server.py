"""The sandbox as a server: the ``run`` script, the request log, reset, the state file, keep-alive,
links built from the Host a request came to, and the read-only catalog (zones, machine types, images)."""

import http.client
import json
import os
import subprocess
import sys
import time

import pytest

from sandbox import Sandbox
from sandbox.client import SandboxClient

RUN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'sandbox', 'run')
P = 'compute/v1/projects/p'


def test_request_log_records_every_request(sandbox, api):
    api.post(P + '/global/networks', {'name': 'n', 'autoCreateSubnetworks': False})
    api.get(P + '/global/networks/missing')
    api.get('compute/v1/no/such/url')
    log = api.get('_sandbox/requests').body
    assert log == sandbox.request_log()
    assert [(entry['method'], entry['status'], entry['api_method']) for entry in log] == [
        ('POST', 200, 'compute.networks.insert'), ('GET', 404, 'compute.networks.get'), ('GET', 404, None)]
    assert log[0]['path'] == '/compute/v1/projects/p/global/networks' and log[0]['body'] == {'name': 'n', 'autoCreateSubnetworks': False}
    assert log[1]['body'] is None


def test_reset_clears_state_and_log(sandbox, api):
    api.post(P + '/global/networks', {'name': 'n', 'autoCreateSubnetworks': False})
    assert api.post('_sandbox/reset').body == {'reset': True}
    assert sandbox.request_log() == [] and sandbox.resources('compute.networks') == []
    assert api.get(P + '/global/networks/n').status == 404
    sandbox.reset()
    assert sandbox.request_log() == []


def test_state_file_round_trip(tmp_path):
    state_file = str(tmp_path / 'state.json')
    first = Sandbox(state_file=state_file, latency=30).start()
    try:
        client = SandboxClient(first.url)
        client.create_vpc('p', 'net', 'sub', 'us-central1', '10.0.0.0/24')
        running = client.post(P + '/global/networks?requestId=aaaaaaaa-0000-4000-8000-000000000000',
                              {'name': 'later', 'autoCreateSubnetworks': False}).body
        assert running['status'] == 'RUNNING'
    finally:
        first.stop()
    saved = json.load(open(state_file, encoding='utf-8'))
    assert set(saved['collections']['compute.networks']) == {'projects/p/global/networks/net', 'projects/p/global/networks/later'}
    second = Sandbox(state_file=state_file).start()
    try:
        client = SandboxClient(second.url)
        subnet = client.get(P + '/regions/us-central1/subnetworks/sub').body
        assert subnet['selfLink'] == second.url + '/compute/v1/projects/p/regions/us-central1/subnetworks/sub'
        again = client.post(P + '/global/networks?requestId=aaaaaaaa-0000-4000-8000-000000000000', {'name': 'later'}).body
        assert again['name'] == running['name'], 'requestIds survive a restart'
        assert client.post(P + '/global/networks', {'name': 'net', 'autoCreateSubnetworks': False}).status == 409
    finally:
        second.stop()


def start_run_script(*args):
    process = subprocess.Popen([sys.executable, RUN, '--port', '0', *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline().strip()
    return process, line


def test_run_script_prints_its_url_and_serves(tmp_path):
    state_file = tmp_path / 'state.json'
    process, line = start_run_script('--latency', '0', '--fault', 'compute.networks.insert:http_503:count=1', '--seed', '3',
                                     '--state-file', str(state_file), '--project', 'proj')
    try:
        assert line.startswith('listening on http://127.0.0.1:'), line
        client = SandboxClient(line.split()[-1])
        assert client.post('compute/v1/projects/proj/global/networks', {'name': 'n', 'autoCreateSubnetworks': False}).status == 503
        assert client.post('compute/v1/projects/proj/global/networks', {'name': 'n', 'autoCreateSubnetworks': False}).status == 200
        assert 'projects/proj/global/networks/n' in json.loads(state_file.read_text())['collections']['compute.networks']
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert process.stderr.read() == '', 'the sandbox is quiet unless --verbose'


def test_run_script_is_executable_with_the_env_python_on_path():
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))
    process = subprocess.Popen([RUN, '--port', '0'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout.readline().startswith('listening on http://127.0.0.1:')
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_run_script_rejects_a_bad_fault_spec():
    result = subprocess.run([sys.executable, RUN, '--fault', 'oops'], capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2 and 'fault spec' in result.stderr


def test_keep_alive_and_content_length(sandbox):
    connection = http.client.HTTPConnection('127.0.0.1', sandbox.port, timeout=5)
    for _attempt in range(3):
        connection.request('GET', '/compute/v1/projects/p/zones/us-central1-a')
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200 and int(response.getheader('Content-Length')) == len(body)
        assert response.version == 11 and response.getheader('Connection') != 'close'
    connection.request('GET', '/compute/v1/projects/p/zones/nowhere-1')
    response = connection.getresponse()
    assert response.status == 404 and len(response.read()) == int(response.getheader('Content-Length'))
    connection.close()


def test_links_use_the_host_the_request_came_to(sandbox):
    connection = http.client.HTTPConnection('127.0.0.1', sandbox.port, timeout=5)
    connection.request('GET', '/compute/v1/projects/p/zones/us-central1-a', headers={'Host': 'localhost:%d' % sandbox.port})
    zone = json.loads(connection.getresponse().read())
    assert zone['selfLink'] == 'http://localhost:%d/compute/v1/projects/p/zones/us-central1-a' % sandbox.port
    assert zone['region'] == 'http://localhost:%d/compute/v1/projects/p/regions/us-central1' % sandbox.port
    connection.close()


@pytest.mark.parametrize('name, cpus, memory_mb, accelerator, gpus', [
    ('a3-megagpu-8g', 208, 1916928, 'nvidia-h100-mega-80gb', 8),
    ('a3-highgpu-8g', 208, 1916928, 'nvidia-h100-80gb', 8),
    ('a3-edgegpu-8g', 208, 1916928, 'nvidia-h100-80gb', 8),
    ('a3-ultragpu-8g', 224, 3022848, 'nvidia-h200-141gb', 8),
    ('a4-highgpu-8g', 224, 4063232, 'nvidia-b200', 8),
    ('n2-standard-8', 8, 32768, None, 0),
])
def test_machine_types(api, name, cpus, memory_mb, accelerator, gpus):
    # A3 Ultra and A4 are offered in us-central1-b, not -a (GPU locations page, tests/sandbox/data/locations.json)
    zone = 'us-central1-b' if name in ('a3-ultragpu-8g', 'a4-highgpu-8g') else 'us-central1-a'
    machine = api.get(P + '/zones/%s/machineTypes/%s' % (zone, name)).body
    assert (machine['guestCpus'], machine['memoryMb'], machine['zone'], machine['kind']) == (cpus, memory_mb, zone, 'compute#machineType')
    if accelerator:
        assert machine['accelerators'] == [{'guestAcceleratorType': accelerator, 'guestAcceleratorCount': gpus}]
    else:
        assert 'accelerators' not in machine
    assert 'max_nics' not in machine, 'internal limits are not API fields'


def test_catalog_lists(api):
    zones = api.get(P + '/zones').body['items']
    assert 'us-central1-a' in [zone['name'] for zone in zones] and all(zone['status'] == 'UP' for zone in zones)
    region = api.get(P + '/regions/us-central1').body
    assert [link.rsplit('/', 1)[1] for link in region['zones']] == ['us-central1-a', 'us-central1-b', 'us-central1-c', 'us-central1-f']
    # 127 zones x 14 types span several 500-item pages: filter to one type, as a real caller would
    aggregated = api.get(P + '/aggregated/machineTypes?filter=name%20%3D%20a3-megagpu-8g').body['items']
    assert 'a3-megagpu-8g' in [machine['name'] for machine in aggregated['zones/europe-west4-b']['machineTypes']]
    assert 'machineTypes' not in aggregated['zones/us-west2-a'], 'A3 Mega is not offered in us-west2 (GPU locations page)'
    assert api.get(P + '/zones/us-central1-a/machineTypes/a3-ultragpu-8g').status == 404
    assert api.get(P + '/zones/us-central1-a/machineTypes/z9-nothing').status == 404
    project = api.get(P).body
    assert project['name'] == 'p' and project['defaultServiceAccount'].endswith('-compute@developer.gserviceaccount.com')


def test_images_and_families(api):
    image = api.get('compute/v1/projects/cos-cloud/global/images/family/cos-121-lts').body
    assert image['name'] == 'cos-121-18867-199-28' and image['family'] == 'cos-121-lts' and image['status'] == 'READY'
    view = api.get('compute/v1/projects/cos-cloud/zones/-/imageFamilyViews/cos-stable').body
    assert view['image']['family'] == 'cos-stable'
    old = api.get('compute/v1/projects/cos-cloud/global/images/cos-121-18867-90-38').body
    assert old['deprecated']['state'] == 'DEPRECATED'
    assert api.get('compute/v1/projects/cos-cloud/global/images/family/cos-1-lts').status == 404
    names = [item['name'] for item in api.get('compute/v1/projects/cos-cloud/global/images').body['items']]
    assert 'cos-stable-121-18867-199-28' in names


def test_service_usage_reports_enabled(api):
    service = api.get('v1/projects/p/services/container.googleapis.com').body
    assert service['state'] == 'ENABLED' and service['config']['name'] == 'container.googleapis.com'


def test_aggregated_instances_and_resources_accessor(sandbox, api):
    api.create_vpc('p', 'net', 'sub', 'us-central1', '10.0.0.0/24')
    for zone in ('us-central1-a', 'us-central1-b'):
        body = {'name': 'vm', 'machineType': 'zones/%s/machineTypes/e2-standard-4' % zone,
                'disks': [{'boot': True, 'initializeParams': {'sourceImage': 'projects/debian-cloud/global/images/family/debian-12'}}],
                'networkInterfaces': [{'subnetwork': 'regions/us-central1/subnetworks/sub'}]}
        assert api.post('compute/v1/projects/p/zones/%s/instances' % zone, body).status == 200
    items = api.get(P + '/aggregated/instances').body['items']
    assert len(items['zones/us-central1-a']['instances']) == 1 and 'warning' in items['zones/us-central1-c']
    assert len(sandbox.resources('compute.instances')) == 2 and sandbox.resources('compute.instances', project='other') == []


def test_in_process_start_stop_is_quick():
    started = time.time()
    with Sandbox() as instance:
        assert instance.url.startswith('http://127.0.0.1:') and instance.compute_url == instance.url + '/compute/v1/'
        assert instance.container_url == instance.url + '/'
    assert time.time() - started < 2
