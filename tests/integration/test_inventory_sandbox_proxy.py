"""What the inventory work added to the sandbox: the HTTPS CONNECT proxy (proxy.py), the faults
http_403 and unreachable (faults.py), and the fields / prettyPrint system parameters (server.py)."""

import json
import socket
import ssl

import pytest
import requests

from sandbox.client import SandboxClient
from sandbox.faults import parse_fault_spec
from sandbox.proxy import ConnectProxy

PROJECT = 'proxy-project'


@pytest.fixture
def proxy(sandbox):
    with ConnectProxy(sandbox) as running:
        yield running


def test_the_proxy_serves_googles_compute_hosts_over_tls(sandbox, proxy):
    session = requests.Session()
    session.trust_env = False
    for host in ('compute.googleapis.com', 'www.googleapis.com'):
        answer = session.get('https://%s/compute/v1/projects/%s/zones/us-central1-a' % (host, PROJECT),
                             proxies={'https': proxy.url}, verify=proxy.ca_file, timeout=10)
        assert answer.status_code == 200
        # links read as on the real API, for the host the client asked
        assert answer.json()['selfLink'] == 'https://%s/compute/v1/projects/%s/zones/us-central1-a' % (host, PROJECT)
    assert [entry['api_method'] for entry in sandbox.request_log()] == ['compute.zones.get'] * 2


def test_the_proxy_certificate_is_trusted_only_through_its_test_ca(proxy):
    with pytest.raises(requests.exceptions.SSLError):
        requests.get('https://compute.googleapis.com/compute/v1/projects/p/zones/us-central1-a',
                     proxies={'https': proxy.url}, verify=True, timeout=10)


def connect(proxy, request):
    with socket.create_connection(('127.0.0.1', proxy.port), timeout=10) as sock:
        sock.sendall(request)
        return sock.recv(4096).decode('latin-1')


@pytest.mark.parametrize('request_bytes', [
    b'CONNECT oauth2.googleapis.com:443 HTTP/1.1\r\nHost: oauth2.googleapis.com:443\r\n\r\n',
    b'CONNECT example.com:443 HTTP/1.1\r\n\r\n',
    b'CONNECT compute.googleapis.com:80 HTTP/1.1\r\n\r\n',
    b'GET http://compute.googleapis.com/compute/v1/projects/p/zones/us-central1-a HTTP/1.1\r\nHost: compute.googleapis.com\r\n\r\n',
])
def test_the_proxy_refuses_anything_else(proxy, request_bytes):
    answer = connect(proxy, request_bytes)
    assert answer.startswith('HTTP/1.1 403 ')
    assert proxy.refused


def test_a_connect_it_serves_is_answered_by_the_sandbox_not_forwarded(sandbox, proxy):
    context = ssl.create_default_context(cafile=proxy.ca_file)
    with socket.create_connection(('127.0.0.1', proxy.port), timeout=10) as sock:
        sock.sendall(b'CONNECT compute.googleapis.com:443 HTTP/1.1\r\n\r\n')
        assert sock.recv(4096).startswith(b'HTTP/1.1 200')
        with context.wrap_socket(sock, server_hostname='compute.googleapis.com') as tls:
            tls.sendall(b'GET /compute/v1/projects/p/regions/us-central1 HTTP/1.1\r\nHost: compute.googleapis.com\r\n'
                        b'Connection: close\r\n\r\n')
            data = b''
            while chunk := tls.recv(65536):
                data += chunk
    assert data.startswith(b'HTTP/1.1 200') and b'"compute#region"' in data
    assert sandbox.request_log()[-1]['api_method'] == 'compute.regions.get'


def test_http_403_can_be_narrowed_to_one_project(sandbox, api):
    sandbox.inject_fault('compute.instances.aggregatedList', 'http_403', rate=1.0, project='secret')
    denied = api.get('compute/v1/projects/secret/aggregated/instances')
    assert denied.status == 403 and denied.body['error']['errors'][0]['reason'] == 'forbidden'
    assert denied.body['error']['message'] == "Required 'compute.instances.list' permission for 'projects/secret'"
    assert api.get('compute/v1/projects/open/aggregated/instances').status == 200
    rule = parse_fault_spec('compute.instances.aggregatedList:http_403:rate=1:project=secret')
    assert (rule.kind, rule.project, rule.rate) == ('http_403', 'secret', 1.0)


def test_an_unreachable_zone_is_named_in_unreachables(sandbox, api):
    client = SandboxClient(sandbox.url)
    client.create_vpc(PROJECT, 'n', 's', 'us-central1', '10.0.0.0/24', mtu=1460)
    for zone in ('us-central1-a', 'us-central1-b'):
        client.must('POST', 'compute/v1/projects/%s/zones/%s/instances' % (PROJECT, zone), {
            'name': 'vm-' + zone[-1], 'machineType': 'zones/%s/machineTypes/e2-standard-2' % zone,
            'networkInterfaces': [{'subnetwork': 'regions/us-central1/subnetworks/s'}],
            'disks': [{'boot': True, 'initializeParams': {'sourceImage': 'projects/debian-cloud/global/images/family/debian-12'}}]})
    sandbox.inject_fault('compute.instances.*', 'unreachable', rate=1.0, zone='us-central1-b')
    partial = api.get('compute/v1/projects/%s/aggregated/instances?returnPartialSuccess=true' % PROJECT).body
    assert partial['unreachables'] == ['zones/us-central1-b']
    assert partial['items']['zones/us-central1-b']['warning']['code'] == 'UNREACHABLE'
    assert [vm['name'] for vm in partial['items']['zones/us-central1-a']['instances']] == ['vm-a']
    whole = api.get('compute/v1/projects/%s/aggregated/instances' % PROJECT)
    assert whole.status == 503 and 'returnPartialSuccess' in whole.body['error']['message']
    assert api.get('compute/v1/projects/%s/zones/us-central1-b/instances/vm-b' % PROJECT).status == 503
    assert api.get('compute/v1/projects/%s/zones/us-central1-a/instances/vm-a' % PROJECT).status == 200
    with pytest.raises(ValueError):
        parse_fault_spec('compute.instances.list:unreachable')   # which zone?


def test_fields_and_pretty_print_shape_the_answer(sandbox):
    url = sandbox.compute_url + 'projects/%s/zones/us-central1-a' % PROJECT
    full = requests.get(url, timeout=10)
    masked = requests.get(url, params={'fields': 'name,status,region', 'prettyPrint': 'false'}, timeout=10)
    assert json.loads(masked.text) == {key: full.json()[key] for key in ('name', 'status', 'region')}
    assert '\n' not in masked.text and '\n' in full.text
    nested = requests.get(sandbox.compute_url + 'projects/%s/aggregated/instances' % PROJECT,
                          params={'fields': 'items/*/warning(code),nextPageToken'}, timeout=10).json()
    assert set(nested) == {'items'} and nested['items']['zones/us-central1-a'] == {'warning': {'code': 'NO_RESULTS_ON_PAGE'}}
