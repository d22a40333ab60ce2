#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gke_gpudirect_cluster
short_description: A GKE cluster ready for GPUDirect node pools (Dataplane V2, IP aliases, multi-networking)
version_added: 0.1.0
description:
  - Creates, adopts or deletes a GKE cluster for GPUDirect-TCPXO (A3 Mega), GPUDirect-TCPX (A3 High) or GPUDirect RDMA
    (A3 Ultra, A4), as the GKE manuals create it; a Standard cluster with Dataplane V2, IP aliases and multi-networking,
    with node auto-upgrade off, at a GKE version that meets the technology's floor.
  - When O(version) is not given, the location's default version is used if it meets the floor, otherwise the newest
    valid master version that does (from C(getServerConfig)).
  - Refuses Autopilot for GPUDirect-TCPX and GPUDirect-TCPXO, and versions below the floor, before any request that
    changes anything.
  - An existing cluster is adopted; what it lacks is reported field by field. A control plane below the floor is upgraded
    in place (C(desiredMasterVersion)); Dataplane V2, IP aliases, the cluster mode and multi-networking cannot be changed
    (the GKE GPUDirect-TCPX/TCPXO guide says an existing cluster cannot be updated to use multi-networking), so a cluster without them fails
    before anything is changed, naming the fields and the way out (a new cluster).
  - GKE runs one operation at a time per cluster; a call refused because another operation is running awaits that
    operation and is sent again. Operations are polled with backoff; their progress is returned in RV(operations).
author:
  - aiinfra.gpudirect contributors (@aiinfra)
extends_documentation_fragment:
  - aiinfra.gpudirect.gcp
attributes:
  check_mode:
    support: full
    description: Plans and reports the create or the in-place updates without calling any mutating method.
  diff_mode:
    support: full
    description: Shows the managed fields of the cluster before and after.
options:
  cluster:
    description:
      - Name of the cluster.
      - The alias C(name) is the role variable C(gke_cluster_name) of the P(aiinfra.gpudirect.gke_cluster#role) role.
    type: str
    required: true
    aliases: [name]
  location:
    description:
      - A zone (zonal cluster, as in the GKE GPUDirect-TCPX/TCPXO guide's TCPXO tab) or a region (regional cluster).
    type: str
    required: true
  machine_type:
    description:
      - The GPU machine type the cluster is for; it decides the GPUDirect technology, and with it the version floor and
        whether Autopilot is allowed.
    type: str
    required: true
    choices: [a3-megagpu-8g, a3-highgpu-8g, a3-ultragpu-8g, a4-highgpu-8g]
  state:
    description:
      - V(present) creates or adopts the cluster.
      - V(absent) deletes it, but only a cluster this module created (it carries the resource label
        C(aiinfra-gpudirect=managed)) unless O(delete_adopted=true).
    type: str
    choices: [present, absent]
    default: present
  cluster_mode:
    description:
      - V(standard) or V(autopilot). Autopilot is refused for GPUDirect-TCPX and GPUDirect-TCPXO (Google's GKE GPUDirect-TCPX/TCPXO guide); for RDMA its
        floor is 1.36.2-gke.1368000 (Google's GKE GPUDirect RDMA guide).
    type: str
    choices: [standard, autopilot]
    default: standard
  version:
    description:
      - GKE version of the control plane, such as C(1.30.4-gke.1129000) or a minor such as C(1.33).
      - Refused when older than the technology's floor for its minor version (Google's GKE GPUDirect-TCPX/TCPXO guide,
        "Requirements"; Google's GKE GPUDirect RDMA guide).
    type: str
  multi_networking:
    description:
      - Enable multi-networking (needed by additional node networks). TCPX and TCPXO need it.
    type: bool
    default: true
  network:
    description:
      - The cluster's VPC network (its nodes' eth0). The project's C(default) network when unset.
    type: str
  subnetwork:
    description:
      - The cluster's subnetwork in O(network).
    type: str
  default_pool_node_count:
    description:
      - Nodes of the cluster's default node pool (per zone), as C(gcloud container clusters create) makes it.
    type: int
    default: 3
  autoupgrade:
    description:
      - Node auto-upgrade of the default pool. The manuals turn it off (C(--no-enable-autoupgrade)).
    type: bool
    default: false
  delete_adopted:
    description:
      - With O(state=absent), delete the cluster even if this module did not create it.
    type: bool
    default: false
  timeout:
    description:
      - Seconds to wait for each Container operation (a cluster create takes several minutes).
      - C(wait_timeout) is its old name, deprecated (removed in 1.0.0).
    type: int
    default: 1800
    aliases: [wait_timeout]
  kubeconfig_path:
    description:
      - Also merge RV(kubeconfig) into this file when it does not hold it yet, as C(gcloud container clusters
        get-credentials) does - the cluster's cluster, context and user entries set by name and its context made current;
        the file's other contexts, users and settings stay (mode 0600; its directory is created with mode 0700).
      - A new file is JSON, which kubectl and kubernetes.core read as YAML; an existing file keeps its format. A path that
        is a directory, unreadable, or not a kubeconfig is refused before anything is created.
      - Nothing is written in check mode (the action is reported), with O(state=absent), or while the cluster does not exist.
    type: path
notes:
  - The modules of this collection that talk to Google Cloud run on the controller.
  - RV(kubeconfig) holds no secret; its user runs C(gke-gcloud-auth-plugin). Write it with C(no_log) anyway if your
    plays log task arguments.
seealso:
  - module: aiinfra.gpudirect.gke_gpudirect_node_pool
  - module: aiinfra.gpudirect.gce_gpudirect_network
"""

EXAMPLES = r"""
- name: A zonal cluster for A3 Mega (GPUDirect-TCPXO) at a version GKE picks above the floor
  aiinfra.gpudirect.gke_gpudirect_cluster:
    project: my-project
    cluster: a3mega
    location: us-central1-a
    machine_type: a3-megagpu-8g
    kubeconfig_path: ~/.kube/aiinfra-gpudirect-a3mega.yaml
  register: gke_cluster

- name: A regional cluster for A3 High (GPUDirect-TCPX) at a fixed version
  aiinfra.gpudirect.gke_gpudirect_cluster:
    cluster: a3high
    location: us-central1
    machine_type: a3-highgpu-8g
    version: 1.30.4-gke.1129000

- name: Delete the cluster the collection created (an adopted one stays)
  aiinfra.gpudirect.gke_gpudirect_cluster:
    cluster: a3mega
    location: us-central1-a
    machine_type: a3-megagpu-8g
    state: absent
"""

RETURN = r"""
cluster:
  description:
    - The cluster as the Container API returns it after the run (before, in check mode; absent when it does not exist).
    - With O(state=absent), the cluster as it was found, before it is deleted.
  returned: when the cluster exists
  type: dict
endpoint:
  description: URL of the cluster's Kubernetes API.
  returned: when the cluster exists
  type: str
  sample: https://34.30.1.2
ca_certificate:
  description: The cluster CA certificate, base64 PEM (C(masterAuth.clusterCaCertificate)).
  returned: when the cluster exists
  type: str
kubeconfig:
  description: A kubeconfig for the cluster whose user runs C(gke-gcloud-auth-plugin), as a dict (no token in it).
  returned: when the cluster exists
  type: dict
plan:
  description: The planned cluster settings.
  returned: with O(state=present)
  type: dict
  sample: {name: a3mega, location: us-central1-a, machine_type: a3-megagpu-8g, technology: TCPXO, cluster_mode: standard,
           version: 1.33.5-gke.1308000, multi_networking: true}
actions:
  description: What was done (or would be done in check mode), one line each.
  returned: always
  type: list
  elements: str
  sample: ["create cluster a3mega (1.33.5-gke.1308000)"]
progress:
  description: Progress lines of the Container operations awaited, in the order they happened.
  returned: always
  type: list
  elements: str
  sample: ["operation-1 CREATE_CLUSTER RUNNING", "operation-1 CREATE_CLUSTER DONE"]
operations:
  description: The same list as RV(progress), under its old name (deprecated, removed in 1.0.0).
  returned: always
  type: list
  elements: str
managed:
  description: Whether the cluster carries the label this module puts on clusters it creates.
  returned: when the cluster exists
  type: bool
"""


from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute as compute_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError, GcpTimeout
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.container import cluster_path, cluster_target, clusters_path, server_config_path
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.executor import Executor
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.module import GpuDirectModule
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import cluster as gke_cluster
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import common
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import WaitReport, every, until

ARGUMENT_SPEC = gke_cluster.ARGUMENT_SPEC


def is_managed(cluster):
    return compute_catalog.carries_mark(cluster.get('resourceLabels'))


def wait_running(container, path, timeout, sleep):
    """Re-read the cluster until it is RUNNING (an operation of an earlier run may still be at work);
    fail on ERROR or RUNNING_WITH_ERROR with GKE's statusMessage."""
    broken = ('ERROR', 'RUNNING_WITH_ERROR', 'DEGRADED')
    report = WaitReport('cluster %s' % path, describe=lambda current: (current or {}).get('status', 'gone'))
    current, settled = until(lambda: container.get(path, action='read cluster %s' % path),
                             lambda current: current is None or current.get('status') in ('RUNNING',) + broken, timeout, every(5.0), sleep=sleep,
                             report=report)
    status = (current or {}).get('status')
    # Neither is bad input: GKE's own state (a failed cluster), or time (an earlier run's operation still at work).
    if status in broken:
        raise GcpError('wait for cluster %s' % path, 'it is %s: %s' % (status, current.get('statusMessage') or 'no status message'))
    if not settled:
        raise GcpTimeout('wait for cluster %s' % path, 'it is still %s after %ss; it goes on in Google Cloud, rerun to pick it up'
                         % (status, timeout))
    return current


def results(cluster):
    if not cluster:
        return {}
    endpoint = cluster.get('endpoint') or ''
    ca = (cluster.get('masterAuth') or {}).get('clusterCaCertificate') or ''
    return {'cluster': cluster, 'endpoint': 'https://%s' % endpoint if endpoint else '', 'ca_certificate': ca,
            'kubeconfig': common.kubeconfig(cluster['name'], endpoint, ca), 'managed': is_managed(cluster)}


def remove(container, executor, params, current):
    """Delete the cluster if the collection made it (or delete_adopted); the diff's after."""
    executor.result.update(results(current))   # as found: a teardown reads the kubeconfig here (check mode) first
    location, name = params['location'], params['cluster']
    if current is not None and not is_managed(current) and not params['delete_adopted']:
        executor.module.warn('cluster %s was not created by aiinfra.gpudirect (no resource label %s=%s): left alone; set delete_adopted: '
                             'true to delete it' % ((name,) + compute_catalog.MANAGED_LABEL))
    elif current is not None:
        executor.do('delete cluster %s' % name, lambda: container.run('DELETE', cluster_path(location, name), 'delete cluster %s' % name,
                                                                      timeout=params['timeout'], progress=executor.progress))
    return None if executor.actions else gke_cluster.view(current)


def converge(container, executor, params, current):
    """Create the cluster or update it in place, settle it, and write its kubeconfig; the diff's after."""
    location, name, timeout = params['location'], params['cluster'], params['timeout']
    path = cluster_path(location, name)
    server_config = None
    if not params['version']:
        server_config = container.get(server_config_path(location), action='read the GKE versions of %s' % location)
    plan = gke_cluster.plan_from_params(params, server_config)
    executor.result['plan'] = plan.summary()
    after = gke_cluster.planned_view(plan, current)
    if current is None:
        executor.do('create cluster %s (%s)' % (name, plan.version), lambda: container.run(
            'POST', clusters_path(location), 'create cluster %s' % name, body={'cluster': plan.body}, timeout=timeout,
            progress=executor.progress, target=cluster_target(name)))
    else:
        current = executor.live(lambda: wait_running(container, path, timeout, container.transport.sleep), current)
        updates, problems = gke_cluster.changes(plan, current)
        if problems:
            executor.fail('cluster %s exists but cannot carry GPUDirect-%s node pools, and these cannot be changed in place: %s; '
                          'delete it (state: absent, delete_adopted: true) or choose another cluster name'
                          % (name, plan.family.technology, '; '.join(problems)), noncompliant=problems)
        for update in updates:
            field, value = next(iter(update.items()))
            if field == 'desiredMasterVersion':
                after['currentMasterVersion'] = value
            executor.do('update cluster %s: %s=%s' % (name, field, value), lambda update=update, field=field: container.run(
                'PUT', path, 'update cluster %s (%s)' % (name, field), body={'update': update}, timeout=timeout, progress=executor.progress))
    current = executor.live(lambda: wait_running(container, path, timeout, container.transport.sleep), current)
    after = executor.live(lambda: gke_cluster.view(current), after)
    executor.result.update(results(current))
    if params['kubeconfig_path'] and current is not None:
        kubeconfig_path = params['kubeconfig_path']
        try:
            update = common.kubeconfig_update(kubeconfig_path, executor.result['kubeconfig'])
            if update:
                executor.do('write kubeconfig %s' % kubeconfig_path, lambda: common.write_kubeconfig(kubeconfig_path, *update))
        except OSError as exc:
            raise InputError('kubeconfig_path: cannot write %s: %s' % (kubeconfig_path, exc)) from None
    return after


def main():
    module = GpuDirectModule(ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    executor = Executor(module, progress_keys=('progress', 'operations'))
    try:
        gke_cluster.check_location(params['location'])   # before the reads: a malformed location is named here, not by a 400
        current = module.container.get(cluster_path(params['location'], params['cluster']), action='read cluster %s' % params['cluster'])
        before = gke_cluster.view(current)
        if params['state'] == 'absent':
            after = remove(module.container, executor, params, current)
        else:
            after = converge(module.container, executor, params, current)
    except (InputError, GcpError) as exc:
        executor.fail(exc)
    executor.report(before, after)


if __name__ == '__main__':
    main()
