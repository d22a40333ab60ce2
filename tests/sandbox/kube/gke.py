"""GKE clusters of the Container API sandbox that come alive: each gets its own real control plane.

``GkeClusters.sync(store)`` is the one hook the Container API sandbox calls (server.py, after every
API call, under the store lock): a cluster that appears starts its control plane in the background
(controlplane.py, through the hub: kube-apiserver with GKE's admission plugins, controller manager,
scheduler, kwok), its exec runtime (exec.py) and controllers.py's GKE controllers (GKE's Pod admission of
ComputeClass Pods among them).  Once the cluster is RUNNING (its create operation DONE) its
``endpoint`` becomes the API server's ``127.0.0.1:PORT`` (gcloud writes ``server: https://ENDPOINT``
into the kubeconfig) and ``masterAuth.clusterCaCertificate`` that server's CA (base64 PEM, as GKE
gives it); its node pools drive the Nodes (create, resize, delete); a deleted cluster's control
plane stops.

SIMULATION (the control plane's address).  Real GKE clusters have a public or private endpoint IP
on port 443; this one's is a loopback port, which ``gcloud container clusters get-credentials``
copies as it is.

Each sync also hands the controllers the cluster's view of Compute Engine (``compute_view``: the project's
VPCs, the subnets of the cluster's region), which GKE's simulated network controllers validate against.

Use::

    gke = GkeClusters()                      # also hub=, runtime= (an exec.ExecRuntime; default StandinTools)
    sandbox.kube = gke                       # server.py calls gke.sync(store) after every call
    gke.cluster('projects/P/locations/L/clusters/C')   # its KubeCluster (None until it is created)
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
from .exec import StandinTools

# GKE enables this admission plugin on its clusters: a Pod that requests nvidia.com/gpu tolerates its taint.
GKE_ADMISSION_PLUGINS = ('ExtendedResourceToleration',)


def compute_view(store, cluster_key):
    """The Compute sandbox's VPCs of the cluster's project and subnets of its region, as GKE's network
    controllers look them up (controllers.ClusterControllers.gke_networks)."""
    _projects, project, _locations, location = cluster_key.split('/')[:4]
    region = location if location.count('-') == 1 else location.rsplit('-', 1)[0]
    networks = [network['name'] for _key, network in store.items('compute.networks', 'projects/%s/global/networks/' % project)]
    subnets = {subnet['name']: {'ipCidrRange': subnet.get('ipCidrRange'), 'secondaryIpRanges': subnet.get('secondaryIpRanges') or []}
               for _key, subnet in store.items('compute.subnetworks', 'projects/%s/regions/%s/subnetworks/' % (project, region))}
    return ComputeView(networks, subnets)


class LiveCluster:  # pylint: disable=too-few-public-methods
    """One GKE cluster's control plane, started in the background as soon as the cluster is created (its
    create operation runs meanwhile, as GKE's control plane boots while the operation is RUNNING)."""

    def __init__(self, gke, key, version):
        self.key = key
        self.kube = None
        self.controllers = None
        self.runtime = gke.runtime_factory()
        self.seen = None
        self.error = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._start, args=(gke, version), name='gke-start-%s' % key, daemon=True)
        self._thread.start()

    def _start(self, gke, version):
        try:
            self.kube = gke.hub.start_cluster(self.key, version=version, admission_plugins=GKE_ADMISSION_PLUGINS)
            self.runtime.serve(self.kube.plane)
            self.controllers = ClusterControllers(self.kube)
            self.controllers.node_pools = NodePools(gke, self.key)
            self.controllers.start()
        except Exception as error:  # pylint: disable=broad-exception-caught
            self.error = error
        finally:
            self._ready.set()

    def wait(self):
        self._ready.wait()
        if self.error is not None:
            raise self.error
        return self

    def stop(self, hub):
        self._ready.wait()
        if self.controllers is not None:
            self.controllers.stop()
        self.runtime.stop()
        hub.stop_cluster(self.key)


class GkeClusters:
    """See the module docstring."""

    def __init__(self, hub=None, runtime=None):
        self.hub = hub or KubeHub()
        # Each cluster's exec runtime (exec.py): the stand-in tools, unless the test gives one.
        self.runtime_factory = (lambda: runtime) if runtime is not None else StandinTools
        self._live = {}          # cluster key -> LiveCluster
        self.container_store = None   # the Container API sandbox's store, from the last sync
        self._lock = threading.Lock()

    def cluster(self, key):
        with self._lock:
            live = self._live.get(key)
        return live.wait().kube if live else None

    def controllers(self, key):
        with self._lock:
            live = self._live.get(key)
        return live.wait().controllers if live else None

    def sync(self, store):
        """Start, update and stop control planes to match the Container API's clusters."""
        self.container_store = store
        clusters = dict(store.items('container.clusters'))
        with self._lock:
            for key in [key for key in self._live if key not in clusters]:
                self._live.pop(key).stop(self.hub)
            for key, cluster in clusters.items():
                if cluster.get('status') in ('ERROR', 'STOPPING') and key not in self._live:
                    continue
                if key not in self._live:
                    self._live[key] = LiveCluster(self, key, cluster.get('currentMasterVersion') or cluster.get('initialClusterVersion'))
                if cluster.get('status') not in ('RUNNING', 'RECONCILING'):
                    continue
                live = self._live[key].wait()
                cluster['endpoint'] = live.kube.address
                cluster['masterAuth'] = dict(cluster.get('masterAuth') or {},
                                             clusterCaCertificate=base64.b64encode(live.kube.ca_pem.encode()).decode())
                pools = [pool for _key, pool in store.items('container.nodePools', key + '/nodePools/')]
                live.controllers.set_compute(compute_view(store, key))
                if pools != live.seen:
                    live.controllers.set_gke(cluster, pools, key.split('/')[1])
                    live.seen = [dict(pool) for pool in pools]

    def stop(self):
        with self._lock:
            for key in list(self._live):
                self._live.pop(key).stop(self.hub)
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
