# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The aiinfra.gpudirect.nccl_results filter, directly and through Ansible's templating."""
from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.gpudirect.plugins.filter import nccl as nccl_filter
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import parse as nccl_parse

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'nccl')


def text(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return handle.read()


def test_filter_is_registered():
    assert nccl_filter.FilterModule().filters()['nccl_results'] is nccl_filter.nccl_results


def test_filter_returns_the_parser_result():
    output = text('multi_collective_mpi_tagged.txt')
    assert nccl_filter.nccl_results(output) == nccl_parse.parse(output)
    assert 'verdict' not in nccl_filter.nccl_results(output)


def test_filter_adds_a_verdict_when_given_a_family():
    result = nccl_filter.nccl_results(text('seed003_tcpx_all_gather.txt'), 'all_gather', 'a3-highgpu-8g')
    assert result['verdict']['passed'] and result['collectives'][0]['name'] == 'all_gather'


def test_filter_reads_loaded_json():
    import json
    result = nccl_filter.nccl_results(json.loads(text('json_all_gather.json')))
    assert result['format'] == 'json' and result['collectives'][0]['ranks'] == 16


def test_filter_errors_name_the_field():
    with pytest.raises(AnsibleFilterError, match='nccl_results: thresholds.all_gather: unknown key'):
        nccl_filter.nccl_results('', thresholds={'all_gather': {'x': 1}})
