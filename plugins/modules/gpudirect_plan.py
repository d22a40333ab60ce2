#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpudirect_plan
short_description: Check every stage's input of a GPUDirect playbook (Compute Engine or GKE) before anything is created
version_added: 0.1.0
description:
  - The first task of the family playbooks, C(playbooks/gce_cluster.yml) and C(playbooks/gke_cluster.yml). It checks the inputs
    of every stage with the same argument specs and the same checks as the stages' modules, then reads what the stages will need.
  - "Compute Engine: the GPUDirect network, the VMs, the host preparation and the NCCL test (M(aiinfra.gpudirect.gce_gpudirect_network),
    M(aiinfra.gpudirect.gce_gpudirect_instance), M(aiinfra.gpudirect.gpudirect_rxdm) and M(aiinfra.gpudirect.nccl_plugin) through the
    catalog, M(aiinfra.gpudirect.nccl_perf)); it reads the region and its zones, the machine type in the zone, the disk type, the image
    family, the existing networks and subnetworks and the addresses still free in them for the VMs."
  - "GKE: the per-NIC networks (M(aiinfra.gpudirect.gce_gpudirect_network) layout C(gke) or C(gke_rdma)), the cluster
    (M(aiinfra.gpudirect.gke_gpudirect_cluster)), the node pool (M(aiinfra.gpudirect.gke_gpudirect_node_pool)) and the objects the
    P(aiinfra.gpudirect.gke_gpudirect#role) or P(aiinfra.gpudirect.gke_rdma#role) role renders; it reads the location's
    C(getServerConfig) (the versions offered), the cluster (would the cluster module refuse it?), the node pool when the cluster
    exists (does it differ in fields only a new pool fixes?), the machine type in the node zone and a named reservation there."
  - Every problem found is reported at once, each naming the playbook variable (from O(variables)) and the fix. It only reads,
    so a failing plan leaves the project as it was.
author:
  - aiinfra.gpudirect contributors (@aiinfra)
extends_documentation_fragment:
  - aiinfra.gpudirect.gcp
attributes:
  check_mode:
    support: full
    description: Runs the same reads as without check mode; it never changes anything.
  diff_mode:
    support: none
    description: It changes nothing, so there is no diff.
options:
  network:
    description:
      - The options of M(aiinfra.gpudirect.gce_gpudirect_network) as the playbook will pass them; null values are left unset.
      - Unset, and the role P(aiinfra.gpudirect.gce_network#role) in O(roles), they are the role's variables
        (C(gce_network_OPTION) is option C(OPTION)); on GKE, those of P(aiinfra.gpudirect.gke_cluster#role)
        (C(gke_cluster_OPTION)).
    type: dict
  instances:
    description:
      - The options of M(aiinfra.gpudirect.gce_gpudirect_instance) as the playbook will pass them; null values are left unset.
      - Unset, and the role P(aiinfra.gpudirect.gce_instances#role) in O(roles), they are the role's variables
        (C(gce_instances_OPTION) is option C(OPTION); of the options C(names) and C(count), the names when given, as
        the role passes them).
    type: dict
  host:
    description:
      - The variables of the P(aiinfra.gpudirect.cos_host_prep#role) role without their C(cos_host_prep_) prefix, checked with
        the role's argument spec; so the role must be in O(roles), where they come from when this is unset.
    type: dict
  nccl:
    description:
      - The options of M(aiinfra.gpudirect.nccl_perf) as the P(aiinfra.gpudirect.nccl_test#role) role will pass them. In mode
        C(gce) without C(hosts), the VMs of O(instances) are the hosts.
      - Unset, and the role P(aiinfra.gpudirect.nccl_test#role) in O(roles), they are the role's variables
        (C(nccl_test_OPTION) is option C(OPTION)).
    type: dict
  cluster:
    description:
      - The options of M(aiinfra.gpudirect.gke_gpudirect_cluster) as the playbook will pass them; null values are left unset.
      - Unset, and the role P(aiinfra.gpudirect.gke_cluster#role) in O(roles), they are the role's variables
        (C(gke_cluster_OPTION) is option C(OPTION)).
    type: dict
  node_pool:
    description:
      - The options of M(aiinfra.gpudirect.gke_gpudirect_node_pool) as the playbook will pass them; null values are left unset.
        Its node zones and reservation are read only through Compute Engine (one read each).
      - Unset, and the role P(aiinfra.gpudirect.gke_node_pool#role) in O(roles), they are the role's variables
        (C(gke_node_pool_OPTION) is option C(OPTION)).
    type: dict
  roles:
    description:
      - "The collection's roles the playbook's later plays call, each with the variables the playbook gives it, for example
        C([{role: gke_gpudirect, entry_points: [plan, apply, wait], vars: {gke_gpudirect_machine_type: a3-megagpu-8g},
        sources: {gke_gpudirect_machine_type: gpudirect_machine_type}}]). The module's action adds every variable of the task
        whose name starts with the role's name and C(_) (what the user set: extra vars, inventory, play vars), so that each
        is checked here with the role's own argument spec (C(meta/argument_specs.yml), the entry points named): a name the
        role does not have, a value of the wrong type or outside its choices, and a value that differs from the one the
        playbook gives the role (it would win over the playbook's and act on something else) are problems."
      - The objects of the Kubernetes roles (P(aiinfra.gpudirect.gke_gpudirect#role), P(aiinfra.gpudirect.gke_rdma#role)) are
        rendered as the role's first task renders them, so a value the role would refuse is reported here.
      - "The variables of the roles whose tasks call a stage's module are that module's options, checked as O(network),
        O(instances), O(host), O(nccl), O(cluster) and O(node_pool) (when those are unset), for the entry points named:
        role variable C(ROLE_OPTION) is option C(OPTION) (or an alias of it, such as C(prefix) for the option
        C(network_prefix) of O(network)); null and an empty text are unset. P(aiinfra.gpudirect.gce_network#role) is
        O(network), P(aiinfra.gpudirect.gce_instances#role) O(instances), P(aiinfra.gpudirect.cos_host_prep#role) O(host),
        P(aiinfra.gpudirect.nccl_test#role) O(nccl); P(aiinfra.gpudirect.gke_cluster#role) is O(network) (entry point
        C(networks), when C(gke_cluster_network_prefix) is set) and O(cluster) (entry point C(cluster)), both with C(main);
        P(aiinfra.gpudirect.gke_node_pool#role) is O(node_pool). Messages name the role variable, or the playbook variable
        in O(roles[].sources) when the user did not set the role variable."

    type: list
    elements: dict
    default: []
    suboptions:
      role:
        description: The role's name in this collection, such as C(gke_rdma).
        type: str
        required: true
      entry_points:
        description: The role's entry points the playbook calls; their options are checked.
        type: list
        elements: str
        default: [main]
      vars:
        description: The role variables the playbook itself gives the role (its C(include_role) vars).
        type: dict
        default: {}
      sources:
        description: For variables of O(roles[].vars), the playbook variable each is derived from, named in messages.
        type: dict
        default: {}
      resolved:
        description:
          - Set by the module's action from the task's variables and the role's argument spec; not given in playbooks.
        type: dict
  unread_extra_vars:
    description:
      - "What to do with an extra variable (C(-e), an AWX job's extra vars) that has one of the collection's prefixes
        (C(gpudirect_), a role's name and C(_)) and that neither the playbook nor a role it runs reads, such as
        C(gpudirect_prefix) (the old name of C(gpudirect_network_prefix)) or C(nccl_test_family): C(refuse) it as a
        problem, C(warn), or C(ignore) it. The playbook's variables are those its file names."
      - A boolean is accepted too, as the playbooks pass C(gpudirect_strict_vars) (true means C(refuse), false
        C(warn)); any other value is an input problem, named as the variable O(variables) gives for
        C(connection.unread_extra_vars).
    type: raw
    default: ignore
  kube_credentials:
    description:
      - "How the Kubernetes stage's tasks will reach the cluster (the GKE playbooks' C(gpudirect_kube_credentials), the
        P(aiinfra.gpudirect.gke_kube_connection#lookup) lookup's O(aiinfra.gpudirect.gke_kube_connection#lookup:credentials)):
        C(auto), C(google_auth) or C(gke_gcloud_auth_plugin). Another value is a problem, and so is C(google_auth) (or
        C(auto) where C(gke-gcloud-auth-plugin) is not on E(PATH)) with O(auth_kind=none), which gives no token, when
        O(roles) holds a Kubernetes role."
    type: str
    default: auto
  undoes:
    description:
      - For a teardown, the playbook beside it whose run it undoes (C(gke_cluster.yml)). A teardown takes the same extra vars
        as that run, so with O(unread_extra_vars) the variables that playbook and the roles it names read are not reported.
    type: str
  unread:
    description:
      - Set by the module's action from the run's extra vars (with O(unread_extra_vars) other than C(ignore)); not given
        in playbooks.
    type: list
    elements: str
  variables:
    description:
      - "For each stage (C(network), C(instances), C(host), C(nccl), C(cluster), C(node_pool), C(connection)), the
        playbook variable that sets each option,
        for example C({instances: {count: gpudirect_node_count}}). Messages name these variables; an option without one is
        named as the stage's option. The connection's are C(gpudirect_project) and C(gpudirect_strict_vars) unless given."
    type: dict
    default: {}
"""

EXAMPLES = r"""
# As playbooks/gce_cluster.yml does: each stage's options are the variables of the role that runs it.
- name: Check every stage's input before anything is created
  aiinfra.gpudirect.gpudirect_plan:
    unread_extra_vars: true
    roles:
      - role: gce_network
        vars: {gce_network_prefix: a3high, gce_network_machine_type: a3-highgpu-8g, gce_network_region: us-central1}
        sources: {gce_network_prefix: gpudirect_network_prefix}
      - role: gce_instances
        vars: {gce_instances_network_prefix: a3high, gce_instances_machine_type: a3-highgpu-8g, gce_instances_zone: us-central1-a}
        sources: {gce_instances_zone: gpudirect_zone}

- name: Check a stage given as its module's options
  aiinfra.gpudirect.gpudirect_plan:
    network:
      network_prefix: a3high
      machine_type: a3-highgpu-8g
      region: us-central1
      ssh_source_ranges: [203.0.113.0/24]
    instances:
      network_prefix: a3high
      machine_type: a3-highgpu-8g
      zone: us-central1-a
      count: 2
    variables:
      instances: {count: gpudirect_node_count, zone: gpudirect_zone}

- name: Check the GKE stages before the networks, the cluster and the node pool are created
  aiinfra.gpudirect.gpudirect_plan:
    network: {network_prefix: a3mega, machine_type: a3-megagpu-8g, region: us-central1, layout: gke}
    cluster: {cluster: a3mega, location: us-central1-a, machine_type: a3-megagpu-8g}
    node_pool: {cluster: a3mega, location: us-central1-a, name: a3mega-gpu, machine_type: a3-megagpu-8g, node_count: 2,
                node_locations: [us-central1-a], network_prefix: a3mega, reservation: my-reservation}
    roles:
      - role: gke_gpudirect
        entry_points: [plan, apply, wait]
        vars: {gke_gpudirect_machine_type: a3-megagpu-8g, gke_gpudirect_network_prefix: a3mega, gke_gpudirect_node_pool: a3mega-gpu}
        sources: {gke_gpudirect_machine_type: gpudirect_machine_type, gke_gpudirect_node_pool: gpudirect_node_pool}
    variables:
      cluster: {cluster: gpudirect_cluster, version: gpudirect_gke_version}
      node_pool: {node_count: gpudirect_node_count, reservation: gpudirect_reservation}
"""

RETURN = r"""
problems:
  description: Every problem found, each naming the variable and the fix; empty when the plan holds.
  returned: always
  type: list
  elements: str
  sample: ["gpudirect_node_count: 0 VMs; give 1 or more (or list the names)"]
plan:
  description: What the stages will make, when the inputs hold.
  returned: success
  type: dict
  contains:
    networks:
      description: Names of the GPUDirect network's VPC networks.
      type: list
      elements: str
    subnets:
      description: Each subnetwork and its range.
      type: dict
    vms:
      description: Names of the VMs.
      type: list
      elements: str
    zone:
      description: Zone of the VMs.
      type: str
    cluster:
      description: Name of the GKE cluster (GKE playbooks).
      type: str
    node_pool:
      description: Name of the GKE node pool (GKE playbooks).
      type: str
"""

import re
import shutil

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import (ArgumentTypeError, ArgumentValueError, ElementError, MutuallyExclusiveError, NoLogError,
                                         RequiredError, RequiredOneOfError, SubParameterTypeError, UnsupportedError)

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute as compute_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import gke as gke_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import inputs as host_inputs
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import instance as gce_instance
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import lookups
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import network as gce_network
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import FIELD, InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.compute import reservation_path
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.container import cluster_path, node_pool_path, server_config_path
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.module import GpuDirectModule
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import resolve_settings
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import cluster as gke_cluster
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import common as gke_common
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import node_pool as gke_node_pool
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import render as k8s_render
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.nccl import command as nccl_command

ARGUMENT_SPEC = {
    'network': {'type': 'dict'},
    'instances': {'type': 'dict'},
    'host': {'type': 'dict'},
    'nccl': {'type': 'dict'},
    'cluster': {'type': 'dict'},
    'node_pool': {'type': 'dict'},
    'roles': {'type': 'list', 'elements': 'dict', 'default': [], 'options': {
        'role': {'type': 'str', 'required': True},
        'entry_points': {'type': 'list', 'elements': 'str', 'default': ['main']},
        'vars': {'type': 'dict', 'default': {}},
        'sources': {'type': 'dict', 'default': {}},
        'resolved': {'type': 'dict'},
    }},
    'variables': {'type': 'dict', 'default': {}},
    'unread_extra_vars': {'type': 'raw', 'default': 'ignore'},
    'unread': {'type': 'list', 'elements': 'str'},
    'undoes': {'type': 'str'},
    'kube_credentials': {'type': 'str', 'default': 'auto'},
}

# Each stage: the module (or role) whose options it takes, its argument spec and the spec's rules.
STAGES = {
    'network': ('gce_gpudirect_network', gce_network.ARGUMENT_SPEC, {}),
    'instances': ('gce_gpudirect_instance', gce_instance.ARGUMENT_SPEC,
                  {'mutually_exclusive': gce_instance.MUTUALLY_EXCLUSIVE, 'required_one_of': gce_instance.REQUIRED_ONE_OF}),
    'host': ('cos_host_prep', None, {}),   # the role's own argument spec, which the module's action reads
    'nccl': ('nccl_perf', nccl_command.argument_spec(), {}),
    'cluster': ('gke_gpudirect_cluster', gke_cluster.ARGUMENT_SPEC, {}),
    'node_pool': ('gke_gpudirect_node_pool', gke_node_pool.ARGUMENT_SPEC, {}),
}
# The playbooks' own names of the connection's options, which messages name.
PLAYBOOK_VARIABLES = {'connection': {'project': 'gpudirect_project', 'unread_extra_vars': 'gpudirect_strict_vars',
                                     'kube_credentials': 'gpudirect_kube_credentials'}}
# The roles whose tasks call a stage's module: {role: {entry point: the stages it runs}}, each stage checked from the
# role's variables (role_stages). gke_cluster's entry point networks starts the per-NIC networks, cluster makes the
# cluster and main does both; its network stage runs only with a network prefix (its task's `when`).
ROLE_STAGES = {
    'gce_network': {'main': ('network',)},
    'gce_instances': {'main': ('instances',)},
    'cos_host_prep': {'main': ('host',)},
    'nccl_test': {'main': ('nccl',), 'diagnose': ('nccl',)},
    'gke_cluster': {'main': ('network', 'cluster'), 'networks': ('network',), 'cluster': ('cluster',), 'read': ('cluster',)},
    'gke_node_pool': {'main': ('node_pool',)},
}
# Options an entry point's tasks give the stage's module whatever the variables say: the diagnosis runs mode gce.
ENTRY_POINT_OPTIONS = {('nccl_test', 'diagnose'): {'mode': 'gce'}}
# A stage whose role's task runs only when this option is set.
STAGE_WHEN = {('gke_cluster', 'network'): 'network_prefix'}
# The Kubernetes side of the GKE playbooks: the variables of the gke_gpudirect or gke_rdma role (without the prefix)
# that decide what the role renders; the role's first task renders the same objects with the same functions.
KUBERNETES_ROLES = ('gke_gpudirect', 'gke_rdma')
HANDLED_ERRORS = (ArgumentTypeError, ArgumentValueError, ElementError, MutuallyExclusiveError, NoLogError, RequiredError,
                  RequiredOneOfError, UnsupportedError)
TYPE_WORDS = {'int': 'a whole number', 'float': 'a number', 'bool': 'true or false', 'list': 'a list', 'dict': 'a mapping',
              'str': 'a string', 'path': 'a path'}


class Problems:
    """The problems found, each rewritten to name the playbook variable instead of the module option."""

    def __init__(self, variables):
        self.variables = variables or {}
        self.specs = {stage: spec for stage, (_owner, spec, _rules) in STAGES.items()}
        self.items = []

    def variable(self, stage, option):
        named = (self.variables.get(stage) or {}).get(option)
        return named or ('%s (option of %s)' % (option, STAGES[stage][0]) if stage in STAGES else option)

    def add(self, stage, message):
        """message starts with 'option: ' (or 'a/b: ') as the plans write it; other 'option: value' in it are renamed too."""
        names = self.variables.get(stage) or {}
        match = FIELD.match(message)
        head, rest = '', message
        fields = match.group(1).split('/') if match else []
        known = self.specs.get(stage) or names
        if fields and all(field.split('.')[0] in known or field.split('.')[0] in names for field in fields):
            # thresholds.all_gather -> nccl_test_thresholds.all_gather
            head = ' / '.join(self.variable(stage, field.split('.')[0]) + field[len(field.split('.')[0]):] for field in fields) + ': '
            rest = message[match.end():]
        if names:
            pattern = r'\b(%s)(?=: )' % '|'.join(re.escape(option) for option in sorted(names, key=len, reverse=True))
            rest = re.sub(pattern, lambda found: names[found.group(1)], rest)
        if head + rest not in self.items:   # two stages with one option from one variable say it once
            self.items.append(head + rest)

    def add_validation(self, stage, problem):
        """One problem of validation_problems, the option or options first."""
        options, text = problem
        self.add(stage, '%s: %s' % ('/'.join(options), text) if options else text)


def validation_problems(spec, values, rules=None, owner=None):
    """([(options, what is wrong and the fix)], the validated parameters) of Ansible's argument spec validation of
    ``values``, one problem per typed error (ansible.module_utils.errors). The errors carry only a message, so the option
    of a type or choice error is found by validating each option alone; the groups of a rule error come from ``rules``."""
    rules = rules or {}
    result = ArgumentSpecValidator(spec, **rules).validate(values)
    kinds = {type(error) for error in result.errors.errors}
    found = []
    if kinds & {ArgumentTypeError, ArgumentValueError, ElementError, UnsupportedError}:
        for option in [name for name in spec if name in values]:
            alone = ArgumentSpecValidator({option: spec[option]}).validate({option: values[option]}).errors.errors
            wanted = spec[option].get('type', 'str')
            if spec[option].get('options') and alone:   # a sub-option's error, which Ansible's message names
                found.append(([option], '; '.join(error.msg for error in alone)))
            elif any(isinstance(error, ArgumentTypeError) for error in alone):
                words = TYPE_WORDS.get(wanted, wanted)
                found.append(([option], '%r is not %s; write it as %s' % (values[option], words, words)))
            elif any(isinstance(error, (ArgumentValueError, ElementError)) for error in alone):
                allowed = ', '.join(str(choice) for choice in spec[option].get('choices') or [])
                if wanted == 'list':
                    outside = ', '.join(str(item) for item in values[option] if item not in spec[option].get('choices'))
                    found.append(([option], '%s is not among %s; give only these' % (outside, allowed)))
                else:
                    found.append(([option], '%s is not one of %s; choose one of them' % (values[option], allowed)))
    for group in rules.get('mutually_exclusive') or [] if MutuallyExclusiveError in kinds else []:
        given = [option for option in group if option in values]
        if len(given) > 1:
            found.append((given, 'give only one of these'))
    if RequiredError in kinds:
        missing = [name for name, option in spec.items() if option.get('required') and values.get(name) is None]
        found += [([name], 'required; give it') for name in missing]
    if RequiredOneOfError in kinds:
        found += [(list(group), 'give one of these') for group in rules.get('required_one_of') or []
                  if not any(option in values for option in group)]
    if UnsupportedError in kinds:
        known = set(spec) | {alias for option in spec.values() for alias in option.get('aliases') or []}
        found += [([name], '%s takes no such option (it takes %s)' % (owner, ', '.join(sorted(spec)))) for name in values if name not in known]
    # Any other error as Ansible words it; a sub-option's type error repeats its option's, and no_log's says nothing.
    found += [([], error.msg) for error in result.errors.errors
              if not isinstance(error, HANDLED_ERRORS) and not (isinstance(error, SubParameterTypeError) and ArgumentTypeError in kinds)]
    return found, result.validated_parameters


def validate_stages(params, problems):
    """{stage: validated options} of the stages that pass their argument spec; the others add problems."""
    validated = {}
    for stage, (owner, spec, rules) in STAGES.items():
        spec = spec or problems.specs.get(stage)
        if params[stage] is None:
            continue
        if spec is None:
            problems.add('connection', '%s: its options are the variables of role %s; give that role in roles' % (stage, owner))
            continue
        # null is unset, in a sub-option's mapping too (one validated already, as the role's variables are, holds them all)
        values = {key: unset_removed(value) if (spec.get(key) or {}).get('options') else value
                  for key, value in params[stage].items() if value is not None}
        found, parameters = validation_problems(spec, values, rules, owner)
        for problem in found:
            problems.add_validation(stage, problem)
        if not found:
            # the stages' checks see a mapping as its module or role does: the keys given, not the others as null
            validated[stage] = dict(parameters,
                                    **{key: value for key, value in values.items() if (spec.get(key) or {}).get('options')})
    return validated


def unset_removed(value):
    """A mapping without its null values (anything else as it is)."""
    return {key: item for key, item in value.items() if item is not None} if isinstance(value, dict) else value


def role_stages(roles, problems):
    """{stage: options} of the roles of ROLE_STAGES among ``roles`` ({role: (entry, its variables as the role will see
    them)}), for the entry points the playbook calls: role variable ROLE_OPTION is the stage module's option OPTION (or an
    alias of one), as the role's task passes it (tests/integration/test_playbook_inputs.py holds the roles' tasks to this).
    Messages name the variable, or the playbook variable it came from when the user did not set it."""
    stages = {}
    for role, (entry, variables) in roles.items():
        points = ROLE_STAGES.get(role) or {}
        for stage in dict.fromkeys(stage for point in entry['entry_points'] for stage in points.get(point, ())):
            options = stage_options(role, stage, entry, variables, problems)
            for point in entry['entry_points']:
                options.update(ENTRY_POINT_OPTIONS.get((role, point), {}))
            if options.get(STAGE_WHEN.get((role, stage)), True) not in (None, ''):
                stages[stage] = options
    return stages


def stage_options(role, stage, entry, variables, problems):
    """The options of ``stage`` from the variables of ``role`` (see role_stages)."""
    prefix = role + '_'
    _owner, spec, rules = STAGES[stage]
    module_spec = spec is not None
    if spec is None:   # the host stage: the role's own variables
        spec = problems.specs[stage] = {name[len(prefix):]: option for name, option in entry['resolved']['argument_spec'].items()}
    names = {alias: option for option, value in spec.items() for alias in [option] + list(value.get('aliases') or [])}
    options, shown = {}, {}
    for name, value in variables.items():
        option = names.get(name[len(prefix):])
        if option is None:
            continue
        source = entry['sources'].get(name)
        shown[option] = source if source and name not in entry['resolved']['given'] else name
        # null is unset, and so is '' (ansible-core 2.17 and 2.18 render a template's null as ''; the roles pass an
        # empty optional text as omit), but for a required text, where it is the problem to name
        unset = value == '' and (spec[option].get('type', 'str') != 'str' or (module_spec and not spec[option].get('required')))
        if value is not None and not unset:
            options[option] = value
    # Of options the module takes one at a time, the role's task passes the first one set (names, else count).
    for group in rules.get('mutually_exclusive') or []:
        first = next((option for option in group if options.get(option) not in (None, [], {}, '')), None)
        for option in group:
            if option != first:
                options.pop(option, None)
    problems.variables[stage] = dict(problems.variables.get(stage) or {}, **shown)
    return options


def plan_stages(stages, project, problems):
    """The stages' own plans, built by the functions their modules call: (network plan, (names, spec)) or None each."""
    network_plan = instances = None
    if 'network' in stages:
        try:
            network_plan = gce_network.plan_from_params(stages['network'], project)
        except InputError as exc:
            problems.add('network', str(exc))
    if 'instances' in stages:
        try:
            instances = gce_instance.build_from_params(stages['instances'], project)
        except InputError as exc:
            problems.add('instances', str(exc))
    if 'host' in stages:
        try:
            host_inputs.check_host_inputs(stages['host'])
        except ValueError as exc:
            problems.add('host', str(exc))
        not_cos = host_image_problem(stages.get('instances') or {})
        if not_cos:
            problems.add('instances', not_cos)
    if 'nccl' in stages:
        nccl = dict(stages['nccl'])
        if nccl['mode'] == 'gce' and not nccl['hosts'] and instances:
            nccl['hosts'] = instances[0]
        try:
            nccl_command.check_inputs(nccl)
        except ValueError as exc:
            if not (str(exc).startswith('hosts:') and not stages['nccl']['hosts']):
                problems.add('nccl', str(exc))
            elif instances:
                problems.add('instances', 'count: the NCCL test runs between VMs and %d is planned; give 2 or more, or skip the NCCL '
                                          'stage (--skip-tags nccl)' % len(instances[0]))
            # else: the VM stage's own problem is already reported
    return network_plan, instances


def host_image_problem(instances):
    """Why the VMs' boot image cannot take the host stage, or None: cos_host_prep prepares Container-Optimized OS (Google's Compute Engine GPUDirect guide:
    cos-cloud's LTS families), so another image would be created with the VMs and then fail the host stage."""
    image, project = instances.get('image'), instances.get('image_project')
    if project and project != compute_catalog.COS_IMAGE_PROJECT:
        field, value = 'image_project', project
    elif image and 'projects/%s/' % compute_catalog.COS_IMAGE_PROJECT not in image:
        field, value = 'image', image
    else:
        return None
    return ('%s: %s is not Container-Optimized OS, which the host stage (cos_host_prep) prepares; leave it unset for %s/%s, '
            'or skip the host stage (--skip-tags host)' % (field, value, compute_catalog.COS_IMAGE_PROJECT, compute_catalog.COS_IMAGE_FAMILY))


def validate_roles(roles, problems):
    """{role: (its roles entry, its variables as the role will see them, defaults filled)} and the roles whose variables
    hold; the others add problems, each naming the variable (the action's findings first: unknown names, contradictions)."""
    checked, valid = {}, set()
    for entry in roles:
        role, resolved = entry['role'], entry['resolved']
        if resolved is None:
            problems.add('connection', 'roles: the role %s was not resolved; run gpudirect_plan as the action '
                                       'aiinfra.gpudirect.gpudirect_plan' % role)
            continue
        spec = resolved['argument_spec']
        for text in resolved['problems']:
            problems.add(role, text)
        # A value the playbook derived is named with the variable it came from (cos_host_prep_pull for nccl_test_pull).
        problems.variables[role] = {name: '%s (from %s)' % (name, entry['sources'][name])
                                    if name in entry['sources'] and name not in resolved['given'] else name for name in spec}
        # The playbook gives one set of variables to each entry point it calls (the same anchor); those of the role's
        # other entry points are not this call's.
        values = dict({name: value for name, value in entry['vars'].items() if name in spec}, **resolved['given'])
        found, parameters = validation_problems(spec, values, owner='role %s' % role)
        for problem in found:
            problems.add_validation(role, problem)
        checked[role] = (entry, parameters)
        # The action's findings (an unknown name, a contradiction) left the value out of `given`: what remains holds.
        if not found:
            valid.add(role)
    return checked, valid


def plan_kubernetes(role, variables, problems):
    """Render the role's objects as its first task does (plugins/filter/gke.py calls the same functions) from its
    validated variables."""
    prefix = role + '_'
    values = {name[len(prefix):]: value for name, value in variables.items()}
    # Messages name the option (networks); the user set the variable (gke_rdma_networks).
    problems.variables['kubernetes'] = {option: prefix + option for option in values}
    try:
        if role == 'gke_gpudirect':
            technology = gke_catalog.gke_technology(values.get('machine_type'), values.get('technology') or None)
            k8s_render.check_namespace(values.get('nccl_namespace'), field='nccl_namespace')
            k8s_render.gke_network_objects(technology, network_prefix=values.get('network_prefix') or None,
                                           networks=values.get('networks') or None)
            k8s_render.gke_daemonsets(technology, node_pool=values.get('node_pool') or None, plugin_image=values.get('plugin_image') or None)
            k8s_render.gpu_node_selector(technology, values.get('node_pool') or None)
            return
        networking, machine_type = values.get('networking') or 'dranet', values.get('machine_type') or 'a3-ultragpu-8g'
        if networking == 'compute_class':
            if values.get('compute_class_definition'):
                k8s_render.check_rdma_compute_class(values['compute_class_definition'])
            else:
                k8s_render.rdma_compute_class(values.get('compute_class') or 'rdma-class',
                                              values.get('compute_class_priorities') or [{'machine_type': machine_type}])
        if networking == 'multi_network':
            k8s_render.rdma_network_objects(network_prefix=values.get('network_prefix') or None, networks=values.get('networks') or None,
                                            machine_type=machine_type)
            if values.get('installer_daemonset'):
                k8s_render.rdma_installer_daemonset(node_pool=values.get('node_pool') or None, machine_type=machine_type)
        else:
            k8s_render.rdma_claim_template(values.get('namespace') or None)
        k8s_render.gpu_node_selector('RDMA', values.get('node_pool') or None, machine_type, dranet=networking == 'dranet')
    except (ValueError, TypeError) as exc:
        problems.add('kubernetes', str(exc))


def planned_cluster(plan):
    """The cluster gke_gpudirect_cluster will create, as the Container API would show it, for the node pool's checks."""
    cluster = dict(plan.body, currentMasterVersion=plan.version)
    if plan.mode == gke_cluster.AUTOPILOT:
        cluster['autopilot'] = {'enabled': True}
    return cluster


def read_gke(clients, stages, problems):
    """The GKE stages' plans and reads: getServerConfig of the cluster's location, the cluster, the pool when the cluster
    exists, the machine type in the node zone (which also shows the zone exists) and a named reservation there."""
    container, compute = clients.container, clients.compute
    cluster_params, pool_params = stages.get('cluster'), stages.get('node_pool')
    cluster_plan = current_cluster = None
    refusals = []
    if cluster_params is not None:
        location = cluster_params['location']
        try:
            gke_cluster.check_location(location)
            server_config = container.get(server_config_path(location), action='read the GKE versions of %s' % location)
            if server_config is None:
                raise InputError("location: '%s' is not a location of Kubernetes Engine; give a zone or region such as us-central1-a"
                                 % location)
            cluster_plan = gke_cluster.plan_from_params(cluster_params, server_config)
        except InputError as exc:
            problems.add('cluster', str(exc))
        except GcpError as exc:
            if exc.status not in (400, 404):
                raise
            problems.add('cluster', 'location: %s is not a Kubernetes Engine location (%s); give a zone or region such as us-central1-a'
                         % (location, exc.message.rstrip('.')))
        if cluster_plan is not None:
            path = cluster_path(location, cluster_params['cluster'])
            current_cluster = container.get(path, action='read cluster %s' % cluster_params['cluster'])
            if current_cluster is not None:
                _updates, refusals = gke_cluster.changes(cluster_plan, current_cluster)
                if refusals:
                    problems.add('cluster', 'cluster: %s exists in %s but cannot carry GPUDirect-%s node pools, and this cannot be '
                                            'changed in place: %s; choose another cluster name or delete that cluster'
                                 % (cluster_params['cluster'], location, cluster_plan.family.technology, '; '.join(refusals)))
    if pool_params is None:
        return
    # A cluster refused above is to be made anew: the pool is checked against the cluster the plan would make.
    pool_cluster = current_cluster if current_cluster is not None and not refusals else None
    try:
        pool_plan = gke_node_pool.plan_from_params(
            pool_params, pool_cluster or (planned_cluster(cluster_plan) if cluster_plan else None), cluster_planned=True)
    except InputError as exc:
        problems.add('node_pool', str(exc))
        return
    zones = pool_params['node_locations'] or ([pool_params['location']] if gke_cluster.ZONE_PATTERN.match(pool_params['location']) else [])
    for zone in zones:
        try:
            lookups.check_machine_type(compute, zone, pool_plan.family.machine_type, field='node_locations')
        except InputError as exc:
            problems.add('node_pool', str(exc))
            return
    affinity = pool_plan.body['config']['reservationAffinity']
    if affinity.get('values') and zones:
        check_pool_reservation(compute, pool_params, pool_plan, zones, problems)
    current_pool = None
    if current_cluster is not None:
        path = node_pool_path(pool_params['location'], pool_params['cluster'], pool_params['name'])
        # As the node pool module reads it: through v1beta1 when a v1beta1 field is planned (host_maintenance_interval).
        pool_api = clients.container_beta if pool_params.get('host_maintenance_interval') else container
        current_pool = pool_api.get(path, action='read node pool %s' % pool_params['name'])
        if current_pool is not None and not pool_params['recreate']:
            _calls, immutable = gke_node_pool.changes(pool_plan, current_pool)
            if immutable:
                problems.add('node_pool', 'name: node pool %s exists and differs in fields the API cannot change: %s; give another '
                                          'pool name, delete the pool, or set recreate: true on the node pool task'
                             % (pool_params['name'], gke_node_pool.describe_immutable(immutable)))
    if zones and not affinity.get('values'):
        check_pool_gpu_quota(compute, pool_params, pool_plan, zones, current_pool, problems)


def check_pool_gpu_quota(compute, params, plan, zones, current_pool, problems):
    """The GPUs the pool adds fit the project's regional GPU quota (regions.get: limit and usage of the family's metric).

    GKE nodes are Compute Engine VMs and count against it; GKE does not refuse the pool for it but its nodes never
    come (the operation ends with the quota error, after the cluster and the networks were made). Not judged: a pool
    on a specific reservation (the reservation holds the quota), flex-start (queued), a pool whose size is not the
    collection's, a region that lists no limit for the metric."""
    family = plan.family
    if params['provisioning'] == 'flex_start' or not family.gpu_quota_metric or (current_pool is not None and not plan.size_managed):
        return
    now = 0
    if current_pool is not None:   # its size as the node pool module reads it (GKE leaves initialNodeCount as created)
        now = gke_node_pool.current_size(compute, current_pool)
        now = int(current_pool.get('initialNodeCount') or 0) if now is None else now
    gpus_per_node_count = len(zones) * family.gpu_count   # node_count is per zone
    added = (plan.body['initialNodeCount'] - now) * gpus_per_node_count
    if added <= 0:   # same size or smaller: no quota needed, no read
        return
    metric = lookups.gpu_quota_metric(family, compute_catalog.SPOT if params['provisioning'] == 'spot' else None)
    region = links.region_of(zones[0])
    left = lookups.gpu_quota_left(compute, region, metric)
    if left is not None and added > left[0]:
        problems.add('node_pool', 'node_count: %d nodes per zone of %s in %s need %d more GPUs of quota %s in %s, and the project has %d '
                                  'of its limit of %d left there; request more quota (https://cloud.google.com/compute/resource-usage#gpu_quota), '
                                  'use a reservation, or give at most %d'
                     % (plan.body['initialNodeCount'], family.machine_type, ', '.join(zones), added, metric, region, left[0],
                        left[1], left[0] // gpus_per_node_count + now))


def check_pool_reservation(compute, params, plan, zones, problems):
    """The reservation the pool names exists in one of its zones (GKE refuses the pool otherwise) and reserves its machine type."""
    project = params['reservation_project']
    found = None
    for zone in zones:
        found = compute.get(reservation_path(zone, params['reservation'], project),
                            "get reservation '%s'" % params['reservation'])
        if found is not None:
            break
    if found is None:
        problems.add('node_pool', "reservation: '%s' does not exist in %s%s; create it there or name an existing one"
                     % (params['reservation'], ', '.join(zones), ' (project %s)' % project if project else ''))
        return
    reserved = links.resource_name((found.get('specificReservation') or {}).get('instanceProperties', {}).get('machineType', ''))
    if reserved and reserved != plan.family.machine_type:
        problems.add('node_pool', "reservation: '%s' reserves %s, not %s; name a reservation of %s VMs"
                     % (params['reservation'], reserved, plan.family.machine_type, plan.family.machine_type))


def read_stages(compute, stages, network_plan, instances, problems):
    """What must exist, read before anything is written."""
    if 'node_pool' in stages:   # the GKE stages read the node zone's machine type instead
        return
    if network_plan is not None and instances is None:   # with VMs, check_references reads the region's zones once
        try:
            lookups.zones_of_region(compute, network_plan.region, field='region')
        except InputError as exc:
            problems.add('network', str(exc))
            return
    if instances is None:
        return
    names, spec = instances
    params = stages['instances']
    planned = {chain.subnet.name: chain.subnet.body['ipCidrRange'] for chain in network_plan.chains} if network_plan else {}
    try:
        networks = lookups.check_references(compute, spec, names, params['zone'], params['fallback_zones'], planned_subnets=planned)
    except InputError as exc:
        problems.add('instances', str(exc))
        return
    planned_networks = set(network_plan.network_names) if network_plan else set()
    missing = sorted({links.resource_name(nic['network']) for nic in spec.template['networkInterfaces']} - networks - planned_networks)
    if missing:
        problems.add('instances', 'network_prefix: network %s does not exist and no stage of this run creates it; create the GPUDirect '
                                  'network first or give the prefix of an existing one' % ', '.join(missing))
    if network_plan is not None and links.region_of(params['zone']) != network_plan.region:
        problems.add('instances', 'zone: %s is not in %s, the region of the GPUDirect network; give a zone of %s'
                     % (params['zone'], network_plan.region, network_plan.region))


def check_connection(module, params, problems):
    """The project ID, and the extra vars nothing reads (refused or warned about)."""
    project = params['project']
    if project and links.project_id_problem(project):
        problems.add('connection', links.project_id_problem(project))
    unread_extra_vars = unread_extra_vars_choice(params['unread_extra_vars'], problems)
    if any(entry['role'] in KUBERNETES_ROLES for entry in params['roles']):
        check_kube_credentials(params, problems)
    for text in params['unread'] or []:
        if unread_extra_vars == 'refuse':
            problems.add('connection', text)
        else:
            module.warn(text)


def check_kube_credentials(params, problems):
    """The Kubernetes stage's way to the cluster: one of gke_common.KUBE_CREDENTIALS, and a token to hand it when it is
    google_auth."""
    try:
        method = gke_common.kube_credentials(params['kube_credentials'], 'kubeconfig', shutil.which)
    except InputError as exc:
        problems.add('connection', str(exc).replace('credentials:', 'kube_credentials:', 1))
        return
    if method == gke_common.GOOGLE_AUTH and resolve_settings(params)['auth_kind'] == 'none':
        problems.add('connection', 'kube_credentials: %s hands kubernetes.core a token from google-auth, and auth_kind none (GCP_AUTH_KIND) '
                                   'gives none; set auth_kind (GCP_AUTH_KIND) to application, serviceaccount, accesstoken or '
                                   'machineaccount, or use gke_gcloud_auth_plugin with %s on PATH'
                     % (params['kube_credentials'], gke_common.AUTH_PLUGIN))


def unread_extra_vars_choice(value, problems):
    """refuse, warn or ignore, from the option or from a boolean (true: refuse, false: warn); anything else is a
    problem (``-e gpudirect_strict_vars=maybe`` would otherwise read as false), and refuse is what is done."""
    if value in ('refuse', 'warn', 'ignore'):
        return value
    try:
        return 'refuse' if boolean(value, strict=True) else 'warn'
    except TypeError:
        problems.add('connection', 'unread_extra_vars: %r is not true or false; give true (an extra var that nothing reads '
                                   'is refused) or false (it is only warned about)' % (value,))
        return 'refuse'


def main():
    module = GpuDirectModule(ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    problems = Problems(dict(PLAYBOOK_VARIABLES, **params['variables']))
    project = module.params['project']
    check_connection(module, params, problems)
    roles, valid = validate_roles(params['roles'], problems)
    derived = role_stages(roles, problems)
    stages = validate_stages(dict(params, **{stage: options for stage, options in derived.items() if params[stage] is None}), problems)
    network_plan, instances = plan_stages(stages, project, problems)
    for role in valid & set(KUBERNETES_ROLES):
        plan_kubernetes(role, roles[role][1], problems)
    try:
        # A teardown's stages (state absent) are checked as input only: what exists is whatever it is.
        gke_stages = {stage: stages[stage] for stage in ('cluster', 'node_pool') if stage in stages and stages[stage].get('state') != 'absent'}
        if gke_stages:
            # Every GKE problem at once: the reads run beside the local problems (they are few: see read_gke).
            read_gke(module.clients, gke_stages, problems)
        if not problems.items and (network_plan is not None or instances is not None):
            read_stages(module.compute, stages, network_plan, instances, problems)
    except GcpError as exc:
        module.fail_from_error(exc, problems=problems.items)
    if problems.items:
        module.fail_json(msg='%d input problem%s, found before anything was created or changed: %s'
                         % (len(problems.items), '' if len(problems.items) == 1 else 's',
                            ' '.join('(%d) %s' % (n, text) for n, text in enumerate(problems.items, start=1))),
                         problems=problems.items)
    plan = {'zone': stages.get('instances', {}).get('zone'), 'vms': instances[0] if instances else [],
            'cluster': stages['cluster']['cluster'] if 'cluster' in stages else None,
            'node_pool': stages['node_pool']['name'] if 'node_pool' in stages else None,
            'networks': network_plan.network_names if network_plan else [],
            'subnets': {chain.subnet.name: chain.subnet.body['ipCidrRange'] for chain in network_plan.chains} if network_plan else {}}
    module.exit_json(changed=False, problems=[], plan=plan)


if __name__ == '__main__':
    main()
