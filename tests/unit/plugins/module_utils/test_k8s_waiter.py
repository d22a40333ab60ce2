"""The wait of action k8s_wait (module_utils/k8s/waiter.py) over a fake API: what it reads, when it stops, and what a wait
that gives up says. The action against the real kube-apiserver: tests/integration/test_k8s_wait.py."""

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import waiter
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s.converge import ApiRefusal


class FakeApi:
    """Objects by (kind, namespace, name); each ``states`` entry replaces them at the next read; reads are counted."""

    def __init__(self, *states, events=(), pods=()):
        self.states = list(states)
        self.objects = self.states.pop(0)
        self.events, self.pods = list(events), list(pods)
        self.reads = []

    def resource(self, api_version, kind):
        return None if kind == 'Unserved' else (api_version, kind)

    def _advance(self):
        if self.states and len(self.reads) > 1:
            self.objects = self.states.pop(0)

    def get(self, resource, name, namespace):
        self.reads.append(('get', resource[1], name))
        self._advance()
        return next((obj for obj in self.objects if obj['kind'] == resource[1] and obj['metadata']['name'] == name
                     and obj['metadata'].get('namespace') == namespace), None)

    def list(self, resource, namespace, label_selector=None, field_selector=None):
        self.reads.append(('list', resource[1], label_selector or field_selector))
        if resource[1] == 'Event':
            name = field_selector.rsplit('=', 1)[1]
            return [event for event in self.events if event['involvedObject']['name'] == name]
        if resource[1] == 'Pod' and self.pods:
            return self.pods
        self._advance()
        return [obj for obj in self.objects if obj['kind'] == resource[1] and obj['metadata'].get('namespace') == namespace]


def pod(name, phase='Running', ready=True, node='n1'):
    return {'kind': 'Pod', 'metadata': {'name': name, 'namespace': 'nccl', 'labels': {'app': 'x'}}, 'spec': {'nodeName': node},
            'status': {'phase': phase, 'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False'}]}}


def daemonset(ready):
    return {'kind': 'DaemonSet', 'metadata': {'name': 'installer', 'namespace': 'kube-system', 'generation': 1},
            'spec': {'selector': {'matchLabels': {'k8s-app': 'installer'}}},
            'status': {'observedGeneration': 1, 'desiredNumberScheduled': 2, 'updatedNumberScheduled': 2, 'numberReady': ready,
                       'numberAvailable': ready}}


def no_sleep(_seconds):
    pass


def test_objects_are_read_once_per_kind_and_namespace_and_a_missing_one_is_pending():
    chosen = waiter.selections(objects=[
        {'apiVersion': 'networking.gke.io/v1', 'kind': 'Network', 'metadata': {'name': 'vpc1'}},
        {'apiVersion': 'networking.gke.io/v1', 'kind': 'Network', 'metadata': {'name': 'vpc2'}},
        {'apiVersion': 'networking.gke.io/v1', 'kind': 'GKENetworkParamSet', 'metadata': {'name': 'vpc1'}}])
    assert [(each['kind'], each['names']) for each in chosen] == [('Network', ['vpc1', 'vpc2']), ('GKENetworkParamSet', ['vpc1'])]
    ready = {'status': {'conditions': [{'type': 'Ready', 'status': 'True'}]}}
    api = FakeApi([dict(ready, kind='Network', metadata={'name': 'vpc1'}), dict(ready, kind='GKENetworkParamSet', metadata={'name': 'vpc1'})])
    verdict, named, summaries, reads = waiter.wait(api, chosen, timeout=0, sleep=no_sleep)
    assert verdict == 'pending: Network vpc2 not found' and named is None and reads == 1
    assert [kind for how, kind, _what in api.reads] == ['Network', 'GKENetworkParamSet']   # a list for two names, a get for one
    assert [each['verdict'] for each in summaries] == ['ready', 'pending: Network vpc2 not found', 'ready']


def test_the_wait_reads_until_ready_and_a_failure_ends_it_at_once():
    chosen = waiter.selections(kind='Pod', namespace='nccl', label_selectors=['app=x'])
    api = FakeApi([pod('a', phase='Pending')], [pod('a', phase='Pending')], [pod('a')])
    verdict, _named, summaries, reads = waiter.wait(api, chosen, timeout=60, sleep=no_sleep)
    assert verdict == 'ready' and reads == 3 and summaries == [
        {'kind': 'Pod', 'name': 'a', 'namespace': 'nccl', 'verdict': 'ready', 'node': 'n1'}]
    assert api.reads[0] == ('list', 'Pod', 'app=x')
    api = FakeApi([pod('a', phase='Failed')])
    verdict, named, _summaries, reads = waiter.wait(api, chosen, timeout=60, sleep=no_sleep)
    assert verdict.startswith('failed: Pod nccl/a phase Failed') and named['metadata']['name'] == 'a' and reads == 1


def test_fewer_objects_than_the_minimum_is_pending_and_names_the_selector():
    chosen = waiter.selections(kind='Pod', namespace='nccl', label_selectors=['app=x'])
    verdict, _named, _summaries, _reads = waiter.wait(FakeApi([pod('a')]), chosen, minimum=2, timeout=0, sleep=no_sleep)
    assert verdict == 'pending: 1 of 2 Pod objects exist in nccl matching app=x'


def test_a_wait_that_gives_up_names_the_latest_event_the_pod_and_the_nodes_without_a_ready_pod():
    chosen = waiter.selections(api_version='apps/v1', kind='DaemonSet', namespace='kube-system', names=['installer'])
    stuck = pod('installer-x', phase='Pending', node='n2')
    stuck['metadata'] = {'name': 'installer-x', 'namespace': 'kube-system', 'labels': {'pod-template-generation': '1'}}
    current = pod('installer-a', node='n1')
    current['metadata']['labels']['pod-template-generation'] = '1'
    old_spec = pod('installer-b', node='n2')   # Running and Ready, but of the DaemonSet's previous spec
    old_spec['metadata']['labels']['pod-template-generation'] = '0'
    events = [{'involvedObject': {'name': 'installer-x'}, 'type': 'Warning', 'reason': 'Failed', 'message': 'old',
               'lastTimestamp': '2026-01-01T00:00:00Z'},
              {'involvedObject': {'name': 'installer-x'}, 'type': 'Warning', 'reason': 'Failed', 'message': 'ErrImagePull  of  v9',
               'lastTimestamp': '2026-01-01T00:01:00Z'}]
    api = FakeApi([daemonset(ready=1)], events=events, pods=[current, old_spec, stuck])
    expect = {'nodes': ['n1', 'n2']}
    verdict, named, _summaries, _reads = waiter.wait(api, chosen, expect=expect, timeout=0, sleep=no_sleep)
    assert verdict == 'pending: DaemonSet kube-system/installer numberReady 1 of 2'
    assert waiter.explain(api, named, expect, verdict) == [
        'nodes without a ready Pod of its current spec: n2', 'pending: Pod kube-system/installer-x phase Pending',
        'latest event of Pod kube-system/installer-x: Warning Failed: ErrImagePull of v9']
    assert ('list', 'Pod', 'k8s-app=installer') in api.reads


def test_a_terminating_pod_is_not_ready_though_its_condition_still_says_ready():
    terminating = pod('a')
    terminating['metadata']['deletionTimestamp'] = '2026-01-01T00:02:00Z'
    verdict, _named, _summaries, _reads = waiter.wait(FakeApi([terminating]), waiter.selections(kind='Pod', namespace='nccl', names=['a']),
                                                      timeout=0, sleep=no_sleep)
    assert verdict == 'pending: Pod nccl/a terminating since 2026-01-01T00:02:00Z'


def test_a_kind_the_server_does_not_serve_is_an_error_and_a_refused_explanation_is_left_out():
    with pytest.raises(waiter.WaitError, match='serves no Unserved in example.com/v1: check api_version and kind'):
        waiter.wait(FakeApi([]), waiter.selections(api_version='example.com/v1', kind='Unserved'), timeout=0)

    class Refusing(FakeApi):
        def list(self, resource, namespace, label_selector=None, field_selector=None):
            raise ApiRefusal(403, {'reason': 'Forbidden', 'message': 'events is forbidden'})
    assert waiter.explain(Refusing([]), pod('a', phase='Pending')) == []


def test_a_verdict_over_all_objects_read_judges_them_as_a_whole():
    """OLM's stages: every object of the kind is read each poll and one verdict covers them (k8s_wait's olm option)."""
    def csv(phase):
        return {'kind': 'ClusterServiceVersion', 'metadata': {'name': 'op.v1', 'namespace': None}, 'status': {'phase': phase}}
    api = FakeApi([csv('Installing')], [csv('Installing')], [csv('Succeeded')])
    seen = []

    def verdict_of(objects):
        seen.append([obj['status']['phase'] for obj in objects])
        return 'ready' if all(phase == 'Succeeded' for phase in seen[-1]) else 'pending: op: phase %s' % seen[-1][0]
    chosen = waiter.selections(api_version='operators.coreos.com/v1alpha1', kind='ClusterServiceVersion')
    verdict, named, summaries, reads = waiter.wait(api, chosen, timeout=60, delay=1, sleep=no_sleep, verdict_of=verdict_of)
    assert verdict == 'ready' and named is None and summaries == [] and reads == len(seen) >= 2, (verdict, seen)
    assert seen[0] == ['Installing'] and seen[-1] == ['Succeeded']
