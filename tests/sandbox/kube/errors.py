"""Status bodies exactly as the real kube-apiserver writes them (k8s.io/apimachinery/pkg/api/errors).

Shape: ``{"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": ...,
"reason": ..., "details": {"name", "group", "kind", "causes"}, "code": ...}`` with empty members
left out (the Go struct's ``omitempty``).  For NotFound/AlreadyExists/Conflict ``details.kind`` is
the resource (``deployments``), for Invalid the kind (``Deployment``), as errors.go sets them.
"""


class KubeError(Exception):
    """A refusal: ``code`` is the HTTP status, ``status`` the Status body, ``headers`` extra headers."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.status = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': message}
        if reason:
            self.status['reason'] = reason
        details = {key: value for key, value in (details or {}).items() if value not in (None, '', [])}
        if details or reason in ('NotFound', 'MethodNotAllowed') and details is not None:
            self.status['details'] = details
        self.status['code'] = code
        self.headers = headers or {}


def _qualified(resource):
    return resource.group_resource


def not_found(resource, name):
    return KubeError(404, 'NotFound', '%s "%s" not found' % (_qualified(resource), name),
                     {'name': name, 'group': resource.group, 'kind': resource.plural})


def namespace_not_found(name):
    return KubeError(404, 'NotFound', 'namespaces "%s" not found' % name, {'name': name, 'kind': 'namespaces'})


def unknown_resource():
    """What the real server answers for a group/version/resource it does not serve (a CR before its CRD)."""
    return KubeError(404, 'NotFound', 'the server could not find the requested resource', {})


def already_exists(resource, name):
    return KubeError(409, 'AlreadyExists', '%s "%s" already exists' % (_qualified(resource), name),
                     {'name': name, 'group': resource.group, 'kind': resource.plural})


def conflict(resource, name, why='the object has been modified; please apply your changes to the latest version and try again'):
    return KubeError(409, 'Conflict', 'Operation cannot be fulfilled on %s "%s": %s' % (_qualified(resource), name, why),
                     {'name': name, 'group': resource.group, 'kind': resource.plural})


def invalid(resource, name, causes):
    """422 Invalid: ``causes`` is [(reason, field, message)] with message as field.Error.ErrorBody() writes it."""
    texts = ['%s: %s' % (field, message) if field else message for _reason, field, message in causes]
    summary = texts[0] if len(texts) == 1 else '[%s]' % ', '.join(texts)
    return KubeError(422, 'Invalid', '%s.%s "%s" is invalid: %s' % (resource.kind, resource.group, name, summary)
                     if resource.group else '%s "%s" is invalid: %s' % (resource.kind, name, summary),
                     {'name': name, 'group': resource.group, 'kind': resource.kind,
                      'causes': [{'reason': reason, 'message': message, 'field': field}
                                 for reason, field, message in causes]})


def bad_request(message):
    return KubeError(400, 'BadRequest', message)


def forbidden(resource, name, message, cause=None):
    details = {'name': name, 'group': resource.group, 'kind': resource.plural}
    if cause:
        details['causes'] = [cause]
    return KubeError(403, 'Forbidden', '%s "%s" is forbidden: %s' % (_qualified(resource), name, message), details)


def unauthorized():
    return KubeError(401, 'Unauthorized', 'Unauthorized')


def method_not_allowed():
    """go-restful's 405 for a path served without this verb, as the apiserver's ServiceErrorHandler words it
    (apimachinery errors.NewGenericServerResponse: ``details`` is a non-nil, empty StatusDetails, so ``{}``)."""
    return KubeError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {})


def unsupported_media_type(content_type, accepted):
    return KubeError(415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media '
                     'types include: %s' % ', '.join(accepted), {})


def expired(message):
    return KubeError(410, 'Expired', message)


def internal(message):
    """A plain Go error reaching the handler: code 500 and no reason (ErrorToAPIStatus' default branch)."""
    return KubeError(500, '', message)
