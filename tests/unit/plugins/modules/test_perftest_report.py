# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The perftest_report module in-process: the report directory of an ib_write_bw verdict (the text files as
perftest.output renders them, the plot a PNG of its size drawn by the real matplotlib), a change only when a file
differs, check mode writes nothing, ``plot: false`` without matplotlib, bad input refused naming the option."""
from __future__ import annotations

import json
import os
import sys

import pytest
from PIL import Image

from module_runner import run_module
from ansible_collections.aiinfra.gpudirect.plugins.module_utils import report_dir
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.perftest import output as perftest
from ansible_collections.aiinfra.gpudirect.plugins.modules import perftest_report

PUBLIC = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'perftest', 'spark_ib_write_bw_q4.txt')
# Red Hat's chapter §10 result line with perftest's header (as in tests/unit/plugins/module_utils/test_openshift_rdma.py).
CHAPTER = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      10329004         0.00               180.47 \t\t   0.344228
---------------------------------------------------------------------------------------
"""
# Synthetic numbers in the format of perftest without --report_gbits and with -a (MB/sec, one row per size).
SWEEP_MB = """ #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 2          5000           10.00              9.50               4.750000
 65536      5000           23000.00           22500.00           0.343323
 8388608    5000           24000.00           23750.00           0.002831
---------------------------------------------------------------------------------------
"""
TEXT_FILES = ('report.json', 'junit.xml', 'summary.md')


def report(dest, output=CHAPTER, check_mode=False, diff=False, **extra):
    args = dict({'parsed': perftest.parse(output), 'configuration': 'shared_device/roce', 'dest': str(dest),
                 'link_gbps': 200}, **extra)
    return run_module(perftest_report.main, args, check_mode=check_mode, diff=diff)


def texts(dest):
    return {name: (dest / name).read_text(encoding='utf-8') for name in TEXT_FILES}


@pytest.mark.parametrize('output, configuration, link_gbps, verdict', [
    (CHAPTER, 'shared_device/roce', 200, 'PASS'),
    (CHAPTER, 'host_device/infiniband', 400, 'FAIL'),
    (open(PUBLIC, encoding='utf-8').read(), 'sriov_legacy/infiniband', 200, 'FAIL'),
    (SWEEP_MB, 'sriov_legacy/roce', 200, 'PASS'),
])
def test_report_directory_holds_the_rendered_files_and_a_png_of_its_size(tmp_path, output, configuration, link_gbps, verdict):
    dest = tmp_path / 'report'
    result = report(dest, output, configuration=configuration, link_gbps=link_gbps)
    assert result['changed'] and result['verdict']['verdict'] == verdict
    assert sorted(os.path.basename(path) for path in result['files']) == sorted(perftest.FILES)
    # The text files are exactly what perftest.output renders (what the role wrote before the module).
    parsed = perftest.parse(output)
    assert texts(dest) == perftest.render(perftest.build_report(parsed, perftest.evaluate(parsed, link_gbps), configuration))
    assert json.loads((dest / 'report.json').read_text())['verdict'] == result['verdict'] == result['report']['verdict']
    with Image.open(dest / perftest.PLOT) as image:
        image.verify()
    with Image.open(dest / perftest.PLOT) as image:
        assert image.format == 'PNG'
        assert image.size == (report_dir.PLOT_SIZE_INCHES[0] * report_dir.PLOT_DPI, report_dir.PLOT_SIZE_INCHES[1] * report_dir.PLOT_DPI)


def test_plot_lines_are_gbps_per_size_with_the_verdicts_threshold():
    parsed = perftest.parse(SWEEP_MB)
    lines = perftest.plot_lines(perftest.build_report(parsed, perftest.evaluate(parsed, 200, 0.75), 'sriov_legacy/roce'))
    assert lines['series'] == [
        ('BW average', '-o', [(2, 0.076), (65536, 180.0), (8388608, 190.0)]),
        ('BW peak', '--s', [(2, 0.08), (65536, 184.0), (8388608, 192.0)]),
    ]
    assert lines['thresholds'] == [(150.0, 'threshold 150.00 Gb/s (75% of the 200 Gb/s link)')]
    assert lines['title'] == 'ib_write_bw sriov_legacy/roce -- PASS' and lines['ylabel'] == 'bandwidth (Gb/s)'


def test_rerun_changes_nothing_and_a_changed_file_is_rewritten(tmp_path):
    assert report(tmp_path)['changed']
    written = texts(tmp_path)
    plot_mtime = os.stat(tmp_path / perftest.PLOT).st_mtime_ns
    again = report(tmp_path, diff=True)
    assert not again['changed'] and again['diff']['before'] == again['diff']['after']
    assert texts(tmp_path) == written and os.stat(tmp_path / perftest.PLOT).st_mtime_ns == plot_mtime
    (tmp_path / 'summary.md').write_text('edited by hand\n')
    assert report(tmp_path)['changed'] and texts(tmp_path) == written
    os.remove(tmp_path / perftest.PLOT)
    assert report(tmp_path)['changed'] and os.path.exists(tmp_path / perftest.PLOT)
    assert report(tmp_path, link_gbps=400)['changed'] and json.loads((tmp_path / 'report.json').read_text())['verdict']['verdict'] == 'FAIL'


def test_check_mode_writes_nothing_and_diff_shows_the_old_report(tmp_path):
    dest = tmp_path / 'report'
    would = report(dest, check_mode=True, diff=True)
    assert would['changed'] and would['files'] == [] and not dest.exists()
    assert would['diff']['before'] == '' and json.loads(would['diff']['after'])['verdict']['verdict'] == 'PASS'
    report(dest)
    before = {name: (dest / name).read_bytes() for name in perftest.FILES}
    other = report(dest, link_gbps=400, check_mode=True, diff=True)
    assert other['changed'] and other['verdict']['verdict'] == 'FAIL' and other['files'] == []
    assert other['diff']['before'] == before['report.json'].decode() != other['diff']['after']
    assert {name: (dest / name).read_bytes() for name in perftest.FILES} == before


def test_plot_false_works_without_matplotlib_and_plot_true_says_so(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)   # import matplotlib now raises ImportError
    refused = report(tmp_path / 'with-plot')
    assert refused['failed'] and 'matplotlib' in refused['msg'] and 'plot: false' in refused['msg'], refused['msg']
    assert not (tmp_path / 'with-plot').exists()
    result = report(tmp_path / 'without', plot=False)
    assert result['changed'] and sorted(os.listdir(tmp_path / 'without')) == sorted(TEXT_FILES)


@pytest.mark.parametrize('extra, message', [
    ({'parsed': {'rows': []}}, 'parsed: not a parsed ib_write_bw result (no test, device'),
    ({'parsed': dict(perftest.parse(CHAPTER), rows=[{'bytes': 65536}])}, 'parsed: rows must be the result table'),
    ({'parsed': dict(perftest.parse(CHAPTER), unit='KB/sec')}, "parsed: unknown bandwidth unit 'KB/sec'"),
    ({'link_gbps': 0}, 'link_gbps: 0.0 is not a link rate'),
    ({'threshold_fraction': 1.5}, 'threshold_fraction: 1.5 is outside (0, 1]'),
])
def test_bad_input_names_the_option_and_writes_nothing(tmp_path, extra, message):
    result = report(tmp_path / 'report', **extra)
    assert result['failed'] and result['msg'].startswith(message), result['msg']
    assert not (tmp_path / 'report').exists()
