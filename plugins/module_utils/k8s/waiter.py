# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wait until Kubernetes objects are ready (the action ``k8s_wait``): one read per kind and namespace each poll, judged by
the one readiness table (``readiness.py``), and, when the wait gives up, what a person needs to act: the object, its
last status, its latest event, and for a DaemonSet or Deployment the Pod that is not ready, its event and the nodes
without a ready Pod.

``api`` is ``plugin_utils.kube_client.KubeApi`` (``resource``, ``get``, ``list``); tests give a fake.
"""

from __future__ import annotations

import time

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import readiness
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s.converge import ApiRefusal
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import every, until


class WaitError(Exception):
    """A wait that cannot start: a kind the API server does not serve, or a read it refuses."""


def selections(objects=None, api_version='v1', kind=None, namespace=None, names=None, label_selectors=None):
    """What to read: [{api_version, kind, namespace, names (None: every object the selector matches), label_selector}],
    one entry per kind and namespace. ``objects``: rendered objects or references (apiVersion, kind, metadata.name and
    .namespace), each of which must exist; else one kind with ``names`` and/or ``label_selectors``."""
    if objects:
        grouped = {}
        for obj in objects:
            meta = obj.get('metadata') or {}
            key = (obj.get('apiVersion'), obj.get('kind'), meta.get('namespace'))
            grouped.setdefault(key, []).append(meta.get('name'))
        return [{'api_version': key[0], 'kind': key[1], 'namespace': key[2], 'names': names, 'label_selector': None}
                for key, names in grouped.items()]
    return [{'api_version': api_version, 'kind': kind, 'namespace': namespace, 'names': list(names) if names else None,
             'label_selector': ','.join(label_selectors or []) or None}]


def _resource(api, selection):
    resource = api.resource(selection['api_version'], selection['kind'])
    if resource is None:
        raise WaitError('the API server serves no %s in %s: check api_version and kind, or install its CRD first'
                        % (selection['kind'], selection['api_version']))
    return resource


def read(api, selection):
    """[(name, object or None)] for named selections (None: not there yet), else [(name, object)] of every match."""
    resource = _resource(api, selection)
    names = selection['names']
    if names and len(names) == 1 and not selection['label_selector']:
        return [(names[0], api.get(resource, names[0], selection['namespace']))]
    found = {obj['metadata']['name']: obj
             for obj in api.list(resource, selection['namespace'], label_selector=selection['label_selector'])}
    if names:
        return [(name, found.get(name)) for name in names]
    return sorted(found.items())


def _missing(selection, name):
    where = '%s/' % selection['namespace'] if selection['namespace'] else ''
    return 'pending: %s %s%s not found' % (selection['kind'], where, name)


def judge(reads, expect, minimum):
    """(verdict, the object it names or None, [summary of each object]) over one poll's reads."""
    verdicts, summaries = [], []
    for selection, pairs in reads:
        present = [obj for _name, obj in pairs if obj is not None]
        if selection['names'] is None and len(present) < minimum:
            where = ' in %s' % selection['namespace'] if selection['namespace'] else ''
            selector = ' matching %s' % selection['label_selector'] if selection['label_selector'] else ''
            verdicts.append(('pending: %d of %d %s objects exist%s%s' % (len(present), minimum, selection['kind'], where, selector), None))
        for name, obj in pairs:
            result = readiness.judge(obj, expect) if obj is not None else _missing(selection, name)
            verdicts.append((result, obj))
            summary = {'kind': selection['kind'], 'name': name, 'namespace': selection['namespace'], 'verdict': result}
            if obj is not None and selection['kind'] == 'Pod':
                summary['node'] = (obj.get('spec') or {}).get('nodeName')
            summaries.append(summary)
    return readiness.worst(verdicts) + (summaries,)


def wait(api, chosen, expect=None, minimum=1, timeout=300.0, delay=2.0, sleep=time.sleep, report=None, verdict_of=None):
    """Poll until every selection is ready or one has failed, or ``timeout`` passes: (verdict, object named, summaries,
    reads). ``report``: a poll.WaitReport, told each read's outcome (its describe takes the outcome's verdict).
    ``verdict_of(objects)``: a verdict over all the objects read at once instead of one per object (OLM's stages,
    judged per operator by olm.progress with the same table)."""
    expect = expect or {}
    count = [0]

    def poll_once():
        count[0] += 1
        reads = [(selection, read(api, selection)) for selection in chosen]
        if verdict_of is not None:
            outcome = (verdict_of([obj for _selection, pairs in reads for _name, obj in pairs if obj is not None]), None, [])
        else:
            outcome = judge(reads, expect, int(minimum))
        return outcome
    (result, obj, summaries), _done = until(poll_once, lambda outcome: not outcome[0].startswith('pending'), timeout, every(delay), sleep=sleep,
                                            report=report)
    return result, obj, summaries, count[0]


def _latest_event(api, obj, said=''):
    """'Type Reason: message' of the object's newest Event (core/v1, by involvedObject), or None (also when ``said``, the
    verdict, already holds its message: a scheduler's FailedScheduling is the Pod's PodScheduled condition too)."""
    events = api.resource('v1', 'Event')
    if events is None:
        return None
    meta = obj.get('metadata') or {}
    found = api.list(events, meta.get('namespace'), field_selector='involvedObject.kind=%s,involvedObject.name=%s'
                     % (obj.get('kind'), meta.get('name')))
    if not found:
        return None
    latest = max(found, key=lambda event: (event.get('lastTimestamp') or event.get('eventTime')
                                           or (event.get('metadata') or {}).get('creationTimestamp') or ''))
    message = ' '.join(str(latest.get('message') or '').split())
    if message and message in ' '.join(said.split()):
        return None
    return '%s %s: %s' % (latest.get('type') or 'Normal', latest.get('reason') or '', message)


def _pods_of(api, obj):
    labels = (((obj.get('spec') or {}).get('selector') or {}).get('matchLabels')) or {}
    if not labels:
        return []
    return api.list(api.resource('v1', 'Pod'), obj['metadata'].get('namespace'),
                    label_selector=','.join('%s=%s' % item for item in sorted(labels.items())))


def explain(api, obj, expect=None, said=''):
    """What the verdict leaves out, for a wait that gives up on ``obj``: its latest event, and for a DaemonSet or
    Deployment its first Pod that is not ready (with that Pod's latest event) and, given ``expect.nodes`` as names, the
    nodes without a ready Pod. ``said``: the verdict, whose words are not repeated. Best effort: a read refused here
    leaves the part out."""
    parts = []
    try:
        event = _latest_event(api, obj, said)
        if event:
            parts.append('latest event of %s: %s' % (readiness.label(obj), event))
        if obj.get('kind') in ('DaemonSet', 'Deployment'):
            pods = _pods_of(api, obj)
            nodes = (expect or {}).get('nodes')
            if obj['kind'] == 'DaemonSet' and isinstance(nodes, (list, tuple)) and nodes:
                without = readiness.nodes_without_ready_pod(nodes, pods, obj['metadata'].get('generation'))
                if without:
                    parts.append('nodes without a ready Pod of its current spec: %s' % ', '.join(without))
            waiting = [pod for pod in pods if readiness.judge(pod) != 'ready']
            if waiting:
                parts.append(readiness.judge(waiting[0]))
                event = _latest_event(api, waiting[0], parts[-1])
                if event:
                    parts.append('latest event of %s: %s' % (readiness.label(waiting[0]), event))
    except ApiRefusal:
        pass   # the verdict is the message; this only adds to it
    return parts
