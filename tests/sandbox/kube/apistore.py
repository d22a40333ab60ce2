"""The simulated controllers' way to the real API server: plain REST as the cluster's admin.

``ApiStore(plane)`` keeps the interface the simulations were written against (``get``, ``list``,
``create``, ``update``, ``update_status``, ``delete``, ``resource``); every call is one request to the
real kube-apiserver, so what it refuses comes back as ``KubeError`` with its own Status body and code.
A ``ref`` is kubectl's ``resource.group`` name ('pods', 'daemonsets.apps',
'networks.networking.gke.io'); it resolves through the server's discovery (the group's preferred
version), read again when a ref is not found (a CRD established since).
"""

import datetime
import json
import threading
import urllib.error
import urllib.parse

from .errors import KubeError

FIELD_MANAGER = 'aiinfra-sandbox-simulation'


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


class Resource:  # pylint: disable=too-few-public-methods
    def __init__(self, group, version, plural, kind, namespaced):
        self.group, self.version, self.plural, self.kind, self.namespaced = group, version, plural, kind, namespaced

    @property
    def api_version(self):
        return '%s/%s' % (self.group, self.version) if self.group else self.version

    def path(self, namespace=None, name=None, subresource=None):
        base = '/apis/%s/%s' % (self.group, self.version) if self.group else '/api/%s' % self.version
        if self.namespaced and namespace:
            base += '/namespaces/%s' % urllib.parse.quote(namespace)
        base += '/' + self.plural
        if name:
            base += '/' + urllib.parse.quote(name)
        if subresource:
            base += '/' + subresource
        return base


class ApiStore:
    """See the module docstring."""

    def __init__(self, plane):
        self.plane = plane
        self._resources = {}
        self._lock = threading.Lock()

    # discovery ---------------------------------------------------------------------------------
    def _discover(self):
        found = {}
        core = json.loads(self.plane.request('GET', '/api/v1'))
        groups = [('', 'v1', core)]
        for group in json.loads(self.plane.request('GET', '/apis'))['groups']:
            # The preferred version first; a resource only an other version serves (OLM's v1alpha1 InstallPlan
            # beside its v1 OperatorGroup) from that one.
            preferred = group['preferredVersion']['version']
            for version in [preferred] + [item['version'] for item in group['versions'] if item['version'] != preferred]:
                try:
                    groups.append((group['name'], version, json.loads(self.plane.request('GET', '/apis/%s/%s' % (group['name'], version)))))
                except urllib.error.HTTPError:   # a group being removed or not yet served
                    continue
        for group, version, listing in groups:
            for item in listing.get('resources', []):
                if '/' in item['name']:
                    continue
                ref = item['name'] + ('.' + group if group else '')
                found.setdefault(ref, Resource(group, version, item['name'], item['kind'], item['namespaced']))
        with self._lock:
            self._resources = found

    def resource(self, ref):
        """The preferred version's Resource for ``ref``; KeyError when the server does not serve it."""
        with self._lock:
            resource = self._resources.get(ref)
        if resource is None:
            self._discover()
            with self._lock:
                resource = self._resources.get(ref)
        if resource is None:
            raise KeyError('no resource %r is served' % ref)
        return resource

    def _of(self, obj):
        group, _slash, version = obj['apiVersion'].rpartition('/')
        del version
        for _attempt in range(2):
            with self._lock:
                for resource in self._resources.values():
                    if resource.group == group and resource.kind == obj['kind']:
                        return resource
            self._discover()
        raise KeyError('no resource serves %s %s' % (obj['apiVersion'], obj['kind']))

    # requests ----------------------------------------------------------------------------------
    def _call(self, method, path, body=None, content_type='application/json'):
        try:
            answer = self.plane.request(method, path, None if body is None else json.dumps(body), content_type=content_type)
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                status = json.loads(raw)
            except ValueError:
                status = {'message': raw.decode(errors='replace'), 'reason': ''}
            refusal = KubeError(error.code, status.get('reason', ''), status.get('message', ''), status.get('details'))
            refusal.status = status
            raise refusal from None
        return json.loads(answer) if answer else None

    def get(self, ref, name, namespace=None):
        resource = self.resource(ref)
        try:
            return self._call('GET', resource.path(namespace, name))
        except KubeError as error:
            if error.code == 404:
                return None
            raise

    def list(self, ref, namespace=None, label_selector=None, field_selector=None):
        resource = self.resource(ref)
        query = {key: value for key, value in (('labelSelector', label_selector), ('fieldSelector', field_selector)) if value}
        path = resource.path(namespace) + ('?' + urllib.parse.urlencode(query) if query else '')
        answer = self._call('GET', path)
        items = answer.get('items') or []
        for item in items:   # list items carry no apiVersion and kind of their own
            item.setdefault('apiVersion', resource.api_version)
            item.setdefault('kind', resource.kind)
        return items

    def create(self, obj, field_manager=FIELD_MANAGER):
        resource = self._of(obj)
        namespace = obj['metadata'].get('namespace') or ('default' if resource.namespaced else None)
        return self._call('POST', resource.path(namespace) + '?fieldManager=' + field_manager, obj)

    def update(self, obj, field_manager=FIELD_MANAGER):
        resource = self._of(obj)
        return self._call('PUT', resource.path(obj['metadata'].get('namespace'), obj['metadata']['name']) +
                          '?fieldManager=' + field_manager, obj)

    def update_status(self, obj, field_manager=FIELD_MANAGER):
        resource = self._of(obj)
        return self._call('PUT', resource.path(obj['metadata'].get('namespace'), obj['metadata']['name'], 'status') +
                          '?fieldManager=' + field_manager, obj)

    def patch_status(self, obj, status, field_manager=FIELD_MANAGER):
        """A merge patch of ``.status`` only: the fields named change, the others (kwok's) stay."""
        resource = self._of(obj)
        return self._call('PATCH', resource.path(obj['metadata'].get('namespace'), obj['metadata']['name'], 'status') +
                          '?fieldManager=' + field_manager, {'status': status}, content_type='application/merge-patch+json')

    def delete(self, ref, name, namespace=None, propagation='Background'):
        resource = self.resource(ref)
        try:
            return self._call('DELETE', resource.path(namespace, name), {'kind': 'DeleteOptions', 'apiVersion': 'v1',
                                                                         'propagationPolicy': propagation})
        except KubeError as error:
            if error.code == 404:
                return None
            raise
