"""Label and field selectors as the real API parses and applies them.

Label selectors: k8s.io/apimachinery/pkg/labels/selector.go (``=``, ``==``, ``!=``, ``in``, ``notin``,
``key``, ``!key``).  Field selectors: metadata.name and metadata.namespace for every kind, plus the
per-kind fields each built-in strategy's ``GetAttrs``/field label conversion admits (pkg/registry/core/
pod/strategy.go PodToSelectableFields, node/strategy.go, namespace, secret, event); others are
refused as the real conversion funcs do.
"""

import re

from .errors import bad_request

# Field labels per kind besides metadata.name/namespace (pkg/apis/core/v1/conversion.go AddFieldLabelConversionFuncForGVK*).
FIELD_LABELS = {
    'Pod': {'spec.nodeName': ('spec', 'nodeName'), 'spec.restartPolicy': ('spec', 'restartPolicy'),
            'spec.schedulerName': ('spec', 'schedulerName'), 'spec.serviceAccountName': ('spec', 'serviceAccountName'),
            'spec.hostNetwork': ('spec', 'hostNetwork'), 'status.phase': ('status', 'phase'),
            'status.podIP': ('status', 'podIP'), 'status.nominatedNodeName': ('status', 'nominatedNodeName')},
    'Node': {'spec.unschedulable': ('spec', 'unschedulable')},
    'Namespace': {'status.phase': ('status', 'phase')},
    'Secret': {'type': ('type',)},
    'Event': {'involvedObject.kind': ('involvedObject', 'kind'), 'involvedObject.namespace': ('involvedObject', 'namespace'),
              'involvedObject.name': ('involvedObject', 'name'), 'involvedObject.uid': ('involvedObject', 'uid'),
              'involvedObject.apiVersion': ('involvedObject', 'apiVersion'),
              'involvedObject.resourceVersion': ('involvedObject', 'resourceVersion'),
              'involvedObject.fieldPath': ('involvedObject', 'fieldPath'), 'reason': ('reason',),
              'reportingComponent': ('reportingComponent',), 'source': ('source', 'component'), 'type': ('type',)},
    'ReplicationController': {'status.replicas': ('status', 'replicas')},
    'Job': {'status.successful': ('status', 'succeeded')},
}
_COMMON = {'metadata.name': ('metadata', 'name'), 'metadata.namespace': ('metadata', 'namespace')}

_REQUIREMENT = re.compile(r'^\s*(!?)\s*([A-Za-z0-9./_-]+)\s*(?:(==|=|!=)\s*([A-Za-z0-9._-]*)|\s+(in|notin)\s*\(([^)]*)\))?\s*$')


def _split_top(text):
    parts, depth, current = [], 0, ''
    for char in text:
        if char == '(':
            depth += 1
        elif char == ')':
            depth -= 1
        if char == ',' and depth == 0:
            parts.append(current)
            current = ''
        else:
            current += char
    if current.strip():
        parts.append(current)
    return parts


def parse_label_selector(text):
    """-> [(key, op, values)] with op in exists, !exists, =, !=, in, notin; 400 on bad syntax."""
    requirements = []
    for part in _split_top(text or ''):
        match = _REQUIREMENT.match(part)
        if not match:
            raise bad_request('unable to parse requirement: found \'%s\', expected: identifier' % part.strip())
        negate, key, eq_op, eq_value, set_op, set_values = match.groups()
        if negate and (eq_op or set_op):
            raise bad_request('unable to parse requirement: found \'%s\'' % part.strip())
        if eq_op:
            requirements.append((key, '!=' if eq_op == '!=' else '=', [eq_value]))
        elif set_op:
            requirements.append((key, set_op, [value.strip() for value in set_values.split(',') if value.strip()]))
        else:
            requirements.append((key, '!exists' if negate else 'exists', []))
    return requirements


def labels_match(requirements, labels):
    labels = labels or {}
    for key, op, values in requirements:
        present = key in labels
        if op == 'exists' and not present or op == '!exists' and present:
            return False
        if op == '=' and labels.get(key) != values[0] or op == 'in' and labels.get(key) not in values:
            return False
        if op == '!=' and present and labels[key] == values[0] or op == 'notin' and present and labels[key] in values:
            return False
    return True


def parse_field_selector(text, resource):
    """-> [(path tuple, negate, value)]; a field the kind does not support is refused as the real API does."""
    if not text:
        return []
    allowed = dict(_COMMON)
    if not resource.crd:
        allowed.update(FIELD_LABELS.get(resource.kind, {}))
    requirements = []
    for part in text.split(','):
        match = re.match(r'^\s*([^=!]+?)\s*(==|=|!=)\s*(.*?)\s*$', part)
        if not match:
            raise bad_request('invalid selector: \'%s\'; can\'t understand \'%s\'' % (text, part))
        field, op, value = match.groups()
        if field not in allowed:
            if resource.crd:
                raise bad_request('"%s" is not a known field selector: only "metadata.name", "metadata.namespace"' % field)
            raise bad_request('field label not supported: %s' % field)
        requirements.append((allowed[field], op == '!=', value))
    return requirements


def fields_match(requirements, obj):
    for path, negate, value in requirements:
        current = obj
        for key in path:
            current = current.get(key) if isinstance(current, dict) else None
        if isinstance(current, bool):
            current = 'true' if current else 'false'
        actual = '' if current is None else str(current)
        if (actual == value) == negate:
            return False
    return True
