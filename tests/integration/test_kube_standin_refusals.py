"""Bad requests to the Kubernetes API stand-in: each answered with the real status code, reason and message.

Sources of the wording (kubernetes/kubernetes): k8s.io/apimachinery/pkg/api/errors/errors.go (NotFound,
AlreadyExists, Conflict, Invalid, Unauthorized), pkg/util/validation/validation.go (name messages),
test/integration/apiserver/field_validation_test.go (strict decoding: unknown/duplicate field),
k8s.io/apimachinery/pkg/util/managedfields/internal (SSA conflicts; an undeclared field in an apply
patch is a plain error, 500 without reason: the body in kubernetes/kubernetes#122480),
apiextensions-apiserver schema validation (CR type/required/enum causes) and strategy (no
unconditional update of a custom resource), k8s.io/apiserver etcd3 store (a create carrying a
resourceVersion: a plain error, 500 without reason), and pkg/registry/core/pod/strategy.go (log/exec
of a pod without a node).
"""

import json
import os
import ssl
import urllib.error
import urllib.request

import pytest
import yaml

from sandbox.kube import KubeHub


@pytest.fixture(scope='module')
def cluster():
    hub = KubeHub()
    instance = hub.start_cluster('refusals')
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name in ('Network.yaml', 'GKENetworkParamSet.yaml'):
        with open(os.path.join(root, 'sandbox', 'kube', 'crds', name), encoding='utf-8') as handle:
            instance.store.create(yaml.safe_load(handle))
    instance.store.create({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'existing', 'namespace': 'default'},
                           'data': {'a': 'b'}}, field_manager='seed')
    yield instance
    hub.stop_all()


def call(cluster, method, path, body=None, content_type='application/json', token='t'):
    context = ssl.create_default_context(cafile=cluster.ca_file)
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(cluster.url + path, data=data, method=method)
    if token:
        request.add_header('Authorization', 'Bearer ' + token)
    request.add_header('Content-Type', content_type)
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), dict(error.headers)


def configmap(name='cm', **extra):
    return dict({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': name}, 'data': {'a': 'b'}}, **extra)


def deployment(**spec):
    base = {'selector': {'matchLabels': {'app': 'x'}},
            'template': {'metadata': {'labels': {'app': 'x'}}, 'spec': {'containers': [{'name': 'c', 'image': 'busybox'}]}}}
    base.update(spec)
    return {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'd'}, 'spec': base}


def network(name='n1', **spec):
    return {'apiVersion': 'networking.gke.io/v1', 'kind': 'Network', 'metadata': {'name': name}, 'spec': spec}


CM = '/api/v1/namespaces/default/configmaps'
DEPLOY = '/apis/apps/v1/namespaces/default/deployments'
NETWORKS = '/apis/networking.gke.io/v1/networks'
STRICT = '?fieldValidation=Strict'
CASES = [
    ('no token', 'POST', CM, configmap(), 'application/json', None,
     401, 'Unauthorized', 'Unauthorized'),
    ('unknown field', 'POST', CM + STRICT, configmap(datum={'x': 'y'}), 'application/json', 't',
     400, 'BadRequest', 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "datum"'),
    ('nested unknown field', 'POST', DEPLOY + STRICT, deployment(replica=3), 'application/json', 't',
     400, 'BadRequest', 'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field '
     '"spec.replica"'),
    ('duplicate field', 'POST', CM + STRICT, b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},'
     b'"data":{"a":"b"},"data":{"a":"c"}}', 'application/json', 't',
     400, 'BadRequest', 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field '
     '"data"'),
    ('wrong type built-in', 'POST', DEPLOY + STRICT, deployment(replicas='two'), 'application/json', 't',
     400, 'BadRequest', 'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go '
     'struct field DeploymentSpec.spec.replicas of type int32'),
    ('missing required built-in', 'POST', DEPLOY + STRICT, {'apiVersion': 'apps/v1', 'kind': 'Deployment',
                                                            'metadata': {'name': 'd2'}, 'spec': {'selector': {}}},
     'application/json', 't', 422, 'Invalid', 'Deployment.apps "d2" is invalid: spec.template: Required value'),
    ('workload without a selector', 'POST', '/apis/apps/v1/namespaces/default/daemonsets', {
        'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'nosel'},
        'spec': {'template': {'metadata': {'labels': {'app': 'x', 'tier': 'y'}},
                              'spec': {'containers': [{'name': 'c', 'image': 'busybox'}]}}}}, 'application/json', 't',
     # pkg/apis/apps/validation ValidateDaemonSetSpec: a nil selector matches no template labels.
     422, 'Invalid', 'DaemonSet.apps "nosel" is invalid: [spec.selector: Required value, spec.template.metadata.labels: '
     'Invalid value: map[string]string{"app":"x", "tier":"y"}: `selector` does not match template `labels`]'),
    ('missing namespace', 'POST', '/api/v1/namespaces/nowhere/configmaps', configmap(), 'application/json', 't',
     404, 'NotFound', 'namespaces "nowhere" not found'),
    ('bad name', 'POST', CM, configmap('Bad_Name'), 'application/json', 't',
     422, 'Invalid', 'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 '
     'subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an '
     'alphanumeric character (e.g. \'example.com\', regex used for validation is '
     '\'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')'),
    ('bad namespace name', 'POST', '/api/v1/namespaces', {'apiVersion': 'v1', 'kind': 'Namespace',
                                                          'metadata': {'name': 'a.b'}}, 'application/json', 't',
     422, 'Invalid', 'Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": a lowercase RFC 1123 label must '
     'consist of lower case alphanumeric characters or \'-\', and must start and end with an alphanumeric character '
     '(e.g. \'my-name\',  or \'123-abc\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?\')'),
    ('missing name', 'POST', CM, {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {}}, 'application/json', 't',
     422, 'Invalid', 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'),
    ('already exists', 'POST', CM, configmap('existing'), 'application/json', 't',
     409, 'AlreadyExists', 'configmaps "existing" already exists'),
    ('get missing', 'GET', CM + '/absent', None, 'application/json', 't',
     404, 'NotFound', 'configmaps "absent" not found'),
    ('stale resourceVersion', 'PUT', CM + '/existing',
     dict(configmap('existing'), metadata={'name': 'existing', 'resourceVersion': '1'}),
     'application/json', 't', 409, 'Conflict', 'Operation cannot be fulfilled on configmaps "existing": the object has '
     'been modified; please apply your changes to the latest version and try again'),
    ('CR before its CRD', 'POST', '/apis/cloud.google.com/v1/computeclasses',
     {'apiVersion': 'cloud.google.com/v1', 'kind': 'ComputeClass', 'metadata': {'name': 'c'}},
     'application/json', 't', 404, 'NotFound', 'the server could not find the requested resource'),
    ('CR unknown field', 'POST', NETWORKS + STRICT, network(type='Device', speed=1), 'application/json', 't',
     400, 'BadRequest', 'Network in version "v1" cannot be handled as a Network: strict decoding error: unknown field '
     '"spec.speed"'),
    ('CR bad enum', 'POST', NETWORKS, network(type='Fast'), 'application/json', 't',
     422, 'Invalid', 'Network.networking.gke.io "n1" is invalid: spec.type: Unsupported value: "Fast": supported values: '
     '"L2", "L3", "Device"'),
    ('CR wrong type', 'POST', NETWORKS, network(type='Device', parametersRef='vpc1'), 'application/json', 't',
     422, 'Invalid', 'Network.networking.gke.io "n1" is invalid: spec.parametersRef: Invalid value: "vpc1": '
     'spec.parametersRef in body must be of type object: "vpc1"'),
    ('CR missing required', 'POST', NETWORKS, network(type='Device', parametersRef={'group': 'networking.gke.io',
                                                                                    'kind': 'GKENetworkParamSet'}),
     'application/json', 't', 422, 'Invalid', 'Network.networking.gke.io "n1" is invalid: spec.parametersRef.name: '
     'Required value'),
    ('SMP on a CR', 'PATCH', NETWORKS + '/existing-net', {'spec': {'type': 'L3'}}, 'application/strategic-merge-patch+json',
     't', 415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: '
     'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml'),
    ('apply without fieldManager', 'PATCH', CM + '/existing', configmap('existing'), 'application/apply-patch+yaml', 't',
     400, 'BadRequest', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'),
    ('apply conflict', 'PATCH', CM + '/existing?fieldManager=other', dict(configmap('existing'), data={'a': 'z'}),
     'application/apply-patch+yaml', 't', 409, 'Conflict',
     # seed owns .data.a twice: by its create (an Update) and by its apply (conflict.go prints appliers without version).
     'Apply failed with 2 conflicts: conflicts with "seed":\n- .data.a\nconflicts with "seed" using v1:\n- .data.a'),
    ('apply with an undeclared field', 'PATCH', '/api/v1/namespaces/default/services/s?fieldManager=m',
     {'apiVersion': 'v1', 'kind': 'Service', 'metadata': {'name': 's'}, 'spec': {'topologyKeys': ['a']}},
     'application/apply-patch+yaml', 't', 500, None,
     'failed to create typed patch object (default/s; /v1, Kind=Service): .spec.topologyKeys: field not declared in schema'),
    ('unknown patch type', 'PATCH', CM + '/existing', {}, 'text/plain', 't',
     415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: '
     'application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, '
     'application/apply-patch+yaml'),
    ('create with a resourceVersion', 'POST', CM,
     dict(configmap('versioned'), metadata={'name': 'versioned', 'resourceVersion': '7'}),
     'application/json', 't', 500, None, 'resourceVersion should not be set on objects to be created'),
    ('unconditional update of a CR', 'PUT', NETWORKS + '/existing-net', network('existing-net', type='L3'),
     'application/json', 't', 422, 'Invalid', 'Network.networking.gke.io "existing-net" is invalid: metadata.resourceVersion: '
     'Invalid value: 0x0: must be specified for an update'),
    ('log of a pod without a node', 'GET', '/api/v1/namespaces/default/pods/lonely/log', None, 'application/json', 't',
     400, 'BadRequest', 'pod lonely does not have a host assigned'),
    ('bad label selector', 'GET', CM + '?labelSelector=a%20in%20(b', None, 'application/json', 't',
     400, 'BadRequest', None),
    ('unsupported field selector', 'GET', '/api/v1/namespaces/default/pods?fieldSelector=spec.image%3Dx', None,
     'application/json', 't', 400, 'BadRequest', 'field label not supported: spec.image'),
]


@pytest.fixture(scope='module')
def seeded(cluster):
    cluster.store.create(network('existing-net', type='Device'))
    cluster.ops.patch(cluster.api.find('', 'v1', 'configmaps'), 'default', 'existing', 'apply', configmap('existing'),
                      field_manager='seed')
    cluster.store.create({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'lonely', 'namespace': 'default'},
                          'spec': {'containers': [{'name': 'c', 'image': 'busybox'}]}})
    return cluster


@pytest.mark.parametrize('case', CASES, ids=[case[0] for case in CASES])
def test_refusal(seeded, case):
    method, path, body, content_type, token, code, reason, message = case[1:]
    before = seeded.store.revision
    status, document, _headers = call(seeded, method, path, body, content_type, token)
    assert (status, document.get('reason')) == (code, reason), document
    assert document['kind'] == 'Status' and document['apiVersion'] == 'v1' and document['status'] == 'Failure'
    assert document['metadata'] == {} and document['code'] == code
    if message is not None:
        assert document['message'] == message
    assert seeded.store.revision == before   # nothing was written


def test_invalid_status_names_causes(seeded):
    document = call(seeded, 'POST', NETWORKS, network(type='Fast'))[1]
    assert document['details'] == {'name': 'n1', 'group': 'networking.gke.io', 'kind': 'Network', 'causes': [
        {'reason': 'FieldValueNotSupported', 'message': 'Unsupported value: "Fast": supported values: "L2", "L3", "Device"',
         'field': 'spec.type'}]}


def test_warn_validation_returns_a_warning_header_and_stores(seeded):
    status, document, headers = call(seeded, 'POST', CM + '?fieldValidation=Warn', configmap('warned', datum={'x': 'y'}))
    assert status == 201 and 'datum' not in document
    assert headers['Warning'] == '299 - "unknown field \\"datum\\""'


def test_dry_run_stores_nothing_and_answers_as_stored(seeded):
    before = seeded.store.revision
    status, document, _headers = call(seeded, 'POST', CM + '?dryRun=All', configmap('dry'))
    assert status == 201 and document['metadata']['uid'] and document['metadata']['name'] == 'dry'
    assert seeded.store.revision == before and seeded.store.get('configmaps', 'dry', 'default') is None


def test_no_op_patch_keeps_resource_version_and_managed_fields(seeded):
    existing = seeded.store.get('configmaps', 'existing', 'default')
    status, document = call(seeded, 'PATCH', CM + '/existing?fieldManager=seed', configmap('existing'),
                            'application/apply-patch+yaml')[:2]
    assert status == 200
    assert document['metadata']['resourceVersion'] == existing['metadata']['resourceVersion']
    assert document['metadata']['managedFields'] == existing['metadata']['managedFields']


def test_forced_apply_takes_the_field(seeded):
    status, document = call(seeded, 'PATCH', CM + '/existing?fieldManager=other&force=true',
                            dict(configmap('existing'), data={'a': 'z'}), 'application/apply-patch+yaml')[:2]
    assert status == 200 and document['data'] == {'a': 'z'}
    owners = {entry['manager']: entry['fieldsV1'] for entry in document['metadata']['managedFields']}
    assert owners['other'] == {'f:data': {'.': {}, 'f:a': {}}}
    assert 'f:a' not in json.dumps(owners.get('seed', {}))


def test_strict_decoding_lists_every_field_in_the_real_order(seeded):
    """Typed kinds: document order, a repeated unknown key reported once as unknown.  The expected line is
    the one test/integration/apiserver/field_validation_test.go (testFieldValidationPost) expects for
    an equivalent body."""
    body = (b'{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "first", "name": "strict-order", '
            b'"labels": {"app": "x"}, "unknownMeta": "v"}, "spec": {"unknown1": "v", "unknownDupe": "a", "unknownDupe": "b", '
            b'"paused": true, "paused": false, "selector": {"matchLabels": {"app": "x"}}, "template": {"metadata": '
            b'{"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "busybox", "unknownNested": "v", '
            b'"imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}')
    status, document, _headers = call(seeded, 'POST', DEPLOY + STRICT, body)
    assert status == 400
    assert document['message'] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field '
        '"metadata.name", unknown field "metadata.unknownMeta", unknown field "spec.unknown1", unknown field '
        '"spec.unknownDupe", duplicate field "spec.paused", unknown field "spec.template.spec.containers[0].unknownNested", '
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy"')


def test_strict_decoding_of_a_custom_resource_lists_duplicates_then_unknown_fields(seeded):
    """Custom resources: every duplicate (document order), then the unknown fields pruning found
    (field_validation_test.go testFieldValidationPostCRD)."""
    body = (b'{"apiVersion": "networking.gke.io/v1", "kind": "Network", "metadata": {"name": "dupe", "name": "strict-cr", '
            b'"unknownMeta": "v"}, "spec": {"zeta": 1, "type": "Device", "type": "L3", "alpha": 2, "parametersRef": '
            b'{"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": "p", "name": "q", "extra": true}}}')
    status, document, _headers = call(seeded, 'POST', NETWORKS + STRICT, body)
    assert status == 400
    assert document['message'] == (
        'Network in version "v1" cannot be handled as a Network: strict decoding error: duplicate field "metadata.name", '
        'duplicate field "spec.type", duplicate field "spec.parametersRef.name", unknown field "metadata.unknownMeta", '
        'unknown field "spec.alpha", unknown field "spec.parametersRef.extra", unknown field "spec.zeta"')
