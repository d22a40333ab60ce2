"""Issue 26 on GKE: role gke_gpudirect with gke_gpudirect_nccl_test_mode=diagnose, the real ansible-playbook and
kubernetes.core against a GKE cluster of the Container API sandbox that comes alive (the real kube-apiserver control
plane, kwok nodes), with an 8-node A3 Mega (GPUDirect-TCPXO) pool. The stand-in's NCCL wrapper (pod-tools/nccl_tests.sh)
prints the published healthy figure of its own data file (pod-tools/nccl-figures), and slow figures for a run that
touches a node, or uses a NIC, that the stand-in's fault annotations mark (exec.py FAULT_SLOW_NODE, FAULT_SLOW_NICS);
the diagnosis must name that node (or that node and NIC), and only it, with its evidence, computed on stand-in output."""

import json
import sys
import time

import pytest
from PIL import Image

from sandbox.kube.errors import KubeError
from sandbox.kube.exec import FAULT_SLOW_NICS, FAULT_SLOW_NODE

from test_gke_k8s_roles import PREFIX, PROJECT, REGION, VERSION, ZONE, Live, ok, pytestmark  # noqa: F401 pylint: disable=unused-import

NODES = 8


@pytest.fixture(scope='module')
def pool(tmp_path_factory):
    from sandbox import Sandbox  # pylint: disable=import-outside-toplevel
    from sandbox.client import SandboxClient  # pylint: disable=import-outside-toplevel
    from sandbox.gcloud import GcloudRunner  # pylint: disable=import-outside-toplevel
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    from waiting import wait_until  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(latency=0.0, project=PROJECT).start()
    sandbox.kube = GkeClusters()
    try:
        gcloud = GcloudRunner(sandbox, str(tmp_path_factory.mktemp('gcloud-config')))
        api = SandboxClient(sandbox.url)
        networks = []
        for number in range(1, 9):
            api.create_vpc(PROJECT, '%s-net-%d' % (PREFIX, number), '%s-sub-%d' % (PREFIX, number), REGION, '192.168.%d.0/24' % number)
            networks += ['--additional-node-network', 'network=%s-net-%d,subnetwork=%s-sub-%d' % (PREFIX, number, PREFIX, number)]
        ok(gcloud('--project', PROJECT, 'beta', 'container', 'clusters', 'create', 'gpud', '--enable-dataplane-v2',
                  '--enable-ip-alias', '--zone=' + ZONE, '--enable-multi-networking', '--cluster-version=' + VERSION,
                  '--no-enable-autoupgrade', '--num-nodes=1'))
        ok(gcloud('beta', 'container', 'node-pools', 'create', 'a3mega', '--zone=' + ZONE, '--cluster=gpud',
                  '--accelerator=type=nvidia-h100-mega-80gb,count=8,gpu-driver-version=LATEST', '--machine-type=a3-megagpu-8g',
                  '--num-nodes=%d' % NODES, *networks, '--enable-gvnic', '--no-enable-autoupgrade'))
        state = Live(sandbox, gcloud, str(tmp_path_factory.mktemp('plays')))
        wait_until(lambda: state.kube() and len(state.kube().store.list('nodes')) == NODES + 1, 'the nodes')
        state.nodes = sorted(n['metadata']['name'] for n in state.kube().store.list('nodes', label_selector='cloud.google.com/gke-nodepool=a3mega'))
        yield state
    finally:
        sandbox.stop()


def _mark(live, node, annotations):
    """Set (None: remove) the stand-in's fault annotations on a Node, again on a conflict (kwok and the node controller write it too)."""
    store = live.kube().store
    for _attempt in range(20):
        current = store.get('nodes', node)
        mine = current['metadata'].setdefault('annotations', {})
        mine.update(annotations)
        for key in [k for k, v in mine.items() if v is None]:
            del mine[key]
        try:
            store.update(current)
            return
        except KubeError as error:
            if error.code != 409:
                raise
    raise AssertionError('could not annotate node %s' % node)


def _diagnose(live, tmp_path, **extra):
    report = tmp_path / 'report'
    started = time.monotonic()
    run, counts = live.play('gpud', 'gke_gpudirect', dict({
        'gke_gpudirect_machine_type': 'a3-megagpu-8g', 'gke_gpudirect_network_prefix': PREFIX, 'gke_gpudirect_node_pool': 'a3mega',
        'gke_gpudirect_nccl_test_mode': 'diagnose', 'gke_gpudirect_report_dir': str(report), 'gke_gpudirect_wait_delay': 1}, **extra))
    run.wall = round(time.monotonic() - started, 1)
    assert (report / 'report.json').exists(), 'exit %d\n%s\n%s' % (run.returncode, run.stdout[-5000:], run.stderr[-2000:])
    with open(report / 'report.json', encoding='utf-8') as handle:
        return run, counts, json.load(handle), (report / 'summary.md').read_text(encoding='utf-8'), report


def test_one_slow_node_is_named_and_only_it(pool, tmp_path):
    bad = pool.nodes[5]
    _mark(pool, bad, {FAULT_SLOW_NODE: 'true'})
    try:
        run, counts, report, summary, where = _diagnose(pool, tmp_path)
    finally:
        _mark(pool, bad, {FAULT_SLOW_NODE: None})
    # The play fails on a bad node (the default), after the report.
    assert run.returncode != 0 and counts['failed'] == 1, run.stdout[-4000:]
    assert 'NCCL diagnosis: bad %s; suspect none' % bad in run.stdout, run.stdout[-4000:]
    assert 'NCCL diagnosis (STAND-IN OUTPUT, synthetic numbers): bad %s; suspect none' % bad in run.stdout
    assert report['bad_hosts'] == [bad] and report['suspect_hosts'] == [], report['hosts']
    assert report['synthetic'] and report['machine_type'] == 'a3-megagpu-8g' and report['technology'] == 'TCPXO'
    row = report['hosts'][bad]
    assert any('every pair failed, also with healthy' in reason for reason in row['reasons']), row
    # Slow: a tenth of the stand-in's healthy 188.9 GB/s at 8 GiB.
    assert all(p['verdict'] == 'FAIL' and p['busbw_gbps'] == 18.89 for p in row['pairs']), row
    assert row['evidence']['gpus'] == 8 and row['evidence']['network'] == 'FasTrak', row['evidence']
    assert {h for h, r in report['hosts'].items() if r['status'] == 'healthy'} == set(pool.nodes) - {bad}
    assert all(p['busbw_gbps'] == 188.9 for p in report['pairs'] if bad not in p['hosts']), report['pairs']
    # Rounds: 4 disjoint pairs at once; the failed pair's two nodes with two that passed; then the bad node's 8 data NICs
    # one by one, every one slow: the node is bad as a whole, no NIC of it named.
    assert report['host_rounds'] == 2 and report['rounds'] == 2 + 8, report['pairs']
    assert report['nics'] and not [f for f in report['nics'] if f['named']], report['nics']
    assert summary.startswith('# ') and ('**bad: %s**' % bad) in summary and 'STAND-IN OUTPUT' in summary, summary
    assert sorted(p.name for p in where.iterdir()) == ['junit.xml', 'pairs.png', 'report.json', 'summary.md']
    with Image.open(where / 'pairs.png') as image:
        assert image.format == 'PNG'
    assert pool.kube().store.get('pods', 'nccl-test-host-1', 'default') is None   # the workload is deleted
    sys.stderr.write('diagnosis, slow node %s: %s s\n%s\n' % (bad, run.wall, summary))


def test_one_slow_nic_is_named_with_its_node(pool, tmp_path):
    node = pool.nodes[2]
    _mark(pool, node, {FAULT_SLOW_NICS: 'eth3'})
    try:
        run, _counts, report, summary, _where = _diagnose(pool, tmp_path, gke_gpudirect_nccl_fail_on_verdict=False,
                                                          gke_gpudirect_nccl_cordon_bad_nodes=True)
    finally:
        _mark(pool, node, {FAULT_SLOW_NICS: None})
    ok(run)
    assert report['bad_hosts'] == [node], report['hosts']
    named = [(f['host'], f['nic']) for f in report['nics'] if f['named']]
    assert named == [(node, 'eth3')], report['nics']
    assert report['hosts'][node]['bad_nics'] == ['eth3']
    # One NIC's share: 188.9 / 8 = 23.61 GB/s healthy, a tenth of it slow; the threshold 1600 Gb/s / 8 / 8 NICs x 0.6 = 15.
    assert report['nic_threshold_gbps'] == 15.0
    assert [f['busbw_gbps'] for f in report['nics'] if f['nic'] == 'eth3'] == [2.36]
    assert all(f['busbw_gbps'] == 23.61 for f in report['nics'] if f['nic'] != 'eth3'), report['nics']
    assert 'Bad NICs: eth3 on %s' % node in run.stdout, run.stdout[-3000:]
    assert '| eth3 |' in summary and '**named**' in summary, summary
    store = pool.kube().store
    assert store.get('nodes', node)['spec'].get('unschedulable') is True
    assert not any(store.get('nodes', n)['spec'].get('unschedulable') for n in pool.nodes if n != node)
    current = store.get('nodes', node)
    current['spec'].pop('unschedulable', None)
    store.update(current)
    sys.stderr.write('diagnosis, slow NIC eth3 on %s: %s s\n%s\n' % (node, run.wall, summary))


def test_a_healthy_pool_passes_with_no_bad_node(pool, tmp_path):
    run, _counts, report, summary, _where = _diagnose(pool, tmp_path)
    ok(run)
    assert report['bad_hosts'] == [] and report['suspect_hosts'] == [], report['hosts']
    assert report['host_rounds'] == 1 and report['rounds'] == 1 and report['nics'] == [], report['pairs']
    assert all(p['verdict'] == 'PASS' and p['busbw_gbps'] == 188.9 for p in report['pairs']) and len(report['pairs']) == NODES // 2
    assert 'NCCL diagnosis (STAND-IN OUTPUT, synthetic numbers): bad none; suspect none' in run.stdout
    assert 'STAND-IN OUTPUT' in summary and 'PASS' in summary, summary
    # Per node, from one list of the DaemonSets' Pods: the installer and the device injector ready on it; from its own
    # Pod's NCCL lines, the plugin (every rank) and NCCL's version (rank 0: the node that led its pair).
    for node, row in report['hosts'].items():
        assert row['evidence']['daemons'] == 'ready: nccl-tcpxo-installer, device-injector', (node, row['evidence'])
        assert row['evidence']['plugin'] == 'FasTrak 1.0.13', (node, row['evidence'])
    assert {n for n, r in report['hosts'].items() if r['evidence']['nccl_version']} == {p['hosts'][0] for p in report['pairs']}
    assert '| installer / RxDM Pods |' in summary and '| ready: nccl-tcpxo-installer, device-injector |' in summary, summary
    sys.stderr.write('diagnosis, healthy pool: %s s\n%s\n' % (run.wall, summary))
