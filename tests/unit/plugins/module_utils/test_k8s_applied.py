"""k8s_to_apply: which rendered objects a server-side apply would change (plugins/module_utils/k8s/applied.py)."""

import copy

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import applied, render

ANNOTATION = 'aiinfra.gpudirect/applied-hash'


def rendered():
    return render.gke_network_objects('TCPXO', network_prefix='p') + render.gke_daemonsets('TCPXO', node_pool='gpu')


def as_live(obj):
    """What the API server returns for an applied object: server fields and defaults added."""
    live = copy.deepcopy(obj)
    live['metadata'].update(uid='u-1', resourceVersion='7', generation=1, managedFields=[{'manager': 'x'}])
    live.setdefault('spec', {})['serverDefault'] = True
    live['status'] = {'conditions': [{'type': 'Ready', 'status': 'True'}]}
    return live


def test_first_run_applies_everything_marked_with_its_hash():
    objects = rendered()
    plan = applied.to_apply(objects, [])
    assert [(o['kind'], o['metadata']['name']) for o in plan] == [(o['kind'], o['metadata']['name']) for o in objects]
    assert all(o['metadata']['annotations'][ANNOTATION] == applied.applied_hash(r) for o, r in zip(plan, objects))
    assert ANNOTATION not in (objects[0]['metadata'].get('annotations') or {})   # the input is left as it was


def test_a_rerun_applies_nothing():
    objects = rendered()
    live = [as_live(o) for o in applied.to_apply(objects, [])]
    assert applied.to_apply(objects, live) == []


def test_a_changed_value_or_someone_elses_change_is_applied_alone():
    objects = rendered()
    live = [as_live(o) for o in applied.to_apply(objects, [])]
    installer = next(o for o in live if o['kind'] == 'DaemonSet' and 'installer' in o['metadata']['name'])
    installer['spec']['template']['spec']['initContainers'][0]['image'] = 'example/other:1'
    assert [o['metadata']['name'] for o in applied.to_apply(objects, live)] == [installer['metadata']['name']]


def test_a_field_no_longer_rendered_is_applied_through_the_hash():
    """Server-side apply removes a field its manager stops sending; only the hash shows that the intent changed."""
    objects = rendered()
    live = [as_live(o) for o in applied.to_apply(objects, [])]
    fewer = copy.deepcopy(objects)
    daemonset = next(o for o in fewer if o['kind'] == 'DaemonSet')
    del daemonset['spec']['updateStrategy']
    assert applied.contains(next(o for o in live if o['metadata']['name'] == daemonset['metadata']['name']), daemonset)
    assert [o['metadata']['name'] for o in applied.to_apply(fewer, live)] == [daemonset['metadata']['name']]


def test_objects_are_matched_by_kind_namespace_and_name():
    network = {'apiVersion': 'networking.gke.io/v1', 'kind': 'Network', 'metadata': {'name': 'vpc1'}, 'spec': {'type': 'Device'}}
    params = dict(network, kind='GKENetworkParamSet', spec={'vpc': 'n'})
    live = [as_live(o) for o in applied.to_apply([network], [])]
    assert [o['kind'] for o in applied.to_apply([network, params], live)] == ['GKENetworkParamSet']


def test_lists_compare_item_by_item_and_by_length():
    assert applied.contains({'a': [1, {'b': 2, 'c': 3}]}, {'a': [1, {'b': 2}]})
    assert not applied.contains({'a': [1, 2]}, {'a': [1]})
    assert not applied.contains({'a': '1'}, {'a': 1})
    assert not applied.contains(None, {'a': 1})


# kubernetes.core.k8s's failed result for a server-side apply of [y, x] that stopped at x (as a real kube-apiserver 1.34
# answered it: tests/sandbox/kube's control plane), with the field someone-else took by a forced apply.
CONFLICT = {'changed': False, 'reason': 'Conflict', 'msg': (
    'Failed to apply object: b\'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Apply failed '
    'with 1 conflict: conflict with \\\\"someone-else\\\\" using v1: .data.a","reason":"Conflict","details":{"causes":[{"reason":'
    '"FieldManagerConflict","message":"conflict with \\\\"someone-else\\\\" using v1","field":".data.a"}]},"code":409}\\n\'')}


def config_map(name, value):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name, 'namespace': 'default'}, 'data': {'a': value}}


def test_a_conflict_names_the_object_its_fields_their_manager_and_the_way_out():
    objects = [config_map('y', '1'), config_map('x', 'ours'), config_map('z', '2')]
    desired = applied.to_apply(objects, [])
    live = [as_live(desired[0]), dict(as_live(config_map('x', 'theirs')))]   # y applied; x theirs; z never reached
    found = applied.conflict(CONFLICT, desired, live, 'my_force')
    assert found['object'] == 'ConfigMap default/x' and found['fields'] == ['.data.a'] and found['managers'] == ['someone-else']
    assert [obj['metadata']['name'] for obj in found['rest']] == ['z']
    assert found['message'] == ('ConfigMap default/x was not applied: .data.a is owned by "someone-else", which changed it after the '
                                'collection applied it (kubectl set image, kubectl edit or another tool). Take it back with my_force: '
                                'true, or give it back to the collection by undoing that change (or deleting the object, which the '
                                'next run makes anew).')
    assert applied.conflict({'failed': True, 'msg': 'Unauthorized'}, desired, live, 'my_force') is None
