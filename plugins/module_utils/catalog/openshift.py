# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

# OpenShift GPUDirect RDMA facts (Red Hat's GPUDirect RDMA chapter; OLM names from references.md), read by the role
# openshift_rdma through the filters of plugins/filter/openshift.py.
#

from types import MappingProxyType

# ---------------------------------------------------------------------------------------------
# OpenShift GPUDirect RDMA (Red Hat's GPUDirect RDMA chapter; OLM names from references.md)
# ---------------------------------------------------------------------------------------------

OPENSHIFT_RDMA = MappingProxyType({
    # Red Hat's GPUDirect RDMA chapter intro: three methods, each over RoCE or InfiniBand -> six configurations.
    # (key, the guide's name of the method); transports spelled as the guide spells them.
    'methods': (('shared-device', '共有デバイス'), ('host-device', 'ホストデバイス'), ('sriov-legacy', 'SR-IOV レガシーデバイス')),
    'transports': ('RoCE', 'Infiniband'),
    # Red Hat's GPUDirect RDMA chapter "5.1. NVIDIA GPUDirect RDMA の前提条件", in install order.
    'operators': ('Node Feature Discovery Operator', 'SR-IOV Operator', 'NVIDIA Network Operator', 'NVIDIA GPU Operator'),
    # references.md "OpenShift GPUDirect RDMA": OLM (package, namespace, catalog source), same order.
    'subscriptions': (('nfd', 'openshift-nfd', 'redhat-operators'),
                      ('sriov-network-operator', 'openshift-sriov-network-operator', 'redhat-operators'),
                      ('nvidia-network-operator', 'nvidia-network-operator', 'certified-operators'),
                      ('gpu-operator-certified', 'nvidia-gpu-operator', 'certified-operators')),
    'mellanox_vendor_id': '15b3',
    'nfd_label': 'feature.node.kubernetes.io/pci-15b3.present',
})

# ---------------------------------------------------------------------------------------------
# The role openshift_rdma's data (tests/unit/seeds/openshift-rdma.md, "the chapter" below, cited
# by section; tests/unit/plugins/module_utils/test_catalog_openshift.py checks each fact there).
# ---------------------------------------------------------------------------------------------

# Cluster versions the chapter covers (§12: seen in 4.18, 4.19, 4.20, 4.22; its example cluster runs
# 4.17 with 4.16 node images).  Read from ClusterVersion ``version`` status.desired.version.
OPENSHIFT_VERSIONS = ('4.16', '4.22')

MARKETPLACE_NAMESPACE = 'openshift-marketplace'

# §1 OLM install table, in install order.  ``floor``: the oldest CSV version the chapter's pins use
# (§12: NNO v24.10 / DOCA 24.10, GPU Operator v24.9, NFD and SR-IOV of OCP 4.16); an installed CSV
# below it is reported.  ``crds``: what the operator's CSV brings and the role's objects need.
OPERATORS = (
    MappingProxyType({
        'key': 'nfd', 'title': 'Node Feature Discovery Operator', 'namespace': 'openshift-nfd',
        'namespace_labels': MappingProxyType({'name': 'openshift-nfd', 'openshift.io/cluster-monitoring': 'true'}),
        'namespace_annotations': MappingProxyType({}),
        'operator_group': 'openshift-nfd', 'subscription': 'nfd', 'package': 'nfd', 'channel': 'stable',
        'source': 'redhat-operators', 'approval': 'Automatic', 'pin_csv': False, 'floor': '4.16.0',
        'crds': ('nodefeaturediscoveries.nfd.openshift.io',)}),
    MappingProxyType({
        'key': 'sriov', 'title': 'SR-IOV Network Operator', 'namespace': 'openshift-sriov-network-operator',
        'namespace_labels': MappingProxyType({}),
        'namespace_annotations': MappingProxyType({'workload.openshift.io/allowed': 'management'}),
        'operator_group': 'sriov-network-operators', 'subscription': 'sriov-network-operator-subscription',
        'package': 'sriov-network-operator', 'channel': 'stable', 'source': 'redhat-operators',
        'approval': 'Automatic', 'pin_csv': False, 'floor': '4.16.0',
        'crds': ('sriovoperatorconfigs.sriovnetwork.openshift.io', 'sriovnetworknodepolicies.sriovnetwork.openshift.io',
                 'sriovnetworks.sriovnetwork.openshift.io', 'sriovibnetworks.sriovnetwork.openshift.io',
                 'sriovnetworknodestates.sriovnetwork.openshift.io')}),
    MappingProxyType({
        'key': 'network_operator', 'title': 'NVIDIA Network Operator', 'namespace': 'nvidia-network-operator',
        'namespace_labels': MappingProxyType({}), 'namespace_annotations': MappingProxyType({}),
        # NVIDIA shows no OperatorGroup; its bundle supports OwnNamespace/SingleNamespace only (§1).
        'operator_group': 'nvidia-network-operator', 'subscription': 'nvidia-network-operator',
        'package': 'nvidia-network-operator', 'channel': None, 'source': 'certified-operators',
        'approval': 'Automatic', 'pin_csv': False, 'floor': '24.10.0',
        'crds': ('nicclusterpolicies.mellanox.com', 'macvlannetworks.mellanox.com', 'hostdevicenetworks.mellanox.com',
                 'ipoibnetworks.mellanox.com')}),
    MappingProxyType({
        'key': 'gpu_operator', 'title': 'NVIDIA GPU Operator', 'namespace': 'nvidia-gpu-operator',
        'namespace_labels': MappingProxyType({}), 'namespace_annotations': MappingProxyType({}),
        'operator_group': 'nvidia-gpu-operator-group', 'subscription': 'gpu-operator-certified',
        'package': 'gpu-operator-certified', 'channel': None, 'source': 'certified-operators',
        'approval': 'Manual', 'pin_csv': True, 'floor': '24.9.0',
        'crds': ('clusterpolicies.nvidia.com',)}),
)

# OLM phases [OLM]: the CSV phases that are still on their way, and the InstallPlan's.
CSV_PENDING_PHASES = ('', 'Pending', 'InstallReady', 'Installing', 'Replacing')
CSV_SUCCEEDED = 'Succeeded'
INSTALLPLAN_PENDING_PHASES = ('', 'Planning', 'RequiresApproval', 'Installing')

# §2 NodeFeatureDiscovery.
NFD_INSTANCE = MappingProxyType({
    'name': 'nfd-instance', 'service_port': 12000,
    'pci_device_classes': ('02', '03', '0200', '0207', '12'), 'pci_label_fields': ('vendor',),
    'sleep_interval': '60s'})
NODE_LABELS = MappingProxyType({
    'mellanox': 'feature.node.kubernetes.io/pci-15b3.present',
    'mellanox_sriov': 'feature.node.kubernetes.io/pci-15b3.sriov.capable',
    'nvidia_gpu': 'feature.node.kubernetes.io/pci-10de.present',
    'mofed_wait': 'network.nvidia.com/operator.mofed.wait',
    'worker': 'node-role.kubernetes.io/worker'})
# Every label NFD writes has this prefix (its feature.node.kubernetes.io namespace); none exists before NFD runs.
NFD_LABEL_PREFIX = 'feature.node.kubernetes.io/'

# §3 SriovOperatorConfig.
SRIOV_OPERATOR_CONFIG = MappingProxyType({'name': 'default', 'enableInjector': True, 'enableOperatorWebhook': True,
                                          'logLevel': 2, 'disableDrain': False})
SRIOV_RESOURCE_PREFIX = 'openshift.io'

# §4 NicClusterPolicy: the one name the Network Operator reconciles, and the chapter's image pins.
NIC_CLUSTER_POLICY_NAME = 'nic-cluster-policy'
NIC_IMAGES = MappingProxyType({
    'ofedDriver': ('doca-driver', 'nvcr.io/nvidia/mellanox', '24.10-0.7.0.0-0'),
    'rdmaSharedDevicePlugin': ('k8s-rdma-shared-dev-plugin', 'ghcr.io/mellanox', 'v1.5.1'),
    'sriovDevicePlugin': ('sriov-network-device-plugin', 'ghcr.io/k8snetworkplumbingwg', 'v3.7.0'),
    'ipoib': ('ipoib-cni', 'ghcr.io/mellanox', 'v1.2.0'),
})
RDMA_HCA_MAX = 63
RDMA_SHARED_PREFIX = 'rdma'
HOSTDEV_PREFIX = 'nvidia.com'

# §5 GPU Operator ClusterPolicy.
CLUSTER_POLICY_NAME = 'gpu-cluster-policy'

# §8 MachineConfigs (all optional except the CRI-O memlock one, which the chapter requires before pods).
MACHINE_CONFIG_ROLE_LABEL = 'machineconfiguration.openshift.io/role'
MACHINE_CONFIGS = MappingProxyType({
    'irdma_blacklist': MappingProxyType({'name': '99-worker-blacklist-irdma', 'kernel_arguments': ('module_blacklist=irdma',)}),
    'persistent_nic_names': MappingProxyType({'name': '99-machine-config-udev-network',
                                              'path': '/etc/udev/rules.d/70-persistent-net.rules'}),
    'crio_memlock': MappingProxyType({'name': '02-worker-container-runtime', 'path': '/etc/crio/crio.conf.d/10-custom',
                                      'contents': '[crio.runtime]\ndefault_ulimits = ["memlock=-1:-1"]\n'}),
})
IGNITION_VERSION = '3.2.0'

# §9 the six configurations.  ``derived``: not shown by the chapter, built from NVIDIA's and Red Hat's
# other documents (§9, §11).  ``ipam``: the chapter's whereabouts range (a default; each distinct, so
# switching methods never reuses a live range); ``interface``: the PF the method attaches to.
CHAPTER_EXCLUDES = ('192.168.{n}.229/30', '192.168.{n}.236/32')
METHODS = ('shared_device', 'host_device', 'sriov_legacy')
LINKS = ('roce', 'infiniband')
CONFIGURATIONS = MappingProxyType({
    ('shared_device', 'roce'): MappingProxyType({
        'derived': False, 'network_kind': 'MacvlanNetwork', 'network_name': 'rdmashared-net',
        'interface': 'ens8f0np0', 'resource': 'rdma/rdma_shared_device_eth', 'nic_parts': ('ofedDriver', 'rdmaSharedDevicePlugin'),
        'ipam': MappingProxyType({'range': '192.168.2.0/24', 'gateway': '192.168.2.1', 'exclude': ()})}),
    ('shared_device', 'infiniband'): MappingProxyType({
        'derived': False, 'network_kind': 'IPoIBNetwork', 'network_name': 'example-ipoibnetwork',
        'interface': 'ibs2f0', 'resource': 'rdma/rdma_shared_device_ib',
        'nic_parts': ('ofedDriver', 'rdmaSharedDevicePlugin', 'ipoib'),
        'ipam': MappingProxyType({'range': '192.168.6.225/28', 'gateway': None,
                                  'exclude': ('192.168.6.229/30', '192.168.6.236/32')})}),
    ('host_device', 'roce'): MappingProxyType({
        'derived': False, 'network_kind': 'HostDeviceNetwork', 'network_name': 'hostdev-net',
        'interface': 'ens8f0np0', 'resource': 'nvidia.com/hostdev', 'link_type': None,
        'nic_parts': ('ofedDriver', 'sriovDevicePlugin'),
        'ipam': MappingProxyType({'range': '192.168.3.225/28', 'gateway': None,
                                  'exclude': ('192.168.3.229/30', '192.168.3.236/32')})}),
    ('host_device', 'infiniband'): MappingProxyType({
        # derived: NNO sees no difference between Ethernet and IB; linkTypes keeps the IB ports in their
        # own pool, spelled as the kernel reports it ([DP], §11).
        'derived': True, 'network_kind': 'HostDeviceNetwork', 'network_name': 'hostdev-ib-net',
        'interface': 'ibs2f0', 'resource': 'nvidia.com/hostdev', 'link_type': 'infiniband',
        'nic_parts': ('ofedDriver', 'sriovDevicePlugin'),
        'ipam': MappingProxyType({'range': '192.168.5.225/28', 'gateway': None,
                                  'exclude': ('192.168.5.229/30', '192.168.5.236/32')})}),
    ('sriov_legacy', 'roce'): MappingProxyType({
        'derived': False, 'network_kind': 'SriovNetwork', 'network_name': 'sriov-network',
        'interface': 'ens8f0np0', 'resource': 'openshift.io/sriovlegacy', 'nic_parts': ('ofedDriver',),
        'policy': MappingProxyType({'name': 'sriov-legacy-policy', 'resourceName': 'sriovlegacy', 'numVfs': 8,
                                    'linkType': None, 'mtu': 1500, 'priority': 90}),
        # §13: the chapter's SriovNetwork repeats hostdev-net's range; §5.10 shows 192.168.4.x addresses.
        'ipam': MappingProxyType({'range': '192.168.4.225/28', 'gateway': None,
                                  'exclude': ('192.168.4.229/30', '192.168.4.236/32')})}),
    ('sriov_legacy', 'infiniband'): MappingProxyType({
        'derived': True, 'network_kind': 'SriovIBNetwork', 'network_name': 'sriov-ib-network',
        'interface': 'ibs2f0', 'resource': 'openshift.io/sriovlegacyib', 'nic_parts': ('ofedDriver',),
        'policy': MappingProxyType({'name': 'sriov-legacy-ib-policy', 'resourceName': 'sriovlegacyib', 'numVfs': 8,
                                    'linkType': 'IB', 'mtu': 1500, 'priority': 90}),
        'ipam': MappingProxyType({'range': '192.168.7.225/28', 'gateway': None,
                                  'exclude': ('192.168.7.229/30', '192.168.7.236/32')})}),
})
NETWORK_NAMESPACE = 'default'
# OpenShift's default cluster and service networks (install-config defaults): a secondary range must
# not overlap them.
RESERVED_RANGES = ('10.128.0.0/14', '172.30.0.0/16')

# §9 test pods and §10 the ib_write_bw check.
TEST_POD_IMAGE = 'quay.io/edge-infrastructure/nvidia-tools:0.1.5'
IB_WRITE_BW = '/root/perftest/ib_write_bw'
IB_WRITE_BW_FLAGS = ('-R', '-T', '41', '-s', '65536', '-F', '-x', '3', '-m', '4096', '--report_gbits', '-q', '16',
                     '-D', '60')
IB_WRITE_BW_PORT = 10000
# Verdict: BW average at least this fraction of the link rate (the chapter's run: 180.47 of 200 Gb/s,
# 0.90; it states no number itself, §10).  The link rate is given or read from ibstat's "Rate".
PROOF_THRESHOLD_FRACTION = 0.75
DEFAULT_LINK_GBPS = 200

# Timeouts (seconds) per wait: driver builds and reboots take far longer than kubernetes.core's 120 s.
TIMEOUTS = MappingProxyType({'olm': 600, 'crd': 120, 'nfd': 600, 'nic_cluster_policy': 1800, 'cluster_policy': 1800,
                             'sriov_sync': 3600, 'machine_config_pool': 3600, 'network': 300, 'pods': 600})
