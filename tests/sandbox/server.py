"""The sandbox's HTTP front end: routing, validation, faults, requestId de-duplication, request log,
control endpoints, and the ``Sandbox`` class that runs it in-process or from ``tests/sandbox/run``.

Request flow (``Sandbox.dispatch``): route the URL with the discovery documents -> log it -> draw a
fault (an HTTP error or dropped connection ends here, before any effect) -> validate the body
against the method's schema -> replay a repeated ``requestId`` -> run the handler under the state
lock -> rewrite canonical links to the address the request came to -> save the state file.

Control endpoints (not logged): ``GET /_sandbox/requests``, ``POST /_sandbox/reset``,
``GET|POST|DELETE /_sandbox/faults``, ``GET|POST|DELETE /_sandbox/quotas``, ``GET /_sandbox/state``.
"""

import copy
import hashlib
import json
import socket
import struct
import sys
import threading
import time
import re
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

# Importing the handler modules registers them (see registry.py).
from . import bulk, compute, container, instances, networking, serviceusage, updates  # noqa: F401  pylint: disable=unused-import
from .batch import parse_batch, render_batch
from .discovery import find_route
from .errors import ApiError, request_info, unknown_url
from .faults import HTTP_FAULTS, UNREACHABLE, FaultInjector, FaultRule, unreachable_zone
from .operations import Call
from .quotas import DEFAULT_LIMITS
from .registry import HANDLERS
from .rules import check_request_id
from .store import COMPUTE_LINK, CONTAINER_LINK, Store, strip_internal
from .validation import normalize_body

RESET = object()  # dispatch result: drop the connection without answering
_MUTATING = ('POST', 'PUT', 'PATCH', 'DELETE')


def serve_in_thread(server, name, poll_interval):
    """Run ``server.serve_forever`` in a daemon thread; returns the thread."""
    thread = threading.Thread(target=server.serve_forever, kwargs={'poll_interval': poll_interval}, name=name, daemon=True)
    thread.start()
    return thread


def shut_down(server, thread):
    """Stop and close a server that serve_in_thread runs, and wait for its thread (either may be None)."""
    if server is not None:
        server.shutdown()
        server.server_close()
    if thread is not None:
        thread.join(timeout=5)


class Sandbox:
    """A local Compute Engine + Kubernetes Engine API.  See the package docstring for the interface."""

    def __init__(self, latency=0.0, seed=0, state_file=None, project='sandbox-project', host='127.0.0.1', port=0,
                 verbose=False, wait_timeout=120.0):
        self.latency = float(latency)
        # Container operation type (CREATE_CLUSTER, CREATE_NODE_POOL, ...) -> its own latency (else ``latency``),
        # for durations closer to GKE's (bench/gke.py --cluster-latency / --node-pool-latency); and a Compute API
        # method (compute.instances.bulkInsert, ...) -> the latency of every operation one of its requests starts.
        self.operation_latency = {}
        self.project = project
        self.host = host
        self.requested_port = port
        self.verbose = verbose
        self.wait_timeout = float(wait_timeout)
        self.store = Store(state_file)
        self.faults = FaultInjector(seed)
        self.quotas = {}   # (project or '*', region or '', metric) -> limit; see quotas.py
        self.capacity = {}   # (zone, machine type) -> VMs the zone still takes; see capacity.py
        self._log = []
        self._log_lock = threading.Lock()
        self._server = None
        self._thread = None
        self._stopping = threading.Event()
        # GKE clusters that come alive (tests/sandbox/kube/gke.py GkeClusters), or None.
        self.kube = None

    # lifecycle ---------------------------------------------------------------------------------
    def start(self):
        """Bind (port 0 picks a free one) and serve in a background thread; returns self."""
        self._stopping.clear()
        self._thread = serve_in_thread(self.bind(), 'sandbox-http', poll_interval=0.02)
        return self

    def bind(self):
        """Bind and return the server, for the caller to serve (``tests/sandbox/run`` in its own thread)."""
        self._server = _Server((self.host, self.requested_port), _RequestHandler)
        self._server.sandbox = self
        return self._server

    def stop(self):
        self._stopping.set()
        shut_down(self._server, self._thread)
        self._server = self._thread = None
        if self.kube is not None:
            self.kube.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    @property
    def port(self):
        return self._server.server_address[1]

    @property
    def url(self):
        return 'http://%s:%d' % (self.host, self.port)

    @property
    def compute_url(self):
        return self.url + '/compute/v1/'

    @property
    def container_url(self):
        return self.url + '/'

    # test-facing controls ---------------------------------------------------------------------
    def inject_fault(self, method='*', kind='http_503', rate=None, count=None, retry_after=0, project=None, zone=None):
        rule = FaultRule(method, kind, rate=rate, count=count, retry_after=retry_after, project=project, zone=zone)
        self.faults.add(rule)
        return rule

    def clear_faults(self):
        self.faults.clear()

    def set_quota(self, metric, limit, project=None, region=None):
        """Limit ``metric`` (NETWORKS, NVIDIA_H100_GPUS, ...) for ``project`` (every project when None), in
        ``region`` for regional metrics (every region when None); ``limit=None`` removes the limit."""
        self.quotas[(project or '*', region or '', metric)] = None if limit is None else float(limit)

    def clear_quotas(self):
        """Back to the default limits (quotas.DEFAULT_LIMITS)."""
        self.quotas.clear()

    def set_capacity(self, zone, machine_type, free):
        """Let ``zone`` take only ``free`` more VMs of ``machine_type`` (capacity.py); ``free=None``: unlimited again."""
        if free is None:
            self.capacity.pop((zone, machine_type), None)
        else:
            self.capacity[(zone, machine_type)] = int(free)

    def clear_capacity(self):
        self.capacity.clear()

    def quota_limit(self, project, metric, region=None):
        """The limit in force for ``metric`` (None: unlimited); the most specific setting wins."""
        for key in ((project, region or '', metric), ('*', region or '', metric), (project, '', metric), ('*', '', metric)):
            if key in self.quotas:
                return self.quotas[key]
        return DEFAULT_LIMITS.get(metric)

    def quota_limits(self, project, region=None):
        """Every metric with a limit for ``project`` (and ``region``), as ``{metric: limit}``."""
        metrics = set(DEFAULT_LIMITS) | {metric for (_project, _region, metric) in self.quotas}
        limits = {metric: self.quota_limit(project, metric, region) for metric in metrics}
        return {metric: limit for metric, limit in limits.items() if limit is not None}

    def request_log(self, api_method=None):
        """Copies of the log entries, optionally only those of one discovery method id."""
        with self._log_lock:
            entries = copy.deepcopy(self._log)
        if api_method is not None:
            entries = [entry for entry in entries if entry['api_method'] == api_method]
        return entries

    def reset(self):
        """Forget all resources, operations, requestIds and log entries (faults stay)."""
        with self.store.lock:
            self.store.clear()
            self.store.save()
        with self._log_lock:
            self._log = []

    @property
    def state(self):
        return self.store

    def resources(self, collection, project=None):
        """Stored resources of ``collection`` (``compute.instances``, ``compute.networks``,
        ``compute.subnetworks``, ``compute.firewalls``, ``compute.reservations``,
        ``compute.resourcePolicies``, ``compute.operations``, ``container.clusters``,
        ``container.nodePools``, ``container.operations``) as plain dicts with canonical links."""
        with self.store.lock:
            self.store.advance()
            items = self.store.snapshot(collection)
        if project is not None:
            items = [item for item in items if '/projects/%s/' % project in item.get('selfLink', '')]
        return items

    # request handling -------------------------------------------------------------------------
    def dispatch(self, http_method, raw_path, raw_body, base_url, content_type=None, authorization=None):
        """Answer one request: ``(status, headers, body bytes)`` or ``RESET``.

        NOT SIMULATED: Google's APIs refuse a request without valid credentials (401); the sandbox takes any. It logs
        which credential came (``credential``: the SHA-256 of the ``Authorization`` header, never the header), so a
        test can tell that a token was sent without the log holding it."""
        split = urlsplit(raw_path)
        path = split.path.lstrip('/')
        query = {name: values[-1] for name, values in parse_qs(split.query).items()}
        if path.startswith('_sandbox/') or path == '_sandbox':
            return self._control(http_method, path, raw_body)
        if http_method == 'POST' and (path == 'batch' or path.startswith('batch/')):
            return self._batch(content_type, raw_body, base_url, authorization)
        entry = {'method': http_method, 'path': raw_path, 'status': None, 'body': None, 'api_method': None, 'fault': None,
                 'credential': hashlib.sha256(authorization.encode()).hexdigest() if authorization else None}
        headers = {}
        route = None
        try:
            try:
                body = json.loads(raw_body) if raw_body.strip() else None
            except ValueError:
                body = None
                raise ApiError(400, 'parseError', 'Invalid JSON payload received. Unexpected token.') from None
            finally:
                entry['body'] = body if body is not None else (raw_body.decode('utf-8', 'replace') or None)
            route, params = find_route(http_method, path)
            if route is None:
                if params == {}:
                    raise ApiError(405, 'methodNotAllowed', 'Method %s is not allowed for %s.' % (http_method, '/' + path))
                raise unknown_url(http_method, '/' + path)
            entry['api_method'] = route.method_id
            returns_operation = http_method in _MUTATING
            fault = self.faults.draw(route.method_id, returns_operation, params)
            if fault is not None:
                entry['fault'] = fault.kind
                if fault.kind == 'reset':
                    with self._log_lock:
                        self._log.append(entry)
                    return RESET
                if fault.kind in HTTP_FAULTS:
                    raise self._http_fault(fault, route.method_id, params)
                if fault.kind == UNREACHABLE and not route.method_id.endswith('.aggregatedList'):
                    raise ApiError(*unreachable_zone(fault, route.method_id, query, None))
            handler = HANDLERS.get(route.method_id)
            if handler is None:
                raise ApiError(501, 'notImplemented', 'Method %s is not implemented by the sandbox.' % route.method_id)
            _check_parameters(route, params, query)
            if route.request_ref:
                body = normalize_body(route.document, route.request_ref, body if body is not None else {})
            call = Call(self, route, params, query, body, fault)
            payload = self._call(handler, call)
            if fault is not None and fault.kind == UNREACHABLE:
                payload = unreachable_zone(fault, route.method_id, query, payload)
                if isinstance(payload, tuple):
                    raise ApiError(*payload)
            status = 200
        except ApiError as error:
            if route is not None and route.api == 'container' and not error.details:
                # Kubernetes Engine errors carry a google.rpc.RequestInfo detail (errors.py).
                error.details = [request_info(self.store.new_serial())]
            status, payload, headers = error.code, error.to_json(), error.headers
        except Exception as error:  # pylint: disable=broad-exception-caught
            # A sandbox bug must show up as a 500 the client can see, not as a dropped connection.
            traceback.print_exc()
            status, payload = 500, ApiError(500, 'backendError', 'Sandbox internal error: %r' % error).to_json()
        entry['status'] = status
        with self._log_lock:
            self._log.append(entry)
        if status == 200 and query.get('fields'):
            payload = partial_response(payload, query['fields'])
        return status, headers, self._render(payload, route, base_url, pretty=query.get('prettyPrint', 'true').lower() != 'false')

    def _batch(self, content_type, raw_body, base_url, authorization=None):
        """Google's multipart batch: every part is dispatched (and logged) as its own request."""
        try:
            parts = parse_batch(content_type, raw_body)
        except (ValueError, IndexError):
            error = ApiError(400, 'badRequest', 'Failed to parse batch request')
            return error.code, {}, json.dumps(error.to_json()).encode()
        answers = []
        for content_id, method, path, body in parts:
            answer = self.dispatch(method, path, body, base_url, authorization=authorization)   # the batch's own credential
            if answer is RESET:
                return RESET  # a dropped connection drops the whole batch
            answers.append((content_id,) + answer)
        batch_type, payload = render_batch(answers)
        return 200, {'Content-Type': batch_type}, payload

    def _call(self, handler, call):
        if call.method_id.endswith('Operations.wait'):
            self._block_until_done(call)
        request_id = call.query.get('requestId') if call.route.api == 'compute' and call.route.http_method in _MUTATING else None
        with self.store.lock:
            self.store.advance()
            if request_id:
                # A repeated requestId answers with the first operation, finished or not; nothing runs again.
                known = self.store.request_ids.get('%s/%s' % (call.project, request_id))
                operation = self.store.get('compute.operations', known) if known else None
                if operation is not None:
                    return copy.deepcopy(operation)
            result = handler(call)
            if self.kube is not None:
                self.kube.sync(self.store)   # clusters whose operation is DONE get their API endpoint; pools drive Nodes
            if request_id and isinstance(result, dict) and result.get('kind') == 'compute#operation':
                self.store.request_ids['%s/%s' % (call.project, request_id)] = result['_key']
            payload = copy.deepcopy(result)
            if self.store.dirty:
                self.store.save()
        return payload

    def _block_until_done(self, call):
        """``operations.wait``: block (without the lock) until the operation ends or the wait cap passes."""
        with self.store.lock:
            self.store.advance()
            try:
                deadline = compute.operation_wait_deadline(call, self.wait_timeout)
            except ApiError:
                return
        while deadline is not None and not self._stopping.is_set():
            remaining = deadline - time.time()
            if remaining <= 0:
                break
            self._stopping.wait(min(remaining, 0.05))

    @staticmethod
    def _http_fault(fault, method_id=None, params=None):
        status = HTTP_FAULTS[fault.kind]
        permission = method_id or 'compute'
        if permission.endswith('.aggregatedList'):   # the permission an aggregated list needs is the list one
            permission = permission[:-len('aggregatedList')] + 'list'
        messages = {403: "Required '%s' permission for 'projects/%s'" % (permission, (params or {}).get('project')),
                    429: 'Rate Limit Exceeded', 500: 'Internal Error', 503: 'The service is currently unavailable.'}
        reasons = {403: 'forbidden', 429: 'rateLimitExceeded', 500: 'backendError', 503: 'backendError'}
        headers = {'Retry-After': str(fault.retry_after)} if status == 429 else {}
        return ApiError(status, reasons[status], messages[status], headers=headers)

    @staticmethod
    def _render(payload, route, base_url, pretty=True):
        text = json.dumps(strip_internal(payload), indent=1 if pretty else None, separators=None if pretty else (',', ':'))
        compute_version = route.version if route is not None and route.api == 'compute' else 'v1'
        text = text.replace(COMPUTE_LINK, '%s/compute/%s/' % (base_url, compute_version))
        container_version = route.version if route is not None and route.api == 'container' else 'v1'
        text = text.replace(CONTAINER_LINK, '%s/%s/' % (base_url, container_version))
        return text.encode('utf-8')

    # control endpoints ------------------------------------------------------------------------
    def _control(self, http_method, path, raw_body):
        action = (http_method, path.rstrip('/'))
        try:
            if action == ('GET', '_sandbox/requests'):
                return self._json(200, self.request_log())
            if action == ('POST', '_sandbox/reset'):
                self.reset()
                return self._json(200, {'reset': True})
            if action == ('GET', '_sandbox/faults'):
                return self._json(200, [rule.to_json() for rule in self.faults.rules])
            if action == ('POST', '_sandbox/faults'):
                spec = json.loads(raw_body or b'{}')
                rule = self.inject_fault(spec.get('method', '*'), spec.get('kind', 'http_503'), rate=spec.get('rate'),
                                         count=spec.get('count'), retry_after=spec.get('retry_after', 0),
                                         project=spec.get('project'), zone=spec.get('zone'))
                return self._json(200, rule.to_json())
            if action == ('DELETE', '_sandbox/faults'):
                self.clear_faults()
                return self._json(200, {'cleared': True})
            if action == ('GET', '_sandbox/quotas'):
                return self._json(200, [{'project': project, 'region': region or None, 'metric': metric, 'limit': limit}
                                        for (project, region, metric), limit in sorted(self.quotas.items())])
            if action == ('POST', '_sandbox/quotas'):
                spec = json.loads(raw_body or b'{}')
                self.set_quota(spec['metric'], spec.get('limit'), project=spec.get('project'), region=spec.get('region'))
                return self._json(200, spec)
            if action == ('DELETE', '_sandbox/quotas'):
                self.clear_quotas()
                return self._json(200, {'cleared': True})
            if action == ('GET', '_sandbox/state'):
                with self.store.lock:
                    self.store.advance()
                    return self._json(200, strip_internal(self.store.collections))
        except (ValueError, TypeError, KeyError) as error:
            return self._json(400, {'error': {'code': 400, 'message': str(error), 'status': 'INVALID_ARGUMENT'}})
        return self._json(404, unknown_url(http_method, '/' + path).to_json())

    @staticmethod
    def _json(status, payload):
        return status, {}, json.dumps(payload, indent=1).encode('utf-8')


def _check_parameters(route, params, query):
    """Path and query parameters against the method's discovery ``pattern`` (project, zone, resource names),
    and Compute's ``requestId`` (rules.check_request_id).  A pattern mismatch is refused before anything runs:
    400 ``invalidParameter``, "Invalid value 'Camlistore Instance'. Values must match the following regular
    expression: '...'" (the project pattern; response quoted in perkeep/perkeep#571)."""
    for name, value in params.items():
        pattern = route.parameters.get(name, {}).get('pattern')
        if pattern and value and value != '-' and not re.fullmatch(pattern, unquote(value)):
            raise ApiError(400, 'invalidParameter', "Invalid value '%s'. Values must match the following regular expression: '%s'"
                           % (unquote(value), pattern))
    if route.api == 'compute' and 'requestId' in route.parameters:
        check_request_id(query.get('requestId'))


def partial_response(payload, fields):
    """The ``fields`` system parameter of Google APIs (partial response): ``a,b/c,d(e,f)``, with ``*``
    for every key of a map (``items/*/instances(name,zone)``); unknown fields select nothing."""
    def parse(text, position, tree):
        while position < len(text):
            end = position
            while end < len(text) and text[end] not in ',()':
                end += 1
            parts = text[position:end].strip().split('/')
            node = tree
            for part in parts[:-1]:
                node = node.setdefault(part, {}) if node.get(part) is not True else {}
            position = end
            if position < len(text) and text[position] == '(':
                sub = node[parts[-1]] = node.get(parts[-1]) if isinstance(node.get(parts[-1]), dict) else {}
                position = parse(text, position + 1, sub) + 1   # past the closing parenthesis
            else:
                node[parts[-1]] = True
            if position < len(text) and text[position] == ')':
                return position
            position += 1   # past the comma
        return position

    def select(value, tree):
        if tree is True:
            return value
        if isinstance(value, list):
            return [select(item, tree) for item in value]
        if not isinstance(value, dict):
            return value
        if '*' in tree:
            return {key: select(item, tree['*']) for key, item in value.items()}
        return {key: select(value[key], sub) for key, sub in tree.items() if key in value}

    tree = {}
    parse(fields.replace(' ', ''), 0, tree)
    return select(payload, tree)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    sandbox = None

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # clients hanging up (or faults dropping connections) are not errors
        super().handle_error(request, client_address)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'  # keep-alive; every answer carries Content-Length
    server_version = 'ESF'
    sys_version = ''
    scheme = 'http'  # proxy.py serves the same handler over TLS as https://compute.googleapis.com

    def _serve(self):
        sandbox = self.server.sandbox
        body = self._read_body()
        host = self.headers.get('Host') or '%s:%d' % self.server.server_address[:2]
        result = sandbox.dispatch(self.command, self.path, body, self.scheme + '://' + host, self.headers.get('Content-Type'),
                                  self.headers.get('Authorization'))
        if result is RESET:
            self._drop_connection()
            return
        status, headers, payload = result
        self.send_response(status)
        self.send_header('Content-Type', headers.pop('Content-Type', 'application/json; charset=UTF-8'))
        self.send_header('Content-Length', str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(payload)

    def _read_body(self):
        if self.headers.get('Transfer-Encoding', '').lower() == 'chunked':
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b';')[0].strip() or b'0', 16)
                if size == 0:
                    self.rfile.readline()
                    return b''.join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(length) if length else b''

    def _drop_connection(self):
        """Close with RST (SO_LINGER 0) so the client sees a reset, not a clean end of stream."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.connection.close()

    def finish(self):
        try:
            super().finish()
        except (OSError, ValueError):
            pass  # the connection was dropped on purpose

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        if self.server.sandbox.verbose:
            sys.stderr.write('%s - %s\n' % (self.address_string(), format % args))
