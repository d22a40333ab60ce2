# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inputs of the cos_host_prep role, checked on the controller before any VM exists.

The role's modules (gpudirect_rxdm, nccl_plugin) run on the hosts, which do not exist when a playbook
starts; gpudirect_plan checks the role's variables here first, with the same catalog functions the
modules call (host_stacks.version_pair), on the role's variables without the cos_host_prep_ prefix, validated
with the role's own meta/argument_specs.yml.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import host_stacks
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import mig as mig_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import mig as host_mig
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

# What the role passes to ``cos-extensions install gpu -- -version=`` (COS, "Installing GPU drivers"): a driver
# version such as 535.183.01, or latest; the role compares it with what nvidia-smi reports, so a label such as
# default would reinstall on every run.
DRIVER_VERSION = re.compile(r'^(latest|\d{3}(\.\d{1,3}){1,2})$')
MIG_KEYS = ('state', 'gpus', 'instances', 'allow_gpu_reset')


def check_host_inputs(params):
    """Refuse the role's inputs that would fail on the hosts, or open them wider than asked."""
    family = families.get_family(params['machine_type'], field='machine_type')
    if params['firewall'] == 'data_ranges':
        for value in params['firewall_source_ranges']:
            try:
                network = ipaddress.ip_network(value, strict=True)
            except ValueError as exc:
                raise InputError('firewall_source_ranges: %r is not a CIDR range (%s); write it like 192.168.1.0/24' % (value, exc)) from None
            if network.version != 4:
                raise InputError('firewall_source_ranges: %s is IPv6; the data networks are IPv4 (iptables, not ip6tables)' % value)
        ranges = [ipaddress.ip_network(value) for value in params['firewall_source_ranges']]
        if any(network.prefixlen == 0 for network in ipaddress.collapse_addresses(ranges)):
            raise InputError('firewall_source_ranges: %s together accept TCP from anywhere; give the data subnets, or set firewall: '
                             'accept_all to say you mean the manual\'s rule' % ' + '.join(params['firewall_source_ranges']))
    elif params['firewall_source_ranges']:
        raise InputError('firewall_source_ranges: only firewall: data_ranges uses them; remove them or set firewall: data_ranges')
    if not DRIVER_VERSION.match(str(params['gpu_driver_version'])):
        raise InputError('gpu_driver_version: %r is not a driver version cos-extensions installs; give latest or a version '
                         'such as 535.183.01' % (params['gpu_driver_version'],))
    for field in ('rxdm_ready_timeout', 'plugin_install_timeout'):
        if params[field] <= 0:
            raise InputError('%s: %d seconds; give a positive number of seconds' % (field, params[field]))
    if not params['force_version_pair']:
        try:
            host_stacks.version_pair(family.technology, rxdm=params['rxdm_version'] or None, plugin=params['plugin_version'] or None)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    check_mig_inputs(params, family)


def check_mig_inputs(params, family):
    """The multi-instance GPU request, checked with the functions gpu_mig runs on the host, against the family's GPU."""
    mig = params.get('mig') or {}
    if not mig:
        return
    unknown = sorted(set(mig) - set(MIG_KEYS))
    if unknown:
        raise InputError('mig: unknown key(s) %s; it takes %s' % (', '.join(unknown), ', '.join(MIG_KEYS)))
    state = mig.get('state') or 'enabled'
    if state not in ('enabled', 'disabled'):
        raise InputError('mig: state %r; choose enabled or disabled' % (state,))
    gpus = mig.get('gpus') or []
    wrong = [gpu for gpu in gpus if not isinstance(gpu, int) or not 0 <= gpu < family.gpu_count]
    if wrong:
        raise InputError('mig: gpus %s; %s has GPUs 0-%d' % (', '.join(map(str, wrong)), family.machine_type, family.gpu_count - 1))
    if state == 'disabled':
        return
    if params['gpudirect'] and family.technology in mig_catalog.TECHNOLOGIES_WITHOUT_MIG:
        raise InputError('mig: %s runs GPUDirect-%s, which does not work with multi-instance GPU; set gpudirect: false for the '
                         'hosts that use MIG (no RxDM, no NCCL plugin), or remove mig' % (family.machine_type, family.technology))
    if not mig.get('instances'):
        raise InputError('mig: instances: give the GPU instances each GPU gets, e.g. [{profile: 1g.10gb, count: 7}]')
    gpu_name = mig_catalog.gpu_name_for_family(family)
    profiles = mig_catalog.profiles_for_gpu(gpu_name)
    try:
        host_mig.check_layout(host_mig.wanted_instances(mig['instances'], profiles, gpu_name), profiles, gpu_name)
    except (ValueError, TypeError, AttributeError) as exc:
        raise InputError('mig: %s' % exc) from None
