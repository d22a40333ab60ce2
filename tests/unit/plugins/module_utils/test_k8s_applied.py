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


def test_an_object_hashes_the_same_before_and_after_it_is_marked():
    """The plan entry points mark what they render; k8s_converge hashes what it is given (marked) again and writes that
    hash. An object with no annotations of its own hashed differently once marked (an annotations dict left empty), so
    every later plan found every such object changed (a Network, a GKENetworkParamSet) while converge found none."""
    for obj in rendered():
        marked = applied.with_applied_hash(obj)
        assert applied.applied_hash(marked) == applied.applied_hash(obj) == marked['metadata']['annotations'][ANNOTATION]
        assert applied.with_applied_hash(marked) == marked


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
    assert applied.holds(next(o for o in live if o['metadata']['name'] == daemonset['metadata']['name']), daemonset)
    assert [o['metadata']['name'] for o in applied.to_apply(fewer, live)] == [daemonset['metadata']['name']]


def test_objects_are_matched_by_kind_namespace_and_name():
    network = {'apiVersion': 'networking.gke.io/v1', 'kind': 'Network', 'metadata': {'name': 'vpc1'}, 'spec': {'type': 'Device'}}
    params = dict(network, kind='GKENetworkParamSet', spec={'vpc': 'n'})
    live = [as_live(o) for o in applied.to_apply([network], [])]
    assert [o['kind'] for o in applied.to_apply([network, params], live)] == ['GKENetworkParamSet']


def test_lists_compare_item_by_item_and_by_length():
    assert applied.holds({'a': [1, {'b': 2, 'c': 3}]}, {'a': [1, {'b': 2}]})
    assert not applied.holds({'a': [1, 2]}, {'a': [1]})
    # A rendered number against live text is compared as text (the API server stores quantities as strings);
    # rendered text against a live number is not the same value.
    assert applied.holds({'a': '1'}, {'a': 1}) and not applied.holds({'a': '2'}, {'a': 1})
    assert not applied.holds({'a': 1}, {'a': '1'}) and not applied.holds({'a': 'true'}, {'a': True})
    assert not applied.holds(None, {'a': 1})


def config_map(name, value):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name, 'namespace': 'default'}, 'data': {'a': value}}


# The causes of the 409 Status a real kube-apiserver 1.34 answered for a server-side apply of a field someone-else
# took by a forced apply (tests/sandbox/kube's control plane).
CAUSES = [{'reason': 'FieldManagerConflict', 'message': 'conflict with "someone-else" using v1', 'field': '.data.a'}]


def test_a_conflict_names_the_object_its_fields_their_manager_and_the_way_out():
    managers = applied.conflicting_managers(CAUSES)
    assert managers == ['someone-else']
    assert applied.conflict_message('ConfigMap default/x', ['.data.a'], managers, 'my_force') == (
        'ConfigMap default/x was not applied: .data.a is owned by "someone-else", which changed it after the '
        'collection applied it (kubectl set image, kubectl edit or another tool). Take it back with my_force: '
        'true, or give it back to the collection by undoing that change (or deleting the object, which the '
        'next run makes anew).')
    assert 'a field is owned by another field manager' in applied.conflict_message('ConfigMap default/x', [], [], 'f')
    assert '.a, .b are owned by "m" and "n", which changed them' in applied.conflict_message('X y', ['.a', '.b'], ['m', 'n'], 'f')


def test_converge_leaves_an_object_someone_else_made_that_holds_every_field_and_applies_ours_when_a_field_was_dropped():
    rendered = config_map('x', 'ours')
    marked = applied.with_applied_hash(rendered)
    theirs = as_live(rendered)   # the same fields, no applied hash: an operator's install, someone's kubectl apply
    assert applied.needs_no_apply(theirs, marked)
    assert not applied.needs_no_apply(dict(theirs, data={'a': 'theirs'}), marked)
    ours_before = as_live(applied.with_applied_hash(dict(rendered, data={'a': 'ours', 'b': 'dropped since'})))
    assert not applied.needs_no_apply(ours_before, marked)   # the hash of another rendering: the apply removes .data.b
    assert applied.needs_no_apply(as_live(marked), marked) and not applied.needs_no_apply(None, marked)


def test_converge_takes_kubernetes_cores_connection_options_from_module_defaults():
    from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils import kube_client   # pylint: disable=import-outside-toplevel
    defaults = [{'group/kubernetes.core.k8s': {'kubeconfig': '/k', 'context': 'a', 'namespace': 'not-a-connection-option'}},
                {'kubernetes.core.k8s': {'context': 'b'}, 'group/aiinfra.gpudirect.gcp': {'project': 'p'}}]
    assert kube_client.kubernetes_core_defaults(defaults, lambda value: value) == {'kubeconfig': '/k', 'context': 'b'}
    assert kube_client.kubernetes_core_defaults(None, lambda value: value) == {}
    # ``kubeconfig: "{{ x | default(omit, true) }}"`` as ansible-core 2.17 and 2.18 template it: the option is unset.
    omitted = [{'group/kubernetes.core.k8s': {'kubeconfig': '__omit_place_holder__0123abcd', 'context': 'c'}}]
    assert kube_client.kubernetes_core_defaults(omitted, lambda value: value) == {'context': 'c'}
