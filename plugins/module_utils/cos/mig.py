# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Multi-instance GPU on a host, through nvidia-smi: read the state, plan the difference, apply it.

Layers: parsers of nvidia-smi's listings (pure) -> the layout asked for, checked against the GPU's
profiles and placements (pure) -> one plan per GPU (pure: which GPU instances stay, which go, which
are created where, whether the MIG mode changes) -> apply, which runs the plan's nvidia-smi commands
and reads the mode again after each mode change (the real tool exits 0 when the change is only
pending). Standard library only: the gpu_mig module runs this on Container-Optimized OS.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import mig as mig_catalog

QUERY_GPUS = ('--query-gpu=index,name,pci.bus_id,mig.mode.current,mig.mode.pending', '--format=csv,noheader')
QUERY_PROCESSES = ('--query-compute-apps=gpu_bus_id,pid,process_name', '--format=csv,noheader')
LIST_PROFILES = ('mig', '-lgip')
LIST_PLACEMENTS = ('mig', '-lgipp')
LIST_GPU_INSTANCES = ('mig', '-lgi')
LIST_COMPUTE_INSTANCES = ('mig', '-lci')
ENABLED, DISABLED = 'Enabled', 'Disabled'
# What nvidia-smi prints instead of a table when there is nothing to list (captured: "No MIG-enabled
# devices found." with rc 0 on an H200 with MIG off; NVIDIA's examples: "No compute instances found: Not Found").
NOTHING_FOUND = re.compile(r'^No (MIG-enabled devices|GPU instances|compute instances) found', re.M)


class MigError(Exception):
    """A MIG request that cannot be carried out; the text names the option or the GPU and the fix."""


# ---------------------------------------------------------------------------------------------
# Parsers
# ---------------------------------------------------------------------------------------------

def _csv_rows(text, width, what):
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(',')]
        if len(fields) != width:
            raise ValueError('nvidia-smi %s line %d: %r has %d fields, expected %d' % (what, number, line, len(fields), width))
        rows.append(fields)
    return rows


def parse_gpus(text):
    """QUERY_GPUS output -> [{index, name, pci_bus_id, mig_current, mig_pending}]."""
    return [{'index': int(f[0]), 'name': f[1], 'pci_bus_id': f[2], 'mig_current': f[3], 'mig_pending': f[4]}
            for f in _csv_rows(text, 5, '--query-gpu')]


def parse_processes(text):
    """QUERY_PROCESSES output -> [{pci_bus_id, pid, name}] (empty output: no process)."""
    return [{'pci_bus_id': f[0], 'pid': int(f[1]), 'name': f[2]} for f in _csv_rows(text, 3, '--query-compute-apps')]


def _table_rows(text):
    """The cells of each data row of an nvidia-smi box table ('|   0  MIG 1g.18gb   19 ...|')."""
    if NOTHING_FOUND.search(text):
        return []
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith('|') and line.endswith('|') and re.match(r'^\|\s+\d+\s', line):
            rows.append(line.strip('|').split())
    return rows


def parse_profiles(text):
    """``nvidia-smi mig -lgip`` -> {gpu: {profile name: (profile id, free, total)}}; name without ``MIG ``."""
    profiles = {}
    for cells in _table_rows(text):
        if len(cells) >= 5 and cells[1] == 'MIG' and '/' in cells[4]:
            free, total = cells[4].split('/')
            profiles.setdefault(int(cells[0]), {})[cells[2]] = (int(cells[3]), int(free), int(total))
    return profiles


_PLACEMENT = re.compile(r'^GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,]*)\}:(\d+)\s*$')


def parse_placements(text):
    """``nvidia-smi mig -lgipp`` -> {gpu: {profile id: (starts, size)}}."""
    placements = {}
    for line in text.splitlines():
        match = _PLACEMENT.match(line.strip())
        if match:
            gpu, profile_id, starts, size = match.groups()
            placements.setdefault(int(gpu), {})[int(profile_id)] = (tuple(int(s) for s in starts.split(',') if s), int(size))
    return placements


def parse_gpu_instances(text):
    """``nvidia-smi mig -lgi`` -> [{gpu, profile, profile_id, id, start, size}]."""
    instances = []
    for cells in _table_rows(text):
        if len(cells) == 6 and cells[1] == 'MIG' and ':' in cells[5]:
            start, size = cells[5].split(':')
            instances.append({'gpu': int(cells[0]), 'profile': cells[2], 'profile_id': int(cells[3]), 'id': int(cells[4]),
                              'start': int(start), 'size': int(size)})
    return instances


def parse_compute_instances(text):
    """``nvidia-smi mig -lci`` -> [{gpu, gpu_instance, profile, profile_id, id}] (with or without the Placement column)."""
    instances = []
    for cells in _table_rows(text):
        if len(cells) in (6, 7) and cells[2] == 'MIG':
            instances.append({'gpu': int(cells[0]), 'gpu_instance': int(cells[1]), 'profile': cells[3].rstrip('*'),
                              'profile_id': int(cells[4].rstrip('*')), 'id': int(cells[5])})
    return instances


_CREATED_GI = re.compile(r'Successfully created GPU instance ID\s+(\d+) on GPU\s+(\d+) using profile MIG (\S+)')


def created_gpu_instance_ids(text):
    return [int(m.group(1)) for m in _CREATED_GI.finditer(text)]


def live_profiles(gpu, profiles, placements):
    """The GPU instance profiles nvidia-smi lists for GPU ``gpu`` (in its order), as catalog GpuInstanceProfile records."""
    result = []
    for name, (profile_id, _free, total) in profiles.get(gpu, {}).items():
        starts, size = placements.get(gpu, {}).get(profile_id, ((), 0))
        slices = int(re.match(r'^(\d+)g\.', name).group(1))
        result.append(mig_catalog.GpuInstanceProfile(name, profile_id, slices, size, starts, total))
    return tuple(result)


# ---------------------------------------------------------------------------------------------
# The layout asked for
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Wanted:
    """One GPU instance asked for: its profile and its compute instances (sorted names)."""

    profile: str
    compute_instances: Tuple[str, ...]


def _strip_mig(name):
    return re.sub(r'^MIG\s+', '', str(name).strip())


def wanted_instances(instances, profiles, gpu_name='this GPU'):
    """The ``instances`` option -> [Wanted], largest profile first; ValueError naming the field and the fix."""
    by_name = {p.name: p for p in profiles}
    by_id = {str(p.profile_id): p for p in profiles}
    wanted = []
    for number, item in enumerate(instances or []):
        where = 'instances[%d]' % number
        asked = _strip_mig(item.get('profile', ''))
        profile = by_name.get(asked) or by_id.get(asked)
        if profile is None:
            raise ValueError('%s.profile: %r is not a MIG profile of %s; choose one of: %s'
                             % (where, item.get('profile'), gpu_name, ', '.join(p.name for p in profiles)))
        count = item.get('count', 1)
        if count is None or int(count) < 1:
            raise ValueError('%s.count: %r; give 1 or more GPU instances of %s' % (where, count, profile.name))
        sizes = mig_catalog.compute_instance_profiles(profile)
        computes = [_strip_mig(c) for c in (item.get('compute_instances') or [profile.name])]
        unknown = [c for c in computes if c not in sizes]
        if unknown:
            raise ValueError('%s.compute_instances: %s not a compute instance profile of %s; choose from: %s'
                             % (where, ', '.join(unknown), profile.name, ', '.join(sorted(sizes))))
        if sum(sizes[c] for c in computes) > profile.compute_slices:
            raise ValueError('%s.compute_instances: %s need %d compute slices; %s has %d'
                             % (where, ', '.join(computes), sum(sizes[c] for c in computes), profile.name, profile.compute_slices))
        wanted.extend([Wanted(profile.name, tuple(sorted(computes)))] * int(count))
    order = {p.name: (-p.memory_slices, -p.compute_slices, p.profile_id) for p in profiles}
    return sorted(wanted, key=lambda w: order[w.profile])


def fit(wanted, profiles, occupied=()):
    """Placement starts for each Wanted (same order) on a GPU whose memory slices ``occupied`` are taken,
    or None when they do not fit. Depth-first over the profiles' placements, largest first."""
    by_name = {p.name: p for p in profiles}
    taken = set(occupied)
    starts = []

    def place(position):
        if position == len(wanted):
            return True
        profile = by_name[wanted[position].profile]
        for start in profile.placements:
            cells = set(range(start, start + profile.memory_slices))
            if not cells & taken:
                taken.update(cells)
                starts.append(start)
                if place(position + 1):
                    return True
                starts.pop()
                taken.difference_update(cells)
        return False

    return list(starts) if place(0) else None


def check_layout(wanted, profiles, gpu_name='this GPU'):
    """ValueError when the GPU instances asked for cannot all exist on one GPU."""
    by_name = {p.name: p for p in profiles}
    for name, count in Counter(w.profile for w in wanted).items():
        if count > by_name[name].max_count:
            raise ValueError('instances: %d x %s; %s holds at most %d of them' % (count, name, gpu_name, by_name[name].max_count))
    compute = sum(by_name[w.profile].compute_slices for w in wanted)
    if compute > mig_catalog.COMPUTE_SLICES or fit(wanted, profiles) is None:
        asked = ' + '.join(w.profile for w in wanted)
        raise ValueError('instances: %s do not fit on one %s (%d compute slices of %d, and the placements of `nvidia-smi mig -lgipp`); '
                         'ask for fewer or smaller GPU instances' % (asked, gpu_name, compute, mig_catalog.COMPUTE_SLICES))


def check_gpudirect(technology, state):
    """Google's GKE GPUDirect-TCPX/TCPXO guide: GPUDirect-TCPX and GPUDirect-TCPXO do not work with MIG."""
    if state == 'enabled' and technology in mig_catalog.TECHNOLOGIES_WITHOUT_MIG:
        raise MigError('gpudirect_technology: this host runs GPUDirect-%s, which does not work with multi-instance GPU '
                       '(GPUDirect-TCPX and GPUDirect-TCPXO are not compatible with MIG); use MIG on hosts prepared '
                       'without GPUDirect (gpudirect_technology: none), or leave MIG disabled' % technology)


# ---------------------------------------------------------------------------------------------
# Plans
# ---------------------------------------------------------------------------------------------

@dataclass
class GpuPlan:
    """What changes on one GPU. ``create`` holds (Wanted, placement start); ``destroy`` GPU instance records."""

    index: int
    mode: Optional[str] = None  # ENABLED or DISABLED when the mode must change
    destroy: List[dict] = field(default_factory=list)
    create: List[Tuple[Wanted, int]] = field(default_factory=list)
    keep: List[dict] = field(default_factory=list)

    @property
    def changes(self):
        return bool(self.mode or self.destroy or self.create)


def current_wanted(gpu_instance, compute_instances):
    computes = sorted(c['profile'] for c in compute_instances
                      if c['gpu'] == gpu_instance['gpu'] and c['gpu_instance'] == gpu_instance['id'])
    return Wanted(gpu_instance['profile'], tuple(computes))


def plan_gpu(gpu, state, wanted, profiles, gpu_instances, compute_instances):
    """The GpuPlan that turns one GPU's current MIG state into the one asked for."""
    plan = GpuPlan(gpu['index'])
    mine = [g for g in gpu_instances if g['gpu'] == gpu['index']]
    if state == 'disabled':
        plan.destroy = mine
        if gpu['mig_current'] != DISABLED or gpu['mig_pending'] != DISABLED:
            plan.mode = DISABLED
        return plan
    if gpu['mig_current'] != ENABLED or gpu['mig_pending'] != ENABLED:
        plan.mode = ENABLED
    remaining = list(wanted)
    for instance in mine:
        have = current_wanted(instance, compute_instances)
        if have in remaining:
            remaining.remove(have)
            plan.keep.append(instance)
        else:
            plan.destroy.append(instance)
    occupied = [cell for g in plan.keep for cell in range(g['start'], g['start'] + g['size'])]
    starts = fit(remaining, profiles, occupied)
    if starts is None:
        # What is kept leaves no room for the rest: rebuild the GPU from a fresh placement.
        plan.destroy, plan.keep, remaining = mine, [], list(wanted)
        starts = fit(remaining, profiles)
    plan.create = list(zip(remaining, starts))
    return plan


def busy_problem(gpu, processes):
    """A sentence when processes use the GPU (changes would be refused or kill work), else None."""
    mine = [p for p in processes if p['pci_bus_id'].lower() == gpu['pci_bus_id'].lower()]
    if not mine:
        return None
    return ('GPU %d (%s) is busy: %s; stop them (MIG mode and GPU instances can only change on an idle GPU) and run again'
            % (gpu['index'], gpu['pci_bus_id'], ', '.join('pid %d %s' % (p['pid'], p['name']) for p in mine)))


def _instance_line(profile, start, size, computes):
    return '%s at %d:%d, compute instances: %s' % (profile, start, size, ', '.join(computes) or 'none')


def _mode_text(current, pending):
    return current if current == pending else '%s (pending %s)' % (current, pending)


def describe(gpu, gpu_instances, compute_instances):
    """One GPU's MIG state as shown in diffs and results."""
    mine = sorted((g for g in gpu_instances if g['gpu'] == gpu['index']), key=lambda g: (g['start'], g['id']))
    return {'mig_mode': _mode_text(gpu['mig_current'], gpu['mig_pending']),
            'gpu_instances': [_instance_line(g['profile'], g['start'], g['size'], current_wanted(g, compute_instances).compute_instances)
                              for g in mine]}


def describe_planned(gpu, plan, profiles, compute_instances):
    """The state ``plan`` leads to, in describe()'s form (check mode's 'after')."""
    sizes = {p.name: p.memory_slices for p in profiles}
    rows = [(g['start'], _instance_line(g['profile'], g['start'], g['size'], current_wanted(g, compute_instances).compute_instances))
            for g in plan.keep]
    rows += [(start, _instance_line(wanted.profile, start, sizes[wanted.profile], wanted.compute_instances)) for wanted, start in plan.create]
    mode = plan.mode or gpu['mig_current']
    return {'mig_mode': _mode_text(mode, plan.mode or gpu['mig_pending']), 'gpu_instances': [line for _start, line in sorted(rows)]}


# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------

def mode_argv(index, mode):
    return ['-i', str(index), '-mig', '1' if mode == ENABLED else '0']


def reset_argv(index):
    return ['--gpu-reset', '-i', str(index)]


def destroy_argvs(index, gpu_instance, compute_instances):
    """Its compute instances first (nvidia-smi refuses to destroy a GPU instance that still has some), then it."""
    gi = str(gpu_instance['id'])
    argvs = [['mig', '-i', str(index), '-gi', gi, '-dgi']]
    if any(c['gpu'] == index and c['gpu_instance'] == gpu_instance['id'] for c in compute_instances):
        argvs.insert(0, ['mig', '-i', str(index), '-gi', gi, '-dci'])
    return argvs


def creation_steps(plan, profiles):
    """[(nvidia-smi argv, Wanted that still needs its compute instances, or None)] creating plan.create.

    The GPU instances that get the default compute instance go in one ``-cgi id:start,... -C`` (every
    nvidia-smi run initialises NVML, which takes a while on a real GPU); each one with other compute
    instances is created alone, so that its new ID can be read from nvidia-smi's answer for ``-cci``.
    """
    ids = {p.name: p.profile_id for p in profiles}
    default = ['%d:%d' % (ids[w.profile], start) for w, start in plan.create if w.compute_instances == (w.profile,)]
    steps = [(['mig', '-i', str(plan.index), '-cgi', ','.join(default), '-C'], None)] if default else []
    steps += [(['mig', '-i', str(plan.index), '-cgi', '%d:%d' % (ids[w.profile], start)], w)
              for w, start in plan.create if w.compute_instances != (w.profile,)]
    return steps


def compute_argv(index, gpu_instance_id, wanted):
    """Largest compute instance first: a small one created first can take the only placement of a larger one."""
    order = sorted(wanted.compute_instances, key=lambda name: -int(re.match(r'^(\d+)[cg]\.', name).group(1)))
    return ['mig', '-i', str(index), '-gi', str(gpu_instance_id), '-cci', ','.join(order)]


def planned_commands(plan, profiles, compute_instances):
    """The nvidia-smi argument lists a plan runs, in order (``<new>`` stands for the ID nvidia-smi gives a new GPU instance)."""
    commands = []
    for instance in plan.destroy:
        commands.extend(destroy_argvs(plan.index, instance, compute_instances))
    if plan.mode:
        commands.append(mode_argv(plan.index, plan.mode))
    for argv, wanted in creation_steps(plan, profiles):
        commands.append(argv)
        if wanted:
            commands.append(compute_argv(plan.index, '<new>', wanted))
    return commands
