"""Simulated controllers of a stand-in cluster: nodes from GKE node pools, what GKE installs, the
scheduler, the kubelet (through exec.py's podman containers), and the DaemonSet, Deployment and Job
controllers, at the level the seeds' manifests and the collection's waits need.

Every rule below is marked SIMULATION with what the real component does and what the stand-in does
instead; README-runtime.md lists them all with what the stand-in cannot show.  One thread per cluster
runs them all: it wakes on every store change (``store.subscribe()``) and every ``TICK`` seconds
(delays), and reconciles from scratch each time (level-triggered, like the real controllers), writing
only what differs, so a quiet cluster makes no writes.

Use::

    controllers = ClusterControllers(cluster, runtime, ready_delay=0.3).start()
    controllers.set_gke(gke_cluster_dict, [node_pool_dict, ...], project)   # GKE: nodes follow the pools
    controllers.stop()                                                      # also removes the containers

Hooks for other simulations (openshift.py) and for tests::

    controllers.add(fn)            # fn(store) runs on this loop after the built-in controllers, every pass
                                   # (one thread: one pass sees one store, writes never race); an exception
                                   # is kept in controllers.errors and the loop goes on
    controllers.pause(name)        # stop one controller (names: CONTROLLERS, or an added fn's __name__) until
    controllers.resume(name)       # resumed: its objects keep the status they have, however the spec changes
"""

import copy
import hashlib
import json
import os
import pathlib
import queue
import re
import sys
import threading
import time
import traceback
import uuid

import yaml

from . import autoprovisioning, errors
from .store import now_rfc3339
from ..collection import collection_module

TICK = 0.25
# The built-in controllers in the order one pass runs them (names for pause()/resume()); GKE's run first,
# on GKE clusters only.
GKE_CONTROLLERS = ('gke-installs', 'nodes-from-pools', 'gke-networks')
CONTROLLERS = ('daemonsets', 'deployments', 'jobs', 'garbage-collect-pods', 'schedule', 'kubelet')
# GKE's cluster autoscaler runs after the scheduler has judged every Pod (it acts on Pods left unschedulable).
GKE_AFTER_SCHEDULING = ('node-auto-provisioning',)
POLL_INTERVAL = 1.0
CRD_DIR = pathlib.Path(__file__).resolve().parent / 'crds'
_RANDOM_CHARS = 'bcdfghjklmnpqrstvwxz2456789'   # k8s.io/apimachinery/pkg/util/rand: no vowels, no 0/1/3


def load_families():
    """The collection's catalog of machine types (plugins/module_utils/catalog/families.py)."""
    return collection_module('plugins.module_utils.catalog.families')


def _suffix(seed, length=5):
    """A deterministic stand-in for the random name suffixes of generateName (same alphabet)."""
    digest = hashlib.sha256(seed.encode()).digest()
    return ''.join(_RANDOM_CHARS[byte % len(_RANDOM_CHARS)] for byte in digest[:length])


def template_hash(template):
    """Stand-in for controller-revision-hash / pod-template-hash: a hash of the pod template."""
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


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
    """The first taint of ``node`` the pod does not tolerate, or None.  (On GKE clusters the API stand-in's
    ExtendedResourceToleration admission has written the tolerations for extended resources into the Pod.)"""
    tolerations = list(pod['spec'].get('tolerations') or [])
    for taint in node['spec'].get('taints') or []:
        if taint['effect'] in effects and not tolerates(tolerations, taint):
            return taint
    return None


class SystemWrites:
    """The simulated controllers' writes as the system (``self.store``): a create that someone else made first,
    or a status write on an object that changed or went since it was read, is left to the next pass."""

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

    def __init__(self, cluster, runtime, ready_delay=0.3, tick=TICK):
        self.cluster = cluster
        self.store = cluster.store
        self.runtime = runtime
        self.ready_delay = ready_delay
        self.tick = tick
        self.gke = None            # (cluster dict, [pool dicts], project) from the Container API sandbox
        self.node_pools = None     # gke.NodePools: node pool auto-creation's way into the Container API sandbox
        self.compute = None        # ComputeView of the cluster's project and region (gke_networks reads it)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._events = None
        self._thread = None
        self._first_seen = {}      # pod uid -> when the stand-in kubelet first saw it bound
        self._starting = {}        # pod uid -> thread starting its containers
        self._started = {}         # pod uid -> {container: ContainerState}
        self._known_pods = {}      # pod uid -> pod (to remove containers of deleted pods)
        self._last_poll = {}       # pod uid -> when its containers' states were last read
        self.errors = []
        self.extra = []            # reconcilers added with add(), run after the built-in ones
        self.paused = set()        # controller names pause() stopped
        # The containers' cluster label: unique per stand-in cluster, since two sandboxes (pytest-xdist
        # workers) may each have a cluster of the same name and must not remove each other's containers.
        self.runtime_key = '%s@%d-%s' % (cluster.key, os.getpid(), uuid.uuid4().hex[:8])

    # lifecycle ---------------------------------------------------------------------------------
    def start(self):
        self._events = self.store.subscribe()
        self._thread = threading.Thread(target=self._loop, name='kube-controllers-%s' % self.cluster.key, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._events is not None:
            self.store.unsubscribe(self._events)
        for thread in list(self._starting.values()):
            thread.join(timeout=30)
        self.runtime.remove_cluster(self.runtime_key)

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
        """Stop the controller ``name`` (one of CONTROLLERS, or an added function's ``__name__``) until resume()."""
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
        while not self._stop.is_set():
            try:
                self._events.get(timeout=self.tick)
                while True:   # drain: one reconcile covers every change so far
                    self._events.get_nowait()
            except queue.Empty:
                pass
            if self._stop.is_set():
                return
            self._wake.clear()
            try:
                self.reconcile()
            except Exception:  # pylint: disable=broad-exception-caught
                # A controller bug must not kill the loop silently; it is kept for tests to show.
                self.errors.append(traceback.format_exc())
                sys.stderr.write('kube stand-in controllers: %s\n' % self.errors[-1])

    def reconcile(self):
        with self._lock:
            gke, extra = self.gke, list(self.extra)
        if gke is not None:
            for name in GKE_CONTROLLERS:
                if self._runs(name):
                    getattr(self, name.replace('-', '_'))(*gke)
        for name in CONTROLLERS:
            if self._runs(name):
                getattr(self, name.replace('-', '_'))()
        if gke is not None:
            for name in GKE_AFTER_SCHEDULING:
                if self._runs(name):
                    getattr(self, name.replace('-', '_'))(*gke)
        for reconcile in extra:
            if self._runs(reconcile.__name__):
                try:
                    reconcile(self.store)
                except Exception:  # pylint: disable=broad-exception-caught
                    self.errors.append(traceback.format_exc())
                    sys.stderr.write('kube stand-in controllers (%s): %s\n' % (reconcile.__name__, self.errors[-1]))

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
        self._install_crd('ComputeClass.yaml')
        if (gke_cluster.get('networkConfig') or {}).get('enableMultiNetworking'):
            for name in ('Network.yaml', 'GKENetworkParamSet.yaml'):
                self._install_crd(name)
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

    def _serves(self, ref):
        try:
            return self.store.resource(ref) is not None
        except (errors.KubeError, KeyError):   # find_ref: KeyError for a resource the cluster does not serve
            return False

    def _install_crd(self, file_name):
        path = CRD_DIR / file_name
        if not path.exists():
            return
        with open(path, encoding='utf-8') as handle:
            crd = yaml.safe_load(handle)
        if self.store.get('customresourcedefinitions.apiextensions.k8s.io', crd['metadata']['name']) is None:
            self._create(crd)

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
                    wanted[node['metadata']['name']] = node
        for node in self.store.list('nodes'):
            name = node['metadata']['name']
            if name not in wanted and node['metadata'].get('labels', {}).get('cloud.google.com/gke-nodepool'):
                self.store.delete('nodes', name)
        for name, node in wanted.items():
            self._network_resources(node, pools)
            stored = self.store.get('nodes', name)
            if stored is None:
                stored = self._create({key: value for key, value in node.items() if key != 'status'})
                if stored is None:
                    continue
            desired_meta = {key: node['metadata'][key] for key in ('labels', 'annotations')}
            if any(stored['metadata'].get(key) != value for key, value in desired_meta.items()) or stored.get('spec') != node['spec']:
                changed = copy.deepcopy(stored)
                changed['metadata'].update(desired_meta)
                changed['spec'] = node['spec']
                stored = self.store.update(changed) or stored
            status = copy.deepcopy(node['status'])
            created = stored['metadata']['creationTimestamp']
            for condition in status['conditions']:
                condition['lastHeartbeatTime'] = condition['lastTransitionTime'] = created
            self._update_status(stored, status)
            self._node_lease(stored)

    def _node_lease(self, node):
        """SIMULATION (the kubelet's node lease).  Real: each kubelet keeps a Lease named after its Node in
        kube-node-lease and renews it every 10 s.  The stand-in creates it once (owned by the Node, so it
        goes with it) and never renews it (renewTime stays the Node's creation time)."""
        name = node['metadata']['name']
        if self.store.get('leases.coordination.k8s.io', name, 'kube-node-lease') is None:
            created = node['metadata']['creationTimestamp'].replace('Z', '.000000Z')
            self._create({'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
                          'metadata': {'name': name, 'namespace': 'kube-node-lease', 'ownerReferences': [
                              {'apiVersion': 'v1', 'kind': 'Node', 'name': name, 'uid': node['metadata']['uid']}]},
                          'spec': {'holderIdentity': name, 'leaseDurationSeconds': 40, 'renewTime': created}})

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

    def _network_resources(self, node, pools):
        """SIMULATION (GKE multi-networking, gke-networking-api annotations).  Real GKE reports, on a
        node attached to a Network object, the extended resources ``networking.gke.io.networks/NAME``
        and ``NAME.IP`` and the node annotation ``networking.gke.io/north-interfaces`` ([{network,
        ipAddress}]).  The stand-in attaches a node to each ``type: Device``/L3 Network whose
        GKENetworkParamSet names the VPC and subnet of one of its pool's additional node networks."""
        pool = next(pool for pool in pools if pool['name'] == node['metadata']['labels']['cloud.google.com/gke-nodepool'])
        nics = {(_last(item.get('network')), _last(item.get('subnetwork'))): index + 1
                for index, item in enumerate((pool.get('networkConfig') or {}).get('additionalNodeNetworkConfigs') or [])}
        if not nics or not self._serves('networks.networking.gke.io'):
            return
        params = {item['metadata']['name']: item for item in self.store.list('gkenetworkparamsets.networking.gke.io')}
        north = []
        for network in self.store.list('networks.networking.gke.io'):
            reference = (network.get('spec') or {}).get('parametersRef') or {}
            param = params.get(reference.get('name'))
            if param is None:
                continue
            nic = nics.get((_last(param['spec'].get('vpc')), _last(param['spec'].get('vpcSubnet'))))
            if nic is None:
                continue
            name = network['metadata']['name']
            address = _nic_ip(node['metadata']['name'], nic)
            north.append({'network': name, 'ipAddress': address})
            for resource in ('networking.gke.io.networks/' + name, 'networking.gke.io.networks/%s.IP' % name):
                node['status']['capacity'][resource] = node['status']['allocatable'][resource] = '1'
        if north:
            node['metadata']['annotations']['networking.gke.io/north-interfaces'] = json.dumps(north, separators=(',', ':'))

    # workloads ----------------------------------------------------------------------------------
    def _pods_owned_by(self, owner):
        uid = owner['metadata']['uid']
        return [pod for pod in self.store.list('pods', owner['metadata'].get('namespace'))
                if any(ref.get('uid') == uid and ref.get('controller') for ref in pod['metadata'].get('ownerReferences') or [])]

    @staticmethod
    def _owner_reference(owner):
        return {'apiVersion': owner['apiVersion'], 'kind': owner['kind'], 'name': owner['metadata']['name'],
                'uid': owner['metadata']['uid'], 'controller': True, 'blockOwnerDeletion': True}

    def _new_pod(self, owner, template, name, labels, extra_spec=None):
        spec = copy.deepcopy(template.get('spec') or {})
        spec.update(extra_spec or {})
        metadata = copy.deepcopy(template.get('metadata') or {})
        metadata.update({'name': name, 'namespace': owner['metadata'].get('namespace', 'default'),
                         'labels': dict(metadata.get('labels') or {}, **labels),
                         'ownerReferences': [self._owner_reference(owner)]})
        metadata.pop('creationTimestamp', None)
        return self._create({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': metadata, 'spec': spec})

    def daemonsets(self):
        """SIMULATION (DaemonSet controller, pkg/controller/daemon).  Real: one Pod per node that the
        template's nodeSelector, node affinity and NoSchedule/NoExecute taints admit (the Pod pinned by
        a matchFields metadata.name affinity and given the DaemonSet tolerations), status counts from
        those Pods, RollingUpdate replacing Pods of an older template maxUnavailable at a time (an
        integer or a percentage of the desired count, rounded up; at least 1), maxSurge new Pods
        beside old ones.  The stand-in: the same node rule, status counts and maxUnavailable; no
        surge (the old Pod goes before the new one comes); OnDelete leaves old Pods alone."""
        nodes = self.store.list('nodes')
        for ds in self.store.list('daemonsets.apps'):
            if ds['metadata'].get('deletionTimestamp'):
                continue
            template = ds['spec']['template']
            revision = template_hash(template)
            probe = {'spec': copy.deepcopy(template.get('spec') or {})}
            probe['spec']['tolerations'] = list(probe['spec'].get('tolerations') or []) + DAEMONSET_TOLERATIONS
            eligible = [node for node in nodes if node_affinity_matches(probe, node) and untolerated_taint(probe, node) is None]
            pods = self._pods_owned_by(ds)
            by_node = {}
            for pod in pods:
                by_node.setdefault(_pinned_node(pod), []).append(pod)
            eligible_names = {node['metadata']['name'] for node in eligible}
            for node_name, node_pods in by_node.items():
                if node_name not in eligible_names:
                    for pod in node_pods:
                        self.store.delete('pods', pod['metadata']['name'], pod['metadata']['namespace'])
            strategy = ds['spec'].get('updateStrategy') or {}
            rolling = strategy.get('type', 'RollingUpdate') == 'RollingUpdate'
            max_unavailable = _scaled((strategy.get('rollingUpdate') or {}).get('maxUnavailable', 1), len(eligible))
            unavailable = sum(1 for node_pods in by_node.values() for pod in node_pods if not _pod_ready(pod))
            for node in eligible:
                name = node['metadata']['name']
                node_pods = by_node.get(name) or []
                if not node_pods:
                    pod_name = '%s-%s' % (ds['metadata']['name'][:57], _suffix(ds['metadata']['uid'] + name))
                    self._new_pod(ds, template, pod_name,
                                  {'controller-revision-hash': revision, 'pod-template-generation': str(ds['metadata'].get('generation', 1))},
                                  {'affinity': _pin_to(template.get('spec', {}).get('affinity'), name),
                                   'tolerations': list(template.get('spec', {}).get('tolerations') or []) + DAEMONSET_TOLERATIONS})
                elif rolling and unavailable < max_unavailable and \
                        node_pods[0]['metadata'].get('labels', {}).get('controller-revision-hash') != revision:
                    self.store.delete('pods', node_pods[0]['metadata']['name'], node_pods[0]['metadata']['namespace'])
                    unavailable += 1
            pods = self._pods_owned_by(ds)
            current = [pod for pod in pods if _pinned_node(pod) in eligible_names]
            updated = [pod for pod in current if pod['metadata'].get('labels', {}).get('controller-revision-hash') == revision]
            ready = [pod for pod in current if _pod_ready(pod)]
            status = {'currentNumberScheduled': len({_pinned_node(p) for p in current}),
                      'desiredNumberScheduled': len(eligible), 'numberMisscheduled': 0,
                      'numberReady': len(ready), 'observedGeneration': ds['metadata'].get('generation', 1),
                      'updatedNumberScheduled': len(updated), 'numberAvailable': len(ready)}
            if len(eligible) - len(ready):
                status['numberUnavailable'] = len(eligible) - len(ready)
            self._update_status(ds, status)

    def deployments(self):
        """SIMULATION (Deployment controller).  Real: a ReplicaSet per template revision owns the Pods;
        status from them, condition Progressing NewReplicaSetAvailable once rolled out.  The stand-in
        has no ReplicaSets: the Deployment owns ``replicas`` Pods labelled ``pod-template-hash``
        directly, replaces all Pods of an older template at once, and reports the status fields
        ``kubectl rollout status deployment`` reads (observedGeneration, replicas, updatedReplicas,
        readyReplicas, availableReplicas) with Available and Progressing conditions."""
        for deployment in self.store.list('deployments.apps'):
            template = deployment['spec']['template']
            revision = template_hash(template)
            wanted = deployment['spec'].get('replicas', 1)
            pods = self._pods_owned_by(deployment)
            for pod in pods:
                if pod['metadata'].get('labels', {}).get('pod-template-hash') != revision:
                    self.store.delete('pods', pod['metadata']['name'], pod['metadata']['namespace'])
            current = [pod for pod in pods if pod['metadata'].get('labels', {}).get('pod-template-hash') == revision]
            for index in range(len(current), wanted):
                self._new_pod(deployment, template, '%s-%s-%s' % (deployment['metadata']['name'][:40], revision[:10],
                                                                  _suffix(deployment['metadata']['uid'] + revision + str(index))),
                              {'pod-template-hash': revision})
            for pod in current[wanted:]:
                self.store.delete('pods', pod['metadata']['name'], pod['metadata']['namespace'])
            current = current[:wanted]
            ready = sum(1 for pod in current if _pod_ready(pod))
            since = deployment['metadata']['creationTimestamp']
            status = {'observedGeneration': deployment['metadata'].get('generation', 1), 'replicas': len(current),
                      'updatedReplicas': len(current), 'readyReplicas': ready, 'availableReplicas': ready,
                      'conditions': [
                          _condition('Available', ready >= wanted, 'MinimumReplicasAvailable' if ready >= wanted else 'MinimumReplicasUnavailable',
                                     'Deployment has minimum availability.' if ready >= wanted else 'Deployment does not have minimum availability.', since),
                          _condition('Progressing', True, 'NewReplicaSetAvailable' if ready >= wanted else 'ReplicaSetUpdated',
                                     'ReplicaSet "%s-%s" has %s.' % (deployment['metadata']['name'], revision[:10],
                                                                     'successfully progressed' if ready >= wanted else 'is progressing'), since)]}
            if len(current) - ready:
                status['unavailableReplicas'] = len(current) - ready
            for key in ('readyReplicas', 'availableReplicas'):
                if not status[key]:
                    del status[key]
            self._update_status(deployment, status)

    def jobs(self):
        """SIMULATION (Job controller).  Real: Pods until ``completions`` succeed (``parallelism`` at a
        time), a new Pod per failure until ``backoffLimit`` (with exponential back-off), then conditions
        SuccessCriteriaMet + Complete, or FailureTarget + Failed (BackoffLimitExceeded).  The stand-in:
        the same counts and conditions, with no back-off delay; Pods are found by ownerReference."""
        for job in self.store.list('jobs.batch'):
            spec = job['spec']
            completions, parallelism = spec.get('completions', 1), spec.get('parallelism', 1)
            backoff_limit = spec.get('backoffLimit', 6)
            pods = self._pods_owned_by(job)
            succeeded = sum(1 for pod in pods if pod.get('status', {}).get('phase') == 'Succeeded')
            failed = sum(1 for pod in pods if pod.get('status', {}).get('phase') == 'Failed')
            active = [pod for pod in pods if pod.get('status', {}).get('phase') not in ('Succeeded', 'Failed')]
            conditions = list((job.get('status') or {}).get('conditions') or [])
            finished = any(c['type'] in ('Complete', 'Failed') and c['status'] == 'True' for c in conditions)
            now = now_rfc3339()
            if not finished:
                if succeeded >= completions:
                    conditions = [_condition('SuccessCriteriaMet', True, 'CompletionsReached', 'Reached expected number of succeeded pods', now),
                                  _condition('Complete', True, 'CompletionsReached', 'Reached expected number of succeeded pods', now)]
                elif failed > backoff_limit:
                    conditions = [_condition('FailureTarget', True, 'BackoffLimitExceeded', 'Job has reached the specified backoff limit', now),
                                  _condition('Failed', True, 'BackoffLimitExceeded', 'Job has reached the specified backoff limit', now)]
                else:
                    for index in range(len(active), min(parallelism, completions - succeeded)):
                        labels = {'batch.kubernetes.io/controller-uid': job['metadata']['uid'], 'controller-uid': job['metadata']['uid'],
                                  'batch.kubernetes.io/job-name': job['metadata']['name'], 'job-name': job['metadata']['name']}
                        self._new_pod(job, spec['template'], '%s-%s' % (job['metadata']['name'][:57],
                                                                        _suffix(job['metadata']['uid'] + str(len(pods) + index))), labels)
            status = dict(job.get('status') or {})
            status.update({'startTime': status.get('startTime') or job['metadata']['creationTimestamp'],
                           'active': len(active) if not finished and not any(c['type'] in ('Complete', 'Failed') for c in conditions) else 0,
                           'succeeded': succeeded, 'failed': failed, 'ready': sum(1 for pod in active if _pod_ready(pod)),
                           'uncountedTerminatedPods': {}})
            if conditions:
                status['conditions'] = conditions
                if any(c['type'] == 'Complete' for c in conditions):
                    status.setdefault('completionTime', conditions[-1]['lastTransitionTime'])
            for key in ('active', 'succeeded', 'failed'):
                if not status[key]:
                    del status[key]
            self._update_status(job, status)

    def garbage_collect_pods(self):
        """SIMULATION (pod garbage collector, pkg/controller/podgc).  Real: Pods bound to a Node that no
        longer exists are deleted.  The stand-in does the same at once; containers of deleted Pods go."""
        nodes = {node['metadata']['name'] for node in self.store.list('nodes')}
        pods = self.store.list('pods')
        for pod in pods:
            if pod['spec'].get('nodeName') and pod['spec']['nodeName'] not in nodes:
                self.store.delete('pods', pod['metadata']['name'], pod['metadata']['namespace'])
        alive = {pod['metadata']['uid'] for pod in self.store.list('pods')}
        for uid in [uid for uid in self._known_pods if uid not in alive and uid not in self._starting]:
            pod = self._known_pods.pop(uid)
            self._started.pop(uid, None)
            self._first_seen.pop(uid, None)
            self._last_poll.pop(uid, None)
            threading.Thread(target=self.runtime.remove_pod, args=(pod,), daemon=True).start()

    # scheduler ----------------------------------------------------------------------------------
    def schedule(self):
        """SIMULATION (kube-scheduler, default plugins).  Real: filters each node (NodeUnschedulable,
        TaintToleration, NodeAffinity, NodeResourcesFit, InterPodAffinity, DynamicResources, ...) and
        binds the Pod to the best; when none fits, PodScheduled=False/Unschedulable with the FitError
        message ``0/N nodes are available: <count reason>, ... preemption: ...``
        (pkg/scheduler/framework/types.go FitError.Error; reasons as each plugin words them).  The
        stand-in: the same filters in that order (the first failing one gives a node's reasons), the
        first fitting node in name order, no scoring or preemption (the message says none helps)."""
        nodes = sorted(self.store.list('nodes'), key=lambda node: node['metadata']['name'])
        pods = self.store.list('pods')
        for pod in pods:
            if pod['spec'].get('nodeName') or pod['metadata'].get('deletionTimestamp'):
                continue
            if pod['spec'].get('schedulerName', 'default-scheduler') != 'default-scheduler':
                continue
            reasons, fit = {}, None
            for node in nodes:
                failures = self._filter(pod, node, pods)
                if not failures:
                    fit = node
                    break
                for reason in failures:
                    reasons[reason] = reasons.get(reason, 0) + 1
            if fit is not None:
                self._bind(pod, fit)
                pods = self.store.list('pods')
            else:
                self._unschedulable(pod, len(nodes), reasons)

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
        """SIMULATION (DRA DynamicResources plugin).  Real: each claim's requests are allocated from
        the devices drivers publish in ResourceSlices.  The stand-in publishes no ResourceSlices; a claim
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
        waiting = {}
        for pod in self.store.list('pods'):
            scheduled = next((c for c in (pod.get('status') or {}).get('conditions') or [] if c['type'] == 'PodScheduled'), {})
            name = autoprovisioning.selected_class(pod)
            if name and not pod['spec'].get('nodeName') and not pod['metadata'].get('deletionTimestamp') \
                    and scheduled.get('reason') == 'Unschedulable':
                waiting.setdefault(name, []).append(pod)
        autopilot = bool((gke_cluster.get('autopilot') or {}).get('enabled'))
        for name, pods in sorted(waiting.items()):
            compute_class = self.store.get(autoprovisioning.COMPUTE_CLASSES, name)
            if compute_class is not None and autoprovisioning.auto_creation_allowed(compute_class, autopilot):
                self._provision(compute_class, pods, gke_cluster, pools, project)

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

    def _bind(self, pod, node):
        """SIMULATION (binding).  Real: the scheduler POSTs pods/NAME/binding.  The stand-in sets
        spec.nodeName through the store and PodScheduled=True."""
        bound = copy.deepcopy(pod)
        bound['spec']['nodeName'] = node['metadata']['name']
        try:
            stored = self.store.update(bound)
        except errors.KubeError as error:
            if error.code in (404, 409):
                return
            raise
        status = dict(stored.get('status') or {})
        status['phase'] = 'Pending'
        status['conditions'] = [_condition('PodScheduled', True, None, None, now_rfc3339(), probe=False)]
        self._update_status(stored, status)
        self._event(stored, 'Normal', 'Scheduled', 'Successfully assigned %s/%s to %s' % (
            stored['metadata']['namespace'], stored['metadata']['name'], node['metadata']['name']))

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

    def _unschedulable(self, pod, node_count, reasons):
        histogram = sorted('%d %s' % (count, reason) for reason, count in reasons.items())
        message = '0/%d nodes are available' % node_count + (': %s.' % ', '.join(histogram) if histogram else '.')
        resolvable = sum(count for reason, count in reasons.items() if reason.startswith(('Insufficient', 'Too many')))
        others = node_count - resolvable
        preemption = []
        if others:
            preemption.append('%d Preemption is not helpful for scheduling' % others)
        if resolvable:
            preemption.append('%d No preemption victims found for incoming pod' % resolvable)
        message += ' preemption: 0/%d nodes are available: %s.' % (node_count, ', '.join(sorted(preemption))) if node_count else ''
        status = dict(pod.get('status') or {})
        existing = next((c for c in status.get('conditions') or [] if c['type'] == 'PodScheduled'), None)
        since = existing['lastTransitionTime'] if existing and existing.get('message') == message else now_rfc3339()
        status['phase'] = 'Pending'
        status['conditions'] = [_condition('PodScheduled', False, 'Unschedulable', message, since, probe=True)]
        if self._update_status(pod, status) is not None and not (existing and existing.get('message') == message):
            self._event(pod, 'Warning', 'FailedScheduling', message)

    # kubelet ------------------------------------------------------------------------------------
    def kubelet(self):
        """SIMULATION (kubelet).  Real: pulls images, runs init containers then containers, reports
        phase, conditions, IPs and containerStatuses; probes decide readiness.  The stand-in: after
        ``ready_delay`` seconds from binding it starts the Pod's containers with exec.py's runtime (a
        podman container each, on a worker thread), then reports Running with every condition True
        (no probes run: started means ready), podIP from the node's podCIDR (the node's IP with
        hostNetwork), and containerStatuses from podman.  Containers that exit make the Pod Succeeded
        or Failed when restartPolicy is Never or OnFailure (no restarts); with Always an exited
        container is not noticed (no restarts, no CrashLoopBackOff)."""
        nodes = {node['metadata']['name']: node for node in self.store.list('nodes')}
        now = time.monotonic()
        for pod in self.store.list('pods'):
            node = nodes.get(pod['spec'].get('nodeName'))
            uid = pod['metadata']['uid']
            if node is None or pod['metadata'].get('deletionTimestamp'):
                continue
            self._known_pods[uid] = pod
            phase = (pod.get('status') or {}).get('phase')
            if phase in ('Succeeded', 'Failed'):
                continue
            first = self._first_seen.setdefault(uid, now)
            if uid not in self._started:
                if uid not in self._starting and now - first >= self.ready_delay:
                    thread = threading.Thread(target=self._start_containers, args=(pod,), daemon=True)
                    self._starting[uid] = thread
                    thread.start()
                if (pod.get('status') or {}).get('containerStatuses') is None:
                    self._update_status(pod, self._pod_status(pod, node, None))
                continue
            states = self._started[uid]
            if pod['spec'].get('restartPolicy', 'Always') != 'Always' and self.runtime.enabled \
                    and now - self._last_poll.get(uid, 0) >= POLL_INTERVAL:
                self._last_poll[uid] = now   # one podman inspect per second and Pod that may finish
                states = dict(states, **self.runtime.states(pod))
                self._started[uid] = states
            self._update_status(pod, self._pod_status(pod, node, states))

    def _start_containers(self, pod):
        uid = pod['metadata']['uid']
        try:
            self._started[uid] = self.runtime.start_pod(self.runtime_key, pod)
        except Exception:  # pylint: disable=broad-exception-caught
            self.errors.append(traceback.format_exc())
            self._started[uid] = {}
        finally:
            self._starting.pop(uid, None)
            self._wake.set()
            self._poke()

    def _poke(self):
        """Wake the loop (a no-op event on the subscription queue)."""
        if self._events is not None:
            self._events.put(('TICK', None))

    def _pod_status(self, pod, node, states):
        spec, status = pod['spec'], dict(pod.get('status') or {})
        host_ip = next((a['address'] for a in node['status'].get('addresses', []) if a['type'] == 'InternalIP'), '10.128.0.2')
        scheduled = next((c for c in status.get('conditions') or [] if c['type'] == 'PodScheduled'), None)
        since = scheduled['lastTransitionTime'] if scheduled else now_rfc3339()
        status.update({'hostIP': host_ip, 'hostIPs': [{'ip': host_ip}], 'startTime': status.get('startTime') or since})
        init_names = [c['name'] for c in spec.get('initContainers') or []]
        main = spec['containers']
        if states is None:
            status['phase'] = 'Pending'
            status['conditions'] = [_condition(kind, kind == 'PodScheduled', None if kind == 'PodScheduled' else
                                               ('ContainersNotReady' if kind in ('Ready', 'ContainersReady') else
                                                'ContainersNotInitialized' if kind == 'Initialized' and init_names else None),
                                               None, since, probe=kind != 'PodScheduled')
                                    for kind in ('PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled')]
            for condition in status['conditions']:
                if condition['type'] == 'Initialized' and not init_names:
                    condition['status'] = 'True'
                    condition.pop('reason', None)
            status['containerStatuses'] = [_container_status(c, {'waiting': {'reason': 'ContainerCreating'}}, False) for c in main]
            if init_names:
                status['initContainerStatuses'] = [_container_status(c, {'waiting': {'reason': 'PodInitializing'}}, False)
                                                   for c in spec['initContainers']]
            return status
        init_failed = any(states.get(name) and states[name].state == 'terminated' and states[name].exit_code
                          for name in init_names)
        if init_names:
            status['initContainerStatuses'] = [_container_status(c, states[c['name']].to_status() if c['name'] in states else
                                                                 {'waiting': {'reason': 'PodInitializing'}}, False,
                                                                 getattr(states.get(c['name']), 'container_id', None))
                                               for c in spec['initContainers']]
        main_states = {c['name']: (states.get(c['name']).to_status() if states.get(c['name']) else
                                   {'waiting': {'reason': 'PodInitializing' if init_failed else 'ContainerCreating'}}) for c in main}
        status['containerStatuses'] = [_container_status(c, main_states[c['name']], 'running' in main_states[c['name']],
                                                         getattr(states.get(c['name']), 'container_id', None)) for c in main]
        running = all('running' in state for state in main_states.values())
        terminated = [state['terminated'] for state in main_states.values() if 'terminated' in state]
        if init_failed:
            status['phase'] = 'Pending'
        elif terminated and len(terminated) == len(main) and spec.get('restartPolicy', 'Always') != 'Always':
            status['phase'] = 'Succeeded' if all(t['exitCode'] == 0 for t in terminated) else 'Failed'
        else:
            status['phase'] = 'Running' if running or terminated else 'Pending'
        ready = running and not init_failed
        status['conditions'] = [
            _condition('PodReadyToStartContainers', True, None, None, since, probe=True),
            _condition('Initialized', not init_failed, 'ContainersNotInitialized' if init_failed else None, None, since, probe=True),
            _condition('Ready', ready, None if ready else 'PodCompleted' if status['phase'] in ('Succeeded', 'Failed') else 'ContainersNotReady',
                       None, since, probe=True),
            _condition('ContainersReady', ready, None if ready else 'PodCompleted' if status['phase'] in ('Succeeded', 'Failed') else
                       'ContainersNotReady', None, since, probe=True),
            _condition('PodScheduled', True, None, None, since, probe=True)]
        pod_ip = host_ip if spec.get('hostNetwork') else _pod_ip(node, pod)
        status.update({'podIP': pod_ip, 'podIPs': [{'ip': pod_ip}]})
        status.setdefault('qosClass', _qos_class(pod))
        return status


# GKE multi-networking ---------------------------------------------------------------------------
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
DAEMONSET_TOLERATIONS = [
    # pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations
    {'key': 'node.kubernetes.io/not-ready', 'operator': 'Exists', 'effect': 'NoExecute'},
    {'key': 'node.kubernetes.io/unreachable', 'operator': 'Exists', 'effect': 'NoExecute'},
    {'key': 'node.kubernetes.io/disk-pressure', 'operator': 'Exists', 'effect': 'NoSchedule'},
    {'key': 'node.kubernetes.io/memory-pressure', 'operator': 'Exists', 'effect': 'NoSchedule'},
    {'key': 'node.kubernetes.io/pid-pressure', 'operator': 'Exists', 'effect': 'NoSchedule'},
    {'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'},
]
# DeviceClass -> the node label (key, value) whose nodes have that class's devices (see _claims_fit).
DEVICE_CLASS_NODE_LABELS = {'mrdma.google.com': ('cloud.google.com/gke-networking-dra-driver', 'true')}
DRANET_LABEL = 'cloud.google.com/gke-networking-dra-driver'


def _scaled(value, total):
    """intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true), at least 1 (the DaemonSet rule)."""
    if isinstance(value, str) and value.endswith('%'):
        scaled = -(-int(value[:-1]) * total // 100)
    else:
        scaled = int(value)
    return max(scaled, 1)


def _last(path):
    return (path or '').rstrip('/').rsplit('/', 1)[-1]


def _gpu_count(pool):
    """nvidia.com/gpu of a pool's nodes: the catalog family's GPU count for its machine type
    (plugins/module_utils/families.py), else the pool's accelerator count, else none."""
    config = pool.get('config') or {}
    family = load_families().FAMILIES.get(config.get('machineType'))
    if family is not None:
        return family.gpu_count
    return sum(int(item.get('acceleratorCount') or 0) for item in config.get('accelerators') or [])


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
        family = load_families().FAMILIES.get(machine_type)
        accelerator_type = family.gke_accelerator if family else None
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
            'addresses': [{'type': 'InternalIP', 'address': internal_ip}, {'type': 'Hostname', 'address': name}],
            'conditions': [
                {'type': 'MemoryPressure', 'status': 'False', 'reason': 'KubeletHasSufficientMemory', 'message': 'kubelet has sufficient memory available'},
                {'type': 'DiskPressure', 'status': 'False', 'reason': 'KubeletHasNoDiskPressure', 'message': 'kubelet has no disk pressure'},
                {'type': 'PIDPressure', 'status': 'False', 'reason': 'KubeletHasSufficientPID', 'message': 'kubelet has sufficient PID available'},
                {'type': 'Ready', 'status': 'True', 'reason': 'KubeletReady', 'message': 'kubelet is posting ready status'}],
            'daemonEndpoints': {'kubeletEndpoint': {'Port': 10250}},
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


def _pod_ip(node, pod):
    prefix = node['spec']['podCIDR'].rsplit('.', 1)[0]
    return '%s.%d' % (prefix, int(hashlib.sha256(pod['metadata']['uid'].encode()).hexdigest()[:4], 16) % 250 + 2)


# pods ------------------------------------------------------------------------------------------
def _condition(kind, true, reason, message, since, probe=None):
    condition = {'type': kind, 'status': 'True' if true else 'False', 'lastTransitionTime': since}
    if probe is not None:
        condition['lastProbeTime'] = None
    if reason:
        condition['reason'] = reason
    if message:
        condition['message'] = message
    return condition


def _container_status(container, state, ready, container_id=None):
    status = {'name': container['name'], 'image': container.get('image', ''), 'imageID': '', 'ready': ready,
              'restartCount': 0, 'started': 'running' in state, 'state': state, 'lastState': {}}
    if container_id:
        status['containerID'] = 'containerd://' + container_id   # the podman container's id, as GKE's runtime prefixes it
    return status


def _pod_ready(pod):
    return any(c['type'] == 'Ready' and c['status'] == 'True' for c in (pod.get('status') or {}).get('conditions') or [])


def _pinned_node(pod):
    """The node a DaemonSet Pod is pinned to (its matchFields metadata.name affinity), or its nodeName."""
    terms = ((((pod['spec'].get('affinity') or {}).get('nodeAffinity') or {}).get('requiredDuringSchedulingIgnoredDuringExecution') or {})
             .get('nodeSelectorTerms') or [])
    for term in terms:
        for field in term.get('matchFields') or []:
            if field.get('key') == 'metadata.name' and field.get('values'):
                return field['values'][0]
    return pod['spec'].get('nodeName')


def _pin_to(affinity, node_name):
    """pkg/controller/daemon/util ReplaceDaemonSetPodNodeNameNodeAffinity: the template's affinity with
    every node selector term given ``matchFields metadata.name In [node]``."""
    affinity = copy.deepcopy(affinity or {})
    node_affinity = affinity.setdefault('nodeAffinity', {})
    required = node_affinity.setdefault('requiredDuringSchedulingIgnoredDuringExecution', {})
    terms = required.get('nodeSelectorTerms') or [{}]
    pin = [{'key': 'metadata.name', 'operator': 'In', 'values': [node_name]}]
    required['nodeSelectorTerms'] = [dict(term, matchFields=pin) for term in terms]
    return affinity


def _qos_class(pod):
    containers = pod['spec'].get('containers') or []
    resources = [c.get('resources') or {} for c in containers]
    if not any(r.get('requests') or r.get('limits') for r in resources):
        return 'BestEffort'
    guaranteed = all(r.get('limits', {}).get(name) and r.get('limits', {}).get(name) == r.get('requests', r.get('limits', {})).get(name)
                     for r in resources for name in ('cpu', 'memory'))
    return 'Guaranteed' if guaranteed else 'Burstable'
