"""Which handler serves which discovery method id.

Handlers register themselves with ``@handles('compute.instances.insert', ...)``; the method ids are
the ones in the discovery documents, which are the same across compute v1/beta/alpha and container
v1/v1beta1.  A routed method without a handler answers 501 (not implemented by the sandbox).
"""

HANDLERS = {}


def handles(*method_ids):
    def register(function):
        for method_id in method_ids:
            HANDLERS[method_id] = function
        return function
    return register
