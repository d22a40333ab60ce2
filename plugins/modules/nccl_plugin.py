#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_plugin
short_description: Install the GPUDirect NCCL plugin and NCCL on a Container-Optimized OS host
version_added: 0.1.0
description:
  - Runs the vendor's installer image (C(install --install-nccl)) as the Compute Engine manual does,
    which writes the GPUDirect-TCPX or GPUDirect-TCPXO NCCL plugin (C(libnccl-net.so)) and NCCL
    (C(libnccl.so)) into C(/var/lib/tcpx/lib64) or C(/var/lib/tcpxo/lib64).
  - Bind-mounts the plugin directory on itself and remounts it exec (the host's C(/var) is noexec),
    verifies the libraries the catalog lists are there, and reports the plugin and NCCL versions.
  - Does nothing when the same installer image (same image ID) already installed them.
  - Writes an environment profile for workloads with the catalog's NCCL variables (the manual's
    required set, and its recommended logging set on request) into the plugin's library directory,
    which the workload containers of the manual mount.
  - Talks to the Docker Engine API on the host's unix socket with the Python standard library only.
author:
  - aiinfra.gpudirect contributors (@aiinfra)
options:
  technology:
    description:
      - GPUDirect technology of the host. Give this or O(machine_type).
    type: str
    choices: [TCPX, TCPXO]
  machine_type:
    description:
      - Machine type of the host (V(a3-megagpu-8g), V(a3-highgpu-8g), V(a3-edgegpu-8g)). Give this or O(technology).
    type: str
  plugin_version:
    description:
      - Installer image tag, for example V(v1.0.13-1). Default is the catalog's default pair for Compute Engine.
    type: str
  rxdm_version:
    description:
      - Tag of the RxDM that runs beside the plugin; only used to check that the pair is known-good.
    type: str
  installer_image:
    description:
      - Full installer image reference to run instead of the catalog's (a registry mirror). Its tag
        must be the plugin version of a known-good pair unless O(force_version_pair=true). Excludes
        O(plugin_version).
    type: str
  force_version_pair:
    description:
      - Install a plugin version that is not in a known-good pair with RxDM.
    type: bool
    default: false
  pull:
    description:
      - V(always) pulls the installer first, as the manual's C(--pull=always); V(missing) only when
        it is not on the host; V(never) fails when it is not.
    type: str
    choices: [always, missing, never]
    default: always
  install_timeout:
    description:
      - Seconds the installer may run.
    type: int
    default: 300
  remount:
    description:
      - Bind-mount the plugin directory on itself and remount it exec, as the manual does.
    type: bool
    default: true
  env_profile:
    description:
      - Path of the NCCL environment profile to write. Default C(<plugin lib dir>/gpudirect-nccl-env.sh).
      - Set to an empty string to write none.
    type: str
  env_profile_logging:
    description:
      - Add the manual's recommended NCCL logging variables to the profile (where it has some).
    type: bool
    default: false
seealso:
  - module: aiinfra.gpudirect.gpudirect_rxdm
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - aiinfra.gpudirect.docker_engine
attributes:
  check_mode:
    support: full
    details: Nothing is pulled, run, mounted or written.
  diff_mode:
    support: full
    details: Installed image, mount and profile before and after.
  platform:
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Install the TCPXO NCCL plugin of the default pair and write the NCCL profile
  aiinfra.gpudirect.nccl_plugin:
    machine_type: a3-megagpu-8g

- name: Install the TCPX plugin from a mirror, with NCCL logging in the profile
  aiinfra.gpudirect.nccl_plugin:
    technology: TCPX
    installer_image: mirror.example.com/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9
    rxdm_version: v2.0.12
    env_profile_logging: true
    pull: missing
"""

RETURN = r"""
technology:
  description: GPUDirect technology of the host.
  returned: always
  type: str
  sample: TCPX
installer_image:
  description: Installer image reference.
  returned: always
  type: str
  sample: us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx
installer_image_id:
  description: ID of the installer image on the host (null when not pulled yet in check mode).
  returned: always
  type: str
version_pair:
  description: The catalog's known-good pair in use (null when forced).
  returned: always
  type: dict
  contains:
    name:
      description: Name of the pair in the catalog.
      type: str
    rxdm_version:
      description: RxDM tag (null for untagged).
      type: str
    plugin_version:
      description: NCCL plugin tag (null for untagged).
      type: str
installed:
  description: Whether this run ran (or in check mode would run) the installer.
  returned: always
  type: bool
actions:
  description: What this run did or would do, and why.
  returned: always
  type: list
  elements: str
plugin_dir:
  description: The plugin directory (bind-mounted exec).
  returned: always
  type: str
  sample: /var/lib/tcpx
plugin_lib_dir:
  description: Where the libraries are.
  returned: always
  type: str
  sample: /var/lib/tcpx/lib64
libraries:
  description: Library files found in RV(plugin_lib_dir) (names).
  returned: always
  type: list
  elements: str
  sample: [libnccl-net.so, libnccl.so, libnccl.so.2, libnccl.so.2.18.1]
plugin_version:
  description: Version string found in C(libnccl-net.so) (for example the C(ver. 3.1.1) NCCL logs), or null.
  returned: always
  type: str
  sample: 3.1.1
nccl_version:
  description: NCCL version from the C(libnccl.so) link target, or null.
  returned: always
  type: str
  sample: 2.18.1
exec_mounted:
  description: Whether the plugin directory is a mount point without noexec (after this run).
  returned: always
  type: bool
env_profile:
  description: Path of the NCCL environment profile (null when none is written).
  returned: always
  type: str
  sample: /var/lib/tcpx/lib64/gpudirect-nccl-env.sh
nccl_env:
  description: The variables in the profile.
  returned: always
  type: dict
"""

import json
import os
import re
import shlex
import tempfile

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import host as cos_host
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import docker_api
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import gke

MANAGED_BY = 'aiinfra.gpudirect.nccl_plugin'
INSTALLER_NAME = 'aiinfra-gpudirect-nccl-plugin-installer'
STAMP_FILE = '.aiinfra-gpudirect-installer.json'
PROFILE_FILE = 'gpudirect-nccl-env.sh'
NCCL_SONAME_RE = re.compile(r'libnccl\.so\.(\d+\.\d+\.\d+)$')
PLUGIN_VERSION_RE = re.compile(rb'ver\. ?(\d+(?:\.\d+)+)')


def argument_spec():
    return dict(
        cos_host.COMMON_ARGUMENT_SPEC,
        installer_image=dict(type='str'),
        install_timeout=dict(type='int', default=300),
        remount=dict(type='bool', default=True),
        env_profile=dict(type='str'),
        env_profile_logging=dict(type='bool', default=False),
    )


# -- read current ----------------------------------------------------------------------------------


def read_stamp(plugin_dir):
    try:
        with open(os.path.join(plugin_dir, STAMP_FILE)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def present_libraries(lib_dir):
    try:
        return sorted(n for n in os.listdir(lib_dir) if n.startswith('lib') and '.so' in n)
    except OSError:
        return []


def mount_options(path):
    """Per-mount options of the topmost mount at ``path`` (None when it is not a mount point)."""
    found = None
    try:
        with open('/proc/self/mountinfo') as handle:
            for line in handle:
                fields = line.split()
                mount_point = re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), fields[4])
                if mount_point == path:
                    found = fields[5].split(',')
    except OSError:
        return None
    return found


def exec_mounted(path):
    options = mount_options(path)
    return options is not None and 'noexec' not in options


def versions(lib_dir):
    """(plugin version, NCCL version) as the installed files tell them."""
    nccl = None
    match = NCCL_SONAME_RE.search(os.path.realpath(os.path.join(lib_dir, 'libnccl.so')))
    if match:
        nccl = match.group(1)
    plugin = None
    try:
        with open(os.path.join(lib_dir, 'libnccl-net.so'), 'rb') as handle:
            found = PLUGIN_VERSION_RE.search(handle.read())
        plugin = found.group(1).decode() if found else None
    except OSError:
        pass
    return plugin, nccl


def read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


# -- compute desired -------------------------------------------------------------------------------


def nccl_profile_env(technology, logging):
    # The manual's "## required" set (Google's GKE GPUDirect-TCPX/TCPXO guide) is the one documented for workloads; the GCE env of
    # the catalog's host-stack NCCL env is only the NCCL test container's own environment.
    return gke.nccl_env(technology, debug=logging)


def render_profile(technology, env):
    lines = ['# NCCL environment for GPUDirect-%s workloads, written by aiinfra.gpudirect.nccl_plugin.' % technology,
             '# Source it in the workload container: . %s' % PROFILE_FILE]
    for name, value in env.items():
        # Values that extend a variable (${LD_LIBRARY_PATH}:...) must expand; all others stay literal.
        quoted = '"%s"' % value if '${' in value else shlex.quote(value)
        lines.append('export %s=%s' % (name, quoted))
    return '\n'.join(lines) + '\n'


def install_reasons(stamp, image_id, libraries, required):
    if stamp is None:
        return ['install: no record of an install in this directory']
    reasons = []
    if image_id and docker_api.short_id(stamp.get('image_id')) != docker_api.short_id(image_id):
        reasons.append('install: installed by image %s, not %s'
                       % (docker_api.short_id(stamp.get('image_id')), docker_api.short_id(image_id)))
    missing = [lib for lib in required if lib not in libraries]
    if missing:
        reasons.append('install: missing %s' % ', '.join(missing))
    return reasons


# -- apply -----------------------------------------------------------------------------------------


def run_installer(module, client, stack, image, image_id, technology):
    params = module.params
    missing = docker_api.missing_devices(stack.plugin_installer.devices)
    if missing:
        raise ValueError('the plugin installer needs device nodes this host lacks: %s; nothing was run'
                         % '; '.join('%(path)s (fix: %(fix)s)' % item for item in cos_host.device_fixes(technology, missing)))
    body = docker_api.create_body(stack.plugin_installer, image, MANAGED_BY)
    try:
        code, logs = docker_api.run_to_completion(client, INSTALLER_NAME, body, params['install_timeout'])
    except docker_api.WaitTimeout as exc:
        module.fail_json(msg='the NCCL plugin installer %s did not finish within %s s. Last log lines:\n%s'
                         % (image, params['install_timeout'], exc.log_tail))
    tail = '\n'.join(logs.splitlines()[-params['log_lines']:])
    if code != 0:
        module.fail_json(msg='the NCCL plugin installer %s exited with code %s. Last log lines:\n%s' % (image, code, tail))
    libraries = present_libraries(stack.plugin_lib_dir)
    missing_libs = [lib for lib in stack.plugin_libraries if lib not in libraries]
    if missing_libs:
        module.fail_json(msg='the NCCL plugin installer %s finished but %s lacks %s. Last log lines:\n%s'
                         % (image, stack.plugin_lib_dir, ', '.join(missing_libs), tail))
    write_file(os.path.join(stack.plugin_dir, STAMP_FILE), json.dumps({'image': image, 'image_id': image_id}) + '\n')


def remount_exec(module, stack):
    for command in stack.plugin_remount_commands:
        module.run_command(cos_host.argv(command), check_rc=True)
    if not exec_mounted(stack.plugin_dir):
        module.fail_json(msg='%s is still not mounted exec after: %s' % (stack.plugin_dir, '; '.join(stack.plugin_remount_commands)))


def write_file(path, content):
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix='.tmp-')
    with os.fdopen(fd, 'w') as handle:
        handle.write(content)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)


def run(module, client):
    params = module.params
    technology, _family = cos_host.resolve_technology(params)
    stack = host_stacks.host_stack(technology)
    image, pair = cos_host.resolve_image(technology, 'plugin', params, params['installer_image'])
    profile_path = params['env_profile']
    if profile_path is None:
        profile_path = os.path.join(stack.plugin_lib_dir, PROFILE_FILE)
    env = nccl_profile_env(technology, params['env_profile_logging'])
    result = dict(changed=False, technology=technology, installer_image=image, installer_image_id=None,
                  installed=False, actions=[], plugin_dir=stack.plugin_dir, plugin_lib_dir=stack.plugin_lib_dir,
                  env_profile=profile_path or None, nccl_env=env,
                  version_pair=cos_host.pair_summary(pair))
    if pair is None:
        module.warn('NCCL plugin %s is not in a known-good pair with RxDM %s (force_version_pair)'
                    % (image, params['rxdm_version'] or 'default'))

    # read current
    stamp = read_stamp(stack.plugin_dir)
    mounted = exec_mounted(stack.plugin_dir)
    old_profile = read_text(profile_path) if profile_path else None

    # compute desired
    image_info, image_action = docker_api.ensure_image(client, image, params['pull'], module.check_mode)
    image_id = (image_info or {}).get('Id')
    result['installer_image_id'] = image_id
    if image_action != 'present':
        result['actions'].append('%s image %s' % (image_action, image))
    reasons = install_reasons(stamp, image_id, present_libraries(stack.plugin_lib_dir), stack.plugin_libraries)
    remount = params['remount'] and not mounted
    new_profile = render_profile(technology, env) if profile_path else None
    write_profile = bool(profile_path) and new_profile != old_profile
    result['actions'].extend(reasons)
    if remount:
        result['actions'].append('bind-mount %s and remount it exec' % stack.plugin_dir)
    if write_profile:
        result['actions'].append('write %s' % profile_path)
    result['diff'] = dict(
        before={'installed_image_id': (stamp or {}).get('image_id'), 'exec_mounted': mounted, 'env_profile': old_profile or ''},
        after={'installed_image_id': image_id if reasons else (stamp or {}).get('image_id'),
               'exec_mounted': mounted or params['remount'], 'env_profile': new_profile or old_profile or ''},
        before_header='%s (before)' % stack.plugin_dir, after_header='%s (after)' % stack.plugin_dir)
    result['changed'] = bool(reasons or remount or write_profile)
    result['installed'] = bool(reasons)

    # apply unless check mode
    if not module.check_mode:
        if reasons:
            run_installer(module, client, stack, image, image_id, technology)
        if remount:
            remount_exec(module, stack)
        if write_profile:
            write_file(profile_path, new_profile)

    # verify and report
    libraries = present_libraries(stack.plugin_lib_dir)
    plugin_version, nccl_version = versions(stack.plugin_lib_dir)
    result.update(libraries=libraries, plugin_version=plugin_version, nccl_version=nccl_version,
                  exec_mounted=exec_mounted(stack.plugin_dir))
    return result


def main():
    cos_host.run_engine_module(argument_spec(), run, 'NCCL plugin', exclusive=('installer_image', 'plugin_version'))


if __name__ == '__main__':
    main()
