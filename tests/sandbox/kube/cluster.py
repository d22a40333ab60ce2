"""KubeCluster (one API endpoint: schemas, registry, store, HTTPS server) and KubeHub (clusters by key)."""

import os
import shutil
import ssl
import tempfile
import threading
from http.server import ThreadingHTTPServer

import yaml

from .api import KubeRequestHandler
from .crds import CrdController
from .ops import Operations
from .resources import ApiRegistry, Resource
from .schema import SchemaCatalog
from .store import KubeStore

DEFAULT_VERSION = '1.34.8-gke.1278000'   # the seeds' GKE floor for RDMA (seed 001)


class _TlsServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address, handler, context, cluster):
        self.context = context
        self.cluster = cluster
        super().__init__(address, handler)

    def get_request(self):
        sock, address = self.socket.accept()
        return sock, address

    def finish_request(self, request, client_address):
        try:
            request = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            request.close()
            return
        self.RequestHandlerClass(request, client_address, self)

    def handle_error(self, request, client_address):
        pass


class KubeCluster:  # pylint: disable=too-many-instance-attributes
    """One stand-in cluster.  See the package docstring for the interface."""

    def __init__(self, key, version=DEFAULT_VERSION, openshift=False, host='127.0.0.1', port=0, verbose=False,
                 watch_history=2000):
        self.key = key
        self.version = version.lstrip('v')
        self.openshift = openshift
        self.verbose = verbose
        self.requests = []
        # Admission plugins beyond the stand-in's built-in behaviour, by their kube-apiserver names; gke.py adds
        # 'ExtendedResourceToleration' (GKE enables it), ops.py applies it to Pod creates.
        self.admission_plugins = set()
        self.subresource_handlers = {}
        self.schemas = SchemaCatalog(self.version)
        self.api = ApiRegistry(self.schemas)
        self.crds = CrdController(self)
        self.ops = Operations(self)
        self.store = KubeStore(self, history=watch_history)
        self.store.seed()
        self._openapi = {}
        self._dir = tempfile.mkdtemp(prefix='kube-standin-')
        from ..proxy import make_test_ca  # pylint: disable=import-outside-toplevel
        self.ca_file, cert, key_file = make_test_ca(self._dir, [host, 'localhost', 'kubernetes.default.svc'])
        with open(self.ca_file, encoding='ascii') as handle:
            self.ca_pem = handle.read()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key_file)
        self.server = _TlsServer((host, port), KubeRequestHandler, context, self)
        self.address = '%s:%d' % (host, self.server.server_address[1])
        self.url = 'https://%s' % self.address
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.2},
                                        name='kube-%s' % self.key, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        shutil.rmtree(self._dir, ignore_errors=True)

    def add_readonly(self, api_version, plural, kind, namespaced=True, schema=None, short_names=(), categories=()):
        """Serve ``plural`` of ``api_version`` for reading only, as an aggregated API server with only get,
        list and watch does (OLM's packageserver: ``packages.operators.coreos.com/v1`` PackageManifest).

        Discovery lists the verbs ``get``, ``list``, ``watch``; every write (POST, PUT, PATCH, DELETE, also
        ``dryRun``) answers 405 MethodNotAllowed in the apiserver's Status shape.  The objects are the
        store's: the simulation writes them as the system (``store.create`` / ``update`` / ``delete``), and
        get, list, watch, selectors and tables serve them like any custom resource.  ``schema`` is an
        OpenAPI v3 schema for the objects (default: any object).  Returns the Resource."""
        group, _slash, version = api_version.rpartition('/')
        resource = Resource(group, version, plural, kind, namespaced, short_names, (), categories,
                            crd='readonly:%s.%s' % (plural, group), verbs=('get', 'list', 'watch'))
        self.schemas.custom[(group, version, kind)] = schema or {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}
        self.api.add([resource])
        return resource

    def version_info(self):
        minor = str(self.schemas.minor)
        return {'major': '1', 'minor': minor, 'emulationMajor': '1', 'emulationMinor': minor,
                'minCompatibilityMajor': '1', 'minCompatibilityMinor': str(self.schemas.minor - 1),
                'gitVersion': 'v' + self.version, 'gitCommit': '0' * 40, 'gitTreeState': 'clean',
                'buildDate': '2026-01-01T00:00:00Z', 'goVersion': 'go1.24.9', 'compiler': 'gc', 'platform': 'linux/amd64'}

    def openapi_document(self, group, version):
        key = (group, version, self.api.generation)
        if key not in self._openapi:
            from .openapi import build_document  # pylint: disable=import-outside-toplevel
            resources = [resource for resource in self.api.all() if (resource.group, resource.version) == (group, version)]
            self._openapi[key] = build_document(self, group, version, resources)
        return self._openapi[key]

    def kubeconfig(self, context=None, token='sandbox-token'):
        import base64  # pylint: disable=import-outside-toplevel
        name = context or str(self.key).replace('/', '_')
        return {'apiVersion': 'v1', 'kind': 'Config', 'current-context': name, 'preferences': {},
                'clusters': [{'name': name, 'cluster': {'server': self.url, 'certificate-authority-data':
                                                        base64.b64encode(self.ca_pem.encode()).decode()}}],
                'contexts': [{'name': name, 'context': {'cluster': name, 'user': name}}],
                'users': [{'name': name, 'user': {'token': token}}]}

    def write_kubeconfig(self, path, context=None, token='sandbox-token'):
        with open(path, 'w', encoding='utf-8') as handle:
            yaml.safe_dump(self.kubeconfig(context, token), handle, default_flow_style=False)
        os.chmod(path, 0o600)
        return path


class KubeHub:
    """The clusters of one process, by key (a GKE cluster's 'project/location/name', or any name)."""

    def __init__(self, verbose=False):
        self._clusters = {}
        self._lock = threading.Lock()
        self.verbose = verbose

    def start_cluster(self, key, version=DEFAULT_VERSION, openshift=False):
        with self._lock:
            if key in self._clusters:
                return self._clusters[key]
            cluster = KubeCluster(key, version=version, openshift=openshift, verbose=self.verbose).start()
            self._clusters[key] = cluster
            return cluster

    def get(self, key):
        return self._clusters.get(key)

    def stop_cluster(self, key):
        with self._lock:
            cluster = self._clusters.pop(key, None)
        if cluster is not None:
            cluster.stop()

    def stop_all(self):
        for key in list(self._clusters):
            self.stop_cluster(key)

    def keys(self):
        return list(self._clusters)
