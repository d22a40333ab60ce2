#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_container
short_description: Run the NCCL test container of the Compute Engine manual on a Container-Optimized OS host
version_added: 0.1.0
description:
  - Starts or removes the container the Compute Engine manual runs the nccl-tests benchmark in, exactly as its
    C(docker run) gives it, from the collection's catalog -- for GPUDirect-TCPXO the C(nccl) container
    (C(NCCL_NET_IMAGE daemon) with the GPUs, C(/dev/dmabuf_import_helper), C(/var/lib/nvidia) and C(/var/lib/tcpxo),
    host network, C(--shm-size=8g), privileged); for GPUDirect-TCPX the C(run_tcpx_container ... shell) container
    (the GPUs, C(/run/tcpx), the NCCL and plugin libraries, C(IPC_LOCK), the user namespace of the host, its C(--ulimit)s,
    an interactive shell).
  - The image is the NCCL plugin image of the host stack's known-good RxDM / plugin pair (the manual's
    C(NCCL_NET_IMAGE)), the same one M(aiinfra.gpudirect.nccl_plugin) installs from.
  - Idempotent. A running container created with the same configuration and image is left alone; one that exited,
    drifted or was made some other way is recreated.
  - Before creating anything it checks the device nodes the container needs and names each missing one with the
    command that creates it.
  - RV(created) says whether this run created the container where none was, so that a play can remove
    only what it started (role P(aiinfra.gpudirect.nccl_test#role) does).
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
  state:
    description:
      - V(started) makes sure the container runs with the catalog's configuration; V(absent) removes it.
    type: str
    choices: [started, absent]
    default: started
  name:
    description:
      - Container name. Default the manual's, V(nccl) (the manual starts the GPUDirect-TCPX one without a name; it gets the same).
    type: str
  plugin_version:
    description:
      - NCCL plugin image tag, for example V(v1.0.13-1). Default is the catalog's default pair for Compute Engine.
    type: str
  rxdm_version:
    description:
      - Tag of the RxDM that runs beside it; only used to check that the pair is known-good.
    type: str
  image:
    description:
      - Full image reference to run instead of the catalog's (a registry mirror). Its tag must be the plugin version
        of a known-good pair unless O(force_version_pair=true). Excludes O(plugin_version).
    type: str
  force_version_pair:
    description:
      - Run a plugin image that is not in a known-good pair with RxDM.
    type: bool
    default: false
  ulimits:
    description:
      - Replace or add C(--ulimit) values by name (the manual's GPUDirect-TCPX container sets C(memlock=-1) and
        C(stack=67108864)), for an engine that may not raise a limit (a rootless engine cannot lift C(memlock)). Values as
        C(docker run --ulimit NAME=VALUE) takes them (one number for soft and hard, V(-1) for unlimited).
    type: dict
    default: {}
  pull:
    description:
      - V(always) pulls first, as the manual's C(--pull=always); V(missing) only when the image is not on the host;
        V(never) fails when it is not.
    type: str
    choices: [always, missing, never]
    default: always
notes:
  - Unlike the manual's C(docker run --rm), the container is not removed when it exits, so that its log can say why;
    this module removes it when it recreates it or when O(state=absent).
seealso:
  - module: aiinfra.gpudirect.nccl_perf
  - module: aiinfra.gpudirect.nccl_plugin
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - aiinfra.gpudirect.docker_engine
attributes:
  check_mode:
    support: full
    details: Nothing is pulled, created or removed; the result says what would change.
  diff_mode:
    support: full
    details: The container's configuration before and after.
  platform:
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Start the manual's nccl container on an A3 Mega host
  aiinfra.gpudirect.nccl_container:
    machine_type: a3-megagpu-8g
  register: nccl_container

- name: Remove it again, when this play started it
  aiinfra.gpudirect.nccl_container:
    machine_type: a3-megagpu-8g
    state: absent
  when: nccl_container.created
"""

RETURN = r"""
technology:
  description: GPUDirect technology of the host.
  returned: always
  type: str
  sample: TCPXO
container_name:
  description: Name of the container.
  returned: always
  type: str
  sample: nccl
container_id:
  description: Short ID of the container (null when there is none, or in check mode before it exists).
  returned: always
  type: str
created:
  description: Whether this run created the container where none existed (or would, in check mode).
  returned: always
  type: bool
image:
  description: Image reference.
  returned: always
  type: str
  sample: us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.13-1
image_id:
  description: ID of the image on the host (null when not pulled yet in check mode).
  returned: always
  type: str
version_pair:
  description: The catalog's known-good pair in use (null when forced).
  returned: always
  type: dict
actions:
  description: What this run did or would do, and why.
  returned: always
  type: list
  elements: str
missing_devices:
  description: Device nodes the container needs that the host lacks, each with the command that creates it.
  returned: always
  type: list
  elements: dict
"""

import dataclasses

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import host as cos_host
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import docker_api
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks

MANAGED_BY = 'aiinfra.gpudirect.nccl_container'


def argument_spec():
    return dict(
        cos_host.COMMON_ARGUMENT_SPEC,
        state=dict(type='str', default='started', choices=['started', 'absent']),
        name=dict(type='str'),
        image=dict(type='str'),
        ulimits=dict(type='dict', default={}),
    )


ULIMIT_NAMES = ('core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice', 'nofile', 'nproc', 'rss', 'rtprio',
                'rttime', 'sigpending', 'stack')
# The names docker run --ulimit takes (docker/go-units ulimit.go).


def container_spec(technology, ulimits):
    """The catalog's test container of ``technology``, with ``ulimits`` replacing or adding --ulimit values by name."""
    spec = host_stacks.host_stack(technology).nccl_container
    if not ulimits:
        return spec
    for name, value in ulimits.items():
        if name not in ULIMIT_NAMES:
            raise ValueError('ulimits: %s is not a ulimit name; use one of: %s' % (name, ', '.join(ULIMIT_NAMES)))
        try:
            int(value)
        except (TypeError, ValueError):
            raise ValueError('ulimits.%s: %r is not a number (-1 for unlimited)' % (name, value)) from None
    merged = dict(spec.ulimits, **{name: str(value) for name, value in ulimits.items()})
    return dataclasses.replace(spec, ulimits=tuple(merged.items()))


def run(module, client):
    params = module.params
    technology, _family = cos_host.resolve_technology(params)
    spec = container_spec(technology, params['ulimits'])
    image, pair = cos_host.resolve_image(technology, 'plugin', params, params['image'])
    name = params['name'] or host_stacks.nccl_container_name(technology)
    result = dict(changed=False, technology=technology, container_name=name, container_id=None, created=False,
                  image=image, image_id=None, actions=[], missing_devices=[], version_pair=cos_host.pair_summary(pair))
    if pair is None:
        module.warn('NCCL plugin image %s is not in a known-good pair with RxDM %s (force_version_pair)'
                    % (image, params['rxdm_version'] or 'default'))
    current = client.inspect_container(name)
    if params['state'] == 'absent':
        return cos_host.remove_container(module, client, current, result)

    image_info, image_action = docker_api.ensure_image(client, image, params['pull'], module.check_mode)
    result['image_id'] = (image_info or {}).get('Id')
    if image_action != 'present':
        result['actions'].append('%s image %s' % (image_action, image))
    desired = docker_api.container_summary(spec, image)
    reasons = docker_api.drift_reasons(current, desired, result['image_id'])
    result['actions'].extend(reasons)
    result['diff'] = dict(before=docker_api.current_summary(current), after=desired if reasons else docker_api.current_summary(current))
    if not reasons:
        result['container_id'] = current['Id'][:12]
        return result

    missing = docker_api.missing_devices(spec.devices)
    if missing:
        result['missing_devices'] = cos_host.device_fixes(technology, missing)
        message = 'the NCCL test container needs device nodes this host lacks: ' + '; '.join(
            '%s (fix: %s)' % (d['path'], d['fix']) for d in result['missing_devices'])
        if not module.check_mode:
            module.fail_json(msg=message + '; nothing was created', **result)
        module.warn(message + ' (check mode: the real run fails unless an earlier step creates them)')
    result.update(changed=True, created=current is None)
    if module.check_mode:
        return result
    container_id = docker_api.recreate(client, current, name, docker_api.create_body(spec, image, MANAGED_BY))
    result['container_id'] = container_id[:12]
    state = (client.inspect_container(container_id) or {}).get('State') or {}
    if not state.get('Running'):
        tail = docker_api.log_tail(client, container_id, params['log_lines'])
        module.fail_json(msg='the NCCL test container %s (%s) exited at once (code %s). Last log lines:\n%s'
                         % (name, image, state.get('ExitCode'), tail), **result)
    return result


def main():
    cos_host.run_engine_module(argument_spec(), run, 'NCCL test container', exclusive=('image', 'plugin_version'))


if __name__ == '__main__':
    main()
