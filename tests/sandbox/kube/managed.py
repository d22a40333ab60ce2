"""managedFields and server-side apply, after sigs.k8s.io/structured-merge-diff as the apiserver runs it.

Field sets are sets of paths; a path is a tuple of elements ``f:name`` (struct or map field),
``k:{"name":"x"}`` (an item of a list of type map, by its list-map-keys), ``v:"a"`` (an item of a list
of type set).  Members are the leaves (scalars, atomic lists and maps, empty objects), the items of
associative lists and sets, and the granular maps (``additionalProperties``) themselves — which is
where ``fieldsV1`` writes ``"."``.  List types come from the schema's ``x-kubernetes-list-type`` /
``x-kubernetes-list-map-keys`` (no list type: atomic), map types from ``x-kubernetes-map-type``.

- Update operations (create, PUT, JSON/merge/strategic patch): the updater's set gains what it
  changed or added; other managers lose what changed; removed fields leave every set.
- Apply (``application/apply-patch+yaml``): a field in the applied configuration that another manager
  owns with a different value is a conflict (409 ``Apply failed with N conflict(s)``, causes
  ``FieldManagerConflict``) unless ``force=true``, which takes it over; fields the applier owned
  before and no longer applies are removed unless another manager owns them.
Identity fields (apiVersion, kind, metadata.name/namespace/uid/resourceVersion/...) are never owned.
"""

import copy
import json

from . import errors

IDENTITY_METADATA = ('name', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields',
                     'selfLink', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generateName')


class FieldSets:
    """Field sets of objects of one kind (``schema`` its root schema; ``catalog`` resolves $refs)."""

    def __init__(self, catalog, schema, status_separate):
        self.catalog = catalog
        self.schema = schema
        self.status_separate = status_separate

    def owned_part(self, obj, subresource=None):
        """The part of obj that field ownership covers for a main-resource or status write."""
        part = {key: value for key, value in obj.items() if key not in ('apiVersion', 'kind')}
        metadata = {key: value for key, value in (obj.get('metadata') or {}).items() if key not in IDENTITY_METADATA}
        part.pop('metadata', None)
        if subresource == 'status':
            return {'status': obj['status']} if 'status' in obj else {}
        if self.status_separate:
            part.pop('status', None)
        if metadata:
            part['metadata'] = metadata
        return part

    def resolve(self, schema):
        return self.catalog.resolve(schema) or {}

    def child(self, schema, key):
        schema = self.resolve(schema)
        if key == 'metadata' and 'metadata' not in (schema.get('properties') or {}):
            return {'$ref': '#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'}
        properties = schema.get('properties') or {}
        if key in properties:
            return properties[key]
        extra = schema.get('additionalProperties')
        return extra if isinstance(extra, dict) else {}

    def paths(self, value, schema=None, prefix=()):
        """The member paths of ``value`` -> {path: leaf value or None for non-leaf members}."""
        schema = self.resolve(self.schema if schema is None else schema)
        members = {}
        if isinstance(value, dict):
            if not value or schema.get('x-kubernetes-map-type') == 'atomic' or (
                    schema.get('x-kubernetes-preserve-unknown-fields') and not schema.get('properties')):
                members[prefix] = value
                return members
            granular_map = 'properties' not in schema and isinstance(schema.get('additionalProperties'), dict)
            if granular_map and prefix:
                members[prefix] = None
            for key, item in value.items():
                members.update(self.paths(item, self.child(schema, key), prefix + ('f:' + key,)))
            return members
        if isinstance(value, list):
            list_type = schema.get('x-kubernetes-list-type')
            keys = schema.get('x-kubernetes-list-map-keys') or []
            if list_type == 'map' and keys and value:
                for item in value:
                    identity = {key: item.get(key) for key in keys if isinstance(item, dict) and key in item}
                    element = prefix + ('k:' + json.dumps(identity, separators=(',', ':'), sort_keys=True),)
                    members[element] = None
                    members.update(self.paths(item, schema.get('items') or {}, element))
                    members[element] = None
                return members
            if list_type == 'set' and value:
                for item in value:
                    members[prefix + ('v:' + json.dumps(item, separators=(',', ':')),)] = item
                return members
            members[prefix] = value
            return members
        members[prefix] = value
        return members


def to_fields_v1(paths):
    tree = {}
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})

    def mark(node, path):
        """"." marks a member that has members below it (a granular map or a list item with fields)."""
        for element, child in node.items():
            child_path = path + (element,)
            if child and child_path in paths:
                child['.'] = {}
            mark(child, child_path)
    mark(tree, ())

    def ordered(node):   # the apiserver writes "." first, then the other keys sorted
        return {key: ordered(node[key]) for key in sorted(node)}
    return ordered(tree)


def from_fields_v1(tree, prefix=()):
    paths = set()
    for element, child in (tree or {}).items():
        if element == '.':
            paths.add(prefix)
            continue
        path = prefix + (element,)
        if not child or set(child) == {'.'}:
            paths.add(path)
        else:
            paths |= from_fields_v1(child, path)   # includes path itself where child has "."

    return paths


def render_path(path):
    """.spec.template.spec.containers[name="nginx"].image, as SMD prints a conflicting field."""
    text = ''
    for element in path:
        kind, value = element[:2], element[2:]
        if kind == 'f:':
            text += '.' + value
        elif kind == 'k:':
            keys = json.loads(value)
            text += '[' + ','.join('%s=%s' % (key, json.dumps(item)) for key, item in keys.items()) + ']'
        else:
            text += '[=%s]' % value
    return text


def entry_paths(entry):
    return from_fields_v1(entry.get('fieldsV1') or {})


def make_entry(manager, operation, api_version, paths, time, subresource=None):
    entry = {'manager': manager, 'operation': operation, 'apiVersion': api_version, 'time': time,
             'fieldsType': 'FieldsV1', 'fieldsV1': to_fields_v1(set(paths))}
    if subresource:
        entry['subresource'] = subresource
    return entry


def encoded(entries):
    """The entries in the order the apiserver writes them (apiserver pkg/endpoints/handlers/fieldmanager/
    internal/managedfields.go sortEncodedManagedFields): operation (Apply before Update), time (seconds),
    manager, apiVersion, subresource.  Without it a no-op apply that reorders entries would count as a change."""
    return sorted(entries, key=lambda entry: (entry.get('operation') or '', entry.get('time') or '', entry.get('manager') or '',
                                              entry.get('apiVersion') or '', entry.get('subresource') or ''))


def _same_entry(entry, manager, operation, subresource):
    return (entry.get('manager'), entry.get('operation'), entry.get('subresource') or None) == (manager, operation, subresource)


def track_update(fieldsets, old, new, manager, api_version, time, subresource=None):
    """managedFields after an Update-operation write of ``new`` over ``old`` (old None on create)."""
    old_paths = fieldsets.paths(fieldsets.owned_part(old, subresource)) if old else {}
    new_paths = fieldsets.paths(fieldsets.owned_part(new, subresource))
    changed = {path for path, value in new_paths.items() if path not in old_paths or old_paths[path] != value}
    removed = set(old_paths) - set(new_paths)
    entries = copy.deepcopy((new.get('metadata') or {}).get('managedFields') or
                            ((old or {}).get('metadata') or {}).get('managedFields') or [])
    result, mine = [], None
    for entry in entries:
        paths = entry_paths(entry)
        if _same_entry(entry, manager, 'Update', subresource):
            mine = entry
            continue
        kept = paths - changed - removed
        if kept != paths:
            entry = dict(entry, fieldsV1=to_fields_v1(kept))
        if kept:
            result.append(entry)
    my_paths = ((entry_paths(mine) if mine else set()) | changed) - removed
    if mine is not None and my_paths == entry_paths(mine):
        result.append(mine)
    elif my_paths:
        result.append(make_entry(manager, 'Update', api_version, my_paths, time, subresource))
    return encoded(result)


def apply(fieldsets, live, applied, manager, api_version, force, time, merge):
    """Server-side apply of ``applied`` by ``manager`` over ``live`` (None to create).

    ``merge(live, applied)`` merges by the schema's list types.  Returns the new object with its
    managedFields; raises 409 Conflict as the real server does.
    """
    # pylint: disable=too-many-locals
    applied_paths = fieldsets.paths(fieldsets.owned_part(applied))
    live = live or {}
    live_paths = fieldsets.paths(fieldsets.owned_part(live)) if live else {}
    entries = copy.deepcopy((live.get('metadata') or {}).get('managedFields') or [])
    conflicts = []
    for entry in entries:
        if _same_entry(entry, manager, 'Apply', None) or entry.get('subresource'):
            continue
        for path in entry_paths(entry) & set(applied_paths):
            if path in live_paths and live_paths[path] != applied_paths[path] and applied_paths[path] is not None:
                conflicts.append((manager_key(entry), path))
    if conflicts and not force:
        raise conflict_error(conflicts)
    merged = merge(live, applied)
    others = set()
    new_entries, mine = [], None
    conflict_paths = {path for _manager, path in conflicts}
    for entry in entries:
        if _same_entry(entry, manager, 'Apply', None):
            mine = entry
            continue
        paths = entry_paths(entry)
        if force and not entry.get('subresource'):
            paths -= conflict_paths
        if not entry.get('subresource'):
            others |= paths
        if paths:
            new_entries.append(dict(entry, fieldsV1=to_fields_v1(paths)) if paths != entry_paths(entry) else entry)
    removed = []
    for path in sorted(((entry_paths(mine) if mine else set()) - set(applied_paths) - others), key=len):
        if not any(path[:len(done)] == done for done in removed):   # an item goes whole, identified by its keys
            remove_path(merged, path)
            removed.append(path)
    if mine is not None and entry_paths(mine) == set(applied_paths):
        new_entries.append(mine)
    elif applied_paths:
        new_entries.append(make_entry(manager, 'Apply', api_version, applied_paths, time))
    merged.setdefault('metadata', {})['managedFields'] = encoded(new_entries)
    return merged


def manager_key(entry):
    """The manager identifier the apiserver keys field sets by (fieldmanager BuildManagerIdentifier): the
    entry without fields and time, and for appliers without apiVersion; JSON in the Go struct's field order."""
    key = {'manager': entry.get('manager', ''), 'operation': entry.get('operation', '')}
    if entry.get('operation') != 'Apply' and entry.get('apiVersion'):
        key['apiVersion'] = entry['apiVersion']
    if entry.get('subresource'):
        key['subresource'] = entry['subresource']
    return json.dumps(key, separators=(',', ':'))


def print_manager(key):
    """internal/conflict.go printManager: '"name"', '"name" using v1', '... with subresource "status"'."""
    entry = json.loads(key)
    text = json.dumps(entry['manager'])
    if entry.get('subresource'):
        text += ' with subresource %s' % json.dumps(entry['subresource'])
    if entry.get('operation') == 'Update':
        text += ' using %s' % entry.get('apiVersion', '')
    return text


def conflict_error(conflicts):
    """409 as k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go NewConflictError."""
    conflicts = sorted(conflicts, key=lambda item: (item[0], render_path(item[1])))
    causes = [{'reason': 'FieldManagerConflict', 'message': 'conflict with %s' % print_manager(key),
               'field': render_path(path)} for key, path in conflicts]
    if len(conflicts) == 1:
        key, path = conflicts[0]
        message = 'Apply failed with 1 conflict: conflict with %s: %s' % (print_manager(key), render_path(path))
    else:
        by_manager = {}
        for key, path in conflicts:
            by_manager.setdefault(key, []).append(render_path(path))
        lines = []
        for key in sorted(by_manager):
            lines.append('conflicts with %s:' % print_manager(key))
            lines.extend('- %s' % path for path in by_manager[key])
        message = 'Apply failed with %d conflicts: %s' % (len(conflicts), '\n'.join(lines))
    return errors.KubeError(409, 'Conflict', message, {'causes': causes})


def remove_path(obj, path):
    parent, node = None, obj
    for element in path[:-1]:
        parent, node = node, _step(node, element)
        if node is None:
            return
    last = path[-1] if path else None
    if last is None:
        return
    kind, value = last[:2], last[2:]
    if kind == 'f:' and isinstance(node, dict):
        node.pop(value, None)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            if _matches(item, kind, value):
                del node[index]
                break
    del parent


def _matches(item, kind, value):
    if kind == 'k:':
        return isinstance(item, dict) and all(item.get(key) == wanted for key, wanted in json.loads(value).items())
    if kind == 'v:':
        return item == json.loads(value)
    return False


def _step(node, element):
    kind, value = element[:2], element[2:]
    if kind == 'f:':
        return node.get(value) if isinstance(node, dict) else None
    if isinstance(node, list):
        return next((item for item in node if _matches(item, kind, value)), None)
    return None


def apply_merge(fieldsets):
    """The merge SSA uses: maps merge, associative lists merge by key, sets union, the rest is replaced."""
    def merge(live, applied, schema=None):
        schema = fieldsets.resolve(fieldsets.schema if schema is None else schema)
        if isinstance(live, dict) and isinstance(applied, dict) and schema.get('x-kubernetes-map-type') != 'atomic':
            result = copy.deepcopy(live)
            for key, value in applied.items():
                result[key] = merge(live.get(key), value, fieldsets.child(schema, key)) if key in live else copy.deepcopy(value)
            return result
        if isinstance(live, list) and isinstance(applied, list):
            list_type = schema.get('x-kubernetes-list-type')
            keys = schema.get('x-kubernetes-list-map-keys') or []
            if list_type == 'map' and keys:
                result = copy.deepcopy(live)
                for item in applied:
                    index = next((i for i, existing in enumerate(result) if isinstance(existing, dict) and isinstance(item, dict)
                                  and all(existing.get(key) == item.get(key) for key in keys)), None)
                    if index is None:
                        result.append(copy.deepcopy(item))
                    else:
                        result[index] = merge(result[index], item, schema.get('items') or {})
                return result
            if list_type == 'set':
                return copy.deepcopy(live) + [copy.deepcopy(item) for item in applied if item not in live]
        return copy.deepcopy(applied)
    return merge
