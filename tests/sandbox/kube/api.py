"""The HTTPS front end of one stand-in cluster: routing, authentication, discovery, OpenAPI, verbs, watch.

Every request needs ``Authorization: Bearer <any token>`` (none: 401 Unauthorized, as an apiserver
whose authenticators all decline).  Paths are the real ones: ``/version``, ``/api``, ``/apis``,
``/api/v1``, ``/apis/G/V``, ``/openapi/v3[...]``, ``/api/v1/namespaces/NS/pods/NAME[/SUB]``, ...
"""

import base64
import copy
import json
import queue
import time
import traceback
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from . import errors
from .schema import DuplicateKeys, document_hash, parse_body
from .selectors import parse_field_selector, parse_label_selector

AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=%s;as=APIGroupDiscoveryList'
PATCH_TYPES = {'application/json-patch+json': 'json', 'application/merge-patch+json': 'merge',
               'application/strategic-merge-patch+json': 'strategic', 'application/apply-patch+yaml': 'apply'}
BOOKMARK_INTERVAL = 1.0


class KubeRequestHandler(BaseHTTPRequestHandler):
    """One connection; ``self.server.cluster`` is the KubeCluster."""

    protocol_version = 'HTTP/1.1'
    server_version = 'kube-apiserver-standin'
    sys_version = ''

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        if getattr(self.server.cluster, 'verbose', False):
            super().log_message(format, *args)

    def do_GET(self):  # noqa: N802
        self.dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    # ----- plumbing -----
    def dispatch(self):
        cluster = self.server.cluster
        url = urlsplit(self.path)
        self.query = parse_qs(url.query, keep_blank_values=True)
        self.warnings = []
        body = b''
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            body = self.rfile.read(length)
        cluster.requests.append((self.command, self.path, self.headers.get('Content-Type', ''), self.headers.get('Accept', '')))
        try:
            if not self.headers.get('Authorization', '').startswith('Bearer ') or \
                    not self.headers['Authorization'][7:].strip():
                raise errors.unauthorized()
            if 'protobuf' in (self.headers.get('Content-Type') or '') or 'cbor' in (self.headers.get('Content-Type') or ''):
                # The stand-in speaks JSON only; client-go then retries the write as JSON.
                raise errors.unsupported_media_type(self.headers['Content-Type'], ('application/json', 'application/yaml'))
            result = self.route(url.path.rstrip('/') or '/', body)
            if result is not None:
                code, document = result[0], result[1]
                content_type = result[2] if len(result) > 2 else 'application/json'
                self.send_json(code, document, content_type)
        except errors.KubeError as error:
            self.send_json(error.code, error.status, headers=error.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:  # pylint: disable=broad-except
            traceback.print_exc()
            self.send_json(500, errors.internal('stand-in error: %s' % traceback.format_exc().splitlines()[-1]).status)

    def send_json(self, code, document, content_type='application/json', headers=None):
        payload = json.dumps(document).encode() + b'\n'
        self.send_response(code)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(payload)))
        self.send_header('Cache-Control', 'no-cache, private')
        self.send_header('Audit-Id', str(id(self)))
        for text in self.warnings:
            self.send_header('Warning', '299 - %s' % json.dumps(text))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(payload)

    def param(self, name, default=None):
        values = self.query.get(name)
        return values[0] if values else default

    # ----- routing -----
    def route(self, path, body):
        # pylint: disable=too-many-return-statements
        cluster = self.server.cluster
        parts = [part for part in path.split('/') if part]
        if path == '/version':
            return 200, cluster.version_info()
        if path in ('/healthz', '/readyz', '/livez'):
            return self.plain('ok')
        if parts[:2] == ['openapi', 'v2']:
            return self.openapi_v2()
        if parts[:2] == ['openapi', 'v3']:
            return self.openapi(parts[2:])
        if parts[:1] == ['api']:
            if len(parts) == 1:
                return self.discovery_root(core=True)
            if len(parts) == 2:
                return self.resource_list('', parts[1])
            return self.resource_request('', parts[1], parts[2:], body)
        if parts[:1] == ['apis']:
            if len(parts) == 1:
                return self.discovery_root(core=False)
            if len(parts) == 2:
                return self.group_document(parts[1])
            if len(parts) == 3:
                return self.resource_list(parts[1], parts[2])
            return self.resource_request(parts[1], parts[2], parts[3:], body)
        raise errors.KubeError(404, 'NotFound', 'the server could not find the requested resource', {})

    def plain(self, text):
        payload = text.encode()
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain; charset=utf-8')
        self.send_header('Content-Length', str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    # ----- discovery -----
    def aggregated_version(self):
        for entry in (self.headers.get('Accept') or '').split(','):
            entry = entry.replace(' ', '')
            if entry.startswith('application/json') and 'as=APIGroupDiscoveryList' in entry:
                for version in ('v2', 'v2beta1'):
                    if 'v=%s;' % version in entry + ';':
                        return version
        return None

    def discovery_root(self, core):
        cluster = self.server.cluster
        aggregated = self.aggregated_version()
        groups = [(group, versions) for group, versions in cluster.api.groups() if (group == '') == core]
        if aggregated:
            items = []
            for group, versions in groups:
                items.append({'metadata': {'name': group, 'creationTimestamp': None} if group else {'creationTimestamp': None},
                              'versions': [{'version': version, 'resources': self.aggregated_resources(group, version),
                                            'freshness': 'Current'} for version in versions]})
            return (200, {'kind': 'APIGroupDiscoveryList', 'apiVersion': 'apidiscovery.k8s.io/%s' % aggregated,
                          'metadata': {}, 'items': items}, AGGREGATED % aggregated)
        if core:
            return 200, {'kind': 'APIVersions', 'versions': ['v1'],
                         'serverAddressByClientCIDRs': [{'clientCIDR': '0.0.0.0/0', 'serverAddress': cluster.address}]}
        return 200, {'kind': 'APIGroupList', 'apiVersion': 'v1',
                     'groups': [self.group_entry(group, versions) for group, versions in groups]}

    @staticmethod
    def group_entry(group, versions):
        listed = [{'groupVersion': '%s/%s' % (group, version), 'version': version} for version in versions]
        return {'name': group, 'versions': listed, 'preferredVersion': listed[0]}

    def group_document(self, group):
        versions = dict(self.server.cluster.api.groups()).get(group)
        if not versions:
            raise errors.KubeError(404, 'NotFound', 'the server could not find the requested resource', {})
        return 200, dict(self.group_entry(group, versions), kind='APIGroup', apiVersion='v1')

    def served(self, group, version):
        return [resource for resource in self.server.cluster.api.all() if (resource.group, resource.version) == (group, version)]

    def aggregated_resources(self, group, version):
        from .resources import SUBRESOURCE_KINDS, SUBRESOURCE_VERBS  # pylint: disable=import-outside-toplevel
        result = []
        for resource in sorted(self.served(group, version), key=lambda item: item.plural):
            entry = {'resource': resource.plural, 'responseKind': {'group': '', 'version': '', 'kind': resource.kind},
                     'scope': 'Namespaced' if resource.namespaced else 'Cluster', 'singularResource': resource.singular,
                     'verbs': list(resource.verbs)}
            if resource.short_names:
                entry['shortNames'] = list(resource.short_names)
            if resource.categories:
                entry['categories'] = list(resource.categories)
            if resource.subresources:
                entry['subresources'] = []
                for sub in sorted(resource.subresources):
                    kind = SUBRESOURCE_KINDS.get(sub)
                    response = {'group': kind[0], 'version': kind[1], 'kind': kind[2]} if kind and kind[2] != resource.kind \
                        else {'group': '', 'version': '', 'kind': resource.kind}
                    entry['subresources'].append({'subresource': sub, 'responseKind': response,
                                                  'verbs': list(SUBRESOURCE_VERBS.get(sub, ('get', 'patch', 'update')))})
            result.append(entry)
        return result

    def resource_list(self, group, version):
        from .resources import SUBRESOURCE_KINDS, SUBRESOURCE_VERBS  # pylint: disable=import-outside-toplevel
        served = self.served(group, version)
        if not served:
            raise errors.KubeError(404, 'NotFound', 'the server could not find the requested resource', {})
        resources = []
        for resource in sorted(served, key=lambda item: item.plural):
            entry = {'name': resource.plural, 'singularName': resource.singular, 'namespaced': resource.namespaced,
                     'kind': resource.kind, 'verbs': list(resource.verbs)}
            if resource.short_names:
                entry['shortNames'] = list(resource.short_names)
            if resource.categories:
                entry['categories'] = list(resource.categories)
            resources.append(entry)
            for sub in sorted(resource.subresources):
                kind = SUBRESOURCE_KINDS.get(sub)
                sub_entry = {'name': '%s/%s' % (resource.plural, sub), 'singularName': '', 'namespaced': resource.namespaced,
                             'kind': kind[2] if kind else resource.kind,
                             'verbs': list(SUBRESOURCE_VERBS.get(sub, ('get', 'patch', 'update')))}
                if kind and kind[0] != group:
                    sub_entry.update(group=kind[0], version=kind[1])
                resources.append(sub_entry)
        return 200, {'kind': 'APIResourceList', 'apiVersion': 'v1',
                     'groupVersion': '%s/%s' % (group, version) if group else version, 'resources': resources}

    def openapi_v2(self):
        """A definition-less OpenAPI v2 document (protobuf, as kubectl asks for it).

        kubectl falls back to v2 only for a kind that v3 does not describe (a custom resource whose
        CRD is missing); with no definition for the kind its validation passes and kubectl answers
        from discovery, ``no matches for kind``, as it does against a real cluster.
        """
        def field(number, payload):
            return bytes([(number << 3) | 2, len(payload)]) + payload
        version = ('v' + self.server.cluster.version).encode()
        document = field(1, b'2.0') + field(2, field(1, b'Kubernetes') + field(2, version))
        self.send_response(200)
        self.send_header('Content-Type', 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf')
        self.send_header('Content-Length', str(len(document)))
        self.end_headers()
        self.wfile.write(document)

    # ----- OpenAPI v3 -----
    def openapi(self, parts):
        cluster = self.server.cluster
        if not parts:
            paths = {}
            for group, versions in cluster.api.groups():
                for version in versions:
                    key = 'api/%s' % version if not group else 'apis/%s/%s' % (group, version)
                    document = cluster.openapi_document(group, version)
                    paths[key] = {'serverRelativeURL': '/openapi/v3/%s?hash=%s' % (key, document_hash(document))}
            return 200, {'paths': paths}
        if parts[0] == 'api' and len(parts) == 2:
            group, version = '', parts[1]
        elif parts[0] == 'apis' and len(parts) == 3:
            group, version = parts[1], parts[2]
        else:
            raise errors.KubeError(404, 'NotFound', 'the server could not find the requested resource', {})
        if not self.served(group, version):
            raise errors.KubeError(404, 'NotFound', 'the server could not find the requested resource', {})
        return 200, cluster.openapi_document(group, version)

    # ----- resources -----
    def resource_request(self, group, version, parts, body):
        # pylint: disable=too-many-branches,too-many-return-statements
        cluster = self.server.cluster
        namespace = None
        if parts[0] == 'namespaces' and len(parts) >= 3:
            namespace, parts = parts[1], parts[2:]
        resource = cluster.api.find(group, version, parts[0])
        if resource is None or (namespace is not None and not resource.namespaced):
            raise errors.KubeError(404, 'NotFound', 'the server could not find the requested resource', {})
        name = parts[1] if len(parts) > 1 else None
        subresource = parts[2] if len(parts) > 2 else None
        if len(parts) > 3 or subresource and subresource not in resource.subresources:
            raise errors.KubeError(404, 'NotFound', 'the server could not find the requested resource', {})
        if resource.namespaced and namespace is None and name is not None:
            raise errors.KubeError(404, 'NotFound', 'the server could not find the requested resource', {})
        if subresource in ('log', 'exec', 'attach', 'portforward', 'proxy'):
            return self.stream_subresource(resource, namespace, name, subresource)
        command = self.command
        if resource.readonly and command not in ('GET', 'HEAD'):
            raise errors.method_not_allowed()   # a read-only API registers no write routes (KubeCluster.add_readonly)
        if name is None:
            if command == 'GET':
                if self.param('watch') in ('true', '1'):
                    return self.watch(resource, namespace)
                return self.list(resource, namespace)
            if command == 'POST':
                return self.create(resource, namespace, body)
            if command == 'DELETE':
                return self.delete_collection(resource, namespace, body)
            raise errors.method_not_allowed()
        if command == 'GET':
            with cluster.store.lock:
                obj = cluster.store.lookup(resource, namespace, name)
                if obj is None:
                    raise errors.not_found(resource, name)
                obj = copy.deepcopy(obj)
            if self.wants_table():
                return self.table(resource, [obj], {'resourceVersion': obj['metadata']['resourceVersion']})
            return 200, obj
        options = self.write_options()
        if command == 'PUT':
            obj = self.decode(body, resource)
            return 200, cluster.ops.update(obj, resource, namespace, name, subresource, **options)
        if command == 'PATCH':
            content_type = (self.headers.get('Content-Type') or '').split(';')[0].strip()
            patch_type = PATCH_TYPES.get(content_type)
            if patch_type is None:
                raise errors.unsupported_media_type(content_type, list(PATCH_TYPES))
            patch = parse_body(body, 'yaml' if patch_type == 'apply' else 'json')
            if patch_type == 'apply':
                existed = cluster.store.lookup(resource, namespace, name) is not None
                result = cluster.ops.patch(resource, namespace, name, patch_type, patch, subresource,
                                           force=self.param('force') == 'true', **options)
                return (200 if existed else 201), result
            return 200, cluster.ops.patch(resource, namespace, name, patch_type, patch, subresource, **options)
        if command == 'DELETE':
            return self.delete(resource, namespace, name, body)
        raise errors.method_not_allowed()

    def write_options(self):
        dry_run = self.query.get('dryRun') or []
        for value in dry_run:
            if value != 'All':
                raise errors.bad_request('dryRun.meta.k8s.io "%s" is invalid: dryRun: Unsupported value: "%s": supported '
                                         'values: "All"' % (value, value))
        validation = self.param('fieldValidation', 'Warn') or 'Warn'
        if validation not in ('Strict', 'Warn', 'Ignore'):
            raise errors.bad_request('fieldValidation parameter unsupported: %s' % validation)
        return {'dry_run': bool(dry_run), 'field_manager': self.param('fieldManager'), 'validation': validation,
                'warnings': self.warnings, 'user_agent': self.headers.get('User-Agent')}

    def decode(self, body, resource):
        content_type = self.headers.get('Content-Type') or 'application/json'
        obj = parse_body(body, content_type)
        if not isinstance(obj, dict):
            raise errors.bad_request('%s in version "%s" cannot be handled as a %s: the object is not a map'
                                     % (resource.kind, resource.version, resource.kind))
        if not isinstance(obj, DuplicateKeys):
            obj.setdefault('apiVersion', resource.api_version)
            obj.setdefault('kind', resource.kind)
        return obj

    def create(self, resource, namespace, body):
        obj = self.decode(body, resource)
        stored = self.server.cluster.ops.create(obj, resource, namespace, **self.write_options())
        return 201, stored

    def delete_options(self, body):
        options = {}
        if body:
            options = parse_body(body, 'json') or {}
        propagation = self.param('propagationPolicy') or options.get('propagationPolicy') or 'Background'
        if propagation not in ('Background', 'Foreground', 'Orphan'):
            raise errors.bad_request('propagationPolicy "%s" is invalid' % propagation)
        dry_run = bool(self.query.get('dryRun') or options.get('dryRun'))
        return propagation, dry_run, options.get('preconditions') or {}

    def delete(self, resource, namespace, name, body):
        propagation, dry_run, preconditions = self.delete_options(body)
        result = self.server.cluster.store.delete_object(resource, namespace or '', name, propagation, preconditions, dry_run)
        if dry_run or resource.kind == 'Namespace' or result['metadata'].get('deletionTimestamp') and \
                self.server.cluster.store.lookup(resource, namespace or '', name) is not None:
            return (202 if not dry_run and self.server.cluster.store.lookup(resource, namespace or '', name) else 200), result
        # Stores with ReturnDeletedObject answer the object (custom resources, pods, services); the
        # others a Success Status naming it (k8s.io/apiserver registry/generic/registry/store.go).
        if resource.crd or (resource.group, resource.kind) in (('', 'Pod'), ('', 'Service')):
            return 200, result
        return 200, {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Success',
                     'details': {'name': name, 'group': resource.group, 'kind': resource.plural,
                                 'uid': result['metadata'].get('uid')}}

    def delete_collection(self, resource, namespace, body):
        propagation, dry_run = self.delete_options(body)[:2]
        store = self.server.cluster.store
        items = store.select(resource, namespace, parse_label_selector(self.param('labelSelector')),
                             parse_field_selector(self.param('fieldSelector'), resource))
        deleted = []
        for obj in items:
            try:
                deleted.append(store.delete_object(resource, obj['metadata'].get('namespace', ''), obj['metadata']['name'],
                                                   propagation, dry_run=dry_run))
            except errors.KubeError as error:
                if error.code != 404:
                    raise
        return 200, {'kind': resource.list_kind, 'apiVersion': resource.api_version,
                     'metadata': {'resourceVersion': str(store.revision)}, 'items': deleted}

    def list(self, resource, namespace):
        store = self.server.cluster.store
        labels = parse_label_selector(self.param('labelSelector'))
        fields = parse_field_selector(self.param('fieldSelector'), resource)
        with store.lock:
            items = store.select(resource, namespace, labels, fields)
            revision = str(store.revision)
        start = 0
        token = self.param('continue')
        if token:
            try:
                state = json.loads(base64.b64decode(token))
                start, revision = int(state['start']), state['rv']
            except (ValueError, KeyError, TypeError) as error:
                raise errors.bad_request('continue key is not valid: %s' % error) from error
        limit = int(self.param('limit') or 0)
        page = items[start:start + limit] if limit else items[start:]
        metadata = {'resourceVersion': revision}
        if limit and start + limit < len(items):
            metadata['continue'] = base64.b64encode(json.dumps({'start': start + limit, 'rv': revision}).encode()).decode()
            metadata['remainingItemCount'] = len(items) - start - limit
        if self.wants_table():
            return self.table(resource, page, metadata)
        return 200, {'kind': resource.list_kind, 'apiVersion': resource.api_version, 'metadata': metadata, 'items': page}

    def wants_table(self):
        return 'as=Table' in (self.headers.get('Accept') or '').split(',')[0]

    def table(self, resource, items, metadata):
        from .tables import table  # pylint: disable=import-outside-toplevel
        return 200, table(self.server.cluster, resource, items, metadata, self.param('includeObject', 'Metadata'))

    # ----- watch -----
    def watch(self, resource, namespace):
        store = self.server.cluster.store
        labels = parse_label_selector(self.param('labelSelector'))
        fields = parse_field_selector(self.param('fieldSelector'), resource)
        timeout = float(self.param('timeoutSeconds') or 1800)
        bookmarks = self.param('allowWatchBookmarks') == 'true'
        try:
            watcher, initial = store.open_watch(resource, namespace, labels, fields, self.param('resourceVersion'))
        except errors.KubeError as error:
            if error.code != 410:
                raise
            watcher, initial = None, [('ERROR', error.status)]
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Transfer-Encoding', 'chunked')
        self.send_header('Cache-Control', 'no-cache, private')
        self.end_headers()
        deadline = time.monotonic() + timeout
        if watcher is None:
            # A too-old resourceVersion: the real watch answers 200 and one ERROR event with a 410 Expired Status.
            self.chunk({'type': 'ERROR', 'object': initial[0][1]})
            self.wfile.write(b'0\r\n\r\n')
            self.wfile.flush()
            return None
        try:
            for event_type, obj in initial:
                self.chunk({'type': event_type, 'object': obj})
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    event_type, obj = watcher.queue.get(timeout=min(remaining, BOOKMARK_INTERVAL))
                except queue.Empty:
                    if bookmarks:
                        self.chunk({'type': 'BOOKMARK', 'object': {'kind': resource.kind, 'apiVersion': resource.api_version,
                                                                   'metadata': {'resourceVersion': str(store.revision)}}})
                    continue
                self.chunk({'type': event_type, 'object': obj})
            self.wfile.write(b'0\r\n\r\n')
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        finally:
            store.close_watch(watcher)
        return None

    def chunk(self, document):
        payload = json.dumps(document).encode() + b'\n'
        self.wfile.write(b'%x\r\n%s\r\n' % (len(payload), payload))
        self.wfile.flush()

    # ----- pods/log, pods/exec -----
    def stream_subresource(self, resource, namespace, name, subresource):
        cluster = self.server.cluster
        with cluster.store.lock:
            pod = cluster.store.lookup(resource, namespace, name)
            if pod is None:
                raise errors.not_found(resource, name)
            pod = copy.deepcopy(pod)
        handler = cluster.subresource_handlers.get('%s/%s' % (resource.plural, subresource))
        if handler is None:
            # pkg/registry/core/pod/strategy.go (LogLocation / streamLocation) for a pod without a node.
            raise errors.bad_request('pod %s does not have a host assigned' % name)
        handler(self, pod, self.query)
        self.close_connection = True
        return None
