# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's private filters: what its roles and playbooks render and judge with, not an interface for users.

The roles call them as ``aiinfra.gpudirect._NAME``; the filters a user may call are those of gke.py, openshift.py and
nccl.py. ansible-core (2.17 to 2.21) offers a collection no private filter: it loads none from a role of a collection
(roles/ROLE/filter_plugins), and ansible-doc lists every filter of plugins/filter/ but those of a file named ``__*``, a
name Galaxy's importer refuses, as it refuses an undocumented filter. So each of these is documented (_NAME.yml) as
private to the roles, not part of the collection's interface and free to change in any release
(tests/unit/test_packaging.py checks the two lists); each is a thin wrapper over plugins/module_utils/
(catalog/, k8s/, openshift/, perftest/), whose docstrings document them, and its errors (InputError naming the option and the fix) become
AnsibleFilterError with the same message.
"""

from __future__ import annotations

from ansible.utils.display import Display

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import gke as gke_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as openshift_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import applied, readiness, render
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import olm
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import render as openshift_render
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.perftest import output as perftest
from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.filters import as_filter


def gke_family_defaults(machine_type):
    """What the GKE playbooks derive from the machine type (catalog/gke.py's GKE_FAMILY_DEFAULTS)."""
    return gke_catalog.gke_family_defaults(machine_type)


def gke_technology(machine_type, technology=None):
    """The GPUDirect technology of a GKE machine type (catalog/gke.py), or the deprecated ``technology`` without one."""
    if technology:
        # Shown once per run (Display keeps the messages it has shown), however often the role templates it.
        Display().deprecated('gke_gpudirect_technology is deprecated: give gke_gpudirect_machine_type, whose family decides the '
                             'technology (a3-megagpu-8g: TCPXO, a3-highgpu-8g: TCPX, a3-ultragpu-8g and a4-highgpu-8g: RDMA)',
                             version='1.0.0', collection_name='aiinfra.gpudirect')
    return gke_catalog.gke_technology(machine_type, technology or None)


def gke_gpudirect_objects(technology, network_prefix=None, networks=None, node_pool=None, plugin_image=None):
    """GKENetworkParamSet + Network per data VPC, then the NCCL installer and NRI injector DaemonSets."""
    return (render.gke_network_objects(technology, network_prefix=network_prefix, networks=networks)
            + render.gke_daemonsets(technology, node_pool=node_pool, plugin_image=plugin_image or None))


def gke_rdma_objects(namespace=None):
    """The ResourceClaimTemplate all-mrdma of Google's GPUDirect RDMA guide."""
    return [render.rdma_claim_template(namespace)]


def gke_rdma_compute_class(name, priorities=None, definition=None):
    """The guide's ComputeClass from ``priorities``, or the user's own ``definition`` once checked."""
    if definition:
        return render.check_rdma_compute_class(definition)
    return render.rdma_compute_class(name, priorities)


def gke_rdma_network_objects(network_prefix=None, networks=None, machine_type='a3-ultragpu-8g', node_pool=None, installer=False,
                             gvnic_prefix=None, rdma_prefix=None):
    """The guide's manual multi-network objects: gvnic-1 and rdma-0..7, then (``installer``) the RDMA installer DaemonSet."""
    objects = render.rdma_network_objects(network_prefix=network_prefix or None, networks=networks or None, machine_type=machine_type,
                                          gvnic_prefix=gvnic_prefix or None, rdma_prefix=rdma_prefix or None)
    if installer:
        objects.append(render.rdma_installer_daemonset(node_pool=node_pool or None, machine_type=machine_type))
    return objects


def gke_nccl_test(technology, namespace=None, compute_class=None, multi_network=False, nodes=None, runs=None):
    """The guide's NCCL test: ``objects`` to apply, ``exec`` (pod, container, command), ``machine_type``, ``gpus_per_node``.

    ``nodes`` (the diagnosis): ``objects`` holds one test Pod per node, ``hosts`` maps each node to its Pod and
    Service, and ``runs`` (nccl_diagnose's ``next_runs``) become ``execs``, one ``{pod, container, command}`` per run."""
    machine_type = render.nccl_machine_type(technology)
    found = {'exec': render.nccl_test_exec(technology), 'machine_type': machine_type, 'gpus_per_node': families.get_family(machine_type).gpu_count}
    if not nodes:
        return dict(found, objects=render.nccl_test_objects(technology, namespace, compute_class=compute_class or None, multi_network=multi_network))
    diagnosis = render.nccl_diagnosis_objects(technology, list(nodes), namespace, compute_class=compute_class or None,
                                              multi_network=multi_network)
    hosts = diagnosis['hosts']
    execs = [dict(render.nccl_diagnosis_exec(technology, [hosts[h]['service'] for h in run['hosts']], run.get('nic')),
                  pod=hosts[run['hosts'][0]]['pod']) for run in runs or []]
    return dict(found, objects=diagnosis['objects'], hosts=hosts, execs=execs)


def gke_gpu_node_selector(technology, node_pool=None, machine_type=None, dranet=True):
    """The node selector of the GPU nodes the NCCL test and the waits look at (k8s/render.py)."""
    return render.gpu_node_selector(technology, node_pool or None, machine_type or None, dranet=dranet)


def k8s_verdict(objects, expect=None, kind=None, minimum=1):
    """Whether live objects are ready, and which are not (k8s/readiness.py)."""
    return readiness.verdict(objects, expect, kind=kind, minimum=minimum)


def k8s_to_apply(desired, live):
    """The desired objects that differ from the live ones (k8s/applied.py)."""
    return applied.to_apply(desired, live)


def k8s_managed_by(objects, field_managers):
    """The objects one of ``field_managers`` wrote (k8s/applied.py)."""
    return applied.managed_by(objects, field_managers)


def k8s_nodes_without_ready_pod(nodes, pods):
    """The nodes on which no pod is ready (k8s/readiness.py)."""
    return readiness.nodes_without_ready_pod(nodes, pods)


def _plain(value):
    """Catalog values (MappingProxyType, tuples) as plain dicts and lists for Jinja."""
    if hasattr(value, 'items'):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def openshift_catalog_facts(_unused=None):
    """The catalog's OpenShift facts the role reads (operators, configurations keyed 'method/link', timeouts)."""
    catalog = openshift_catalog
    return {'operators': _plain(catalog.OPERATORS), 'timeouts': _plain(catalog.TIMEOUTS),
            'configurations': {'%s/%s' % key: _plain(value) for key, value in catalog.CONFIGURATIONS.items()},
            'marketplace': catalog.MARKETPLACE_NAMESPACE, 'nic_cluster_policy': catalog.NIC_CLUSTER_POLICY_NAME,
            'cluster_policy': catalog.CLUSTER_POLICY_NAME, 'machine_configs': _plain(catalog.MACHINE_CONFIGS),
            'node_labels': _plain(catalog.NODE_LABELS), 'versions': list(catalog.OPENSHIFT_VERSIONS),
            'methods': list(catalog.METHODS), 'links': list(catalog.LINKS), 'threshold_fraction': catalog.PROOF_THRESHOLD_FRACTION}


PRIVATE = {
    'gke_family_defaults': gke_family_defaults,
    'gke_technology': gke_technology,
    'gke_gpudirect_objects': gke_gpudirect_objects,
    'gke_rdma_objects': gke_rdma_objects,
    'gke_rdma_compute_class': gke_rdma_compute_class,
    'gke_rdma_network_objects': gke_rdma_network_objects,
    'gke_nccl_test': gke_nccl_test,
    'gke_gpu_node_selector': gke_gpu_node_selector,
    'k8s_verdict': k8s_verdict,
    'k8s_nodes_without_ready_pod': k8s_nodes_without_ready_pod,
    'k8s_to_apply': k8s_to_apply,
    'k8s_managed_by': k8s_managed_by,
    'openshift_catalog': openshift_catalog_facts,
    'openshift_problems': lambda options, cluster=None: openshift_render.problems(options, cluster),
    'openshift_options': openshift_render.typed_options,
    'openshift_selector_problems': openshift_render.selector_problems,
    'openshift_operator_objects': openshift_render.operator_objects,
    'openshift_operator_objects_of': lambda planned: openshift_render.operator_objects(planned, planned['channel'], planned['csv']),
    'openshift_nfd_instance': openshift_render.nfd_instance,
    'openshift_sriov_operator_config': lambda _unused=None: openshift_render.sriov_operator_config(),
    'openshift_nic_cluster_policy': openshift_render.nic_cluster_policy,
    'openshift_cluster_policy': openshift_render.cluster_policy,
    'openshift_machine_configs': openshift_render.machine_configs,
    'openshift_method_objects': openshift_render.method_objects,
    'openshift_stale_objects': openshift_render.stale_objects,
    'openshift_every_method_object': openshift_render.every_method_object,
    'openshift_test_pods': openshift_render.test_pods,
    'openshift_diagnosis_pods': openshift_render.diagnosis_pods,
    'openshift_diagnosis_processes': openshift_render.diagnosis_processes,
    'openshift_resource': openshift_render.resource,
    'openshift_network_ip': openshift_render.network_ip,
    'openshift_ib_write_bw_command': openshift_render.ib_write_bw_command,
    'olm_channel': lambda manifest, channel=None, package=None: list(olm.resolve_channel(manifest, channel, package)),
    'olm_installplan_to_approve': olm.installplan_to_approve,
    'olm_operator_groups_problem': olm.operator_groups_problem,
    'olm_below_floor': olm.below_floor,
    'olm_alm_example': olm.alm_example,
    'olm_plan': olm.plan,
    'olm_group_problems': olm.group_problems,
    'olm_floor_reports': olm.floor_reports,
    'perftest_link_rate': perftest.link_rate,
    'perftest_verdict': perftest.evaluate,
}


class FilterModule:
    """aiinfra.gpudirect's private filters (the roles'): each as ``_NAME``."""

    def filters(self):
        return {'_' + name: as_filter(name, function) for name, function in PRIVATE.items()}
