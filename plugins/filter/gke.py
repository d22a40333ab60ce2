# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that render the Kubernetes side of GPUDirect on GKE and judge readiness (documentation: the
.yml file of each filter beside this one). The work is in plugins/module_utils/k8s/."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import gke as gke_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import applied, readiness, render, workload


def _filter(function):
    def run(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except ValueError as exc:   # InputError names the input and the fix
            raise AnsibleFilterError('%s: %s' % (function.__name__, exc)) from None
    run.__name__ = function.__name__
    return run


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
    """The ResourceClaimTemplate all-mrdma (seed 001)."""
    return [render.rdma_claim_template(namespace)]


def gke_rdma_compute_class(name, priorities=None, definition=None):
    """Seed 001's ComputeClass from ``priorities``, or the user's own ``definition`` once checked."""
    if definition:
        return render.check_rdma_compute_class(definition)
    return render.rdma_compute_class(name, priorities)


def gke_rdma_network_objects(network_prefix=None, networks=None, machine_type='a3-ultragpu-8g', node_pool=None, installer=False):
    """Seed 001's manual multi-network objects: gvnic-1 and rdma-0..7, then (``installer``) the RDMA installer DaemonSet."""
    objects = render.rdma_network_objects(network_prefix=network_prefix or None, networks=networks or None, machine_type=machine_type)
    if installer:
        objects.append(render.rdma_installer_daemonset(node_pool=node_pool or None, machine_type=machine_type))
    return objects


def gke_nccl_test(technology, namespace=None, compute_class=None, multi_network=False):
    """The seed's NCCL test: ``objects`` to apply, ``exec`` (pod, container, command), ``machine_type``, ``gpus_per_node``."""
    machine_type = render.nccl_machine_type(technology)
    return {'objects': render.nccl_test_objects(technology, namespace, compute_class=compute_class or None, multi_network=multi_network),
            'exec': render.nccl_test_exec(technology), 'machine_type': machine_type,
            'gpus_per_node': families.get_family(machine_type).gpu_count}


def gke_gpu_node_selector(technology, node_pool=None, machine_type=None, dranet=True):
    return render.gpu_node_selector(technology, node_pool or None, machine_type or None, dranet=dranet)


def gke_gpudirect_workload(obj, technology, nccl_env='required', daemon_image=None, shared_memory_limit=None):
    return workload.gpudirect_workload(obj, technology, nccl_env_mode=nccl_env, daemon_image=daemon_image or None,
                                       shared_memory_limit=shared_memory_limit or None)


def gke_rdma_workload(obj, claim_template=None, shared_memory_limit=None):
    return workload.rdma_workload(obj, claim_template=claim_template or None, shared_memory_limit=shared_memory_limit or None)


def k8s_verdict(objects, expect=None, kind=None, minimum=1):
    return readiness.verdict(objects, expect, kind=kind, minimum=minimum)


def k8s_to_apply(desired, live):
    return applied.to_apply(desired, live)


def k8s_managed_by(objects, field_managers):
    return applied.managed_by(objects, field_managers)


def k8s_nodes_without_ready_pod(nodes, pods):
    return readiness.nodes_without_ready_pod(nodes, pods)


class FilterModule:
    """aiinfra.gpudirect GKE / Kubernetes filters."""

    def filters(self):
        functions = (gke_family_defaults, gke_technology, gke_gpudirect_objects, gke_rdma_objects, gke_rdma_compute_class,
                     gke_rdma_network_objects, gke_nccl_test, gke_gpu_node_selector, gke_gpudirect_workload, gke_rdma_workload,
                     k8s_verdict, k8s_nodes_without_ready_pod, k8s_to_apply, k8s_managed_by)
        return {f.__name__: _filter(f) for f in functions}
