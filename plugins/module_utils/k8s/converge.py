# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bring Kubernetes objects to what the roles render, or remove them: the one way the roles write to a cluster
(action aiinfra.gpudirect.k8s_converge, in the task's worker process).

``converge``: one read per kind and namespace (a list; a kind with one object there: a get by name), then a
server-side apply of each object whose live copy does not hold it (``applied.needs_no_apply``: every rendered field, and
the applied-hash annotation that catches a field the role stopped rendering), in order. A rerun writes nothing.
A field-manager conflict (the API server's 409) stops that object only: the objects after it are applied and
the outcome names the object, the fields, their manager and the way out. Any other refusal stops there (a later
object may need an earlier one), named with the API server's code and message.

``remove``: the same reads, then a delete of each object that exists and that one of the given field managers
wrote (``applied.managed_by``); the others are left alone and named. With ``wait``, each is gone before the next
is deleted (a GKENetworkParamSet's finalizer, an operator's namespace), read every ``poll`` seconds.

Check mode (``dry_run``): applies are the API server's dry runs (``dryRun=All``), so its validation and
defaulting still answer; a kind the server does not serve yet (an operator's CRD that an earlier, skipped step
installs) is reported as a change, not a failure; nothing is deleted, what would be is reported.

``api`` is anything with the five methods of ``KubeApi`` (kubernetes.core's client in the action).
"""

from __future__ import annotations

import copy
import json

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import applied
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import WaitReport, every, until


class ConvergeError(Exception):
    """An object the API server refused (not a conflict) or a kind it does not serve, outside check mode."""


class ApiRefusal(Exception):
    """What ``KubeApi`` raises for an error status: ``status`` (the code), ``body`` (the API server's Status, a dict)."""

    def __init__(self, status, body):
        super().__init__('%s %s' % (status, (body or {}).get('message') or ''))
        self.status = status
        self.body = body or {}


def title(obj):
    meta = obj.get('metadata') or {}
    return '%s %s%s' % (obj.get('kind'), meta['namespace'] + '/' if meta.get('namespace') else '', meta.get('name'))


def _key(obj):
    meta = obj.get('metadata') or {}
    return obj.get('apiVersion'), obj.get('kind'), meta.get('namespace') or '', meta.get('name')


def shown(obj):
    """The object as a diff shows it: without the server's bookkeeping (managedFields, resourceVersion)."""
    if not obj:
        return {}
    copied = copy.deepcopy(obj)
    metadata = copied.get('metadata') or {}
    metadata.pop('managedFields', None)
    metadata.pop('resourceVersion', None)
    return copied


def check_objects(objects):
    """Every object names its apiVersion, kind and metadata.name, before anything is read or written."""
    for index, obj in enumerate(objects):
        meta = obj.get('metadata') if isinstance(obj, dict) else None
        if not (isinstance(meta, dict) and obj.get('apiVersion') and obj.get('kind') and meta.get('name')):
            raise ConvergeError('objects[%d] lacks apiVersion, kind or metadata.name: give each object as rendered or as read' % index)


def read(api, objects):
    """({key: live object}, {(apiVersion, kind) the server does not serve}): one read per kind and namespace."""
    groups = {}
    for obj in objects:
        api_version, kind, namespace, _name = _key(obj)
        groups.setdefault((api_version, kind, namespace), []).append(obj)
    live, unserved = {}, set()
    for (api_version, kind, namespace), members in groups.items():
        resource = api.resource(api_version, kind)
        if resource is None:
            unserved.add((api_version, kind))
            continue
        if len(members) == 1:
            found = api.get(resource, members[0]['metadata']['name'], namespace or None)
            items = [found] if found else []
        else:
            items = api.list(resource, namespace or None)
        for item in items:
            item.setdefault('apiVersion', api_version)
            item.setdefault('kind', kind)
            live[_key(item)] = item
    return live, unserved


def _conflict_message(obj, refusal, force_option):
    causes = (refusal.body.get('details') or {}).get('causes') or []
    fields = [cause.get('field') for cause in causes if cause.get('field')]
    managers = applied.conflicting_managers(causes)
    message = applied.conflict_message(title(obj), fields, managers, force_option)
    return '%s The API server answered %s Conflict: %s' % (message, refusal.status, refusal.body.get('message') or '')


def _refused(obj, refusal, verb):
    body = refusal.body
    return '%s was not %s: %s %s: %s' % (title(obj), verb, refusal.status, body.get('reason') or 'refused',
                                         body.get('message') or json.dumps(body)[:500])


def converge(api, objects, field_manager, force=False, dry_run=False, force_option='force_conflicts'):
    """{'applied', 'unchanged', 'diff', 'conflicts', 'failed'}: see the module docstring. ``failed`` is the message
    of the refusal that stopped the run, or None; ``conflicts`` the message of each object in conflict."""
    check_objects(objects)
    live, unserved = read(api, objects)
    outcome = {'applied': [], 'unchanged': [], 'diff': [], 'conflicts': [], 'failed': None}
    for obj in (applied.with_applied_hash(obj) for obj in objects):
        current = live.get(_key(obj))
        if applied.needs_no_apply(current, obj):
            outcome['unchanged'].append(title(obj))
            continue
        if (obj['apiVersion'], obj['kind']) in unserved:
            if not dry_run:
                outcome['failed'] = ('%s was not applied: the API server serves no kind %s in %s (its CustomResourceDefinition is '
                                     'not installed, or the cluster lacks the feature)' % (title(obj), obj['kind'], obj['apiVersion']))
                break
            after = obj
        else:
            try:
                after = api.apply(api.resource(obj['apiVersion'], obj['kind']), obj, field_manager, force, dry_run)
            except ApiRefusal as refusal:
                if refusal.status == 409:
                    outcome['conflicts'].append(_conflict_message(obj, refusal, force_option))
                    continue
                if not (dry_run and refusal.status == 404):
                    outcome['failed'] = _refused(obj, refusal, 'applied')
                    break
                # A dry run in a namespace an earlier object of this run creates (dry runs store nothing).
                after = obj
        outcome['applied'].append(title(obj))
        outcome['diff'].append({'before_header': title(obj), 'after_header': title(obj),
                                'before': shown(current), 'after': shown(after)})
    return outcome


def _deletion_state(live):
    """Where a deleted object stands: gone, or still there and what holds it."""
    if live is None:
        return 'gone'
    finalizers = (live.get('metadata') or {}).get('finalizers')
    return 'still there' + (' (finalizers: %s)' % ', '.join(finalizers) if finalizers else '')


def remove(api, objects, field_managers, dry_run=False, wait=False, timeout=120, poll=1.0):
    """{'removed', 'left_alone', 'diff', 'failed'}: see the module docstring. ``field_managers`` None: every object
    that exists is deleted."""
    check_objects(objects)
    live, _unserved = read(api, objects)
    outcome = {'removed': [], 'left_alone': [], 'diff': [], 'failed': None}
    for obj in objects:
        current = live.get(_key(obj))
        if current is None:
            continue
        if field_managers is not None and not applied.managed_by([current], field_managers):
            outcome['left_alone'].append('%s (written by %s)' % (title(obj), ', '.join(applied.managers(current)) or 'no field manager'))
            continue
        if not dry_run:
            resource = api.resource(obj['apiVersion'], obj['kind'])
            namespace = obj['metadata'].get('namespace')
            try:
                api.delete(resource, obj['metadata']['name'], namespace)
            except ApiRefusal as refusal:
                if refusal.status != 404:
                    outcome['failed'] = _refused(obj, refusal, 'deleted')
                    break
            if wait:
                report = WaitReport('%s deleted' % title(obj), describe=_deletion_state)
                _live, gone = until(lambda: api.get(resource, obj['metadata']['name'], namespace), lambda live: live is None,
                                    timeout, every(poll), report=report)
                if not gone:
                    outcome['failed'] = '%s was deleted but is still there after %s s (a finalizer holds it)' % (title(obj), timeout)
                    break
        outcome['removed'].append(title(obj))
        outcome['diff'].append({'before_header': title(obj), 'after_header': '%s (deleted)' % title(obj),
                                'before': shown(current), 'after': ''})
    return outcome
