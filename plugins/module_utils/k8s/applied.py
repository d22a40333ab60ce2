# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which rendered objects a server-side apply would change, judged from the live objects the role has
read: ``to_apply(desired, live)`` returns those to apply, each with the annotation
``aiinfra.gpudirect/applied-hash`` (a hash of the object as rendered). A rerun then sends no write to
the Kubernetes API (kubernetes.core's server-side apply PATCHes every object it is given).

An object is left out when its live copy carries every field and value of the rendered one, that
annotation included. The hash is what catches a field the role no longer renders: server-side apply
would remove it (this field manager owned it), which no comparison of present values can see; the
rendered object's hash then differs from the live annotation. A field someone else changed is a value
that differs, so the object is applied (and a conflict is reported, as before). A value the API
server normalizes (for example a quantity written another way) only costs an apply that changes
nothing.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import re

ANNOTATION = 'aiinfra.gpudirect/applied-hash'


def applied_hash(obj):
    bare = copy.deepcopy(obj)
    annotations = (bare.get('metadata') or {}).get('annotations') or {}
    annotations.pop(ANNOTATION, None)
    return hashlib.sha256(json.dumps(bare, sort_keys=True, separators=(',', ':')).encode()).hexdigest()[:20]


def with_applied_hash(obj):
    marked = copy.deepcopy(obj)
    marked.setdefault('metadata', {}).setdefault('annotations', {})[ANNOTATION] = applied_hash(obj)
    return marked


def contains(live, wanted):
    """True when ``live`` holds every key and value of ``wanted`` (lists: same length, item by item)."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(key in live and contains(live[key], value) for key, value in wanted.items())
    if isinstance(wanted, list):
        return isinstance(live, list) and len(live) == len(wanted) and all(contains(a, b) for a, b in zip(live, wanted))
    return live == wanted


def _key(obj):
    meta = obj.get('metadata') or {}
    return obj.get('kind'), meta.get('namespace') or '', meta.get('name')


def to_apply(desired, live):
    """The objects of ``desired`` (rendered) that their live copy in ``live`` (k8s_info resources) does not
    already hold, marked with their applied hash."""
    return differing([with_applied_hash(obj) for obj in desired], live)


def differing(objects, live):
    """The objects (as applied: marked) whose live copy in ``live`` does not hold them."""
    found = {_key(obj): obj for obj in live or []}
    return [obj for obj in objects if not contains(found.get(_key(obj)), obj)]


def managers(obj):
    """The field managers that wrote ``obj`` (its metadata.managedFields)."""
    return sorted({entry.get('manager') for entry in (obj.get('metadata') or {}).get('managedFields') or [] if entry.get('manager')})


def managed_by(objects, field_managers):
    """The objects one of ``field_managers`` wrote: what the collection applied, as opposed to what someone else made
    (an object read without its managedFields is not shown to be ours, so it is not among them)."""
    wanted = set(field_managers)
    return [obj for obj in objects if wanted & set(managers(obj))]


def _status_of(failure):
    """The API server's Status in kubernetes.core's failure message ``Failed to apply object: b'{...}'``, or {}."""
    text = str(failure.get('msg') or '')
    start = text.find("b'")
    try:
        return json.loads(ast.literal_eval(text[start:].strip()).decode()) if start >= 0 else {}
    except (ValueError, SyntaxError, UnicodeDecodeError):
        return {}


def conflict(failure, applied_objects, live, force_option):
    """What a server-side apply that stopped at a field-manager conflict (kubernetes.core's failed result, the API
    server's 409 Conflict) was about, or None for another failure: {'object', 'fields', 'managers', 'rest', 'message'}.

    kubernetes.core applies a list in order and stops at the first error, and the Status names the fields and their
    managers, not the object: it is the first of ``applied_objects`` whose live copy (``live``, read again) still
    differs, as those before it were applied. ``rest``: the objects after it, which the apply never reached."""
    status = _status_of(failure)
    if failure.get('reason') != 'Conflict' and status.get('reason') != 'Conflict':
        return None
    causes = (status.get('details') or {}).get('causes') or []
    fields = [cause.get('field') for cause in causes if cause.get('field')]
    managers = sorted({match for cause in causes for match in re.findall(r'conflict with "([^"]+)"', cause.get('message') or '')})
    pending = differing(applied_objects, live)
    stuck = pending[0] if pending else None
    index = next((i for i, obj in enumerate(applied_objects) if stuck is not None and _key(obj) == _key(stuck)), len(applied_objects))
    title = '%s %s%s' % (stuck['kind'], (stuck['metadata'].get('namespace') + '/') if stuck['metadata'].get('namespace') else '',
                         stuck['metadata']['name']) if stuck else 'an object'
    owners = ' and '.join('"%s"' % manager for manager in managers) or 'another field manager'
    verb, them = ('is', 'it') if len(fields) <= 1 else ('are', 'them')
    message = ('%s was not applied: %s %s owned by %s, which changed %s after the collection applied it (kubectl set image, '
               'kubectl edit or another tool). Take %s back with %s: true, or give %s back to the collection by undoing that '
               'change (or deleting the object, which the next run makes anew).'
               % (title, ', '.join(fields) or 'a field', verb, owners, them, them, force_option, them))
    return {'object': title, 'fields': fields, 'managers': managers, 'rest': applied_objects[index + 1:], 'message': message}
