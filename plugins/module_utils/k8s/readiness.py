# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is a Kubernetes object ready? The one readiness table of the collection: every kind a role waits on, GKE's and
OpenShift's alike, judged by the action ``k8s_wait``, by the filter ``k8s_verdict`` and by the OLM stages of
``olm.progress``.

``verdict(objects, expect, kind, minimum)`` -> ``ready``, ``pending: <Kind ns/name> <why>`` or ``failed: <Kind ns/name>
<why>``. kubernetes.core's ``wait`` knows five kinds, passes a DaemonSet with zero desired Pods at once and ignores
observedGeneration (style-kubernetes.md); here every status is judged at the object's current generation (a Ready
left over from an older spec is pending, not ready), and a kind without a rule is ready once it exists.
"""

from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as openshift_catalog


def label(obj):
    """'Kind namespace/name' (cluster-scoped: 'Kind name'), as every verdict names its object."""
    meta = obj.get('metadata') or {}
    name = meta.get('name')
    if meta.get('namespace'):
        name = '%s/%s' % (meta['namespace'], name)
    return '%s %s' % (obj.get('kind') or 'object', name)


def _conditions(obj):
    return {condition.get('type'): condition for condition in (obj.get('status') or {}).get('conditions') or []}


def _stale(obj, observed):
    """True when a status was computed for an older generation than the object's."""
    generation = (obj.get('metadata') or {}).get('generation')
    return generation is not None and observed is not None and int(observed) < int(generation)


def _ready_condition(obj, kind='Ready'):
    condition = _conditions(obj).get(kind)
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
    elif desired == 0 or desired > int(expected):
        return ('failed: it schedules on %d nodes where %d GPU nodes are expected: its node selection (nodeSelector / '
                'affinity) and the GPU nodes disagree' % (desired, int(expected)))
    elif desired < int(expected):
        # The DaemonSet controller counts nodes as they register: with hundreds of nodes registering at once its count
        # lags the nodes read a moment before (234 of 256 seen on the stand-in). A count that stays short ends the wait
        # with this verdict.
        return ('pending: it schedules on %d of the %d GPU nodes so far (the DaemonSet controller has not counted the others '
                'yet, or its node selection leaves them out)' % (desired, int(expected)))
    for field in ('updatedNumberScheduled', 'numberReady', 'numberAvailable'):
        if int(status.get(field) or 0) < expected:
            return 'pending: %s %s of %d' % (field, int(status.get(field) or 0), expected)
    return 'ready'


def _pod(obj, expect):
    """Running and Ready, and with ``expect.annotations`` set (Multus writes k8s.v1.cni.cncf.io/network-status once the
    Pod's extra networks are attached)."""
    status = obj.get('status') or {}
    phase = status.get('phase')
    deleted = (obj.get('metadata') or {}).get('deletionTimestamp')
    if deleted:   # its Ready condition stays True until the kubelet has stopped it
        return 'pending: terminating since %s' % deleted
    if phase in ('Failed', 'Succeeded'):
        return 'failed: phase %s (%s)' % (phase, status.get('reason') or status.get('message') or 'its containers exited')
    scheduled = _conditions(obj).get('PodScheduled')
    if scheduled and scheduled.get('status') == 'False':
        return 'pending: not scheduled: %s' % (scheduled.get('message') or scheduled.get('reason'))
    if phase != 'Running':
        waiting = [(state.get('waiting') or {}) for state in
                   [container.get('state') or {} for container in status.get('containerStatuses') or []] if state.get('waiting')]
        why = ': %s %s' % (waiting[0].get('reason') or '', waiting[0].get('message') or '') if waiting else ''
        return 'pending: phase %s%s' % (phase or 'none', why.rstrip())
    missing = [name for name in expect.get('annotations') or [] if name not in ((obj.get('metadata') or {}).get('annotations') or {})]
    if missing:
        return 'pending: no annotation %s yet' % ', '.join(missing)
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
    conditions = _conditions(obj)
    failed = conditions.get('Failed')
    if failed and failed.get('status') == 'True':
        return 'failed: %s %s' % (failed.get('reason') or '', failed.get('message') or '')
    complete = conditions.get('Complete')
    return 'ready' if complete and complete.get('status') == 'True' else 'pending: not complete'


def _catalog_source(obj, _expect):
    state = ((obj.get('status') or {}).get('connectionState') or {}).get('lastObservedState')
    return 'ready' if state == 'READY' else 'pending: connectionState %s' % state


def _subscription(obj, expect):
    status = obj.get('status') or {}
    if status.get('installedCSV') and (not expect.get('csv') or status['installedCSV'] == expect['csv']):
        return 'ready'
    failed = _conditions(obj).get('ResolutionFailed') or {}
    if failed.get('status') == 'True':
        return 'failed: ResolutionFailed: %s' % failed.get('message')
    return 'pending: state %r installPlanRef %s' % (status.get('state', ''), (status.get('installPlanRef') or {}).get('name'))


def _install_plan(obj, _expect):
    status = obj.get('status') or {}
    phase = status.get('phase', '')
    if phase == 'Complete':
        return 'ready'
    if phase == 'Failed':
        reasons = [condition.get('message') for condition in status.get('conditions') or [] if condition.get('status') == 'False']
        return 'failed: phase Failed: %s' % ('; '.join(filter(None, reasons)) or 'no message')
    return 'pending: phase %s' % (phase or 'none')


def _cluster_service_version(obj, _expect):
    status = obj.get('status') or {}
    phase = status.get('phase', '')
    if phase == openshift_catalog.CSV_SUCCEEDED:
        return 'ready'
    detail = 'phase %s reason %s: %s' % (phase or 'none', status.get('reason'), status.get('message'))
    return ('pending: ' if phase in openshift_catalog.CSV_PENDING_PHASES else 'failed: ') + detail


def _available_unless_degraded(obj, _expect):
    conditions = _conditions(obj)
    if conditions.get('Degraded', {}).get('status') == 'True':
        return 'failed: Degraded: %s' % conditions['Degraded'].get('message')
    return 'ready' if conditions.get('Available', {}).get('status') == 'True' else 'pending: not Available'


def _operator_state(obj, _expect):
    """The NVIDIA operators' own resources (NicClusterPolicy, ClusterPolicy, the Network kinds): status.state."""
    status = obj.get('status') or {}
    state = status.get('state', '')
    if state == 'ready':
        return 'ready'
    if state in ('error', 'ignore', 'ignored'):
        errors = '; '.join('%s %s %s' % (applied.get('name'), applied.get('state'), applied.get('message', ''))
                           for applied in status.get('appliedStates') or [] if applied.get('state') != 'ready')
        return 'failed: state %s: %s' % (state, status.get('reason') or errors or 'no reason given')
    return 'pending: state %s' % (state or 'none')


def _sriov_node_state(obj, _expect):
    status = obj.get('status') or {}
    sync = status.get('syncStatus', '')
    if sync == 'Failed':
        return 'failed: syncStatus Failed: %s' % status.get('lastSyncError')
    if sync == 'Succeeded' and not status.get('lastSyncError'):
        return 'ready'
    return 'pending: syncStatus %s' % (sync or 'none')


def _machine_config_pool(obj, _expect):
    status = obj.get('status') or {}
    conditions = _conditions(obj)
    if conditions.get('Degraded', {}).get('status') == 'True':
        return 'failed: Degraded: %s' % conditions['Degraded'].get('message')
    if conditions.get('Updated', {}).get('status') == 'True' and conditions.get('Updating', {}).get('status') != 'True' \
            and not _stale(obj, status.get('observedGeneration', 0)):
        return 'ready'
    return 'pending: updated %s/%s machines' % (status.get('updatedMachineCount'), status.get('machineCount'))


def _node(obj, expect):
    """A Node is ready for a wait once it offers ``expect.resource`` (``at_least``, default 1): the SR-IOV and RDMA
    device plugins' resources appear in allocatable when their pods run."""
    resource = expect.get('resource')
    if not resource:
        return 'ready'
    have = ((obj.get('status') or {}).get('allocatable') or {}).get(resource, '0')
    return 'ready' if int(have) >= int(expect.get('at_least', 1)) else 'pending: allocatable %s=%s' % (resource, have)


def _exists(_obj, _expect):
    return 'ready'


KINDS = {
    'DaemonSet': _daemonset,
    'Pod': _pod,
    'Deployment': _deployment,
    'Job': _job,
    'CustomResourceDefinition': lambda obj, _e: _ready_condition(obj, 'Established'),
    # GKE's network controller sets Ready (GKENetworkParamSet: Ready; Network: Ready and ParamsReady),
    # each with observedGeneration (gke-networking-api, apis/network/v1).
    'Network': lambda obj, _e: _ready_condition(obj),
    'GKENetworkParamSet': lambda obj, _e: _ready_condition(obj),
    # OLM (operator-framework/api): CatalogSource's gRPC connection, Subscription's installed CSV, InstallPlan's and
    # ClusterServiceVersion's phases.
    'CatalogSource': _catalog_source,
    'Subscription': _subscription,
    'InstallPlan': _install_plan,
    'ClusterServiceVersion': _cluster_service_version,
    'NodeFeatureDiscovery': _available_unless_degraded,
    'NicClusterPolicy': _operator_state,
    'ClusterPolicy': _operator_state,
    'MacvlanNetwork': _operator_state,
    'HostDeviceNetwork': _operator_state,
    'IPoIBNetwork': _operator_state,
    'SriovNetworkNodeState': _sriov_node_state,
    'MachineConfigPool': _machine_config_pool,
    'Node': _node,
}


def judge(obj, expect=None, kind=None):
    """The verdict of one object, naming it: ``ready``, ``pending: <label> <why>`` or ``failed: <label> <why>``."""
    result = KINDS.get(kind or obj.get('kind'), _exists)(obj, expect or {})
    if result == 'ready':
        return result
    state, why = result.split(':', 1)
    return '%s: %s %s' % (state, label(obj), why.strip())


def verdict(objects, expect=None, kind=None, minimum=1, **more):
    """One verdict over ``objects`` (one object or a list, as k8s_info's ``resources``): the first failure, else the first
    pending object, else ``ready``. Fewer than ``minimum`` objects (or a None among them) is pending: not there yet.
    ``expect`` (and keyword arguments): ``nodes`` (a count or names) for DaemonSets, ``csv`` for a Subscription,
    ``resource`` and ``at_least`` for Nodes; ``kind`` judges objects that lack their ``kind`` field."""
    expect = dict(expect or {}, **more)
    items = list(objects) if isinstance(objects, (list, tuple)) else [objects]
    if any(item is None for item in items) or not items and int(minimum) > 0 and not kind:
        return 'pending: not found'
    if len(items) < int(minimum):
        return 'pending: %d of %d %s objects exist' % (len(items), int(minimum), kind or 'expected')
    return worst((judge(obj, expect, kind), obj) for obj in items)[0]


def worst(judged):
    """(verdict, object) of the first failure among ``judged`` (verdict, object) pairs, else of the first pending one, else
    ('ready', None): the order every wait reports in."""
    judged = list(judged)
    for state in ('failed', 'pending'):
        for result, obj in judged:
            if result.startswith(state):
                return result, obj
    return 'ready', None


def nodes_without_ready_pod(nodes, pods, generation=None):
    """Names of ``nodes`` (names or Node objects) on which none of ``pods`` is Running and Ready (and not terminating);
    with ``generation``, only a DaemonSet's Pods of that generation count (label ``pod-template-generation``, which the
    DaemonSet controller sets): a Pod of the old spec is not the rollout reaching its node."""
    names = [node if isinstance(node, str) else node['metadata']['name'] for node in nodes]
    ready = {(pod.get('spec') or {}).get('nodeName') for pod in pods if _pod(pod, {}) == 'ready'
             and (generation is None or ((pod.get('metadata') or {}).get('labels') or {}).get('pod-template-generation') == str(generation))}
    return [name for name in names if name not in ready]
