#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# The action plugin plugins/action/pod_exec.py does the work; this file holds its documentation.

DOCUMENTATION = r"""
---
module: pod_exec
short_description: Run a command in a Pod's container and fail with the command's own outcome
version_added: 0.1.0
description:
  - Runs O(command) in the container O(container) of the Pod O(pod), as C(kubectl exec) does (the API server's
    C(pods/exec), no stdin, no terminal), and returns its output and exit code.
  - >-
    Fails, naming the command, the Pod and the container, when the command exits with a code other than 0 (with the last
    lines of its stderr, or of its stdout when stderr is empty), when it does not run to an exit code (the kubelet's own
    message, such as an executable not found in the image), when it outlives O(timeout), and when the API server refuses
    the exec (its code and message: a Pod or container that does not exist, a Pod not running). Use C(failed_when) to
    judge the output another way.
author:
  - aiinfra.gpudirect contributors (@aiinfra)
attributes:
  check_mode:
    support: full
    details: A command's effects are unknown, so check mode does not run it (as M(ansible.builtin.command)); the task is skipped and says what would run.
  diff_mode:
    support: none
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - aiinfra.gpudirect.kube_action
options:
  namespace:
    description: The Pod's namespace.
    type: str
    default: default
  pod:
    description: The Pod's name; required unless O(runs) is given.
    type: str
  container:
    description: The container of the Pod to run the command in; required with O(pod), the default container of O(runs).
    type: str
  command:
    description:
      - The command, as a list of arguments or as one string split as a shell would (no shell runs it; give C(sh -c '...') for one).
      - Required with O(pod).
    type: raw
  runs:
    description:
      - Several commands run at once instead of one, each C({pod, command}) with an optional C(container) (default
        O(container)), each on its own exec stream (the pairs of an NCCL diagnosis round, for example).
      - The task does not fail for a run that fails; each entry of RV(results) says how its run ended, with the same
        messages as a single command. A run missing C(pod), C(container) or C(command) fails the task before any runs.
    type: list
    elements: dict
  timeout:
    description: Seconds the command may run; then the task fails with the output so far.
    type: int
    default: 3600
seealso:
  - module: kubernetes.core.k8s_exec
"""

EXAMPLES = r"""
- name: The RDMA devices of a test Pod
  aiinfra.gpudirect.pod_exec:
    namespace: default
    pod: rdma-test-server
    container: rdma-workload
    command: rdma link show
  register: links
  changed_when: false

- name: A script, its non-zero exit judged by the play
  aiinfra.gpudirect.pod_exec:
    pod: nccl-test-host-1
    container: nccl-test
    command: [sh, -c, /scripts/allgather.sh nccl-host-1 nccl-host-2]
  register: run
  failed_when: run.rc is none

- name: Two pairs at once
  aiinfra.gpudirect.pod_exec:
    container: nccl-test
    runs:
      - {pod: nccl-test-host-1, command: [/scripts/allgather.sh, nccl-host-1, nccl-host-2]}
      - {pod: nccl-test-host-3, command: [/scripts/allgather.sh, nccl-host-3, nccl-host-4]}
  register: round
  changed_when: false
"""

RETURN = r"""
rc:
  description: The command's exit code; null when it did not run to one.
  returned: when the exec ran
  type: int
  sample: 0
stdout:
  description: What the command printed on stdout.
  returned: when the exec ran
  type: str
stderr:
  description: What the command printed on stderr.
  returned: when the exec ran
  type: str
stdout_lines:
  description: RV(stdout) split into lines.
  returned: when the exec ran
  type: list
  elements: str
stderr_lines:
  description: RV(stderr) split into lines.
  returned: when the exec ran
  type: list
  elements: str
results:
  description:
    - With O(runs), one entry per run in their order, C({pod, container, command, rc, stdout, stderr, stdout_lines,
      stderr_lines}), with C(failed) and C(msg) when the run failed (a non-zero exit, no exit code, the timeout, or the API
      server refusing the exec).
  returned: with O(runs), when the commands ran
  type: list
  elements: dict
"""
