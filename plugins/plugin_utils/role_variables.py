# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The variables a playbook run will hand one of the collection's roles, read before the run's first write.

gpudirect_plan's action calls ``resolve`` for each role its task names: the role's own argument spec
(``roles/ROLE/meta/argument_specs.yml``, the entry points the playbook calls), the role variables the user set
(extra vars, inventory, play vars: every variable of the task whose name starts with ``ROLE_``) and what is wrong
with them that only the controller can see: a plot asked for (a ``ROLE_..._plot`` variable) without matplotlib, which only
the plots need, on the controller; a name the role does not have (a misspelling runs with the default and
builds something else) and a value that contradicts what the playbook derives from its own variables (``sources``:
an extra var wins over the playbook's ``include_role`` vars, so the role would act on another pool, cluster or
technology than the one the playbook built). Other variables the playbook gives are defaults a user may override.
The module then validates the values with the spec and renders the role's objects.

A role's default (``defaults/main.yml``), which ``import_role`` puts among the play's variables, is not the user's.
Values the spec marks ``no_log`` (kubeconfigs) are compared here and reach the module only as a placeholder.
"""

from __future__ import annotations

import difflib
import functools
import os
import re

import yaml

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.report_dir import matplotlib_import_error

ROLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'roles')
HIDDEN = 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'   # what ansible-core writes for a no_log value
PLAYBOOK_VARIABLE = re.compile(r'\bgpudirect_[a-z0-9_]+')


@functools.lru_cache(maxsize=None)
def argument_specs(role):
    """{entry point: options} of ``role``'s meta/argument_specs.yml."""
    path = os.path.join(ROLES_DIR, role, 'meta', 'argument_specs.yml')
    with open(path, encoding='utf-8') as handle:
        specs = yaml.load(handle, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))['argument_specs']
    return {entry: spec.get('options') or {} for entry, spec in specs.items()}


@functools.lru_cache(maxsize=None)
def _defaults(role):
    path = os.path.join(ROLES_DIR, role, 'defaults', 'main.yml')
    if not os.path.exists(path):
        return {}
    with open(path, encoding='utf-8') as handle:
        return yaml.load(handle, Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader)) or {}


def variable_names(role):
    """Every variable of ``role``, over all its entry points."""
    return sorted({name for options in argument_specs(role).values() for name in options})


def _closest(name, names, prefix, cutoff):
    """The name of ``names`` closest to ``name``, compared without the ``prefix`` they share (which would make any two
    look alike), or None."""
    close = difflib.get_close_matches(name[len(prefix):], [known[len(prefix):] for known in names], n=1, cutoff=cutoff)
    return prefix + close[0] if close else None


def _shown(value, secret):
    if value is None:
        return 'null (unset)'
    return 'a value (not shown: the variable is no_log)' if secret else repr(value)


def resolve(entry, task_vars, template):
    """``entry`` (a ``roles`` item of gpudirect_plan: role, entry_points, vars, sources) with ``resolved`` added:
    ``argument_spec`` (the entry points' options), ``given`` (the user's role variables, templated by ``template``,
    no_log ones as a placeholder) and ``problems`` (texts naming the variable)."""
    role = entry['role']
    specs = argument_specs(role)
    missing = [point for point in entry.get('entry_points') or ['main'] if point not in specs]
    if missing:
        raise ValueError('role %s has no entry point %s (it has %s)' % (role, ', '.join(missing), ', '.join(sorted(specs))))
    spec = {}
    for point in entry.get('entry_points') or ['main']:
        spec.update(specs[point])
    known = variable_names(role)
    prefix = role + '_'
    playbook_vars, sources = entry.get('vars') or {}, entry.get('sources') or {}
    defaults = _defaults(role)
    given, problems = {}, []
    for name in sorted(task_vars):
        if not name.startswith(prefix) or name[len(prefix):].startswith('_'):
            continue
        if name not in known:
            close = _closest(name, known, prefix, 0.75)
            problems.append('%s: role %s has no such variable; %s' % (
                name, role, 'did you mean %s?' % close if close else 'its variables are %s' % ', '.join(known)))
            continue
        if name not in spec:
            continue   # an entry point this playbook does not call
        if name in defaults and task_vars[name] == defaults[name]:
            continue   # the role's default, in the play's variables through import_role: nobody set it
        value = template(task_vars[name])
        secret = bool(spec[name].get('no_log'))
        if name in sources and value != playbook_vars.get(name):
            problems.append('%s: %s differs from %s, which the playbook gives role %s (from %s), and would win over it; leave '
                            '%s unset and set %s instead' % (name, _shown(value, secret), _shown(playbook_vars.get(name), secret),
                                                             role, sources[name], name, sources[name]))
            continue
        if name.endswith('_plot') and boolean(value, strict=False) and matplotlib_import_error():
            problems.append('%s: a plot needs matplotlib on the controller, which is not installed there; install it '
                            '(pip install "matplotlib>=3.9,<4") or leave %s false' % (name, name))
        given[name] = HIDDEN if secret else value
    shown_vars = {name: HIDDEN if (spec.get(name) or {}).get('no_log') else value for name, value in playbook_vars.items()}
    return dict(entry, vars=shown_vars, resolved={'argument_spec': spec, 'given': given, 'problems': problems})


def unread_extra_vars(extra_vars, playbook_path, checked_roles, undoes=None):
    """Texts naming each extra variable with one of the collection's prefixes (``gpudirect_``, a role's name) that
    neither the playbook (the variables its file names) nor a role it runs reads: a renamed or misspelt one would
    otherwise run with the default. The variables of ``checked_roles`` are resolve()'s to judge. ``undoes``: for a
    teardown, the playbook beside it whose run it undoes; it takes the same extra vars, so that playbook's variables
    and those of the roles it names are read too."""
    roles = sorted((name for name in os.listdir(ROLES_DIR) if os.path.isdir(os.path.join(ROLES_DIR, name, 'meta'))), key=len, reverse=True)
    with open(playbook_path, encoding='utf-8') as handle:
        text = handle.read()
    accepted = set(checked_roles)
    if undoes:
        with open(os.path.join(os.path.dirname(playbook_path), undoes), encoding='utf-8') as handle:
            undone = handle.read()
        text += undone
        accepted |= {role for role in roles if re.search(r'(\baiinfra\.gpudirect\.|\brole: )%s\b' % role, undone)}
    read = sorted(set(PLAYBOOK_VARIABLE.findall(text)))
    playbook = os.path.basename(playbook_path)
    found = []
    for name in sorted(extra_vars):
        role = next((role for role in roles if name.startswith(role + '_')), None)
        if role in accepted or name.startswith('__'):
            continue
        if role is not None:
            found.append('%s: %s; %s runs no role %s, so nothing reads it: remove it' % (
                name, 'a variable of role %s' % role if name in variable_names(role) else 'role %s has no such variable' % role,
                playbook, role))
        elif name.startswith('gpudirect_') and name not in read:
            close = _closest(name, read, 'gpudirect_', 0.6)
            found.append('%s: %s reads no such variable; %s' % (
                name, playbook, 'did you mean %s?' % close if close else 'it reads %s' % ', '.join(read)))
    return found
