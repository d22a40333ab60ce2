"""Schemas: the built-in kinds' definitions from kubernetes-validate, the CRDs', validation, OpenAPI v3.

Built-in definitions come from the ``kubernetes-validate`` package's ``v1.NN.0-local/_definitions.json``
(JSON Schema form of the upstream OpenAPI, with the ``x-kubernetes-*`` extensions kept).  The minor
is the cluster's (1.34 for ``1.34.8-gke.1278000``); the nearest available one is used otherwise.

What validation refuses, and how the real API words it:
- unknown and duplicate fields: with ``fieldValidation=Strict`` 400 BadRequest
  ``Kind in version "v1" cannot be handled as a Kind: strict decoding error: unknown field "spec.x",
  duplicate field "spec.y"`` (apimachinery runtime/serializer/json strict decoding; kubectl users see
  exactly this line); ``Warn`` returns them as ``Warning: 299`` headers; ``Ignore`` drops them;
- a value of the wrong type in a built-in kind fails Go decoding: 400 BadRequest ``Kind in version
  "v1" cannot be handled as a Kind: json: cannot unmarshal string into Go struct field
  DeploymentSpec.spec.replicas of type int32``;
- in a custom resource (apiextensions-apiserver's OpenAPI schema validation), 422 Invalid with
  causes ``spec.x: Invalid value: "a": spec.x in body must be of type integer: "a"``,
  ``spec.x: Required value``, ``spec.x: Unsupported value: "a": supported values: "b", "c"``;
- missing required fields of built-in kinds: 422 Invalid ``spec.selector: Required value`` (the
  built-in validation code checks more than the schema's ``required``; the stand-in checks only
  ``required``, see README).
"""

import copy
import functools
import glob
import hashlib
import json
import os
import re

from . import errors

GO_TYPES = {('integer', 'int32'): 'int32', ('integer', 'int64'): 'int64', ('integer', None): 'int64',
            ('number', 'double'): 'float64', ('number', None): 'float64', ('string', None): 'string',
            ('boolean', None): 'bool', ('array', None): '[]', ('object', None): 'map'}
REF = '#/$defs/'


def schema_root():
    import kubernetes_validate  # pylint: disable=import-outside-toplevel
    return os.path.join(os.path.dirname(kubernetes_validate.__file__), 'kubernetes-json-schema')


def available_minors():
    minors = []
    for path in glob.glob(os.path.join(schema_root(), 'v1.*.0-local')):
        minors.append(int(re.search(r'v1\.(\d+)\.0-local$', path).group(1)))
    return sorted(minors)


def minor_of(version):
    match = re.match(r'v?1\.(\d+)', version)
    wanted = int(match.group(1)) if match else 34
    minors = available_minors()
    return min(minors, key=lambda minor: (abs(minor - wanted), -minor))


@functools.lru_cache(maxsize=4)
def load_definitions(minor):
    with open(os.path.join(schema_root(), 'v1.%d.0-local' % minor, '_definitions.json'), encoding='utf-8') as handle:
        return json.load(handle)['$defs']


def types_of(schema):
    kind = schema.get('type')
    if kind is None:
        return []
    kinds = kind if isinstance(kind, list) else [kind]
    return [item for item in kinds if item != 'null']


class DuplicateKeys(dict):
    """A JSON object in which some keys appeared twice (kept: the last value, as Go's decoder).

    ``sequence`` is the keys in document order, a repeat as ('dup', key) where it occurred."""

    sequence = ()


def object_pairs(pairs):
    result = DuplicateKeys()
    sequence = []
    for key, value in pairs:
        sequence.append(('dup' if key in result else 'key', key))
        result[key] = value
    if len(result) < len(sequence):
        result.sequence = tuple(sequence)
        return result
    return dict(result)


def key_sequence(value):
    return value.sequence if isinstance(value, DuplicateKeys) else tuple(('key', key) for key in value)


def duplicates_in_document_order(value, path=''):
    """Every repeated key, depth first in document order (how the unstructured decoder reports them)."""
    found = []
    if isinstance(value, dict):
        for kind, key in key_sequence(value):
            if kind == 'dup':
                found.append(join(path, key))
            else:
                found.extend(duplicates_in_document_order(value[key], join(path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(duplicates_in_document_order(item, '%s[%d]' % (path, index)))
    return found


def parse_body(raw, content_type):
    """JSON (duplicate keys remembered) or YAML -> a dict; 400 as the real decoder when unreadable."""
    text = raw.decode('utf-8') if isinstance(raw, bytes) else raw
    try:
        return json.loads(text, object_pairs_hook=object_pairs)
    except ValueError as json_error:
        if 'yaml' not in (content_type or ''):
            raise errors.bad_request('error decoding from json: %s' % json_error) from json_error
    import yaml  # pylint: disable=import-outside-toplevel
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise errors.bad_request('error converting YAML to JSON: %s' % error) from error


class Problems:
    """What one walk over an object found."""

    def __init__(self):
        self.unknown, self.type_errors, self.required, self.enum = [], [], [], []
        self.strict = []   # typed kinds: ('unknown'|'duplicate', path) in document order


def join(path, key):
    return '%s.%s' % (path, key) if path else key


class SchemaCatalog:
    """The schemas one cluster validates against and publishes."""

    def __init__(self, version):
        self.minor = minor_of(version)
        self.defs = load_definitions(self.minor)
        self.kinds = {}
        for name, definition in self.defs.items():
            for gvk in definition.get('x-kubernetes-group-version-kind') or []:
                self.kinds[(gvk['group'], gvk['version'], gvk['kind'])] = name
        self.custom = {}   # (group, version, kind) -> openAPIV3Schema of a CRD version

    def has_kind(self, group, version, kind):
        return (group, version, kind) in self.kinds

    def root_schema(self, resource):
        if resource.crd:
            return self.custom[(resource.group, resource.version, resource.kind)]
        return {'$ref': REF + self.kinds[(resource.group, resource.version, resource.kind)]}

    def resolve(self, schema):
        while isinstance(schema, dict) and ('$ref' in schema or len(schema.get('allOf') or []) == 1 and '$ref' in schema['allOf'][0]):
            ref = schema.get('$ref') or schema['allOf'][0]['$ref']
            schema = self.defs[ref.rsplit('/', 1)[-1]]
        return schema

    # ----- validation -----
    def walk(self, value, schema, path, problems, custom, go_struct=None, apply_defaults=False):
        """Check ``value`` against ``schema`` at ``path``; CRD defaults are applied when asked."""
        # pylint: disable=too-many-branches,too-many-arguments
        ref_name = None
        if isinstance(schema, dict) and ('$ref' in schema or schema.get('allOf')):
            ref_name = (schema.get('$ref') or schema['allOf'][0].get('$ref', '')).rsplit('/', 1)[-1] or None
        schema = self.resolve(schema) or {}
        if value is None:
            return
        if 'oneOf' in schema or schema.get('x-kubernetes-int-or-string'):
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                problems.type_errors.append((path, value, 'string', go_struct))
            return
        kinds = types_of(schema)
        expected = kinds[0] if kinds else None
        if expected and not self._type_ok(value, expected):
            go_type = GO_TYPES.get((expected, schema.get('format')), GO_TYPES.get((expected, None), expected))
            if expected == 'object' and ref_name:
                go_type = 'v1.' + ref_name.rsplit('.', 1)[-1]
            problems.type_errors.append((path, value, expected if custom else go_type, go_struct))
            return
        if 'enum' in schema and custom and value not in schema['enum']:
            problems.enum.append((path, value, schema['enum']))
        if isinstance(value, dict):
            if schema.get('x-kubernetes-preserve-unknown-fields') and 'properties' not in schema:
                return
            properties = schema.get('properties')
            struct = ref_name.rsplit('.', 1)[-1] if ref_name else go_struct
            if properties is not None:
                # Typed kinds report in document order (a repeated unknown key once, as unknown); custom
                # resources report unknown fields in the pruning walk's sorted order.
                order = sorted(('key', key) for key in value) if custom else key_sequence(value)
                for kind, key in order:
                    if key not in properties:
                        if kind == 'key' and not schema.get('x-kubernetes-preserve-unknown-fields'):
                            problems.unknown.append(join(path, key))
                            problems.strict.append(('unknown', join(path, key)))
                    elif kind == 'dup':
                        problems.strict.append(('duplicate', join(path, key)))
                    else:
                        self.walk(value[key], properties[key], join(path, key), problems, custom, struct, apply_defaults)
                if apply_defaults:
                    for key, item in properties.items():
                        if key not in value and 'default' in item:
                            value[key] = copy.deepcopy(item['default'])
                for key in schema.get('required') or []:
                    if key not in value:
                        problems.required.append(join(path, key))
            elif isinstance(schema.get('additionalProperties'), dict):
                for key, item in value.items():
                    self.walk(item, schema['additionalProperties'], '%s[%s]' % (path, key), problems, custom, struct,
                              apply_defaults)
        elif isinstance(value, list) and isinstance(schema.get('items'), dict):
            for index, item in enumerate(value):
                self.walk(item, schema['items'], '%s[%d]' % (path, index), problems, custom, go_struct, apply_defaults)

    @staticmethod
    def _type_ok(value, expected):
        if expected == 'object':
            return isinstance(value, dict)
        if expected == 'array':
            return isinstance(value, list)
        if expected == 'string':
            return isinstance(value, str)
        if expected == 'boolean':
            return isinstance(value, bool)
        if expected == 'integer':
            return isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float) and value.is_integer()
        if expected == 'number':
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        return True

    def check(self, resource, obj, validation='Strict', subresource=None):
        """Validate ``obj`` (a dict, parsed with ``parse_body``) for ``resource``.

        Returns the warnings to send (for ``Warn``); raises KubeError as the real API refuses.
        Unknown fields are removed from ``obj`` (the real decoder drops them) and CRD defaults applied.
        """
        problems = Problems()
        body = {key: value for key, value in obj.items() if key not in ('apiVersion', 'kind')}
        if resource.has_status() and subresource != 'status':
            body.pop('status', None)      # ignored on main-resource writes (the strategy resets it)
        top_duplicates = [key for kind, key in key_sequence(obj) if kind == 'dup']
        if resource.crd:
            schema = self.custom[(resource.group, resource.version, resource.kind)] or {}
            properties = dict(schema.get('properties') or {})
            properties['metadata'] = {'$ref': REF + 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'}
            properties.pop('apiVersion', None)
            properties.pop('kind', None)
            root = dict(schema, properties=properties)
            root.pop('required', None)
            self.walk(body, root, '', problems, custom=True, apply_defaults=True)
            for key in schema.get('required') or []:
                if key not in obj and key not in ('apiVersion', 'kind', 'metadata'):
                    problems.required.append(key)
        else:
            self.walk(body, self.root_schema(resource), '', problems, custom=False,
                      go_struct=self.kinds[(resource.group, resource.version, resource.kind)].rsplit('.', 1)[-1])
        name = (obj.get('metadata') or {}).get('name') or (obj.get('metadata') or {}).get('generateName', '')
        header = '%s in version "%s" cannot be handled as a %s: ' % (resource.kind, resource.version, resource.kind)
        if problems.type_errors and not resource.crd:
            path, value, go_type, struct = problems.type_errors[0]
            raise errors.bad_request(header + 'json: cannot unmarshal %s into Go struct field %s.%s of type %s'
                                     % (json_type_name(value), struct or resource.kind, re.sub(r'\[[^]]*\]', '', path), go_type))
        if resource.crd:
            strict = ['duplicate field "%s"' % path for path in top_duplicates + duplicates_in_document_order(body)] + \
                     ['unknown field "%s"' % path for path in problems.unknown]
        else:
            strict = ['duplicate field "%s"' % path for path in top_duplicates] + \
                     ['%s field "%s"' % (kind, path) for kind, path in problems.strict]
        warnings = []
        if strict and validation == 'Strict':
            raise errors.bad_request(header + 'strict decoding error: ' + ', '.join(strict))
        if strict and validation in ('Warn', '', None):
            warnings = strict
        prune(obj, problems.unknown)
        causes = []
        for path, value, expected, _struct in problems.type_errors:
            causes.append(('FieldValueTypeInvalid', path, 'Invalid value: "%s": %s in body must be of type %s: "%s"'
                           % (go_value(value), path, expected, go_value(value))))
        for path in problems.required:
            if path.startswith('status.') and not resource.crd:
                continue   # status structs' Go validation requires none of these; only controllers write them
            causes.append(('FieldValueRequired', path, 'Required value'))
        for path, value, allowed in problems.enum:
            causes.append(('FieldValueNotSupported', path, 'Unsupported value: %s: supported values: %s'
                           % (json.dumps(value), ', '.join(json.dumps(item) for item in allowed))))
        if causes:
            raise errors.invalid(resource, name, causes)
        return warnings

    # ----- OpenAPI v3 -----
    def openapi_schemas(self, resources):
        """components.schemas for a group/version: its kinds' definitions and what they reference."""
        wanted = ['io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions', 'io.k8s.apimachinery.pkg.apis.meta.v1.Status',
                  'io.k8s.apimachinery.pkg.apis.meta.v1.Patch', 'io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent']
        custom = {}
        for resource in resources:
            if resource.crd:
                name = crd_definition_name(resource)
                schema = copy.deepcopy(self.custom[(resource.group, resource.version, resource.kind)] or {'type': 'object'})
                schema.setdefault('properties', {})['metadata'] = {
                    'allOf': [{'$ref': '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'}]}
                schema['x-kubernetes-group-version-kind'] = [{'group': resource.group, 'version': resource.version,
                                                             'kind': resource.kind}]
                custom[name] = schema
                custom[name + 'List'] = {'type': 'object', 'required': ['items'], 'properties': {
                    'apiVersion': {'type': 'string'}, 'kind': {'type': 'string'},
                    'items': {'type': 'array', 'items': {'$ref': '#/components/schemas/' + name}},
                    'metadata': {'allOf': [{'$ref': '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta'}]}},
                    'x-kubernetes-group-version-kind': [{'group': resource.group, 'version': resource.version,
                                                         'kind': resource.list_kind}]}
                wanted += ['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta', 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta']
            else:
                wanted.append(self.kinds[(resource.group, resource.version, resource.kind)])
                list_name = self.kinds.get((resource.group, resource.version, resource.list_kind))
                if list_name:
                    wanted.append(list_name)
        names, pending = set(), list(wanted)
        while pending:
            name = pending.pop()
            if name in names or name not in self.defs:
                continue
            names.add(name)
            pending.extend(ref.rsplit('/', 1)[-1] for ref in re.findall(r'"\$ref": "([^"]+)"', json.dumps(self.defs[name])))
        result = {name: to_openapi(self.defs[name]) for name in sorted(names)}
        result.update(custom)
        return result


def crd_definition_name(resource):
    """apiextensions-apiserver's name for a CR's definition: reversed group, version, kind."""
    return '.'.join(reversed(resource.group.split('.'))) + '.%s.%s' % (resource.version, resource.kind)


def to_openapi(schema):
    """JSON Schema (kubernetes-validate's form) -> the apiserver's OpenAPI v3 form."""
    if isinstance(schema, list):
        return [to_openapi(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if 'oneOf' in schema and len(schema) <= 2:
        converted = {'description': schema.get('description', ''), 'type': 'string'}
        if any('integer' in str(item) for item in schema['oneOf']):
            converted['format'] = 'int-or-string'
        return converted
    result = {}
    for key, value in schema.items():
        if key == '$ref':
            result = {'allOf': [{'$ref': '#/components/schemas/' + value.rsplit('/', 1)[-1]}], **result}
        elif key == 'type' and isinstance(value, list):
            kinds = [item for item in value if item != 'null']
            if kinds:
                result['type'] = kinds[0]
        elif key == 'enum' and isinstance(value, list) and len(value) == 1 and 'apiVersion' not in result:
            continue   # kubernetes-validate pins apiVersion/kind with a one-value enum; the apiserver does not
        elif key in ('properties',):
            result[key] = {name: to_openapi(item) for name, item in value.items()}
        else:
            result[key] = to_openapi(value)
    return result


def prune(obj, paths):
    """Remove unknown fields (dotted paths with [i] / [key] indices) from obj."""
    for path in paths:
        parts = re.findall(r'[^.\[\]]+|\[[^]]*\]', path)
        current = obj
        for part in parts[:-1]:
            if part.startswith('['):
                inner = part[1:-1]
                current = current[int(inner)] if isinstance(current, list) else current.get(inner)
            else:
                current = current.get(part) if isinstance(current, dict) else None
            if current is None:
                break
        else:
            if isinstance(current, dict):
                current.pop(parts[-1], None)


def json_type_name(value):
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, (int, float)):
        return 'number'
    if isinstance(value, str):
        return 'string'
    if isinstance(value, list):
        return 'array'
    return 'object'


def go_value(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(',', ':'))
    return str(value)


def document_hash(document):
    return hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest()[:64].upper()
