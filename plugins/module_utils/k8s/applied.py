# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which rendered objects a server-side apply would change, judged from the live objects the role has read:
``to_apply(desired, live)`` returns those to apply, each with the annotation ``aiinfra.gpudirect/applied-hash``
(a hash of the object as rendered). A rerun then sends no write to the Kubernetes API (kubernetes.core's server-
side apply PATCHes every object it is given).  An object is left out when its live copy carries every field and
value of the rendered one and no other applied hash (``needs_no_apply``; one rule for the plan entry points and
for k8s_converge). An object with no hash that holds every field, made by someone else or by an operator's
install, is left as it is. The hash is what catches a field the role no longer renders: server-side apply would
remove it (this field manager owned it), which no comparison of present values can see; the rendered object's
hash then differs from the live annotation. A field someone else changed is a value that differs, so the object
is applied (and a conflict is reported, as before). A value the API server normalizes (for example a quantity
written another way) only costs an apply that changes nothing.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re

ANNOTATION = 'aiinfra.gpudirect/applied-hash'


def unmarked(obj):
    """``obj`` as rendered: without the applied-hash annotation (and without an annotations dict only it was in), so an
    object hashes the same before it is marked and after (the plan entry points mark, k8s_converge hashes again)."""
    bare = copy.deepcopy(obj)
    metadata = bare.get('metadata') or {}
    if isinstance(metadata.get('annotations'), dict) and ANNOTATION in metadata['annotations']:
        metadata['annotations'].pop(ANNOTATION)
        if not metadata['annotations']:
            del metadata['annotations']
    return bare


def applied_hash(obj):
    return hashlib.sha256(json.dumps(unmarked(obj), sort_keys=True, separators=(',', ':')).encode()).hexdigest()[:20]


def with_applied_hash(obj):
    marked = copy.deepcopy(obj)
    marked.setdefault('metadata', {}).setdefault('annotations', {})[ANNOTATION] = applied_hash(obj)
    return marked


def holds(live, wanted):
    """True when ``live`` holds every key and value of ``wanted`` (lists: same length, item by item). A number
    rendered where the live object has text is compared as text: the API server stores a quantity (``rdma/x: 1``,
    ``memory: 1``) as a string, so a rendered 1 and a live "1" are the same value (an apply would change nothing)."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(key in live and holds(live[key], value) for key, value in wanted.items())
    if isinstance(wanted, list):
        return isinstance(live, list) and len(live) == len(wanted) and all(holds(a, b) for a, b in zip(live, wanted))
    if isinstance(wanted, (int, float)) and not isinstance(wanted, bool) and isinstance(live, str):
        return live == str(wanted)
    return live == wanted


def _key(obj):
    meta = obj.get('metadata') or {}
    return obj.get('kind'), meta.get('namespace') or '', meta.get('name')


def to_apply(desired, live):
    """The objects of ``desired`` (rendered) that their live copy in ``live`` (k8s_info resources) does not
    already hold, marked with their applied hash."""
    return differing([with_applied_hash(obj) for obj in desired], live)


def differing(objects, live):
    """The objects (as applied: marked) whose live copy in ``live`` needs an apply."""
    found = {_key(obj): obj for obj in live or []}
    return [obj for obj in objects if not needs_no_apply(found.get(_key(obj)), obj)]


def needs_no_apply(live, marked):
    """True when ``live`` needs no apply of ``marked`` (rendered, with its applied hash): it holds every rendered
    field, and it carries no applied hash of another rendering. An object with no hash at all that holds every field
    (made by someone else, or by an operator's install, the way the role would make it) is left as it is: applying
    it would only make the collection its co-owner."""
    wanted = marked['metadata']['annotations'][ANNOTATION]
    present = ((live or {}).get('metadata') or {}).get('annotations') or {}
    return holds(live, unmarked(marked)) and present.get(ANNOTATION, wanted) == wanted


def managers(obj):
    """The field managers that wrote ``obj`` (its metadata.managedFields)."""
    return sorted({entry.get('manager') for entry in (obj.get('metadata') or {}).get('managedFields') or [] if entry.get('manager')})


def managed_by(objects, field_managers):
    """The objects one of ``field_managers`` wrote: what the collection applied, as opposed to what someone else made
    (an object read without its managedFields is not shown to be ours, so it is not among them)."""
    wanted = set(field_managers)
    return [obj for obj in objects if wanted & set(managers(obj))]


def conflicting_managers(causes):
    """The field managers named by the causes of a 409 Conflict Status (``conflict with "someone-else" using v1``)."""
    return sorted({match for cause in causes for match in re.findall(r'conflict with "([^"]+)"', cause.get('message') or '')})


def conflict_message(title, fields, managers, force_option):
    """What a server-side apply refused with a field-manager conflict was about, and the way out."""
    owners = ' and '.join('"%s"' % manager for manager in managers) or 'another field manager'
    verb, them = ('is', 'it') if len(fields) <= 1 else ('are', 'them')
    return ('%s was not applied: %s %s owned by %s, which changed %s after the collection applied it (kubectl set image, '
            'kubectl edit or another tool). Take %s back with %s: true, or give %s back to the collection by undoing that '
            'change (or deleting the object, which the next run makes anew).'
            % (title, ', '.join(fields) or 'a field', verb, owners, them, them, force_option, them))
