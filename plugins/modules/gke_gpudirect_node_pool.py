#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gke_gpudirect_node_pool
short_description: The GPU node pool of a GKE GPUDirect cluster (A3 Mega, A3 High, A3 Ultra, A4)
version_added: 0.1.0
description:
  - Creates, checks, recreates or deletes the GPU node pool of the GKE manuals; A3 Mega (GPUDirect-TCPXO) and A3 High
    (GPUDirect-TCPX) pools with gVNIC and one additional node network per secondary NIC in NIC order (Google's GKE GPUDirect-TCPX/TCPXO guide), and
    A3 Ultra / A4 pools with GPUDirect RDMA (C(gpuDirectConfig.gpuDirectStrategy=RDMA)), either with
    C(acceleratorNetworkProfile=auto) and the DRANET node label or with the GKE GPUDirect RDMA guide's manual multi-network layout (one gVNIC
    network and 8 RDMA subnets).
  - The machine type decides the accelerator type and count; the GPU driver is installed by GKE (C(LATEST) by default);
    the node image is Container-Optimized OS; node auto-upgrade is off, as in the manuals.
  - Every input is checked before any request that changes anything; the machine type against the technology, the
    cluster's version against the technology's floor, Dataplane V2 and multi-networking on the cluster, the number of
    additional networks, DRANET together with additional networks, reservation inputs, Autopilot clusters.
  - An existing pool is compared field by field. The node count, autoscaling, auto-upgrade/repair, labels and node
    locations are changed in place (setSize, setAutoscaling, setManagement, update with the pool's etag). Any other
    difference is immutable; it fails naming each field, unless O(recreate=true), which deletes the pool and creates it
    again.
  - Capacity and quota errors of the create are reported by name (C(ZONE_RESOURCE_POOL_EXHAUSTED), C(QUOTA_EXCEEDED))
    with what to try instead.
  - Returns the pool and the names of its Nodes, read from the cluster's Kubernetes API (Nodes labelled
    C(cloud.google.com/gke-nodepool=NAME)) with the module's credentials.
author:
  - aiinfra.gpudirect contributors (@aiinfra)
extends_documentation_fragment:
  - aiinfra.gpudirect.gcp
attributes:
  check_mode:
    support: full
    description: Plans and reports the create, the in-place changes or the recreate without calling any mutating method.
  diff_mode:
    support: full
    description: Shows the managed fields of the pool before and after.
options:
  cluster:
    description:
      - Name of the cluster (made by M(aiinfra.gpudirect.gke_gpudirect_cluster) or adopted by it).
    type: str
    required: true
  location:
    description:
      - The cluster's location (zone or region).
    type: str
    required: true
  name:
    description:
      - Name of the node pool.
    type: str
    required: true
  machine_type:
    description:
      - GPU machine type of the nodes; it decides the technology, the accelerator and the number of additional networks.
    type: str
    required: true
    choices: [a3-megagpu-8g, a3-highgpu-8g, a3-ultragpu-8g, a4-highgpu-8g]
  state:
    description:
      - V(present) or V(absent).
    type: str
    choices: [present, absent]
    default: present
  node_count:
    description:
      - Nodes per node location (the initial count with O(autoscaling)), 1 to 1000 (GKE's limit per node pool zone); 0 only
        with O(autoscaling).
      - Unset, a new pool gets 2 nodes per location and an existing pool keeps its size (someone may have resized it).
    type: int
  delete_adopted:
    description:
      - With O(state=absent), delete the pool also when the collection did not create it. The collection marks the pools
        it creates with the resource label C(aiinfra-gpudirect=managed) on their nodes; without this option a pool
        without the mark is left alone with a warning.
    type: bool
    default: false
  autoscaling:
    description:
      - Autoscaling limits per node location; no autoscaling when unset.
    type: dict
    suboptions:
      min_node_count:
        description: Minimum nodes.
        type: int
        default: 0
      max_node_count:
        description: Maximum nodes.
        type: int
        required: true
  node_locations:
    description:
      - Zones of the nodes; the cluster's zones when unset.
    type: list
    elements: str
  accelerator_type:
    description:
      - GKE accelerator type; only the machine type's own (for example C(nvidia-h100-mega-80gb)) is accepted. Derived from
        O(machine_type) when unset.
    type: str
  gpu_driver_version:
    description:
      - The GPU driver GKE installs (C(gpu-driver-version)); V(INSTALLATION_DISABLED) is refused (GPUDirect needs driver 535+).
      - V(latest) and V(default) are the GKE GPUDirect RDMA guide's spelling of V(LATEST) and V(DEFAULT).
    type: str
    choices: [LATEST, DEFAULT, INSTALLATION_DISABLED, latest, default]
    default: LATEST
  networking:
    description:
      - V(multi_network) attaches the additional node networks (TCPX, TCPXO, and the GKE GPUDirect RDMA guide's manual RDMA variant).
      - V(dranet) (RDMA only) uses C(acceleratorNetworkProfile=auto) and the DRANET node label; Google's GKE GPUDirect RDMA guide says the
        multi-network API and DRANET cannot share a node pool.
      - V(dranet) for A3 Ultra / A4, V(multi_network) otherwise, when unset.
    type: str
    choices: [dranet, multi_network]
  network_prefix:
    description:
      - Prefix of the per-NIC networks made by M(aiinfra.gpudirect.gce_gpudirect_network) with O(aiinfra.gpudirect.gce_gpudirect_network#module:layout=gke) or
        O(aiinfra.gpudirect.gce_gpudirect_network#module:layout=gke_rdma); the additional networks are then C(PREFIX-net-N)/C(PREFIX-sub-N)
        (Google's GKE GPUDirect-TCPX/TCPXO guide) or C(PREFIX-gvnic-net)/C(PREFIX-gvnic-sub) and
        C(PREFIX-rdma-net)/C(PREFIX-rdma-sub-0..7) (Google's GKE GPUDirect RDMA guide).
    type: str
  gvnic_network_prefix:
    description:
      - A3 Ultra / A4 with O(networking=multi_network). The gVNIC VPC's prefix, C(GVNIC_NETWORK_PREFIX) of Google's GKE GPUDirect
        RDMA guide "Advanced configuration" (network C(PREFIX-net), subnet C(PREFIX-sub)); give it to reuse a VPC named otherwise.
      - Unset, C(NETWORK_PREFIX-gvnic).
    type: str
  rdma_network_prefix:
    description:
      - A3 Ultra / A4 with O(networking=multi_network). The RoCE VPC's prefix, C(RDMA_NETWORK_PREFIX) of the same guide (network
        C(PREFIX-net), subnets C(PREFIX-sub-0) to C(PREFIX-sub-7)); give it to reuse a VPC named otherwise.
      - Unset, C(NETWORK_PREFIX-rdma).
    type: str
  additional_networks:
    description:
      - The additional node networks in NIC order (eth1, eth2, ...) instead of O(network_prefix).
    type: list
    elements: dict
    suboptions:
      network:
        description: VPC network name.
        type: str
        required: true
      subnetwork:
        description: Subnetwork name.
        type: str
        required: true
  compact_placement:
    description:
      - Compact placement (GKE makes the placement policy).
    type: bool
    default: false
  host_maintenance_interval:
    description:
      - How often the nodes' hosts get planned maintenance (C(NodeConfig.hostMaintenancePolicy.maintenanceInterval)); the GKE GPUDirect-TCPX/TCPXO
        guide's optional C(gcloud beta container node-pools create --host-maintenance-interval=PERIODIC).
      - A field of the Container API v1beta1 only, so with it set the pool is created, read and changed through v1beta1.
        It cannot change on an existing pool (a difference is immutable, see O(recreate)); unset, it is not compared.
    type: str
    choices: [AS_NEEDED, PERIODIC]
  placement_policy:
    description:
      - Name of your own compact placement resource policy (the GKE GPUDirect-TCPX/TCPXO guide's C(--placement-policy)).
    type: str
  reservation_affinity:
    description:
      - V(specific) with O(reservation), V(any) or V(none). V(specific) when O(reservation) is given, else V(any).
    type: str
    choices: [any, none, specific]
  reservation:
    description:
      - Reservation name to consume.
    type: str
  reservation_project:
    description:
      - Project of the reservation (Google's GKE GPUDirect RDMA guide C(RESERVATION_PROJECT)); needed with O(reservation_block).
    type: str
  reservation_block:
    description:
      - A block of the reservation (Google's GKE GPUDirect RDMA guide C(reservationBlocks/BLOCK)).
    type: str
  provisioning:
    description:
      - V(standard), V(spot) or V(flex_start) nodes. Spot and flex-start do not consume reservations.
    type: str
    choices: [standard, spot, flex_start]
    default: standard
  labels:
    description:
      - Kubernetes labels of the nodes (the DRANET label is added for O(networking=dranet)).
    type: dict
  autoupgrade:
    description:
      - Node auto-upgrade; the manuals turn it off.
    type: bool
    default: false
  recreate:
    description:
      - When the existing pool differs in a field the API cannot change, delete it and create it as planned.
    type: bool
    default: false
  read_nodes:
    description:
      - Read the names of the pool's Nodes from the cluster's Kubernetes API (needs credentials the cluster accepts).
    type: bool
    default: true
  nodes_timeout:
    description:
      - Seconds to wait for all of the pool's Nodes to register.
    type: int
    default: 600
  timeout:
    description:
      - Seconds to wait for each Container operation.
      - C(wait_timeout) is its old name, deprecated (removed in 1.0.0).
    type: int
    default: 3600
    aliases: [wait_timeout]
  wait:
    description:
      - V(false) returns as soon as GKE has accepted the create of the pool (also the create of a recreate), without
        waiting for its operation or its Nodes, so that a play can do other work meanwhile (C(playbooks/gke_cluster.yml)
        applies the Kubernetes objects); a later task with V(true) waits for the pool. In-place changes and the delete of
        a recreate are awaited either way (GKE runs one operation at a time on a cluster).
      - With V(true), a pool found C(PROVISIONING), C(RECONCILING) or C(STOPPING) (an operation of an earlier task or run
        still at work) is awaited, through its running operation, before it is compared; that operation's error, if it
        fails, is this task's.
    type: bool
    default: true
notes:
  - The modules of this collection that talk to Google Cloud run on the controller.
seealso:
  - module: aiinfra.gpudirect.gke_gpudirect_cluster
  - module: aiinfra.gpudirect.gce_gpudirect_network
"""

EXAMPLES = r"""
- name: The GKE GPUDirect-TCPX/TCPXO guide's A3 Mega pool on the 8 networks of gce_gpudirect_network (layout gke, prefix mega)
  aiinfra.gpudirect.gke_gpudirect_node_pool:
    cluster: a3mega
    location: us-central1-a
    name: a3mega-pool
    machine_type: a3-megagpu-8g
    network_prefix: mega
    node_count: 2
    reservation: my-reservation
  register: gke_node_pool

- name: The GKE GPUDirect RDMA guide's A3 Ultra pool with the automated RDMA installer and DRANET, in a reservation block
  aiinfra.gpudirect.gke_gpudirect_node_pool:
    cluster: ultra
    location: us-central1
    node_locations: [us-central1-b]
    name: rdma-pool
    machine_type: a3-ultragpu-8g
    reservation_project: my-project
    reservation: my-reservation
    reservation_block: block-1

- name: Start the pool's creation and do other work while GKE creates it
  aiinfra.gpudirect.gke_gpudirect_node_pool:
    cluster: a3mega
    location: us-central1-a
    name: a3mega-pool
    machine_type: a3-megagpu-8g
    network_prefix: mega
    wait: false

- name: Wait for the pool and its Nodes
  aiinfra.gpudirect.gke_gpudirect_node_pool:
    cluster: a3mega
    location: us-central1-a
    name: a3mega-pool
    machine_type: a3-megagpu-8g
    network_prefix: mega
  register: gke_node_pool
"""

RETURN = r"""
node_pool:
  description: The node pool as the Container API returns it after the run (before, in check mode).
  returned: when the pool exists
  type: dict
nodes:
  description: Names of the pool's Nodes (empty with O(read_nodes=false), with O(wait=false) or in check mode).
  returned: with O(state=present)
  type: list
  elements: str
additional_networks:
  description: The additional node networks in NIC order (eth1 first).
  returned: with O(state=present)
  type: list
  elements: dict
plan:
  description: The planned pool settings.
  returned: with O(state=present)
  type: dict
actions:
  description: What was done (or would be done in check mode).
  returned: always
  type: list
  elements: str
left_alone:
  description: What O(state=absent) did not delete because the collection did not create it, and why.
  returned: when a pool without the collection's mark was left
  type: list
  elements: str
immutable:
  description: The fields that differ and cannot change in place, as C(FIELD (now X, planned Y)).
  returned: when an existing pool differs in them
  type: list
  elements: str
progress:
  description: Progress lines of the Container operations awaited, in the order they happened.
  returned: always
  type: list
  elements: str
  sample: ["operation-2 CREATE_NODE_POOL RUNNING", "operation-2 CREATE_NODE_POOL DONE"]
operations:
  description: The same list as RV(progress), under its old name (deprecated, removed in 1.0.0).
  returned: always
  type: list
  elements: str
"""

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute as compute_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.container import cluster_path, node_pool_path, node_pool_target, node_pools_path
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.executor import Executor
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.module import GpuDirectModule
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import cluster as gke_cluster
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import common
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import node_pool as gke_node_pool

ARGUMENT_SPEC = gke_node_pool.ARGUMENT_SPEC


# A pool with an operation at work on it (NodePool.Status).
SETTLING = ('PROVISIONING', 'RECONCILING', 'STOPPING')


class PoolRunner:
    """The calls of one run against one pool, each awaited, one at a time (GKE's rule per cluster)."""

    def __init__(self, container, params, progress):
        self.container = container
        self.params = params
        self.progress = progress
        self.location, self.cluster, self.name = params['location'], params['cluster'], params['name']
        self.path = node_pool_path(self.location, self.cluster, self.name)
        self.target = node_pool_target(self.cluster, self.name)

    @staticmethod
    def capacity_named(action, call):
        """call(), its capacity or quota error raised as an InputError that names it and what to try instead."""
        try:
            return call()
        except GcpError as exc:
            message = common.capacity_message(exc, action)
            if message:
                raise InputError(message) from None
            raise

    def run(self, method, path, action, body=None, target=None, wait=True):
        return self.capacity_named(action, lambda: self.container.run(method, path, action, body=body, timeout=self.params['timeout'],
                                                                      progress=self.progress, target=target, wait=wait))

    def create(self, body, wait=True):
        self.run('POST', node_pools_path(self.location, self.cluster), 'create node pool %s' % self.name,
                 body={'nodePool': body}, target=self.target, wait=wait)

    def settle(self, current):
        """The pool once the operation at work on it (PROVISIONING, RECONCILING, STOPPING) is done: None once deleted."""
        if current is None or current.get('status') not in SETTLING:
            return current
        action = 'await the operation at work on node pool %s (%s)' % (self.name, current['status'])
        operation = self.container.newest_operation(self.location, self.target, action, running=True)
        if operation is not None:
            self.progress(operation)
            self.capacity_named(action, lambda: self.container.wait(operation, action, timeout=self.params['timeout'],
                                                                    progress=self.progress))
        return self.read()

    def delete(self):
        self.run('DELETE', self.path, 'delete node pool %s' % self.name)

    def apply(self, method, body, current):
        if method == 'update':
            body = dict(body, etag=current.get('etag'))   # nodePools.update refuses a stale pool (ABORTED)
            self.run('PUT', self.path, 'update node pool %s (%s)' % (self.name, ', '.join(sorted(body))), body=body)
        else:
            self.run('POST', '%s:%s' % (self.path, method), '%s of node pool %s' % (method, self.name), body=body)
        return self.read()

    def read(self):
        return self.container.get(self.path, action='read node pool %s' % self.name)


def remove(executor, runner, params, current):
    """Delete the pool if the collection made it (or delete_adopted); the diff's after."""
    if current is not None and not gke_node_pool.is_managed(current) and not params['delete_adopted']:
        key, value = compute_catalog.MANAGED_LABEL
        executor.module.warn('node pool %s was not created by aiinfra.gpudirect (no resource label %s=%s): left alone; set '
                             'delete_adopted: true to delete it' % (params['name'], key, value))
        executor.result['left_alone'] = ['node pool %s (not created by aiinfra.gpudirect)' % params['name']]
        return gke_node_pool.view(current)
    if current is None:
        return None
    executor.do('delete node pool %s' % params['name'], runner.delete)
    return None


def converge(module, executor, runner, params, current):
    """Create, update or recreate the pool as planned, then read it (and its Nodes); the diff's after."""
    name, cluster_at = params['name'], cluster_path(params['location'], params['cluster'])
    current_cluster = module.container.get(cluster_at, action='read cluster %s' % params['cluster'])
    cluster_planned = current_cluster is None and executor.assume(
        'cluster %s does not exist yet (check mode of a first run?): the pool is planned as for the cluster gke_gpudirect_cluster '
        'would create; its checks against the cluster run when it exists' % params['cluster'])
    plan = gke_node_pool.plan_from_params(params, current_cluster, cluster_planned=cluster_planned)
    executor.result.update(plan=plan.summary(), additional_networks=plan.summary()['additional_networks'])
    after = gke_node_pool.planned_view(plan, current)
    if current is None:
        executor.do('create node pool %s (%s x %d)' % (name, plan.family.machine_type, plan.body['initialNodeCount']),
                    lambda: runner.create(plan.body, wait=params['wait']))
    else:
        calls, immutable = gke_node_pool.changes(plan, current, current_size=gke_node_pool.current_size(module.compute, current))
        if immutable:
            executor.result['immutable'] = ['%s (now %s, planned %s)' % item for item in immutable]
            if not params['recreate']:
                raise InputError('node pool %s differs in fields the API cannot change: %s; immutable: recreate the node pool '
                                 '(recreate: true deletes it and creates it as planned)' % (name, gke_node_pool.describe_immutable(immutable)))
            executor.do(['delete node pool %s (immutable: %s)' % (name, ', '.join(f for f, _h, _w in immutable)), 'create node pool %s' % name],
                        lambda: (runner.delete(), runner.create(plan.body, wait=params['wait'])))
        for method, body in calls if not immutable else ():
            current = executor.do('%s node pool %s: %s' % (method, name, body),
                                  lambda method=method, body=body, current=current: runner.apply(method, body, current), planned=current)
    executor.result['nodes'] = []
    current = executor.live(runner.read, current)   # with wait: false, as GKE accepted it (PROVISIONING after a create)
    if params['wait']:
        after = executor.live(lambda: settled_view(module, executor, params, cluster_at, current), after)
    if current is not None:
        executor.result['node_pool'] = current
    return after


def settled_view(module, executor, params, cluster_at, current):
    """The view of the pool its operations left, failing on ERROR; with read_nodes, its Nodes in the result."""
    if current.get('status') in ('ERROR', 'RUNNING_WITH_ERROR'):
        what = 'node pool %s is %s' % (params['name'], current['status'])
        message = current.get('statusMessage') or 'no status message'
        head = common.capacity_message(GcpError(what, message), what) or '%s: %s' % (what, message)
        executor.fail('%s. GKE keeps the pool and goes on trying: rerun later to pick it up, or delete it '
                      '(state: absent) to create it elsewhere' % head, node_pool=current)
    if params['read_nodes']:
        cluster = module.container.get(cluster_at, action='read cluster %s' % params['cluster'])
        expected = None
        if not current.get('autoscaling', {}).get('enabled'):
            size = gke_node_pool.current_size(module.compute, current)
            size = int(current.get('initialNodeCount') or 0) if size is None else size
            expected = size * len(current.get('locations') or [1])
        executor.result['nodes'] = common.read_node_names(module.container.transport, cluster['endpoint'],
                                                          (cluster.get('masterAuth') or {}).get('clusterCaCertificate'),
                                                          params['name'], expected=expected, timeout=params['nodes_timeout'])
    return gke_node_pool.view(current)


def main():
    module = GpuDirectModule(ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    executor = Executor(module, progress_keys=('progress', 'operations'))
    # host_maintenance_interval is a v1beta1 field (v1 neither takes nor shows it): the pool's calls go through v1beta1 then.
    runner = PoolRunner(module.container_beta if params['host_maintenance_interval'] else module.container, params, executor.progress)
    try:
        gke_cluster.check_location(params['location'])   # before the reads: a malformed location is named here, not by a 400
        current = runner.read()
        if params['wait'] and params['state'] == 'present':
            current = executor.live(lambda: runner.settle(current), current)
        before = gke_node_pool.view(current)
        if params['state'] == 'absent':
            after = remove(executor, runner, params, current)
        else:
            after = converge(module, executor, runner, params, current)
    except (InputError, GcpError) as exc:
        executor.fail(exc)
    executor.report(before, after)


if __name__ == '__main__':
    main()
