# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection settings, credentials and HTTP to Google's REST APIs: one request with retries (capped exponential
backoff with jitter, Retry-After) and, for mutating Compute calls, one requestId that every retry repeats.

It has no Ansible dependency, so modules (through gcp/module.py) and the inventory plugin share it. It runs on the
controller: google-auth and requests are controller requirements (requirements.txt), imported lazily so that a missing
library becomes a clear error, not an ImportError at import time.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import threading
import time
import traceback
import uuid

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError, GcpTimeout, MissingLibrary, error_from_response


# requests is imported when the first Transport is made: a cached inventory never sends a request and
# need not pay for the import (about 40 ms).
requests = None

# google-auth is imported when credentials are needed (not for auth_kind none): it is a tenth of
# a second per module run that the local sandbox and check-only runs need not pay.
google = None
google_service_account = google_oauth2_credentials = None


def _import_google_auth():
    """Import google-auth on first use; a missing library becomes MissingLibrary."""
    global google, google_service_account, google_oauth2_credentials  # pylint: disable=global-statement
    if google is not None:
        return
    try:
        import google.auth  # pylint: disable=import-outside-toplevel,redefined-outer-name
        import google.auth.compute_engine  # pylint: disable=import-outside-toplevel
        import google.auth.exceptions  # pylint: disable=import-outside-toplevel
        import google.auth.transport.requests  # pylint: disable=import-outside-toplevel
        from google.oauth2 import service_account, credentials  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise _missing_library('google-auth') from None
    google_service_account, google_oauth2_credentials = service_account, credentials


def require_libraries():
    """Import requests on first use; a missing library becomes MissingLibrary."""
    global requests  # pylint: disable=global-statement
    if requests is not None:
        return
    try:
        # Binds the global name requests (the package), as declared above.
        import requests.adapters  # pylint: disable=import-outside-toplevel,redefined-outer-name
    except ImportError:
        raise _missing_library('requests') from None


def _missing_library(name):
    """The error for a controller library that failed to import; call it while handling the ImportError."""
    return MissingLibrary('use the Google Cloud API', '%s is not installed on the controller: pip install -r requirements.txt '
                          'from the collection (%s)' % (name, traceback.format_exc().strip().splitlines()[-1]))


COMPUTE_DEFAULT_ENDPOINT = 'https://compute.googleapis.com/compute/v1/'
CONTAINER_DEFAULT_ENDPOINT = 'https://container.googleapis.com/'
DEFAULT_SCOPES = ('https://www.googleapis.com/auth/cloud-platform',)
AUTH_KINDS = ('application', 'serviceaccount', 'accesstoken', 'machineaccount', 'none')

# The statuses Google documents as safe to retry with backoff; anything else is the caller's error.
RETRYABLE_STATUSES = frozenset((429, 500, 502, 503, 504))
# A 503 that is an answer, not a passing failure: bulkInsert refuses a zone without room for minCount VMs with
# 503 reason insufficientCapacity ("Troubleshooting bulk creation of VMs"); another zone, not a retry, is the cure.
FINAL_REASONS = frozenset(('insufficientCapacity',))
MUTATING_METHODS = frozenset(('POST', 'PUT', 'PATCH', 'DELETE'))
# The Compute wait method returns after at most about two minutes even when not DONE, so one read
# must be allowed to take that long.
REQUEST_TIMEOUT = (10, 150)

# ---------------------------------------------------------------------------------------------
# Retries


class RetryPolicy:
    """Capped exponential backoff with jitter and a total deadline.

    The n-th delay is drawn from [cap/2, cap] with cap = min(max_delay, initial_delay * 2**n), so
    concurrent clients spread out while each still waits a predictable minimum. A Retry-After
    header raises the delay to what the server asked. No attempt starts after the deadline.
    """

    def __init__(self, initial_delay=1.0, max_delay=32.0, deadline=300.0, rng=None):
        self.initial_delay = initial_delay
        self.max_delay = max_delay
        self.deadline = deadline
        self.rng = rng or random.Random()

    def delays(self):
        attempt = 0
        while True:
            cap = min(self.max_delay, self.initial_delay * (2 ** attempt))
            yield self.rng.uniform(cap / 2.0, cap)
            attempt += 1


def parse_retry_after(value):
    """Seconds from a Retry-After header (delta-seconds or HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


# ---------------------------------------------------------------------------------------------
# Credentials


class Credentials:
    """Bearer tokens from google-auth, refreshed under a lock so that worker threads share one."""

    def __init__(self, google_credentials):
        self._credentials = google_credentials
        self._lock = threading.Lock()

    @property
    def refreshable(self):
        return self._credentials is not None

    def authorize(self, headers, force_refresh=False):
        if self._credentials is None:
            return
        with self._lock:
            if force_refresh or not self._credentials.valid:
                try:
                    self._credentials.refresh(google.auth.transport.requests.Request())
                except google.auth.exceptions.GoogleAuthError as exc:
                    # RefreshError carries (text, response body); only the text is a message (and holds no secret).
                    text = exc.args[0] if exc.args and isinstance(exc.args[0], str) else type(exc).__name__
                    raise GcpError('authenticate', text) from None
            headers['Authorization'] = 'Bearer %s' % self._credentials.token


# The environment variable each connection option falls back to. The GCP_* names are those of the
# google.cloud collection and of AWX's built-in GCE credential; CLOUDSDK_API_ENDPOINT_OVERRIDES_* are
# the variables gcloud honours, so one environment points gcloud and this collection at the same
# endpoint. The modules (gcp/module.py), the inventory plugin and resolve_settings read this table;
# the option docs (doc_fragments/gcp.py, inventory/gce.py) are checked against it by a unit test.
ENVIRONMENT = {
    'project': 'GCP_PROJECT',
    'auth_kind': 'GCP_AUTH_KIND',
    'service_account_file': 'GCP_SERVICE_ACCOUNT_FILE',
    'service_account_contents': 'GCP_SERVICE_ACCOUNT_CONTENTS',
    'access_token': 'GCP_ACCESS_TOKEN',
    'scopes': 'GCP_SCOPES',
    'compute_endpoint': 'CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE',
    'container_endpoint': 'CLOUDSDK_API_ENDPOINT_OVERRIDES_CONTAINER',
}


def resolve_settings(params=None, environ=None):
    """Connection settings from options, falling back to the environment variables of ENVIRONMENT."""
    params = dict(params or {})
    environ = os.environ if environ is None else environ

    def pick(option):
        value = params.get(option)
        if value in (None, '', []) and environ.get(ENVIRONMENT[option]):
            return environ[ENVIRONMENT[option]]
        return value

    scopes = pick('scopes')
    if isinstance(scopes, str):
        scopes = [scope.strip() for scope in scopes.split(',') if scope.strip()]
    settings = {
        'project': pick('project'),
        'auth_kind': pick('auth_kind') or 'application',
        'service_account_file': pick('service_account_file'),
        'service_account_contents': pick('service_account_contents'),
        'access_token': pick('access_token'),
        'scopes': list(scopes or DEFAULT_SCOPES),
        'compute_endpoint': pick('compute_endpoint') or COMPUTE_DEFAULT_ENDPOINT,
        'container_endpoint': pick('container_endpoint') or CONTAINER_DEFAULT_ENDPOINT,
    }
    return settings


def load_credentials(settings):
    """google-auth credentials for the settings' auth_kind; None for 'none' (the local sandbox)."""
    kind = settings['auth_kind']
    if kind not in AUTH_KINDS:
        raise GcpError('authenticate', "auth_kind '%s' is not one of %s; set auth_kind (or GCP_AUTH_KIND) to one of them"
                       % (kind, ', '.join(AUTH_KINDS)))
    if kind == 'none':
        return None
    require_libraries()
    _import_google_auth()
    scopes = settings['scopes']
    try:
        if kind == 'application':
            credentials, _project = google.auth.default(scopes=scopes)
        elif kind == 'machineaccount':
            credentials = google.auth.compute_engine.Credentials(scopes=scopes)
        elif kind == 'accesstoken':
            if not settings['access_token']:
                raise GcpError('authenticate', 'auth_kind accesstoken needs access_token (or GCP_ACCESS_TOKEN)')
            credentials = google_oauth2_credentials.Credentials(token=settings['access_token'])
        else:
            info = settings['service_account_contents']
            if info:
                info = json.loads(info) if isinstance(info, str) else info
                credentials = google_service_account.Credentials.from_service_account_info(info, scopes=scopes)
            elif settings['service_account_file']:
                credentials = google_service_account.Credentials.from_service_account_file(
                    os.path.expanduser(settings['service_account_file']), scopes=scopes)
            else:
                raise GcpError('authenticate', 'auth_kind serviceaccount needs service_account_file or service_account_contents '
                               '(or GCP_SERVICE_ACCOUNT_FILE / GCP_SERVICE_ACCOUNT_CONTENTS)')
    except GcpError:
        raise
    except (ValueError, KeyError, OSError, google.auth.exceptions.GoogleAuthError) as exc:
        # The exception text of google-auth never contains the key itself.
        raise GcpError('authenticate', 'auth_kind %s: %s' % (kind, exc)) from exc
    return Credentials(credentials)


# ---------------------------------------------------------------------------------------------
# Transport


class Transport:
    """HTTP with retries. One instance is shared by every thread of a run."""

    def __init__(self, credentials=None, retry=None, pool_size=32, user_agent='aiinfra.gpudirect'):
        require_libraries()
        self.credentials = credentials or Credentials(None)
        self.retry = retry or RetryPolicy()
        self.session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=0)
        self.session.mount('http://', adapter)
        self.session.mount('https://', adapter)
        self.session.headers['User-Agent'] = user_agent
        self.sleep = time.sleep

    def request(self, method, url, action, params=None, body=None, deadline=None, request_id=False):
        """Send one logical request, retrying what may be retried; return the decoded JSON body.

        With ``request_id`` (an API that takes one: Compute), a mutating request gets a requestId. The params,
        the requestId among them, are fixed before the first attempt, so every retry is the same request as far
        as the API is concerned and a retried insert is not done twice. ``deadline`` (seconds) shortens the
        retry deadline and the read timeout for callers that have less time left.
        """
        if request_id and method in MUTATING_METHODS:
            params = dict({'requestId': str(uuid.uuid4())}, **(params or {}))
        deadline = min(self.retry.deadline, deadline) if deadline is not None else self.retry.deadline
        read_timeout = max(1.0, min(REQUEST_TIMEOUT[1], deadline))
        deadline = time.monotonic() + deadline
        delays = self.retry.delays()
        refreshed = False
        last_error = None
        while True:
            headers = {'Accept': 'application/json'}
            self.credentials.authorize(headers)
            retry_after = None
            try:
                response = self.session.request(method, url, params=params, json=body, headers=headers,
                                                timeout=(REQUEST_TIMEOUT[0], read_timeout))
            except (requests.ConnectionError, requests.Timeout) as exc:
                last_error = GcpError(action, 'connection to %s failed: %s' % (url.split('/')[2], _first_line(exc)))
            else:
                if response.status_code < 300:
                    return response.json() if response.content else {}
                last_error = error_from_response(action, response)
                if response.status_code == 401 and not refreshed and self.credentials.refreshable:
                    self.credentials.authorize(headers, force_refresh=True)
                    refreshed = True
                    continue
                if response.status_code not in RETRYABLE_STATUSES or last_error.reason in FINAL_REASONS:
                    raise last_error
                retry_after = parse_retry_after(response.headers.get('Retry-After'))
            delay = next(delays)
            if retry_after is not None:
                delay = max(delay, retry_after)
            if time.monotonic() + delay > deadline:
                raise GcpTimeout(last_error.action, '%s; gave up after the retry deadline of %ss'
                                 % (last_error.message, self.retry.deadline), status=last_error.status, reason=last_error.reason)
            self.sleep(delay)


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# ---------------------------------------------------------------------------------------------
# API clients


def join(base, path):
    """``path`` under the ``base`` URL, or path itself when it is a full URL."""
    if path.startswith(('http://', 'https://')):
        return path
    return base.rstrip('/') + '/' + path.lstrip('/')


class ApiClient:
    """What Compute and Container share: a base URL, a project and a transport.

    A path is relative to ``projects/PROJECT/`` plus the subclass's ``SCOPE`` unless it is a full URL
    or starts with ``projects/``.
    """

    SCOPE = ''

    def __init__(self, transport, project, base_url):
        if not project:
            raise GcpError('configure the client', 'no project: set project (or GCP_PROJECT)')
        self.transport = transport
        self.project = project
        self.base_url = base_url if base_url.endswith('/') else base_url + '/'

    def url(self, path):
        if path.startswith(('http://', 'https://', 'projects/')):
            return join(self.base_url, path)
        return join(self.base_url, 'projects/%s/%s%s' % (self.project, self.SCOPE, path))

    def get(self, path, action=None, params=None):
        """The resource at path, or None when it does not exist."""
        try:
            return self.transport.request('GET', self.url(path), action or 'get %s' % path, params=params)
        except GcpError as exc:
            if exc.not_found:
                return None
            raise
