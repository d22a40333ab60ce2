# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every fact in the catalog (plugins/module_utils/catalog/) checked against the text it came from.

Seed facts are checked against verbatim copies of the seed manuals in tests/unit/seeds/ (the
requirements). Facts that come from design.md / references.md (public known-good version pairs,
NCCL thresholds, OLM names, RDMA MTU) are checked against DESIGN_SOURCES below, which quotes them.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import os
import re
import shlex
import sys
import types

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute, families, gke, host_stacks, openshift
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links
from ansible_collections.aiinfra.gpudirect.plugins.module_utils import errors, image_reference

CATALOG = (families, compute, host_stacks, gke, openshift)
# The catalog's modules as one namespace: the seed checks below read facts from all of them.
F = types.SimpleNamespace(**{name: value for module in (links,) + CATALOG for name, value in vars(module).items()
                             if not name.startswith('__')})

SEED_DIR = os.path.join(os.path.dirname(__file__), '..', '..', 'seeds')


def _load(prefix):
    names = [n for n in os.listdir(SEED_DIR) if n.startswith(prefix + '_') and n.endswith('.txt')]
    assert len(names) == 1, 'expected one seed %s_*.txt in %s' % (prefix, SEED_DIR)
    with open(os.path.join(SEED_DIR, names[0]), encoding='utf-8') as handle:
        return handle.read()


S000, S001, S003, S004 = _load('000'), _load('001'), _load('003'), _load('004')


def between(text, start, end=None, after=None):
    """The text from the first ``start`` (after ``after``, if given) up to the next ``end``."""
    offset = text.index(after) if after else 0
    begin = text.index(start, offset)
    stop = text.index(end, begin + len(start)) if end else len(text)
    return text[begin:stop]


def norm(text):
    """Join backslash continuations and collapse runs of blanks (the seeds pad some options)."""
    return re.sub(r'[ \t]+', ' ', re.sub(r'\\\n\s*', ' ', text))


def assert_in(needle, haystack, what):
    assert norm(needle) in norm(haystack), '%s: %r not found in the seed text' % (what, needle)


# Seed 000 sections (Compute Engine)
S000_TCPXO = between(S000, 'A3 Mega インスタンスを作成する（GPUDirect-TCPXO）', 'A3 High インスタンスと Edge インスタンスを作成する（GPUDirect-TCPX）')
S000_TCPX = between(S000, 'A3 High インスタンスと Edge インスタンスを作成する（GPUDirect-TCPX）', 'マルチインスタンス GPU')
S000_HOST = {F.TCPXO: S000_TCPXO, F.TCPX: S000_TCPX}
S000_NETWORKS = between(S000, 'VPC ネットワークを設定する', 'A3 Mega インスタンスを作成する（GPUDirect-TCPXO）', after='概要\n\nGPUDirect')
# Seed 003 sections (GKE)
S003_REQ = {F.TCPX: between(S003, 'GPUDirect-TCPX es compatible', 'GPUDirect-TCPXO es compatible'),
            F.TCPXO: between(S003, 'GPUDirect-TCPXO es compatible', 'Tus nodos de GPU')}
S003_ENV = {F.TCPXO: between(S003, 'GPUDirect-TCPXO\n\n## required', 'GPUDirect-TCPX\n\n## required'),
            F.TCPX: between(S003, 'GPUDirect-TCPX\n\n## required', 'Agrega GPUDirect a tus manifiestos')}
S003_POD = {F.TCPXO: between(S003, 'GPUDirect-TCPXO\n\nAgrega las siguientes anotaciones', 'GPUDirect-TCPX\n\nAgrega las siguientes anotaciones'),
            F.TCPX: between(S003, 'GPUDirect-TCPX\n\nAgrega las siguientes anotaciones', '¿Qué sigue?')}
S003_ENV_SETUP = {F.TCPXO: between(S003, 'GPUDirect-TCPXO\n\nElige una versión', 'GPUDirect-TCPX\n\nCrea un clúster estándar'),
                  F.TCPX: between(S003, 'GPUDirect-TCPX\n\nCrea un clúster estándar', 'Instala el objeto binario de GPUDirect')}
S003_INSTALL = {F.TCPXO: between(S003, 'GPUDirect-TCPXO\n\nRevisa el manifiesto de nccl-tcpxo-installer', 'GPUDirect-TCPX\n\nRevisa'),
                F.TCPX: between(S003, 'GPUDirect-TCPX\n\nRevisa el manifiesto de nccl-tcpx-installer', 'Implementa el complemento del inyector')}
S003_TEST = {F.TCPXO: between(S003, 'GPUDirect-TCPXO\n\nEsta carga de trabajo', 'GPUDirect-TCPX\n\nEsta carga'),
             F.TCPX: between(S003, 'GPUDirect-TCPX\n\nEsta carga de trabajo', 'Usa la configuración de NCCL')}

# Facts whose source is design.md / references.md, not a seed. Each row quotes its source.
DESIGN_SOURCES = {
    'nccl_references': {
        # The example outputs of GoogleCloudPlatform/cluster-toolkit v1.95.0 (commit 1047080375afbb44da4b596be314634e7486af4a),
        # 2-node all_gather, the larger of out-of-place / in-place busbw (GB/s) at 512 MiB, 1 GiB, 8 GiB (None: the sweep stops
        # earlier, the curve's last point holds above it):
        # examples/gke-a3-megagpu/README.md step 5: "536870912 ... 174.76 ... 175.23", "1073741824 ... 182.00 ... 183.38",
        # "8589934592 ... 188.73 ... 188.90";
        'a3-megagpu-8g': ('examples/gke-a3-megagpu/README.md', (175.23, 183.38, 188.90), None),
        # examples/gke-a3-highgpu/multi-node-test-plan.md: "536870912 ... 70.90 ... 71.35" (its sweep ends there);
        'a3-highgpu-8g': ('examples/gke-a3-highgpu/multi-node-test-plan.md', (71.35, None, None), None),
        # examples/gke-consumption-options/dws-flex-start/README.md: "536870912 ... 316.60 ... 319.33",
        # "1073741824 ... 324.13 ... 327.98", "8589934592 ... 328.85 ... 335.67".
        'a3-ultragpu-8g': ('examples/gke-consumption-options/dws-flex-start/README.md', (319.33, 327.98, 335.67), None),
        # No source publishes A3 Edge figures: derived from the family with the same stack and NICs, and marked so.
        'a3-edgegpu-8g': ('examples/gke-a3-highgpu/multi-node-test-plan.md', (71.35, None, None), 'a3-highgpu-8g'),
        # cluster-toolkit's main branch at 2c54caab14d8822f2fa91dd388f0eb5a6c3833fc (v1.95.0 printed XXX.XX there),
        # examples/gke-a4/README.md: "536870912 ... 345.61 ... 348.07", "1073741824 ... 358.32 ... 361.02",
        # "8589934592 ... 366.29 ... 374.57".
        'a4-highgpu-8g': ('examples/gke-a4/README.md', (348.07, 361.02, 374.57), None),
    },
    # Data NICs x Gb/s: A3 High/Edge 4 x 200, A3 Mega 8 x 200 (seed 000 / seed 003 "hasta 200 Gbps"), A3 Ultra / A4 8 x 400
    # (seed 001's 3.2 Tbps over 8 CX7 NICs).
    'line_rate_gbps': {'a3-megagpu-8g': 1600, 'a3-highgpu-8g': 800, 'a3-edgegpu-8g': 800, 'a3-ultragpu-8g': 3200, 'a4-highgpu-8g': 3200},
    'version_pairs': {
        # design.md: "public manifests pair RxDM v1.0.21 with plugin v1.0.15"; references.md
        # "Known-good pairs: RxDM v1.0.21 with plugin v1.0.15 (Jan 2026); TCPX RxDM v2.0.12 with
        # plugin v3.1.9". Repositories: container-engine-accelerators release notes
        # (gpudirect-tcpxo, gpudirect-tcpx/README.md "Feb 15, 2024").
        (F.TCPXO, 'us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21',
         'us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15'),
        (F.TCPX, 'us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12',
         'us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9'),
    },
    # design.md table: "a3-ultragpu-8g ... RDMA (RoCE, CX7) | 8 RDMA + gVNIC | 8896" (same for A4).
    'rdma_mtu': 8896,
    # design.md table: a4-highgpu-8g "8x B200 (nvidia-b200)"; a3-ultragpu-8g "8x H200 141GB".
    'rdma_gpu_models': {'a3-ultragpu-8g': ('NVIDIA H200', 141), 'a4-highgpu-8g': ('NVIDIA B200', None)},
    # references.md "OpenShift GPUDirect RDMA": "Operators through OLM Subscriptions: nfd (openshift-nfd,
    # redhat-operators), sriov-network-operator (openshift-sriov-network-operator, redhat-operators),
    # nvidia-network-operator (nvidia-network-operator, certified-operators), gpu-operator-certified
    # (nvidia-gpu-operator, certified-operators). NFD must label feature.node.kubernetes.io/pci-15b3.present=true."
    'olm': (('nfd', 'openshift-nfd', 'redhat-operators'),
            ('sriov-network-operator', 'openshift-sriov-network-operator', 'redhat-operators'),
            ('nvidia-network-operator', 'nvidia-network-operator', 'certified-operators'),
            ('gpu-operator-certified', 'nvidia-gpu-operator', 'certified-operators')),
    'nfd_label': 'feature.node.kubernetes.io/pci-15b3.present',
    'mellanox_vendor_id': '15b3',
}

FAMILY_NAMES = sorted(F.FAMILIES)
GCE_FAMILIES = [n for n in FAMILY_NAMES if F.GCE in F.FAMILIES[n].platforms]
GKE_FAMILIES = [n for n in FAMILY_NAMES if F.FAMILIES[n].gke_accelerator]
TCP_TECHS = [F.TCPXO, F.TCPX]


# ---------------------------------------------------------------------------------------------
# The module itself
# ---------------------------------------------------------------------------------------------

# The collection's own standard-library modules the catalog may import (each checked here too).
STDLIB_ONLY = ('ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.links',
               'ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors',
               'ansible_collections.aiinfra.gpudirect.plugins.module_utils.image_reference')


@pytest.mark.parametrize('module', CATALOG + (links, errors, image_reference), ids=lambda m: m.__name__.rsplit('.', 1)[-1])
def test_module_is_python38_and_stdlib_only(module):
    with open(module.__file__, encoding='utf-8') as handle:
        source = handle.read()
    tree = ast.parse(source, feature_version=(3, 8))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module.startswith('%s.catalog.' % 'ansible_collections.aiinfra.gpudirect.plugins.module_utils') or \
                    node.module in STDLIB_ONLY:
                continue  # the catalog's own modules and STDLIB_ONLY (each is checked here too)
            imported.add(node.module.split('.')[0])
    assert imported <= set(sys.stdlib_module_names) | {'__future__'}, imported
    # No match statements and no PEP 604 unions (``X | None``) in annotations, which 3.8 cannot evaluate.
    assert not [n for n in ast.walk(tree) if type(n).__name__ == 'Match']
    annotations = [n.annotation for n in ast.walk(tree) if isinstance(n, (ast.AnnAssign, ast.arg)) and n.annotation is not None]
    assert not [a for a in annotations for n in ast.walk(a) if isinstance(n, ast.BinOp)]


def test_catalog_is_immutable():
    with pytest.raises(TypeError):
        F.FAMILIES['x'] = None  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        F.FAMILIES['a3-megagpu-8g'].mtu = 1500  # type: ignore[misc]
    env = F.nccl_env(F.TCPXO)
    env['NCCL_ALGO'] = 'changed'
    assert F.nccl_env(F.TCPXO)['NCCL_ALGO'] == 'Ring,Tree'
    assert all(hash(f) is not None for f in F.FAMILIES.values())


# ---------------------------------------------------------------------------------------------
# Families
# ---------------------------------------------------------------------------------------------

def test_family_set():
    """Exactly the machine types the seeds name as GPUDirect-capable."""
    assert FAMILY_NAMES == ['a3-edgegpu-8g', 'a3-highgpu-8g', 'a3-megagpu-8g', 'a3-ultragpu-8g', 'a4-highgpu-8g']
    assert 'a4x' not in S000 + S001 + S003 + S004
    for name in FAMILY_NAMES:
        assert name in S000 + S001


@pytest.mark.parametrize('name', FAMILY_NAMES)
def test_family_technology(name):
    fam = F.FAMILIES[name]
    assert fam.machine_type == name
    if fam.technology == F.TCPXO:
        assert_in('GPUDirect-TCPXO: 8 個の H100 GPU を搭載した A3 Mega（%s）' % name, S000, name)
    elif fam.technology == F.TCPX:
        assert name in between(S000, 'GPUDirect-TCPX: ', '\n')
    else:
        assert_in('a3-ultragpu-8g マシンタイプと a4-highgpu-8g マシンタイプでのみ使用できます', S001, name)
        assert name in ('a3-ultragpu-8g', 'a4-highgpu-8g')


@pytest.mark.parametrize('name', GCE_FAMILIES)
def test_gce_family_seed_000(name):
    fam = F.FAMILIES[name]
    section = S000_HOST[fam.technology]
    first_create = between(section, 'gcloud compute instances create', '次のように置き換えます')
    mgmt = first_create.count('--network-interface=nic-type=GVNIC,network=NETWORK_NAME_PREFIX-mgmt-net')
    data = first_create.count('--network-interface=nic-type=%s,network=NETWORK_NAME_PREFIX-data-net-' % fam.data_nic_type)
    assert (mgmt, data) == (fam.management_nic_count, fam.data_nic_count)
    assert fam.management_nic_type == F.GVNIC
    assert first_create.count(',no-address') == fam.data_nic_count and not F.DATA_NIC_EXTERNAL_ADDRESS
    assert F.MGMT_NIC_EXTERNAL_ADDRESS and 'NETWORK_NAME_PREFIX-mgmt-sub \\' in first_create
    if fam.technology == F.TCPXO:
        assert_in('--machine-type=%s' % name, first_create, 'machine type')
    else:
        assert_in('a3-highgpu-8g または a3-edgegpu-8g を指定します', section, 'machine type')
    assert_in('--mtu=%d' % fam.mtu, S000_NETWORKS, 'mtu')
    for flag in ('--image-family=%s' % fam.image_family, '--image-project=%s' % fam.image_project,
                 '--metadata=%s' % ','.join('%s=%s' % kv for kv in fam.metadata),
                 '--scopes=%s' % ','.join(fam.scopes), '--maintenance-policy=%s' % F.ON_HOST_MAINTENANCE,
                 '--restart-on-failure'):
        assert_in(flag, first_create, flag)
    assert F.AUTOMATIC_RESTART is True
    assert fam.image_family is F.COS_IMAGE_FAMILY and fam.metadata is F.GCE_METADATA and fam.scopes is F.GCE_SCOPES
    assert_in('208 個の vCPU と最大 1,872 GB のメモリ', S000, 'vcpus/memory')
    assert (fam.vcpus, fam.memory_gb) == (208, 1872)
    assert_in('GPU あたり %d GB の GPU メモリ' % fam.gpu_memory_gb, S000, 'gpu memory')
    assert_in('%d 個の %s GPU' % (fam.gpu_count, fam.gpu_model), S000, 'gpu model/count')
    assert_in('最大 %d つのマルチインスタンス GPU' % fam.mig_max_instances, S000, 'MIG')
    assert_in('各マルチインスタンス GPU に %d GB のメモリ' % fam.mig_instance_memory_gb, S000, 'MIG memory')
    assert_in('cada una de las cuales admite hasta %d Gbps' % fam.nic_bandwidth_gbps, S003, 'NIC bandwidth')


@pytest.mark.parametrize('name', GCE_FAMILIES)
def test_gce_family_data_networks(name):
    fam = F.FAMILIES[name]
    block = between(S000_NETWORKS, 'A3 High と A3 Edge' if fam.technology == F.TCPX else 'A3 Mega には', 'done')
    assert_in('for N in $(seq 1 %d)' % fam.data_nic_count, block, 'data network count')
    if fam.technology == F.TCPX:
        assert fam.min_gvnic_driver == '1.4.0rc3'
        assert_in('gVNIC ドライバのバージョン %s 以降' % fam.min_gvnic_driver, S000_TCPX, 'gVNIC driver')
    else:
        assert_in('9 つの Google Virtual NIC（gVNIC）', S000_TCPXO, 'nic count')
        assert fam.nic_count == 9


@pytest.mark.parametrize('name', GCE_FAMILIES)
def test_provisioning_models(name):
    fam = F.FAMILIES[name]
    section = S000_HOST[fam.technology]
    assert fam.provisioning_models[0] == F.STANDARD  # the 標準 tab: no --provisioning-model (API default)
    assert '標準\n\ngcloud compute instances create' in section
    for model in fam.provisioning_models[1:]:
        assert_in('--provisioning-model=%s' % model, section, model)
    if name == 'a3-edgegpu-8g':
        # Seed 000 says A3 Edge does not take RESERVATION_BOUND; Google's current reservation-bound page
        # (about-reservation-bound-instances) lists A3 Edge: the two disagree, so the model is disputed (issue 24 item 6).
        assert_in('予約型プロビジョニングモデルでは、a3-edgegpu-8g マシンタイプはサポートされていません', section, 'edge')
        assert 'about-reservation-bound-instances' in inspect.getsource(families)
        assert [model for model, _why in fam.disputed_provisioning_models] == [F.RESERVATION_BOUND]
    assert fam.reservation_bound_allowed is True and F.RESERVATION_BOUND in fam.provisioning_models


@pytest.mark.parametrize('model', sorted(F.PROVISIONING_MODELS))
def test_provisioning_model_flags(model):
    spec = F.PROVISIONING_MODELS[model]
    if model == F.STANDARD:
        block = between(S000_TCPXO, '標準\n\n', '次のように置き換えます')
        assert '--provisioning-model' not in block and '--instance-termination-action' not in block
        return
    block = between(S000_TCPXO, '--provisioning-model=%s' % model, '次のように置き換えます')
    assert ('--instance-termination-action=TERMINATION_ACTION' in block) == spec.termination_action_required
    assert ('--max-run-duration=RUN_DURATION' in block) == spec.max_run_duration_required
    assert ('--request-valid-for-duration=VALID_FOR_DURATION' in block) == spec.request_valid_for_duration_required
    assert ('--reservation=RESERVATION_URL' in block) == spec.reservation_required
    if spec.reservation_affinity:
        assert '--reservation-affinity=%s' % spec.reservation_affinity in block
    else:
        assert '--reservation-affinity' not in block


def test_provisioning_constants():
    for action in F.TERMINATION_ACTIONS:
        assert_in('- VM を%sするには: %s' % ('停止' if action == 'STOP' else '削除', action), S000, action)
    assert F.MAX_RUN_DURATION_RANGE == ('10m', '7d') and '10 分～7 日' in S000
    lo, hi = F.REQUEST_VALID_FOR_DURATION_RANGE
    assert_in('90 秒（%s）から 2 時間（%s）' % (lo, hi), S000, 'valid-for')
    assert_in('0 秒（%s）' % F.REQUEST_VALID_FOR_DURATION_ANY_ZONE, S000, 'any zone')


def test_gce_network_layout():
    net = F.GCE_NETWORK
    p = 'NETWORK_NAME_PREFIX'
    literal = {
        'subnet_mode': '--subnet-mode=%s' % net['subnet_mode'],
        'mgmt_network': 'networks create %s' % net['mgmt_network'].format(prefix=p),
        'mgmt_subnet': 'subnets create %s' % net['mgmt_subnet'].format(prefix=p),
        'mgmt_subnet_range': '--range=%s' % net['mgmt_subnet_range'],
        'mgmt_internal_rule': 'firewall-rules create %s' % net['mgmt_internal_rule'].format(prefix=p),
        'mgmt_ssh_rule': 'firewall-rules create %s' % net['mgmt_ssh_rule'].format(prefix=p),
        'mgmt_ping_rule': 'firewall-rules create %s' % net['mgmt_ping_rule'].format(prefix=p),
        'data_network': 'networks create %s' % net['data_network'].format(prefix=p, n='$N'),
        'data_subnet': 'subnets create %s' % net['data_subnet'].format(prefix=p, n='$N'),
        'data_subnet_range': '--range=%s' % net['data_subnet_range'].format(n='$N'),
        'data_internal_rule': 'firewall-rules create %s' % net['data_internal_rule'].format(prefix=p, n='$N'),
        'internal_rules': '--rules=%s \\\n    --source-ranges=%s' % (net['internal_rules'], net['internal_source_range']),
        'internal_source_range': '--source-ranges=%s' % net['internal_source_range'],
        'ssh_rules': '--rules=%s \\\n    --source-ranges=SSH_SOURCE_IP_RANGE' % net['ssh_rules'],
        'ping_rules': '--rules=%s \\\n    --source-ranges=%s' % (net['ping_rules'], net['ping_source_range']),
        'ping_source_range': '--source-ranges=%s' % net['ping_source_range'],
    }
    assert set(literal) == set(net), 'every GCE_NETWORK key needs a seed check'
    for key, text in literal.items():
        assert_in(text, S000_NETWORKS, key)


def test_network_interfaces_are_the_seed_nic_flags():
    """The (network, subnet) pairs in NIC order, as seed 000's A3 Mega create command lists them."""
    pairs = F.network_interfaces('NETWORK_NAME_PREFIX', 8)
    flags = re.findall(r'--network-interface=nic-type=GVNIC,network=([^,]+),subnet=([^, \\]+)', S000)
    assert pairs == flags[:9] and len(pairs) == 9
    assert F.data_subnet_ranges(8) == ['192.168.%d.0/24' % n for n in range(1, 9)]
    assert '--range=192.168.$N.0/24' in S000


@pytest.mark.parametrize('name', GKE_FAMILIES)
def test_gke_accelerator(name):
    fam = F.FAMILIES[name]
    if fam.technology in TCP_TECHS:
        assert_in('--machine-type=%s' % name, S003_ENV_SETUP[fam.technology], 'machine type')
        assert_in('--accelerator=type=%s,count=%d,gpu-driver-version=%s' % (fam.gke_accelerator, fam.gpu_count, F.GKE_GPU_DRIVER_VERSION),
                  S003_ENV_SETUP[fam.technology], 'accelerator')
        assert_in('--mtu=%d' % fam.mtu, S003, 'mtu')
    else:
        assert_in('ACCELERATOR_TYPE: アクセラレータ タイプ（nvidia-h200-141gb、nvidia-b200 など）', S001, 'accelerators')
        assert fam.gke_accelerator in S001
        model, memory = DESIGN_SOURCES['rdma_gpu_models'][name]
        assert (fam.gpu_model, fam.gpu_memory_gb) == (model, memory)
        assert model.split()[-1].lower() in fam.gke_accelerator
        if memory:
            assert fam.gke_accelerator.endswith('-%dgb' % memory)
        assert fam.gpu_count == 8 and 'ACCELERATOR_COUNT: アクセラレータの数（8 など）' in S001


@pytest.mark.parametrize('name', [n for n in FAMILY_NAMES if F.FAMILIES[n].technology == F.RDMA])
def test_rdma_family_seed_001(name):
    fam = F.FAMILIES[name]
    assert fam.platforms == (F.GKE,)
    advanced = between(S001, '高度な構成', '次のステップ')
    gvnic = advanced.count('--additional-node-network network=${GVNIC_NETWORK_PREFIX}-net')
    rdma = advanced.count('--additional-node-network network=${RDMA_NETWORK_PREFIX}-net')
    assert (gvnic + 1, rdma) == (fam.management_nic_count, fam.data_nic_count)  # +1: the node's primary NIC
    assert fam.data_nic_type == F.MRDMA and 'mrdma.google.com' in S001
    assert fam.mtu == DESIGN_SOURCES['rdma_mtu']
    assert_in('%s Tbps' % (fam.line_rate_gbps / 1000.0), S001, 'fabric')
    assert (fam.vcpus, fam.memory_gb, fam.provisioning_models, fam.reservation_bound_allowed, fam.image_family) == (None,) * 5
    if name == 'a3-ultragpu-8g':
        tf = between(S001, 'machine_type = "a3-ultragpu-8g"', 'gpudirect_strategy')
        assert 'type  = "%s"' % fam.gke_accelerator in tf
        assert re.search(r'local_ssd_count = %d\b' % fam.local_ssd_count, tf)
    else:
        assert fam.local_ssd_count is None


# The revision of cluster-toolkit a family's curve is copied from, where it is not v1.95.0.
CLUSTER_TOOLKIT_REVISIONS = {'a4-highgpu-8g': ('main at 2c54caa', '2c54caab14d8822f2fa91dd388f0eb5a6c3833fc')}


@pytest.mark.parametrize('name', FAMILY_NAMES)
def test_nccl_references(name):
    fam = F.FAMILIES[name]
    path, (at_512m, at_1g, at_8g), derived = DESIGN_SOURCES['nccl_references'][name]
    ref = fam.nccl_reference('all_gather')
    assert [r.collective for r in fam.nccl_references] == ['all_gather'] and (ref.nodes, ref.gpus_per_node) == (2, 8)
    label, commit = CLUSTER_TOOLKIT_REVISIONS.get(name, ('v1.95.0', '1047080375afbb44da4b596be314634e7486af4a'))
    assert ref.source == 'cluster-toolkit %s %s' % (label, path)
    assert ref.url == 'https://github.com/GoogleCloudPlatform/cluster-toolkit/blob/%s/%s' % (commit, path)
    points = dict(ref.points)
    assert points[512 << 20] == at_512m and points.get(1 << 30) == at_1g and points.get(8 << 30) == at_8g
    assert ref.points == tuple(sorted(ref.points)) and ref.points[0][0] == 64 << 20
    assert (ref.derived_from or '').split(' ')[0] == (derived or '')
    if derived:
        assert ref.points == F.FAMILIES[derived].nccl_reference('all_gather').points
    assert fam.line_rate_gbps == DESIGN_SOURCES['line_rate_gbps'][name]
    assert max(busbw for _size, busbw in ref.points) < fam.line_rate_gbps / 8.0   # a published run stays under the line rate


@pytest.mark.parametrize('name', [n for n in FAMILY_NAMES if F.FAMILIES[n].data_interface_names])
def test_data_interface_names(name):
    fam = F.FAMILIES[name]
    assert len(fam.data_interface_names) == fam.data_nic_count
    joined = ','.join(fam.data_interface_names)
    assert joined in F.HOST_STACKS[fam.technology].nccl_test_command
    assert ' %s ' % joined in S000_HOST[fam.technology]


# ---------------------------------------------------------------------------------------------
# COS host stacks (seed 000)
# ---------------------------------------------------------------------------------------------

def _docker_runs(section):
    """Every ``docker run`` of a seed section, as shell words after ``docker run``."""
    text = re.sub(r'\\\n', ' ', section)
    runs = []
    for match in re.finditer(r'docker run ([^\n]*)', text):
        runs.append(shlex.split(match.group(1)))
    return runs


def _parse_run(words):
    spec = dict(name=None, devices=[], volumes=[], env=[], privileged=False, network_host=False, cap_add=[],
                entrypoint=None, shm_size=None, ulimits=[], user=None, userns_host=False, pull_always=False,
                detach=False, auto_remove=False, interactive=False)
    i = 0
    while i < len(words) and words[i].startswith('-'):
        word = words[i]
        opt, dummy, val = word.partition('=')
        takes = opt in ('--name', '--volume', '-v', '--device', '--env', '--entrypoint', '--ulimit', '-u', '--shm-size',
                        '--network', '--cap-add', '--pull', '--userns')
        if takes and not val:
            i += 1
            val = words[i]
        if opt == '--name':
            spec['name'] = val
        elif opt in ('--volume', '-v'):
            spec['volumes'].append(val)
        elif opt == '--device':
            host, dummy, ctr = val.partition(':')
            assert host == ctr, val
            spec['devices'].append(host)
        elif opt == '--env':
            spec['env'].append(tuple(val.split('=', 1)))
        elif opt == '--entrypoint':
            spec['entrypoint'] = val
        elif opt == '--ulimit':
            spec['ulimits'].append(tuple(val.split('=', 1)))
        elif opt == '-u':
            spec['user'] = val
        elif opt == '--shm-size':
            spec['shm_size'] = val
        elif opt == '--network':
            spec['network_host'] = val == 'host'
        elif opt == '--cap-add':
            spec['cap_add'].append(val)
        elif opt == '--pull':
            spec['pull_always'] = val == 'always'
        elif opt == '--userns':
            spec['userns_host'] = val == 'host'
        elif opt == '--privileged':
            spec['privileged'] = True
        elif opt == '--detach':
            spec['detach'] = True
        elif opt == '--rm':
            spec['auto_remove'] = True
        elif opt == '-it':
            spec['interactive'] = True
        else:
            raise AssertionError('unknown docker option in seed: %s' % word)
        i += 1
    spec['image'] = words[i]
    spec['args'] = tuple(words[i + 1:])
    return {k: tuple(v) if isinstance(v, list) else v for k, v in spec.items()}


def _as_seed(spec, image):
    out = dataclasses.asdict(spec)
    for key in ('devices', 'volumes', 'cap_add', 'args'):
        out[key] = tuple(out[key])
    out['env'] = tuple(tuple(kv) for kv in out['env'])
    out['ulimits'] = tuple(tuple(kv) for kv in out['ulimits'])
    out['image'] = image
    out.pop('image_role')
    return out


def _seed_run(technology, what):
    section = S000_HOST[technology]
    runs = [_parse_run(w) for w in _docker_runs(section) if w and w[0] != '\\']
    if technology == F.TCPX and what == 'nccl_container':
        # run_tcpx_container() { docker run ... "$@" } ; run_tcpx_container -it --rm IMAGE shell
        body = shlex.split(re.sub(r'\\\n', ' ', between(section, 'docker run \\\n', '}')).replace('docker run', '', 1))
        call = shlex.split(between(section, '$ run_tcpx_container', '\n').split('run_tcpx_container', 1)[1])
        return _parse_run([w for w in body if w != '$@'] + call)
    image_var = re.search(r'NCCL_NET_IMAGE="([^"]+)"', section)
    for run in runs:
        if run['image'] == '${NCCL_NET_IMAGE}':
            run['image'] = image_var.group(1)
        run['network_host'] = bool(run['network_host'])
    if what == 'rxdm':
        return [r for r in runs if r['name'] in ('rxdm', 'receive-datapath-manager')][0]
    if what == 'plugin_installer':
        return [r for r in runs if r['args'][:1] == ('install',)][0]
    return [r for r in runs if r['name'] == 'nccl'][0]


@pytest.mark.parametrize('technology', TCP_TECHS)
@pytest.mark.parametrize('what', ['rxdm', 'plugin_installer', 'nccl_container'])
def test_host_containers_match_seed_docker_run(technology, what):
    stack = F.host_stack(technology)
    pair = F.version_pair(technology, platform='gce')
    spec = getattr(stack, what)
    image = pair.rxdm_image if spec.image_role == 'rxdm' else pair.plugin_image
    assert _as_seed(spec, image) == _seed_run(technology, what)


@pytest.mark.parametrize('technology', TCP_TECHS)
def test_host_commands(technology):
    stack = F.host_stack(technology)
    section = S000_HOST[technology]
    for cmd in (stack.firewall_command, F.GPU_DRIVER_INSTALL_COMMAND, F.REGISTRY_AUTH_COMMAND) + F.NVIDIA_REMOUNT_COMMANDS:
        assert_in(cmd, section, cmd)
    assert_in(F.REGISTRY_AUTH_COMMAND_GCR + '\n', S000_TCPX, 'gcr')
    assert stack.kernel_modules == tuple(c.split()[-1] for c in stack.modprobe_commands)
    for cmd in stack.modprobe_commands:
        assert_in(cmd, section, cmd)
    if technology == F.TCPXO:
        assert stack.kernel_modules == ('import-helper',)
        assert_in(' && '.join(stack.plugin_remount_commands), section, 'remount')
    else:
        assert stack.kernel_modules == ()
        assert_in('\n'.join(stack.plugin_remount_commands), section, 'remount')
    assert_in(stack.rxdm_logs_command, section, 'rxdm logs')
    assert stack.rxdm_ready_line in section
    assert stack.plugin_lib_dir == stack.plugin_dir + '/lib64'
    assert stack.plugin_lib_dir in section
    if stack.plugin_libraries:
        assert_in('%s ファイルと %s ファイルが %s ディレクトリに配置されます' % (stack.plugin_libraries + (stack.plugin_lib_dir,)),
                  section, 'libraries')
    else:
        assert_in('必要なライブラリファイルを %s/ にインストールします' % stack.plugin_lib_dir, section, 'lib dir')


def test_readiness_and_success_lines():
    assert_in('grep "%s"' % F.HOST_STACKS[F.TCPXO].rxdm_ready_line, S000_TCPXO, 'TCPXO ready')
    assert_in('rx_rule_manager.cc:174] %s...' % F.HOST_STACKS[F.TCPX].rxdm_ready_line, S000_TCPX, 'TCPX ready')
    line = F.HOST_STACKS[F.TCPX].nccl_success_line
    assert '\n%s\n' % line in S000_TCPX and 'NET/GPUDirectTCPX ver. 3.1.1' in line
    assert F.HOST_STACKS[F.TCPXO].nccl_success_line is None


def test_nccl_networks():
    assert set(F.NCCL_NETWORKS) == set(F.TECHNOLOGIES)
    assert 'NCCL INFO NET/%s ver.' % F.NCCL_NETWORKS[F.TCPX] in S000_TCPX
    assert F.NCCL_NETWORKS[F.TCPXO] == ('FasTrak',) and '"NCCL_FASTRAK_IFNAME=' in S003
    assert F.NCCL_NETWORKS[F.RDMA][0] == 'gIB' and 'RDMA NCCL/gIB' in S001


@pytest.mark.parametrize('technology,hosts', [(F.TCPXO, 'VM_NAME_1 VM_NAME_2'), (F.TCPX, 'VM-0 VM-1')])
def test_nccl_test_commands(technology, hosts):
    stack = F.host_stack(technology)
    for cmd in stack.nccl_test_setup_commands:
        assert_in(cmd.format(hosts=hosts), S000_HOST[technology], cmd)
    assert_in(stack.nccl_test_command, S000_HOST[technology], 'test command')
    assert ','.join(stack.nccl_test_data_interfaces) in stack.nccl_test_command


def test_device_lists():
    assert F.NVIDIA_DEVICES == ('/dev/nvidia0', '/dev/nvidia1', '/dev/nvidia2', '/dev/nvidia3', '/dev/nvidia4',
                                '/dev/nvidia5', '/dev/nvidia6', '/dev/nvidia7', '/dev/nvidia-uvm', '/dev/nvidiactl')
    assert_in('--device %s:%s' % (F.DMABUF_DEVICE, F.DMABUF_DEVICE), S000_TCPXO, 'dmabuf')
    assert F.DMABUF_DEVICE not in S000_TCPX


# ---------------------------------------------------------------------------------------------
# Version pairs
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('pair', F.VERSION_PAIRS, ids=lambda p: '%s-%s' % (p.technology, p.name))
def test_version_pair_provenance(pair):
    if pair.source == "Google's Compute Engine GPUDirect guide":   # tests/unit/seeds/000_*
        section = S000_HOST[pair.technology]
        assert_in(pair.rxdm_image + ' \\\n', section, 'rxdm image')
        assert re.search(re.escape(pair.plugin_image) + r'[" ]', section), pair.plugin_image
        assert pair.platforms == (F.GCE,)
    else:
        assert 'design.md' in pair.source
        assert (pair.technology, pair.rxdm_image, pair.plugin_image) in DESIGN_SOURCES['version_pairs']


def test_version_pair_defaults():
    for tech in TCP_TECHS:
        for plat in F.PLATFORMS:
            defaults = [p for p in F.version_pairs(tech) if plat in p.default_for]
            assert len(defaults) == 1, (tech, plat)
            assert F.version_pair(tech, platform=plat) is defaults[0]
            assert set(defaults[0].default_for) <= set(defaults[0].platforms)
    # GCE follows the seed's commands; GKE's installer DaemonSet (master) ships the public pair.
    assert F.version_pair(F.TCPXO).rxdm_version == 'v1.0.19'
    assert F.version_pair(F.TCPXO).plugin_version == 'v1.0.13-1'
    assert F.version_pair(F.TCPXO, platform='gke').rxdm_version == 'v1.0.21'
    assert F.version_pair(F.TCPX).rxdm_image == 'us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd'
    assert F.version_pair(F.TCPX, platform='gke').plugin_version == 'v3.1.9'


@pytest.mark.parametrize('kwargs,expected', [
    (dict(rxdm='v1.0.21'), 'v1.0.15'),
    (dict(rxdm='1.0.21'), 'v1.0.15'),
    (dict(plugin='v1.0.13-1'), 'v1.0.13-1'),
    (dict(rxdm='us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.19'), 'v1.0.13-1'),
    (dict(rxdm='v1.0.19', plugin='v1.0.13-1'), 'v1.0.13-1'),
    (dict(rxdm='v1.0.21', plugin='1.0.15'), 'v1.0.15'),
])
def test_version_pair_lookup(kwargs, expected):
    assert F.version_pair('TCPXO', **kwargs).plugin_version == expected


def test_version_pair_untagged_tcpx():
    assert F.version_pair('tcpx', rxdm='latest').name == 'compute-engine-guide'
    assert F.version_pair('TCPX', rxdm='us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd').name == 'compute-engine-guide'
    assert F.version_pair('GPUDirect-TCPX', rxdm='v2.0.12', plugin='v3.1.9').name == 'public-2024-02'


@pytest.mark.parametrize('technology,kwargs,fragments', [
    ('TCPXO', dict(rxdm='v1.0.19', plugin='v1.0.15'),
     ['rxdm_version / plugin_version', 'not a known-good pair', 'compute-engine-guide (rxdm v1.0.19, plugin v1.0.13-1)',
      'public-2026-01 (rxdm v1.0.21, plugin v1.0.15)']),
    ('TCPX', dict(rxdm='v2.0.12', plugin='latest'), ['RxDM v2.0.12 and NCCL plugin untagged', 'public-2024-02']),
    ('TCPXO', dict(rxdm='v9.9.9'), ['rxdm_version: rxdm v9.9.9 is not in a known-good TCPXO pair', 'use one of']),
    ('TCPXO', dict(plugin='v0.1'), ['plugin_version: plugin v0.1', 'v1.0.15']),
    ('RDMA', {}, ['technology: RDMA has no RxDM', '--gpudirect-strategy=rdma']),
    ('TCPZ', {}, ['technology', "'TCPZ'", 'TCPXO, TCPX, RDMA']),
])
def test_version_pair_errors(technology, kwargs, fragments):
    with pytest.raises(ValueError) as err:
        F.version_pair(technology, **kwargs)
    for fragment in fragments:
        assert fragment in str(err.value)


def test_version_pair_bad_platform():
    with pytest.raises(ValueError, match=r"platform: unknown platform 'aws'; choose one of: gce, gke"):
        F.version_pair('TCPXO', platform='aws')


# ---------------------------------------------------------------------------------------------
# GKE (seed 003)
# ---------------------------------------------------------------------------------------------

def _seed_env(section):
    """The seed's NCCL list: ``"NAME=value",`` lines, some values written as ``\\"value\\"``."""
    required, recommended, current = [], [], None
    for line in section.splitlines():
        if line.startswith('## required'):
            current = required
        elif line.startswith('## recommended'):
            current = recommended
        match = re.match(r'^"([A-Z0-9_]+)=(.*)",?$', line.strip())
        if match and current is not None:
            value = match.group(2)
            if value.startswith('\\"') and value.endswith('\\"'):
                value = value[2:-2]
            current.append((match.group(1), value))
    return tuple(required), tuple(recommended)


@pytest.mark.parametrize('technology', TCP_TECHS)
def test_gke_nccl_env_is_the_seed_list(technology):
    stack = F.gke_stack(technology)
    required, recommended = _seed_env(S003_ENV[technology])
    assert stack.nccl_env == required
    assert stack.nccl_debug_env == recommended
    assert F.nccl_env(technology) == dict(required)
    assert list(F.nccl_env(technology)) == [kv[0] for kv in required]
    assert F.nccl_env(technology, debug=True) == dict(required + recommended)


def test_gke_nccl_env_interfaces_follow_families():
    assert F.nccl_env(F.TCPXO)['NCCL_FASTRAK_IFNAME'] == ','.join(F.get_family('a3-megagpu-8g').data_interface_names)
    assert F.nccl_env(F.TCPX)['NCCL_GPUDIRECTTCPX_SOCKET_IFNAME'] == ','.join(F.get_family('a3-highgpu-8g').data_interface_names)


def test_gke_nccl_env_profile():
    name, value, command = F.GKE_STACKS[F.TCPXO].nccl_env_profile
    assert_in('%s="%s"' % (name, value), S003, 'NCCL_LIB_DIR')
    assert_in(command, S003, 'profile')
    assert F.GKE_STACKS[F.TCPX].nccl_env_profile is None


@pytest.mark.parametrize('technology', F.TECHNOLOGIES)
def test_gce_and_rdma_nccl_env(technology):
    if technology == F.RDMA:
        assert F.nccl_env(technology) == dict(F.GKE_RDMA['workload_env'])
        with pytest.raises(ValueError, match='technology: RDMA has no Compute Engine host stack'):
            F.host_stack(technology)
    else:
        env = dict(F.host_stack(technology).nccl_container.env)
        for key, value in env.items():
            assert_in('--env %s=%s' % (key, value), S000_HOST[technology], key)


@pytest.mark.parametrize('technology', TCP_TECHS)
def test_gke_version_floors(technology):
    stack = F.gke_stack(technology)
    section = S003_REQ[technology]
    assert_in('compatible con la versión %s o posterior de GKE' % stack.min_minor, section, 'min minor')
    assert stack.version_floors[0][0] == stack.min_minor
    for minor, floor in stack.version_floors:
        assert floor.startswith(minor + '.')
        assert re.search(r'Para la versión %s de GKE, usa la versión del parche de (GKE )?%s o ' % (re.escape(minor), re.escape(floor)), section)
    assert len(re.findall(r'Para la versión', section)) == len(stack.version_floors)


@pytest.mark.parametrize('technology,version,mode,ok', [
    ('TCPX', '1.27.7-gke.1121000', 'standard', True),
    ('TCPX', '1.27.7-gke.1120999', 'standard', False),
    ('TCPX', '1.26.15-gke.1', 'standard', False),
    ('TCPX', '1.31.1-gke.1', 'standard', True),
    ('TCPX', '1.30', 'standard', True),
    ('TCPX', 'latest', 'standard', True),
    ('TCPXO', '1.27.7-gke.1121000', 'standard', False),
    ('TCPXO', '1.28.9-gke.1250000', 'standard', True),
    ('TCPXO', '1.29.4-gke.1541999', 'standard', False),
    ('TCPXO', '1.30.4-gke.1129000', 'autopilot', False),
    ('RDMA', '1.34.8-gke.1278000', 'standard', True),
    ('RDMA', '1.34.8-gke.1277999', 'standard', False),
    ('RDMA', '1.35.0-gke.1', 'autopilot', False),
    ('RDMA', '1.36.2-gke.1368000', 'autopilot', True),
])
def test_check_gke_version(technology, version, mode, ok):
    if ok:
        F.check_gke_version(technology, version, mode)
    else:
        with pytest.raises(ValueError) as err:
            F.check_gke_version(technology, version, mode)
        message = str(err.value)
        assert message.startswith('gke_version: ') or message.startswith('cluster_mode: ')
        assert 'use ' in message


def test_check_gke_version_messages():
    with pytest.raises(ValueError, match=r'gke_version: 1\.29\.1-gke\.1 is older than 1\.29\.3-gke\.1093000.*use 1\.29\.3-gke\.1093000 or later'):
        F.check_gke_version('TCPX', '1.29.1-gke.1')
    with pytest.raises(ValueError, match=r"gke_version: 'v1\.30' is not a GKE version.*1\.30\.4-gke\.1129000"):
        F.check_gke_version('TCPXO', 'v1.30')
    with pytest.raises(ValueError, match=r'cluster_mode: GPUDirect-TCPXO is not supported on Autopilot'):
        F.check_gke_version('TCPXO', '1.30.4-gke.1129000', 'autopilot')
    with pytest.raises(ValueError, match=r"cluster_mode: 'hybrid'; choose one of: autopilot, standard"):
        F.check_gke_version('RDMA', '1.36.2-gke.1368000', 'hybrid')


@pytest.mark.parametrize('technology', TCP_TECHS)
def test_gke_cluster_and_node_pool_flags(technology):
    stack = F.gke_stack(technology)
    setup = S003_ENV_SETUP[technology]
    for flag in F.GKE_CLUSTER_FLAGS + F.GKE_NODE_POOL_FLAGS + stack.node_pool_optional_flags:
        assert_in(flag, setup, flag)
    assert ('beta container clusters create' in setup) == stack.cluster_create_beta
    assert ('gcloud beta container node-pools create' in setup) == stack.node_pool_create_beta
    count = F.families_for_technology(technology)[0].data_nic_count
    assert len(re.findall(r'--additional-node-network[ =]network=', setup)) == count
    if technology == F.TCPXO:
        assert_in('--scopes "%s"' % F.GCE_SCOPES[0], setup, 'scopes')
    assert_in('versión %s o posterior del controlador NVIDIA' % F.MIN_NVIDIA_DRIVER, S003, 'driver')


def test_gke_requirements_prose():
    phrases = ['Debes usar GKE Dataplane V2', 'imagen de nodo de Container-Optimized OS (COS)',
               'no son compatibles con los clústeres de Autopilot',
               'no son compatibles con GPU de varias instancias, uso compartido de tiempo de GPU ni NVIDIA MPS',
               'No puedes usar NCCL FastSocket', 'Varios Pods no pueden usar GPUDirect-TCPX']
    assert len(phrases) == len(F.GKE_REQUIREMENTS)
    for phrase in phrases:
        assert phrase in S003


def test_gke_vpc_layout():
    lay = F.GKE_VPC_LAYOUT
    literal = {
        'network': 'networks create %s' % lay['network'].format(prefix='PROJECT_ID', n='$N'),
        'subnet': 'subnets create %s' % lay['subnet'].format(prefix='PROJECT_ID', n='$N'),
        'firewall_rule': 'firewall-rules create %s' % lay['firewall_rule'].format(prefix='PROJECT_ID', n='$N'),
        'subnet_mode': '--subnet-mode=%s' % lay['subnet_mode'],
        'rules': '--rules=%s' % lay['rules'],
        'subnet_range_example': 'especifica %s' % lay['subnet_range_example'].format(n='$N'),
        'source_range_example': 'Por ejemplo, %s' % lay['source_range_example'],
    }
    assert set(literal) == set(lay)
    for key, text in literal.items():
        assert_in(text, S003, key)


@pytest.mark.parametrize('technology', TCP_TECHS)
def test_gke_network_objects_equal_seed_yaml(technology):
    # What role gke_gpudirect applies (render.gke_network_objects) is the seed's heredoc, object for object.
    from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import render   # pylint: disable=import-outside-toplevel
    yaml = pytest.importorskip('yaml')
    heredoc = between(S003_ENV_SETUP[technology], 'kubectl apply -f - <<EOF\n', '\nEOF').split('\n', 1)[1]

    def key(obj):
        return obj['kind'], obj['metadata']['name']
    assert sorted(render.gke_network_objects(technology, network_prefix='PROJECT_ID'), key=key) == sorted(yaml.safe_load_all(heredoc), key=key)


@pytest.mark.parametrize('technology', TCP_TECHS)
def test_gke_daemonsets_and_tests(technology):
    stack = F.gke_stack(technology)
    ds = stack.installer
    assert_in('kubectl apply -f %s' % ds.url, S003_INSTALL[technology], 'installer url')
    assert_in('kubectl get pods -n=%s -l=%s' % (ds.namespace, ds.label_selector), S003_INSTALL[technology], 'installer pods')
    assert ds.label_selector == 'name=' + ds.name and ds.url.endswith('/%s.yaml' % ds.name)
    assert_in('en el directorio %s en la VM' % F.GKE_LIB_HOST_DIR, S003_INSTALL[technology], 'lib dir')
    assert_in('la ruta %s en los contenedores' % F.GKE_LIB_CONTAINER_DIR, S003_INSTALL[technology], 'container lib dir')
    for url in stack.test_manifests:
        assert_in('kubectl apply -f %s' % url, S003_TEST[technology], url)
    assert_in(stack.test_command, S003_TEST[technology], 'test command')


def test_nri_device_injector():
    nri = F.NRI_DEVICE_INJECTOR
    assert_in('kubectl apply -f %s' % nri.url, S003, 'nri url')
    assert_in('kubectl get pods -n=%s -l=%s' % (nri.namespace, nri.label_selector), S003, 'nri pods')
    assert F.GKE_MANIFEST_BASE.startswith('https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/')


@pytest.mark.parametrize('technology', TCP_TECHS)
def test_gke_pod_annotations(technology):
    stack = F.gke_stack(technology)
    pod = S003_POD[technology]
    annotations = F.gke_pod_annotations(technology)
    devices_key = 'devices.gke.io/container.%s' % stack.daemon_container
    assert set(annotations) == {devices_key, 'networking.gke.io/default-interface', 'networking.gke.io/interfaces'}
    block = '    %s: |+\n' % devices_key + ''.join('      %s\n' % line for line in annotations[devices_key].splitlines())
    assert block in pod
    assert_in("networking.gke.io/default-interface: '%s'" % annotations['networking.gke.io/default-interface'], pod, 'default')
    interfaces = json.loads(annotations['networking.gke.io/interfaces'])
    assert len(interfaces) == 1 + F.families_for_technology(technology)[0].data_nic_count
    # The seed's full Pod spec writes the list exactly so (its TCPX snippet has a stray comma).
    indented = '    networking.gke.io/interfaces: |\n' + ''.join('      %s\n' % line for line in annotations['networking.gke.io/interfaces'].splitlines())
    assert indented in pod


@pytest.mark.parametrize('technology', TCP_TECHS)
def test_gke_daemon_container(technology):
    stack = F.gke_stack(technology)
    pod = S003_POD[technology]
    flat = re.sub(r'\s+', ' ', pod)
    assert '- name: %s' % stack.daemon_container in pod
    if technology == F.TCPXO:
        assert 'command: ["%s"]' % '", "'.join(stack.daemon_command) in pod
        for line in stack.daemon_args[0].splitlines():
            assert '      %s\n' % line in pod
    else:
        words = stack.daemon_command[:-1] + ('\\"%s\\"' % stack.daemon_command[-1],)  # seed writes \"--verbose 128 2 0 \"
        assert 'command: ' + ' '.join('- %s' % w for w in words) in flat
    assert 'add: ' + ' '.join('- %s' % c for c in stack.daemon_capabilities) + ' ' in flat
    for name, path, read_only in stack.daemon_mounts + stack.gpu_container_mounts:
        pattern = r'- name: %s mountPath: %s' % (re.escape(name), re.escape(path)) + (' readOnly: true' if read_only else '')
        assert re.search(pattern, flat), (name, path)
    for name, host_path in stack.volumes:
        if host_path:
            assert '- name: %s hostPath: path: %s ' % (name, host_path) in flat, name
        else:
            assert '- name: %s emptyDir:' % name in flat, name
    for name, value in stack.daemon_env + stack.gpu_container_env:
        assert 'env: - name: %s value: %s' % (name, value) in flat or '- name: %s value: %s' % (name, value) in flat


def test_gke_tcpxo_libraries_volume_takes_the_full_pod_spec():
    """Seed 003 writes the TCPXO 'libraries' hostPath two ways; the catalog uses the full Pod spec's."""
    full = between(S003_POD[F.TCPXO], 'Una especificación de Pod completa')
    assert dict(F.GKE_STACKS[F.TCPXO].volumes)['libraries'] == '/home/kubernetes/bin/nvidia'
    assert '- name: libraries\n      hostPath:\n        path: /home/kubernetes/bin/nvidia\n' in full


@pytest.mark.parametrize('technology', TCP_TECHS)
def test_gke_seed_daemon_images(technology):
    for image in F.GKE_STACKS[technology].seed_daemon_images:
        assert image in S003_POD[technology]
        assert image.startswith({F.TCPXO: F.TCPXO_REPOSITORY, F.TCPX: F.TCPX_REPOSITORY}[technology] + '/tcpgpudmarxd-dev:')


# ---------------------------------------------------------------------------------------------
# GKE RDMA (seed 001) -- every key must have a check
# ---------------------------------------------------------------------------------------------

def _rdma_checks():
    r = F.GKE_RDMA
    flat = re.sub(r'\s+', ' ', S001)
    return {
        'min_version_standard': 'Standard クラスタの GKE バージョン %s 以降' % r['min_version_standard'] in S001,
        'min_version_autopilot': 'Autopilot クラスタのバージョン %s 以降' % r['min_version_autopilot'] in S001,
        'min_gcloud_version': 'Google Cloud CLI バージョン %s 以降' % r['min_gcloud_version'] in S001,
        'min_terraform_google_provider': 'version = ">= %s"' % r['min_terraform_google_provider'] in S001,
        'nic': 'NVIDIA ConnectX-7（CX7）' in S001 and 'RoCE' in S001 and r['nic'] == 'NVIDIA ConnectX-7 (CX7), RoCE',
        'requirements': len(r['requirements']) == 4 and all(p in S001 for p in (
            '--enable-dataplane-v2 フラグ', '同じノードプールでマルチネットワーク API と DRANET の両方を使用することはできません',
            'Container-Optimized OS ノードイメージを使用する必要があります', '割り当てが 2 つ以上', '16 個の GPU')),
        'node_pool_flags': all(f in S001 for f in r['node_pool_flags']),
        'reservation_block_format': '--reservation=%s' % r['reservation_block_format'].format(
            project='${RESERVATION_PROJECT}', reservation='${RESERVATION_NAME}', block='${RESERVATION_BLOCK}') in S001,
        'dranet_node_label': '--node-labels=%s=%s' % r['dranet_node_label'] in S001
                             and '"%s" = "%s"' % r['dranet_node_label'] in flat,
        'accelerator_network_profile_label': '"%s" = "%s"' % r['accelerator_network_profile_label'] in flat,
        'compute_class_api_version': 'apiVersion: %s\nkind: ComputeClass' % r['compute_class_api_version'] in S001
                                     and 'dra: networking: enabled: true' in flat
                                     and 'nodePoolAutoCreation: enabled: true' in flat,
        'compute_class_priority': all('%s: %s' % kv in S001 for kv in r['compute_class_priority']),
        'compute_class_node_selector': '%s: COMPUTE_CLASS_NAME' % r['compute_class_node_selector'] in S001,
        'terraform_datapath_provider': 'datapath_provider = "%s"' % r['terraform_datapath_provider'] in flat,
        'terraform_gpudirect_strategy': 'gpudirect_strategy = "%s"' % r['terraform_gpudirect_strategy'] in flat,
        'resource_claim_api_version': 'apiVersion: %s\nkind: ResourceClaimTemplate' % r['resource_claim_api_version'] in S001,
        'resource_claim_template': 'name: %s\n' % r['resource_claim_template'] in S001
                                   and 'resourceClaimTemplateName: %s' % r['resource_claim_template'] in S001,
        'resource_claim_request': '- name: %s\n' % r['resource_claim_request'] in S001,
        'device_class': 'deviceClassName: %s' % r['device_class'] in S001,
        'allocation_mode': 'allocationMode: %s' % r['allocation_mode'] in S001,
        'test_image': '- image: %s\n' % r['test_image'] in S001,
        'volumes': all(('- name: %s hostPath: path: %s ' % (n, h) in flat if h else '- name: %s emptyDir:' % n in flat)
                       and '- name: %s mountPath: %s ' % (n, m) in flat for n, h, m in r['volumes']),
        'shared_memory': 'medium: "%s"' % dict(r['shared_memory'])['medium'] in S001
                         and 'sizeLimit: %s' % dict(r['shared_memory'])['sizeLimit'] in S001,
        'workload_env': all('- name: %s value: %s' % kv in flat for kv in r['workload_env']),
        'nccl_env_script': '\n          %s\n' % r['nccl_env_script'] in S001,
        'container_entry': '\n          %s\n' % r['container_entry'] in S001,
        'test_command': '-- %s\n' % r['test_command'] in S001,
    }


def test_gke_rdma_every_fact_checked():
    checks = _rdma_checks()
    assert set(checks) == set(F.GKE_RDMA), 'every GKE_RDMA key needs a seed check'
    failed = sorted(k for k, ok in checks.items() if not ok)
    assert not failed, failed


# ---------------------------------------------------------------------------------------------
# OpenShift (seed 004, references.md)
# ---------------------------------------------------------------------------------------------

def test_openshift_rdma():
    o = F.OPENSHIFT_RDMA
    assert set(o) == {'methods', 'transports', 'operators', 'subscriptions', 'mellanox_vendor_id', 'nfd_label'}
    for _key, label in o['methods']:
        assert '\n- %s\n' % label in S004
    assert 'over Converged Ethernet (%s) または %s インフラストラクチャー' % o['transports'] in S004
    assert '設定方法は合計で %d つ' % (len(o['methods']) * len(o['transports'])) in S004
    for operator in o['operators']:
        assert '- %s をインストールします' % operator in S004
    assert o['subscriptions'] == DESIGN_SOURCES['olm']
    assert (o['nfd_label'], o['mellanox_vendor_id']) == (DESIGN_SOURCES['nfd_label'], DESIGN_SOURCES['mellanox_vendor_id'])


# ---------------------------------------------------------------------------------------------
# Lookup functions and their errors
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('value', ['a3-megagpu-8g', 'zones/us-central1-a/machineTypes/a3-megagpu-8g',
                                   'https://www.googleapis.com/compute/v1/projects/p/zones/z/machineTypes/a3-megagpu-8g'])
def test_get_family_accepts_urls(value):
    assert F.get_family(value).machine_type == 'a3-megagpu-8g'


@pytest.mark.parametrize('value', ['a3-megagpu-4g', 'n2-standard-8', '', None])
def test_get_family_error(value):
    with pytest.raises(ValueError) as err:
        F.get_family(value)
    message = str(err.value)
    assert message.startswith('machine_type: ')
    assert 'choose one of: ' + ', '.join(FAMILY_NAMES) in message


def test_get_family_error_names_custom_field():
    with pytest.raises(ValueError, match=r"^machine_types\[2\]: 'x'"):
        F.get_family('x', field='machine_types[2]')


def test_families_for_technology():
    assert [f.machine_type for f in F.families_for_technology('TCPX')] == ['a3-highgpu-8g', 'a3-edgegpu-8g']
    assert [f.machine_type for f in F.families_for_technology('rdma')] == ['a3-ultragpu-8g', 'a4-highgpu-8g']
    with pytest.raises(ValueError, match=r"^technology: unknown GPUDirect technology 'IB'; choose one of: TCPXO, TCPX, RDMA$"):
        F.families_for_technology('IB')


def test_check_provisioning_model():
    assert F.check_provisioning_model(F.FAMILIES['a3-megagpu-8g'], 'reservation_bound').reservation_required
    assert F.check_provisioning_model(F.FAMILIES['a3-edgegpu-8g'], None).name == 'STANDARD'
    # Google's current reservation-bound page lists A3 Edge, seed 000 does not: refused unless the dispute is accepted
    with pytest.raises(ValueError, match=r"^provisioning_model: RESERVATION_BOUND on a3-edgegpu-8g is disputed: Google's Compute Engine GPUDirect guide says"):
        F.check_provisioning_model(F.FAMILIES['a3-edgegpu-8g'], 'RESERVATION_BOUND')
    assert F.check_provisioning_model(F.FAMILIES['a3-edgegpu-8g'], 'RESERVATION_BOUND', accept_disputed=True).reservation_required
    with pytest.raises(ValueError, match=r"^provisioning_model: unknown provisioning model 'PREEMPTIBLE'; choose one of: "):
        F.check_provisioning_model(F.FAMILIES['a3-highgpu-8g'], 'PREEMPTIBLE')
    assert F.check_provisioning_model(F.FAMILIES['a3-ultragpu-8g'], 'SPOT').name == 'SPOT'  # no source lists its models


def test_host_and_gke_stack_errors():
    with pytest.raises(ValueError, match=r'^technology: RDMA has no Compute Engine host stack.*choose one of: TCPXO, TCPX$'):
        F.host_stack('RDMA')
    with pytest.raises(ValueError, match=r'^technology: RDMA on GKE is described by GKE_RDMA'):
        F.gke_stack('RDMA')
    with pytest.raises(ValueError, match=r"^platform: unknown platform 'k8s'"):
        F.version_pair('TCPX', platform='k8s')


def test_gke_shared_memory_is_the_seed_001_test_pods_volume():
    name, mount_path, medium = F.GKE_SHARED_MEMORY
    workload = between(S001, 'name: nccl-test-host-1', 'sleep infinity')
    assert_in('- name: %s\n emptyDir:\n medium: "%s"' % (name, medium), workload, 'seed 001 shared-memory volume')
    assert_in('- name: %s\n mountPath: %s' % (name, mount_path), workload, 'seed 001 shared-memory mount')
    assert (name, None, mount_path) in F.GKE_RDMA['volumes'] and ('medium', medium) in F.GKE_RDMA['shared_memory']
