"""The Kubernetes API stand-in's store rules, over HTTPS as clients see them: watch, selectors and paging,
garbage collection, namespaces, the status subresource, generation, strategic merge patch directives,
custom resource defaults/pruning and CRD deletion.  The real behaviour each test holds the stand-in
to is named in the test (k8s.io/apiserver registry and watch cache, the garbage collector,
apimachinery strategicpatch, apiextensions-apiserver).
"""

import json
import ssl
import threading
import time
import urllib.error
import urllib.request

import pytest

from sandbox.kube.cluster import KubeCluster


@pytest.fixture(scope='module')
def cluster():
    instance = KubeCluster('api-test', watch_history=50).start()
    yield instance
    instance.stop()


def call(cluster, method, path, body=None, content_type='application/json'):
    context = ssl.create_default_context(cafile=cluster.ca_file)
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(cluster.url + path, data=data, method=method,
                                     headers={'Authorization': 'Bearer t', 'Content-Type': content_type})
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def watch(cluster, path):
    """All events of a watch that ends by its timeoutSeconds."""
    context = ssl.create_default_context(cafile=cluster.ca_file)
    request = urllib.request.Request(cluster.url + path, headers={'Authorization': 'Bearer t'})
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        assert response.status == 200
        return [json.loads(line) for line in response.read().splitlines() if line.strip()]


def configmap(name, namespace='default', labels=None, **extra):
    metadata = {'name': name, 'namespace': namespace}
    if labels:
        metadata['labels'] = labels
    return dict({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': metadata, 'data': {'k': 'v'}}, **extra)


def test_watch_from_a_list_sees_later_changes_and_bookmarks(cluster):
    status, listing = call(cluster, 'GET', '/api/v1/namespaces/default/configmaps?resourceVersion=0')
    assert status == 200
    revision = listing['metadata']['resourceVersion']

    def change():
        time.sleep(0.3)
        cluster.store.create(configmap('watched', labels={'w': 'yes'}))
        cluster.store.create(configmap('ignored', labels={'w': 'no'}))
        cluster.store.delete('configmaps', 'watched', 'default')
    thread = threading.Thread(target=change)
    thread.start()
    events = watch(cluster, '/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%s&labelSelector=w%%3Dyes'
                   '&allowWatchBookmarks=true&timeoutSeconds=3' % revision)
    thread.join()
    changes = [(event['type'], event['object']['metadata']['name']) for event in events if event['type'] != 'BOOKMARK']
    assert changes == [('ADDED', 'watched'), ('DELETED', 'watched')]
    bookmarks = [event for event in events if event['type'] == 'BOOKMARK']
    assert bookmarks and bookmarks[-1]['object']['kind'] == 'ConfigMap'
    assert int(bookmarks[-1]['object']['metadata']['resourceVersion']) >= int(events[-2]['object']['metadata']['resourceVersion'])


def test_watch_from_a_compacted_resource_version_gets_410_expired(cluster):
    for index in range(60):   # more writes than the 50 events of history this cluster keeps
        cluster.store.create(configmap('churn-%d' % index))
    events = watch(cluster, '/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=101&timeoutSeconds=2')
    assert len(events) == 1 and events[0]['type'] == 'ERROR'
    status = events[0]['object']
    assert (status['code'], status['reason']) == (410, 'Expired')
    assert status['message'].startswith('too old resource version: 101 (')


def test_label_selectors_field_selectors_and_paging(cluster):
    call(cluster, 'POST', '/api/v1/namespaces', {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'pages'}})
    for index, tier in enumerate(['a', 'b', 'c', 'a', 'b']):
        cluster.store.create(configmap('item-%d' % index, 'pages', labels={'tier': tier, **({'gpu': 'h200'} if index % 2 else {})}))

    def names(query):
        status, document = call(cluster, 'GET', '/api/v1/namespaces/pages/configmaps?' + query)
        assert status == 200, document
        return [item['metadata']['name'] for item in document['items']]
    assert names('labelSelector=tier%20in%20(a,c)') == ['item-0', 'item-2', 'item-3']
    assert names('labelSelector=tier%20notin%20(a),gpu') == ['item-1']
    assert names('labelSelector=!gpu,tier!%3Dc') == ['item-0', 'item-4']
    assert names('fieldSelector=metadata.name%3Ditem-4') == ['item-4']
    status, first = call(cluster, 'GET', '/api/v1/namespaces/pages/configmaps?limit=2')
    assert [item['metadata']['name'] for item in first['items']] == ['item-0', 'item-1']
    assert first['metadata']['remainingItemCount'] == 3
    status, second = call(cluster, 'GET', '/api/v1/namespaces/pages/configmaps?limit=2&continue=' + first['metadata']['continue'])
    assert [item['metadata']['name'] for item in second['items']] == ['item-2', 'item-3']
    status, third = call(cluster, 'GET', '/api/v1/namespaces/pages/configmaps?limit=2&continue=' + second['metadata']['continue'])
    assert [item['metadata']['name'] for item in third['items']] == ['item-4'] and 'continue' not in third['metadata']
    status, deleted = call(cluster, 'DELETE', '/api/v1/namespaces/pages/configmaps?labelSelector=tier%3Da')
    assert status == 200 and sorted(item['metadata']['name'] for item in deleted['items']) == ['item-0', 'item-3']
    assert names('') == ['item-1', 'item-2', 'item-4']


def owned(name, owner):
    return configmap(name, metadata={'name': name, 'namespace': 'default', 'ownerReferences': [
        {'apiVersion': 'v1', 'kind': 'ConfigMap', 'name': owner['metadata']['name'], 'uid': owner['metadata']['uid']}]})


@pytest.mark.parametrize('policy', ['Background', 'Foreground', 'Orphan'])
def test_delete_propagation(cluster, policy):
    owner = cluster.store.create(configmap('owner-' + policy.lower()))
    cluster.store.create(owned('dependent-' + policy.lower(), owner))
    path = '/api/v1/namespaces/default/configmaps/owner-%s?propagationPolicy=%s' % (policy.lower(), policy)
    status = call(cluster, 'DELETE', path)[0]
    assert status == 200
    dependent = cluster.store.get('configmaps', 'dependent-' + policy.lower(), 'default')
    if policy == 'Orphan':
        assert dependent is not None and 'ownerReferences' not in dependent['metadata']
    else:
        assert dependent is None
    assert cluster.store.get('configmaps', 'owner-' + policy.lower(), 'default') is None


def test_namespace_deletion_terminates_then_removes_its_contents(cluster):
    call(cluster, 'POST', '/api/v1/namespaces', {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'doomed'}})
    cluster.store.create(configmap('inside', 'doomed'))
    status, answer = call(cluster, 'DELETE', '/api/v1/namespaces/doomed')
    assert status == 202 and answer['status']['phase'] == 'Terminating'
    status, refused = call(cluster, 'POST', '/api/v1/namespaces/doomed/configmaps', configmap('late', 'doomed'))
    assert (status, refused['reason']) == (403, 'Forbidden')
    assert refused['message'] == ('configmaps "late" is forbidden: unable to create new content in namespace doomed '
                                  'because it is being terminated')
    deadline = time.monotonic() + 5
    while cluster.store.get('namespaces', 'doomed') is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cluster.store.get('namespaces', 'doomed') is None
    assert cluster.store.get('configmaps', 'inside', 'doomed') is None


def deployment(image='busybox:1', replicas=1):
    return {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'gen', 'namespace': 'default'},
            'spec': {'replicas': replicas, 'selector': {'matchLabels': {'app': 'g'}},
                     'template': {'metadata': {'labels': {'app': 'g'}},
                                  'spec': {'containers': [{'name': 'c', 'image': image}, {'name': 'side', 'image': 'x:1'}]}}}}


def test_generation_status_subresource_and_no_op_writes(cluster):
    path = '/apis/apps/v1/namespaces/default/deployments'
    status, created = call(cluster, 'POST', path, deployment())
    assert status == 201 and created['metadata']['generation'] == 1 and created['status'] == {}
    status, same = call(cluster, 'PUT', path + '/gen', created)
    assert same['metadata']['resourceVersion'] == created['metadata']['resourceVersion']   # no-op: not a write
    labelled = json.loads(json.dumps(same))
    labelled['metadata']['labels'] = {'x': 'y'}
    labelled['status'] = {'replicas': 5}     # ignored on the main resource
    status, relabelled = call(cluster, 'PUT', path + '/gen', labelled)
    assert relabelled['metadata']['generation'] == 1 and relabelled['status'] == {}
    assert int(relabelled['metadata']['resourceVersion']) > int(created['metadata']['resourceVersion'])
    status, scaled = call(cluster, 'PATCH', path + '/gen', {'spec': {'replicas': 3}}, 'application/merge-patch+json')
    assert scaled['metadata']['generation'] == 2
    status, with_status = call(cluster, 'PATCH', path + '/gen/status', {'status': {'replicas': 3}, 'spec': {'replicas': 9}},
                               'application/merge-patch+json')
    assert with_status['status'] == {'replicas': 3} and with_status['spec']['replicas'] == 3
    assert with_status['metadata']['generation'] == 2
    assert any(entry.get('subresource') == 'status' for entry in with_status['metadata']['managedFields'])


def test_strategic_merge_patch_directives(cluster):
    path = '/apis/apps/v1/namespaces/default/deployments/gen'
    status, patched = call(cluster, 'PATCH', path, {'spec': {'template': {'spec': {
        '$setElementOrder/containers': [{'name': 'side'}, {'name': 'c'}],
        'containers': [{'name': 'c', 'image': 'busybox:2'}]}}}}, 'application/strategic-merge-patch+json')
    assert status == 200, patched
    containers = patched['spec']['template']['spec']['containers']
    assert [(c['name'], c['image']) for c in containers] == [('side', 'x:1'), ('c', 'busybox:2')]
    status, patched = call(cluster, 'PATCH', path, {'spec': {'template': {'spec': {
        'containers': [{'name': 'side', '$patch': 'delete'}]}}}}, 'application/strategic-merge-patch+json')
    assert [c['name'] for c in patched['spec']['template']['spec']['containers']] == ['c']
    status, patched = call(cluster, 'PATCH', path, {'metadata': {'finalizers': ['a/one', 'b/two']}},
                           'application/strategic-merge-patch+json')
    status, patched = call(cluster, 'PATCH', path, {'metadata': {'$deleteFromPrimitiveList/finalizers': ['a/one']}},
                           'application/strategic-merge-patch+json')
    assert patched['metadata']['finalizers'] == ['b/two']
    status, patched = call(cluster, 'PATCH', path, {'spec': {'strategy': {'$retainKeys': ['type'], 'type': 'Recreate'}}},
                           'application/strategic-merge-patch+json')
    assert patched['spec']['strategy'] == {'type': 'Recreate'}
    status, failed = call(cluster, 'PATCH', path, [{'op': 'test', 'path': '/spec/replicas', 'value': 99}],
                          'application/json-patch+json')
    assert status == 422
    call(cluster, 'PATCH', path, {'metadata': {'finalizers': None}}, 'application/merge-patch+json')


TEST_CRD = {
    'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition', 'metadata': {'name': 'widgets.example.com'},
    'spec': {'group': 'example.com', 'scope': 'Namespaced',
             'names': {'plural': 'widgets', 'singular': 'widget', 'kind': 'Widget', 'shortNames': ['wd']},
             'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                           'schema': {'openAPIV3Schema': {'type': 'object', 'properties': {
                               'spec': {'type': 'object', 'properties': {
                                   'size': {'type': 'integer', 'default': 3},
                                   'free': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}},
                               'status': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}}}]}}


def test_crd_registers_validates_defaults_and_takes_its_objects_along(cluster):
    status, crd = call(cluster, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', TEST_CRD)
    assert status == 201
    assert {c['type'] for c in crd['status']['conditions'] if c['status'] == 'True'} == {'NamesAccepted', 'Established'}
    status, groups = call(cluster, 'GET', '/apis/example.com/v1')
    assert [r['name'] for r in groups['resources']] == ['widgets', 'widgets/status']
    path = '/apis/example.com/v1/namespaces/default/widgets'
    status, widget = call(cluster, 'POST', path + '?fieldValidation=Ignore', {
        'apiVersion': 'example.com/v1', 'kind': 'Widget', 'metadata': {'name': 'w'},
        'spec': {'free': {'anything': [1, {'goes': True}]}, 'dropped': 1}})
    assert status == 201, widget
    assert widget['spec'] == {'size': 3, 'free': {'anything': [1, {'goes': True}]}}   # defaulted and pruned
    status, openapi = call(cluster, 'GET', '/openapi/v3/apis/example.com/v1')
    assert 'com.example.v1.Widget' in openapi['components']['schemas']
    status, _answer = call(cluster, 'DELETE', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')
    assert status == 200
    assert cluster.store.objects.get(('example.com', 'widgets', 'default', 'w')) is None
    status, gone = call(cluster, 'GET', path)
    assert (status, gone['message']) == (404, 'the server could not find the requested resource')


def test_dry_run_on_every_mutating_verb_stores_nothing(cluster):
    cluster.store.create(configmap('dry-target'))
    before = cluster.store.revision
    base = '/api/v1/namespaces/default/configmaps'
    changed = configmap('dry-target', data={'k': 'changed'})
    assert call(cluster, 'PUT', base + '/dry-target?dryRun=All', changed)[1]['data'] == {'k': 'changed'}
    assert call(cluster, 'PATCH', base + '/dry-target?dryRun=All', {'data': {'k': 'p'}},
                'application/merge-patch+json')[1]['data'] == {'k': 'p'}
    assert call(cluster, 'PATCH', base + '/dry-target?dryRun=All&fieldManager=m&force=true', changed,
                'application/apply-patch+yaml')[1]['data'] == {'k': 'changed'}
    assert call(cluster, 'DELETE', base + '/dry-target?dryRun=All')[0] == 200
    assert call(cluster, 'POST', base + '?dryRun=All', configmap('dry-new'))[0] == 201
    assert cluster.store.revision == before
    assert cluster.store.get('configmaps', 'dry-target', 'default')['data'] == {'k': 'v'}


def raw(cluster, path, accept):
    context = ssl.create_default_context(cafile=cluster.ca_file)
    request = urllib.request.Request(cluster.url + path, headers={'Authorization': 'Bearer t', 'Accept': accept})
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        return response.headers['Content-Type'], json.loads(response.read())


def test_discovery_negotiates_aggregated_v2_v2beta1_or_plain(cluster):
    v2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList'
    v2beta1 = 'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList'
    content_type, document = raw(cluster, '/apis', v2 + ',' + v2beta1 + ',application/json')
    assert content_type == v2 and document['apiVersion'] == 'apidiscovery.k8s.io/v2'
    apps = next(item for item in document['items'] if item['metadata']['name'] == 'apps')
    daemonsets = next(r for r in apps['versions'][0]['resources'] if r['resource'] == 'daemonsets')
    assert daemonsets['scope'] == 'Namespaced' and daemonsets['shortNames'] == ['ds'] and daemonsets['categories'] == ['all']
    assert daemonsets['subresources'] == [{'subresource': 'status', 'responseKind': {'group': '', 'version': '',
                                                                                     'kind': 'DaemonSet'},
                                           'verbs': ['get', 'patch', 'update']}]
    content_type, document = raw(cluster, '/api', v2beta1 + ',application/json')
    assert content_type == v2beta1 and document['items'][0]['versions'][0]['version'] == 'v1'
    content_type, document = raw(cluster, '/apis', 'application/json')
    assert document['kind'] == 'APIGroupList'
    resource_group = next(group for group in document['groups'] if group['name'] == 'resource.k8s.io')
    assert resource_group['preferredVersion'] == {'groupVersion': 'resource.k8s.io/v1', 'version': 'v1'}
    _content_type, namespaces = raw(cluster, '/api/v1', 'application/json')
    entry = next(r for r in namespaces['resources'] if r['name'] == 'namespaces')
    assert 'deletecollection' not in entry['verbs'] and entry['shortNames'] == ['ns']


def test_openapi_v3_index_and_documents(cluster):
    _content_type, index = raw(cluster, '/openapi/v3', 'application/json')
    url = index['paths']['apis/apps/v1']['serverRelativeURL']
    assert url.startswith('/openapi/v3/apis/apps/v1?hash=')
    _content_type, document = raw(cluster, url, 'application/json')
    daemonset = document['components']['schemas']['io.k8s.api.apps.v1.DaemonSet']
    assert daemonset['x-kubernetes-group-version-kind'] == [{'group': 'apps', 'kind': 'DaemonSet', 'version': 'v1'}]
    containers = document['components']['schemas']['io.k8s.api.core.v1.PodSpec']['properties']['containers']
    assert containers['x-kubernetes-patch-merge-key'] == 'name' and containers['type'] == 'array'
    patch = document['paths']['/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}']['patch']
    assert 'fieldValidation' in [parameter['name'] for parameter in patch['parameters']]
    assert 'application/strategic-merge-patch+json' in patch['requestBody']['content']


def test_job_gets_its_generated_selector(cluster):
    """pkg/registry/batch/job/strategy.go generateSelector (kubectl logs job/NAME lists Pods by it)."""
    status, job = call(cluster, 'POST', '/apis/batch/v1/namespaces/default/jobs', {
        'apiVersion': 'batch/v1', 'kind': 'Job', 'metadata': {'name': 'once'},
        'spec': {'template': {'spec': {'restartPolicy': 'Never', 'containers': [{'name': 'c', 'image': 'busybox'}]}}}})
    assert status == 201, job
    uid = job['metadata']['uid']
    assert job['spec']['selector'] == {'matchLabels': {'batch.kubernetes.io/controller-uid': uid}}
    assert job['spec']['template']['metadata']['labels'] == {
        'batch.kubernetes.io/controller-uid': uid, 'batch.kubernetes.io/job-name': 'once', 'controller-uid': uid,
        'job-name': 'once'}


def test_a_pods_limits_default_its_requests_but_not_a_templates(cluster):
    """SetDefaults_Pod (pkg/apis/core/v1/defaults.go) runs on a Pod, not on a Pod template: requests missing from a
    container's (or init container's) limits are set to them, key by key; enableServiceLinks defaults to true; with
    hostNetwork a port's hostPort defaults to its containerPort."""
    gpu = {'limits': {'nvidia.com/gpu': '8', 'cpu': '2'}, 'requests': {'cpu': '150m'}}
    pod_spec = {'hostNetwork': True,
                'initContainers': [{'name': 'init', 'image': 'x:1', 'resources': {'limits': {'memory': '1Gi'}}}],
                'containers': [{'name': 'c', 'image': 'x:1', 'resources': gpu, 'ports': [{'containerPort': 5000}]}]}
    status, pod = call(cluster, 'POST', '/api/v1/namespaces/default/pods',
                       {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'limited'}, 'spec': pod_spec})
    assert status == 201, pod
    assert pod['spec']['containers'][0]['resources']['requests'] == {'nvidia.com/gpu': '8', 'cpu': '150m'}
    assert pod['spec']['initContainers'][0]['resources']['requests'] == {'memory': '1Gi'}
    assert pod['spec']['containers'][0]['ports'][0]['hostPort'] == 5000
    assert pod['spec']['enableServiceLinks'] is True
    template = deployment()
    template['metadata']['name'] = 'limited'
    template['spec']['template']['spec']['containers'][0]['resources'] = {'limits': {'nvidia.com/gpu': '8'}}
    status, created = call(cluster, 'POST', '/apis/apps/v1/namespaces/default/deployments', template)
    assert status == 201, created
    assert created['spec']['template']['spec']['containers'][0]['resources'] == {'limits': {'nvidia.com/gpu': '8'}}
    assert 'enableServiceLinks' not in created['spec']['template']['spec']
