"""In-memory state of the sandbox: resources, long-running operations, requestIds, and the state file.

Resources live in ``collections[collection][key]`` where ``collection`` names the kind the way the
discovery method ids do (``compute.instances``, ``compute.networks``, ``container.clusters``, ...)
and ``key`` is the resource's relative path (``projects/p/zones/z/instances/vm-1``).  Links inside
resources are stored in canonical form (``https://www.googleapis.com/compute/v1/...``,
``https://container.googleapis.com/v1/...``); ``server.py`` rewrites them to the address a request
came to when it answers.

Operations are stored in the collections ``compute.operations`` and ``container.operations``.  An
operation carries data-only effects (``_effects``) that are applied when its latency has passed, so a
saved state file holds running operations faithfully and the sandbox needs no timer thread: every
request first calls ``advance()``.
"""

import copy
import json
import os
import threading
import time

COMPUTE_LINK = 'https://www.googleapis.com/compute/v1/'
CONTAINER_LINK = 'https://container.googleapis.com/v1/'


def rfc3339(timestamp=None):
    """Timestamps the way Compute writes them (millisecond precision, explicit offset)."""
    timestamp = time.time() if timestamp is None else timestamp
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(timestamp)) + '.%03d+00:00' % int((timestamp % 1) * 1000)


class Store:
    """All mutable state behind one re-entrant lock (``store.lock``)."""

    def __init__(self, state_file=None):
        self.lock = threading.RLock()
        self.state_file = state_file
        self.clear()
        if state_file and os.path.exists(state_file):
            self.load()

    def clear(self):
        with self.lock:
            self.collections = {}
            self.request_ids = {}
            self.next_serial = 1
            self.dirty = False

    # ids -----------------------------------------------------------------------------------
    def new_id(self):
        """A unique uint64 resource id, as a decimal string like the API returns."""
        with self.lock:
            self.next_serial += 1
            return str(1500000000000000000 + self.next_serial * 7919)

    def new_serial(self):
        with self.lock:
            self.next_serial += 1
            return self.next_serial

    # resources -----------------------------------------------------------------------------
    def get(self, collection, key):
        return self.collections.get(collection, {}).get(key)

    def put(self, collection, key, resource):
        with self.lock:
            self.collections.setdefault(collection, {})[key] = resource
            self.dirty = True

    def delete(self, collection, key):
        with self.lock:
            self.dirty = True
            return self.collections.get(collection, {}).pop(key, None)

    def items(self, collection, prefix=''):
        """``(key, resource)`` pairs of a collection whose key starts with ``prefix``, in insertion order."""
        return [(key, value) for key, value in self.collections.get(collection, {}).items() if key.startswith(prefix)]

    def snapshot(self, collection):
        with self.lock:
            return [strip_internal(copy.deepcopy(value)) for value in self.collections.get(collection, {}).values()]

    # operations ----------------------------------------------------------------------------
    def advance(self, now=None):
        """Finish every operation whose latency has passed, applying its effects."""
        now = time.time() if now is None else now
        with self.lock:
            for collection in ('compute.operations', 'container.operations'):
                for operation in list(self.collections.get(collection, {}).values()):
                    if operation['status'] != 'DONE' and operation['_done_at'] <= now:
                        self.finish(operation, now)

    def finish(self, operation, now=None):
        now = time.time() if now is None else now
        with self.lock:
            for effect in operation.get('_effects', []):
                self.apply(effect)
            operation['_effects'] = []
            operation.update(operation.pop('_error', {}))
            operation.update(operation.pop('_done_fields', {}))   # output fields known only at the end (bulkInsert's counts)
            operation['status'] = 'DONE'
            if 'progress' in operation:
                operation['progress'] = 100
            operation['endTime'] = rfc3339(now) if operation.get('kind') else container_time(now)
            self.dirty = True

    def apply(self, effect):
        """Apply one data-only effect: ``update`` a resource's fields, or ``delete`` it (and its dependants)."""
        collection, key = effect['collection'], effect['key']
        if effect['action'] == 'update':
            resource = self.get(collection, key)
            if resource is not None:
                resource.update(copy.deepcopy(effect['fields']))
        elif effect['action'] == 'delete':
            self.delete(collection, key)
            for hook in effect.get('then', []):
                self.apply(hook)
        elif effect['action'] == 'remove_link':
            resource = self.get(collection, key)
            if resource is not None and effect['link'] in resource.get(effect['field'], []):
                resource[effect['field']].remove(effect['link'])

    # persistence ---------------------------------------------------------------------------
    def save(self):
        if not self.state_file:
            return
        with self.lock:
            data = {'collections': self.collections, 'request_ids': self.request_ids, 'next_serial': self.next_serial}
            temporary = self.state_file + '.tmp'
            with open(temporary, 'w', encoding='utf-8') as handle:
                json.dump(data, handle, indent=1, sort_keys=True)
            os.replace(temporary, self.state_file)
            self.dirty = False

    def load(self):
        with self.lock, open(self.state_file, encoding='utf-8') as handle:
            data = json.load(handle)
            self.collections = data.get('collections', {})
            self.request_ids = data.get('request_ids', {})
            self.next_serial = data.get('next_serial', 1)


def container_time(timestamp=None):
    timestamp = time.time() if timestamp is None else timestamp
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(timestamp)) + '.%06dZ' % int((timestamp % 1) * 1000000)


def strip_internal(value):
    """Drop the sandbox's bookkeeping fields (names starting with ``_``) from a resource tree."""
    if isinstance(value, dict):
        return {key: strip_internal(item) for key, item in value.items() if not key.startswith('_')}
    if isinstance(value, list):
        return [strip_internal(item) for item in value]
    return value
