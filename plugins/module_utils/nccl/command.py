# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inputs of an NCCL test run and the command they make, checked before anything runs.

nccl_perf runs the command on a host; gpudirect_plan calls check_inputs() on the controller at the top
of a playbook, so a bad NCCL option is refused before the first VM is created. Standard library only
(nccl_perf runs on COS hosts).
"""

from __future__ import annotations

import re
import shlex

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import parse as nccl_parse
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import verdict as nccl_verdict
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

SIZE_PATTERN = r'^\d+(\.\d+)?[KkMmGg]?$'
# What the collection's own runs add to the environment, so that the log proves the network NCCL used: its INFO lines
# name the network ("Using network FasTrak", "via NET/GPUDirectTCPX/0"), which NCCL prints only at NCCL_DEBUG=INFO (the
# seeds run at WARN); INIT and NET are the subsystems of those lines, which keeps the log short. The user's env wins.
DEBUG_ENV = {'NCCL_DEBUG': 'INFO', 'NCCL_DEBUG_SUBSYS': 'INIT,NET'}


def argument_spec():
    return dict(
        mode=dict(type='str', default='local', choices=['gce', 'local', 'parse']),
        machine_type=dict(type='str'),
        technology=dict(type='str'),
        collective=dict(type='str'),
        thresholds=dict(type='dict', default={}),
        require_network_evidence=dict(type='bool'),
        fail_on_verdict=dict(type='bool', default=False),
        output=dict(type='str'),
        path=dict(type='path'),
        hosts=dict(type='list', elements='str'),
        container=dict(type='str'),
        test_command=dict(type='str', aliases=['command']),
        binary=dict(type='path'),
        launcher=dict(type='list', elements='str', default=[]),
        minbytes=dict(type='str', default='1M'),
        maxbytes=dict(type='str', default='512M'),
        stepfactor=dict(type='int', default=2),
        ngpus=dict(type='int'),
        iters=dict(type='int'),
        warmup_iters=dict(type='int'),
        check=dict(type='int'),
        extra_args=dict(type='list', elements='str', default=[]),
        env=dict(type='dict', default={}),
        timeout=dict(type='int', default=1800),
        keep_log=dict(type='str', default='on_failure', choices=['on_failure', 'always', 'never']),
        log_path=dict(type='path'),
        preflight=dict(type='bool', default=True),
        expected_gpus=dict(type='int'),
        nvidia_smi=dict(type='path'),
        docker_socket=dict(type='path', default='/var/run/docker.sock'),
    )


def verdict_target(params):
    """(machine type or None, its catalog entry or None, technology or None): what the verdict judges against."""
    family = families.get_family(params['machine_type'], field='machine_type') if params['machine_type'] else None
    technology = params['technology']
    if technology:
        technology = families.check_technology(technology, field='technology')
        if family and family.technology != technology:
            raise InputError('technology: %s uses GPUDirect-%s, not %s; drop technology or fix machine_type'
                             % (family.machine_type, family.technology, technology))
    return (family.machine_type if family else None), family, (technology or (family.technology if family else None))


def gce_exec(params, technology):
    """(container, argv): the Compute Engine GPUDirect guide's setup commands and run script, from the catalog, as one ``bash -c`` in the
    NCCL test container (module nccl_container starts it; its name is the catalog's unless ``container`` is given)."""
    if not technology:
        raise InputError('machine_type: mode gce needs machine_type (or technology) to pick the guide\'s run script; '
                         'for example machine_type: a3-megagpu-8g')
    try:
        stack = host_stacks.host_stack(technology)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    hosts = params['hosts'] or []
    if len(hosts) < 2:
        raise InputError('hosts: mode gce runs between VMs; give at least two VM names, for example [vm-1, vm-2]')
    container = params['container'] or host_stacks.nccl_container_name(technology)
    names = ' '.join(shlex.quote(h) for h in hosts)
    script = ['set -e'] + ['export %s=%s' % (name, shlex.quote(str(value))) for name, value in sorted(run_env(params).items())]
    script += [c.format(hosts=names) for c in stack.nccl_test_setup_commands]
    script.append(params['test_command'] or seed_command(stack, params['collective']))
    return container, ['bash', '-c', '\n'.join(script)]


def run_env(params):
    """The environment of the test the collection runs: DEBUG_ENV with the user's ``env`` on top."""
    return dict(DEBUG_ENV, **{str(name): str(value) for name, value in (params['env'] or {}).items()})


def evidence_required(params):
    """Whether a log without NCCL's network lines fails: by default for the runs the collection makes (modes gce and local,
    with DEBUG_ENV), not for a saved log it only reads (mode parse), which is judged on bandwidth and says the network
    was not judged."""
    if params['require_network_evidence'] is not None:
        return params['require_network_evidence']
    return params['mode'] != 'parse'


def seed_command(stack, collective):
    """The guide's run command for ``collective`` (None: the guide's own, all_gather). TCPXO's script takes the nccl-tests
    binary as its first argument, so any collective runs; TCPX's image has a script for all_gather only."""
    wanted = nccl_parse.collective_name(collective)
    seeds = collective_in_command(stack.nccl_test_command)
    if wanted is None or wanted == seeds:
        return stack.nccl_test_command
    if '%s_perf' % seeds in stack.nccl_test_command:
        return stack.nccl_test_command.replace('%s_perf' % seeds, '%s_perf' % wanted, 1)
    raise InputError('collective: the GPUDirect-%s image runs %s only (%s); drop collective, or give test_command with a '
                     'script of the image that runs %s' % (stack.technology, seeds, stack.nccl_test_command.split()[0], wanted))


def nic_restricted_command(technology, collective, nic):
    """The seed's run command with NCCL restricted to the data NIC ``nic`` (a per-NIC run of a diagnosis).

    The seed's run scripts take the data NICs as one comma-separated argument (``eth1,...,eth8``) and hand it to the
    GPUDirect plugin's NIC list: NCCL_FASTRAK_IFNAME for GPUDirect-TCPXO and NCCL_GPUDIRECTTCPX_SOCKET_IFNAME (with
    NCCL_GPUDIRECTTCPX_CTRL_DEV the control NIC, eth0, left as it is) for GPUDirect-TCPX -- the names of the seed's NCCL
    configuration for GKE ("Usa la configuracion de NCCL necesaria ...", catalog/gke.py nccl_env) and of Google's
    "Maximize GPU network bandwidth with GPUDirect-TCPX/TCPXO" guide
    (https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx). Giving one NIC there
    makes the run use that NIC alone."""
    stack = host_stacks.host_stack(technology)
    command = seed_command(stack, collective)
    every = ','.join(stack.nccl_test_data_interfaces)
    if nic not in stack.nccl_test_data_interfaces or every not in command:
        raise InputError('nic: %r is not a data NIC of the GPUDirect-%s run command (%s)' % (nic, technology, every))
    return command.replace(every, nic, 1)


def gce_command(params, technology):
    """``docker exec CONTAINER bash -c SCRIPT``: what gce_exec runs, as the manual's command line."""
    container, argv = gce_exec(params, technology)
    return ['docker', 'exec', container] + argv


def collective_in_command(command):
    """The collective a run command names (``all_gather_perf``, ``run-allgather.sh``), else None."""
    match = re.search(r'\b([a-z_]+)_perf\b', command) or re.search(r'run-(allgather|allreduce)\.sh', command)
    return nccl_parse.collective_name(match.group(1)) if match else None


def local_command(params, family):
    """The nccl-tests binary with its arguments, after the launcher."""
    if not params['binary']:
        raise InputError('binary: mode local runs an nccl-tests binary; give its path, for example '
                         '/opt/nccl-tests/build/all_gather_perf')
    for option in ('minbytes', 'maxbytes'):
        if not re.match(SIZE_PATTERN, params[option]):
            raise InputError('%s: %r is not an nccl-tests size; write a number with an optional K, M or G, for example 512M'
                             % (option, params[option]))
    command = list(params['launcher']) + [params['binary'], '-b', params['minbytes'], '-e', params['maxbytes'],
                                          '-f', str(params['stepfactor'])]
    ngpus = params['ngpus'] or (family.gpu_count if family and not params['launcher'] else None)
    for flag, value in (('-g', ngpus), ('-n', params['iters']), ('-w', params['warmup_iters']), ('-c', params['check'])):
        if value is not None:
            command += [flag, str(value)]
    return command + list(params['extra_args'])


def check_inputs(params):
    """(machine type name, family, technology, command, collective hint) of nccl_perf's options; ValueError on bad input.

    The command is None in parse mode (nothing runs)."""
    family_name, family, technology = verdict_target(params)
    nccl_verdict.thresholds_for(family_name, params['thresholds'])
    if params['timeout'] <= 0:
        raise InputError('timeout: %d; give the seconds the test may run, for example 1800' % params['timeout'])
    if params['mode'] == 'parse':
        return family_name, family, technology, None, params['collective']
    if params['mode'] == 'gce':
        command = gce_command(params, technology)
        return family_name, family, technology, command, params['collective'] or collective_in_command(command[-1])
    return family_name, family, technology, local_command(params, family), params['collective'] or params['binary']
