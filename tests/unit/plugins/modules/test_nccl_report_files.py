# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl_report module in-process, without the plot (tests/integration/test_nccl_report.py draws it and validates
the JUnit file): it reports a change only when the files differ, and refuses bad input naming the option."""
from __future__ import annotations

import json
import os

import pytest

from module_runner import run_module
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import parse as nccl_parse
from ansible_collections.aiinfra.gpudirect.plugins.modules import nccl_report

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'nccl')


def parsed(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return nccl_parse.parse(handle.read(), collective='all_gather')


def report(dest, name='current_tcpxo_fastrak_pass.txt', check_mode=False, diff=False, **extra):
    args = dict({'parsed': parsed(name), 'dest': str(dest), 'machine_type': 'a3-megagpu-8g', 'plot': False}, **extra)
    return run_module(nccl_report.main, args, check_mode=check_mode, diff=diff)


def test_changed_only_when_the_files_differ(tmp_path):
    first = report(tmp_path)
    assert first['changed'] and first['verdict']['passed']
    written = {name: (tmp_path / name).read_text() for name in ('report.json', 'junit.xml', 'summary.md')}
    again = report(tmp_path)          # a later run of the same results keeps the first time stamp
    assert not again['changed']
    assert {name: (tmp_path / name).read_text() for name in written} == written
    (tmp_path / 'summary.md').write_text('edited by hand\n')
    assert report(tmp_path)['changed'] and (tmp_path / 'summary.md').read_text() == written['summary.md']
    other = report(tmp_path, name='current_socket_fallback_a3mega.txt')
    assert other['changed'] and not other['verdict']['passed']


def test_check_mode_writes_nothing_and_diff_shows_the_old_report(tmp_path):
    would = report(tmp_path, check_mode=True, diff=True)
    assert would['changed'] and would['files'] == [] and os.listdir(tmp_path) == []
    assert would['diff']['before'] == '' and json.loads(would['diff']['after'])['verdict'] == 'PASS'
    report(tmp_path)
    before = (tmp_path / 'report.json').read_text()
    changed = report(tmp_path, name='current_socket_fallback_a3mega.txt', check_mode=True, diff=True)
    assert changed['changed'] and changed['diff']['before'] == before and (tmp_path / 'report.json').read_text() == before


@pytest.mark.parametrize('extra, message', [
    ({'parsed': {'rows': []}}, 'parsed: not parsed NCCL results (no "collectives")'),
    ({'baseline': '/nonexistent/report.json'}, 'baseline: cannot read /nonexistent/report.json as a report.json'),
    ({'thresholds': {'all_gather': {'avg': 1}}}, 'parsed / machine_type / thresholds: '),
])
def test_bad_input_names_the_option(tmp_path, extra, message):
    result = report(tmp_path, **extra)
    assert result['failed'] and result['msg'].startswith(message), result['msg']
    assert os.listdir(tmp_path) == []


def test_a_baseline_that_is_not_a_report_is_refused(tmp_path):
    other = tmp_path / 'other.json'
    other.write_text('{"schema": "something else"}')
    result = report(tmp_path / 'out', baseline=str(other))
    assert result['failed'] and result['msg'].startswith('baseline: %s is not an NCCL report' % other)
