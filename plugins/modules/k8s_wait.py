#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# The action plugin plugins/action/k8s_wait.py does the work; this file holds its documentation.

DOCUMENTATION = r"""
---
module: k8s_wait
short_description: Wait until Kubernetes objects are ready, and say why when they are not
version_added: 0.1.0
description:
  - Reads the objects every O(delay) seconds (one read per kind and namespace) and judges each with the collection's
    readiness table (below), until all are ready, one has failed, or O(timeout) passes.
  - >-
    Every status is judged at the object's current generation: a status or condition whose C(observedGeneration) is
    older than C(metadata.generation) is pending.
  - >-
    DaemonSet: C(desiredNumberScheduled) equals the expected node count C(nodes) of O(expect), which must be above 0, and
    updated, ready and available reach it. A DaemonSet whose node selection matches none or the wrong nodes fails at once.
  - "Pod: Running and Ready. Succeeded or Failed fails, and an unschedulable Pod is pending with the scheduler's message."
  - "Deployment: updated, ready and available replicas reach C(spec.replicas). Job: Complete, or failed on Failed."
  - "CustomResourceDefinition: Established. Network and GKENetworkParamSet: Ready."
  - >-
    OLM: CatalogSource READY, Subscription with its installed CSV (C(csv) of O(expect) when given; ResolutionFailed fails),
    InstallPlan Complete, ClusterServiceVersion Succeeded (a phase outside OLM's pending ones fails).
  - >-
    NVIDIA's operators: NicClusterPolicy, ClusterPolicy, MacvlanNetwork, HostDeviceNetwork and IPoIBNetwork C(state) ready
    (error or ignore fails); NodeFeatureDiscovery Available (Degraded fails); SriovNetworkNodeState C(syncStatus) Succeeded;
    MachineConfigPool Updated and not Updating at its generation (Degraded fails); Node: allocatable C(resource) of
    O(expect) at least C(at_least) (default 1).
  - Any other kind is ready once it exists.
  - >-
    When it fails, the message names the object, its last status and its latest event; for a DaemonSet or a Deployment
    also its first Pod that is not ready with that Pod's latest event, and, given the nodes of O(expect) as names, the nodes
    without a ready Pod of its current spec. A wait of more than ten seconds prints where it stands when its verdict changes.
author:
  - aiinfra.gpudirect contributors (@aiinfra)
attributes:
  check_mode:
    support: full
    details: It only reads, so it waits in check mode too; skip it there with C(when) where check mode creates nothing to wait for.
  diff_mode:
    support: none
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - aiinfra.gpudirect.kube_action
options:
  objects:
    description:
      - Objects that must each exist and be ready, as rendered or applied (only C(apiVersion), C(kind), C(metadata.name) and
        C(metadata.namespace) are read). An empty list is ready at once.
      - Give this or O(kind).
    type: list
    elements: dict
  api_version:
    description: The API version of O(kind).
    type: str
    default: v1
  kind:
    description: The kind to wait on; with O(names), O(label_selectors) or both, else every object of the kind in O(namespace).
    type: str
  namespace:
    description: The namespace of O(kind)'s objects; unset, cluster-scoped or all namespaces.
    type: str
  names:
    description: Names that must each exist and be ready.
    type: list
    elements: str
  label_selectors:
    description: Label selectors (C(key=value), C(key in (a,b))), all of which an object must match.
    type: list
    elements: str
  minimum:
    description: Without O(names), how many matching objects must exist; fewer is pending.
    type: int
    default: 1
  expect:
    description:
      - "What readiness needs beyond the object's own status: C(nodes) for a DaemonSet (the expected node count, or the node
        names, which the failure message then checks one by one), C(csv) for a Subscription, C(resource) and C(at_least) for
        Nodes (allocatable), C(annotations) for Pods (names of annotations each must carry, such as Multus's
        C(k8s.v1.cni.cncf.io/network-status))."
    type: dict
    default: {}
  timeout:
    description: Seconds to wait before failing with the last verdict.
    type: float
    default: 300
  delay:
    description: Seconds between reads.
    type: float
    default: 2
  description:
    description: How messages name what is waited on (default O(kind)), such as C(the NCCL test Pods).
    type: str
  olm:
    description:
      - "One stage of the Operator Lifecycle Manager install of several operators at once: O(kind) is the stage
        (V(Subscription): it has its InstallPlan; V(InstallPlan): Complete; V(ClusterServiceVersion): Succeeded;
        V(CustomResourceDefinition): Established), every object of that kind is read each poll, and each operator's own
        object (named from its Subscription, or its pinned CSV, or its CRDs) is judged by the readiness table. The verdict
        names the operator and the stage, then the object."
      - Used by the role C(openshift_rdma); mutually exclusive in effect with O(names) and O(label_selectors).
    type: dict
    suboptions:
      operators:
        description: The planned operators (C(title), C(namespace), C(subscription), C(csv), C(pin_csv), C(crds)).
        type: list
        elements: dict
        required: true
      subscriptions:
        description: The Subscriptions as read after the Subscription stage (the later stages follow their references).
        type: list
        elements: dict
        default: []
seealso:
  - module: kubernetes.core.k8s_info
"""

EXAMPLES = r"""
- name: Wait until the TCPXO installer runs on both GPU nodes
  aiinfra.gpudirect.k8s_wait:
    api_version: apps/v1
    kind: DaemonSet
    namespace: kube-system
    names: [nccl-tcpxo-installer]
    expect:
      nodes: [gke-a3mega-pool-1, gke-a3mega-pool-2]
    timeout: 600

- name: Wait until the rendered Networks are Ready
  aiinfra.gpudirect.k8s_wait:
    objects: "{{ rendered | selectattr('kind', 'in', ['Network', 'GKENetworkParamSet']) | list }}"

- name: Wait until every operator's CSV has Succeeded
  aiinfra.gpudirect.k8s_wait:
    description: OLM stage ClusterServiceVersion
    api_version: operators.coreos.com/v1alpha1
    kind: ClusterServiceVersion
    olm:
      operators: "{{ planned_operators }}"
      subscriptions: "{{ subscriptions }}"
    timeout: 900

- name: Wait for two test Pods
  aiinfra.gpudirect.k8s_wait:
    kind: Pod
    namespace: nccl
    label_selectors: ["name in (nccl-host-1,nccl-host-2)"]
    minimum: 2
    description: the NCCL test Pods
  register: pods
"""

RETURN = r"""
verdict:
  description: "V(ready), or the last V(pending: ...) or the V(failed: ...) verdict, naming the object."
  returned: always
  type: str
  sample: 'pending: Pod nccl/nccl-host-1 not scheduled: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.'
objects:
  description: Each object read in the last poll, with its verdict (and its node, for a Pod).
  returned: always
  type: list
  elements: dict
  sample: [{kind: Pod, namespace: nccl, name: nccl-host-1, verdict: ready, node: gke-pool-1}]
reads:
  description: How many times the objects were read.
  returned: always
  type: int
waited:
  description: Seconds waited.
  returned: when the objects were read
  type: float
"""
