"""OpenAPI v3 documents per group/version, in the shape kube-apiserver serves them.

kubectl reads ``components.schemas`` (x-kubernetes-group-version-kind, patch strategies) and checks
that the PATCH operation of the kind's item path lists the ``fieldValidation`` parameter before it
sends ``fieldValidation=Strict`` (k8s.io/cli-runtime resource.QueryParamVerifierV3), so each
resource gets its collection and item paths with the real operations and query parameters.
"""

COMMON = ('dryRun', 'fieldManager', 'fieldValidation', 'pretty')


def _param(name):
    return {'name': name, 'in': 'query', 'schema': {'type': 'string', 'uniqueItems': True}}


def _ref(name):
    return {'$ref': '#/components/schemas/' + name}


def build_document(cluster, group, version, resources):
    schemas = cluster.schemas.openapi_schemas(resources)
    paths = {}
    prefix = '/api/%s' % version if not group else '/apis/%s/%s' % (group, version)
    for resource in resources:
        if resource.crd:
            from .schema import crd_definition_name  # pylint: disable=import-outside-toplevel
            definition = crd_definition_name(resource)
        else:
            definition = cluster.schemas.kinds[(resource.group, resource.version, resource.kind)]
        gvk = {'group': resource.group, 'version': resource.version, 'kind': resource.kind}
        base = prefix + ('/namespaces/{namespace}/' if resource.namespaced else '/') + resource.plural
        body = {'content': {'application/json': {'schema': _ref(definition)}}, 'required': True}
        answer = {'200': {'description': 'OK', 'content': {'application/json': {'schema': _ref(definition)}}}}

        def operation(action, params, request=None, responses=None):
            op = {'operationId': '%s%s' % (action, resource.kind), 'parameters': [_param(name) for name in params],
                  'responses': responses or answer, 'x-kubernetes-action': action,
                  'x-kubernetes-group-version-kind': gvk}
            if request:
                op['requestBody'] = request
            return op
        # Custom resources take no strategic merge patch; kubectl reads that from this list (Patcher.gvkSupportsPatchOpenAPIV3).
        media_types = ('application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json') + \
            (() if resource.crd else ('application/strategic-merge-patch+json',))
        patch_body = {'content': {media: {'schema': _ref('io.k8s.apimachinery.pkg.apis.meta.v1.Patch')}
                                  for media in media_types}, 'required': True}
        paths[base] = {'get': operation('list', ('labelSelector', 'fieldSelector', 'limit', 'continue', 'resourceVersion',
                                                 'watch', 'allowWatchBookmarks', 'timeoutSeconds')),
                       'post': operation('post', COMMON, body),
                       'delete': operation('deletecollection', ('dryRun', 'propagationPolicy', 'labelSelector'))}
        paths[base + '/{name}'] = {'get': operation('get', ('pretty',)),
                                   'put': operation('put', COMMON, body),
                                   'patch': operation('patch', COMMON + ('force',), patch_body),
                                   'delete': operation('delete', ('dryRun', 'propagationPolicy', 'gracePeriodSeconds'))}
        if resource.has_status():
            paths[base + '/{name}/status'] = {'get': operation('get', ('pretty',)), 'put': operation('put', COMMON, body),
                                              'patch': operation('patch', COMMON + ('force',), patch_body)}
    return {'openapi': '3.0.0', 'info': {'title': 'Kubernetes', 'version': 'v' + cluster.version},
            'paths': paths, 'components': {'schemas': schemas}}
