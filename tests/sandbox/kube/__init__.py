"""A Kubernetes API server stand-in (pure Python): what kubectl 1.33 and kubernetes.core 6.x need.

Contract for the rest of the sandbox (controllers.py, exec.py, the Container API wiring)::

    from sandbox.kube import KubeHub
    hub = KubeHub()                                   # one per process; owns every cluster's HTTPS server
    cluster = hub.start_cluster('proj/us-central1/c1', version='1.34.8-gke.1278000', openshift=False)
    cluster.url          # 'https://127.0.0.1:PORT'  (certificate for 127.0.0.1 and localhost)
    cluster.ca_pem       # PEM text of the cluster's own CA (kubeconfig certificate-authority-data)
    cluster.ca_file      # the same, as a file
    cluster.version      # '1.34.8-gke.1278000' (/version gitVersion is 'v' + this)
    cluster.write_kubeconfig(path, context='c1', token='any')   # a kubeconfig with the CA and a bearer token
    hub.get('proj/us-central1/c1') is cluster; hub.stop_cluster('proj/us-central1/c1'); hub.stop_all()

The store, as the system (no validation of who asks; resourceVersion bumps and watch events as for
any client write).  ``ref`` is kubectl's ``resource.group`` name: 'pods', 'nodes', 'daemonsets.apps',
'networks.networking.gke.io'.  Objects are plain dicts as the API serves them; every call returns copies::

    store = cluster.store
    store.get(ref, name, namespace=None)                      -> dict or None
    store.list(ref, namespace=None, label_selector=None, field_selector=None)   -> [dict]
    store.create(obj)                   -> stored dict (validated against the schema like a client's
                                           create; raises KubeError (.status, .code) when refused);
                                           create/update/update_status take field_manager='name' too
    store.update(obj)                   -> replace the main resource (status kept where the kind has
                                           a status subresource, as the real API); no-op keeps rv
    store.update_status(obj)            -> replace only .status
    store.delete(ref, name, namespace=None, propagation='Background')   -> the deleted dict or None
    q = store.subscribe()               -> queue.Queue of (event_type, obj) for every change:
                                           'ADDED' / 'MODIFIED' / 'DELETED', obj a copy after the change
    store.unsubscribe(q)

Subresource hooks (``exec.py`` registers them)::

    cluster.subresource_handlers['pods/log'] = fn(request, pod, query)
    cluster.subresource_handlers['pods/exec'] = fn(request, pod, query)

``request`` is the ``http.server.BaseHTTPRequestHandler`` of the call, already authenticated: its
``command``, ``headers``, ``rfile``/``wfile`` and ``connection`` (the TLS socket, for the WebSocket
``Connection: Upgrade`` of exec) are the handler's to use; the function writes the whole response
itself (``request.send_response``...) and returns nothing.  ``pod`` is the stored Pod dict, ``query``
the parsed query string (``{'container': ['c'], 'command': ['sh', '-c', 'x'], ...}``).  Until a
handler is registered, the stand-in answers as the real API does for a pod with no node: 400
BadRequest ``pod NAME does not have a host assigned``.  After registering, set
``cluster.subresource_handlers`` entries only; nothing else is needed.

Standalone: ``tests/sandbox/run --kube-standalone NAME [--kube-version 1.34.8-gke.1278000]
[--openshift]`` prints ``kube NAME on https://127.0.0.1:PORT kubeconfig PATH``.

Modules (core): resources.py (the built-in resource table, the live registry), schema.py (schemas
from kubernetes-validate + CRDs, validation), openapi.py (OpenAPI v3 documents), store.py (objects,
resourceVersion, watch, garbage collection), ops.py (the write verbs), defaults.py (built-in
defaults), patch.py (JSON/merge/strategic merge patch), managed.py (managedFields, server-side
apply), crds.py (CRD registration), selectors.py, tables.py (``as=Table``), api.py (the HTTPS front
end), errors.py (Status bodies), cluster.py (KubeCluster, KubeHub); crds/ and manifests/ (vendored,
with SOURCES.md).  KUBE-RUNTIME's: controllers.py, gke.py, exec.py.
"""

from .cluster import KubeCluster, KubeHub
from .errors import KubeError

__all__ = ['KubeCluster', 'KubeHub', 'KubeError']
