# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the openshift_rdma role: objects rendered from the catalog, OLM decisions, verdicts, perftest.

Every filter is a thin wrapper over plugins/module_utils/openshift/{render,olm}.py and plugins/module_utils/perftest/output.py;
their errors become AnsibleFilterError with the same message (naming the option and the fix).
"""

from __future__ import annotations

import functools

from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import olm
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.perftest import output as perftest
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import render


def _filter(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (ValueError, KeyError, TypeError) as error:
            raise AnsibleFilterError('%s: %s' % (function.__name__, error)) from None
    return wrapper


def _plain(value):
    """Catalog values (MappingProxyType, tuples) as plain dicts and lists for Jinja."""
    if hasattr(value, 'items'):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def openshift_catalog(_unused=None):
    """The catalog's OpenShift facts the role reads (operators, configurations keyed 'method/link', timeouts)."""
    return {'operators': _plain(catalog.OPERATORS), 'timeouts': _plain(catalog.TIMEOUTS),
            'configurations': {'%s/%s' % key: _plain(value) for key, value in catalog.CONFIGURATIONS.items()},
            'marketplace': catalog.MARKETPLACE_NAMESPACE, 'nic_cluster_policy': catalog.NIC_CLUSTER_POLICY_NAME,
            'cluster_policy': catalog.CLUSTER_POLICY_NAME, 'machine_configs': _plain(catalog.MACHINE_CONFIGS),
            'node_labels': _plain(catalog.NODE_LABELS), 'versions': list(catalog.OPENSHIFT_VERSIONS),
            'methods': list(catalog.METHODS), 'links': list(catalog.LINKS), 'threshold_fraction': catalog.PROOF_THRESHOLD_FRACTION}


class FilterModule:
    """aiinfra.gpudirect OpenShift filters."""

    def filters(self):
        return {
            'openshift_catalog': openshift_catalog,
            'openshift_problems': _filter(lambda options, cluster=None: render.problems(options, cluster)),
            'openshift_options': _filter(render.typed_options),
            'openshift_selector_problems': _filter(render.selector_problems),
            'openshift_operator_objects': _filter(render.operator_objects),
            'openshift_operator_objects_of': _filter(lambda planned: render.operator_objects(planned, planned['channel'], planned['csv'])),
            'openshift_nfd_instance': _filter(render.nfd_instance),
            'openshift_sriov_operator_config': _filter(lambda _unused=None: render.sriov_operator_config()),
            'openshift_nic_cluster_policy': _filter(render.nic_cluster_policy),
            'openshift_cluster_policy': _filter(render.cluster_policy),
            'openshift_machine_configs': _filter(render.machine_configs),
            'openshift_method_objects': _filter(render.method_objects),
            'openshift_stale_objects': _filter(render.stale_objects),
            'openshift_every_method_object': _filter(render.every_method_object),
            'openshift_rdma_workload': _filter(render.rdma_workload),
            'openshift_test_pods': _filter(render.test_pods),
            'openshift_resource': _filter(render.resource),
            'openshift_network_ip': _filter(render.network_ip),
            'openshift_ib_write_bw_command': _filter(render.ib_write_bw_command),
            'olm_channel': _filter(lambda manifest, channel=None, package=None: list(olm.resolve_channel(manifest, channel, package))),
            'olm_installplan_to_approve': _filter(olm.installplan_to_approve),
            'olm_operator_groups_problem': _filter(olm.operator_groups_problem),
            'olm_below_floor': _filter(olm.below_floor),
            'olm_alm_example': _filter(olm.alm_example),
            'olm_plan': _filter(olm.plan),
            'olm_group_problems': _filter(olm.group_problems),
            'olm_floor_reports': _filter(olm.floor_reports),
            'olm_progress': _filter(olm.progress),
            'perftest_results': _filter(perftest.parse),
            'perftest_link_rate': _filter(perftest.link_rate),
            'perftest_verdict': _filter(perftest.evaluate),
        }
