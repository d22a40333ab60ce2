"""What GKE runs beside a cluster's control plane, as controllers of the real API server: Nodes from the
node pools of the Container API sandbox, what GKE installs, GKE's multi-network controllers, DRANET's
ResourceSlices, GKE's toleration of ComputeClass Pods and node pool auto-creation for ComputeClasses.  The Kubernetes controllers themselves
(DaemonSet, Deployment, Job, garbage collection, namespace deletion), scheduling and the Pods' lifecycle are the
real kube-controller-manager, kube-scheduler and kwok (controlplane.py).

Every rule below is marked SIMULATION with what the real component does and what the stand-in does
instead; README-runtime.md lists them all with what the stand-in cannot show.  One thread per cluster
runs them all, every ``TICK`` seconds or at once when woken, and reconciles from scratch each time
(level-triggered, like the real controllers), writing only what differs, so a quiet cluster makes no writes.

Use::

    controllers = ClusterControllers(cluster).start()
    controllers.set_gke(gke_cluster_dict, [node_pool_dict, ...], project)   # GKE: nodes follow the pools
    controllers.stop()

Hooks for other simulations (openshift.py) and for tests::

    controllers.add(fn)            # fn(store) runs on this loop after the built-in controllers, every pass;
                                   # an exception is kept in controllers.errors and the loop goes on
    controllers.pause(name)        # stop one controller (names: GKE_CONTROLLERS, or an added fn's __name__) until
    controllers.resume(name)       # resumed: its objects keep the status they have, however the spec changes
"""

import concurrent.futures
import copy
import functools
import hashlib
import json
import os
import pathlib
import re
import sys
import threading
import time
import traceback
import uuid

import yaml

from . import autoprovisioning, errors
from .apistore import now_rfc3339

TICK = 0.5
NODE_WRITERS = 8   # threads that write Nodes at once (nodes_from_pools)
# The built-in controllers in the order one pass runs them (names for pause()/resume()); GKE's run first,
# on GKE clusters only.
GKE_CONTROLLERS = ('gke-installs', 'nodes-from-pools', 'dranet-slices', 'gke-networks', 'compute-class-tolerations',
                   'node-auto-provisioning')
CRD_DIR = pathlib.Path(__file__).resolve().parent / 'crds'
_RANDOM_CHARS = 'bcdfghjklmnpqrstvwxz2456789'   # k8s.io/apimachinery/pkg/util/rand: no vowels, no 0/1/3


# What a kubelet reports of its machine (the stand-in writes these; kwok the conditions and heartbeats).
NODE_STATUS_FIELDS = ('capacity', 'allocatable', 'addresses', 'nodeInfo')


def _suffix(seed, length=5):
    """A deterministic stand-in for the random name suffixes of generateName (same alphabet)."""
    digest = hashlib.sha256(seed.encode()).digest()
    return ''.join(_RANDOM_CHARS[byte % len(_RANDOM_CHARS)] for byte in digest[:length])


# quantities ---------------------------------------------------------------------------------------
_SUFFIXES = {'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30, 'Ti': 2 ** 40, 'Pi': 2 ** 50, 'Ei': 2 ** 60,
             'n': 1e-9, 'u': 1e-6, 'm': 1e-3, 'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18}


def quantity(value):
    """A resource.Quantity string as a float (cpu in cores, memory in bytes)."""
    text = str(value).strip()
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix) and text[:-len(suffix)].replace('.', '', 1).lstrip('+-').isdigit():
            return float(text[:-len(suffix)]) * _SUFFIXES[suffix]
    return float(text)


def pod_requests(pod):
    """Effective requests (pkg/api/v1/resource PodRequests): max(sum of containers, largest init
    container), a container's limits standing in for requests it does not give."""
    def of(container):
        resources = container.get('resources') or {}
        merged = dict(resources.get('limits') or {})
        merged.update(resources.get('requests') or {})
        return {name: quantity(amount) for name, amount in merged.items()}
    total = {}
    for container in pod['spec'].get('containers') or []:
        for name, amount in of(container).items():
            total[name] = total.get(name, 0) + amount
    for container in pod['spec'].get('initContainers') or []:
        for name, amount in of(container).items():
            total[name] = max(total.get(name, 0), amount)
    return total


# selectors ----------------------------------------------------------------------------------------
def _expression_matches(expression, value_of):
    key, operator, values = expression['key'], expression['operator'], expression.get('values') or []
    present, value = value_of(key)
    if operator == 'In':
        return present and value in values
    if operator == 'NotIn':
        return not present or value not in values
    if operator == 'Exists':
        return present
    if operator == 'DoesNotExist':
        return not present
    if operator in ('Gt', 'Lt') and present:
        try:
            return int(value) > int(values[0]) if operator == 'Gt' else int(value) < int(values[0])
        except ValueError:
            return False
    return False


def label_selector_matches(selector, labels):
    """metav1.LabelSelector (matchLabels + matchExpressions) against labels."""
    labels = labels or {}
    if any(labels.get(key) != value for key, value in (selector.get('matchLabels') or {}).items()):
        return False
    return all(_expression_matches(expression, lambda key: (key in labels, labels.get(key)))
               for expression in selector.get('matchExpressions') or [])


def node_affinity_matches(pod, node):
    """nodeSelector and requiredDuringSchedulingIgnoredDuringExecution (terms ORed, expressions ANDed)."""
    labels = node['metadata'].get('labels') or {}
    if any(labels.get(key) != value for key, value in (pod['spec'].get('nodeSelector') or {}).items()):
        return False
    required = ((pod['spec'].get('affinity') or {}).get('nodeAffinity') or {}).get('requiredDuringSchedulingIgnoredDuringExecution')
    if not required:
        return True
    fields = {'metadata.name': node['metadata']['name']}
    for term in required.get('nodeSelectorTerms') or []:
        if all(_expression_matches(e, lambda key: (key in labels, labels.get(key))) for e in term.get('matchExpressions') or []) and \
                all(_expression_matches(e, lambda key: (key in fields, fields.get(key))) for e in term.get('matchFields') or []):
            if term.get('matchExpressions') or term.get('matchFields'):
                return True
    return False


def tolerates(tolerations, taint):
    for toleration in tolerations:
        if toleration.get('effect') and toleration['effect'] != taint['effect']:
            continue
        if toleration.get('operator') == 'Exists':
            if not toleration.get('key') or toleration['key'] == taint['key']:
                return True
        elif toleration.get('key') == taint['key'] and toleration.get('value', '') == taint.get('value', ''):
            return True
    return False


def untolerated_taint(pod, node, effects=('NoSchedule', 'NoExecute')):
    """The first taint of ``node`` the pod does not tolerate, or None.  (On GKE clusters the API server's
    ExtendedResourceToleration admission has written the tolerations for extended resources into the Pod.)"""
    tolerations = list(pod['spec'].get('tolerations') or [])
    for taint in node['spec'].get('taints') or []:
        if taint['effect'] in effects and not tolerates(tolerations, taint):
            return taint
    return None


@functools.lru_cache(maxsize=None)
def _parsed_yaml(path):
    # Parsed once per process: the controllers install their CRDs on every pass, and parsing a CRD's
    # YAML costs more CPU than the requests of the pass together.
    with open(path, encoding='utf-8') as handle:
        return yaml.load(handle, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))


def load_yaml(path):
    """The YAML document at ``path`` (a copy the caller may change)."""
    return copy.deepcopy(_parsed_yaml(str(path)))


CRD_TIMEOUT = 120   # seconds for a new CRD to be served; generous: CI machines are slow and loaded


class SystemWrites:
    """The simulated controllers' writes as the system (``self.store``): a create that someone else made first,
    or a status write on an object that changed or went since it was read, is left to the next pass."""

    def _install_crd(self, path, wait=False):
        """Create the vendored CRD at ``path`` unless it exists; with ``wait``, return once the API server serves
        it (Established, in discovery, its storage ready: a list answers), as OLM's InstallPlan waits for a
        bundle's CRDs before the CSV goes on. -> the CRD's name (plural.group)."""
        crd = load_yaml(path)
        name = crd['metadata']['name']
        if self.store.get('customresourcedefinitions.apiextensions.k8s.io', name) is None:
            self._create(crd)
        deadline = time.monotonic() + CRD_TIMEOUT
        while wait:
            try:
                self.store.list(name)
                return name
            except (KeyError, errors.KubeError) as error:
                # KeyError: not in discovery yet; 429 "storage is (re)initializing": its watch cache is starting.
                if isinstance(error, errors.KubeError) and error.code != 429 or time.monotonic() > deadline:
                    raise RuntimeError('CRD %s not served after %d s: %s' % (name, CRD_TIMEOUT, error)) from None
                time.sleep(0.1)
        return name

    def _serves(self, ref):
        """Whether the API server serves ``ref`` (in discovery)."""
        try:
            return self.store.resource(ref) is not None
        except (errors.KubeError, KeyError):   # find_ref: KeyError for a resource the cluster does not serve
            return False

    def _create(self, obj):
        try:
            return self.store.create(obj)
        except errors.KubeError as error:
            if error.code != 409:
                raise
            return None

    def _update_status(self, obj, status):
        if obj.get('status') == status:
            return obj
        updated = copy.deepcopy(obj)
        updated['status'] = status
        return self._write_unless_stale(self.store.update_status, updated)

    def _set_finalizer(self, obj, finalizer, present):
        finalizers = list(obj['metadata'].get('finalizers') or [])
        if (finalizer in finalizers) == present:
            return obj
        changed = copy.deepcopy(obj)
        changed['metadata']['finalizers'] = finalizers + [finalizer] if present else [item for item in finalizers if item != finalizer]
        return self._write_unless_stale(self.store.update, changed)

    @staticmethod
    def _write_unless_stale(write, obj):
        try:
            return write(obj)
        except errors.KubeError as error:
            if error.code in (404, 409):   # gone, or changed since read: the next pass sees it
                return None
            raise


class ClusterControllers(SystemWrites):  # pylint: disable=too-many-instance-attributes
    """See the module docstring."""

    def __init__(self, cluster, tick=TICK):
        self.cluster = cluster
        self.store = cluster.store
        self.tick = tick
        self.gke = None            # (cluster dict, [pool dicts], project) from the Container API sandbox
        self.node_pools = None     # gke.NodePools: node pool auto-creation's way into the Container API sandbox
        self.compute = None        # ComputeView of the cluster's project and region (gke_networks reads it)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = None
        self.errors = []
        self.extra = []            # reconcilers added with add(), run after the built-in ones
        self.paused = set()        # controller names pause() stopped
        self._node_writers = None  # nodes_from_pools' thread pool, made on first use

    # lifecycle ---------------------------------------------------------------------------------
    def start(self):
        self._thread = threading.Thread(target=self._loop, name='kube-controllers-%s' % self.cluster.key, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._node_writers is not None:
            self._node_writers.shutdown(wait=False)

    def set_gke(self, gke_cluster, pools, project):
        with self._lock:
            self.gke = (copy.deepcopy(gke_cluster), copy.deepcopy(pools), project)
        self._wake.set()

    def set_compute(self, view):
        """The Compute Engine networks the GKE network controller validates against (a ComputeView)."""
        with self._lock:
            changed, self.compute = view != self.compute, view
        if changed:
            self._wake.set()

    def add(self, reconcile):
        """Run ``reconcile(store)`` on this loop after the built-in controllers, on every pass."""
        with self._lock:
            self.extra.append(reconcile)
        self._wake.set()
        return reconcile

    def pause(self, name):
        """Stop the controller ``name`` (one of GKE_CONTROLLERS, or an added function's ``__name__``) until resume()."""
        with self._lock:
            self.paused.add(name)

    def resume(self, name):
        with self._lock:
            self.paused.discard(name)
        self._wake.set()

    def _runs(self, name):
        with self._lock:
            return name not in self.paused

    def _loop(self):
        # Level-triggered, as the real controllers are: every pass reads what it needs from the API server and
        # writes only what differs; a pass runs every TICK seconds, or at once when set_gke/add/resume wake it.
        while not self._stop.is_set():
            self._wake.wait(self.tick)
            if self._stop.is_set():
                return
            self._wake.clear()
            try:
                self.reconcile()
            except errors.KubeError as error:
                # 429 "storage is (re)initializing": a CRD established a moment ago, whose storage the API server
                # is still starting; the real controllers requeue and so does the next pass.
                if error.code != 429 and not self._stop.is_set():
                    self.errors.append('%s: %s' % (type(error).__name__, error))
            except OSError as error:
                # The API server stopping under a pass (a cluster being deleted): the next pass, if any, retries.
                if not self._stop.is_set():
                    self.errors.append('%s: %s' % (type(error).__name__, error))
            except Exception:  # pylint: disable=broad-exception-caught
                # A controller bug must not kill the loop silently; it is kept for tests to show.
                self.errors.append(traceback.format_exc())
                sys.stderr.write('kube simulation controllers: %s\n' % self.errors[-1])

    def reconcile(self):
        with self._lock:
            gke, extra = self.gke, list(self.extra)
        if gke is not None:
            for name in GKE_CONTROLLERS:
                if self._runs(name):
                    getattr(self, name.replace('-', '_'))(*gke)
        for reconcile in extra:
            if self._runs(reconcile.__name__):
                try:
                    reconcile(self.store)
                except Exception:  # pylint: disable=broad-exception-caught
                    self.errors.append(traceback.format_exc())
                    sys.stderr.write('kube simulation controllers (%s): %s\n' % (reconcile.__name__, self.errors[-1]))

    # GKE ----------------------------------------------------------------------------------------
    def gke_installs(self, gke_cluster, pools, project):
        """SIMULATION (what GKE installs on its clusters; seeds 001 and 003).  Real GKE's addon manager
        installs its CRDs and objects as the cluster's features require.  The stand-in creates: on every
        GKE cluster the ComputeClass CRD (cloud.google.com); on multi-networking clusters the
        networking.gke.io CRDs (Network, GKENetworkParamSet) and the ``default`` Network (type L3, the
        Pod network every Pod's eth0 uses); on clusters with an RDMA node pool (gpuDirectConfig RDMA or
        the DRANET label cloud.google.com/gke-networking-dra-driver=true) DRANET's DeviceClass
        ``mrdma.google.com`` (resource.k8s.io, where the cluster's version serves it)."""
        del project
        self._install_crd(CRD_DIR / 'ComputeClass.yaml')
        if (gke_cluster.get('networkConfig') or {}).get('enableMultiNetworking'):
            for name in ('Network.yaml', 'GKENetworkParamSet.yaml'):
                self._install_crd(CRD_DIR / name)
            if not self._serves('networks.networking.gke.io'):
                return   # established a moment ago, not in discovery yet: the next pass goes on
            if self.store.get('networks.networking.gke.io', 'default') is None:
                self._create({'apiVersion': 'networking.gke.io/v1', 'kind': 'Network', 'metadata': {'name': 'default'},
                              'spec': {'type': 'L3'}})
            network = self.store.get('networks.networking.gke.io', 'default')
            if network is not None:
                ready = {'conditions': [{'type': 'Ready', 'status': 'True', 'reason': 'GNPParamsReady', 'message': '',
                                         'lastTransitionTime': network['metadata']['creationTimestamp']}]}
                self._update_status(network, ready)
        if any(_is_rdma_pool(pool) for pool in pools) and self._serves('deviceclasses.resource.k8s.io'):
            if self.store.get('deviceclasses.resource.k8s.io', 'mrdma.google.com') is None:
                self._create({'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass', 'metadata': {'name': 'mrdma.google.com'},
                              'spec': {'selectors': [{'cel': {'expression': "device.driver == 'mrdma.google.com'"}}]}})

    def nodes_from_pools(self, gke_cluster, pools, project):
        """SIMULATION (GKE node pools -> Nodes).  Real GKE: each node pool is a managed instance group
        per zone whose VMs register as Nodes via the kubelet; resize adds or removes VMs.  The stand-in
        makes ``initialNodeCount`` Nodes per zone of each RUNNING pool (``initialNodeCount`` is what the
        Container API sandbox keeps as the pool's size), deletes Nodes of pools or sizes that went away,
        and keeps each Node's labels, taints, capacity and annotations as ``node_for`` builds them."""
        wanted = {}
        non_gpu_pool = any(not _gpu_count(pool) for pool in pools)
        for pool in pools:
            if pool.get('status') not in ('RUNNING', 'RECONCILING'):
                continue
            for zone_index, zone in enumerate(pool.get('locations') or []):
                for index in range(int(pool.get('initialNodeCount') or 0)):
                    node = node_for(gke_cluster, pool, project, zone, zone_index, index, taint_gpus=non_gpu_pool)
                    node['metadata']['annotations'].update(standin_faults(pool, zone_index, index))
                    wanted[node['metadata']['name']] = node
        # One list of the Nodes and one of each multi-network kind per pass, whatever the node count (a read per Node made a
        # pass of a 256-node cluster 768 requests, every TICK).
        existing = {}
        for node in self.store.list('nodes'):
            name = node['metadata']['name']
            if name not in wanted and node['metadata'].get('labels', {}).get('cloud.google.com/gke-nodepool'):
                self.store.delete('nodes', name)
            else:
                existing[name] = node
        attachments = self._network_attachments() if wanted else None
        for node in wanted.values():
            self._network_resources(node, pools, attachments)
        # SIMULATION (registration is concurrent, as each VM's kubelet registers its own Node): the Nodes that need a write
        # are written from NODE_WRITERS threads at once, not one after the other (256 new Nodes one by one took seconds
        # beyond the pool's operation).
        pending = [(node, existing.get(name)) for name, node in wanted.items() if self._node_differs(node, existing.get(name))]
        if len(pending) > 1:
            for _done in self._writers().map(lambda pair: self._write_node(*pair), pending):
                pass
        elif pending:
            self._write_node(*pending[0])

    def _writers(self):
        with self._lock:
            if self._node_writers is None:
                self._node_writers = concurrent.futures.ThreadPoolExecutor(NODE_WRITERS, thread_name_prefix='kube-node-writer')
            return self._node_writers

    @staticmethod
    def _desired_meta(node, stored):
        # The stand-in's fault annotations (exec.py), set by a test or the environment, stay.
        annotations = dict({key: value for key, value in (stored['metadata'].get('annotations') or {}).items()
                            if key.startswith(STANDIN_FAULT_PREFIX)}, **node['metadata']['annotations'])
        return {'labels': node['metadata']['labels'], 'annotations': annotations}

    def _node_differs(self, node, stored):
        if stored is None:
            return True
        return any(stored['metadata'].get(key) != value for key, value in self._desired_meta(node, stored).items()) or \
            {key: stored['spec'].get(key) for key in node['spec']} != node['spec'] or \
            {key: (stored.get('status') or {}).get(key) for key in NODE_STATUS_FIELDS} != {key: node['status'][key] for key in NODE_STATUS_FIELDS}

    def _write_node(self, node, stored):
        """Create the Node ``node`` when ``stored`` is None, then bring the stored one's metadata, spec and the kubelet's part of
        its status to ``node``'s."""
        if stored is None:
            stored = self._create(node)
            if stored is None:
                return
        node['metadata'].update(self._desired_meta(node, stored))
        desired_meta = {key: node['metadata'][key] for key in ('labels', 'annotations')}
        if any(stored['metadata'].get(key) != value for key, value in desired_meta.items()) or \
                {key: stored['spec'].get(key) for key in node['spec']} != node['spec']:
            changed = copy.deepcopy(stored)
            changed['metadata'].update(desired_meta)
            changed['spec'].update(node['spec'])
            stored = self._write_unless_stale(self.store.update, changed) or stored
        # The kubelet's part of the status; kwok writes the rest (conditions, heartbeats, the kubelet endpoint).
        status = {key: node['status'][key] for key in NODE_STATUS_FIELDS}
        if {key: (stored.get('status') or {}).get(key) for key in NODE_STATUS_FIELDS} != status:
            self._write_unless_stale(lambda obj, status=status: self.store.patch_status(obj, status), stored)

    def dranet_slices(self, gke_cluster, pools, project):
        """SIMULATION (GKE managed DRANET, seed 001).  Real: DRANET's node agent on each node labelled
        cloud.google.com/gke-networking-dra-driver=true publishes a ResourceSlice of driver mrdma.google.com
        listing the node's RDMA NICs, which the scheduler's DynamicResources plugin allocates claims from (seed
        001's ``all-mrdma`` template asks for all of them).  The stand-in publishes one slice per such Node, pool
        named after the Node, with one device per RDMA NIC of the machine type (RDMA_NICS, from the Compute
        sandbox's machine data: its NIC family RDMA), owned by the Node so it goes with it.  Device names and
        attributes are the stand-in's (DRANET's own are not in the seeds); the real scheduler allocates them."""
        del gke_cluster, pools, project
        if not self._serves('resourceslices.resource.k8s.io'):
            return
        nodes = {node['metadata']['name']: node for node in self.store.list('nodes', label_selector=DRANET_LABEL + '=true')}
        slices = {item['spec'].get('nodeName'): item for item in self.store.list('resourceslices.resource.k8s.io')
                  if item['spec'].get('driver') == DRANET_DRIVER}
        for name, node in nodes.items():
            if name in slices:
                continue
            machine_type = node['metadata']['labels'].get('node.kubernetes.io/instance-type')
            count = RDMA_NICS if _machine(machine_type).get('nic_family') == 'RDMA' else 0
            self._create({'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceSlice',
                          'metadata': {'name': '%s-%s' % (name, DRANET_DRIVER), 'ownerReferences': [
                              {'apiVersion': 'v1', 'kind': 'Node', 'name': name, 'uid': node['metadata']['uid']}]},
                          'spec': {'driver': DRANET_DRIVER, 'nodeName': name,
                                   'pool': {'name': name, 'generation': 1, 'resourceSliceCount': 1},
                                   'devices': [{'name': 'rdma%d' % index, 'attributes': {
                                       'dra.net/ifName': {'string': 'gpu%drdma0' % index}}} for index in range(count)]}})

    def gke_networks(self, gke_cluster, pools, project):
        """SIMULATION (GKE's multi-network controllers).  Real GKE runs two: the GKENetworkParamSet controller
        of cloud-controller-manager (kubernetes/cloud-provider-gcp pkg/controller/gkenetworkparamset,
        commit 4e24531; condition types and reasons from GoogleCloudPlatform/gke-networking-api
        apis/network/v1, commit 34c617f), and GKE's own network controller for Network Ready (not public;
        its types and reasons are in gke-networking-api and GoogleCloudPlatform/cluster-health-scanner's A3
        setup script prints the pairs ``ParamsReady GNPParamsReady`` and ``Ready NetworkReady``).

        GKENetworkParamSet (``_params_validation``, the order of the real syncGNP): the finalizer
        ``networking.gke.io/gnp-controller``; then condition ``Ready``: False with GNPConfigInvalid /
        SecondaryRangeAndDeviceModeUnspecified / DeviceModeCantBeUsedWithSecondaryRange (field combinations),
        SubnetNotFound (``subnet: S not found in VPC: V``: the subnet is looked up in the cluster's region of
        the Compute sandbox, by name only, as GetSubnetwork does), VPCNotFound (``VPC: V not found``),
        SecondaryRangeNotFound, DeviceModeCantUseDefaultVPC (the cluster's own VPC),
        DeviceModeSubnetAlreadyInUse (a newer GNP naming a subnet an older one has); else True, GNPReady,
        with ``status.podCIDRs`` (the subnet's range for deviceMode, else the named secondary ranges) and
        ``status.networkName`` once a Network refers to it and the pair cross-validates.  Deleting a GNP
        that a Network still refers to leaves it Terminating (the finalizer stays) until that Network goes.

        Network: ``ParamsReady`` from the cross-validation of a valid GNP (True GNPParamsReady; False
        L3SecondaryMissing, NetworkAttachmentUnsupported, DeviceModeMissing; GNPDeleted once its GNP went);
        ``Ready`` True NetworkReady when ParamsReady is True, else False ParamsNotReady (also for a Device
        or L3 Network with no parametersRef, or one naming a GNP that does not exist or is not Ready).  The
        ``default`` Network is gke_installs' (Ready, no params).

        Neither controller sets ``observedGeneration`` on its conditions (cloud-provider-gcp builds each
        metav1.Condition without it; meta.SetStatusCondition keeps lastTransitionTime unless the status
        changes), so the stand-in writes none either: a reader cannot tell a Ready left from an older spec
        from a current one.  The stand-in reacts within one controller pass (TICK); the real controllers
        within seconds.  ``pause('gke-networks')`` freezes both (the status stays as it is while the spec
        moves on), ``resume('gke-networks')`` recomputes.  The Network Ready message for ParamsNotReady is the
        stand-in's wording (GKE's is not public)."""
        del pools, project
        if not self._serves('gkenetworkparamsets.networking.gke.io') or not self._serves('networks.networking.gke.io'):
            return
        with self._lock:
            compute = self.compute or ComputeView()
        cluster_vpc = _last(gke_cluster.get('network') or 'default')
        networks = self.store.list('networks.networking.gke.io')
        params = self.store.list('gkenetworkparamsets.networking.gke.io')
        valid = {}
        for gnp in params:
            name = gnp['metadata']['name']
            referrer = next((network for network in networks if _refers_to(network, name)), None)
            if gnp['metadata'].get('deletionTimestamp'):
                if referrer is None:
                    self._set_finalizer(gnp, GNP_FINALIZER, present=False)
                continue
            gnp = self._set_finalizer(gnp, GNP_FINALIZER, present=True)
            if gnp is None:
                continue
            reason, message, pod_cidrs = _params_validation(gnp, params, compute, cluster_vpc)
            status = copy.deepcopy(gnp.get('status') or {})
            _set_condition(status, 'Ready', reason is None, reason or 'GNPReady', message)
            if reason is None:
                valid[name] = gnp
                status['podCIDRs'] = {'cidrBlocks': pod_cidrs}
                if referrer is not None and _cross_validation(referrer, gnp)[0] is None:
                    status['networkName'] = referrer['metadata']['name']
            self._update_status(gnp, status)
        names = {gnp['metadata']['name'] for gnp in params if not gnp['metadata'].get('deletionTimestamp')}
        for network in networks:
            if network['metadata']['name'] == 'default' or network['metadata'].get('deletionTimestamp'):
                continue
            status = copy.deepcopy(network.get('status') or {})
            reference = (network.get('spec') or {}).get('parametersRef') or {}
            gnp_name = reference.get('name') if (reference.get('kind') or '').lower() == 'gkenetworkparamset' else None
            if gnp_name in valid:
                reason, message = _cross_validation(network, valid[gnp_name])
                _set_condition(status, 'ParamsReady', reason is None, reason or 'GNPParamsReady', message)
            elif gnp_name and gnp_name not in names and _condition_of(status, 'ParamsReady'):
                _set_condition(status, 'ParamsReady', False, 'GNPDeleted', 'GKENetworkParamSet resource was deleted: %s' % gnp_name)
            ready = (_condition_of(status, 'ParamsReady') or {}).get('status') == 'True'
            _set_condition(status, 'Ready', ready, 'NetworkReady' if ready else 'ParamsNotReady',
                           '' if ready else 'the params of this Network are not ready (stand-in wording)')
            self._update_status(network, status)

    def _network_attachments(self):
        """[(Network name, (VPC, subnet) of its GKENetworkParamSet)] of the cluster's Networks that name one (one list of
        each kind), or [] when the cluster serves no Networks."""
        if not self._serves('networks.networking.gke.io'):
            return []
        params = {item['metadata']['name']: item for item in self.store.list('gkenetworkparamsets.networking.gke.io')}
        found = []
        for network in self.store.list('networks.networking.gke.io'):
            reference = (network.get('spec') or {}).get('parametersRef') or {}
            param = params.get(reference.get('name'))
            if param is not None:
                found.append((network['metadata']['name'], (_last(param['spec'].get('vpc')), _last(param['spec'].get('vpcSubnet')))))
        return found

    def _network_resources(self, node, pools, attachments):
        """SIMULATION (GKE multi-networking, gke-networking-api annotations).  Real GKE reports, on a
        node attached to a Network object, the extended resources ``networking.gke.io.networks/NAME``
        and ``NAME.IP`` and the node annotation ``networking.gke.io/north-interfaces`` ([{network,
        ipAddress}]).  The stand-in attaches a node to each ``type: Device``/L3 Network whose
        GKENetworkParamSet names the VPC and subnet of one of its pool's additional node networks
        (``attachments``: _network_attachments, read once per pass)."""
        pool = next(pool for pool in pools if pool['name'] == node['metadata']['labels']['cloud.google.com/gke-nodepool'])
        nics = {(_last(item.get('network')), _last(item.get('subnetwork'))): index + 1
                for index, item in enumerate((pool.get('networkConfig') or {}).get('additionalNodeNetworkConfigs') or [])}
        if not nics:
            return
        north = []
        for name, vpc_subnet in attachments:
            nic = nics.get(vpc_subnet)
            if nic is None:
                continue
            address = _nic_ip(node['metadata']['name'], nic)
            north.append({'network': name, 'ipAddress': address})
            for resource in ('networking.gke.io.networks/' + name, 'networking.gke.io.networks/%s.IP' % name):
                node['status']['capacity'][resource] = node['status']['allocatable'][resource] = '1'
        if north:
            node['metadata']['annotations']['networking.gke.io/north-interfaces'] = json.dumps(north, separators=(',', ':'))

    # the cluster autoscaler's what-if: would a Pod fit a Node of a pool not yet made ----------
    def _filter(self, pod, node, pods, installed=()):
        spec = node.get('spec') or {}
        if spec.get('unschedulable') and not tolerates(pod['spec'].get('tolerations') or [],
                                                       {'key': 'node.kubernetes.io/unschedulable', 'effect': 'NoSchedule'}):
            return ['node(s) were unschedulable']
        taint = untolerated_taint(pod, node)
        if taint is not None:
            return ['node(s) had untolerated taint {%s: %s}' % (taint['key'], taint.get('value', ''))]
        if not node_affinity_matches(pod, node):
            return ["node(s) didn't match Pod's node affinity/selector"]
        failures = self._resources_fit(pod, node, pods)
        if failures:
            return failures
        if self._anti_affinity_conflict(pod, node, pods):
            return ["node(s) didn't match pod anti-affinity rules"]
        if not self._claims_fit(pod, node, installed):
            return ['cannot allocate all claims']
        return []

    @staticmethod
    def _resources_fit(pod, node, pods):
        """NodeResourcesFit: requests against allocatable minus what the node's Pods request
        (pkg/scheduler/framework/plugins/noderesources/fit.go: 'Insufficient NAME', 'Too many pods')."""
        allocatable = {name: quantity(value) for name, value in ((node.get('status') or {}).get('allocatable') or {}).items()}
        bound = [other for other in pods if other['spec'].get('nodeName') == node['metadata']['name']
                 and other.get('status', {}).get('phase') not in ('Succeeded', 'Failed')]
        failures = []
        if len(bound) + 1 > allocatable.get('pods', 110):
            failures.append('Too many pods')
        used = {}
        for other in bound:
            for name, amount in pod_requests(other).items():
                used[name] = used.get(name, 0) + amount
        for name, amount in sorted(pod_requests(pod).items()):
            if amount and amount > allocatable.get(name, 0) - used.get(name, 0):
                failures.append('Insufficient ' + name)
        return failures

    @staticmethod
    def _anti_affinity_conflict(pod, node, pods):
        """InterPodAffinity, required anti-affinity only, topologyKey kubernetes.io/hostname (the
        seeds' NCCL test Pods); other topology keys are compared on node labels the same way."""
        terms = ((pod['spec'].get('affinity') or {}).get('podAntiAffinity') or {}).get('requiredDuringSchedulingIgnoredDuringExecution') or []
        labels = node['metadata'].get('labels') or {}
        for term in terms:
            domain = labels.get(term.get('topologyKey'))
            for other in pods:
                other_node = other['spec'].get('nodeName')
                if not other_node or other['metadata']['uid'] == pod['metadata']['uid']:
                    continue
                if other['metadata'].get('namespace') != pod['metadata'].get('namespace'):
                    continue
                if term.get('topologyKey') == 'kubernetes.io/hostname':
                    same = other_node == node['metadata']['name']
                else:
                    same = domain is not None and domain == labels.get(term.get('topologyKey'))
                if same and label_selector_matches(term.get('labelSelector') or {}, other['metadata'].get('labels')):
                    return True
        return False

    def _claims_fit(self, pod, node, installed=()):
        """The cluster autoscaler's what-if for DRA (the real scheduler allocates from dranet_slices' ResourceSlices
        once the node exists; a node still to be made has none yet).  A claim
        (from resourceClaimTemplateName or resourceClaimName) fits when every request's DeviceClass
        exists and the node has that class's devices: ``mrdma.google.com`` on nodes labelled
        cloud.google.com/gke-networking-dra-driver=true (GKE managed DRANET).  No ResourceClaim objects
        are created from templates."""
        claims = pod['spec'].get('resourceClaims') or []
        if not claims:
            return True
        namespace = pod['metadata'].get('namespace')
        for claim in claims:
            spec = None
            if claim.get('resourceClaimTemplateName'):
                template = self.store.get('resourceclaimtemplates.resource.k8s.io', claim['resourceClaimTemplateName'], namespace)
                spec = template and template['spec'].get('spec')
            elif claim.get('resourceClaimName'):
                found = self.store.get('resourceclaims.resource.k8s.io', claim['resourceClaimName'], namespace)
                spec = found and found.get('spec')
            if spec is None:
                return False
            for request in (spec.get('devices') or {}).get('requests') or []:
                class_name = (request.get('exactly') or request).get('deviceClassName')
                if class_name not in installed and self.store.get('deviceclasses.resource.k8s.io', class_name) is None:
                    return False
                label = DEVICE_CLASS_NODE_LABELS.get(class_name)
                if label is None or (node['metadata'].get('labels') or {}).get(label[0]) != label[1]:
                    return False
        return True

    def compute_class_tolerations(self, gke_cluster, pools, project):   # pylint: disable=unused-argument
        """SIMULATION (GKE's Pod admission of ComputeClass Pods; the rule and its source: autoprovisioning.class_toleration).
        Real GKE mutates a Pod that selects a ComputeClass as the API server admits it, so the Pod is stored with the
        toleration of the class's node taint.  The stand-in adds it just after: an update of each unbound Pod that lacks it
        (the API server allows adding tolerations to a Pod), which the scheduler answers by trying the Pod again.  What a
        client can see differently: such a Pod is stored once without the toleration (Pending for up to a pass, its
        resourceVersion one higher), and its managedFields name the stand-in's field manager for the tolerations."""
        # Only unbound Pods are mutated: read those (fieldSelector spec.nodeName=), not every Pod of the cluster each pass.
        for pod in self.store.list('pods', field_selector='spec.nodeName='):
            toleration = autoprovisioning.class_toleration(pod)
            if toleration is None or pod['spec'].get('nodeName') or pod['metadata'].get('deletionTimestamp'):
                continue
            tolerated = copy.deepcopy(pod)
            tolerated['spec']['tolerations'] = list(pod['spec'].get('tolerations') or []) + [toleration]
            self._write_unless_stale(self.store.update, tolerated)

    def node_auto_provisioning(self, gke_cluster, pools, project):
        """SIMULATION (GKE node pool auto-creation for ComputeClasses; sources and rules in autoprovisioning.py).
        Real: the cluster autoscaler sees Pods the scheduler left unschedulable, and for a Pod that selects an
        existing ComputeClass tries the class's priorities in order: the first it can provision becomes a new node
        pool (or an existing auto-created pool grows), whose nodes carry the class's label and fit the Pods.  When
        no priority can be provisioned, ``whenUnsatisfiable: DoNotScaleUp`` leaves the Pods Pending (the autoscaler
        reports NotTriggerScaleUp).  The stand-in: the same order; a priority can be provisioned when the Container
        API sandbox accepts its NodePool (machine type in the zones, GPU type and count of the machine type,
        reservation exists, gpuDirect rules: container._node_pool) and the Pods fit a Node of it (the scheduler's
        filters on the Node ``node_for`` would make, counting DRANET's DeviceClass an RDMA pool brings); the pool
        goes into the Container API sandbox (gcloud lists it) with one node per Pending Pod that fits (no bin
        packing); ``ScaleUpAnyway`` is not simulated (the Pods stay Pending as with DoNotScaleUp); no scale-down."""
        if self.node_pools is None or not self._serves(autoprovisioning.COMPUTE_CLASSES):
            return
        # The unbound Pods first (the only ones that can wait for a pool); every Pod only when one waits.
        if not any(self._waits_for_class(pod) for pod in self.store.list('pods', field_selector='spec.nodeName=')):
            return
        waiting = {}
        pods_now = self.store.list('pods')   # one read: a Pod the scheduler binds meanwhile must not count twice
        for pod in pods_now:
            if self._waits_for_class(pod):
                waiting.setdefault(autoprovisioning.selected_class(pod), []).append(pod)
        autopilot = bool((gke_cluster.get('autopilot') or {}).get('enabled'))
        for name, pods in sorted(waiting.items()):
            compute_class = self.store.get(autoprovisioning.COMPUTE_CLASSES, name)
            pods = self._without_room(pods, pods_now, name, gke_cluster, pools, project)
            if pods and compute_class is not None and autoprovisioning.auto_creation_allowed(compute_class, autopilot):
                self._provision(compute_class, pods, gke_cluster, pools, project)

    @staticmethod
    def _waits_for_class(pod):
        """Whether ``pod`` selects a ComputeClass and the scheduler left it unschedulable (node_auto_provisioning's Pods)."""
        scheduled = next((c for c in (pod.get('status') or {}).get('conditions') or [] if c['type'] == 'PodScheduled'), {})
        return bool(autoprovisioning.selected_class(pod)) and not pod['spec'].get('nodeName') \
            and not pod['metadata'].get('deletionTimestamp') and scheduled.get('reason') == 'Unschedulable'

    def _without_room(self, pods, bound, class_name, gke_cluster, pools, project):
        """The Pods that fit on no node of the class's pools, those registered and those still coming up (a pool
        resized a moment ago, its Node not yet registered or not yet retried by the scheduler): the cluster
        autoscaler counts such upcoming nodes before it scales up again.  One Pod per node, in order.  ``bound``: the
        cluster's Pods as read with ``pods``, so a Pod bound since is not counted against its own node."""
        candidates = []
        for pool in pools:
            if ((pool.get('config') or {}).get('labels') or {}).get(autoprovisioning.COMPUTE_CLASS_LABEL) != class_name:
                continue
            for zone_index, zone in enumerate(pool.get('locations') or []):
                for index in range(int(pool.get('initialNodeCount') or 0)):
                    # The pool's template node, not the registered one: a Node that has just registered carries the
                    # node lifecycle controller's not-ready taint until kwok reports it Ready, which the autoscaler
                    # ignores for the nodes it is bringing up.
                    # An RDMA pool brings DRANET's DeviceClass (gke_installs, on a later pass), as in _provision.
                    installed = ('mrdma.google.com',) if _is_rdma_pool(pool) else ()
                    candidates.append((node_for(gke_cluster, pool, project, zone, zone_index, index, taint_gpus=False), installed))
        left = []
        for pod in pods:
            room = next((candidate for candidate in candidates if not self._filter(pod, candidate[0], bound, candidate[1])), None)
            if room is None:
                left.append(pod)
            else:
                candidates.remove(room)
        return left

    def _provision(self, compute_class, pods, gke_cluster, pools, project):
        existing = {pool['name']: pool for pool in pools}
        reasons = []
        for index in range(len((compute_class.get('spec') or {}).get('priorities') or [])):
            for body in autoprovisioning.pool_bodies(compute_class, index, _catalog(), self.node_pools.zones(), project):
                where = 'priorities[%d] (%s)' % (index, body['config']['machineType'])
                pool = existing.get(body['name'])
                if pool is None:
                    pool, error = self.node_pools.check(body)
                    if error:
                        reasons.append('%s: %s' % (where, error))
                        continue
                template = node_for(gke_cluster, pool, project, pool['locations'][0], 0, 0, taint_gpus=False)
                installed = ('mrdma.google.com',) if _is_rdma_pool(pool) else ()
                fitting = [pod for pod in pods if not self._filter(pod, template, [], installed)]
                if not fitting:
                    reasons.append('%s: the Pods do not fit its nodes' % where)
                    continue
                size = (int(pool.get('initialNodeCount') or 0) if body['name'] in existing else 0) + len(fitting)
                self.node_pools.put(pool, size)
                return
        # DoNotScaleUp (and ScaleUpAnyway, not simulated): the Pods stay Pending; the autoscaler's event says why.
        message = "pod didn't trigger scale-up: ComputeClass %s (whenUnsatisfiable %s): no priority can be provisioned: %s" % (
            compute_class['metadata']['name'], autoprovisioning.when_unsatisfiable(compute_class), '; '.join(reasons) or 'none')
        for pod in pods:
            if not any(event.get('reason') == 'NotTriggerScaleUp' and event['involvedObject'].get('uid') == pod['metadata']['uid']
                       and event.get('message') == message for event in self.store.list('events', namespace=pod['metadata']['namespace'])):
                self._event(pod, 'Normal', 'NotTriggerScaleUp', message, component='cluster-autoscaler')

    def _event(self, pod, kind, reason, message, component='default-scheduler'):
        """SIMULATION (the scheduler's events).  Real: an events.k8s.io Event per decision (deduplicated
        into a series), which ``kubectl describe pod`` lists.  The stand-in writes one core/v1 Event per
        new decision, reported by default-scheduler."""
        meta = pod['metadata']
        now = now_rfc3339()
        self._create({'apiVersion': 'v1', 'kind': 'Event',
                      'metadata': {'name': '%s.%s' % (meta['name'], uuid.uuid4().hex[:16]), 'namespace': meta['namespace']},
                      'involvedObject': {'apiVersion': 'v1', 'kind': 'Pod', 'name': meta['name'], 'namespace': meta['namespace'],
                                         'uid': meta['uid']},
                      'type': kind, 'reason': reason, 'message': message, 'action': 'Scheduling',
                      'reportingComponent': component, 'reportingInstance': component,
                      'source': {'component': component}, 'firstTimestamp': now, 'lastTimestamp': now, 'count': 1})


GNP_FINALIZER = 'networking.gke.io/gnp-controller'   # cloud-provider-gcp gkenetworkparamset_controller.go GNPFinalizer


class ComputeView:
    """What the GKE network controllers read from Compute Engine: the project's VPC names and the subnets of
    the cluster's region (name -> {ipCidrRange, secondaryIpRanges}).  gke.py builds it from the sandbox."""

    def __init__(self, networks=(), subnets=None):
        self.networks = frozenset(networks)
        self.subnets = dict(subnets or {})

    def __eq__(self, other):
        return isinstance(other, ComputeView) and (self.networks, self.subnets) == (other.networks, other.subnets)

    def __hash__(self):
        return hash(self.networks)


def _refers_to(network, gnp_name):
    reference = (network.get('spec') or {}).get('parametersRef') or {}
    return reference.get('name') == gnp_name and (reference.get('kind') or '').lower() == 'gkenetworkparamset'


def _condition_of(status, kind):
    return next((item for item in status.get('conditions') or [] if item.get('type') == kind), None)


def _set_condition(status, kind, true, reason, message=''):
    """apimachinery meta.SetStatusCondition: lastTransitionTime moves only when the status changes."""
    wanted = {'type': kind, 'status': 'True' if true else 'False', 'reason': reason, 'message': message or ''}
    conditions = status.setdefault('conditions', [])
    old = _condition_of(status, kind)
    if old is None:
        conditions.append(dict(wanted, lastTransitionTime=now_rfc3339()))
        return
    since = old.get('lastTransitionTime') if old.get('status') == wanted['status'] else now_rfc3339()
    old.clear()
    old.update(wanted, lastTransitionTime=since)


def _params_validation(gnp, params, compute, cluster_vpc):
    """cloud-provider-gcp gnpcontroller_validations.go, in syncGNP's order -> (reason or None, message, podCIDRs)."""
    spec = gnp.get('spec') or {}
    vpc, subnet_name, device_mode = spec.get('vpc') or '', spec.get('vpcSubnet') or '', spec.get('deviceMode') or ''
    ranges = ((spec.get('podIPv4Ranges') or {}).get('rangeNames')) or []
    if spec.get('networkAttachment'):
        if vpc or subnet_name or device_mode or ranges:
            return ('GNPConfigInvalid', 'When NetworkAttachment is specified, none of the following can be specified: '
                    '(VPC, VPCSubnet, DeviceMode, PodIPv4Ranges)', [])
        if not re.match(r'^projects/([^/]+)/regions/([^/]+)/networkAttachments/([^/]+)$', spec['networkAttachment']):
            return ('NetworkAttachmentInvalid', 'invalid network attachment name: "%s". Must match projects/PROJECT_ID/regions/'
                    'REGION/networkAttachments/NETWORK_ATTACHMENT' % spec['networkAttachment'], [])
        return None, '', []
    if not vpc or not subnet_name:
        return 'GNPConfigInvalid', 'NetworkAttachment or (VPC + VPCSubnet) must be specified', []
    if not ranges and not device_mode:
        return 'SecondaryRangeAndDeviceModeUnspecified', 'One of PodIPV4Ranges or DeviceMode must be specified.', []
    if ranges and device_mode:
        return 'DeviceModeCantBeUsedWithSecondaryRange', 'PodIPv4Ranges and DeviceMode can not be specified at the same time', []
    subnet = compute.subnets.get(_last(subnet_name))
    if subnet is None:
        return 'SubnetNotFound', 'subnet: %s not found in VPC: %s' % (subnet_name, vpc), []
    if _last(vpc) not in compute.networks:
        return 'VPCNotFound', 'VPC: %s not found' % vpc, []
    secondary = {item.get('rangeName'): item.get('ipCidrRange') for item in subnet.get('secondaryIpRanges') or []}
    for name in ranges:
        if name not in secondary:
            return 'SecondaryRangeNotFound', 'secondary range: %s not found in subnet: %s' % (name, subnet_name), []
    if device_mode:
        if _last(vpc) == cluster_vpc:
            return 'DeviceModeCantUseDefaultVPC', "GNP with deviceMode can't reference the default VPC", []
        created = gnp['metadata'].get('creationTimestamp') or ''
        for other in params:
            if other['metadata']['name'] != gnp['metadata']['name'] and (other.get('spec') or {}).get('vpcSubnet') == subnet_name \
                    and created > (other['metadata'].get('creationTimestamp') or ''):
                return ('DeviceModeSubnetAlreadyInUse', "GNP with deviceMode can't reference a subnet already in use. Subnet '%s' "
                        "is already in use by '%s'" % ((other.get('spec') or {}).get('vpc'), other['metadata']['name']), [])
        return None, '', [subnet.get('ipCidrRange')]
    return None, '', [secondary[name] for name in ranges]


def _cross_validation(network, gnp):
    """cloud-provider-gcp crossValidateNetworkAndGnp -> (reason or None, message)."""
    spec, kind = gnp.get('spec') or {}, (network.get('spec') or {}).get('type')
    ranges = ((spec.get('podIPv4Ranges') or {}).get('rangeNames')) or []
    if kind == 'L3':
        if spec.get('vpc') and spec.get('vpcSubnet') and not ranges:
            return ('L3SecondaryMissing', 'L3 type network referring to params with (VPC + VPCSUbnet) pair requires secondary '
                    'range to be specified in params')
    elif spec.get('networkAttachment'):
        return 'NetworkAttachmentUnsupported', 'NetworkAttachment is only allowed for L3 type networks.'
    if kind == 'Device' and not spec.get('deviceMode'):
        return 'DeviceModeMissing', 'Device type network requires device mode to be specified in params'
    return None, ''


# nodes -----------------------------------------------------------------------------------------
# DeviceClass -> the node label (key, value) whose nodes have that class's devices (see _claims_fit).
DEVICE_CLASS_NODE_LABELS = {'mrdma.google.com': ('cloud.google.com/gke-networking-dra-driver', 'true')}
DRANET_LABEL = 'cloud.google.com/gke-networking-dra-driver'
DRANET_DRIVER = 'mrdma.google.com'
# RDMA NICs of the A3 Ultra and A4 machine types (cloud.google.com/compute/docs/gpus: 8 NVIDIA ConnectX-7, one per GPU).
RDMA_NICS = 8


def _last(path):
    return (path or '').rstrip('/').rsplit('/', 1)[-1]


def _bundled_gpus(machine_type):
    """The GPUs a machine type comes with, from the Compute sandbox's own machine-type data (tests/sandbox/
    catalog.py, its sources there): (accelerator type, count), or (None, 0)."""
    accelerators = _machine(machine_type).get('accelerators') or [{}]
    return accelerators[0].get('guestAcceleratorType'), int(accelerators[0].get('guestAcceleratorCount') or 0)


def _gpu_count(pool):
    """nvidia.com/gpu of a pool's nodes: the GPUs its machine type comes with, else the pool's accelerator count."""
    config = pool.get('config') or {}
    bundled = _bundled_gpus(config.get('machineType'))[1]
    return bundled or sum(int(item.get('acceleratorCount') or 0) for item in config.get('accelerators') or [])


def _is_rdma_pool(pool):
    config = pool.get('config') or {}
    strategy = ((config.get('gpuDirectConfig') or {}).get('gpuDirectStrategy') or '').upper()
    return strategy == 'RDMA' or (config.get('labels') or {}).get(DRANET_LABEL) == 'true'


def _catalog():
    from .. import catalog  # pylint: disable=import-outside-toplevel
    return catalog


def _machine(machine_type):
    return _catalog().MACHINE_TYPES.get(machine_type) or {'guestCpus': 2, 'memoryMb': 4096}


def gke_reserved(cpus, memory_mib):
    """GKE's node allocatable reservations (cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes):
    memory 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above
    128 GiB, plus 100 MiB eviction threshold; CPU 6% of the first core, 1% of the next, 0.5% of the
    next 2, 0.25% above 4.  -> (millicores, MiB) reserved."""
    memory, reserved_memory = memory_mib, 100.0
    for size, share in ((4096, 0.25), (4096, 0.20), (8192, 0.10), (114688, 0.06), (float('inf'), 0.02)):
        part = min(memory, size)
        reserved_memory += part * share
        memory -= part
        if memory <= 0:
            break
    cores, reserved_cpu = cpus, 0.0
    for size, share in ((1, 0.06), (1, 0.01), (2, 0.005), (float('inf'), 0.0025)):
        part = min(cores, size)
        reserved_cpu += part * share * 1000
        cores -= part
        if cores <= 0:
            break
    return int(reserved_cpu), int(reserved_memory)


STANDIN_FAULT_PREFIX = 'standin.aiinfra.gpudirect/'


def standin_faults(pool, zone_index, index):
    """SIMULATION (faults, for a demo; exec.py says what they do).  The fault annotations a GPU node gets as it registers,
    from the sandbox's environment: GPUDIRECT_STANDIN_SLOW_NODE=N marks the N-th node (from 1) of each GPU pool slow,
    GPUDIRECT_STANDIN_SLOW_NIC=N:eth3 marks that NIC of the N-th node slow (in the first zone of the pool)."""
    if not _gpu_count(pool) or zone_index:
        return {}
    from .exec import FAULT_SLOW_NICS, FAULT_SLOW_NODE   # pylint: disable=import-outside-toplevel
    found = {}
    if os.environ.get('GPUDIRECT_STANDIN_SLOW_NODE', '').strip() == str(index + 1):
        found[FAULT_SLOW_NODE] = 'true'
    number, _colon, nic = os.environ.get('GPUDIRECT_STANDIN_SLOW_NIC', '').partition(':')
    if number.strip() == str(index + 1) and nic.strip():
        found[FAULT_SLOW_NICS] = nic.strip()
    return found


def node_for(gke_cluster, pool, project, zone, zone_index, index, taint_gpus):
    """The Node GKE registers for VM ``index`` of ``pool`` in ``zone`` (see nodes_from_pools).

    Name: the instance group's base name (gke-CLUSTER-POOL-HASH, from the pool's instanceGroupUrls)
    and a 4-character suffix, as GKE's MIG VMs are named.  Labels as GKE sets them (cloud.google.com/
    gke-nodepool, gke-accelerator, gke-gpu-driver-version when driver installation is set,
    gke-os-distribution, gke-provisioning, machine-family, node.kubernetes.io/instance-type, topology
    zone/region, kubernetes.io/hostname, ...) plus the pool's own labels.  Taints: the pool's, and
    ``nvidia.com/gpu=present:NoSchedule`` on GPU pools of a cluster that also has a non-GPU pool (GKE's
    documented rule).  Capacity: cpu and memory of the machine type, nvidia.com/gpu from the catalog,
    pods from maxPodsPerNode; allocatable minus GKE's reservations.  Annotations: multi-networking's
    ``networking.gke.io/nic-info`` for the pool's additional node networks."""
    config = pool.get('config') or {}
    machine_type = config.get('machineType', 'e2-medium')
    group_url = (pool.get('instanceGroupUrls') or [''])[min(zone_index, len(pool.get('instanceGroupUrls') or ['']) - 1)]
    base = _last(group_url)[:-len('-grp')] if group_url.endswith('-grp') else 'gke-%s-%s-%s' % (
        gke_cluster['name'][:20], pool['name'][:20], hashlib.sha256(pool['name'].encode()).hexdigest()[:8])
    name = '%s-%s' % (base, _suffix('%s/%s/%d' % (base, zone, index), 4))
    region = zone.rsplit('-', 1)[0]
    gpus = _gpu_count(pool)
    accelerators = config.get('accelerators') or []
    accelerator_type = accelerators[0].get('acceleratorType') if accelerators else None
    if accelerator_type is None and gpus:
        accelerator_type = _bundled_gpus(machine_type)[0]
    labels = {
        'beta.kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/instance-type': machine_type, 'beta.kubernetes.io/os': 'linux',
        'cloud.google.com/gke-boot-disk': config.get('diskType', 'pd-balanced'),
        'cloud.google.com/gke-container-runtime': 'containerd',
        'cloud.google.com/gke-logging-variant': 'DEFAULT',
        'cloud.google.com/gke-max-pods-per-node': str((pool.get('maxPodsConstraint') or {}).get('maxPodsPerNode', '110')),
        'cloud.google.com/gke-nodepool': pool['name'],
        'cloud.google.com/gke-os-distribution': 'ubuntu' if 'UBUNTU' in config.get('imageType', '') else 'cos',
        'cloud.google.com/gke-provisioning': 'spot' if config.get('spot') else 'preemptible' if config.get('preemptible') else 'standard',
        'cloud.google.com/gke-stack-type': 'IPV4',
        'cloud.google.com/machine-family': machine_type.split('-', 1)[0],
        'cloud.google.com/private-node': 'false',
        'failure-domain.beta.kubernetes.io/region': region, 'failure-domain.beta.kubernetes.io/zone': zone,
        'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': machine_type,
        'topology.gke.io/zone': zone, 'topology.kubernetes.io/region': region, 'topology.kubernetes.io/zone': zone,
    }
    if accelerator_type:
        labels['cloud.google.com/gke-accelerator'] = accelerator_type
        labels['cloud.google.com/gke-accelerator-count'] = str(gpus)
        driver = ((accelerators[0] if accelerators else {}).get('gpuDriverInstallationConfig') or {}).get('gpuDriverVersion')
        if driver and driver != 'INSTALLATION_DISABLED':
            labels['cloud.google.com/gke-gpu-driver-version'] = driver.lower()
    labels.update(config.get('labels') or {})
    taints = [{'key': taint['key'], 'value': taint.get('value', ''), 'effect': _TAINT_EFFECTS.get(taint.get('effect'), taint.get('effect'))}
              for taint in config.get('taints') or []]
    if gpus and taint_gpus and not any(taint['key'] == 'nvidia.com/gpu' for taint in taints):
        taints.append({'key': 'nvidia.com/gpu', 'value': 'present', 'effect': 'NoSchedule'})
    spec = _machine(machine_type)
    cpus, memory_mib = spec['guestCpus'], spec['memoryMb']
    reserved_cpu, reserved_memory = gke_reserved(cpus, memory_mib)
    max_pods = str((pool.get('maxPodsConstraint') or {}).get('maxPodsPerNode', '110'))
    disk = '%dKi' % (int(config.get('diskSizeGb', 100)) * 1024 * 1024)
    capacity = {'cpu': str(cpus), 'memory': '%dKi' % (memory_mib * 1024), 'pods': max_pods, 'ephemeral-storage': disk,
                'hugepages-1Gi': '0', 'hugepages-2Mi': '0'}
    allocatable = dict(capacity, cpu='%dm' % (cpus * 1000 - reserved_cpu), memory='%dKi' % ((memory_mib - reserved_memory) * 1024))
    if gpus:
        capacity['nvidia.com/gpu'] = allocatable['nvidia.com/gpu'] = str(gpus)
    serial = int(hashlib.sha256(name.encode()).hexdigest()[:6], 16)
    internal_ip = '10.128.%d.%d' % (serial // 250 % 250, serial % 250 + 2)
    annotations = {'container.googleapis.com/instance_id': str(serial * 7919),
                   'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/controller-managed-attach-detach': 'true'}
    additional = (pool.get('networkConfig') or {}).get('additionalNodeNetworkConfigs') or []
    if additional:
        nic_info = [{'birthIP': internal_ip, 'pciAddress': '0000:00:04.0', 'birthName': 'eth0'}]
        nic_info += [{'birthIP': _nic_ip(name, n), 'pciAddress': '0000:%02x:00.0' % (0x06 + n), 'birthName': 'eth%d' % n}
                     for n in range(1, len(additional) + 1)]
        annotations['networking.gke.io/nic-info'] = json.dumps(nic_info, separators=(',', ':'))
    version = pool.get('version') or gke_cluster.get('currentNodeVersion') or ''
    return {
        'apiVersion': 'v1', 'kind': 'Node',
        'metadata': {'name': name, 'labels': labels, 'annotations': annotations},
        'spec': dict({'podCIDR': _pod_cidr(name), 'podCIDRs': [_pod_cidr(name)],
                      'providerID': 'gce://%s/%s/%s' % (project, zone, name)}, **({'taints': taints} if taints else {})),
        'status': {
            'capacity': capacity, 'allocatable': allocatable,
            # SIMULATION (the node's address).  Real GKE nodes have their VM's internal IP (internal_ip, kept in the
            # nic-info annotation); every stand-in Node reports 127.0.0.1, where its kubelet endpoint
            # (kubelet-streams) serves, so the API server's exec and logs connections stay on this machine.
            'addresses': [{'type': 'InternalIP', 'address': '127.0.0.1'}, {'type': 'Hostname', 'address': name}],
            'nodeInfo': {'architecture': 'amd64', 'bootID': hashlib.sha256((name + 'boot').encode()).hexdigest()[:32],
                         'containerRuntimeVersion': 'containerd://1.7.27', 'kernelVersion': '6.6.93+',
                         'kubeProxyVersion': 'v' + version, 'kubeletVersion': 'v' + version,
                         'machineID': hashlib.sha256(name.encode()).hexdigest()[:32], 'operatingSystem': 'linux',
                         'osImage': 'Container-Optimized OS from Google', 'systemUUID': hashlib.sha256(name.encode()).hexdigest()[:32]},
        },
    }


_TAINT_EFFECTS = {'NO_SCHEDULE': 'NoSchedule', 'PREFER_NO_SCHEDULE': 'PreferNoSchedule', 'NO_EXECUTE': 'NoExecute'}


def _nic_ip(node_name, nic):
    serial = int(hashlib.sha256(node_name.encode()).hexdigest()[:4], 16)
    return '192.168.%d.%d' % (nic, serial % 250 + 2)


def _pod_cidr(node_name):
    serial = int(hashlib.sha256(node_name.encode()).hexdigest()[:4], 16)
    return '10.%d.%d.0/24' % (4 + serial // 256 % 4, serial % 256)
