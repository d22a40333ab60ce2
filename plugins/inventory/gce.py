# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: gce
short_description: Compute Engine GPU fleets as groups, with the GPUDirect facts each host needs
version_added: 0.1.0
description:
  - Lists the Compute Engine VMs of one or many projects and makes them an inventory for the later stages of a GPU
    cluster (host preparation, NCCL tests, your own playbooks).
  - Each host carries the GPUDirect facts of its machine type from the collection's catalog (technology, GPU count
    and model) and the addresses of its data NICs in NIC order with the interface names the guest gives them
    (C(eth1) .. C(ethN)), and the comma-separated interface list the NCCL tests take.
  - Hosts are grouped by GPUDirect technology (C(gpudirect_tcpx), C(gpudirect_tcpxo), C(gpudirect_rdma),
    C(gpudirect_none)), machine type (C(gpudirect_a3_highgpu_8g)), zone, region, project and GPUDirect network (the
    O(aiinfra.gpudirect.gce_gpudirect_network#module:network_prefix) of the networks the VM's first NIC is on).
  - A machine-type group is a child of its technology group (C(gpudirect_tcpx) holds C(gpudirect_a3_highgpu_8g) and
    C(gpudirect_a3_edgegpu_8g)) and a zone group a child of its region group, so a host is a direct member of its
    machine type (or C(gpudirect_none)), zone, project and GPUDirect network groups and belongs to the others through them, as
    C(groups), host patterns and C(ansible-inventory --graph) show.
  - One C(instances.aggregatedList) call per project, with pages of 500 and a field mask; projects are listed
    concurrently; HTTP 429, 5xx and dropped connections are retried with capped exponential backoff and jitter.
    Every other failure stops the inventory with the project and the cause (see O(strict_permissions) and
    O(allow_unreachable_zones) for the two ways to go on without a part of the fleet).
  - Uses a YAML configuration file whose name ends with C(gce.yml) or C(gce.yaml).
  - 'Host variables (prefix O(vars_prefix), C(gpudirect_) by default): C(name), C(id), C(project), C(zone), C(region),
    C(status), C(machine_type), C(technology) (V(tcpx), V(tcpxo), V(rdma) or
    V(none): a machine type outside the catalog), C(gpu_count), C(gpu_model), C(provisioning_model), C(labels), C(management_ip), C(external_ip),
    C(management_network), C(management_subnetwork), C(network_prefix), C(data_ips), C(data_interfaces) (the guest
    names, C(eth1) .. C(ethN); null for an RDMA NIC), C(data_networks), C(data_subnetworks), C(data_nic_types) (these
    five are aligned lists, one entry per data NIC in NIC order), C(nccl_interfaces) (for example
    C(eth1,eth2,eth3,eth4), the list the guide''s NCCL test scripts and C(NCCL_GPUDIRECTTCPX_SOCKET_IFNAME) take),
    C(nccl_ctrl_interface) and C(self_link); plus C(ansible_host) (see O(ansible_host)).'
  - Facts that are the same for every host of a group of this plugin (the technology of C(gpudirect_tcpx), the GPU
    facts and interface names of a machine type, the VPC networks of a GPUDirect network) are set once as variables of that group, which
    is much faster on a fleet of thousands; a host that differs gets its own host variable. Every host sees all of them
    in C(hostvars), C(ansible-inventory --host), O(compose), O(groups) and O(keyed_groups). Do not set these
    C(gpudirect_*) names in C(group_vars/all), which would outrank the group variables of this plugin.
  - The facts are data, never templates (a value that looks like C({{ x }}) stays that text). They are set without
    the origin tag ansible-core 2.19 would add (the path of the inventory source, used only in error messages), which
    costs it several microseconds per value.
  - O(compose), O(groups) and O(keyed_groups) also see the instance as the API returned it (within the field mask,
    see O(extra_fields)) as C(instance).
author:
  - aiinfra.gpudirect contributors (@aiinfra)
requirements:
  - google-auth >= 2.29
  - requests >= 2.31
extends_documentation_fragment:
  - constructed
  - inventory_cache
options:
  plugin:
    description: The name of this plugin; it makes the file an inventory source of this plugin.
    required: true
    type: str
    choices: [aiinfra.gpudirect.gce]
  projects:
    description:
      - The Google Cloud projects whose VMs to list, all at once.
      - Falls back to the E(GCP_PROJECT) environment variable.
    type: list
    elements: str
  zones:
    description:
      - Only VMs in these zones. Empty means every zone.
    type: list
    elements: str
    default: []
  regions:
    description:
      - Only VMs in the zones of these regions. Empty means every region. Combined with O(zones), a VM is listed when
        its zone or its region is named.
    type: list
    elements: str
    default: []
  filters:
    description:
      - Filter expressions of the Compute API, sent with the request (for example V(name = a3high-*) or
        V(labels.team = ml)). Several expressions are joined with AND, each in parentheses.
      - Either syntax of the API may be used (C(=) / C(!=) or C(eq) / C(ne) with a regular expression), not both at once.
    type: list
    elements: str
    default: []
  labels:
    description:
      - Label selector applied to the listed VMs. Each key must be present; its value must equal the given value,
        be one of the given values (a list), or be anything (V(*)).
    type: dict
    default: {}
  status:
    description:
      - Only VMs in these states. An empty list keeps every state.
    type: list
    elements: str
    default: [RUNNING]
  extra_fields:
    description:
      - More Instance fields to fetch beyond the field mask this plugin needs (for example V(metadata), V(tags),
        V(serviceAccounts/email)), for use as C(instance.FIELD) in O(compose), O(groups) and O(keyed_groups).
    type: list
    elements: str
    default: []
  hostnames:
    description:
      - An ordered preference list for the inventory name of a VM; the first that gives a value wins.
      - V(name), V(fqdn) (C(NAME.ZONE.c.PROJECT.internal)), V(id), V(internal_ip), V(external_ip), V(hostname) (the
        VM's custom hostname), V(labels.KEY).
      - When none gives a value (for example a missing label) the VM's name is used, so a missing label never fails.
      - When two VMs get the same name (same VM name in two projects), the first by instance id keeps it and a warning
        says so; put V(fqdn) first to tell them apart.
    type: list
    elements: str
    default: [name]
  ansible_host:
    description:
      - What C(ansible_host) of each VM is.
      - V(external) is the external address of the first NIC, or its internal address when the VM has none.
      - V(internal) is the internal address of the first NIC, for a controller inside the VPC or behind a bastion
        (add C(ansible_ssh_common_args) with a C(ProxyJump) through O(compose) or group_vars).
      - V(iap) is the VM name, with C(ansible_ssh_common_args) set to a ProxyCommand of
        C(gcloud compute start-iap-tunnel NAME 22 --listen-on-stdin), so SSH reaches VMs without external addresses
        through Identity-Aware Proxy (needs a firewall rule from 35.235.240.0/20 to port 22).
      - V(none) leaves it unset (for example to set it with O(compose)).
    type: str
    choices: [external, internal, iap, none]
    default: external
  vars_prefix:
    description:
      - Prefix of every host variable this plugin sets (C(ansible_host) and C(ansible_ssh_common_args) excepted).
      - Letters, digits and C(_), not starting with a digit, so that every name is a valid variable name.
    type: str
    default: gpudirect_
  group_prefix:
    description: Prefix of the groups this plugin makes by technology, machine type, zone, region, project and GPUDirect network.
    type: str
    default: gpudirect_
  strict_permissions:
    description:
      - When true (the default), a project that answers HTTP 403 stops the inventory.
      - When false, such a project is left out with a warning naming it; any other error still stops the inventory.
    type: bool
    default: true
  allow_unreachable_zones:
    description:
      - When false (the default), a zone the API reports as unreachable stops the inventory, since its VMs would be
        missing from it.
      - When true, the VMs of that zone are left out with a warning naming the project and zone, and the result is not
        cached.
    type: bool
    default: false
  max_workers:
    description: How many projects to list at the same time.
    type: int
    default: 8
  auth_kind:
    description:
      - How to obtain credentials (see the P(aiinfra.gpudirect.gce_gpudirect_instance#module) module).
        V(application) when not set.
      - Falls back to the E(GCP_AUTH_KIND) environment variable, which AWX's built-in GCE credential sets.
    type: str
    choices: [application, serviceaccount, accesstoken, machineaccount, none]
  service_account_file:
    description:
      - Path to a service account JSON key file, for O(auth_kind=serviceaccount).
      - Falls back to the E(GCP_SERVICE_ACCOUNT_FILE) environment variable.
    type: path
  service_account_contents:
    description:
      - The contents of a service account JSON key, for O(auth_kind=serviceaccount).
      - Falls back to the E(GCP_SERVICE_ACCOUNT_CONTENTS) environment variable.
    type: str
  access_token:
    description:
      - An OAuth2 access token, for O(auth_kind=accesstoken).
      - Falls back to the E(GCP_ACCESS_TOKEN) environment variable.
    type: str
  scopes:
    description:
      - OAuth2 scopes to request (C(https://www.googleapis.com/auth/cloud-platform) when not set).
      - Falls back to the E(GCP_SCOPES) environment variable (comma separated).
    type: list
    elements: str
  compute_endpoint:
    description:
      - Base URL of the Compute Engine API, including the version path (C(https://compute.googleapis.com/compute/v1/)
        when not set).
      - Falls back to E(CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE), the variable gcloud honours.
    type: str
  retry_deadline:
    description: Seconds within which one API call may be retried.
    type: float
    default: 300
notes:
  - Ansible turns an inventory source that fails into a warning and goes on without its hosts. Set
    C(inventory_any_unparsed_is_failed = true) in the C([inventory]) section of C(ansible.cfg) (or
    E(ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED=true)) so that a failed listing stops the run instead.
  - With O(cache) on, the raw API pages are cached, not the built inventory, so O(compose), O(groups),
    O(keyed_groups), O(hostnames) and the selections applied on the controller (O(zones), O(regions), O(labels))
    take effect on the next run without a refresh; a change of O(projects), O(filters), O(status), O(extra_fields)
    or the endpoint is a cache miss. The pages are kept as one compressed string (about 0.4 MB for 5,000 VMs), which
    fits any cache plugin, memcached's 1 MB items included.
  - O(zones), O(regions), O(status) and O(labels) are applied on the controller, so they combine with O(filters) of
    either syntax. O(status) is also sent to the API when it can be written in the syntax of O(filters) (one status,
    or several when no O(filters) are given), so the API pages only the VMs that are kept.
seealso:
  - module: aiinfra.gpudirect.gce_gpudirect_instance
  - module: aiinfra.gpudirect.gce_gpudirect_network
"""

EXAMPLES = r"""
# gce.yml: the GPU VMs of two projects, reached through their external addresses
plugin: aiinfra.gpudirect.gce
projects:
  - ml-training-prod
  - ml-training-dev
regions:
  - us-central1
  - us-east5
---
# a3high.gce.yml: one cluster's VMs by label, reached over IAP, with a group per training job
plugin: aiinfra.gpudirect.gce
projects: [ml-training-prod]
zones: [us-central1-a]
filters:
  - name = a3high-*
labels:
  cluster: a3high
hostnames:
  - labels.node-name   # VMs without the label keep their name
  - name
ansible_host: iap
keyed_groups:
  - key: gpudirect_labels.job | default('none')
    prefix: job
compose:
  nccl_hosts: gpudirect_data_ips | join(',')
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/aiinfra-gpudirect-inventory
cache_timeout: 300
---
# internal.gce.yml: from a controller inside the VPC or through a bastion
plugin: aiinfra.gpudirect.gce
ansible_host: internal
status: [RUNNING, STAGING]
compose:
  ansible_ssh_common_args: "'-o ProxyJump=ops@bastion.example.com'"
"""

import base64
import contextlib
import difflib
import gc
import json
import re
import zlib

from ansible.errors import AnsibleParserError
from ansible.release import __version__ as ansible_version
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.compute import ComputeClient
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.concurrency import map_concurrently
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import AUTH_KINDS, RetryPolicy, Transport, load_credentials, resolve_settings
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce.vm import NON_GPU, instance_facts

PAGE_SIZE = 500
# What the host variables are made of: the field mask of every request (plus extra_fields).
INSTANCE_FIELDS = (
    'id', 'name', 'zone', 'status', 'machineType', 'labels', 'selfLink', 'hostname', 'guestAccelerators',
    'scheduling/provisioningModel', 'networkInterfaces(name,network,subnetwork,networkIP,nicType,accessConfigs/natIP)',
)
HOSTNAME_KINDS = ('name', 'fqdn', 'id', 'internal_ip', 'external_ip', 'hostname')
STATUSES = ('PROVISIONING', 'STAGING', 'RUNNING', 'STOPPING', 'SUSPENDING', 'SUSPENDED', 'REPAIRING', 'TERMINATED')
ZONE_PATTERN = re.compile(r'^[a-z]+-[a-z]+[0-9]+-[a-z]$')
REGION_PATTERN = re.compile(r'^[a-z]+-[a-z]+[0-9]+$')
PREFIX_PATTERN = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)?$')
FIELD_PATTERN = re.compile(r'^[A-Za-z][A-Za-z0-9]*(/[A-Za-z][A-Za-z0-9]*)*$')
CACHE_FORMAT = 2


# ---------------------------------------------------------------------------------------------
# Field masks: the API's partial-response syntax (a/b paths, a(b,c) groups, * for map keys)


MASK_PATH = re.compile(r'[A-Za-z0-9_*]+(?:/[A-Za-z0-9_*]+)*')


def parse_mask(text):
    """'a,b/c,d(e,f/g)' -> {'a': True, 'b': {'c': True}, 'd': {'e': True, 'f': {'g': True}}}."""
    tree = {}
    position = _parse_mask_list(text, 0, tree)
    if position != len(text):
        raise ValueError('unbalanced parentheses in field mask %r' % text)
    return tree


def _parse_mask_list(text, position, tree):
    while position < len(text):
        match = MASK_PATH.match(text, position)
        if not match:
            raise ValueError('bad field mask %r at %d' % (text, position))
        node = tree
        parts = match.group(0).split('/')
        for part in parts[:-1]:
            child = node.get(part)
            node = node.setdefault(part, {}) if child is not True else {}
        position = match.end()
        if position < len(text) and text[position] == '(':
            child = node.get(parts[-1])
            sub = child if isinstance(child, dict) else {}
            node[parts[-1]] = sub
            position = _parse_mask_list(text, position + 1, sub)
            if position >= len(text) or text[position] != ')':
                raise ValueError('unbalanced parentheses in field mask %r' % text)
            position += 1
        else:
            node[parts[-1]] = True
        if position < len(text) and text[position] == ',':
            position += 1
        elif position < len(text) and text[position] == ')':
            return position
    return position


def apply_mask(value, tree):
    """The part of ``value`` that ``tree`` selects, as the API returns it for a ``fields`` mask.

    Applied to every page as well as sent, so the cache and the host variables have the same shape
    whether or not an endpoint honours ``fields``.
    """
    if tree is True:
        return value
    if isinstance(value, list):
        return [apply_mask(item, tree) for item in value]
    if not isinstance(value, dict):
        return value
    if '*' in tree:
        return {key: apply_mask(item, tree['*']) for key, item in value.items()}
    return {key: apply_mask(value[key], sub) for key, sub in tree.items() if key in value}


def field_mask(extra_fields=()):
    fields = ','.join(INSTANCE_FIELDS + tuple(extra_fields))
    return 'nextPageToken,unreachables,items/*/instances(%s)' % fields


REGEX_FILTER = re.compile(r'\s(eq|ne)\s')


def api_filter(filters, statuses=()):
    """The API ``filter`` parameter: the expressions ANDed, each in parentheses, and the status
    selection when it can be written in the same syntax (it is applied on the controller as well):
    one status as ``status = S``; several, when no expression is given, as ``status eq "A|B"``."""
    filters = [text.strip() for text in filters or () if text and text.strip()]
    statuses = sorted(statuses)
    if statuses and not any(REGEX_FILTER.search(' %s ' % text) for text in filters):
        if len(statuses) == 1:
            filters.append('status = %s' % statuses[0])
        elif not filters:
            filters.append('status eq "%s"' % '|'.join(statuses))
    if len(filters) == 1:
        return filters[0]
    return ' '.join(text if text.startswith('(') and text.endswith(')') else '(%s)' % text for text in filters)


# Which facts a built-in group holds for its hosts (group variables), by the kind of group. Such a
# fact is the same for every host of the group by construction (the technology of gpudirect_tcpx)
# or nearly always (the NIC layout of a GPUDirect network); a host that differs gets its own host variable,
# which wins. Storing a variable on an inventory host costs Ansible a few microseconds, so on a
# fleet of thousands this keeps a run, and a cached run, short. No fact is held by two groups of
# one host (group variables of sibling groups would otherwise decide by group name).
# Facts whose names are also playbook inputs (gpudirect_project, gpudirect_zone, gpudirect_machine_type)
# stay host variables: an inventory's group_vars/all outranks group variables from a plugin.
GROUP_FACTS = {
    'technology': ('technology',),
    'machine_type': ('machine_type', 'gpu_count', 'gpu_model', 'data_interfaces', 'nccl_interfaces', 'nccl_ctrl_interface'),
    'zone': (),
    'region': ('region',),
    'project': (),
    'network': ('network_prefix', 'management_network', 'management_subnetwork', 'data_networks', 'data_subnetworks',
                'data_nic_types'),
}
# Hosts outside the catalog (technology none) are in no machine-type group; gpudirect_none holds these for
# them (usually no GPU and no data NIC).
NON_GPU_GROUP_FACTS = ('technology', 'gpu_count', 'gpu_model', 'data_interfaces', 'nccl_interfaces', 'nccl_ctrl_interface')


def builtin_groups(prefix, facts):
    """The groups of one host: [(group name, names of the facts it holds, parent group, host is a direct member)].

    Technology, machine type, zone, region, project and GPUDirect network; a machine-type group is a
    child of its technology group and a zone group a child of its region group, so a host is put
    directly into its machine-type (or gpudirect_none), zone, project and network groups. Parents come first.
    """
    groups = []
    technology = safe_group_name(prefix + facts['technology'])
    if facts['technology'] != NON_GPU:
        groups.append((technology, GROUP_FACTS['technology'], None, False))
        groups.append((safe_group_name(prefix + facts['machine_type']), GROUP_FACTS['machine_type'], technology, True))
    else:
        groups.append((technology, NON_GPU_GROUP_FACTS, None, True))
    if facts['zone']:
        region = safe_group_name('%sregion_%s' % (prefix, facts['region']))
        groups.append((region, GROUP_FACTS['region'], None, False))
        groups.append((safe_group_name('%szone_%s' % (prefix, facts['zone'])), GROUP_FACTS['zone'], region, True))
    if facts['project']:
        groups.append((safe_group_name('%sproject_%s' % (prefix, facts['project'])), GROUP_FACTS['project'], None, True))
    if facts['network_prefix']:
        groups.append((safe_group_name('%snetwork_%s' % (prefix, facts['network_prefix'])), GROUP_FACTS['network'], None, True))
    return groups


def fqdn(facts):
    """The VM's internal DNS name (zonal DNS): NAME.ZONE.c.PROJECT.internal."""
    if facts['name'] and facts['zone'] and facts['project']:
        return '%s.%s.c.%s.internal' % (facts['name'], facts['zone'], facts['project'])
    return None


def hostname_for(facts, instance, preferences):
    """The first preference that gives a value; the VM's name when none does."""
    for preference in preferences:
        if preference.startswith('labels.'):
            value = (instance.get('labels') or {}).get(preference[len('labels.'):])
        elif preference == 'hostname':
            value = instance.get('hostname')
        elif preference == 'internal_ip':
            value = facts['management_ip']
        elif preference == 'fqdn':
            value = fqdn(facts)
        else:
            value = facts.get(preference)
        if value:
            return str(value)
    return facts['name']


def label_selector_matches(labels, selector):
    for key, wanted in selector.items():
        if key not in labels:
            return False
        if wanted == '*':
            continue
        values = wanted if isinstance(wanted, list) else [wanted]
        if str(labels[key]) not in [str(value) for value in values]:
            return False
    return True


def safe_group_name(name):
    return re.sub(r'[^A-Za-z0-9_]', '_', name)


def pack_pages(pages):
    """{project: [page, ...]} -> the text kept in the cache: the pages' JSON, zlib-compressed, in base64.

    Whatever the cache plugin (a JSON file, Redis, memcached with its 1 MB items), it stores one
    short string: 5,000 VMs make 10 MB of JSON and 0.4 MB packed, and reading it back is one decode
    of that string, a decompression and one json.loads, faster than the pages as JSON themselves.
    """
    text = json.dumps(pages, separators=(',', ':'))
    return base64.b64encode(zlib.compress(text.encode('utf-8'), 1)).decode('ascii')


def unpack_pages(packed):
    return json.loads(zlib.decompress(base64.b64decode(packed)))


@contextlib.contextmanager
def garbage_collection_paused():
    """Python's cyclic garbage collector runs after every few hundred new containers, and its full
    passes walk every object alive. Decoding thousands of instances and making their hosts creates
    millions of containers, none of them garbage, so the build pauses it (a third of the decoding
    time of a 5,000-VM cache) and restores it as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# ---------------------------------------------------------------------------------------------
# The plugin


def as_data(value):
    """``value`` as Ansible data, never a template: ansible-core 2.19 and later treat every string from an
    inventory plugin as untrusted (not templated) by itself; 2.17 and 2.18 template any string that is
    not marked unsafe, so there each value is wrapped with wrap_var (a label such as ``{{ 6 * 7 }}``
    must stay that text)."""
    if not _MARK_UNSAFE:
        return value
    from ansible.utils.unsafe_proxy import wrap_var  # pylint: disable=import-outside-toplevel
    return wrap_var(value)


_MARK_UNSAFE = tuple(int(part) for part in ansible_version.split('.')[:2]) < (2, 19)


def inventory_data(inventory):
    """The InventoryData that this plugin writes its own facts to.

    ansible-core 2.19 wraps the inventory so that set_variable inspects every value: it copies it and
    tags each string with the source's origin, about 6 microseconds per value, which on 5,000 VMs is
    more than the rest of a cached build. The values set here are plain JSON types that this plugin
    builds and never changes afterwards, and they stay untrusted (never templated) either way, so they
    go to the wrapped data (``__wrapped__``) directly. Where there is no wrapper (ansible-core 2.17,
    2.18) or a later release drops that attribute, this is the inventory itself: the public API.
    compose, groups and keyed_groups always go through self.inventory (Constructable).
    """
    wrapped = getattr(inventory, '__wrapped__', None)
    return inventory if wrapped is None else wrapped


def host_vars_dict(host):
    """The dict an inventory Host keeps its variables in (``Host.vars`` in ansible-core 2.17 to 2.19), or
    None when a release keeps them otherwise: then the caller sets each variable through the public
    InventoryData.set_variable."""
    variables = getattr(host, 'vars', None)
    return variables if isinstance(variables, dict) else None


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):

    NAME = 'aiinfra.gpudirect.gce'

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(('gce.yml', 'gce.yaml'))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        raw = self._read_config_data(path)
        try:
            self._check_option_names(raw)
            config = self._config()
        except InputError as exc:
            raise AnsibleParserError('%s: %s' % (path, exc)) from None

        with garbage_collection_paused():
            self._populate(config, self._pages(path, config, cache))

    def _pages(self, path, config, cache):
        """{project: [page, ...]}: from the cache when it is on and holds this query, else from the API."""
        # Plain values (the options carry Ansible's tags, which a cache plugin would store as well).
        query = json.loads(json.dumps({'format': CACHE_FORMAT, 'projects': config['projects'], 'filter': config['filter'],
                                       'fields': config['fields'], 'endpoint': config['settings']['compute_endpoint']}))
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option('cache') and cache
        update_cache = self.get_option('cache') and not cache
        pages = None
        if use_cache:
            try:
                cached = self._cache[cache_key]
            except KeyError:
                update_cache = True
            else:
                if isinstance(cached, dict) and cached.get('query') == query:
                    pages = unpack_pages(cached['pages'])
                else:
                    update_cache = True
        if pages is None:
            pages, complete = self._fetch(config)
            if update_cache and complete:
                self._cache[cache_key] = {'query': query, 'pages': pack_pages(pages)}
        return pages

    # configuration ---------------------------------------------------------------------------
    def _check_option_names(self, raw):
        """Ansible ignores unknown keys in an inventory plugin's file; a misspelt option must not pass silently."""
        unknown = sorted(set(raw) - set(self._options))
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(self._options), n=1)
            hint = "; did you mean '%s'?" % close[0] if close else '; see ansible-doc -t inventory aiinfra.gpudirect.gce'
            raise InputError("'%s' is not an option of this plugin%s" % (unknown[0], hint))

    def _config(self):
        settings = resolve_settings({
            'project': None,
            'auth_kind': self.get_option('auth_kind'),
            'service_account_file': self.get_option('service_account_file'),
            'service_account_contents': self.get_option('service_account_contents'),
            'access_token': self.get_option('access_token'),
            'scopes': self.get_option('scopes'),
            'compute_endpoint': self.get_option('compute_endpoint'),
        })
        # resolve_settings gives GCP_PROJECT as 'project' when the option is not set.
        projects = [project for project in (self.get_option('projects') or []) if project]
        if not projects and settings['project']:
            projects = [settings['project']]
        if not projects:
            raise InputError('projects: no project to list; set projects (a list of project IDs) or GCP_PROJECT')
        if len(set(projects)) != len(projects):
            raise InputError('projects: %s is listed twice; list each project once' % sorted({p for p in projects if projects.count(p) > 1})[0])
        zones = self.get_option('zones') or []
        regions = self.get_option('regions') or []
        for zone in zones:
            if not ZONE_PATTERN.match(str(zone)):
                hint = ' (a region: put it under regions)' if REGION_PATTERN.match(str(zone)) else ''
                raise InputError("zones: '%s' is not a zone name%s; write zones like us-central1-a" % (zone, hint))
        for region in regions:
            if not REGION_PATTERN.match(str(region)):
                hint = ' (a zone: put it under zones)' if ZONE_PATTERN.match(str(region)) else ''
                raise InputError("regions: '%s' is not a region name%s; write regions like us-central1" % (region, hint))
        statuses = [str(status).upper() for status in self.get_option('status') or []]
        unknown = [status for status in statuses if status not in STATUSES]
        if unknown:
            raise InputError("status: '%s' is not an instance status; use any of %s (or [] for every status)"
                             % (unknown[0], ', '.join(STATUSES)))
        selector = self.get_option('labels') or {}
        for key, value in selector.items():
            if isinstance(value, dict) or (isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value)):
                raise InputError("labels: the value of '%s' must be a string, a list of strings or '*'" % key)
        preferences = list(self.get_option('hostnames') or ['name'])
        for preference in preferences:
            if preference not in HOSTNAME_KINDS and not (preference.startswith('labels.') and len(preference) > len('labels.')):
                raise InputError("hostnames: '%s' is not a hostname source; use %s or labels.KEY"
                                 % (preference, ', '.join(HOSTNAME_KINDS)))
        extra_fields = list(self.get_option('extra_fields') or [])
        for field in extra_fields:
            if not FIELD_PATTERN.match(field):
                raise InputError("extra_fields: '%s' is not an Instance field path; write fields like metadata or serviceAccounts/email"
                                 % field)
        if not PREFIX_PATTERN.match(self.get_option('vars_prefix')):
            raise InputError("vars_prefix: '%s' cannot start a variable name; use letters, digits and _ (not first: a digit)"
                             % self.get_option('vars_prefix'))
        if self.get_option('max_workers') < 1:
            raise InputError('max_workers: %s; give 1 or more' % self.get_option('max_workers'))
        if settings['auth_kind'] not in AUTH_KINDS:
            raise InputError("auth_kind: '%s' is not one of %s; set auth_kind (or GCP_AUTH_KIND) to one of them"
                             % (settings['auth_kind'], ', '.join(AUTH_KINDS)))
        fields = field_mask(extra_fields)
        return {
            'settings': settings, 'projects': projects, 'zones': set(zones), 'regions': set(regions), 'statuses': set(statuses),
            'selector': selector, 'hostnames': preferences, 'filter': api_filter(self.get_option('filters'), statuses), 'fields': fields,
            'mask': parse_mask(fields),
        }

    # listing ---------------------------------------------------------------------------------
    def _fetch(self, config):
        """{project: [page, ...]} for every project; raises AnsibleParserError naming every project that failed."""
        settings = config['settings']
        try:
            transport = Transport(load_credentials(settings), retry=RetryPolicy(deadline=self.get_option('retry_deadline')),
                                  pool_size=max(4, self.get_option('max_workers')), user_agent='aiinfra.gpudirect-inventory')
        except GcpError as exc:
            raise AnsibleParserError('aiinfra.gpudirect.gce: %s' % exc) from None
        # prettyPrint=false: Google APIs indent their JSON unless asked not to; pages are smaller without.
        params = {'maxResults': PAGE_SIZE, 'fields': config['fields'], 'returnPartialSuccess': 'true', 'prettyPrint': 'false'}
        if config['filter']:
            params['filter'] = config['filter']
        mask = config['mask']

        def list_project(project):
            client = ComputeClient(transport, project, settings['compute_endpoint'])
            action = "list the instances of project '%s'" % project
            return [apply_mask(page, mask) for page in client.aggregated_pages('instances', action, params)]

        # One worker pool for every project (never more workers than projects).
        results = map_concurrently(list_project, config['projects'], max_workers=self.get_option('max_workers'))
        pages, errors, complete = {}, [], True
        for project, project_pages, error in results:
            if error is None:
                pages[project] = project_pages
            elif error.status == 403 and not self.get_option('strict_permissions'):
                self.display.warning('aiinfra.gpudirect.gce: project %s is left out (strict_permissions is false): %s' % (project, error))
                complete = False
            else:
                errors.append((project, error))
        if errors:
            raise AnsibleParserError('aiinfra.gpudirect.gce: ' + '; '.join(self._explain(project, error) for project, error in errors))
        for project, project_pages in pages.items():
            unreachable = sorted({scope for page in project_pages for scope in page.get('unreachables') or []
                                  if self._scope_selected(config, scope)})
            if not unreachable:
                continue
            zones = ', '.join(scope.split('/', 1)[-1] for scope in unreachable)
            if not self.get_option('allow_unreachable_zones'):
                raise AnsibleParserError(
                    "aiinfra.gpudirect.gce: project '%s': the API could not reach %s, so its VMs there would be missing; "
                    "retry later, leave the zone out with zones/regions, or set allow_unreachable_zones: true to go on without them"
                    % (project, zones))
            self.display.warning("aiinfra.gpudirect.gce: project '%s': %s unreachable, its VMs there are left out "
                                 "(allow_unreachable_zones is true; not cached)" % (project, zones))
            complete = False
        return pages, complete

    @staticmethod
    def _explain(project, error):
        text = "project '%s': %s" % (project, error)
        if error.status == 403:
            text += ('; grant the caller compute.instances.list on the project (e.g. roles/compute.viewer), remove the project '
                     'from projects, or set strict_permissions: false to leave it out with a warning')
        elif error.status == 404:
            text += '; check the project ID in projects (or GCP_PROJECT)'
        elif error.status == 400:
            text += '; check the filters option (one syntax per request: = / != or eq / ne)'
        return text

    @staticmethod
    def _scope_selected(config, scope):
        kind, _slash, name = scope.partition('/')
        if kind == 'zones':
            region = links.region_of(name)
        elif kind == 'regions':
            region = name
        else:
            return True
        if not config['zones'] and not config['regions']:
            return True
        return name in config['zones'] or region in config['regions']

    # building the inventory ------------------------------------------------------------------
    def _selected(self, config, facts):
        if config['zones'] or config['regions']:
            if facts['zone'] not in config['zones'] and facts['region'] not in config['regions']:
                return False
        if config['statuses'] and facts['status'] not in config['statuses']:
            return False
        return label_selector_matches(facts['labels'], config['selector'])

    def _populate(self, config, pages):
        instances = []
        for project in config['projects']:
            for page in pages.get(project, []):
                for scoped in (page.get('items') or {}).values():
                    instances.extend(scoped.get('instances') or [])
        instances.sort(key=lambda instance: int(instance.get('id') or 0))

        var_prefix = self.get_option('vars_prefix')
        group_prefix = self.get_option('group_prefix')
        address = self.get_option('ansible_host')
        strict = self.get_option('strict')
        compose, groups, keyed_groups = self.get_option('compose'), self.get_option('groups'), self.get_option('keyed_groups')
        inventory = inventory_data(self.inventory)
        seen, group_values, plans = {}, {}, {}
        for instance in instances:
            facts = instance_facts(instance)
            if not self._selected(config, facts):
                continue
            hostname = hostname_for(facts, instance, config['hostnames'])
            if hostname in seen:
                self.display.warning("aiinfra.gpudirect.gce: VMs %s and %s both get the inventory name '%s'; the second is left out. "
                                     "Put fqdn first in hostnames to tell them apart" % (seen[hostname], facts['self_link'], hostname))
                continue
            seen[hostname] = facts['self_link']
            made_here = hostname not in inventory.hosts
            inventory.add_host(hostname)
            # Hosts of one technology, machine type, zone, project and network share their groups: planned once.
            key = (facts['technology'], facts['machine_type'], facts['zone'], facts['project'], facts['network_prefix'])
            plan = plans.get(key)
            if plan is None:
                plan = plans[key] = builtin_groups(group_prefix, facts)
            host_only = dict(facts)
            for group, names, parent, direct in plan:
                held = group_values.get(group)
                if held is None:
                    # The first host of a group (by instance id) gives its values, unless an earlier
                    # source of this plugin made the group: its hosts rely on the values it holds.
                    earlier = inventory.groups[group].get_vars() if group in inventory.groups else {}
                    held = group_values[group] = {}
                    inventory.add_group(group)
                    for name in names:
                        if var_prefix + name in earlier:
                            held[name] = earlier[var_prefix + name]
                        else:
                            held[name] = facts[name]
                            inventory.set_variable(group, var_prefix + name, as_data(facts[name]))
                    if parent:
                        inventory.add_child(parent, group)
                if direct:
                    inventory.add_child(group, hostname)
                for name in names:
                    if held[name] == facts[name]:
                        del host_only[name]
            connection = self._connection_vars(address, facts)
            variables = {var_prefix + name: as_data(value) for name, value in host_only.items()}
            variables.update(as_data(connection))
            host_vars = host_vars_dict(inventory.get_host(hostname)) if made_here else None
            if host_vars is not None:
                # Host.set_variable strips trust from each name, checks it and looks for a mapping to
                # merge into: about 2 microseconds a call, a sixth of a cached 5,000-VM build. A host this
                # source has just made holds none of these names, and the names were checked with
                # vars_prefix, so one update does the same.
                host_vars.update(variables)
            else:
                for name, value in variables.items():
                    inventory.set_variable(hostname, name, value)
            if compose or groups or keyed_groups:
                variables = {var_prefix + name: value for name, value in facts.items()}
                variables.update(connection, instance=instance)
                self._set_composite_vars(compose, variables, hostname, strict=strict)
                self._add_host_to_composed_groups(groups, variables, hostname, strict=strict)
                self._add_host_to_keyed_groups(keyed_groups, variables, hostname, strict=strict)

    @staticmethod
    def _connection_vars(address, facts):
        if address == 'external':
            return {'ansible_host': facts['external_ip'] or facts['management_ip']}
        if address == 'internal':
            return {'ansible_host': facts['management_ip']}
        if address == 'iap':
            return {'ansible_host': facts['name'],
                    'ansible_ssh_common_args': '-o ProxyCommand="gcloud compute start-iap-tunnel %s 22 --listen-on-stdin '
                                               '--project=%s --zone=%s --verbosity=warning"' % (facts['name'], facts['project'], facts['zone'])}
        return {}
