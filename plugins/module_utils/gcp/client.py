# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one client of aiinfra.gpudirect for the Compute Engine v1 and Container (GKE) v1 REST APIs.

Everything that talks to Google Cloud goes through here: credentials (google-auth), endpoint
overrides, retries with capped exponential backoff and jitter, a requestId on every mutating
Compute call, operations awaited with the API's own ``wait`` method, pagination, aggregated
lists, concurrent submission, and one error type whose text names the resource and the cause.

It has no Ansible dependency, so modules (through gcp/module.py) and the inventory plugin share
it. It runs on the controller: google-auth and requests are controller requirements
(requirements.txt), imported lazily so that a missing library becomes a clear error, not an
ImportError at import time.
"""

from __future__ import annotations

import concurrent.futures
import email.utils
import json
import os
import random
import re
import threading
import time
import traceback
import uuid

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.links import resource_name
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import ProportionalPoll, until

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
# The codes that mean "no room now" (a stockout or a quota), which another zone or a later rerun may cure: Compute
# operations carry them as error codes, Container operations in their message ("ZONE_RESOURCE_POOL_EXHAUSTED: ...").
# In this order: the first found is the one named.
CAPACITY_CODES = ('ZONE_RESOURCE_POOL_EXHAUSTED', 'ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS', 'GCE_STOCKOUT', 'QUOTA_EXCEEDED',
                  'RESOURCE_EXHAUSTED')
MUTATING_METHODS = frozenset(('POST', 'PUT', 'PATCH', 'DELETE'))
# The Compute wait method returns after at most about two minutes even when not DONE, so one read
# must be allowed to take that long.
REQUEST_TIMEOUT = (10, 150)


class GcpError(Exception):
    """A failed call or operation, with what was being done and why it failed.

    ``status`` is the HTTP status (None for transport failures and timeouts), ``reason`` the API's
    reason (``notFound``, ``alreadyExists``, ...), ``codes`` the operation error codes
    (``ZONE_RESOURCE_POOL_EXHAUSTED``, ``QUOTA_EXCEEDED``, ...). ``str()`` is one line.
    """

    def __init__(self, action, message, status=None, reason=None, codes=(), operation=None):
        self.action = action
        self.message = ' '.join(str(message).split())
        self.status = status
        self.reason = reason
        self.codes = tuple(codes)
        self.operation = operation
        super().__init__(str(self))

    def __str__(self):
        cause = []
        if self.status is not None:
            cause.append('HTTP %s' % self.status)
        if self.reason:
            cause.append(self.reason)
        cause.extend(code for code in self.codes if code != self.reason)
        prefix = 'Failed to %s' % self.action if self.action else 'Request failed'
        return '%s (%s): %s' % (prefix, ', '.join(cause), self.message) if cause else '%s: %s' % (prefix, self.message)

    @property
    def not_found(self):
        return self.status == 404

    @property
    def capacity_code(self):
        """The capacity or quota code (CAPACITY_CODES) the error names in its codes or its message, QUOTA_EXCEEDED for a
        403 about quota, or ''."""
        text = '%s %s' % (' '.join(self.codes), self.message)
        found = next((code for code in CAPACITY_CODES if code in text), '')
        if not found and self.status == 403 and 'quota' in self.message.lower():
            return 'QUOTA_EXCEEDED'
        return found

    @property
    def capacity(self):
        """True for the errors that mean 'no room now', which a fallback zone or a later rerun may solve."""
        return bool(self.capacity_code) or self.reason == 'insufficientCapacity'

    def to_dict(self):
        return {'action': self.action, 'message': self.message, 'status': self.status, 'reason': self.reason,
                'codes': list(self.codes)}


class GcpShortfall(GcpError):
    """A VM a bulkInsert with minCount below count did not create, with no error of its own: Compute Engine makes fewer
    than asked when the zone lacks capacity or quota for the rest, so another zone or a later run may make it."""

    @property
    def capacity(self):
        return True


class GcpTimeout(GcpError):
    """An operation or the retry deadline ran out before the work was done."""


class MissingLibrary(GcpError):
    """google-auth or requests is not installed on the controller."""


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

    def request(self, method, url, action, params=None, body=None, deadline=None):
        """Send one logical request, retrying what may be retried; return the decoded JSON body.

        The params (including any requestId) are fixed before the first attempt, so every retry
        is the same request as far as the API is concerned. ``deadline`` (seconds) shortens the
        retry deadline and the read timeout for callers that have less time left.
        """
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


def error_from_response(action, response):
    """GcpError from an HTTP error response in Google's error shape (or whatever came back)."""
    reason = None
    try:
        error = response.json().get('error', {})
    except ValueError:
        error = {}
    if isinstance(error, dict):
        message = error.get('message') or response.reason or ''
        details = error.get('errors') or []
        if details and isinstance(details[0], dict):
            reason = details[0].get('reason')
        reason = reason or error.get('status')
    else:
        message = str(error)
    return GcpError(action, message or 'no error message', status=response.status_code, reason=reason)


def error_from_operation(action, operation):
    """GcpError from a DONE operation that carries an error (Compute or Container shape)."""
    compute_errors = (operation.get('error') or {}).get('errors') or []
    if compute_errors:
        codes = [item.get('code', '') for item in compute_errors]
        message = '; '.join(item.get('message', item.get('code', '')) for item in compute_errors)
        return GcpError(action, message, status=operation.get('httpErrorStatusCode'), reason=codes[0], codes=codes, operation=operation)
    status = operation.get('error') or {}
    message = status.get('message') or operation.get('statusMessage') or 'operation failed'
    code = status.get('code')
    return GcpError(action, message, reason=str(code) if code is not None else None, operation=operation)


# ---------------------------------------------------------------------------------------------
# API clients


def _join(base, path):
    if path.startswith(('http://', 'https://')):
        return path
    return base.rstrip('/') + '/' + path.lstrip('/')


def map_concurrently(function, items, max_workers=8):
    """Call function(item) for every item on a thread pool; return [(item, result, error)] in item order.

    Errors are GcpError instances, returned rather than raised, so one failed resource does not
    hide what happened to the others.
    """
    items = list(items)
    if not items:
        return []
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(items)))) as pool:
        futures = {pool.submit(function, item): index for index, item in enumerate(items)}
        for future in concurrent.futures.as_completed(futures):
            index = futures[future]
            try:
                results[index] = (items[index], future.result(), None)
            except GcpError as exc:
                results[index] = (items[index], None, exc)
    return [results[index] for index in range(len(items))]


class _ApiClient:
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
            return _join(self.base_url, path)
        return _join(self.base_url, 'projects/%s/%s%s' % (self.project, self.SCOPE, path))

    def get(self, path, action=None, params=None):
        """The resource at path, or None when it does not exist."""
        try:
            return self.transport.request('GET', self.url(path), action or 'get %s' % path, params=params)
        except GcpError as exc:
            if exc.not_found:
                return None
            raise


# At most this many names in one list filter (about 20 characters each in the URL).
NAME_FILTER_LIMIT = 200


class ComputeClient(_ApiClient):
    """Compute Engine v1. Paths are relative to ``projects/PROJECT/`` unless they are full URLs."""

    def __init__(self, transport, project, base_url=COMPUTE_DEFAULT_ENDPOINT):
        super().__init__(transport, project, base_url)

    def call(self, method, path, action, body=None, params=None):
        """One API call; a mutating call gets a requestId that every retry repeats."""
        params = dict(params or {})
        if method in MUTATING_METHODS:
            params.setdefault('requestId', str(uuid.uuid4()))
        return self.transport.request(method, self.url(path), action, params=params or None, body=body)

    def pages(self, path, action, params=None):
        """The raw pages of a list call, following nextPageToken."""
        params = dict(params or {})
        while True:
            page = self.transport.request('GET', self.url(path), action, params=params)
            yield page
            if not page.get('nextPageToken'):
                return
            params['pageToken'] = page['nextPageToken']

    def list(self, path, action=None, params=None):
        """Every item of a list call, following nextPageToken."""
        for page in self.pages(path, action or 'list %s' % path, params):
            yield from page.get('items', [])

    def aggregated_pages(self, collection, action=None, params=None):
        """The raw pages of an aggregatedList call (for callers that keep pages, such as the
        inventory's cache, or read ``unreachables``)."""
        params = dict(params or {})
        params.setdefault('returnPartialSuccess', 'true')
        return self.pages('aggregated/%s' % collection, action or 'list %s in every scope' % collection, params)

    def aggregated_list(self, collection, action=None, params=None):
        """(scope, item) pairs of an aggregatedList call, e.g. ('zones/us-central1-a', instance)."""
        for page in self.aggregated_pages(collection, action, params):
            for scope, scoped in sorted(page.get('items', {}).items()):
                for item in scoped.get(collection, []) or []:
                    yield scope, item

    def operation_path(self, operation):
        if operation.get('zone'):
            return 'zones/%s/operations/%s' % (resource_name(operation['zone']), operation['name'])
        if operation.get('region'):
            return 'regions/%s/operations/%s' % (resource_name(operation['region']), operation['name'])
        return 'global/operations/%s' % operation['name']

    def wait(self, operation, action, timeout=600.0, progress=None):
        """Block until the operation is DONE, using the API's own wait method; raise its error if any.

        Each wait call returns when the operation is DONE or after at most about two minutes, so
        this loops until DONE or until timeout seconds have passed (GcpTimeout); no wait call is
        allowed to outlast the time that is left.
        """
        deadline = time.monotonic() + timeout
        path = self.operation_path(operation) + '/wait'
        while operation.get('status') != 'DONE':
            remaining = deadline - time.monotonic()
            if remaining > 0:
                try:
                    operation = self.transport.request('POST', self.url(path), action, deadline=remaining)
                except GcpTimeout:
                    pass   # the time is up; say so below, naming the operation
                else:
                    if progress:
                        progress(operation)
                    continue
            raise GcpTimeout(action, 'operation %s still %s after %ss; it goes on in Google Cloud, rerun to pick it up'
                             % (operation.get('name'), operation.get('status'), timeout), operation=operation)
        if operation.get('error'):
            raise error_from_operation(action, operation)
        return operation

    def run(self, method, path, action, body=None, params=None, timeout=600.0):
        """call() and wait() together: the finished operation, or a GcpError naming the resource."""
        return self.wait(self.call(method, path, action, body=body, params=params), action, timeout=timeout)

    def bulk_insert(self, zone, body, timeout=600.0):
        """One instances.bulkInsert of named VMs (perInstanceProperties), awaited: ([names created], {name: GcpError}).

        As gcloud's bulk create does, the VMs made are read from the zone's operations of the bulk operation's
        operationGroupId: a DONE insert without error is a VM created, an insert with an error is that VM's error, and a
        name with no insert is a shortfall (GcpShortfall). A refusal or a failed bulk operation is every VM's error."""
        names = list(body['perInstanceProperties'])
        action = 'create %d instances in %s (bulkInsert)' % (len(names), zone)
        try:
            operation = self.run('POST', 'zones/%s/instances/bulkInsert' % zone, action, body=body, timeout=timeout)
        except GcpError as exc:
            return [], {name: exc for name in names}
        query = {'filter': 'operationGroupId = "%s"' % operation.get('operationGroupId')}
        group = self.list('zones/%s/operations' % zone, 'list operations of %s' % action, params=query)
        inserts = {resource_name(item.get('targetLink')): item for item in group if item.get('operationType') == 'insert'}
        created, failed = [], {}
        made = sum(1 for insert in inserts.values() if not insert.get('error'))
        for name in names:
            insert = inserts.get(name)
            if insert is not None and insert.get('error'):
                failed[name] = error_from_operation("create instance '%s' in %s" % (name, zone), insert)
            elif insert is not None:
                created.append(name)
            else:
                failed[name] = GcpShortfall("create instance '%s' in %s" % (name, zone), 'bulkInsert operation %s created %d of the %d VMs '
                                            'asked; Compute Engine creates fewer only when the zone lacks capacity or quota'
                                            % (operation.get('name'), made, len(names)))
        return created, failed

    def instances_by_name(self, names):
        """{name: instance} for the named VMs that exist in any zone: one aggregatedList with a name filter."""
        wanted = set(names)
        if not wanted:
            return {}
        # A filter naming every VM keeps the answer small; past a few hundred names the URL would outgrow what the
        # API takes (HTTP 414), so a large group reads every VM of the project and keeps its own.
        query = {'filter': 'name eq "(%s)"' % '|'.join(sorted(wanted))} if len(wanted) <= NAME_FILTER_LIMIT else None
        return {instance['name']: instance for _scope, instance in self.aggregated_list('instances', 'list instances', params=query)
                if instance['name'] in wanted}

    def instance_names_labelled(self, key, value):
        """Names of the project's VMs, in any zone, whose label ``key`` is ``value``: one aggregatedList with a filter."""
        query = {'filter': 'labels.%s = "%s"' % (key, value)}
        found = self.aggregated_list('instances', 'list instances labelled %s=%s' % (key, value), params=query)
        return [instance['name'] for _scope, instance in found]

    def wait_for_instances(self, names, targets, timeout):
        """Poll (one aggregatedList a round, with backoff) until each VM of targets ({name: status}) has its status.

        Returns ({name: instance} of every name, [names still late at the deadline]); a VM not in targets is only read."""
        def late(current):
            return [name for name, status in targets.items() if current.get(name, {}).get('status') != status]
        current, _done = until(lambda: self.instances_by_name(names), lambda current: not late(current), timeout,
                               RetryPolicy(initial_delay=1.0, max_delay=10.0).delays(), sleep=self.transport.sleep)
        return current, late(current)

    def delete(self, path, action, timeout=600.0):
        """Delete and wait; False when there was nothing to delete."""
        try:
            self.run('DELETE', path, action, timeout=timeout)
        except GcpError as exc:
            if exc.not_found:
                return False
            raise
        return True


class ContainerClient(_ApiClient):
    """Container (GKE) v1. Paths are relative to ``projects/PROJECT/locations/``.

    The Container API has no requestId, so a create whose connection dropped may have been
    applied: a retry that then meets 409 looks for the operation the first attempt started.
    """

    SCOPE = 'locations/'

    def __init__(self, transport, project, base_url=CONTAINER_DEFAULT_ENDPOINT):
        super().__init__(transport, project, _join(base_url, 'v1/'))

    def call(self, method, path, action, body=None, params=None):
        return self.transport.request(method, self.url(path), action, params=params, body=body)

    def list(self, path, key, action=None):
        """Every item of a list call (Container lists are not paginated except operations)."""
        return list(self.transport.request('GET', self.url(path), action or 'list %s' % path).get(key, []))

    def create(self, path, body, target, action):
        """POST a create and return its operation.

        Callers create only what they found missing, so a 409 means the resource appeared since:
        most often our own earlier attempt, whose response a dropped connection lost. Then the
        newest operation on that target is the one to await.
        """
        try:
            return self.call('POST', path, action, body=body)
        except GcpError as exc:
            if exc.status != 409:
                raise
            mine = self.newest_operation(path.split('/', 1)[0], target, action)
            if mine is None:
                raise
            return mine

    def newest_operation(self, location, target, action, running=False):
        """The newest operation of ``location`` on ``target`` (``clusters/C`` or ``clusters/C/nodePools/P``), only
        among those not DONE with ``running``, or None."""
        mine = [operation for operation in self.list('%s/operations' % location, 'operations', action)
                if (operation.get('targetLink') or '').endswith('/' + target) and not (running and operation.get('status') == 'DONE')]
        return max(mine, key=lambda operation: operation.get('startTime', ''), default=None)

    def wait(self, operation, action, timeout=1800.0, progress=None, poll=None):
        """Poll the operation (``poll``: ProportionalPoll by default) until DONE; raise its error if any."""
        path = '%s/operations/%s' % (_location_of(operation), operation['name'])

        def read():
            current = self.transport.request('GET', self.url(path), action)
            if progress:
                progress(current)
            return current
        operation, done = until(read, lambda current: current.get('status') == 'DONE', timeout, (poll or ProportionalPoll()).delays(),
                                sleep=self.transport.sleep, value=operation)
        if not done:
            raise GcpTimeout(action, 'operation %s still %s after %ss; it goes on in Google Cloud, rerun to pick it up'
                             % (operation.get('name'), operation.get('status'), timeout), operation=operation)
        if operation.get('error'):
            raise error_from_operation(action, operation)
        return operation

    def run(self, method, path, action, body=None, timeout=1800.0, progress=None, poll=None, target=None, wait=True):
        """One mutating call and its operation, awaited: the finished operation, or a GcpError. With ``wait=False``
        the operation as GKE accepted it, not awaited.

        ``target`` (``clusters/C`` or ``clusters/C/nodePools/P``) marks a create: it goes through
        create(), so a 409 from our own lost first attempt awaits that attempt's operation.

        GKE runs one operation at a time per cluster; another call meanwhile gets 400
        FAILED_PRECONDITION "Operation operation-... is currently ... Please wait and try again once
        it is done." (terraform-provider-google #10366). Then the blocking operation is awaited
        (its own outcome is not ours to report) and the call is sent again, within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                if target is not None:
                    operation = self.create(path, body, target, action)
                else:
                    operation = self.call(method, path, action, body=body)
            except GcpError as exc:
                blocking = busy_operation(exc)
                if blocking is None:
                    raise
                if progress:
                    progress({'name': blocking, 'status': 'RUNNING', 'detail': 'another operation on the cluster; waiting before: %s' % action})
                try:
                    self.wait({'name': blocking, 'location': path.split('/', 1)[0], 'status': 'RUNNING'},
                              'await %s before: %s' % (blocking, action), timeout=max(1.0, deadline - time.monotonic()),
                              progress=progress, poll=poll)
                except GcpTimeout:
                    raise
                except GcpError:
                    pass   # the other operation failed: that is its caller's news, ours is to retry
                continue
            if progress:
                progress(operation)
            if not wait:
                return operation
            return self.wait(operation, action, timeout=max(1.0, deadline - time.monotonic()), progress=progress, poll=poll)


_BUSY = re.compile(r'\bOperation (operation-[\w.-]+) is currently\b', re.I)


def busy_operation(error):
    """The name of the operation that blocks a Container call refused with "currently ...", or None."""
    if error.status != 400:
        return None
    match = _BUSY.search(error.message)
    return match.group(1) if match else None


def _location_of(operation):
    """The location of a Container operation from its selfLink, zone or location field."""
    match = re.search(r'/(?:locations|zones)/([^/]+)/operations/', operation.get('selfLink') or '')
    if match:
        return match.group(1)
    return operation.get('location') or operation.get('zone')


class Clients:
    """The Compute and Container clients for one set of connection settings."""

    def __init__(self, settings, retry=None, pool_size=32):
        self.settings = settings
        self.transport = Transport(load_credentials(settings), retry=retry, pool_size=pool_size)
        self.compute = ComputeClient(self.transport, settings['project'], settings['compute_endpoint'])
        self.container = ContainerClient(self.transport, settings['project'], settings['container_endpoint'])


def clients_from(params=None, environ=None, retry=None):
    """Clients from module options (or a dict of them), falling back to the environment."""
    return Clients(resolve_settings(params, environ), retry=retry)
