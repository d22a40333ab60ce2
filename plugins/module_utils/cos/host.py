# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the host modules (gpudirect_rxdm, nccl_plugin) share: their common options, the family and
technology of the host, the image of a known-good RxDM/plugin pair, and catalog commands as argv.

Standard library only: these modules run on Container-Optimized OS.
"""

from __future__ import annotations

import shlex

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import docker_api
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks

COMMON_ARGUMENT_SPEC = dict(
    technology=dict(type='str', choices=['TCPX', 'TCPXO']),
    machine_type=dict(type='str'),
    rxdm_version=dict(type='str'),
    plugin_version=dict(type='str'),
    force_version_pair=dict(type='bool', default=False),
    pull=dict(type='str', default='always', choices=list(docker_api.PULL_POLICIES)),
    log_lines=dict(type='int', default=20),
    docker_socket=dict(type='path', default=docker_api.DEFAULT_SOCKET),
)


def resolve_technology(params):
    """(technology, family) from machine_type or technology; raises ValueError naming the field."""
    if params.get('machine_type'):
        family = families.get_family(params['machine_type'])
        host_stacks.host_stack(family.technology)  # RDMA families have no COS host stack: say so here
        if params.get('technology') and params['technology'] != family.technology:
            raise ValueError('technology: %s uses GPUDirect-%s, not %s; drop technology or fix machine_type'
                             % (family.machine_type, family.technology, params['technology']))
        return family.technology, family
    technology = params['technology']
    return technology, families.families_for_technology(technology)[0]


def resolve_image(technology, component, params, image=None):
    """(image reference, VersionPair or None) of `component` ('rxdm' or 'plugin').

    The image's tag (or the component's version option) must form a known-good pair with the
    other component's version, unless force_version_pair is set; then the image asked for is used
    as it is, and no pair is reported.
    """
    rxdm = image if component == 'rxdm' and image else params['rxdm_version']
    plugin = image if component == 'plugin' and image else params['plugin_version']
    try:
        pair = host_stacks.version_pair(technology, rxdm=rxdm, plugin=plugin)
    except ValueError:
        if not params['force_version_pair']:
            raise
        default = host_stacks.version_pair(technology)
        version = params['%s_version' % component]
        if image:
            return image, None
        if version:
            return '%s:%s' % (getattr(default, '%s_repository' % component), version), None
        return getattr(default, '%s_image' % component), None
    return image or getattr(pair, '%s_image' % component), pair


def pair_summary(pair):
    if pair is None:
        return None
    return dict(name=pair.name, rxdm_version=pair.rxdm_version, plugin_version=pair.plugin_version)


def argv(command):
    """A catalog command line as an argument list; the manual's ``sudo`` is Ansible's ``become``."""
    words = shlex.split(command)
    return words[1:] if words and words[0] == 'sudo' else words


def argv_text(command):
    return ' '.join(shlex.quote(word) for word in argv(command))


def device_fixes(technology, paths):
    """Each device path with the host step that creates it (catalog facts)."""
    stack = host_stacks.host_stack(technology)
    fixes = []
    for path in paths:
        if path == host_stacks.DMABUF_DEVICE and stack.modprobe_commands:
            fix = ' && '.join(argv_text(c) for c in stack.modprobe_commands)
        else:
            fix = argv_text(host_stacks.GPU_DRIVER_INSTALL_COMMAND) + ' (the NVIDIA driver creates /dev/nvidia*)'
        fixes.append({'path': path, 'fix': fix})
    return fixes


def run_engine_module(argument_spec, run, subject, exclusive):
    """main() of a host module that works through the Docker Engine API: the technology comes from it or the
    machine type, ``exclusive`` names an image option and its version option (one or the other), ``run(module,
    client)`` returns the result; bad input (ValueError) and engine errors, prefixed with ``subject``, fail it."""
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_one_of=[('technology', 'machine_type')], mutually_exclusive=[exclusive])
    client = docker_api.DockerClient(module.params['docker_socket'])
    try:
        result = run(module, client)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    except docker_api.DockerError as exc:
        module.fail_json(msg='%s: %s' % (subject, exc))
    module.exit_json(**result)


def remove_container(module, client, current, result):
    """state=absent of a module whose container is ``current`` (inspect data, or None): remove it, with diff and action."""
    result['diff'] = dict(before=docker_api.current_summary(current), after={})
    if current is None:
        return result
    result['changed'] = True
    result['container_id'] = current['Id'][:12]
    result['actions'].append('remove container %s' % result['container_name'])
    if not module.check_mode:
        client.remove_container(current['Id'], force=True)
    return result
