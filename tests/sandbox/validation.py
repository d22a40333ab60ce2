"""Request-body checks against the discovery document schemas, as the real API's JSON parser does.

The Google front end parses a body into the method's protocol-buffer request; a field the message
lacks, an enum name it does not know, or a value of the wrong JSON type is refused with HTTP 400
before any business logic runs.  This module reproduces that parser's refusals and wording:

    Invalid JSON payload received. Unknown name "foo" at 'instance_resource': Cannot find field.
    Invalid value at 'instance_resource.scheduling.provisioning_model' (type.googleapis.com/...), "BAD"

Like the real parser it accepts both lowerCamel and snake_case field names, 64-bit integers as JSON
strings or numbers, and ``null`` as "not set"; ``normalize_body`` returns the body with lowerCamel
names and nulls dropped, so the handlers see one spelling.
"""

import json
import re

from .errors import ApiError

_INT64_FORMATS = ('int64', 'uint64')
_INT32_FORMATS = ('int32', 'uint32')
_INTEGER_STRING = re.compile(r'^-?\d+$')


def snake_case(name):
    return re.sub(r'(?<=[a-z0-9])([A-Z])', r'_\1', name).lower()


def camel_case(name):
    head, *rest = name.split('_')
    return head + ''.join(part[:1].upper() + part[1:] for part in rest)


class _Checker:
    def __init__(self, document):
        self.schemas = document['schemas']
        self.package = self._proto_package(document)
        self.problems = []

    @staticmethod
    def _proto_package(document):
        if document['name'] == 'compute':
            return 'google.cloud.compute.%s' % document['version']
        return 'google.%s.%s' % (document['name'], document['version'])

    def _resolve(self, schema):
        while '$ref' in schema:
            schema = self.schemas[schema['$ref']]
        return schema

    def _where(self, path):
        return " at '%s'" % path if path else ''

    def _invalid_value(self, path, type_name, value):
        self.problems.append("Invalid value at '%s' (%s), %s" % (path, type_name, json.dumps(value)))

    def check(self, schema, value, path, owner, field):
        """Return the normalized value; record problems in ``self.problems``."""
        ref_name = schema.get('$ref')
        schema = self._resolve(schema)
        kind = schema.get('type')
        if kind == 'object' or ref_name:
            if 'additionalProperties' in schema and 'properties' not in schema:
                return self._check_map(schema, value, path)
            return self._check_message(schema, value, path)
        if kind == 'array':
            if not isinstance(value, list):
                self._invalid_value(path, 'TYPE_MESSAGE' if 'items' in schema and self._is_message(schema['items']) else 'TYPE_STRING', value)
                return value
            return [self.check(schema['items'], item, '%s[%d]' % (path, index), owner, field) for index, item in enumerate(value)]
        if 'enum' in schema:
            if not isinstance(value, str) or value not in schema['enum']:
                enum_type = 'type.googleapis.com/%s.%s.%s' % (self.package, owner, field[:1].upper() + field[1:])
                self._invalid_value(path, enum_type, value)
            return value
        if kind == 'string':
            fmt = schema.get('format')
            if fmt in _INT64_FORMATS:
                if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and _INTEGER_STRING.match(value))):
                    self._invalid_value(path, 'TYPE_UINT64' if fmt == 'uint64' else 'TYPE_INT64', value)
                return value
            if not isinstance(value, str):
                self._invalid_value(path, 'TYPE_STRING', value)
            return value
        if kind == 'integer':
            ok = (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, str) and _INTEGER_STRING.match(value))
            if not ok:
                self._invalid_value(path, 'TYPE_UINT32' if schema.get('format') == 'uint32' else 'TYPE_INT32', value)
                return value
            return int(value)
        if kind == 'number':
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                self._invalid_value(path, 'TYPE_DOUBLE', value)
            return value
        if kind == 'boolean':
            if not isinstance(value, bool):
                self._invalid_value(path, 'TYPE_BOOL', value)
            return value
        return value  # type "any"

    def _is_message(self, schema):
        resolved = self._resolve(schema)
        return resolved.get('type') == 'object' or '$ref' in schema

    def _check_map(self, schema, value, path):
        if not isinstance(value, dict):
            self._invalid_value(path, 'TYPE_MESSAGE', value)
            return value
        return {key: self.check(schema['additionalProperties'], item, '%s[%s]' % (path, key), 'MapEntry', 'value')
                for key, item in value.items() if item is not None}

    def _check_message(self, schema, value, path):
        if not isinstance(value, dict):
            self.problems.append('Invalid JSON payload received. Expected an object%s, got %s.' % (self._where(path), type(value).__name__))
            return value
        properties = schema.get('properties', {})
        owner = schema.get('id', 'Message')
        normalized = {}
        for name, item in value.items():
            field = name if name in properties else camel_case(name)
            if field not in properties:
                self.problems.append('Invalid JSON payload received. Unknown name "%s"%s: Cannot find field.' % (name, self._where(path)))
                continue
            if item is None:
                continue
            child_path = '%s.%s' % (path, snake_case(field)) if path else snake_case(field)
            normalized[field] = self.check(properties[field], item, child_path, owner, field)
        return normalized


def root_field_name(document, request_ref):
    """The name the real API's error messages give the body: ``instance_resource`` for Compute, none for GKE."""
    if document['name'] == 'compute':
        return snake_case(request_ref) + '_resource'
    return ''


def normalize_body(document, request_ref, body):
    """Check ``body`` against schema ``request_ref``; return it normalized, or raise a 400 ApiError."""
    checker = _Checker(document)
    if not isinstance(body, dict):
        raise ApiError(400, 'badRequest', 'Invalid JSON payload received. Expected an object.')
    normalized = checker.check({'$ref': request_ref}, body, root_field_name(document, request_ref), request_ref, '')
    if checker.problems:
        raise ApiError(400, 'badRequest', '\n'.join(checker.problems), messages=checker.problems)
    return normalized
