"""KubeCluster (one real control plane: controlplane.py) and KubeHub (clusters by key)."""

import os
import re
import threading

import yaml

from .apistore import ApiStore
from .controlplane import ACCESS_TOKEN, ControlPlane, kubeconfig

DEFAULT_VERSION = '1.34.8-gke.1278000'   # the seeds' GKE floor for RDMA (seed 001)
# The control plane's own release is one (tests/controlplane/kubernetes/go.mod: 1.34); a cluster of an
# older minor runs it with --emulated-version, the compatibility mode kube-apiserver has for the three
# minors before its own (KEP-4330): that minor's APIs and features, as an upgraded cluster keeps them.
OWN_MINOR = 34
OLDEST_EMULATED_MINOR = OWN_MINOR - 3


def emulated_minor(version):
    """'1.33.5-gke.1308000' -> 33 when the control plane must emulate it, else None."""
    match = re.match(r'v?1\.(\d+)', version or '')
    minor = int(match.group(1)) if match else OWN_MINOR
    return max(minor, OLDEST_EMULATED_MINOR) if minor < OWN_MINOR else None


class KubeCluster:  # pylint: disable=too-many-instance-attributes
    """One test cluster: a real kube-apiserver, controller manager, scheduler and kwok (controlplane.py).

    ``url``, ``address``, ``ca_pem``, ``ca_file``: how clients reach it; ``store``: the simulations' REST
    access as the admin (apistore.py); ``write_kubeconfig(path)``: a kubeconfig with the sandbox's token."""

    def __init__(self, key, version=DEFAULT_VERSION, openshift=False, admission_plugins=()):
        self.key = key
        self.version = version.lstrip('v')
        self.openshift = openshift
        self.plane = ControlPlane(key, admission_plugins=admission_plugins, emulated_minor=emulated_minor(self.version))
        self.url = self.plane.url
        self.address = self.url.split('://', 1)[1]
        self.ca_pem = self.plane.ca_pem
        self.ca_file = self.plane.pki['ca']
        self.store = ApiStore(self.plane)

    def start(self):
        self.plane.start()
        return self

    @property
    def requests(self):
        """The clients' requests so far (controlplane.ControlPlane.requests)."""
        return self.plane.requests()

    def stop(self):
        self.plane.stop()

    def kubeconfig(self, context=None, token=ACCESS_TOKEN):
        return kubeconfig(context or str(self.key).replace('/', '_'), self.url, self.ca_pem, token)

    def write_kubeconfig(self, path, context=None, token=ACCESS_TOKEN):
        with open(path, 'w', encoding='utf-8') as handle:
            yaml.safe_dump(self.kubeconfig(context, token), handle, default_flow_style=False)
        os.chmod(path, 0o600)
        return path


class KubeHub:
    """The clusters of one process, by key (a GKE cluster's 'project/location/name', or any name)."""

    def __init__(self):
        self._clusters = {}
        self._lock = threading.Lock()

    def start_cluster(self, key, version=DEFAULT_VERSION, openshift=False, admission_plugins=()):
        with self._lock:
            if key in self._clusters:
                return self._clusters[key]
            cluster = KubeCluster(key, version=version, openshift=openshift, admission_plugins=admission_plugins)
            self._clusters[key] = cluster
        try:
            return cluster.start()
        except Exception:
            with self._lock:
                self._clusters.pop(key, None)
            raise

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
