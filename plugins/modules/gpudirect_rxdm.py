#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpudirect_rxdm
short_description: Run the GPUDirect receive-datapath manager (RxDM) on a Container-Optimized OS host
version_added: 0.1.0
description:
  - Starts, checks, restarts or removes the receive-datapath manager container that GPUDirect-TCPX
    (A3 High, A3 Edge) and GPUDirect-TCPXO (A3 Mega) need beside every NCCL workload, exactly as the
    C(docker run) commands of the Compute Engine manual give it (image, arguments, devices, volumes,
    capabilities, host network), taken from the collection's machine-family catalog.
  - Talks to the Docker Engine API on the host's unix socket with the Python standard library only,
    so it runs on Container-Optimized OS, which has no packages.
  - Recreates the container when its configuration or image drifted from what is asked, or when it
    exited; then waits for the vendor's readiness line in its log.
  - Before creating anything it checks the device nodes the container needs and names each missing
    one with the command that creates it, and it refuses an RxDM / NCCL plugin version pair that the
    catalog does not know unless O(force_version_pair=true).
  - For the families whose catalog entry has a gVNIC driver floor (A3 High and A3 Edge, GPUDirect-TCPX, floor 1.4.0rc3), it
    reads the driver of every data NIC with C(ethtool -i) (from sysfs where ethtool is missing), in check mode too, and
    fails before anything is created when a NIC's driver is not gve or older than the floor. The version 1.0.0, which
    in-kernel drivers always report, is not judged (a warning says so), as Google's driver repository advises.
  - Unlike the manual's C(docker run --rm), the container is not removed when it exits, so that its
    log can say why; this module removes it when it recreates it or when O(state=absent).
  - Returns, besides the container, the catalog's host facts for the technology (RV(host)), so that
    roles can drive the other host steps from the same catalog.
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
      - Machine type of the host (V(a3-megagpu-8g), V(a3-highgpu-8g), V(a3-edgegpu-8g)); sets the
        technology and the data NICs reported in RV(host). Give this or O(technology).
    type: str
  state:
    description:
      - V(started) makes sure the container runs with the catalog's configuration and is ready.
      - V(restarted) always recreates it (fresh log) and waits until it is ready.
      - V(checked) changes nothing and fails unless the container runs, matches and is ready.
      - V(absent) removes it.
    type: str
    choices: [started, restarted, checked, absent]
    default: started
  rxdm_version:
    description:
      - RxDM image tag, for example V(v1.0.19). Default is the catalog's default pair for Compute Engine.
      - Must form a known-good pair with O(plugin_version) when both are given.
    type: str
  plugin_version:
    description:
      - Tag of the NCCL plugin installed beside RxDM; only used to check that the pair is known-good.
    type: str
  rxdm_image:
    description:
      - Full image reference to run instead of the catalog's (a registry mirror). Its tag must be the
        RxDM version of a known-good pair unless O(force_version_pair=true). Excludes O(rxdm_version).
    type: str
  force_version_pair:
    description:
      - Run an RxDM version that is not in a known-good pair with the plugin. NCCL may then fail at
        run time; use only to try a new release.
    type: bool
    default: false
  name:
    description:
      - Container name. Default is the manual's (V(rxdm) for TCPXO, V(receive-datapath-manager) for TCPX).
    type: str
  pull:
    description:
      - V(always) pulls before every start, as the manual's C(--pull=always); a newer image then
        recreates the container. V(missing) pulls only when the image is not on the host.
        V(never) fails when it is not.
    type: str
    choices: [always, missing, never]
    default: always
  ready_timeout:
    description:
      - Seconds to wait for the readiness line before failing with the last log lines.
    type: int
    default: 120
notes:
  - Runs on the target host with the Python standard library only.
seealso:
  - module: aiinfra.gpudirect.nccl_plugin
  - name: Vendor manual, Compute Engine GPUDirect-TCPX/TCPXO host set-up
    description: The C(docker run) commands this module reproduces.
    link: https://cloud.google.com/compute/docs/gpus/gpudirect
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - aiinfra.gpudirect.docker_engine
attributes:
  check_mode:
    support: full
    details: Nothing is pulled, created or removed; missing device nodes are warnings.
  diff_mode:
    support: full
    details: The container's configuration before and after.
  platform:
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Start RxDM on an A3 Mega host and wait until it is ready
  aiinfra.gpudirect.gpudirect_rxdm:
    machine_type: a3-megagpu-8g

- name: Run the public RxDM/plugin pair from a registry mirror
  aiinfra.gpudirect.gpudirect_rxdm:
    technology: TCPXO
    rxdm_image: mirror.example.com/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21
    plugin_version: v1.0.15
    pull: missing

- name: Fail unless RxDM runs and is ready (health check)
  aiinfra.gpudirect.gpudirect_rxdm:
    technology: TCPX
    state: checked

- name: Remove RxDM
  aiinfra.gpudirect.gpudirect_rxdm:
    technology: TCPX
    state: absent
"""

RETURN = r"""
technology:
  description: GPUDirect technology of the host.
  returned: always
  type: str
  sample: TCPXO
container_name:
  description: Name of the RxDM container.
  returned: always
  type: str
  sample: rxdm
container_id:
  description: ID of the container (null when absent or only planned in check mode).
  returned: always
  type: str
  sample: 4f1c0b7e9a2d
image:
  description: Image reference the container runs.
  returned: always
  type: str
  sample: us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.19
image_id:
  description: ID of that image on the host (null when not pulled yet in check mode).
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
actions:
  description: What this run did or, in check mode, would do, and why.
  returned: always
  type: list
  elements: str
  sample: ["recreate: configuration changed (args)", "wait for readiness"]
ready:
  description: Whether the readiness line was seen.
  returned: always
  type: bool
ready_line:
  description: The log line that showed readiness.
  returned: when ready
  type: str
  sample: "I0000 rx_rule_manager.cc:174] Rx Rule Manager server(s) started..."
time_to_ready:
  description: Seconds from container start to the readiness line, as the engine's log timestamps resolve it.
  returned: when ready
  type: float
  sample: 1.2
gvnic:
  description: The gVNIC driver of each data NIC and the family's floor (families with a floor only).
  returned: when the family has a gVNIC driver floor and O(state) is not V(absent)
  type: dict
  contains:
    floor:
      description: The oldest gve version the family's GPUDirect stack supports.
      type: str
      sample: 1.4.0rc3
    interfaces:
      description: Per data NIC, C(driver) and C(version) as read, or why they could not be read.
      type: dict
      sample: {eth1: {driver: gve, version: 1.4.0rc3}}
missing_devices:
  description: Device nodes the container needs that the host lacks, each with its fix (check mode only; otherwise the module fails).
  returned: always
  type: list
  elements: dict
host:
  description: The catalog's host facts for this technology, for roles that prepare the rest of the host.
  returned: always
  type: dict
  contains:
    technology:
      description: GPUDirect technology.
      type: str
    machine_type:
      description: Machine type the facts are for (the first of the technology when only that was given).
      type: str
    gpu_count:
      description: GPUs of the machine type.
      type: int
    data_interfaces:
      description: Names of the data NICs.
      type: list
      elements: str
    mtu:
      description: MTU of the data networks.
      type: int
    data_source_ranges:
      description: Subnet ranges of the data networks in the manual's layout.
      type: list
      elements: str
    kernel_modules:
      description: Kernel modules to load (import-helper for TCPXO).
      type: list
      elements: str
    devices:
      description: Device nodes RxDM needs, each with the fix that creates it.
      type: list
      elements: dict
    gpu_driver_install_argv:
      description: The driver install command as an argument list; C({version}) marks the driver version.
      type: list
      elements: str
    nvidia_dir:
      description: Directory of the driver, bind-mounted and remounted exec.
      type: str
    nvidia_remount_argvs:
      description: The manual's bind-mount and remount commands for RV(host.nvidia_dir).
      type: list
      elements: list
    registry:
      description: Artifact Registry host of the images.
      type: str
    registry_auth_argv:
      description: Command that makes the engine authenticate to the registry.
      type: list
      elements: str
    firewall_accept_all_argv:
      description: The manual's accept-all INPUT rule (used only when asked for by name).
      type: list
      elements: str
    plugin_dir:
      description: Directory of the NCCL plugin.
      type: str
    plugin_lib_dir:
      description: Directory the plugin installer writes the libraries to.
      type: str
"""


from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import host as cos_host
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import docker_api
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import gvnic
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks

MANAGED_BY = 'aiinfra.gpudirect.gpudirect_rxdm'


def argument_spec():
    return dict(
        cos_host.COMMON_ARGUMENT_SPEC,
        state=dict(type='str', default='started', choices=['started', 'restarted', 'checked', 'absent']),
        rxdm_image=dict(type='str'),
        name=dict(type='str'),
        ready_timeout=dict(type='int', default=120),
    )


# -- validate --------------------------------------------------------------------------------------


def stack_facts(technology, family):
    stack = host_stacks.host_stack(technology)
    driver = [a.replace('--version=latest', '--version={version}') for a in cos_host.argv(host_stacks.GPU_DRIVER_INSTALL_COMMAND)]
    return {
        'technology': technology,
        'machine_type': family.machine_type,
        'gpu_count': family.gpu_count,
        'data_interfaces': list(family.data_interface_names),
        'mtu': family.mtu,
        'data_source_ranges': compute.data_subnet_ranges(family.data_nic_count),
        'kernel_modules': list(stack.kernel_modules),
        'devices': cos_host.device_fixes(technology, stack.rxdm.devices),
        'gpu_driver_install_argv': driver,
        'nvidia_dir': host_stacks.NVIDIA_DIR,
        'nvidia_remount_argvs': [cos_host.argv(c) for c in host_stacks.NVIDIA_REMOUNT_COMMANDS],
        'registry': host_stacks.REGISTRY,
        'registry_auth_argv': cos_host.argv(host_stacks.REGISTRY_AUTH_COMMAND),
        'firewall_accept_all_argv': cos_host.argv(stack.firewall_command),
        'plugin_dir': stack.plugin_dir,
        'plugin_lib_dir': stack.plugin_lib_dir,
    }


def run(module, client):
    params = module.params
    technology, family = cos_host.resolve_technology(params)
    stack = host_stacks.host_stack(technology)
    image, pair = cos_host.resolve_image(technology, 'rxdm', params, params['rxdm_image'])
    name = params['name'] or stack.rxdm.name
    result = dict(changed=False, technology=technology, container_name=name, container_id=None, image=image,
                  image_id=None, actions=[], ready=False, missing_devices=[], host=stack_facts(technology, family),
                  version_pair=cos_host.pair_summary(pair))
    if pair is None:
        module.warn('RxDM %s is not in a known-good pair with NCCL plugin %s (force_version_pair); NCCL may fail at run time'
                    % (image, params['plugin_version'] or 'default'))
    current = client.inspect_container(name)

    if params['state'] == 'absent':
        return cos_host.remove_container(module, client, current, result)
    if family.min_gvnic_driver:
        result['gvnic'] = check_gvnic(module, family, result)

    if params['state'] == 'checked':
        return check(module, client, current, image, stack, result)

    image_info, image_action = docker_api.ensure_image(client, image, params['pull'], module.check_mode)
    image_id = (image_info or {}).get('Id')
    result['image_id'] = image_id
    if image_action != 'present':
        result['actions'].append('%s image %s' % (image_action, image))
    desired = docker_api.container_summary(stack.rxdm, image)
    reasons = docker_api.drift_reasons(current, desired, image_id, restart=params['state'] == 'restarted')
    result['actions'].extend(reasons)
    result['diff'] = dict(before=docker_api.current_summary(current), after=desired if reasons else docker_api.current_summary(current))
    if not reasons:
        result['container_id'] = current['Id'][:12]
        return wait_ready(module, client, current['Id'], stack, result)

    missing = docker_api.missing_devices(stack.rxdm.devices)
    if missing:
        result['missing_devices'] = cos_host.device_fixes(technology, missing)
        message = 'RxDM needs device nodes this host lacks: ' + '; '.join(
            '%s (fix: %s)' % (d['path'], d['fix']) for d in result['missing_devices'])
        if not module.check_mode:
            module.fail_json(msg=message + '; nothing was created', **failure_details(result))
        module.warn(message + ' (check mode: the real run fails unless an earlier step creates them)')
    result['changed'] = True
    if module.check_mode:
        return result
    container_id = docker_api.recreate(client, current, name, docker_api.create_body(stack.rxdm, image, MANAGED_BY))
    result['container_id'] = container_id[:12]
    return wait_ready(module, client, container_id, stack, result)


def check_gvnic(module, family, result):
    """The gVNIC driver of every data NIC against the family's floor; a NIC below it fails the module, read-only."""
    ethtool = module.get_bin_path('ethtool')
    readings = {}
    for interface in family.data_interface_names:
        if ethtool:
            rc, out, err = module.run_command([ethtool, '-i', interface])
            readings[interface] = gvnic.parse_ethtool_info(out) if rc == 0 else (err.strip() or 'ethtool -i exited %d' % rc)
        else:
            reading, error = gvnic.sysfs_reading(interface)
            readings[interface] = reading or error
    problems, notes = gvnic.judge(readings, family.min_gvnic_driver)
    for note in notes:
        module.warn(note)
    if problems:
        module.fail_json(msg='%s needs gVNIC driver %s or later on its data NICs; found before anything was created: %s'
                         % (family.machine_type, family.min_gvnic_driver, '; '.join(problems)),
                         gvnic={'floor': family.min_gvnic_driver, 'interfaces': readings}, **failure_details(result))
    return {'floor': family.min_gvnic_driver, 'interfaces': readings}


def failure_details(result):
    """What a failure reports besides its message: the container, not the catalog's host facts."""
    return {k: v for k, v in result.items() if k != 'host'}


def wait_ready(module, client, container_id, stack, result):
    params = module.params
    try:
        line, seconds = docker_api.wait_for_log_line(client, container_id, stack.rxdm_ready_line,
                                                     params['ready_timeout'], params['log_lines'])
    except (docker_api.WaitTimeout, docker_api.ContainerExited) as exc:
        module.fail_json(msg='RxDM (%s, %s) is not ready: %s. Last %s log lines:\n%s'
                         % (result['container_name'], result['image'], exc, params['log_lines'], exc.log_tail),
                         log_tail=exc.log_tail.splitlines(), **failure_details(result))
    result.update(ready=True, ready_line=line, time_to_ready=seconds)
    return result


def check(module, client, current, image, stack, result):
    if current is None:
        module.fail_json(msg='RxDM container %s does not exist; run with state=started' % result['container_name'],
                         **failure_details(result))
    result['container_id'] = current['Id'][:12]
    image_id = (client.inspect_image(image) or {}).get('Id')
    result['image_id'] = image_id
    reasons = docker_api.drift_reasons(current, docker_api.container_summary(stack.rxdm, image), image_id)
    if reasons:
        result['actions'] = reasons
        module.fail_json(msg='RxDM container %s needs attention: %s; run with state=started'
                         % (result['container_name'], '; '.join(reasons)), **failure_details(result))
    return wait_ready(module, client, current['Id'], stack, result)


def main():
    cos_host.run_engine_module(argument_spec(), run, 'RxDM', exclusive=('rxdm_image', 'rxdm_version'))


if __name__ == '__main__':
    main()
