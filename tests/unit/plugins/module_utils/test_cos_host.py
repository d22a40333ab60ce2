# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/cos/host.py: the host steps that create missing device nodes, as both host modules report them."""
from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import host as cos_host
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks


def test_the_dmabuf_helper_is_made_by_the_technologys_modprobe_and_gpus_by_the_driver():
    stack = host_stacks.host_stack(families.TCPXO)
    fixes = cos_host.device_fixes(families.TCPXO, [host_stacks.DMABUF_DEVICE, '/dev/nvidia0'])
    assert [fix['path'] for fix in fixes] == [host_stacks.DMABUF_DEVICE, '/dev/nvidia0']
    assert fixes[0]['fix'] == ' && '.join(' '.join(cos_host.argv(command)) for command in stack.modprobe_commands)
    assert fixes[0]['fix'] == 'modprobe import-helper'
    assert fixes[1]['fix'] == 'cos-extensions install gpu -- --version=latest (the NVIDIA driver creates /dev/nvidia*)'


def test_a_technology_without_modprobe_steps_points_every_device_at_the_driver():
    assert not host_stacks.host_stack(families.TCPX).modprobe_commands
    fixes = cos_host.device_fixes(families.TCPX, [host_stacks.DMABUF_DEVICE])
    assert fixes == [{'path': host_stacks.DMABUF_DEVICE,
                      'fix': 'cos-extensions install gpu -- --version=latest (the NVIDIA driver creates /dev/nvidia*)'}]
