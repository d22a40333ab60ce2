# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is a Kubernetes object ready? ``k8s_verdict(obj, expect)`` -> ``ready``, ``pending: <why>`` or
``failed: <why>``, per kind, for the roles' explicit waits (kubernetes.core's ``wait`` knows five kinds,
passes a DaemonSet with zero desired pods at once and ignores observedGeneration; see
style-kubernetes.md). Every status is judged at the object's current generation: a Ready left over
from an older spec is pending, not ready.
"""

from __future__ import annotations


def _label(obj):
    meta = obj.get('metadata') or {}
    name = meta.get('name')
    if meta.get('namespace'):
        name = '%s/%s' % (meta['namespace'], name)
    return '%s %s' % (obj.get('kind') or 'object', name)


def _condition(obj, kind):
    for condition in (obj.get('status') or {}).get('conditions') or []:
        if condition.get('type') == kind:
            return condition
    return None


def _stale(obj, observed):
    """True when a status was computed for an older generation than the object's."""
    generation = (obj.get('metadata') or {}).get('generation')
    return generation is not None and observed is not None and int(observed) < int(generation)


def _ready_condition(obj, kind='Ready'):
    condition = _condition(obj, kind)
    if condition is None:
        return 'pending: no %s condition yet' % kind
    observed = condition.get('observedGeneration', (obj.get('status') or {}).get('observedGeneration'))
    if _stale(obj, observed):
        return 'pending: %s=%s is for generation %s, the object is at generation %s' % (
            kind, condition.get('status'), observed, obj['metadata']['generation'])
    if condition.get('status') != 'True':
        return 'pending: %s=%s (%s) %s' % (kind, condition.get('status'), condition.get('reason') or '', condition.get('message') or '')
    return 'ready'


def _daemonset(obj, expect):
    status = obj.get('status') or {}
    nodes = expect.get('nodes')
    expected = len(nodes) if isinstance(nodes, (list, tuple)) else nodes
    if expected is not None and int(expected) <= 0:
        return 'failed: no node is expected to run it (0 GPU nodes match); check the node pool and its accelerator label'
    if 'observedGeneration' not in status or _stale(obj, status.get('observedGeneration')):
        return 'pending: the DaemonSet controller has not seen generation %s yet' % (obj.get('metadata') or {}).get('generation')
    desired = int(status.get('desiredNumberScheduled') or 0)
    if expected is None:
        if desired == 0:
            return 'failed: it schedules on 0 nodes: its node selection matches no node'
        expected = desired
    elif desired != int(expected):
        return ('failed: it schedules on %d nodes where %d GPU nodes are expected: its node selection (nodeSelector / '
                'affinity) and the GPU nodes disagree' % (desired, int(expected)))
    for field in ('updatedNumberScheduled', 'numberReady', 'numberAvailable'):
        if int(status.get(field) or 0) < expected:
            return 'pending: %s %s of %d' % (field, int(status.get(field) or 0), expected)
    return 'ready'


def _pod(obj, _expect):
    status = obj.get('status') or {}
    phase = status.get('phase')
    if phase in ('Failed', 'Succeeded'):
        return 'failed: phase %s (%s)' % (phase, status.get('reason') or status.get('message') or 'its containers exited')
    scheduled = _condition(obj, 'PodScheduled')
    if scheduled and scheduled.get('status') == 'False':
        return 'pending: not scheduled: %s' % (scheduled.get('message') or scheduled.get('reason'))
    if phase != 'Running':
        return 'pending: phase %s' % phase
    return _ready_condition(obj)


def _deployment(obj, _expect):
    status = obj.get('status') or {}
    if _stale(obj, status.get('observedGeneration', 0)):
        return 'pending: the Deployment controller has not seen generation %s yet' % obj['metadata'].get('generation')
    wanted = (obj.get('spec') or {}).get('replicas', 1)
    for field in ('updatedReplicas', 'readyReplicas', 'availableReplicas'):
        if int(status.get(field) or 0) < wanted:
            return 'pending: %s %s of %d' % (field, int(status.get(field) or 0), wanted)
    return 'ready'


def _job(obj, _expect):
    failed = _condition(obj, 'Failed')
    if failed and failed.get('status') == 'True':
        return 'failed: %s %s' % (failed.get('reason') or '', failed.get('message') or '')
    complete = _condition(obj, 'Complete')
    return 'ready' if complete and complete.get('status') == 'True' else 'pending: not complete'


def _crd(obj, _expect):
    return _ready_condition(obj, 'Established')


def _exists(_obj, _expect):
    return 'ready'


KINDS = {
    'DaemonSet': _daemonset,
    'Pod': _pod,
    'Deployment': _deployment,
    'Job': _job,
    'CustomResourceDefinition': _crd,
    # GKE's network controller sets Ready (GKENetworkParamSet: Ready; Network: Ready and ParamsReady),
    # each with observedGeneration (gke-networking-api, apis/network/v1).
    'Network': lambda obj, _e: _ready_condition(obj),
    'GKENetworkParamSet': lambda obj, _e: _ready_condition(obj),
}


def k8s_verdict(objects, expect=None):
    """``objects``: one object or a list (k8s_info's ``resources``); ``expect``: ``{nodes: N or [names]}``
    for DaemonSets. An empty list is pending (not there yet); otherwise the first failure, else the
    first pending, else ``ready``. Kinds without a readiness rule are ready once they exist."""
    expect = expect or {}
    items = objects if isinstance(objects, (list, tuple)) else [objects]
    if not items or any(item is None for item in items):
        return 'pending: not found'
    verdicts = []
    for obj in items:
        verdict = KINDS.get(obj.get('kind'), _exists)(obj, expect)
        if verdict != 'ready':
            state, why = verdict.split(':', 1)
            verdict = '%s: %s %s' % (state, _label(obj), why.strip())
        verdicts.append(verdict)
    for state in ('failed', 'pending'):
        for verdict in verdicts:
            if verdict.startswith(state):
                return verdict
    return 'ready'


def nodes_without_ready_pod(nodes, pods):
    """Names of ``nodes`` (names or Node objects) on which none of ``pods`` is Running and Ready."""
    names = [n if isinstance(n, str) else n['metadata']['name'] for n in nodes]
    ready = {(p.get('spec') or {}).get('nodeName') for p in pods if _pod(p, {}) == 'ready'}
    return [name for name in names if name not in ready]
