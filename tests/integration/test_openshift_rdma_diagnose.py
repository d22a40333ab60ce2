"""Issue 26 on OpenShift: playbooks/openshift_rdma.yml with -e openshift_rdma_proof_mode=diagnose, the real
ansible-playbook and kubernetes.core against the OpenShift stand-in on the real kube-apiserver control plane
(tests/sandbox/kube/openshift.py), its workers A3 Ultra-like (eight 400 Gb/s HCAs, eight GPUs: MACHINES there). The
stand-in's ib_write_bw (openshift_tools.py) prints slow numbers for a run touching a node or an HCA whose Node carries the
stand-in's fault annotations; the diagnosis must name that node (or that HCA), and only it, with its evidence."""

import os
import sys
import time

from PIL import Image

from sandbox.kube.errors import KubeError
from sandbox.kube.openshift import FAULT_SLOW_HCAS, FAULT_SLOW_NODE, MACHINES, SLOW_GBPS

from test_openshift_rdma_playbook import OpenShift, _out

NODES = 4
MACHINE = 'a3-ultragpu-8g'


def _mark(openshift, node, annotations):
    """Set (None: remove) the stand-in's fault annotations on a Node, again on a conflict (kwok writes the Node too)."""
    for _attempt in range(20):
        live = openshift.cluster.store.get('nodes', node)
        mine = live['metadata'].setdefault('annotations', {})
        mine.update(annotations)
        for key in [k for k, v in mine.items() if v is None]:
            del mine[key]
        try:
            openshift.cluster.store.update(live)
            return
        except KubeError as error:
            if error.code != 409:
                raise
    raise AssertionError('could not annotate node %s' % node)


def _diagnose(openshift, args=(), **extra):
    started = time.monotonic()
    settings = {'openshift_rdma_proof_mode': 'diagnose', 'openshift_rdma_machine_type': MACHINE,
                'openshift_rdma_method': 'shared_device', 'openshift_rdma_link': 'roce'}
    run = openshift.run(args=args, extra=dict(settings, **extra))
    run.wall = round(time.monotonic() - started, 1)
    return run


def _files(openshift):
    return sorted(os.listdir(openshift.report_dir))


def test_one_slow_node_then_one_slow_hca_are_named_and_only_they(tmp_path):
    openshift = OpenShift(tmp_path, workers=NODES, machine=MACHINE)
    try:
        nodes = list(openshift.sim.workers)
        bad = nodes[2]
        _mark(openshift, bad, {FAULT_SLOW_NODE: 'true'})
        first = _diagnose(openshift, openshift_rdma_fail_on_verdict=False)
        assert first.returncode == 0, _out(first)
        report = openshift.report()
        assert report['bad_hosts'] == [bad], report['hosts']
        assert report['suspect_hosts'] == []
        assert report['synthetic'] and report['measure'] == 'ib_write_bw' and report['unit'] == 'Gb/s'
        # 400 Gb/s per HCA (a3-ultragpu-8g: 3,200 Gb/s over 8 data NICs) x 0.75.
        assert report['nic_threshold_gbps'] == 300.0 and report['hca_gbps'] == 400.0
        row = report['hosts'][bad]
        assert any('every pair failed, also with healthy' in reason for reason in row['reasons']), row
        assert all(p['busbw_gbps'] == SLOW_GBPS and p['verdict'] == 'FAIL' for p in row['pairs']), row
        assert row['evidence']['gpus'] == MACHINES[MACHINE]['gpus'] and 'mlx5_7' in row['evidence']['network']
        assert {h for h, r in report['hosts'].items() if r['status'] == 'healthy'} == set(nodes) - {bad}
        # Every HCA of the bad node is slow: the node is bad as a whole, no HCA of it named.
        assert report['nics'] and not [f for f in report['nics'] if f['named']]
        summary = (openshift.report_dir / 'summary.md').read_text(encoding='utf-8')
        assert '# ib_write_bw (GPU memory) fabric diagnosis: **bad: %s**' % bad in summary
        assert 'STAND-IN OUTPUT' in summary
        assert _files(openshift) == ['junit.xml', 'pairs.png', 'report.json', 'summary.md']
        with Image.open(openshift.report_dir / 'pairs.png') as image:
            assert image.format == 'PNG'
        assert 'failures="1"' in (openshift.report_dir / 'junit.xml').read_text(encoding='utf-8')
        assert 'ib_write_bw diagnosis (STAND-IN OUTPUT, synthetic numbers): bad %s; suspect none' % bad in first.stdout, _out(first)
        # Rounds: disjoint pairs; the failed pair's two nodes with the two that passed; then one round per HCA of the bad node.
        assert report['host_rounds'] == 2 and report['rounds'] == 2 + 8, report['pairs']
        sys.stderr.write('diagnosis, slow node %s: %s s, summary:\n%s\n' % (bad, first.wall, summary))

        # One slow HCA on another node: that HCA named, on that node, and nothing else.
        _mark(openshift, bad, {FAULT_SLOW_NODE: None})
        hca_node = nodes[1]
        _mark(openshift, hca_node, {FAULT_SLOW_HCAS: 'mlx5_3'})
        # The play fails on a bad node (the default), after the report, and cordons it when asked.
        second = _diagnose(openshift, openshift_rdma_cordon_bad_nodes=True, args=['--tags', 'proof'])
        assert second.returncode != 0 and 'ib_write_bw diagnosis: bad %s; suspect none' % hca_node in second.stdout, _out(second)
        assert openshift.get('nodes', hca_node)['spec'].get('unschedulable') is True
        assert not any(openshift.get('nodes', n)['spec'].get('unschedulable') for n in nodes if n != hca_node)
        report = openshift.report()
        # Its pairs run every HCA at once: they fail, the node is bad; its HCAs alone against a healthy node's: only mlx5_3
        # stays below 300 Gb/s while the others reach it, so mlx5_3 is named.
        assert report['bad_hosts'] == [hca_node], report['hosts']
        named = [(f['host'], f['nic'], f['busbw_gbps']) for f in report['nics'] if f['named']]
        assert named == [(hca_node, 'mlx5_3', SLOW_GBPS)], report['nics']
        assert report['hosts'][hca_node]['bad_nics'] == ['mlx5_3']
        assert any(reason.startswith('NIC mlx5_3: 180.47') for reason in report['hosts'][hca_node]['reasons']), report['hosts'][hca_node]
        assert all(p['reasons'] == ['mlx5_3: BW average 180.47 Gb/s is below 300.00 Gb/s (75% of the 400 Gb/s link)']
                   for p in report['pairs'] if hca_node in p['hosts']), report['pairs']
        summary = (openshift.report_dir / 'summary.md').read_text(encoding='utf-8')
        assert '| %s | worker-' % hca_node in summary and '| mlx5_3 | 180.47 | **named** |' in summary, summary
        assert 'Bad HCAs: mlx5_3 on %s' % hca_node in second.stdout, _out(second)
        sys.stderr.write('diagnosis, slow HCA mlx5_3 on %s: %s s, summary:\n%s\n' % (hca_node, second.wall, summary))
    finally:
        openshift.stop()
