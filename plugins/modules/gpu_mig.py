#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_mig
short_description: Partition NVIDIA GPUs with multi-instance GPU (MIG) on a host
version_added: 0.1.0
description:
  - Enables MIG mode on the chosen GPUs and creates GPU instances and their compute instances by
    profile, as the Compute Engine manual's multi-instance GPU section asks (for example seven
    C(1g.10gb) GPU instances on an H100 80GB, or seven C(1g.18gb) on an H200); or destroys them and
    disables MIG mode again.
  - Reads the state with C(nvidia-smi) (C(--query-gpu=...mig.mode.current,mig.mode.pending),
    C(nvidia-smi mig -lgip), C(-lgipp), C(-lgi), C(-lci), C(--query-compute-apps)) and changes only
    what differs. GPU instances that already match are kept; the missing ones are created at
    placements computed from C(nvidia-smi mig -lgipp) around them; when they do not fit around what
    is kept, the GPU's instances are rebuilt.
  - Checks everything before the first change, and fails with what to do when a GPU is busy
    (processes on it), when the host runs GPUDirect-TCPX or GPUDirect-TCPXO (they do not work with
    MIG), when the layout does not fit on the GPU, or when the mode change needs a GPU reset that
    O(allow_gpu_reset) does not allow.
  - Runs on the target with the Python standard library only (Container-Optimized OS).
author:
  - aiinfra.gpudirect contributors (@aiinfra)
options:
  state:
    description:
      - V(enabled) turns MIG mode on and makes the GPU instances of O(instances) exist (and no others).
      - V(disabled) destroys the compute and GPU instances and turns MIG mode off.
    type: str
    choices: [enabled, disabled]
    default: enabled
  gpus:
    description:
      - Indexes of the GPUs to manage (C(nvidia-smi --query-gpu=index)); empty means every GPU.
    type: list
    elements: int
    default: []
  instances:
    description:
      - GPU instances to have on every chosen GPU (O(state=enabled)).
    type: list
    elements: dict
    default: []
    suboptions:
      profile:
        description:
          - GPU instance profile as C(nvidia-smi mig -lgip) names it, with or without C(MIG ), or its
            profile ID (V(1g.10gb), V(3g.40gb) on H100 80GB; V(1g.18gb), V(3g.71gb) on H200).
        type: str
        required: true
      count:
        description: How many GPU instances of this profile.
        type: int
        default: 1
      compute_instances:
        description:
          - Compute instance profiles inside each of these GPU instances (V(1c.3g.40gb), ...). Default
            one compute instance of the whole GPU instance (what C(nvidia-smi mig -cgi ... -C) creates).
        type: list
        elements: str
  allow_gpu_reset:
    description:
      - Run C(nvidia-smi --gpu-reset -i N) when the driver leaves a mode change pending until a GPU
        reset. Hopper GPUs (H100, H200) need none (NVIDIA's MIG User Guide); where one is needed and
        resets are not allowed, the module fails and says so.
    type: bool
    default: false
  gpudirect_technology:
    description:
      - The GPUDirect technology this host runs, as the host stage knows it (the machine family's
        technology, or V(none) when the host is prepared without GPUDirect). GPUDirect-TCPX and
        GPUDirect-TCPXO do not work with MIG, so O(state=enabled) is refused unless this is V(none).
    type: str
    choices: [none, TCPX, TCPXO]
    required: true
  nvidia_smi:
    description: Path of nvidia-smi (C(cos-extensions) puts it in C(/var/lib/nvidia/bin) on Container-Optimized OS).
    type: path
    default: /var/lib/nvidia/bin/nvidia-smi
notes:
  - Needs root (become) on the host.
  - The role P(aiinfra.gpudirect.cos_host_prep#role) runs this module when its variable C(cos_host_prep_mig) is set.
  - MIG mode and MIG devices last only while the driver is loaded; after a reboot run the module again.
seealso:
  - name: NVIDIA Multi-Instance GPU User Guide
    description: Profiles, placements and the nvidia-smi mig commands.
    link: https://docs.nvidia.com/datacenter/tesla/mig-user-guide/
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Only the listings run.
  diff_mode:
    support: full
    details: Each chosen GPU's mode and instances.
  platform:
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Seven 1g.10gb GPU instances on every H100 of an A3 VM prepared without GPUDirect
  aiinfra.gpudirect.gpu_mig:
    gpudirect_technology: none
    instances:
      - profile: 1g.10gb
        count: 7
  become: true

- name: GPU 0 of an H200 as one 4g.71gb and one 3g.71gb split into three compute instances
  aiinfra.gpudirect.gpu_mig:
    gpudirect_technology: none
    gpus: [0]
    instances:
      - profile: 4g.71gb
      - profile: 3g.71gb
        compute_instances: [1c.3g.71gb, 1c.3g.71gb, 1c.3g.71gb]
  become: true

- name: Whole GPUs again
  aiinfra.gpudirect.gpu_mig:
    gpudirect_technology: none
    state: disabled
  become: true
"""

RETURN = r"""
gpus:
  description: Each chosen GPU after the run (in check mode, what the run would leave).
  returned: always
  type: list
  elements: dict
  sample:
    - index: 0
      name: NVIDIA H200
      mig_mode: Enabled
      gpu_instances: ["3g.71gb at 0:4, compute instances: 3g.71gb", "4g.71gb at 4:4, compute instances: 4g.71gb"]
commands:
  description: The nvidia-smi commands that changed something (in check mode, those that would run).
  returned: always
  type: list
  elements: list
  sample: [["-i", "0", "-mig", "1"], ["mig", "-i", "0", "-cgi", "5:0,9:4", "-C"]]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import mig

ARGUMENT_SPEC = dict(
    state=dict(type='str', choices=['enabled', 'disabled'], default='enabled'),
    gpus=dict(type='list', elements='int', default=[]),
    instances=dict(type='list', elements='dict', default=[], options=dict(
        profile=dict(type='str', required=True),
        count=dict(type='int', default=1),
        compute_instances=dict(type='list', elements='str'),
    )),
    allow_gpu_reset=dict(type='bool', default=False),
    gpudirect_technology=dict(type='str', choices=['none', 'TCPX', 'TCPXO'], required=True),
    nvidia_smi=dict(type='path', default='/var/lib/nvidia/bin/nvidia-smi'),
)


class NvidiaSmi:
    """nvidia-smi through run_command; listings read 'nothing found' as empty, changes fail on a non-zero exit."""

    def __init__(self, module, path):
        self.module, self.path, self.ran = module, path, []

    def _run(self, args):
        if not os.access(self.path, os.X_OK):
            raise mig.MigError('nvidia_smi: cannot run %s (no such executable); install the GPU driver first '
                               '(cos-extensions install gpu) or point nvidia_smi at it' % self.path)
        return self.module.run_command([self.path] + list(args))

    def read(self, args):
        rc, out, err = self._run(args)
        if rc != 0 and not mig.NOTHING_FOUND.search(out + err):
            raise mig.MigError('nvidia-smi %s failed (exit %d): %s' % (' '.join(args), rc, (out + err).strip()))
        return out

    def change(self, args):
        rc, out, err = self._run(args)
        self.ran.append(list(args))
        if rc != 0:
            raise mig.MigError('nvidia-smi %s failed (exit %d): %s' % (' '.join(args), rc, (out + err).strip()))
        return out


class HostState:
    """Every listing the plan needs, read once."""

    def __init__(self, smi):
        self.gpus = mig.parse_gpus(smi.read(mig.QUERY_GPUS))
        self.profiles = mig.parse_profiles(smi.read(mig.LIST_PROFILES))
        self.placements = mig.parse_placements(smi.read(mig.LIST_PLACEMENTS))
        self.gpu_instances = mig.parse_gpu_instances(smi.read(mig.LIST_GPU_INSTANCES))
        self.compute_instances = mig.parse_compute_instances(smi.read(mig.LIST_COMPUTE_INSTANCES))
        self.processes = mig.parse_processes(smi.read(mig.QUERY_PROCESSES))

    def gpu(self, index):
        return next(g for g in self.gpus if g['index'] == index)


def chosen_gpus(state, indexes):
    known = [g['index'] for g in state.gpus]
    unknown = [i for i in indexes if i not in known]
    if unknown:
        raise mig.MigError('gpus: no GPU %s on this host; nvidia-smi lists GPU %s' % (', '.join(map(str, unknown)), ', '.join(map(str, known))))
    return [g for g in state.gpus if not indexes or g['index'] in indexes]


def make_plans(params, state):
    """(GpuPlan, profiles) for each chosen GPU; MigError for the first problem, before anything changes."""
    plans, problems = [], []
    if params['state'] == 'disabled' and params['instances']:
        raise mig.MigError('instances: state disabled destroys every GPU instance; remove instances or set state: enabled')
    for gpu in chosen_gpus(state, params['gpus']):
        profiles = mig.live_profiles(gpu['index'], state.profiles, state.placements)
        wanted = []
        if params['state'] == 'enabled':
            if not profiles:
                raise mig.MigError('gpus: GPU %d (%s) lists no MIG profiles (nvidia-smi mig -lgip): it does not support MIG'
                                   % (gpu['index'], gpu['name']))
            try:
                wanted = mig.wanted_instances(params['instances'], profiles, gpu['name'])
                mig.check_layout(wanted, profiles, gpu['name'])
            except ValueError as exc:
                raise mig.MigError(str(exc)) from None
        plan = mig.plan_gpu(gpu, params['state'], wanted, profiles, state.gpu_instances, state.compute_instances)
        if plan.changes:
            busy = mig.busy_problem(gpu, state.processes)
            if busy:
                problems.append(busy)
            if plan.mode and gpu['mig_pending'] == plan.mode and gpu['mig_current'] != plan.mode and not params['allow_gpu_reset']:
                problems.append(reset_needed(gpu, plan.mode))
        plans.append((plan, profiles))
    if problems:
        raise mig.MigError('; '.join(problems))
    return plans


def reset_needed(gpu, mode, output=''):
    return ('GPU %d (%s): MIG mode is %s with %s pending: the driver needs a GPU reset for the change to take effect%s; '
            'set allow_gpu_reset: true (runs nvidia-smi --gpu-reset -i %d) or reboot the VM, then run again'
            % (gpu['index'], gpu['pci_bus_id'], gpu['mig_current'], mode,
               ' (nvidia-smi said: %s)' % ' '.join(output.split()) if output.strip() else '', gpu['index']))


def read_gpu(smi, index):
    return next(g for g in mig.parse_gpus(smi.read(mig.QUERY_GPUS)) if g['index'] == index)


def set_mode(smi, params, plan):
    """Change the mode and read it back: the real nvidia-smi exits 0 and prints a warning when the change is only pending."""
    output = smi.change(mig.mode_argv(plan.index, plan.mode))
    now = read_gpu(smi, plan.index)
    if now['mig_current'] == plan.mode:
        return
    if not params['allow_gpu_reset']:
        raise mig.MigError(reset_needed(now, plan.mode, output))
    busy = mig.busy_problem(now, mig.parse_processes(smi.read(mig.QUERY_PROCESSES)))
    if busy:
        raise mig.MigError(busy)
    smi.change(mig.reset_argv(plan.index))
    now = read_gpu(smi, plan.index)
    if now['mig_current'] != plan.mode:
        raise mig.MigError('GPU %d: MIG mode is still %s after the GPU reset; reboot the VM, then run again' % (plan.index, now['mig_current']))


def apply(smi, params, plan, profiles, compute_instances):
    for instance in plan.destroy:
        for argv in mig.destroy_argvs(plan.index, instance, compute_instances):
            smi.change(argv)
    if plan.mode:
        set_mode(smi, params, plan)
    for argv, wanted in mig.creation_steps(plan, profiles):
        created = mig.created_gpu_instance_ids(smi.change(argv))
        if wanted:
            if not created:
                raise mig.MigError('GPU %d: nvidia-smi did not say which GPU instance it created for %s' % (plan.index, wanted.profile))
            smi.change(mig.compute_argv(plan.index, created[0], wanted))


def report(state, plans, planned):
    rows = []
    for plan, profiles in plans:
        gpu = state.gpu(plan.index)
        shown = (mig.describe_planned(gpu, plan, profiles, state.compute_instances) if planned and plan.changes
                 else mig.describe(gpu, state.gpu_instances, state.compute_instances))
        rows.append(dict(index=gpu['index'], name=gpu['name'], **shown))
    return rows


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    smi = NvidiaSmi(module, params['nvidia_smi'])
    try:
        mig.check_gpudirect(params['gpudirect_technology'], params['state'])
        before_state = HostState(smi)
        plans = make_plans(params, before_state)
        before = report(before_state, plans, planned=False)
        changed = any(plan.changes for plan, _profiles in plans)
        commands = [argv for plan, profiles in plans for argv in mig.planned_commands(plan, profiles, before_state.compute_instances)]
        if module.check_mode or not changed:
            after = report(before_state, plans, planned=True)
        else:
            for plan, profiles in plans:
                if plan.changes:
                    apply(smi, params, plan, profiles, before_state.compute_instances)
            commands = smi.ran
            after = report(HostState(smi), plans, planned=False)
    except mig.MigError as exc:
        module.fail_json(msg=str(exc), commands=smi.ran)
    module.exit_json(changed=changed, gpus=after, commands=commands, diff={'before': {'gpus': before}, 'after': {'gpus': after}})


if __name__ == '__main__':
    main()
