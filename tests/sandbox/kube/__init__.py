"""Kubernetes clusters for the tests: each one a real control plane (controlplane.py), with the simulations of
what runs beside it on GKE and OpenShift.

    from sandbox.kube import KubeHub
    hub = KubeHub()                                   # one per process; owns its clusters' control planes
    cluster = hub.start_cluster('proj/us-central1/c1', version='1.34.8-gke.1278000', admission_plugins=())
    cluster.url          # 'https://127.0.0.1:PORT'  (serving certificate for 127.0.0.1 and localhost)
    cluster.ca_pem       # PEM text of the cluster's own CA (kubeconfig certificate-authority-data)
    cluster.version      # '1.34.8-gke.1278000': the version the cluster was asked for (the API server is
                         # tests/controlplane's release, emulating an older minor: cluster.plane.emulated_minor)
    cluster.write_kubeconfig(path, context='c1')      # a kubeconfig with the sandbox's token (controlplane.ACCESS_TOKEN)
    cluster.store        # apistore.ApiStore: REST as the admin, for the simulations
    cluster.plane        # controlplane.ControlPlane: its processes, admin requests, pause/resume, the audit log
    hub.get(key); hub.stop_cluster(key); hub.stop_all()

Modules: controlplane.py (the processes), cluster.py (KubeCluster, KubeHub), apistore.py (the simulations' REST
access), exec.py and podexec.py (what `kubectl exec` runs), controllers.py and gke.py (GKE: Nodes from node
pools, GKE's installs and network controllers, DRANET's ResourceSlices, ComputeClass tolerations, node
auto-provisioning), autoprovisioning.py (ComputeClass rules), openshift*.py (OLM and the
operators of seed 004); crds/ and manifests/ (vendored, with SOURCES.md); pod-tools/ (the stand-in tools).
"""

from .cluster import KubeCluster, KubeHub
from .errors import KubeError

__all__ = ['KubeCluster', 'KubeHub', 'KubeError']
