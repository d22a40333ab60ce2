"""Issue 26 on GKE GPUDirect RDMA: role gke_rdma with gke_rdma_nccl_test_mode=diagnose (the entry point nccl_diagnose of
gke_gpudirect, the one implementation for TCPX, TCPXO and RDMA), the real ansible-playbook and kubernetes.core against a
GKE cluster of the Container API sandbox that comes alive (the real kube-apiserver control plane, kwok nodes), with a
4-node A3 Ultra pool on GKE's managed DRANET. The stand-in's RDMA wrapper (pod-tools/nccl_tests.sh for the guide's
/usr/local/gib/scripts/run_nccl_tests.sh) prints the published healthy A3 Ultra figure of its own data (pod-tools/nccl-figures),
the gIB plugin's and NCCL's lines with each Pod's host name (NCCL's version on rank 0 only), and a tenth of the figure for a
run that touches a node, or uses an HCA (NCCL_IB_HCA), that the stand-in's fault annotations mark, or mixes NCCL versions
(exec.py FAULT_SLOW_NODE, FAULT_SLOW_NICS, FAULT_NCCL_VERSION). One cluster serves every case."""

import json
import sys
import time

import pytest

from sandbox.kube.exec import FAULT_NCCL_VERSION, FAULT_SLOW_NICS, FAULT_SLOW_NODE

from test_gke_k8s_roles import PROJECT, RDMA_VERSION, RDMA_ZONE, Live, ok, pytestmark  # noqa: F401 pylint: disable=unused-import
from test_gke_nccl_diagnose import _mark

NODES = 4
HEALTHY = 335.7   # pod-tools/nccl-figures: A3 Ultra, 2 nodes, all_gather at 8 GiB


@pytest.fixture(scope='module')
def ultra(tmp_path_factory):
    from sandbox import Sandbox  # pylint: disable=import-outside-toplevel
    from sandbox.client import SandboxClient  # pylint: disable=import-outside-toplevel
    from sandbox.gcloud import GcloudRunner  # pylint: disable=import-outside-toplevel
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    from waiting import wait_until  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(latency=0.0, project=PROJECT).start()
    sandbox.kube = GkeClusters()
    try:
        gcloud = GcloudRunner(sandbox, str(tmp_path_factory.mktemp('gcloud-config')))
        ok(gcloud('--project', PROJECT, 'container', 'clusters', 'create', 'rdma', '--zone=' + RDMA_ZONE, '--cluster-version=' + RDMA_VERSION,
                  '--enable-dataplane-v2', '--enable-ip-alias', '--num-nodes=1', '--no-enable-autoupgrade'))
        # SDK 528's gcloud has no --gpudirect-strategy: the pool through the API, with the fields those flags set.
        SandboxClient(sandbox.url).must('POST', 'v1/projects/%s/locations/%s/clusters/rdma/nodePools' % (PROJECT, RDMA_ZONE), {'nodePool': {
            'name': 'a3ultra', 'initialNodeCount': NODES,
            'config': {'machineType': 'a3-ultragpu-8g', 'gpuDirectConfig': {'gpuDirectStrategy': 'RDMA'},
                       'labels': {'cloud.google.com/gke-networking-dra-driver': 'true'},
                       'accelerators': [{'acceleratorType': 'nvidia-h200-141gb', 'acceleratorCount': '8',
                                         'gpuDriverInstallationConfig': {'gpuDriverVersion': 'LATEST'}}]},
            'networkConfig': {'acceleratorNetworkProfile': 'auto'}}})
        state = Live(sandbox, gcloud, str(tmp_path_factory.mktemp('plays')))
        wait_until(lambda: state.kube('rdma') and state.kube('rdma').store.get('deviceclasses.resource.k8s.io', 'mrdma.google.com')
                   and len(state.kube('rdma').store.list('nodes')) == NODES + 1, 'the RDMA nodes and DRANET DeviceClass')
        state.cluster = 'rdma'
        state.nodes = sorted(n['metadata']['name'] for n in state.kube('rdma').store.list(
            'nodes', label_selector='cloud.google.com/gke-nodepool=a3ultra'))
        yield state
    finally:
        sandbox.stop()


def _diagnose(live, tmp_path, **extra):
    report = tmp_path / 'report'
    started = time.monotonic()
    run, counts = live.play('rdma', 'gke_rdma', dict({
        'gke_rdma_node_pool': 'a3ultra', 'gke_rdma_nccl_test_mode': 'diagnose', 'gke_rdma_report_dir': str(report),
        'gke_rdma_wait_delay': 1, 'gke_rdma_nccl_fail_on_verdict': False}, **extra))
    run.wall = round(time.monotonic() - started, 1)
    assert (report / 'report.json').exists(), 'exit %d\n%s\n%s' % (run.returncode, run.stdout[-5000:], run.stderr[-2000:])
    with open(report / 'report.json', encoding='utf-8') as handle:
        return run, counts, json.load(handle), (report / 'summary.md').read_text(encoding='utf-8')


def _marked(live, node, annotations, tmp_path, **extra):
    _mark(_Cluster(live), node, annotations)
    try:
        return _diagnose(live, tmp_path, **extra)
    finally:
        _mark(_Cluster(live), node, {key: None for key in annotations})


class _Cluster:
    """test_gke_nccl_diagnose._mark's view of the cluster: ``kube()`` is this one's."""

    def __init__(self, live):
        self.live = live

    def kube(self):
        return self.live.kube('rdma')


def test_a_healthy_rdma_pool_passes_with_every_node_version(ultra, tmp_path):
    run, _counts, report, summary = _diagnose(ultra, tmp_path, gke_rdma_nccl_fail_on_verdict=True)
    ok(run)
    assert report['bad_hosts'] == [] and report['suspect_hosts'] == [], report['hosts']
    assert report['technology'] == 'RDMA' and report['machine_type'] == 'a3-ultragpu-8g' and report['synthetic']
    assert all(p['verdict'] == 'PASS' and p['busbw_gbps'] == HEALTHY for p in report['pairs']) and len(report['pairs']) == NODES // 2
    # Per node, from its own Pod's NCCL lines: gIB and its plugin version on every node; NCCL's version on rank 0 (the
    # node that led its pair).
    for node, row in report['hosts'].items():
        assert row['evidence']['network'] == 'gIB' and row['evidence']['plugin'] == 'gIB 1.0.5', (node, row['evidence'])
        assert row['evidence']['gpus'] == 8
    leaders = {p['hosts'][0] for p in report['pairs']}
    assert {n for n, r in report['hosts'].items() if r['evidence']['nccl_version'] == '2.21.5+cuda12.4'} == leaders, report['hosts']
    assert 'NCCL diagnosis (STAND-IN OUTPUT, synthetic numbers): bad none; suspect none' in run.stdout
    assert '| gIB | gIB 1.0.5 | 2.21.5+cuda12.4 |' in summary, summary
    assert ultra.kube('rdma').store.get('pods', 'nccl-test-host-1', 'default') is None
    sys.stderr.write('RDMA diagnosis, healthy pool: %s s\n%s\n' % (run.wall, summary))


def test_one_slow_rdma_node_is_named_and_only_it(ultra, tmp_path):
    bad = ultra.nodes[2]
    run, _counts, report, summary = _marked(ultra, bad, {FAULT_SLOW_NODE: 'true'}, tmp_path, gke_rdma_nccl_cordon_bad_nodes=True)
    ok(run)
    assert report['bad_hosts'] == [bad] and report['suspect_hosts'] == [], report['hosts']
    assert all(p['verdict'] == 'FAIL' and p['busbw_gbps'] == round(HEALTHY / 10, 2) for p in report['hosts'][bad]['pairs'])
    # Every HCA of it slow: the node is bad as a whole, no HCA named.
    assert report['nics'] and not [f for f in report['nics'] if f['named']], report['nics']
    assert {f['nic'] for f in report['nics']} == {'mlx5_%d' % n for n in range(8)}
    assert 'NCCL diagnosis (STAND-IN OUTPUT, synthetic numbers): bad %s; suspect none' % bad in run.stdout
    store = ultra.kube('rdma').store
    assert store.get('nodes', bad)['spec'].get('unschedulable') is True
    assert not any(store.get('nodes', n)['spec'].get('unschedulable') for n in ultra.nodes if n != bad)
    current = store.get('nodes', bad)
    current['spec'].pop('unschedulable', None)
    store.update(current)
    sys.stderr.write('RDMA diagnosis, slow node %s: %s s\n%s\n' % (bad, run.wall, summary))


def test_one_slow_hca_is_named_with_its_node(ultra, tmp_path):
    node = ultra.nodes[1]
    run, _counts, report, summary = _marked(ultra, node, {FAULT_SLOW_NICS: 'mlx5_3'}, tmp_path)
    ok(run)
    assert report['bad_hosts'] == [node], report['hosts']
    assert [(f['host'], f['nic']) for f in report['nics'] if f['named']] == [(node, 'mlx5_3')], report['nics']
    # One HCA's share: 335.7 / 8 = 41.96 GB/s healthy, a tenth slow; the threshold 3200 Gb/s / 8 / 8 HCAs x 0.6 = 30.
    assert report['nic_threshold_gbps'] == 30.0
    assert [f['busbw_gbps'] for f in report['nics'] if f['nic'] == 'mlx5_3'] == [4.2], report['nics']
    assert 'Bad NICs: mlx5_3 on %s' % node in run.stdout, run.stdout[-3000:]
    assert any(r.startswith('HCA mlx5_3: 4.20 GB/s < 30.0 GB/s') for r in report['hosts'][node]['reasons']), report['hosts'][node]
    assert '## HCAs (NCCL restricted to one HCA (NCCL_IB_HCA)' in summary and '| mlx5_3 |' in summary, summary
    sys.stderr.write('RDMA diagnosis, slow HCA mlx5_3 on %s: %s s\n%s\n' % (node, run.wall, summary))


def test_a_node_with_another_nccl_version_is_named(ultra, tmp_path):
    node = ultra.nodes[3]
    run, _counts, report, summary = _marked(ultra, node, {FAULT_NCCL_VERSION: '2.23.4+cuda12.6'}, tmp_path, gke_rdma_nccl_diagnose_hcas=[])
    ok(run)
    assert report['bad_hosts'] == [node], report['hosts']
    row = report['hosts'][node]
    assert row['evidence']['nccl_version'] == '2.23.4+cuda12.6', row
    assert any('NCCL 2.23.4+cuda12.6 differs from 2.21.5+cuda12.4' in reason for reason in row['reasons']), row
    sys.stderr.write('RDMA diagnosis, NCCL version on %s: %s s\n%s\n' % (node, run.wall, summary))
