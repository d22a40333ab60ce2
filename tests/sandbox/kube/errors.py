"""KubeError: a refusal of the real API server, as the simulations see it (apistore.py raises it)."""


class KubeError(Exception):
    """``code`` is the HTTP status, ``status`` the Status body the API server answered with."""

    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code = code
        self.status = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': message,
                       'reason': reason, 'details': details or {}, 'code': code}
