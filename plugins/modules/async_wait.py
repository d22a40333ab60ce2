#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# The action plugin plugins/action/async_wait.py does the work; this file holds its documentation.

DOCUMENTATION = r"""
---
module: async_wait
short_description: Wait for an async job of this host and return its result, saying where it stands
version_added: 0.1.0
description:
  - Looks at an async job (a task run with C(async) and C(poll=0)) every O(delay) seconds, as
    M(ansible.builtin.async_status) does, until it has finished or O(timeout) passes, then returns the job's own result
    (C(changed), C(failed), C(msg) and the module's return values) and removes its result file.
  - Unlike M(ansible.builtin.async_status) in an C(until) loop, a job still running prints no "FAILED - RETRYING" line
    per look; a line says where it stands every 30 seconds, and a wait that runs out names the job and its result file.
author:
  - aiinfra.gpudirect contributors (@aiinfra)
options:
  jid:
    description: The job's ID (C(ansible_job_id) of the task that started it).
    type: str
    required: true
  timeout:
    description: Seconds to wait before failing; the job goes on running.
    type: float
    default: 3600
  delay:
    description: Seconds between looks.
    type: float
    default: 1
  description:
    description: How messages name the job, such as C(the per-NIC networks).
    type: str
  cleanup:
    description: Remove the job's result file once its result is read.
    type: bool
    default: true
attributes:
  action:
    support: full
    details: An action plugin; it looks at the job on the task's host through that host's connection, as async_status does.
  async:
    support: none
  bypass_host_loop:
    support: none
  platform:
    support: full
    platforms: posix
  check_mode:
    support: full
    details: Reads only; a job is not started in check mode, so a task that waits for one is usually skipped there.
  diff_mode:
    support: none
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
seealso:
  - module: ansible.builtin.async_status
"""

EXAMPLES = r"""
- name: Start the networks
  aiinfra.gpudirect.gce_gpudirect_network:
    network_prefix: a3mega
    machine_type: a3-megagpu-8g
    region: us-central1
  async: 3600
  poll: 0
  register: networks_job

- name: Wait for the networks
  aiinfra.gpudirect.async_wait:
    jid: "{{ networks_job.ansible_job_id }}"
    description: the per-NIC networks
"""

RETURN = r"""
waited:
  description: Seconds waited.
  returned: always
  type: float
ansible_job_id:
  description: The job's ID.
  returned: always
  type: str
changed:
  description: Whether the job changed anything (its own result).
  returned: always
  type: bool
"""
