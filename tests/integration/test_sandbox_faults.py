"""Fault injection: by count and by seeded rate, per method or '*', HTTP errors and dropped
connections, decided before the request has any effect; and the HTTP control endpoints for faults."""

import http.client
import json
import urllib.request

import pytest

from sandbox import Sandbox
from sandbox.faults import parse_fault_spec

P = 'compute/v1/projects/p'


def network(name):
    return {'name': name, 'autoCreateSubnetworks': False}


def test_count_faults_fail_the_next_n_matching_requests_only(sandbox, api):
    sandbox.inject_fault(method='compute.networks.insert', kind='http_503', count=2)
    assert api.get(P + '/global/networks').status == 200, 'other methods are untouched'
    first, second, third = (api.post(P + '/global/networks', network('n')) for _attempt in range(3))
    assert (first.status, second.status, third.status) == (503, 503, 200)
    assert first.body['error']['status'] == 'UNAVAILABLE' and first.body['error']['errors'][0]['reason'] == 'backendError'
    assert len(sandbox.resources('compute.networks')) == 1, 'a faulted request has no effect'
    log = sandbox.request_log('compute.networks.insert')
    assert [(entry['status'], entry['fault']) for entry in log] == [(503, 'http_503'), (503, 'http_503'), (200, None)]


def test_429_carries_retry_after(sandbox, api):
    sandbox.inject_fault('*', 'http_429', count=1, retry_after=2)
    response = api.get(P + '/zones')
    assert response.status == 429 and response.headers['Retry-After'] == '2'
    assert response.body['error']['status'] == 'RESOURCE_EXHAUSTED'


def test_500(sandbox, api):
    sandbox.inject_fault('compute.zones.*', 'http_500', count=1)
    assert api.get(P + '/zones/us-central1-a').status == 500
    assert api.get(P + '/zones/us-central1-a').status == 200


def outcomes(seed, rate, requests=40):
    instance = Sandbox(seed=seed).start()
    try:
        instance.inject_fault('compute.zones.get', 'http_503', rate=rate)
        client_url = instance.compute_url + 'projects/p/zones/us-central1-a'
        results = []
        for _attempt in range(requests):
            try:
                with urllib.request.urlopen(client_url) as answer:
                    results.append(answer.status)
            except urllib.error.HTTPError as error:
                results.append(error.code)
        return results
    finally:
        instance.stop()


def test_rate_faults_are_deterministic_for_a_seed():
    first, again, other = outcomes(0, 0.3), outcomes(0, 0.3), outcomes(1, 0.3)
    assert first == again
    assert first != other
    assert 5 <= first.count(503) <= 20 and set(first) == {200, 503}
    assert set(outcomes(0, 0.0, 10)) == {200} and set(outcomes(0, 1.0, 10)) == {503}


def test_reset_drops_the_connection_without_a_response(sandbox):
    sandbox.inject_fault('*', 'reset', count=1)
    connection = http.client.HTTPConnection('127.0.0.1', sandbox.port, timeout=5)
    connection.request('GET', '/compute/v1/projects/p/zones')
    with pytest.raises((ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine)):
        connection.getresponse()
    connection.close()
    connection = http.client.HTTPConnection('127.0.0.1', sandbox.port, timeout=5)
    connection.request('GET', '/compute/v1/projects/p/zones')
    assert connection.getresponse().status == 200
    assert [entry['fault'] for entry in sandbox.request_log()] == ['reset', None]


def test_operation_faults_only_hit_mutating_calls(sandbox, api):
    sandbox.inject_fault('*', 'QUOTA_EXCEEDED', count=1)
    assert api.get(P + '/global/networks').status == 200
    operation = api.post(P + '/global/networks', network('n')).body
    assert operation['error']['errors'][0]['code'] == 'QUOTA_EXCEEDED'
    assert "Quota 'NETWORKS' exceeded." in operation['error']['errors'][0]['message']
    assert sandbox.resources('compute.networks') == []


def test_fault_control_endpoints(sandbox, api):
    rule = api.post('_sandbox/faults', {'method': 'compute.networks.insert', 'kind': 'http_503', 'count': 1}).body
    assert rule == {'method': 'compute.networks.insert', 'kind': 'http_503', 'rate': None, 'count': 1, 'retry_after': 0}
    assert api.get('_sandbox/faults').body[0]['kind'] == 'http_503'
    assert api.post(P + '/global/networks', network('n')).status == 503
    api.post('_sandbox/faults', {'method': '*', 'kind': 'http_500', 'rate': 1.0})
    assert api.delete('_sandbox/faults').body == {'cleared': True}
    assert api.post(P + '/global/networks', network('n')).status == 200
    bad = api.post('_sandbox/faults', {'method': '*', 'kind': 'meteor_strike', 'count': 1})
    assert bad.status == 400 and 'unknown fault kind' in bad.body['error']['message']


@pytest.mark.parametrize('spec, expected', [
    ('compute.instances.insert:http_503:rate=0.3', ('compute.instances.insert', 'http_503', 0.3, None)),
    ('*:reset:count=2', ('*', 'reset', None, 2)),
    ('container.projects.locations.clusters.create:QUOTA_EXCEEDED', ('container.projects.locations.clusters.create', 'QUOTA_EXCEEDED', None, 1)),
])
def test_fault_spec_syntax(spec, expected):
    rule = parse_fault_spec(spec)
    assert (rule.method, rule.kind, rule.rate, rule.remaining) == expected


@pytest.mark.parametrize('spec', ['nothing', 'a:b', '*:http_503:rate=2', '*:http_503:often=1', '*:http_503:rate=0.1:count=1'])
def test_bad_fault_specs_are_rejected(spec):
    with pytest.raises(ValueError):
        parse_fault_spec(spec)


def test_batch_requests_are_each_faulted_and_logged(sandbox):
    sandbox.inject_fault('compute.networks.get', 'http_503', count=1)
    boundary = 'xyz'
    parts = []
    for index, name in enumerate(('a', 'b')):
        parts.append('--%s\r\nContent-Type: application/http\r\nContent-ID: <id+%d>\r\n\r\n'
                     'GET /compute/v1/projects/p/global/networks/%s?alt=json HTTP/1.1\r\n\r\n' % (boundary, index, name))
    body = (''.join(parts) + '--%s--\r\n' % boundary).encode()
    connection = http.client.HTTPConnection('127.0.0.1', sandbox.port, timeout=5)
    connection.request('POST', '/batch/compute/v1', body, {'Content-Type': 'multipart/mixed; boundary="%s"' % boundary})
    answer = connection.getresponse()
    text = answer.read().decode()
    assert answer.status == 200 and answer.getheader('Content-Type').startswith('multipart/mixed; boundary=')
    assert 'Content-ID: <response-id+0>' in text and 'HTTP/1.1 503' in text and 'HTTP/1.1 404' in text
    assert [(entry['api_method'], entry['status']) for entry in sandbox.request_log()] == [
        ('compute.networks.get', 503), ('compute.networks.get', 404)]
    json.loads(text.split('\r\n\r\n')[2].split('\r\n--')[0])  # each part carries a JSON error body
