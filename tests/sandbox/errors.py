"""Google API error responses, in the JSON shape the real Compute and Container APIs use.

Every refusal the sandbox makes is an ``ApiError``; the HTTP layer turns it into
``{"error": {"code", "message", "errors": [{"message", "domain", "reason"}], "status"}}``.
"""

HTTP_STATUS_NAMES = {
    400: 'INVALID_ARGUMENT',
    403: 'PERMISSION_DENIED',
    404: 'NOT_FOUND',
    409: 'ALREADY_EXISTS',
    412: 'FAILED_PRECONDITION',
    429: 'RESOURCE_EXHAUSTED',
    500: 'INTERNAL',
    501: 'UNIMPLEMENTED',
    503: 'UNAVAILABLE',
}


class ApiError(Exception):
    """A refusal with an HTTP code, a Google error reason and a human message."""

    def __init__(self, code, reason, message, status=None, headers=None, messages=None):
        super().__init__(message)
        # One entry of "errors" per problem (the real API lists every bad field of a body).
        self.messages = messages or [message]
        self.code = code
        self.reason = reason
        self.message = message
        self.status = status or HTTP_STATUS_NAMES.get(code, 'UNKNOWN')
        self.headers = headers or {}

    def to_json(self):
        return {
            'error': {
                'code': self.code,
                'message': self.message,
                'errors': [{'message': text, 'domain': 'global', 'reason': self.reason} for text in self.messages],
                'status': self.status,
            }
        }


def not_found(resource_path):
    return ApiError(404, 'notFound', "The resource '%s' was not found" % resource_path)


def already_exists(resource_path):
    return ApiError(409, 'alreadyExists', "The resource '%s' already exists" % resource_path)


def invalid(message):
    """Compute's semantic refusals (bad field value, rule broken): 400 / reason ``invalid``."""
    return ApiError(400, 'invalid', message)


def bad_request(message):
    """Payload-level refusals (unknown field, bad enum): 400 / reason ``badRequest``."""
    return ApiError(400, 'badRequest', message)


def resource_in_use(message):
    return ApiError(400, 'resourceInUseByAnotherResource', message)


def unknown_url(method, path):
    return ApiError(404, 'notFound', 'The requested URL %s %s was not found on this server.' % (method, path))
