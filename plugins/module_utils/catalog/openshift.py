# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

# OpenShift GPUDirect RDMA facts (seed 004; OLM names from references.md). Nothing in the collection
# uses them yet (the OpenShift role is planned).
#

from types import MappingProxyType

# ---------------------------------------------------------------------------------------------
# OpenShift GPUDirect RDMA (seed 004; OLM names from references.md)
# ---------------------------------------------------------------------------------------------

OPENSHIFT_RDMA = MappingProxyType({
    # seed 004 intro: three methods, each over RoCE or InfiniBand -> six configurations.
    # (key, the seed's name of the method); transports spelled as the seed spells them.
    'methods': (('shared-device', '共有デバイス'), ('host-device', 'ホストデバイス'), ('sriov-legacy', 'SR-IOV レガシーデバイス')),
    'transports': ('RoCE', 'Infiniband'),
    # seed 004 "5.1. NVIDIA GPUDirect RDMA の前提条件", in install order.
    'operators': ('Node Feature Discovery Operator', 'SR-IOV Operator', 'NVIDIA Network Operator', 'NVIDIA GPU Operator'),
    # references.md "OpenShift GPUDirect RDMA": OLM (package, namespace, catalog source), same order.
    'subscriptions': (('nfd', 'openshift-nfd', 'redhat-operators'),
                      ('sriov-network-operator', 'openshift-sriov-network-operator', 'redhat-operators'),
                      ('nvidia-network-operator', 'nvidia-network-operator', 'certified-operators'),
                      ('gpu-operator-certified', 'nvidia-gpu-operator', 'certified-operators')),
    'mellanox_vendor_id': '15b3',
    'nfd_label': 'feature.node.kubernetes.io/pci-15b3.present',
})
