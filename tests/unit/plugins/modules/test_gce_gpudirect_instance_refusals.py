# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gce_gpudirect_instance module in-process, with no API: bad input is refused naming the option before the
first request. The endpoint is a closed local port, so a request made before the refusal would fail with a
connection error instead of the expected message. (tests/integration/test_gce_gpudirect_instance.py runs it
against the sandbox; module_utils/gce/instance.py's plan is unit-tested in test_gce_instance_plan.py.)"""
from __future__ import annotations

import pytest

from module_runner import run_module
from ansible_collections.aiinfra.gpudirect.plugins.modules import gce_gpudirect_instance

CLOSED = 'http://127.0.0.1:9/compute/v1/'
BASE = {'project': 'test-project', 'auth_kind': 'none', 'compute_endpoint': CLOSED, 'retry_deadline': 1,
        'zone': 'us-central1-a', 'machine_type': 'a3-highgpu-8g', 'network_prefix': 'hi', 'count': 2}


@pytest.mark.parametrize('args, message', [
    ({'count': -1}, 'count'),
    ({'boot_disk_size_gb': -10}, 'boot_disk_size_gb'),
    ({'provisioning_model': 'spot'}, 'termination_action'),
    ({'provisioning_model': 'standard', 'termination_action': 'STOP'}, 'termination_action'),
    ({'provisioning_model': 'flex_start'}, 'termination_action: flex_start needs one of STOP, DELETE'),
    ({'provisioning_model': 'flex_start', 'termination_action': 'DELETE'}, 'max_run_duration'),
    ({'count': None, 'names': ['vm-a', 'vm-a']}, 'names'),
    ({'labels': {'Team': 'ml'}}, 'labels'),
    ({'zone': 'us-central1'}, 'zone'),
    ({'machine_type': 'a3-ultragpu-9g'}, 'machine_type'),
    ({'timeout': 0}, 'timeout'),
])
def test_bad_input_is_refused_naming_the_option_before_any_request(args, message):
    merged = {key: value for key, value in dict(BASE, **args).items() if value is not None}
    result = run_module(gce_gpudirect_instance.main, merged)
    assert result['failed'] is True, result
    assert message in result['msg'], result['msg']
    assert '127.0.0.1:9' not in result['msg'] and 'Connection refused' not in result['msg'], result['msg']


@pytest.mark.parametrize('step, expected', [
    ('create', "create instance 'vm-1' in us-central1-a"),
    ('recreate', "replace instance 'vm-1' (machineType, disks)"),
    ('update', "set labels, metadata of instance 'vm-1'"),
    ('start', "start instance 'vm-1'"),
    ('stop', "stop instance 'vm-1'"),
])
def test_each_step_is_described_for_the_user(step, expected):
    assert gce_gpudirect_instance.describe_step('vm-1', step, 'us-central1-a', ['labels', 'metadata'], ['machineType', 'disks']) == expected
