"""Google API error responses, in the JSON shape the real Compute and Container APIs use.

Every refusal the sandbox makes is an ``ApiError``; the HTTP layer turns it into
``{"error": {"code", "message", "errors": [{"message", "domain", "reason"}], "status"}}``, plus
``details`` where the real API sends them: Kubernetes Engine answers every error with a
``google.rpc.RequestInfo`` detail carrying an opaque request id (the Google error model,
https://cloud.google.com/apis/design/errors#error_details; ``server.py`` adds it to every Container
API error in one place).
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

    def __init__(self, code, reason, message, status=None, headers=None, messages=None, domain='global', details=None):
        super().__init__(message)
        self.domain = domain
        self.details = list(details or [])
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
                'errors': [{'message': text, 'domain': self.domain, 'reason': self.reason} for text in self.messages],
                'status': self.status,
                **({'details': self.details} if self.details else {}),
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


def quota_exceeded(metric, limit, where):
    """The synchronous quota refusal: 403, domain ``usageLimits``, reason ``quotaExceeded``, message
    "Quota 'NETWORKS' exceeded. Limit: 5.0 globally." (response quoted in trailofbits/algo#1520;
    per-region quotas say "in region R" instead of "globally").  ``where``: 'globally' or 'in region R'."""
    return ApiError(403, 'quotaExceeded', "Quota '%s' exceeded. Limit: %.1f %s." % (metric, limit, where), domain='usageLimits')


def request_info(serial):
    """The ``google.rpc.RequestInfo`` detail Kubernetes Engine attaches to its errors (an opaque hex id)."""
    return {'@type': 'type.googleapis.com/google.rpc.RequestInfo', 'requestId': '0x%016x' % (serial * 0x9E3779B97F4A7C15 % (1 << 64))}
