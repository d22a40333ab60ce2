"""OpenShift on a real Kubernetes control plane (controlplane.py): what the openshift_rdma role reads and waits on.

Red Hat's chapter "NVIDIA GPUDirect RDMA" (tests/unit/seeds/openshift-rdma.md, cited by section) runs
on OpenShift with four operators from OLM.  None of them runs here; this module simulates, on one
``KubeCluster``, the parts whose API effects the role depends on, writing through the real API server
(``cluster.store``: its validation against the vendored CRDs' schemas, its admission) as the cluster's
admin.  The real kube-controller-manager (garbage collection, namespace deletion), kube-scheduler (the test
Pods onto the workers by their allocatable) and kwok (Nodes Ready, Pods Running) run beside it.  Every
rule is marked SIMULATION with what the real component does and what the stand-in does instead.  Status fields are only those the
operators at the chapter's versions set (NNO v24.10/v25.1, GPU Operator v24.9, SR-IOV and NFD of OCP
4.16-4.17; OLM v0.2x): no HEAD-only condition is written.

Use::

    hub = KubeHub(); cluster = hub.start_cluster('ocp', version='1.30.6', openshift=True)
    sim = OpenShiftSimulation(cluster, version='4.17.0', delay=0.2).start()
    ...                      # apply Subscriptions, CRs; the simulation answers as the operators would
    sim.stop()

Test levers: ``installed_before(objects, csv)`` (an operator already installed at an older CSV); constructor:
``csv_failures={package: (reason, message)}`` (that package's CSV goes Failed
after Installing, as when its Deployment never becomes available), ``csv_stalls={package}`` (the CSV
stays Installing), ``bandwidth_gbps`` (what the stand-in ``ib_write_bw`` reports), ``workers``, ``machine`` (the HCAs and GPUs of a
worker: MACHINES); faults: the Node annotations FAULT_SLOW_NODE and FAULT_SLOW_HCAS.

What it does not show (README-openshift in the README section): operator pods and DaemonSets (no
driver container, no device plugin runs: allocatable is patched straight onto the Nodes), reboots
(nodes stay Ready through MachineConfig and SR-IOV rollouts), admission webhooks of the SR-IOV
operator, Security Context Constraints, CatalogSource gRPC pods, upgrades between CSVs.
"""

import copy
import hashlib
import ipaddress
import json
import pathlib
import sys
import tempfile
import threading
import time

import yaml

from . import errors
from .controllers import ClusterControllers, SystemWrites, label_selector_matches
from .exec import ExecRuntime
from .apistore import now_rfc3339

CRD_DIR = pathlib.Path(__file__).resolve().parent / 'crds' / 'openshift'
TOOLS = pathlib.Path(__file__).resolve().parent / 'openshift_tools.py'
MARKETPLACE = 'openshift-marketplace'
MOFED_WAIT = 'network.nvidia.com/operator.mofed.wait'
TICK_FLOOR = 0.1
SIMULATION_USER = 'system:admin'   # the control plane's admin token: the simulation's writes

# SIMULATION (the OperatorHub catalogs).  Real: the CatalogSources redhat-operators and
# certified-operators are gRPC registry pods whose bundles the packageserver exposes as PackageManifests.
# The stand-in's catalogs hold one bundle per channel for each of the chapter's four packages, with
# versions of the chapter's era (§12) and the CRDs each bundle installs (vendored in crds/openshift/).
NFD_OPERAND = 'registry.redhat.io/openshift4/ose-node-feature-discovery-rhel9@sha256:' + 'ab' * 32
PACKAGES = {
    'nfd': {'source': 'redhat-operators', 'default': 'stable', 'channels': {'stable': 'nfd.4.17.0-202411251103'},
            'crds': ['nfd.openshift.io/NodeFeatureDiscovery.yaml'],
            'alm': [{'apiVersion': 'nfd.openshift.io/v1', 'kind': 'NodeFeatureDiscovery',
                     'metadata': {'name': 'nfd-instance', 'namespace': 'openshift-nfd'},
                     'spec': {'operand': {'image': NFD_OPERAND, 'servicePort': 12000}}}]},
    'sriov-network-operator': {
        'source': 'redhat-operators', 'default': 'stable', 'channels': {'stable': 'sriov-network-operator.v4.17.0-202411251103'},
        'crds': ['sriovnetwork.openshift.io/%s.yaml' % kind for kind in
                 ('SriovOperatorConfig', 'SriovNetworkNodePolicy', 'SriovNetworkNodeState', 'SriovNetwork', 'SriovIBNetwork')],
        'alm': []},
    'nvidia-network-operator': {
        'source': 'certified-operators', 'default': 'v24.10',
        'channels': {'v24.10': 'nvidia-network-operator.v24.10.0', 'stable': 'nvidia-network-operator.v24.10.0'},
        'crds': ['mellanox.com/%s.yaml' % kind for kind in ('NicClusterPolicy', 'MacvlanNetwork', 'HostDeviceNetwork', 'IPoIBNetwork')],
        'alm': []},
    'gpu-operator-certified': {
        'source': 'certified-operators', 'default': 'v24.9',
        'channels': {'v24.9': 'gpu-operator-certified.v24.9.2', 'stable': 'gpu-operator-certified.v24.9.2'},
        'crds': ['nvidia.com/ClusterPolicy.yaml'],
        'alm': [{'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {'name': 'gpu-cluster-policy'},
                 'spec': {'daemonsets': {'updateStrategy': 'RollingUpdate', 'rollingUpdate': {'maxUnavailable': '1'}},
                          'dcgm': {'enabled': True}, 'dcgmExporter': {'enabled': True}, 'devicePlugin': {'enabled': True},
                          'driver': {'enabled': True}, 'gfd': {'enabled': True}, 'nodeStatusExporter': {'enabled': True},
                          'operator': {'defaultRuntime': 'crio', 'use_ocp_driver_toolkit': True},
                          'toolkit': {'enabled': True, 'installDir': '/usr/local/nvidia'}}}]},
}

# SIMULATION (the worker machines).  Real: bare-metal or cloud workers with their PCI devices.  The
# stand-in's workers each carry, as the chapter's example nodes do (§11), one BlueField-3 SuperNIC port
# in Ethernet mode (ens8f0np0) and one in InfiniBand mode (ibs2f0), 16 VFs possible on each, and two
# NVIDIA GPUs.
NICS = ({'name': 'ens8f0np0', 'vendor': '15b3', 'deviceID': 'a2dc', 'linkType': 'ETH', 'totalvfs': 16,
         'pciAddress': '0000:37:00.0', 'rdma': 'mlx5_0'},
        {'name': 'ibs2f0', 'vendor': '15b3', 'deviceID': 'a2dc', 'linkType': 'IB', 'totalvfs': 16,
         'pciAddress': '0000:b5:00.0', 'rdma': 'mlx5_1'})
GPUS_PER_NODE = 2

# SIMULATION (the worker machines' HCAs as a test Pod sees them, and what ib_write_bw measures on each), by ``machine``:
# * ``chapter``: the chapter's example nodes: the one port of the Pod's link (NICS above), 200 Gb/s; ib_write_bw
#   measures the chapter's own figure, 180.47 Gb/s BW average on a 200 Gb/s port (§10), unless ``bandwidth_gbps`` is given;
# * ``a3-ultragpu-8g``: eight ConnectX-7 RoCE HCAs of 400 Gb/s per node (Google Cloud's accelerator-optimized machine
#   page: A3 Ultra, 8 x NVIDIA H200, "8 NVIDIA ConnectX-7 NICs" for 3,200 Gbps of GPU-to-GPU networking), eight GPUs;
#   a healthy HCA measures 366.96 Gb/s, half of the 733.92 Gb/s bidirectional per-rail ib_write_bw BW average between
#   two 8-GPU H200 nodes in modal-labs/multinode-training-guide health-checks/README.md ("Mean BW avg: 733.92 Gb/s").
# A slow HCA (below) measures 180.47 Gb/s: a port that came up at 200 Gb/s, the chapter's run on such a port (§10).
MACHINES = {
    'chapter': {'hcas': None, 'rate_gbps': 200, 'gpus': GPUS_PER_NODE, 'bandwidth_gbps': 180.47},
    'a3-ultragpu-8g': {'hcas': tuple('mlx5_%d' % index for index in range(8)), 'rate_gbps': 400, 'gpus': 8,
                       'bandwidth_gbps': 366.96},
}
SLOW_GBPS = 180.47
# SIMULATION (faults).  Real: a node whose every run is slow (a bad PCIe switch, a host-wide fault) or one HCA whose
# link trained down.  The stand-in reads them from these annotations of the Node, which a test writes: every run
# touching a node annotated ``slow-node: "true"``, or an HCA named in its ``slow-hcas`` (comma-separated), measures
# SLOW_GBPS.
FAULT_SLOW_NODE = 'standin.aiinfra.gpudirect/slow-node'
FAULT_SLOW_HCAS = 'standin.aiinfra.gpudirect/slow-hcas'
SRIOV_NETWORK_FINALIZER = 'netattdef.finalizers.sriovnetwork.openshift.io'

# SIMULATION (PackageManifests are read-only).  Real: OLM's packageserver serves packages.operators.coreos.com/v1
# as an aggregated API server that implements only get, list and watch: a create, update, patch or delete
# answers 405 MethodNotAllowed ("the server does not allow this method on the requested resource").  The
# stand-in serves them from a CRD (crds/openshift/packages.operators.coreos.com) and this policy refuses every
# write by anyone but the simulation (the admin token's user) with 403 Forbidden, naming the real answer.
PACKAGE_MANIFESTS_READ_ONLY = (
    {'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'ValidatingAdmissionPolicy',
     'metadata': {'name': 'standin-packagemanifests-read-only'},
     'spec': {'failurePolicy': 'Fail',
              'matchConstraints': {'resourceRules': [{'apiGroups': ['packages.operators.coreos.com'], 'apiVersions': ['*'],
                                                      'operations': ['CREATE', 'UPDATE', 'DELETE'], 'resources': ['packagemanifests']}]},
              'validations': [{'expression': "request.userInfo.username == '%s'" % SIMULATION_USER, 'reason': 'Forbidden',
                               'message': 'the server does not allow this method on the requested resource (OLM serves '
                                          'PackageManifests read-only: 405 MethodNotAllowed)'}]}},
    {'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'ValidatingAdmissionPolicyBinding',
     'metadata': {'name': 'standin-packagemanifests-read-only'},
     'spec': {'policyName': 'standin-packagemanifests-read-only', 'validationActions': ['Deny']}},
)
KERNEL_LINK_TYPE = {'ETH': 'ether', 'IB': 'infiniband'}


def _tools_argv(simulation):
    """SIMULATION (the container runtime of the test Pods).  Real: CRI-O runs the nvidia-tools image with the
    RDMA device and the secondary interface.  The stand-in starts no container (kwok reports every container
    running), and ``pods/exec`` (kubectl -> kube-apiserver -> kubelet-streams -> exec.py's ExecRuntime) runs
    tests/sandbox/kube/openshift_tools.py on this host, which answers ``ib_write_bw``, ``ibstat``, ``rdma link
    show``, ``cat`` and ``sh -c 'nohup ... &'`` with synthetic output in the real tools' formats (documented
    there)."""
    def argv(pod, container, command):
        del container
        return [sys.executable, str(TOOLS), json.dumps(simulation.exec_context(pod)), *command]
    return argv


class OpenShiftSimulation(SystemWrites):  # pylint: disable=too-many-instance-attributes,too-many-public-methods
    """See the module docstring."""

    def __init__(self, cluster, version='4.17.0', workers=2, delay=0.2, csv_failures=None, csv_stalls=(),
                 bandwidth_gbps=None, machine='chapter'):
        self.cluster = cluster
        self.store = cluster.store
        self.version = version
        self.workers = ['worker-%d' % index for index in range(workers)]
        self.delay = delay
        self.csv_failures = dict(csv_failures or {})
        self.csv_stalls = set(csv_stalls)
        self.machine = MACHINES[machine]
        self.bandwidth_gbps = self.machine['bandwidth_gbps'] if bandwidth_gbps is None else bandwidth_gbps
        self.state_dir = tempfile.mkdtemp(prefix='openshift-tools-')
        self.runtime = ExecRuntime(_tools_argv(self))
        # A pass every ``delay`` seconds (at least TICK_FLOOR: each pass is some twenty reads of the API server).
        self.controllers = ClusterControllers(cluster, tick=max(delay, TICK_FLOOR))
        self._crds = set()    # the CRDs (plural.group) the API server serves, read once per pass
        self._since = {}
        # Held by each reconciler pass and by test levers that write several objects: a pass sees all or none.
        self._lock = threading.Lock()

    # lifecycle ---------------------------------------------------------------------------------
    # The operators' reconcilers run on the core's controller loop (controllers.add), level-triggered: each
    # pass reads what it needs from the API server and writes what differs.  The real kube-controller-manager,
    # kube-scheduler and kwok run beside it (Nodes Ready, Pods scheduled and Running).
    def start(self):
        self.install_platform()
        self.runtime.serve(self.cluster.plane)
        self.controllers.add(self.reconcile)
        self.controllers.start()
        return self

    def stop(self):
        self.controllers.stop()
        self.runtime.stop()

    @property
    def errors(self):
        """Tracebacks of reconciler passes that raised (the loop goes on)."""
        return self.controllers.errors

    def reconcile(self, store=None):
        del store   # the core passes its store: the same as self.store
        with self._lock:
            try:
                self._crds = self._served_crds()
                self.olm()
                self.nfd()
                self.network_operator()
                self.sriov_operator()
                self.gpu_operator()
                self.machine_config_pools()
                self.node_status()
                self.multus()
            except errors.KubeError as error:
                # 429: the API server's "storage is (re)initializing" (a CRD someone just created) or its
                # throttling; the next pass retries, as a real controller requeues.
                if error.code != 429:
                    raise

    # store helpers -------------------------------------------------------------------------------
    def _update(self, obj):
        try:
            return self.store.update(obj)
        except errors.KubeError as error:
            if error.code in (404, 409):
                return None
            raise

    def _served_crds(self):
        return {crd['metadata']['name'] for crd in self.store.list('customresourcedefinitions.apiextensions.k8s.io')
                if any(c['type'] == 'Established' and c['status'] == 'True' for c in (crd.get('status') or {}).get('conditions') or [])}

    def _serves(self, ref):
        """Whether the API server serves the custom resource ``ref`` (as of this pass's read of the CRDs)."""
        return ref in self._crds and super()._serves(ref)

    def _list(self, ref, namespace=None):
        return self.store.list(ref, namespace) if self._serves(ref) else []

    def _waited(self, key):
        """True once ``delay`` seconds passed since ``key`` was first asked about (a step's duration)."""
        now = time.monotonic()
        return now - self._since.setdefault(key, now) >= self.delay

    def _install_openshift_crd(self, relative):
        """The vendored OpenShift CRD ``relative`` to crds/openshift, installed and served (SystemWrites)."""
        self._crds.add(self._install_crd(CRD_DIR / relative, wait=True))

    # platform ------------------------------------------------------------------------------------
    def install_platform(self):
        """SIMULATION (what an installed OpenShift cluster already has).  Real: the cluster-version operator
        installs OLM, the MCO and their CRDs, the marketplace's CatalogSources, ClusterVersion ``version`` and
        the worker/master MachineConfigPools; workers register as Nodes.  The stand-in creates these at start:
        OLM's CRDs (Subscription, OperatorGroup, InstallPlan, ClusterServiceVersion, CatalogSource), the
        PackageManifest resource (see PACKAGE_MANIFESTS_READ_ONLY), MachineConfig/MachineConfigPool, ClusterVersion
        with ``status.desired.version`` = the given version, CatalogSources reporting READY, one PackageManifest
        per package, and ``workers`` worker Nodes (kwok makes them Ready)."""
        for relative in ('operators.coreos.com/%s.yaml' % kind for kind in
                         ('CatalogSource', 'Subscription', 'OperatorGroup', 'InstallPlan', 'ClusterServiceVersion')):
            self._install_openshift_crd(relative)
        for relative in ('machineconfiguration.openshift.io/MachineConfig.yaml',
                         'machineconfiguration.openshift.io/MachineConfigPool.yaml', 'config.openshift.io/ClusterVersion.yaml',
                         'k8s.cni.cncf.io/NetworkAttachmentDefinition.yaml', 'packages.operators.coreos.com/PackageManifest.yaml'):
            self._install_openshift_crd(relative)
        for obj in PACKAGE_MANIFESTS_READ_ONLY:
            self._create(copy.deepcopy(obj))
        self._create({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': MARKETPLACE}})
        for source in ('redhat-operators', 'certified-operators'):
            stored = self._create({'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'CatalogSource',
                                   'metadata': {'name': source, 'namespace': MARKETPLACE},
                                   'spec': {'sourceType': 'grpc', 'image': 'registry.redhat.io/redhat/%s-index:v4.17' % source,
                                            'displayName': source, 'publisher': 'Red Hat'}})
            if stored:
                self._update_status(stored, {'connectionState': {'address': '%s.%s.svc:50051' % (source, MARKETPLACE),
                                                                 'lastObservedState': 'READY', 'lastConnect': now_rfc3339()}})
        for package, entry in PACKAGES.items():
            self._create({'apiVersion': 'packages.operators.coreos.com/v1', 'kind': 'PackageManifest',
                          'metadata': {'name': package, 'namespace': MARKETPLACE,
                                       'labels': {'catalog': entry['source'], 'catalog-namespace': MARKETPLACE}},
                          'spec': {},
                          'status': {'catalogSource': entry['source'], 'catalogSourceNamespace': MARKETPLACE,
                                     'catalogSourceDisplayName': entry['source'], 'catalogSourcePublisher': 'Red Hat',
                                     'packageName': package, 'defaultChannel': entry['default'],
                                     'channels': [{'name': name, 'currentCSV': csv} for name, csv in entry['channels'].items()]}})
        stored = self._create({'apiVersion': 'config.openshift.io/v1', 'kind': 'ClusterVersion', 'metadata': {'name': 'version'},
                               'spec': {'clusterID': '5e4b1c2a-0000-4000-8000-000000000000', 'channel': 'stable-4.17'}})
        if stored:
            self._update_status(stored, {'desired': {'version': self.version, 'image': 'quay.io/openshift-release-dev/ocp-release'},
                                         'history': [{'state': 'Completed', 'version': self.version, 'image': 'quay.io/x',
                                                      'startedTime': now_rfc3339(), 'completionTime': now_rfc3339(),
                                                      'verified': False}],
                                         'observedGeneration': 1, 'versionHash': 'standin', 'availableUpdates': None,
                                         'capabilities': {}})
        for role in ('master', 'worker'):
            self._create({'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'MachineConfigPool',
                          'metadata': {'name': role},
                          'spec': {'configuration': {'name': 'rendered-%s-0' % role}, 'paused': False,
                                   'machineConfigSelector': {'matchLabels': {'machineconfiguration.openshift.io/role': role}},
                                   'nodeSelector': {'matchLabels': {'node-role.kubernetes.io/%s' % role: ''}}}})
        for name in self.workers:
            self._create({'apiVersion': 'v1', 'kind': 'Node',
                          # kwok (--manage-all-nodes) takes every Node: it writes the conditions and keeps the Lease.
                          'metadata': {'name': name, 'labels': {'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux',
                                                                'kubernetes.io/arch': 'amd64', 'node-role.kubernetes.io/worker': ''}},
                          'spec': {'podCIDR': '10.128.%d.0/23' % (2 * self.workers.index(name) + 2)}})

    # OLM -----------------------------------------------------------------------------------------
    def olm(self):
        for sub in self._list('subscriptions.operators.coreos.com'):
            self._subscription(sub)
        for plan in self._list('installplans.operators.coreos.com'):
            self._installplan(plan)
        for csv in self._list('clusterserviceversions.operators.coreos.com'):
            self._csv(csv)

    def _subscription(self, sub):
        """SIMULATION (OLM catalog operator, Subscription).  Real: resolves the package/channel in the named
        CatalogSource, creates an InstallPlan (``spec.approval`` from installPlanApproval, approved at once
        when Automatic) listing the CSV (startingCSV or the channel head), sets ``installPlanRef``,
        ``currentCSV``, state UpgradePending, then ``installedCSV`` and AtLatestKnown once the CSV is
        installed; an unknown package gets condition ResolutionFailed.  The stand-in: the same steps and
        fields, one InstallPlan per Subscription, no upgrades."""
        spec, status = sub.get('spec') or {}, dict(sub.get('status') or {})
        namespace, name = sub['metadata']['namespace'], sub['metadata']['name']
        entry = PACKAGES.get(spec.get('name'))
        if entry is None or entry['source'] != spec.get('source'):
            status.update({'state': '', 'lastUpdated': now_rfc3339(), 'conditions': [{
                'type': 'ResolutionFailed', 'status': 'True', 'reason': 'ConstraintsNotSatisfiable',
                'message': 'constraints not satisfiable: no operators found in package %s in the catalog referenced by '
                           'subscription %s' % (spec.get('name'), name)}]})
            self._update_status(sub, status)
            return
        channel = spec.get('channel') or entry['default']
        csv_name = spec.get('startingCSV') or entry['channels'].get(channel)
        if not status.get('installPlanRef'):
            plan_name = 'install-' + hashlib.sha256(sub['metadata']['uid'].encode()).hexdigest()[:5]
            manual = spec.get('installPlanApproval') == 'Manual'
            plan = self._create({
                'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'InstallPlan',
                'metadata': {'name': plan_name, 'namespace': namespace,
                             'labels': {'operators.coreos.com/%s.%s' % (spec['name'], namespace): ''},
                             'ownerReferences': [{'apiVersion': sub['apiVersion'], 'kind': 'Subscription', 'name': name,
                                                  'uid': sub['metadata']['uid']}]},
                'spec': {'approval': 'Manual' if manual else 'Automatic', 'approved': not manual,
                         'clusterServiceVersionNames': [csv_name], 'generation': 1}})
            plan = plan or self.store.get('installplans.operators.coreos.com', plan_name, namespace)
            self._update_status(plan, {'phase': 'RequiresApproval' if manual else 'Installing',
                                       'catalogSources': [spec['source']], 'bundleLookups': []})
            ref = {'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'InstallPlan', 'name': plan_name,
                   'namespace': namespace, 'uid': plan['metadata']['uid'], 'resourceVersion': plan['metadata']['resourceVersion']}
            status.update({'installPlanRef': ref, 'installplan': {'apiVersion': ref['apiVersion'], 'kind': 'InstallPlan',
                                                                  'name': plan_name, 'uuid': ref['uid']},
                           'currentCSV': csv_name, 'state': 'UpgradePending', 'lastUpdated': now_rfc3339(),
                           'catalogHealth': [], 'installPlanGeneration': 1})
            self._update_status(sub, status)
            return
        csv = self.store.get('clusterserviceversions.operators.coreos.com', csv_name, namespace)
        if csv and (csv.get('status') or {}).get('phase') == 'Succeeded' and status.get('installedCSV') != csv_name:
            status.update({'installedCSV': csv_name, 'state': 'AtLatestKnown', 'lastUpdated': now_rfc3339()})
            self._update_status(sub, status)

    def _installplan(self, plan):
        """SIMULATION (OLM InstallPlan).  Real: Planning -> RequiresApproval (Manual, until ``spec.approved``)
        -> Installing (creates the bundle's CSV, CRDs and RBAC) -> Complete.  The stand-in: the same phases,
        ``delay`` seconds for Installing; it creates the CSV (the bundle's CRDs come when the CSV succeeds)."""
        status = dict(plan.get('status') or {})
        phase = status.get('phase')
        uid = plan['metadata']['uid']
        if phase == 'RequiresApproval' and plan['spec'].get('approved'):
            status['phase'] = 'Installing'
            self._update_status(plan, status)
        elif phase == 'Installing' and self._waited((uid, 'Installing')):
            for csv_name in plan['spec']['clusterServiceVersionNames']:
                self._create_csv(csv_name, plan['metadata']['namespace'])
            status['phase'] = 'Complete'
            self._update_status(plan, status)

    def installed_before(self, objects, csv_name):
        """SIMULATION (an operator installed before the role runs, from an older catalog).  Real: after OLM installed
        CSV ``csv_name`` for a Subscription, the Subscription holds ``installPlanRef``, ``currentCSV`` and
        ``installedCSV`` = that CSV, state AtLatestKnown; its InstallPlan is Complete, the CSV Succeeded and the
        bundle's CRDs exist.  The stand-in writes ``objects`` (the Namespace, OperatorGroup and Subscription, as
        given) and that state at once.  A newer catalog would make real OLM offer an upgrade (an InstallPlan for the
        channel head); the stand-in offers none (no upgrades between CSVs)."""
        with self._lock:
            self._installed_before(objects, csv_name)

    def _installed_before(self, objects, csv_name):
        for obj in objects:
            self._create(obj)
        sub = next(obj for obj in objects if obj['kind'] == 'Subscription')
        namespace, package = sub['metadata']['namespace'], sub['spec']['name']
        sub = self.store.get('subscriptions.operators.coreos.com', sub['metadata']['name'], namespace)
        plan = self._create({'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'InstallPlan',
                             'metadata': {'name': 'install-before', 'namespace': namespace},
                             'spec': {'approval': sub['spec'].get('installPlanApproval', 'Automatic'), 'approved': True,
                                      'clusterServiceVersionNames': [csv_name], 'generation': 1}})
        self._update_status(plan, {'phase': 'Complete', 'catalogSources': [sub['spec']['source']], 'bundleLookups': []})
        self._create_csv(csv_name, namespace, package)
        csv = self.store.get('clusterserviceversions.operators.coreos.com', csv_name, namespace)
        when = now_rfc3339()
        self._update_status(csv, {'phase': 'Succeeded', 'reason': 'InstallSucceeded', 'message': 'install strategy completed with no errors',
                                  'lastUpdateTime': when, 'lastTransitionTime': when})
        for relative in PACKAGES[package]['crds']:
            self._install_openshift_crd(relative)
        self._update_status(sub, {'installPlanRef': {'apiVersion': plan['apiVersion'], 'kind': 'InstallPlan', 'name': plan['metadata']['name'],
                                                     'namespace': namespace, 'uid': plan['metadata']['uid'],
                                                     'resourceVersion': plan['metadata']['resourceVersion']},
                                  'currentCSV': csv_name, 'installedCSV': csv_name, 'state': 'AtLatestKnown',
                                  'lastUpdated': when, 'catalogHealth': [], 'installPlanGeneration': 1})

    def _create_csv(self, csv_name, namespace, package=None):
        package = package or next((name for name, entry in PACKAGES.items() if csv_name in entry['channels'].values()), None)
        entry = PACKAGES.get(package) or {'alm': [], 'crds': []}
        version = csv_name.split('.v', 1)[1] if '.v' in csv_name else csv_name.split('.', 1)[1].split('-')[0]
        self._create({'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'ClusterServiceVersion',
                      'metadata': {'name': csv_name, 'namespace': namespace,
                                   'labels': {'operators.coreos.com/%s.%s' % (package, namespace): ''},
                                   'annotations': {'alm-examples': json.dumps(entry['alm'])}},
                      'spec': {'displayName': package, 'version': version,
                               'installModes': [{'type': 'OwnNamespace', 'supported': True},
                                                {'type': 'SingleNamespace', 'supported': True},
                                                {'type': 'MultiNamespace', 'supported': False},
                                                {'type': 'AllNamespaces', 'supported': False}],
                               'install': {'strategy': 'deployment', 'spec': {'deployments': []}}}})

    def _csv(self, csv):
        """SIMULATION (OLM olm-operator, CSV).  Real: Pending -> InstallReady -> Installing -> Succeeded (reason
        InstallSucceeded) once requirements are met and the operator Deployment is available; Failed with
        reason TooManyOperatorGroups when the namespace holds more than one OperatorGroup, NoOperatorGroup when
        it holds none (messages as OLM writes them), or e.g. InstallComponentFailed.  The stand-in: each phase
        lasts ``delay`` seconds; the OperatorGroup rules as OLM; ``csv_failures``/``csv_stalls`` stand in for
        a Deployment that fails or never becomes available; on Succeeded it registers the bundle's CRDs."""
        status = dict(csv.get('status') or {})
        phase = status.get('phase', '')
        namespace, name = csv['metadata']['namespace'], csv['metadata']['name']
        package = next((p for p, entry in PACKAGES.items() if name in entry['channels'].values()), None)
        if phase in ('Succeeded', 'Failed'):
            return
        groups = self._list('operatorgroups.operators.coreos.com', namespace)
        step = {'': 'Pending', 'Pending': 'InstallReady', 'InstallReady': 'Installing', 'Installing': 'Succeeded'}[phase]
        reason = {'Pending': 'RequirementsUnknown', 'InstallReady': 'AllRequirementsMet', 'Installing': 'InstallWaiting',
                  'Succeeded': 'InstallSucceeded'}[step]
        message = {'Pending': 'requirements not yet checked', 'InstallReady': 'all requirements found, attempting install',
                   'Installing': 'waiting for install components to report healthy', 'Succeeded': 'install strategy completed with no errors'}[step]
        if len(groups) > 1:
            step, reason, message = 'Failed', 'TooManyOperatorGroups', "csv created in namespace with multiple operatorgroups, can't pick one automatically"
        elif not groups:
            step, reason, message = 'Failed', 'NoOperatorGroup', 'csv in namespace with no operatorgroups'
        elif step == 'Succeeded' and package in self.csv_failures:
            step, (reason, message) = 'Failed', self.csv_failures[package]
        elif step == 'Succeeded' and package in self.csv_stalls:
            return
        if phase and not self._waited((csv['metadata']['uid'], phase)) and step != 'Failed':
            return
        when = now_rfc3339()
        status.update({'phase': step, 'reason': reason, 'message': message, 'lastUpdateTime': when, 'lastTransitionTime': when})
        status['conditions'] = list(status.get('conditions') or []) + [{'phase': step, 'reason': reason, 'message': message,
                                                                        'lastUpdateTime': when, 'lastTransitionTime': when}]
        if step == 'Succeeded':
            for relative in PACKAGES[package]['crds']:
                self._install_openshift_crd(relative)
        self._update_status(csv, status)

    # NFD -------------------------------------------------------------------------------------------
    def nfd(self):
        """SIMULATION (NFD operator and nfd-worker).  Real: the NodeFeatureDiscovery CR deploys nfd-master,
        nfd-worker and nfd-gc; workers label each node with its PCI devices (classes in the whitelist, label
        field vendor) as ``feature.node.kubernetes.io/pci-<vendor>.present`` and, for SR-IOV capable
        functions, ``pci-<vendor>.sriov.capable``; the CR gets condition Available.  The stand-in labels
        every worker after ``delay`` seconds: pci-15b3 (the NICs, class 0200/0207) and pci-10de (GPUs, class
        0302) present and sriov.capable for 15b3, when their classes are in the whitelist."""
        instances = self._list('nodefeaturediscoveries.nfd.openshift.io')
        for instance in instances:
            if not self._waited((instance['metadata']['uid'], 'nfd')):
                continue
            config = ((instance.get('spec') or {}).get('workerConfig') or {}).get('configData') or ''
            classes = yaml.safe_load(config) if config else {}
            whitelist = set((((classes or {}).get('sources') or {}).get('pci') or {}).get('deviceClassWhitelist') or ['03', '0200', '0207'])
            labels = {}
            if whitelist & {'02', '0200', '0207'}:
                labels.update({'feature.node.kubernetes.io/pci-15b3.present': 'true',
                               'feature.node.kubernetes.io/pci-15b3.sriov.capable': 'true'})
            if whitelist & {'03', '0302'}:
                labels['feature.node.kubernetes.io/pci-10de.present'] = 'true'
            for name in self.workers:
                self._label(name, labels)
            conditions = [{'type': kind, 'status': value, 'reason': kind, 'message': '',
                           'lastTransitionTime': instance['metadata']['creationTimestamp']}
                          for kind, value in (('Available', 'True'), ('Upgradeable', 'True'), ('Progressing', 'False'),
                                              ('Degraded', 'False'))]
            self._update_status(instance, {'conditions': conditions})

    def _label(self, node_name, labels, remove=()):
        node = self.store.get('nodes', node_name)
        if node is None:
            return
        current = node['metadata'].get('labels') or {}
        wanted = {key: value for key, value in dict(current, **labels).items() if key not in remove}
        if wanted != current:
            node = copy.deepcopy(node)
            node['metadata']['labels'] = wanted
            self._update(node)

    # NVIDIA Network Operator ----------------------------------------------------------------------------
    def _policy(self):
        return self.store.get('nicclusterpolicies.mellanox.com', 'nic-cluster-policy') if self._serves('nicclusterpolicies.mellanox.com') else None

    def network_operator(self):
        """SIMULATION (NVIDIA Network Operator).  Real: reconciles only the NicClusterPolicy named
        nic-cluster-policy (any other gets state ignore); deploys the DOCA driver DaemonSet (label
        ``network.nvidia.com/operator.mofed.wait=false`` once the driver is up) and the device plugins;
        ``status.state`` notReady until every state is ready, with ``appliedStates``; each Macvlan/HostDevice/
        IPoIBNetwork renders a NetworkAttachmentDefinition named like it in ``networkNamespace`` and sets
        ``status.state: ready`` and the rendered NAD.  The stand-in: after ``delay`` seconds the policy is ready
        and its nodes get the mofed label; network objects render their NAD at once (CNI config as NNO's
        templates: cniVersion 0.3.1, type macvlan/host-device/ipoib, the ipam JSON) and are deleted with them."""
        for policy in self._list('nicclusterpolicies.mellanox.com'):
            name = policy['metadata']['name']
            if name != 'nic-cluster-policy':
                self._update_status(policy, {'state': 'ignore', 'reason': 'Creating NicClusterPolicy with name other '
                                             'than nic-cluster-policy is not supported'})
                continue
            states = [('state-OFED', 'ofedDriver'), ('state-RDMA-device-plugin', 'rdmaSharedDevicePlugin'),
                      ('state-SRIOV-device-plugin', 'sriovDevicePlugin'), ('state-ipoib-cni', 'secondaryNetwork')]
            key = (policy['metadata']['uid'], policy['metadata'].get('generation'))
            ready = self._waited(key)
            applied = [{'name': state, 'state': 'ready' if ready else 'notReady'} for state, part in states if policy['spec'].get(part)]
            self._update_status(policy, {'state': 'ready' if ready else 'notReady', 'appliedStates': applied})
        policy = self._policy()
        driver_ready = policy is not None and (policy.get('status') or {}).get('state') == 'ready'
        for name in self.workers:
            node = self.store.get('nodes', name)
            mellanox = node and (node['metadata'].get('labels') or {}).get('feature.node.kubernetes.io/pci-15b3.present') == 'true'
            if driver_ready and mellanox:
                self._label(name, {MOFED_WAIT: 'false'})
            else:
                self._label(name, {}, remove=(MOFED_WAIT,))
        for kind, cni in (('macvlannetworks', 'macvlan'), ('hostdevicenetworks', 'host-device'), ('ipoibnetworks', 'ipoib')):
            for network in self._list('%s.mellanox.com' % kind):
                self._mellanox_network(network, cni)

    def _mellanox_network(self, network, cni):
        spec = network.get('spec') or {}
        namespace = spec.get('networkNamespace') or 'default'
        config = {'cniVersion': '0.3.1', 'name': network['metadata']['name'], 'type': cni}
        if spec.get('master'):
            config['master'] = spec['master']
        if cni == 'macvlan':
            config.update({'mode': spec.get('mode', 'bridge'), 'mtu': spec.get('mtu', 0)})
        config['ipam'] = json.loads(spec.get('ipam') or '{}')
        annotations = {}
        if cni == 'host-device':
            annotations['k8s.v1.cni.cncf.io/resourceName'] = 'nvidia.com/%s' % spec.get('resourceName')
        nad = self._nad(network, namespace, config, annotations)
        field = {'macvlan': 'macvlanNetworkAttachmentDef', 'host-device': 'hostDeviceNetworkAttachmentDef',
                 'ipoib': 'ipoibNetworkAttachmentDef'}[cni]
        if nad is not None:
            self._update_status(network, {'state': 'ready', field: json.dumps(nad['spec'])})

    def _nad(self, owner, namespace, config, annotations):
        name = owner['metadata']['name']
        if self.store.get('namespaces', namespace) is None:
            return None
        existing = self.store.get('network-attachment-definitions.k8s.cni.cncf.io', name, namespace)
        body = {'config': json.dumps(config, separators=(',', ':'))}
        if existing is not None:
            if existing['spec'] != body:
                existing = copy.deepcopy(existing)
                existing['spec'] = body
                self._update(existing)
            return existing
        return self._create({'apiVersion': 'k8s.cni.cncf.io/v1', 'kind': 'NetworkAttachmentDefinition',
                             'metadata': {'name': name, 'namespace': namespace, 'annotations': annotations,
                                          'labels': {'aiinfra.gpudirect/standin-owner': '%s.%s' % (owner['kind'], name)}},
                             'spec': body})

    def _orphan_nads(self, kinds):
        """NNO deletes the NAD when its network object goes; the stand-in removes NADs whose owner object is gone."""
        if not self._serves('network-attachment-definitions.k8s.cni.cncf.io'):
            return
        for nad in self.store.list('network-attachment-definitions.k8s.cni.cncf.io'):
            owner = (nad['metadata'].get('labels') or {}).get('aiinfra.gpudirect/standin-owner', '')
            kind, _dot, name = owner.partition('.')
            if kind not in kinds:
                continue
            ref, namespace = kinds[kind]
            if not self._serves(ref) or self.store.get(ref, name, namespace) is None:
                self.store.delete('network-attachment-definitions.k8s.cni.cncf.io', nad['metadata']['name'], nad['metadata']['namespace'])

    # SR-IOV Network Operator ---------------------------------------------------------------------
    def sriov_operator(self):
        """SIMULATION (SR-IOV Network Operator).  Real: the config daemon runs on nodes matching
        SriovOperatorConfig ``configDaemonNodeSelector``; each such node gets a SriovNetworkNodeState (name =
        node) listing its PFs (``status.interfaces[]`` name, vendor, deviceID, linkType, totalvfs); a
        SriovNetworkNodePolicy makes the daemon create numVfs VFs on the PFs its nicSelector matches (drain,
        maybe reboot): ``syncStatus`` InProgress -> Succeeded (or Failed with ``lastSyncError``), and the
        device plugin reports ``openshift.io/<resourceName>`` = numVfs; SriovNetwork / SriovIBNetwork render a
        NAD (CNI sriov / ib-sriov) in ``networkNamespace``, holding them with the finalizer
        ``netattdef.finalizers.sriovnetwork.openshift.io`` until it has deleted that NAD (k8snetworkplumbingwg/
        sriov-network-operator controllers/generic_network_controller.go, NETATTDEFFINALIZERNAME).  The stand-in:
        the same objects, fields and finalizer; the sync takes ``delay`` seconds; numVfs above totalvfs fails the
        sync as the daemon does; no drain, no reboot."""
        config = None
        if self._serves('sriovoperatorconfigs.sriovnetwork.openshift.io'):
            config = self.store.get('sriovoperatorconfigs.sriovnetwork.openshift.io', 'default', 'openshift-sriov-network-operator')
        if config is not None:
            self._update_status(config, {'injector': 'Running', 'operatorWebhook': 'Running'})
        selector = ((config or {}).get('spec') or {}).get('configDaemonNodeSelector') or {}
        policies = self._list('sriovnetworknodepolicies.sriovnetwork.openshift.io', 'openshift-sriov-network-operator')
        for name in self.workers if config is not None else []:
            node = self.store.get('nodes', name)
            if node is None or not label_selector_matches({'matchLabels': selector}, node['metadata'].get('labels')):
                continue
            self._node_state(node, policies)
        for kind, cni in (('sriovnetworks', 'sriov'), ('sriovibnetworks', 'ib-sriov')):
            for network in self._list('%s.sriovnetwork.openshift.io' % kind):
                spec = network.get('spec') or {}
                namespace = spec.get('networkNamespace') or 'default'
                if network['metadata'].get('deletionTimestamp'):
                    # The operator's finalizer: the NAD goes first, then the finalizer, then the object.
                    self.store.delete('network-attachment-definitions.k8s.cni.cncf.io', network['metadata']['name'], namespace)
                    self._set_finalizer(network, SRIOV_NETWORK_FINALIZER, False)
                    continue
                network = self._set_finalizer(network, SRIOV_NETWORK_FINALIZER, True)
                if network is None:
                    continue
                config_body = {'cniVersion': '0.3.1', 'name': network['metadata']['name'], 'type': cni,
                               'ipam': json.loads(spec.get('ipam') or '{}')}
                if cni == 'sriov':
                    config_body['vlan'] = spec.get('vlan', 0)
                else:
                    config_body['link_state'] = spec.get('linkState', 'auto')
                self._nad(network, namespace, config_body,
                          {'k8s.v1.cni.cncf.io/resourceName': 'openshift.io/%s' % spec.get('resourceName')})
        self._orphan_nads({'MacvlanNetwork': ('macvlannetworks.mellanox.com', None),
                           'HostDeviceNetwork': ('hostdevicenetworks.mellanox.com', None),
                           'IPoIBNetwork': ('ipoibnetworks.mellanox.com', None)})

    def _policy_vfs(self, node, policies):
        """{pf name: (numVfs, resourceName, error)} the policies ask of this node."""
        wanted = {}
        for policy in sorted(policies, key=lambda p: (p['spec'].get('priority', 99), p['metadata']['name']), reverse=True):
            spec = policy['spec']
            if not label_selector_matches({'matchLabels': spec.get('nodeSelector') or {}}, node['metadata'].get('labels')):
                continue
            selector = spec.get('nicSelector') or {}
            pf_names = [name.split('#', 1)[0] for name in selector.get('pfNames') or []]
            for nic in NICS:
                if selector.get('vendor') and selector['vendor'] != nic['vendor']:
                    continue
                if selector.get('deviceID') and selector['deviceID'] != nic['deviceID']:
                    continue
                if pf_names and nic['name'] not in pf_names:
                    continue
                if (spec.get('linkType') or 'eth').upper() != nic['linkType']:
                    continue
                error = None
                if spec['numVfs'] > nic['totalvfs']:
                    error = 'numVfs(%d) in CR %s exceed the maximum allowed value(%d) interface(%s)' % (
                        spec['numVfs'], policy['metadata']['name'], nic['totalvfs'], nic['name'])
                wanted[nic['name']] = (spec['numVfs'], spec['resourceName'], error)
        return wanted

    def _node_state(self, node, policies):
        name = node['metadata']['name']
        ref = 'sriovnetworknodestates.sriovnetwork.openshift.io'
        state = self.store.get(ref, name, 'openshift-sriov-network-operator')
        if state is None:
            state = self._create({'apiVersion': 'sriovnetwork.openshift.io/v1', 'kind': 'SriovNetworkNodeState',
                                  'metadata': {'name': name, 'namespace': 'openshift-sriov-network-operator'}, 'spec': {}})
            if state is None:
                return
        wanted = self._policy_vfs(node, policies)
        key = (name, json.dumps(sorted(wanted.items())))
        errors_found = [error for _vfs, _res, error in wanted.values() if error]
        done = self._waited(key)
        interfaces = []
        for nic in NICS:
            entry = {'name': nic['name'], 'vendor': nic['vendor'], 'deviceID': nic['deviceID'], 'linkType': nic['linkType'],
                     'pciAddress': nic['pciAddress'], 'totalvfs': nic['totalvfs'], 'mtu': 1500, 'driver': 'mlx5_core',
                     'eSwitchMode': 'legacy', 'linkSpeed': '200000 Mb/s'}
            vfs = wanted.get(nic['name'], (0, None, None))[0] if done and not errors_found else 0
            if vfs:
                entry['numVfs'] = vfs
                entry['Vfs'] = [{'name': '%sv%d' % (nic['name'].replace('np0', ''), index), 'vfID': index, 'vendor': nic['vendor'],
                                 'deviceID': '101e', 'driver': 'mlx5_core', 'pciAddress': '%s%d' % (nic['pciAddress'][:-1], index + 2)}
                                for index in range(vfs)]
            interfaces.append(entry)
        status = {'interfaces': interfaces, 'syncStatus': 'Succeeded' if done else 'InProgress'}
        if errors_found:
            status.update({'syncStatus': 'Failed', 'lastSyncError': errors_found[0]})
        self._update_status(state, status)

    # GPU Operator --------------------------------------------------------------------------------------
    def gpu_operator(self):
        """SIMULATION (NVIDIA GPU Operator).  Real: the first ClusterPolicy is reconciled (driver, toolkit,
        device plugin, ... DaemonSets on nodes labelled pci-10de present), ``status.state`` notReady -> ready
        and ``status.namespace``; a second ClusterPolicy gets state ``ignored``; nodes get
        ``nvidia.com/gpu.present=true`` and allocatable ``nvidia.com/gpu``.  The stand-in: ready after
        ``delay`` seconds (the real driver build takes 10-20 minutes), then the label and GPUS_PER_NODE."""
        policies = sorted(self._list('clusterpolicies.nvidia.com'), key=lambda p: p['metadata']['creationTimestamp'])
        for index, policy in enumerate(policies):
            if index:
                self._update_status(policy, {'state': 'ignored', 'namespace': 'nvidia-gpu-operator'})
                continue
            ready = self._waited((policy['metadata']['uid'], policy['metadata'].get('generation')))
            self._update_status(policy, {'state': 'ready' if ready else 'notReady', 'namespace': 'nvidia-gpu-operator'})

    def _gpus_ready(self):
        policies = self._list('clusterpolicies.nvidia.com')
        return any((policy.get('status') or {}).get('state') == 'ready' for policy in policies)

    # MachineConfigPools -----------------------------------------------------------------------------
    def machine_config_pools(self):
        """SIMULATION (Machine Config Operator).  Real: MachineConfigs labelled for a role are merged into a
        rendered config; the pool's ``spec.configuration`` points to it, nodes drain and reboot one at a time
        (maxUnavailable 1), conditions Updating True / Updated False until every machine runs it, with
        machineCount, updatedMachineCount, readyMachineCount, degradedMachineCount.  The stand-in: the
        rendered name is a hash of the role's MachineConfigs; the pool updates for ``delay`` seconds per
        machine; nodes stay Ready."""
        if not self._serves('machineconfigpools.machineconfiguration.openshift.io'):
            return
        configs = self.store.list('machineconfigs.machineconfiguration.openshift.io')
        for pool in self.store.list('machineconfigpools.machineconfiguration.openshift.io'):
            role = pool['metadata']['name']
            mine = sorted((c['metadata']['name'], json.dumps(c.get('spec'), sort_keys=True)) for c in configs
                          if (c['metadata'].get('labels') or {}).get('machineconfiguration.openshift.io/role') == role)
            rendered = 'rendered-%s-%s' % (role, hashlib.sha256(json.dumps(mine).encode()).hexdigest()[:12]) if mine else 'rendered-%s-0' % role
            if pool['spec']['configuration'].get('name') != rendered:
                pool = copy.deepcopy(pool)
                pool['spec']['configuration'] = {'name': rendered, 'source': [{'kind': 'MachineConfig', 'name': name} for name, _config in mine]}
                pool = self._update(pool)
                if pool is None:
                    return
            machines = len(self.workers) if role == 'worker' else 0
            started = self._since.setdefault((role, rendered), time.monotonic())
            updated = min(machines, int((time.monotonic() - started) / self.delay)) if self.delay else machines
            done = updated >= machines
            when = now_rfc3339()
            previous = {c['type']: c for c in (pool.get('status') or {}).get('conditions') or []}

            def condition(kind, value, message=''):
                old = previous.get(kind)
                return {'type': kind, 'status': value, 'reason': '', 'message': message,
                        'lastTransitionTime': old['lastTransitionTime'] if old and old['status'] == value else when}
            status = {'observedGeneration': pool['metadata'].get('generation', 1) if done else (pool.get('status') or {}).get('observedGeneration', 0),
                      'configuration': {'name': rendered if done else (pool.get('status') or {}).get('configuration', {}).get('name', 'rendered-%s-0' % role)},
                      'machineCount': machines, 'updatedMachineCount': updated, 'readyMachineCount': updated,
                      'unavailableMachineCount': 0 if done else 1, 'degradedMachineCount': 0,
                      'conditions': [condition('Updated', 'True' if done else 'False',
                                               'All nodes are updated with %s' % rendered if done else ''),
                                     condition('Updating', 'False' if done else 'True'),
                                     condition('Degraded', 'False')]}
            self._update_status(pool, status)

    # Nodes ------------------------------------------------------------------------------------------
    def node_status(self):
        """SIMULATION (kubelet and device plugins).  Real: the kubelet reports capacity/allocatable including
        each device plugin's resources: rdma/<resourceName> (rdmaHcaMax per matching device) from the RDMA
        shared device plugin, nvidia.com/hostdev (one per matching PF) or openshift.io/<resourceName> (one per
        VF) from the SR-IOV device plugin, nvidia.com/gpu from the GPU device plugin.  The stand-in computes
        those numbers from the CRs' selectors against NICS and writes them (kwok writes the conditions)."""
        policy = self._policy()
        nic_ready = policy is not None and (policy.get('status') or {}).get('state') == 'ready'
        for name in self.workers:
            node = self.store.get('nodes', name)
            if node is None:
                continue
            labels = node['metadata'].get('labels') or {}
            extended = {}
            if labels.get('feature.node.kubernetes.io/pci-10de.present') == 'true' and self._gpus_ready():
                extended['nvidia.com/gpu'] = str(self.machine['gpus'])
                if labels.get('nvidia.com/gpu.present') != 'true':
                    self._label(name, {'nvidia.com/gpu.present': 'true'})
                    node = self.store.get('nodes', name)
            if nic_ready and labels.get('feature.node.kubernetes.io/pci-15b3.present') == 'true':
                extended.update(self._device_plugin_resources(policy['spec']))
            state = self.store.get('sriovnetworknodestates.sriovnetwork.openshift.io', name, 'openshift-sriov-network-operator') \
                if self._serves('sriovnetworknodestates.sriovnetwork.openshift.io') else None
            if state is not None and (state.get('status') or {}).get('syncStatus') == 'Succeeded':
                for pf, (vfs, resource, _error) in self._policy_vfs(node, self._list(
                        'sriovnetworknodepolicies.sriovnetwork.openshift.io', 'openshift-sriov-network-operator')).items():
                    del pf
                    key = 'openshift.io/%s' % resource
                    extended[key] = str(int(extended.get(key, '0')) + vfs)
            capacity = dict({'cpu': '64', 'memory': '527952636Ki', 'pods': '250', 'ephemeral-storage': '937140548Ki',
                             'hugepages-1Gi': '0', 'hugepages-2Mi': '0'}, **extended)
            allocatable = dict(capacity, cpu='63500m', memory='526801660Ki')
            # kwok writes the conditions, heartbeats and the kubelet endpoint (kubelet-streams, on 127.0.0.1, the
            # address the API server reaches it at); the stand-in only what a kubelet reports of its machine.
            status = {'capacity': capacity, 'allocatable': allocatable,
                      'addresses': [{'type': 'InternalIP', 'address': '127.0.0.1'}, {'type': 'Hostname', 'address': name}],
                      'nodeInfo': {'architecture': 'amd64', 'bootID': name, 'containerRuntimeVersion': 'cri-o://1.30.6',
                                   'kernelVersion': '5.14.0-427.44.1.el9_4.x86_64', 'kubeProxyVersion': 'v' + self.cluster.version,
                                   'kubeletVersion': 'v' + self.cluster.version, 'machineID': name, 'operatingSystem': 'linux',
                                   'osImage': 'Red Hat Enterprise Linux CoreOS 417.94', 'systemUUID': name}}
            current = node.get('status') or {}
            if any(current.get(key) != value for key, value in status.items()):
                # A merge patch keeps keys it does not name: a device plugin's resource that went is named null.
                for key in ('capacity', 'allocatable'):
                    status[key].update({gone: None for gone in current.get(key) or {} if gone not in status[key]})
                self._write_unless_stale(lambda obj, status=status: self.store.patch_status(obj, status), node)

    @staticmethod
    def _device_plugin_resources(spec):
        resources = {}
        shared = spec.get('rdmaSharedDevicePlugin')
        if shared and shared.get('config'):
            for entry in json.loads(shared['config']).get('configList') or []:
                selectors = entry.get('selectors') or {}
                if any(_nic_matches(nic, selectors) for nic in NICS):
                    resources['rdma/%s' % entry['resourceName']] = str(entry.get('rdmaHcaMax', 0))
        hostdev = spec.get('sriovDevicePlugin')
        if hostdev and hostdev.get('config'):
            for entry in json.loads(hostdev['config']).get('resourceList') or []:
                count = sum(1 for nic in NICS if _nic_matches(nic, entry.get('selectors') or {}))
                if count:
                    resources['%s/%s' % (entry.get('resourcePrefix', 'nvidia.com'), entry['resourceName'])] = str(count)
        return resources

    # Multus --------------------------------------------------------------------------------------------
    def multus(self):
        """SIMULATION (Multus with whereabouts).  Real: a Pod annotated ``k8s.v1.cni.cncf.io/networks: NAME``
        gets, from the NAD's CNI, interface net1 with an address whereabouts allocates from the range (skipping
        excludes), reported in the annotation ``k8s.v1.cni.cncf.io/network-status``; a missing NAD keeps the
        Pod in ContainerCreating.  The stand-in writes that annotation on bound Pods whose NAD exists (addresses
        in order of Pod name within the network); a missing NAD leaves the Pod without it."""
        allocated = {}
        for pod in sorted(self.store.list('pods'), key=lambda p: (p['metadata']['namespace'], p['metadata']['name'])):
            annotations = pod['metadata'].get('annotations') or {}
            networks = annotations.get('k8s.v1.cni.cncf.io/networks')
            if not networks or not pod['spec'].get('nodeName') or pod['metadata'].get('deletionTimestamp'):
                continue
            status = [{'name': 'ovn-kubernetes', 'interface': 'eth0', 'ips': [(pod.get('status') or {}).get('podIP', '')],
                       'default': True, 'dns': {}}]
            complete = True
            for index, network in enumerate(n.strip() for n in networks.split(',') if n.strip()):
                namespace, _slash, name = network.rpartition('/')
                namespace = namespace or pod['metadata']['namespace']
                nad = self.store.get('network-attachment-definitions.k8s.cni.cncf.io', name, namespace) \
                    if self._serves('network-attachment-definitions.k8s.cni.cncf.io') else None
                if nad is None:
                    complete = False
                    break
                ipam = json.loads(nad['spec']['config']).get('ipam') or {}
                address = _allocate(ipam, allocated.setdefault((namespace, name), []))
                status.append({'name': '%s/%s' % (namespace, name), 'interface': 'net%d' % (index + 1),
                               'ips': [address], 'mac': '02:00:00:00:%02x:%02x' % (index, len(allocated[(namespace, name)])),
                               'dns': {}})
            text = json.dumps(status)
            if complete and annotations.get('k8s.v1.cni.cncf.io/network-status') != text:
                pod = copy.deepcopy(pod)
                pod['metadata']['annotations']['k8s.v1.cni.cncf.io/network-status'] = text
                self._update(pod)

    def exec_context(self, pod):
        """What openshift_tools.py needs to answer for this Pod: its net1 address, the link, the device."""
        status = json.loads((pod['metadata'].get('annotations') or {}).get('k8s.v1.cni.cncf.io/network-status') or '[]')
        net1 = next((entry for entry in status if entry.get('interface') == 'net1'), None)
        link = 'IB' if any(s in json.dumps(pod['spec']) for s in ('rdma_shared_device_ib', 'sriovlegacyib', 'hostdev-ib')) \
            or (net1 and ('ipoib' in net1['name'] or 'sriov-ib' in net1['name'] or 'hostdev-ib' in net1['name'])) else 'ETH'
        peers = {}
        for other in self.store.list('pods'):
            other_status = json.loads((other['metadata'].get('annotations') or {}).get('k8s.v1.cni.cncf.io/network-status') or '[]')
            for entry in other_status:
                if entry.get('interface') == 'net1':
                    peers[entry['ips'][0]] = other['metadata']['uid']
        nic = NICS[1] if link == 'IB' else NICS[0]
        devices = list(self.machine['hcas'] or (nic['rdma'],)) if net1 else []
        faults = {}
        for node in self.store.list('nodes'):
            annotations = node['metadata'].get('annotations') or {}
            faults[node['metadata']['name']] = {
                'slow_node': annotations.get(FAULT_SLOW_NODE) == 'true',
                'slow_hcas': [h.strip() for h in (annotations.get(FAULT_SLOW_HCAS) or '').split(',') if h.strip()]}
        return {'uid': pod['metadata']['uid'], 'state_dir': self.state_dir, 'net1': net1['ips'][0] if net1 else None,
                'link': link, 'device': devices[0] if devices else None, 'devices': devices, 'peers': peers,
                'node': pod['spec'].get('nodeName'), 'faults': faults, 'slow_gbps': SLOW_GBPS,
                'bandwidth_gbps': self.bandwidth_gbps, 'rate_gbps': self.machine['rate_gbps']}


def _nic_matches(nic, selectors):
    if selectors.get('ifNames') and nic['name'] not in selectors['ifNames']:
        return False
    if selectors.get('vendors') and nic['vendor'] not in selectors['vendors']:
        return False
    if selectors.get('deviceIDs') and nic['deviceID'] not in selectors['deviceIDs']:
        return False
    if selectors.get('pfNames') and nic['name'] not in [name.split('#', 1)[0] for name in selectors['pfNames']]:
        return False
    # [DP]: linkTypes compare with the kernel's link type string exactly.
    if selectors.get('linkTypes') and KERNEL_LINK_TYPE[nic['linkType']] not in selectors['linkTypes']:
        return False
    return True


def _allocate(ipam, taken):
    network = ipaddress.ip_network(ipam.get('range', '192.168.0.0/24'), strict=False)
    excluded = [ipaddress.ip_network(item, strict=False) for item in ipam.get('exclude') or []]
    for host in network.hosts():
        if str(host) in taken or any(host in item for item in excluded) or str(host) == ipam.get('gateway'):
            continue
        taken.append(str(host))
        return '%s/%d' % (host, network.prefixlen)
    return None


def start_openshift(hub, name='openshift', version='4.17.0', kube_version='1.30.6', **options):
    """A started stand-in OpenShift: (KubeCluster, OpenShiftSimulation)."""
    cluster = hub.start_cluster(name, version=kube_version, openshift=True)
    return cluster, OpenShiftSimulation(cluster, version=version, **options).start()


__all__ = ['OpenShiftSimulation', 'start_openshift', 'PACKAGES', 'NICS', 'SRIOV_NETWORK_FINALIZER', 'MACHINES', 'SLOW_GBPS',
           'FAULT_SLOW_NODE', 'FAULT_SLOW_HCAS']
