# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The private filters the GKE playbooks and the gke_gpudirect role derive the family's facts with: _gke_family_defaults
and _gke_technology (plugins/filter/_roles.py over catalog/gke.py)."""
from __future__ import annotations

import importlib
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import gke as gke_catalog

FILTERS = importlib.import_module('ansible_collections.aiinfra.gpudirect.plugins.filter._roles').FilterModule().filters()
SEED_001 = next(name for name in os.listdir(os.path.join(os.path.dirname(__file__), '..', '..', 'seeds')) if name.startswith('001_'))


def test_the_rdma_families_default_to_seed_001s_zone_dranet_and_the_gke_rdma_role():
    with open(os.path.join(os.path.dirname(__file__), '..', '..', 'seeds', SEED_001), encoding='utf-8') as handle:
        assert 'location           = "us-central1-b"' in handle.read()
    for machine_type in ('a3-ultragpu-8g', 'a4-highgpu-8g'):
        facts = FILTERS['_gke_family_defaults'](machine_type)
        assert (facts['technology'], facts['location'], facts['networking'], facts['network_layout'], facts['kubernetes_role']) == \
            ('RDMA', 'us-central1-b', 'dranet', 'gke_rdma', 'gke_rdma')
        assert facts['networkings'] == ['dranet', 'compute_class', 'multi_network'] and facts['node_count'] == 2


@pytest.mark.parametrize('machine_type, technology', [('a3-megagpu-8g', 'TCPXO'), ('a3-highgpu-8g', 'TCPX'),
                                                      # no GPUDirect on GKE, or none (--syntax-check): the plan step names it
                                                      ('a3-edgegpu-8g', 'TCPX'), ('', 'TCPX'), ('n2-standard-8', 'TCPX')])
def test_the_tcpx_families_and_the_others_default_to_multi_networking_and_the_gke_gpudirect_role(machine_type, technology):
    facts = FILTERS['_gke_family_defaults'](machine_type)
    assert facts == {'technology': technology, 'location': 'us-central1-a', 'networking': 'multi_network', 'networkings': ['multi_network'],
                     'network_layout': 'gke', 'kubernetes_role': 'gke_gpudirect', 'node_count': 2}


def test_every_technology_has_the_facts_of_the_playbooks():
    assert set(gke_catalog.GKE_FAMILY_DEFAULTS) == {'TCPXO', 'TCPX', 'RDMA'}
    for facts in gke_catalog.GKE_FAMILY_DEFAULTS.values():
        assert facts['networking'] in facts['networkings']


def test_the_technology_comes_from_the_machine_type_and_the_deprecated_variable_must_agree():
    technology = FILTERS['_gke_technology']
    assert technology('a3-megagpu-8g') == 'TCPXO' and technology('a3-highgpu-8g', '') == 'TCPX'
    assert technology('a3-ultragpu-8g', 'RDMA') == 'RDMA' and technology('', 'TCPX') == 'TCPX' and technology('') == 'TCPXO'
    with pytest.raises(AnsibleFilterError, match=r"technology: 'TCPX' differs from 'TCPXO', the technology of a3-megagpu-8g; leave it unset"):
        technology('a3-megagpu-8g', 'TCPX')
    with pytest.raises(AnsibleFilterError, match='machine_type: a3-edgegpu-8g has no GPUDirect on GKE; choose one of a3-megagpu-8g'):
        technology('a3-edgegpu-8g')
