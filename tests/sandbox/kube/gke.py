"""GKE clusters of the Container API sandbox that come alive: each gets its own Kubernetes API stand-in.

``GkeClusters.sync(store)`` is the one hook the Container API sandbox calls (server.py, after every
API call, under the store lock): a cluster whose create operation is DONE (status RUNNING) gets a
``KubeCluster`` from the hub, with exec.py's ``pods/log``/``pods/exec`` and controllers.py's
controllers; its ``endpoint`` becomes ``127.0.0.1:PORT`` (gcloud writes ``server: https://ENDPOINT``
into the kubeconfig) and ``masterAuth.clusterCaCertificate`` the stand-in CA (base64 PEM, as GKE
gives it); its node pools drive the Nodes (create, resize, delete); a deleted cluster's endpoint
stops and its containers go.

SIMULATION (the control plane's address).  Real GKE clusters have a public or private endpoint IP
on port 443; the stand-in's is a loopback port, which ``gcloud container clusters get-credentials``
copies as it is.

Each sync also hands the controllers the cluster's view of Compute Engine (``compute_view``: the project's
VPCs, the subnets of the cluster's region), which GKE's simulated network controllers validate against.

``nodePools.setSize`` (``gcloud container clusters resize``), which clusters that come alive need,
is served by container.py for every sandbox.

Use::

    gke = GkeClusters(ready_delay=0.3)       # also hub=, runtime= (exec.PodRuntime(enabled=False): no podman)
    sandbox.kube = gke                       # server.py calls gke.sync(store) after every call
    gke.cluster('projects/P/locations/L/clusters/C')   # its KubeCluster (None until RUNNING)
    gke.stop()
"""

import base64
import copy
import threading
import types

from .. import container
from ..errors import ApiError

from .cluster import KubeHub
from .controllers import ClusterControllers, ComputeView
from .exec import PodRuntime, install_handlers


def compute_view(store, cluster_key):
    """The Compute sandbox's VPCs of the cluster's project and subnets of its region, as GKE's network
    controllers look them up (controllers.ClusterControllers.gke_networks)."""
    _projects, project, _locations, location = cluster_key.split('/')[:4]
    region = location if location.count('-') == 1 else location.rsplit('-', 1)[0]
    networks = [network['name'] for _key, network in store.items('compute.networks', 'projects/%s/global/networks/' % project)]
    subnets = {subnet['name']: {'ipCidrRange': subnet.get('ipCidrRange'), 'secondaryIpRanges': subnet.get('secondaryIpRanges') or []}
               for _key, subnet in store.items('compute.subnetworks', 'projects/%s/regions/%s/subnetworks/' % (project, region))}
    return ComputeView(networks, subnets)


class GkeClusters:
    """See the module docstring."""

    def __init__(self, hub=None, runtime=None, ready_delay=0.3):
        self.hub = hub or KubeHub()
        self.runtime = runtime or PodRuntime()
        self.ready_delay = ready_delay
        self._live = {}          # cluster key -> (KubeCluster, ClusterControllers, last pools seen)
        self.container_store = None   # the Container API sandbox's store, from the last sync
        self._lock = threading.Lock()

    def cluster(self, key):
        with self._lock:
            entry = self._live.get(key)
        return entry[0] if entry else None

    def controllers(self, key):
        with self._lock:
            entry = self._live.get(key)
        return entry[1] if entry else None

    def sync(self, store):
        """Start, update and stop cluster endpoints to match the Container API's clusters."""
        self.container_store = store
        clusters = dict(store.items('container.clusters'))
        with self._lock:
            for key in [key for key in self._live if key not in clusters]:
                self._stop(key)
            for key, cluster in clusters.items():
                if cluster.get('status') not in ('RUNNING', 'RECONCILING') and key not in self._live:
                    continue
                if key not in self._live:
                    self._start(key, cluster)
                kube, controllers, seen = self._live[key]
                cluster['endpoint'] = kube.address
                cluster['masterAuth'] = dict(cluster.get('masterAuth') or {},
                                             clusterCaCertificate=base64.b64encode(kube.ca_pem.encode()).decode())
                pools = [pool for _key, pool in store.items('container.nodePools', key + '/nodePools/')]
                controllers.set_compute(compute_view(store, key))
                if pools != seen:
                    controllers.set_gke(cluster, pools, key.split('/')[1])
                    self._live[key] = (kube, controllers, [dict(pool) for pool in pools])

    def _start(self, key, cluster):
        kube = self.hub.start_cluster(key, version=cluster.get('currentMasterVersion') or cluster.get('initialClusterVersion'))
        kube.admission_plugins.add('ExtendedResourceToleration')   # GKE enables it (ops.extended_resource_toleration)
        install_handlers(kube, self.runtime)
        controllers = ClusterControllers(kube, self.runtime, ready_delay=self.ready_delay)
        controllers.node_pools = NodePools(self, key)
        controllers.start()
        self._live[key] = (kube, controllers, None)

    def _stop(self, key):
        _kube, controllers, _seen = self._live.pop(key)
        controllers.stop()
        self.hub.stop_cluster(key)

    def stop(self):
        with self._lock:
            for key in list(self._live):
                self._stop(key)
        self.hub.stop_all()


class NodePools:
    """Node pool auto-creation's way into the Container API sandbox, for one cluster (controllers.py
    ``node_auto_provisioning``): ``check(body)`` judges a NodePool body by the sandbox's own nodePools.create rules
    (container._node_pool) without storing it; ``put(pool, size)`` stores the pool RUNNING with ``size`` nodes per zone,
    then syncs so its Nodes follow.

    SIMULATION (how an auto-created pool appears).  Real GKE creates it through an operation (CREATE_NODE_POOL, which
    ``gcloud container operations list`` shows) and the pool's VMs register as Nodes minutes later; the stand-in puts
    the pool straight into the sandbox's store, RUNNING, without an operation.  Lock order as in server.py: the
    Container store's lock, then GkeClusters' lock (the caller holds neither)."""

    def __init__(self, gke, key):
        self.gke, self.key = gke, key
        _projects, self.project, _locations, self.location, _clusters, self.cluster = key.split('/')[:6]

    def zones(self):
        return container._zones_of(self.location)  # pylint: disable=protected-access

    def check(self, body):
        store = self.gke.container_store
        with store.lock:
            cluster = store.get('container.clusters', self.key)
            if cluster is None:
                return None, 'the cluster is gone'
            call = types.SimpleNamespace(store=store)
            where = types.SimpleNamespace(project=self.project, location=self.location, cluster=self.cluster)
            try:
                return container._node_pool(call, where, cluster, copy.deepcopy(body), cluster['currentNodeVersion']), None  # pylint: disable=protected-access
            except ApiError as error:
                return None, str(error)

    def put(self, pool, size):
        store = self.gke.container_store
        with store.lock:
            if store.get('container.clusters', self.key) is None:
                return
            store.put('container.nodePools', '%s/nodePools/%s' % (self.key, pool['name']), dict(pool, initialNodeCount=size, status='RUNNING'))
            self.gke.sync(store)
