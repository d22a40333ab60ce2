"""Unit tests of the parts of module_utils/gcp/ (transport, compute, container) that need no server: settings, backoff, errors."""

import random
import subprocess
import sys

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils import poll
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.compute import ComputeClient
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.container import ContainerClient
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError, MissingLibrary, error_from_operation
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import (
    Credentials, RetryPolicy, Transport, load_credentials, parse_retry_after, resolve_settings)
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import transport as gcp_transport


def test_options_win_over_environment():
    settings = resolve_settings({'project': 'from-option'}, {'GCP_PROJECT': 'from-env'})
    assert settings['project'] == 'from-option'


def test_awx_gce_credential_environment_is_enough():
    # What AWX's built-in GCE credential injects into a job's environment.
    environ = {'GCP_AUTH_KIND': 'serviceaccount', 'GCP_PROJECT': 'awx-project',
               'GCP_SERVICE_ACCOUNT_FILE': '/runner/env/gce.json', 'GCP_SCOPES': 'scope-a, scope-b'}
    settings = resolve_settings({}, environ)
    assert settings['auth_kind'] == 'serviceaccount'
    assert settings['project'] == 'awx-project'
    assert settings['service_account_file'] == '/runner/env/gce.json'
    assert settings['scopes'] == ['scope-a', 'scope-b']


def test_gcloud_endpoint_overrides_are_honoured():
    environ = {'CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE': 'http://127.0.0.1:9/compute/v1/',
               'CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER': 'http://127.0.0.1:9/'}
    settings = resolve_settings({}, environ)
    assert settings['compute_endpoint'] == 'http://127.0.0.1:9/compute/v1/'
    assert settings['container_endpoint'] == 'http://127.0.0.1:9/'
    defaults = resolve_settings({}, {})
    assert defaults['compute_endpoint'] == 'https://compute.googleapis.com/compute/v1/'
    assert defaults['scopes'] == ['https://www.googleapis.com/auth/cloud-platform']
    assert defaults['auth_kind'] == 'application'


def test_container_client_adds_the_version_path():
    transport = Transport(Credentials(None))
    client = ContainerClient(transport, 'p', 'http://127.0.0.1:9/')
    assert client.url('us-central1/clusters/c') == 'http://127.0.0.1:9/v1/projects/p/locations/us-central1/clusters/c'
    compute = ComputeClient(transport, 'p', 'http://127.0.0.1:9/compute/v1')
    assert compute.url('global/networks') == 'http://127.0.0.1:9/compute/v1/projects/p/global/networks'
    assert compute.url('projects/cos-cloud/global/images/x') == 'http://127.0.0.1:9/compute/v1/projects/cos-cloud/global/images/x'


def test_unknown_auth_kind_names_the_field_and_the_choices():
    with pytest.raises(GcpError, match=r"auth_kind 'oauth' is not one of application, serviceaccount"):
        load_credentials(resolve_settings({'auth_kind': 'oauth'}, {}))


@pytest.mark.parametrize('params, needle', [
    ({'auth_kind': 'serviceaccount'}, 'service_account_file or service_account_contents'),
    ({'auth_kind': 'accesstoken'}, 'needs access_token'),
])
def test_incomplete_credentials_say_what_to_set(params, needle):
    with pytest.raises(GcpError, match=needle):
        load_credentials(resolve_settings(params, {}))


def test_bad_service_account_json_never_echoes_the_key():
    secret = '-----BEGIN PRIVATE KEY-----\nNOT-A-REAL-KEY-0123456789\n-----END PRIVATE KEY-----\n'
    contents = '{"type": "service_account", "private_key": %r, "client_email": "x@y"}' % secret
    contents = contents.replace("'", '"')
    with pytest.raises(GcpError) as caught:
        load_credentials(resolve_settings({'auth_kind': 'serviceaccount', 'service_account_contents': contents}, {}))
    assert 'NOT-A-REAL-KEY' not in str(caught.value)
    assert 'auth_kind serviceaccount' in str(caught.value)


def test_access_token_credentials_authorize_requests():
    credentials = load_credentials(resolve_settings({'auth_kind': 'accesstoken', 'access_token': 'tok-123'}, {}))
    headers = {}
    credentials.authorize(headers)
    assert headers == {'Authorization': 'Bearer tok-123'}


def test_backoff_grows_exponentially_is_capped_and_jittered():
    policy = RetryPolicy(initial_delay=1.0, max_delay=8.0, rng=random.Random(7))
    caps = [1, 2, 4, 8, 8, 8, 8, 8]
    delays = [delay for delay, _cap in zip(policy.delays(), caps)]
    for delay, cap in zip(delays, caps):
        assert cap / 2.0 <= delay <= cap
    assert len(set(delays)) == len(delays), 'jitter makes every delay different'


@pytest.mark.parametrize('finished_at', [0.3, 2.0, 2.1, 45.0, 180.0, 600.0])
def test_container_operations_are_seen_done_soon_after_they_finish_with_few_reads(finished_at):
    """The default poll of ContainerClient.wait: the first read after the operation finished comes at most 25% of
    that time later (or the 0.5 s first delay, or the 20 s cap), for a 2 s operation as for a 10 minute one."""
    read_at, reads = 0.0, 0
    for delay in poll.ProportionalPoll().delays():
        read_at += delay
        reads += 1
        if read_at >= finished_at:
            break
    assert read_at - finished_at <= max(0.5, min(20.0, 0.25 * finished_at))
    assert reads <= 22 + finished_at / 20.0


def test_container_wait_polls_with_the_proportional_schedule_by_default():
    """ContainerClient.wait's own schedule, read from the sleeps it asks its transport for (no clock, no API: the
    transport answers RUNNING three times, then DONE)."""
    class Transport:
        def __init__(self):
            self.sleeps, self.reads = [], 0

        def sleep(self, seconds):
            self.sleeps.append(seconds)

        def request(self, method, url, action):
            self.reads += 1
            return {'name': 'operation-1', 'status': 'DONE' if self.reads == 4 else 'RUNNING'}

    transport = Transport()
    client = ContainerClient(transport, 'test-project', 'http://127.0.0.1:9/')
    done = client.wait({'name': 'operation-1', 'zone': 'us-central1-a', 'status': 'RUNNING'}, "create cluster 'c'")
    assert done['status'] == 'DONE'
    assert transport.sleeps == [0.5, 0.5, 0.5, 0.5]


@pytest.mark.parametrize('header, expected', [('3', 3.0), ('0', 0.0), (None, None), ('soon', None)])
def test_retry_after_seconds(header, expected):
    assert parse_retry_after(header) == expected


def test_retry_after_http_date_is_in_the_future():
    import email.utils
    import time
    value = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after(value) <= 31


def test_error_text_is_one_line_naming_resource_and_cause():
    error = GcpError("create instance 'vm-1' in us-central1-a", 'Quota exceeded\n for GPUS', status=403, reason='quotaExceeded')
    assert str(error) == "Failed to create instance 'vm-1' in us-central1-a (HTTP 403, quotaExceeded): Quota exceeded for GPUS"
    assert '\n' not in str(error)


def test_operation_errors_carry_their_codes():
    operation = {'name': 'op-1', 'status': 'DONE', 'httpErrorStatusCode': 503,
                 'error': {'errors': [{'code': 'ZONE_RESOURCE_POOL_EXHAUSTED', 'message': 'The zone does not have enough resources.'}]}}
    error = error_from_operation("create instance 'vm-2'", operation)
    assert error.codes == ('ZONE_RESOURCE_POOL_EXHAUSTED',)
    assert error.capacity
    assert str(error) == ("Failed to create instance 'vm-2' (HTTP 503, ZONE_RESOURCE_POOL_EXHAUSTED): "
                          "The zone does not have enough resources.")


def test_container_operation_error_shape():
    operation = {'name': 'operation-1', 'status': 'DONE', 'error': {'code': 8, 'message': 'Insufficient regional quota'}}
    error = error_from_operation("create cluster 'c1'", operation)
    assert 'Insufficient regional quota' in str(error)
    assert not error.capacity


def test_the_client_module_imports_neither_requests_nor_google_auth_until_used():
    """A cached inventory and auth_kind none must not pay for libraries they do not use."""
    code = ('import sys\n'
            'from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import Transport\n'
            'before = sorted(name for name in ("requests", "google.auth") if name in sys.modules)\n'
            'Transport()\n'
            'print(before, "requests" in sys.modules, "google.auth" in sys.modules)\n')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True,
                            env={'PYTHONPATH': ':'.join(sys.path)})
    assert result.stdout.split() == ['[]', 'True', 'False']


@pytest.mark.parametrize('module, library, call', [
    ('requests', 'requests', Transport),
    ('google.auth', 'google-auth', lambda: load_credentials({'auth_kind': 'application', 'scopes': None})),
])
def test_a_missing_library_says_how_to_install_it(monkeypatch, module, library, call):
    monkeypatch.setitem(sys.modules, module, None)   # makes "import module" raise ImportError
    monkeypatch.setattr(gcp_transport, module.split('.')[0], None)
    with pytest.raises(MissingLibrary) as raised:
        call()
    assert '%s is not installed on the controller: pip install -r requirements.txt from the collection' % library in str(raised.value)
