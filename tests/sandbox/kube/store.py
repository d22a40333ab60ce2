"""One cluster's objects: create/get/list/update/delete, resourceVersion, generation, watch, GC.

Rules kept as the real API keeps them (k8s.io/apiserver registry/generic/registry/store.go and the
built-in strategies):
- one resourceVersion counter per cluster (etcd's revision), bumped by every write; a write that
  changes nothing (same object after the patch/update) is not a write: resourceVersion, managedFields
  and their timestamps stay;
- metadata.generation starts at 1 and is bumped when anything but metadata and status changes, for
  the kinds whose strategy keeps it (the workload kinds, CRDs and custom resources; not ConfigMaps,
  Namespaces, Nodes, Services);
- kinds with a status subresource ignore status on main-resource writes and take only status on
  ``/status`` writes;
- delete: an object with finalizers gets deletionTimestamp and stays; ``propagationPolicy``
  Background/Foreground delete dependents (ownerReferences by uid), Orphan removes the reference;
  the real garbage collector is asynchronous, the stand-in collects synchronously (Foreground: the
  owner shows a ``foregroundDeletion`` finalizer in a MODIFIED event, then goes after its dependents);
- deleting a Namespace sets status.phase Terminating, then (after ``namespace_delete_delay``
  seconds, the stand-in's namespace controller) deletes its contents and the namespace;
- deleting a CRD deletes its custom resources, then the CRD.
"""

import collections
import copy
import datetime
import json
import queue
import threading
import uuid

from . import errors

GENERATION_EXCLUDED = {'ConfigMap', 'Secret', 'Namespace', 'Node', 'Service', 'Endpoints', 'Event', 'ServiceAccount',
                       'PersistentVolume', 'PersistentVolumeClaim', 'LimitRange', 'ResourceQuota', 'EndpointSlice',
                       'Lease', 'ControllerRevision', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'}
INITIAL_NAMESPACES = ('default', 'kube-system', 'kube-public', 'kube-node-lease')


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def key_of(resource, namespace, name):
    return (resource.group, resource.plural, namespace or '', name)


def keeps_generation(resource):
    return resource.kind not in GENERATION_EXCLUDED


def spec_part(obj):
    """What generation tracks: everything but metadata, status, apiVersion and kind."""
    return {key: value for key, value in obj.items() if key not in ('metadata', 'status', 'apiVersion', 'kind')}


class Watcher:
    """One open watch: the events that match its resource, namespace and selectors, queued."""

    def __init__(self, resource, namespace, label_requirements, field_requirements):
        self.resource, self.namespace = resource, namespace
        self.labels, self.fields = label_requirements, field_requirements
        self.queue = queue.Queue()

    def wants(self, resource, obj):
        from .selectors import fields_match, labels_match  # pylint: disable=import-outside-toplevel
        if (resource.group, resource.plural) != (self.resource.group, self.resource.plural):
            return False
        if self.namespace and obj['metadata'].get('namespace') != self.namespace:
            return False
        return labels_match(self.labels, obj['metadata'].get('labels')) and fields_match(self.fields, obj)


class KubeStore:
    """See the module docstring.  ``cluster`` gives the registry (``cluster.api``) and schemas."""

    def __init__(self, cluster, history=2000, namespace_delete_delay=0.3):
        self.cluster = cluster
        self.lock = threading.RLock()
        self.objects = {}
        self.revision = 100
        self.history = collections.deque(maxlen=history)   # (rv, type, resource, obj)
        self.watchers = set()
        self.subscribers = []
        self.namespace_delete_delay = namespace_delete_delay

    def seed(self):
        """The namespaces every cluster starts with."""
        for name in INITIAL_NAMESPACES:
            self.create({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': name}})

    # ----- system calls (controllers) -----
    def resource(self, ref):
        return self.cluster.api.find_ref(ref)

    def get(self, ref, name, namespace=None):
        resource = self.resource(ref)
        with self.lock:
            obj = self.objects.get(key_of(resource, namespace if resource.namespaced else '', name))
            return copy.deepcopy(obj) if obj else None

    def list(self, ref, namespace=None, label_selector=None, field_selector=None):
        from .selectors import parse_field_selector, parse_label_selector  # pylint: disable=import-outside-toplevel
        resource = self.resource(ref)
        return self.select(resource, namespace, parse_label_selector(label_selector),
                           parse_field_selector(field_selector, resource))

    def create(self, obj, **options):
        return self.cluster.ops.create(obj, **options)

    def update(self, obj, **options):
        return self.cluster.ops.update(obj, **options)

    def update_status(self, obj, **options):
        return self.cluster.ops.update(obj, subresource='status', **options)

    def delete(self, ref, name, namespace=None, propagation='Background'):
        resource = self.resource(ref)
        try:
            return self.delete_object(resource, namespace if resource.namespaced else '', name, propagation)
        except errors.KubeError as error:
            if error.code == 404:
                return None
            raise

    def subscribe(self):
        events = queue.Queue()
        with self.lock:
            self.subscribers.append(events)
        return events

    def unsubscribe(self, events):
        with self.lock:
            if events in self.subscribers:
                self.subscribers.remove(events)

    # ----- reads -----
    def lookup(self, resource, namespace, name):
        """The stored object (not a copy; callers hold ``lock``) or None."""
        return self.objects.get(key_of(resource, namespace if resource.namespaced else '', name))

    def select(self, resource, namespace, label_requirements, field_requirements):
        from .selectors import fields_match, labels_match  # pylint: disable=import-outside-toplevel
        with self.lock:
            found = []
            for (group, plural, obj_namespace, _name), obj in sorted(self.objects.items()):
                if (group, plural) != (resource.group, resource.plural):
                    continue
                if namespace and obj_namespace != namespace:
                    continue
                if labels_match(label_requirements, obj['metadata'].get('labels')) and fields_match(field_requirements, obj):
                    found.append(copy.deepcopy(obj))
            return found

    def namespace_phase(self, name):
        """'Active', 'Terminating', or None where no such namespace exists."""
        with self.lock:
            namespace = self.objects.get(('', 'namespaces', '', name))
            return (namespace.get('status') or {}).get('phase', 'Active') if namespace else None

    # ----- writes (callers validated already; these only commit) -----
    def next_revision(self):
        self.revision += 1
        return str(self.revision)

    def commit_create(self, resource, obj):
        with self.lock:
            metadata = obj['metadata']
            key = key_of(resource, metadata.get('namespace', ''), metadata['name'])
            if key in self.objects:
                raise errors.already_exists(resource, metadata['name'])
            metadata['resourceVersion'] = self.next_revision()
            self.objects[key] = obj
            self._emit('ADDED', resource, obj)
            return copy.deepcopy(obj)

    def commit_update(self, resource, obj):
        with self.lock:
            metadata = obj['metadata']
            metadata['resourceVersion'] = self.next_revision()
            self.objects[key_of(resource, metadata.get('namespace', ''), metadata['name'])] = obj
            self._emit('MODIFIED', resource, obj)
            return copy.deepcopy(obj)

    def _remove(self, resource, obj):
        metadata = obj['metadata']
        self.objects.pop(key_of(resource, metadata.get('namespace', ''), metadata['name']), None)
        gone = copy.deepcopy(obj)
        gone['metadata']['resourceVersion'] = self.next_revision()
        self._emit('DELETED', resource, gone)
        return gone

    def delete_object(self, resource, namespace, name, propagation='Background', preconditions=None, dry_run=False):
        """Delete one object as the real registry does; returns the object as the DELETE answers it."""
        with self.lock:
            obj = self.lookup(resource, namespace, name)
            if obj is None:
                raise errors.not_found(resource, name)
            preconditions = preconditions or {}
            if preconditions.get('uid') and preconditions['uid'] != obj['metadata']['uid']:
                raise errors.conflict(resource, name, 'Precondition failed: UID in precondition: %s, UID in object meta: %s'
                                      % (preconditions['uid'], obj['metadata']['uid']))
            if preconditions.get('resourceVersion') and preconditions['resourceVersion'] != obj['metadata']['resourceVersion']:
                raise errors.conflict(resource, name, 'Precondition failed: ResourceVersion in precondition: %s, '
                                      'ResourceVersion in object meta: %s'
                                      % (preconditions['resourceVersion'], obj['metadata']['resourceVersion']))
            if dry_run:
                answer = copy.deepcopy(obj)
                answer['metadata'].setdefault('deletionTimestamp', now_rfc3339())
                return answer
            if resource.kind == 'Namespace' and resource.group == '':
                return self._terminate_namespace(resource, obj)
            if obj['metadata'].get('finalizers'):
                if not obj['metadata'].get('deletionTimestamp'):
                    updated = copy.deepcopy(obj)
                    updated['metadata']['deletionTimestamp'] = now_rfc3339()
                    updated['metadata']['deletionGracePeriodSeconds'] = 0
                    return self.commit_update(resource, updated)
                return copy.deepcopy(obj)
            if propagation == 'Orphan':
                self._orphan_dependents(obj)
            elif propagation == 'Foreground' and self._dependents(obj):
                marked = copy.deepcopy(obj)
                marked['metadata']['deletionTimestamp'] = now_rfc3339()
                marked['metadata']['finalizers'] = ['foregroundDeletion']
                self.commit_update(resource, marked)
                self._delete_dependents(obj, 'Foreground')
                return self._remove(resource, self.lookup(resource, namespace, name))
            if resource.kind == 'CustomResourceDefinition' and resource.group == 'apiextensions.k8s.io':
                self.cluster.crds.removed(obj)
            gone = self._remove(resource, obj)
            self._delete_dependents(obj, 'Background')
            return gone

    def _dependents(self, owner):
        uid = owner['metadata']['uid']
        return [(self._resource_of(group, plural), obj)
                for (group, plural, _namespace, _name), obj in list(self.objects.items())
                if any(ref.get('uid') == uid for ref in obj['metadata'].get('ownerReferences') or [])]

    def _resource_of(self, group, plural):
        return self.cluster.api.versions_of(group, plural)[0]

    def _delete_dependents(self, owner, propagation):
        for resource, obj in self._dependents(owner):
            if self.lookup(resource, obj['metadata'].get('namespace', ''), obj['metadata']['name']) is not None:
                self.delete_object(resource, obj['metadata'].get('namespace', ''), obj['metadata']['name'], propagation)

    def _orphan_dependents(self, owner):
        uid = owner['metadata']['uid']
        for resource, obj in self._dependents(owner):
            updated = copy.deepcopy(obj)
            updated['metadata']['ownerReferences'] = [ref for ref in obj['metadata']['ownerReferences'] if ref.get('uid') != uid]
            if not updated['metadata']['ownerReferences']:
                del updated['metadata']['ownerReferences']
            self.commit_update(resource, updated)

    def _terminate_namespace(self, resource, namespace):
        if (namespace.get('status') or {}).get('phase') == 'Terminating':
            return copy.deepcopy(namespace)
        updated = copy.deepcopy(namespace)
        updated['metadata']['deletionTimestamp'] = now_rfc3339()
        updated['status'] = {'phase': 'Terminating'}
        answer = self.commit_update(resource, updated)
        timer = threading.Timer(self.namespace_delete_delay, self._finish_namespace, args=(resource, namespace['metadata']['name']))
        timer.daemon = True
        timer.start()
        return answer

    def _finish_namespace(self, resource, name):
        """The stand-in's namespace controller: delete everything in the namespace, then the namespace."""
        with self.lock:
            for (group, plural, obj_namespace, obj_name) in list(self.objects):
                if obj_namespace == name and (group, plural, obj_namespace, obj_name) in self.objects:
                    contained = self._resource_of(group, plural)
                    self.objects[(group, plural, obj_namespace, obj_name)]['metadata'].pop('finalizers', None)
                    self.delete_object(contained, obj_namespace, obj_name, 'Background')
            namespace = self.lookup(resource, '', name)
            if namespace is not None:
                self._remove(resource, namespace)

    # ----- watch -----
    def _emit(self, event_type, resource, obj):
        snapshot = copy.deepcopy(obj)
        self.history.append((int(obj['metadata']['resourceVersion']), event_type, resource, snapshot))
        for watcher in list(self.watchers):
            if watcher.wants(resource, snapshot):
                watcher.queue.put((event_type, snapshot))
        for events in self.subscribers:
            events.put((event_type, snapshot))

    def open_watch(self, resource, namespace, label_requirements, field_requirements, resource_version):
        """Register a watcher; returns (watcher, initial events).  410 Expired for a too-old resourceVersion."""
        watcher = Watcher(resource, namespace, label_requirements, field_requirements)
        with self.lock:
            if resource_version in (None, '', '0'):
                initial = [('ADDED', obj) for obj in self.select(resource, namespace, label_requirements, field_requirements)]
            else:
                try:
                    since = int(resource_version)
                except ValueError as error:
                    raise errors.bad_request('invalid resource version: %s' % resource_version) from error
                oldest = self.history[0][0] if self.history else self.revision
                if since < oldest - 1 and len(self.history) == self.history.maxlen:
                    raise errors.expired('too old resource version: %d (%d)' % (since, oldest - 1))
                initial = [(event_type, copy.deepcopy(obj)) for rv, event_type, event_resource, obj in self.history
                           if rv > since and watcher.wants(event_resource, obj)]
            self.watchers.add(watcher)
            return watcher, initial

    def close_watch(self, watcher):
        with self.lock:
            self.watchers.discard(watcher)

    def dump(self):
        with self.lock:
            return json.loads(json.dumps(list(self.objects.values())))


def new_uid():
    return str(uuid.uuid4())
