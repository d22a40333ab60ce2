"""Patches: JSON patch (RFC 6902), merge patch (RFC 7386), strategic merge patch.

Strategic merge patch follows k8s.io/apimachinery/pkg/util/strategicpatch/patch.go as kubectl uses
it: lists whose schema says ``x-kubernetes-patch-strategy: merge`` merge by
``x-kubernetes-patch-merge-key`` (primitive lists by value); other lists are replaced; ``null``
deletes a key; directives ``$patch: replace|delete|merge``, ``$retainKeys``,
``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>``.  The schema walked is the
kind's OpenAPI definition (``SchemaCatalog``), the same source as the apiserver's patch meta.
"""

import copy
import json

from . import errors

SET_ORDER = '$setElementOrder/'
DELETE_PRIMITIVE = '$deleteFromPrimitiveList/'


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path):
    if path == '':
        return []
    if not path.startswith('/'):
        raise ValueError('invalid JSON pointer %r' % path)
    return [part.replace('~1', '/').replace('~0', '~') for part in path[1:].split('/')]


def _walk(doc, parts):
    for part in parts:
        if isinstance(doc, list):
            doc = doc[int(part)]
        elif isinstance(doc, dict):
            doc = doc[part]
        else:
            raise KeyError(part)
    return doc


def json_patch(document, operations):
    """RFC 6902; a failing operation answers as the apiserver's interpretJSONPatchError (422 Invalid-like)."""
    doc = copy.deepcopy(document)
    if not isinstance(operations, list):
        raise errors.bad_request('json: cannot unmarshal object into Go value of type jsonpatch.Patch')
    for operation in operations:
        try:
            doc = _apply_operation(doc, operation)
        except (KeyError, IndexError, ValueError, TypeError) as error:
            raise errors.KubeError(422, 'Invalid', 'the server rejected our request due to an error in our request',
                                   {'causes': [{'reason': 'FieldValueInvalid', 'message': str(error) or 'missing value',
                                                'field': 'patch'}]}) from error
    return doc


def _apply_operation(doc, operation):
    op, parts = operation['op'], _pointer(operation['path'])
    if op == 'test':
        if _walk(doc, parts) != operation['value']:
            raise ValueError('testing value %s failed' % operation['path'])
        return doc
    if op in ('move', 'copy'):
        value = copy.deepcopy(_walk(doc, _pointer(operation['from'])))
        if op == 'move':
            doc = _apply_operation(doc, {'op': 'remove', 'path': operation['from']})
        return _apply_operation(doc, {'op': 'add', 'path': operation['path'], 'value': value})
    if not parts:
        return copy.deepcopy(operation.get('value')) if op in ('add', 'replace') else None
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if op == 'add':
        if isinstance(parent, list):
            parent.insert(len(parent) if last == '-' else int(last), copy.deepcopy(operation['value']))
        else:
            parent[last] = copy.deepcopy(operation['value'])
    elif op == 'remove':
        if isinstance(parent, list):
            del parent[int(last)]
        else:
            del parent[last]
    elif op == 'replace':
        if isinstance(parent, list):
            parent[int(last)] = copy.deepcopy(operation['value'])
        else:
            if last not in parent:
                raise KeyError('replace operation does not apply: doc is missing key: %s' % operation['path'])
            parent[last] = copy.deepcopy(operation['value'])
    else:
        raise ValueError('unexpected kind of operation %r' % op)
    return doc


class StrategicMerge:
    """Strategic merge patch over one kind's schema (``catalog.resolve`` follows $refs)."""

    def __init__(self, catalog):
        self.catalog = catalog

    def child(self, schema, key):
        schema = self.catalog.resolve(schema) or {}
        properties = schema.get('properties') or {}
        if key in properties:
            return properties[key]
        extra = schema.get('additionalProperties')
        return extra if isinstance(extra, dict) else {}

    def items(self, schema):
        schema = self.catalog.resolve(schema) or {}
        return schema.get('items') or {}

    def apply(self, original, patch, schema):
        original = copy.deepcopy(original) if isinstance(original, dict) else {}
        return self._merge_map(original, patch, schema)

    def _merge_map(self, original, patch, schema):
        # pylint: disable=too-many-branches
        patch = dict(patch)
        directive = patch.pop('$patch', None)
        if directive == 'replace':
            return {key: value for key, value in patch.items() if not key.startswith('$')}
        if directive == 'delete':
            return None
        retain = patch.pop('$retainKeys', None)
        orders = {key[len(SET_ORDER):]: patch.pop(key) for key in list(patch) if key.startswith(SET_ORDER)}
        deletions = {key[len(DELETE_PRIMITIVE):]: patch.pop(key) for key in list(patch) if key.startswith(DELETE_PRIMITIVE)}
        result = dict(original)
        if retain is not None:
            result = {key: value for key, value in result.items() if key in retain}
        for key, values in deletions.items():
            if isinstance(result.get(key), list):
                result[key] = [item for item in result[key] if item not in values]
        for key, value in patch.items():
            field_schema = self.child(schema, key)
            if value is None:
                result.pop(key, None)
            elif isinstance(value, dict):
                current = result.get(key)
                merged = self._merge_map(current if isinstance(current, dict) else {}, value, field_schema)
                if merged is None:
                    result.pop(key, None)
                else:
                    result[key] = merged
            elif isinstance(value, list):
                result[key] = self._merge_list(result.get(key), value, field_schema)
            else:
                result[key] = value
        for key, order in orders.items():
            if isinstance(result.get(key), list):
                result[key] = self._order(result[key], order, self.catalog.resolve(self.child(schema, key)) or {})
        return result

    def _merge_list(self, original, patch, schema):
        resolved = self.catalog.resolve(schema) or {}
        strategy = resolved.get('x-kubernetes-patch-strategy', '')
        key = resolved.get('x-kubernetes-patch-merge-key')
        original = original if isinstance(original, list) else []
        if any(isinstance(item, dict) and item.get('$patch') == 'replace' for item in patch):
            return [item for item in patch if not (isinstance(item, dict) and '$patch' in item)]
        if 'merge' not in strategy.split(','):
            return copy.deepcopy(patch)
        if not key:
            return original + [item for item in patch if item not in original]
        result = copy.deepcopy(original)
        for item in patch:
            if not isinstance(item, dict):
                continue
            index = next((i for i, existing in enumerate(result) if isinstance(existing, dict)
                          and existing.get(key) == item.get(key)), None)
            if item.get('$patch') == 'delete':
                if index is not None:
                    del result[index]
                continue
            if index is None:
                result.append(self._merge_map({}, item, self.items(schema)))
            else:
                result[index] = self._merge_map(result[index], item, self.items(schema))
        return result

    @staticmethod
    def _order(items, order, schema):
        key = schema.get('x-kubernetes-patch-merge-key')

        def identity(item):
            return item.get(key) if key and isinstance(item, dict) else json.dumps(item, sort_keys=True)
        wanted = [order_item.get(key) if key and isinstance(order_item, dict) else json.dumps(order_item, sort_keys=True)
                  for order_item in order]
        ranked = sorted(items, key=lambda item: wanted.index(identity(item)) if identity(item) in wanted else len(wanted))
        return ranked
