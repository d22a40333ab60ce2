#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gce_gpudirect_network
short_description: The whole GPUDirect network of a Compute Engine cluster in one call
version_added: 0.1.0
description:
  - Creates, checks or deletes the VPC networks that an A3 Mega, A3 High or A3 Edge cluster needs, as the Compute Engine
    manual builds them by hand; a management VPC (custom subnet mode) with its subnet and firewall rules (internal traffic
    from the GPUDirect network's ranges, SSH only from the ranges you give, ICMP), and one data VPC per data NIC of the machine type
    (8 for A3 Mega, 4 for A3 High and A3 Edge), each with its subnet and an internal firewall rule.
  - Names follow the manual, C(PREFIX-mgmt-net), C(PREFIX-mgmt-sub), C(PREFIX-mgmt-internal), C(PREFIX-mgmt-external-ssh),
    C(PREFIX-mgmt-external-ping), C(PREFIX-data-net-N), C(PREFIX-data-sub-N), C(PREFIX-data-internal-N).
  - Resources that already exist with the planned settings are reused; firewall ranges and rules and a network's MTU are
    changed in place; a difference that only a new resource can fix (a subnet's range, a network's subnet mode) fails
    before anything changes, naming the resource and the field.
  - Every input is checked before the first API call that changes anything; independent resources are created concurrently.
  - A GPUDirect network whose new VPC networks do not fit in the project's C(NETWORKS) quota is refused before any is created
    (a warning in check mode), instead of failing halfway at the network that passes the limit.
  - With O(layout=gke) it makes the per-NIC networks of a GKE A3 Mega or A3 High node pool instead, as Google's GKE GPUDirect-TCPX/TCPXO guide builds them;
    one VPC per secondary NIC, C(PREFIX-net-N) with subnet C(PREFIX-sub-N) and rule C(PREFIX-internal-N), and no management
    network (the cluster's own network is the nodes' eth0).
  - With O(layout=gke_rdma) it makes the networks of the GKE GPUDirect RDMA guide's manual multi-network variant for A3 Ultra and A4 node pools;
    a gVNIC VPC C(PREFIX-gvnic-net) with subnet C(PREFIX-gvnic-sub) and rule C(PREFIX-gvnic-internal), and a RoCE VPC
    C(PREFIX-rdma-net) with the RDMA network profile C(ZONE-vpc-roce), MTU 8896 and the 8 subnets C(PREFIX-rdma-sub-0..7).
author:
  - aiinfra.gpudirect contributors (@aiinfra)
extends_documentation_fragment:
  - aiinfra.gpudirect.gcp
attributes:
  check_mode:
    support: full
    description: Reports what would be created, changed or deleted without calling any mutating method.
  diff_mode:
    support: full
    description: Shows the managed fields of every resource before and after.
options:
  network_prefix:
    description:
      - Name prefix of every network, subnet and firewall rule of the GPUDirect network.
      - The alias C(prefix) is the option's name in the P(aiinfra.gpudirect.gce_network#role) role's variable C(gce_network_prefix).
    type: str
    required: true
    aliases: [prefix]
  gvnic_network_prefix:
    description:
      - O(layout=gke_rdma) only. The name prefix of the gVNIC VPC, C(GVNIC_NETWORK_PREFIX) of Google's GKE GPUDirect RDMA
        guide (its network C(PREFIX-net), subnet C(PREFIX-sub) and rule C(PREFIX-internal)); give it to reuse a VPC named
        otherwise.
      - Unset, C(NETWORK_PREFIX-gvnic).
    type: str
  rdma_network_prefix:
    description:
      - O(layout=gke_rdma) only. The name prefix of the RoCE VPC, C(RDMA_NETWORK_PREFIX) of Google's GKE GPUDirect RDMA guide
        (its network C(PREFIX-net) and subnets C(PREFIX-sub-0) to C(PREFIX-sub-7)); give it to reuse a VPC named otherwise.
      - Unset, C(NETWORK_PREFIX-rdma).
    type: str
  machine_type:
    description:
      - The machine type of the cluster's VMs; it decides the number of data networks and the default MTU.
      - O(layout=gce) takes a3-megagpu-8g, a3-highgpu-8g and a3-edgegpu-8g; O(layout=gke) a3-megagpu-8g and a3-highgpu-8g;
        O(layout=gke_rdma) a3-ultragpu-8g and a4-highgpu-8g.
    type: str
    required: true
    choices: [a3-megagpu-8g, a3-highgpu-8g, a3-edgegpu-8g, a3-ultragpu-8g, a4-highgpu-8g]
  layout:
    description:
      - V(gce) is the Compute Engine layout (management VPC + data VPCs); V(gke) and V(gke_rdma) are the GKE node pool
        layouts described above. The management, SSH and ICMP options apply to V(gce) only.
    type: str
    choices: [gce, gke, gke_rdma]
    default: gce
  zone:
    description:
      - The zone of the node pool, with O(layout=gke_rdma); the RoCE network is bound to it (network profile C(ZONE-vpc-roce)).
    type: str
  region:
    description:
      - Region of the subnets; the VMs' zone must be in it.
    type: str
    required: true
  state:
    description:
      - V(present) creates what is missing and corrects what can be corrected.
      - V(absent) deletes the GPUDirect network; it refuses while instances still use its networks and names them.
    type: str
    choices: [present, absent]
    default: present
  mtu:
    description:
      - MTU of every network of the GPUDirect network; the machine type's value (8244) when unset.
    type: int
  management_cidr:
    description:
      - Range of the management subnet.
    type: str
    default: 192.168.0.0/24
  data_cidrs:
    description:
      - Ranges of the data subnets, one per data NIC in NIC order; C(192.168.N.0/24) for data network N when unset.
      - With O(layout=gke_rdma), 9 ranges; the gVNIC subnet's, then C(rdma-sub-0..7)'s (C(192.168.0.0/24), then
        C(192.168.(N+1).0/24) when unset; Google's GKE GPUDirect RDMA guide gives no ranges).
      - Ranges must be private IPv4 and must not overlap one another or O(management_cidr).
    type: list
    elements: str
  internal_source_ranges:
    description:
      - Sources allowed by the internal rules (all TCP and UDP ports, ICMP).
      - C(192.168.0.0/16) with the default ranges, as in the manual; otherwise the GPUDirect network's own ranges.
    type: list
    elements: str
  ssh_source_ranges:
    description:
      - Sources allowed to reach TCP port 22 on the management network (the manual's SSH_SOURCE_IP_RANGE).
      - There is no default; required with O(state=present) and O(layout=gce). Give V([]) to make no SSH rule.
      - V(0.0.0.0/0) is refused unless O(ssh_from_anywhere=true).
    type: list
    elements: str
  ssh_from_anywhere:
    description:
      - Allow O(ssh_source_ranges) to open SSH to the whole internet.
    type: bool
    default: false
  icmp_source_ranges:
    description:
      - Sources allowed to ping the management network (the manual's C(mgmt-external-ping) rule). No rule is made when empty.
    type: list
    elements: str
    default: ['0.0.0.0/0']
  timeout:
    description:
      - Seconds to wait for each operation.
    type: int
    default: 600
notes:
  - The modules of this collection that talk to Google Cloud run on the controller (C(delegate_to) is not needed with a
    C(localhost) play).
seealso:
  - module: aiinfra.gpudirect.gce_gpudirect_instance
"""

EXAMPLES = r"""
- name: The GPUDirect network of an A3 High cluster, SSH from the office only
  aiinfra.gpudirect.gce_gpudirect_network:
    project: my-project
    region: us-central1
    machine_type: a3-highgpu-8g
    network_prefix: a3high
    ssh_source_ranges: [203.0.113.0/24]

- name: An A3 Mega GPUDirect network with its own ranges
  aiinfra.gpudirect.gce_gpudirect_network:
    region: europe-west4
    machine_type: a3-megagpu-8g
    network_prefix: mega
    management_cidr: 10.10.0.0/24
    data_cidrs: [10.10.1.0/24, 10.10.2.0/24, 10.10.3.0/24, 10.10.4.0/24, 10.10.5.0/24, 10.10.6.0/24, 10.10.7.0/24, 10.10.8.0/24]

- name: The GKE GPUDirect-TCPX/TCPXO guide's 8 per-NIC networks of a GKE A3 Mega node pool (mega-net-1..8)
  aiinfra.gpudirect.gce_gpudirect_network:
    region: us-central1
    machine_type: a3-megagpu-8g
    layout: gke
    network_prefix: mega

- name: The GKE GPUDirect RDMA guide's manual RDMA networks of a GKE A3 Ultra node pool in us-central1-b
  aiinfra.gpudirect.gce_gpudirect_network:
    region: us-central1
    zone: us-central1-b
    machine_type: a3-ultragpu-8g
    layout: gke_rdma
    network_prefix: ultra

- name: The same with the guide's two prefixes (its GVNIC_NETWORK_PREFIX and RDMA_NETWORK_PREFIX), VPCs named otherwise
  aiinfra.gpudirect.gce_gpudirect_network:
    region: us-central1
    zone: us-central1-b
    machine_type: a3-ultragpu-8g
    layout: gke_rdma
    network_prefix: ultra
    gvnic_network_prefix: shared-gvnic
    rdma_network_prefix: shared-roce

- name: Remove the GPUDirect network once its VMs are gone (no SSH ranges needed to delete)
  aiinfra.gpudirect.gce_gpudirect_network:
    region: us-central1
    machine_type: a3-highgpu-8g
    network_prefix: a3high
    state: absent
"""

RETURN = r"""
plan:
  description: The GPUDirect network's settings as planned.
  returned: always
  type: dict
  sample:
    machine_type: a3-highgpu-8g
    technology: TCPX
    network_prefix: a3high
    region: us-central1
    mtu: 8244
    management_cidr: 192.168.0.0/24
    data_cidrs: [192.168.1.0/24, 192.168.2.0/24, 192.168.3.0/24, 192.168.4.0/24]
    internal_source_ranges: [192.168.0.0/16]
    networks: [a3high-mgmt-net, a3high-data-net-1, a3high-data-net-2, a3high-data-net-3, a3high-data-net-4]
networks:
  description: Each VPC network of the GPUDirect network in NIC order (management first), with its subnet and firewall rules.
  returned: when O(state=present)
  type: list
  elements: dict
  contains:
    role:
      description: V(management) or V(data).
      type: str
    index:
      description: 0 for the management network, N for data network N.
      type: int
    name:
      description: Network name.
      type: str
    self_link:
      description: URL of the network.
      type: str
    subnet:
      description: Subnet name.
      type: str
    subnet_self_link:
      description: URL of the subnet.
      type: str
    cidr:
      description: Range of the subnet.
      type: str
    subnets:
      description: Every subnet of the network (one, or 8 on the RoCE network of O(layout=gke_rdma)), with C(name), C(cidr), C(self_link).
      type: list
      elements: dict
    firewalls:
      description: Names of the firewall rules on the network.
      type: list
      elements: str
actions:
  description: What was done (or would be done in check mode), one line per resource.
  returned: always
  type: list
  elements: str
  sample: ["create network 'a3high-mgmt-net'", "update firewall 'a3high-mgmt-internal' (sourceRanges)"]
"""

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import network as gce_network
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.compute import firewalls_path, networks_path, project_path, subnetworks_path
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.concurrency import map_concurrently, raise_first
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.executor import Executor
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.module import GpuDirectModule

ARGUMENT_SPEC = gce_network.ARGUMENT_SPEC


def read_current(compute, plan):
    """Every existing resource of the plan, keyed by (kind, name): one list call per collection, the three at once."""
    wanted = {(resource.kind, resource.name) for resource in plan.resources}
    name_filter = {'filter': 'name eq "%s-.*"' % plan.prefix}

    def read(kind_path):
        kind, path = kind_path
        return list(compute.list(path, action='list %ss' % kind, params=name_filter))

    collections = (('network', networks_path()), ('subnetwork', subnetworks_path(plan.region)), ('firewall', firewalls_path()))
    outcomes = map_concurrently(read, collections)
    for _item, _items, error in outcomes:
        if error is not None:   # the first in the order above, as when they were read one after another
            raise error
    return {(kind, item['name']): item for (kind, _path), items, _error in outcomes for item in items if (kind, item['name']) in wanted}


def plan_changes(plan, current):
    """The action for every planned resource: ('create', None), ('patch', fields) or None; immutable differences fail."""
    actions, immutable = {}, []
    for resource in plan.resources:
        existing = current.get((resource.kind, resource.name))
        if existing is None:
            actions[resource.name] = ('create', resource.body)
            continue
        patch, fixed = gce_network.differences(resource, existing)
        if fixed:
            immutable.append('%s (%s)' % (resource.describe(), ', '.join(fixed)))
        if patch:
            actions[resource.name] = ('patch', patch)
    if immutable:
        raise InputError('these resources exist with settings that cannot be changed in place: %s; delete them '
                         '(state: absent) or choose another network_prefix' % '; '.join(immutable))
    return actions


def describe_action(resource, action):
    verb, detail = action
    if verb == 'create':
        return 'create %s' % resource.describe()
    return 'update %s (%s)' % (resource.describe(), ', '.join(sorted(detail)))


class FabricRunner:
    """Applies the changes of one plan: each network chain in order, the chains concurrently."""

    def __init__(self, compute, plan, current, actions, timeout):
        self.compute = compute
        self.plan = plan
        self.actions = actions
        self.timeout = timeout
        self.links = {name: resource['selfLink'] for (_kind, name), resource in current.items()}

    def ensure(self, resource):
        action = self.actions.get(resource.name)
        if action is None:
            return
        verb, body = action
        if verb == 'create':
            operation = self.compute.run('POST', resource.path, 'create %s' % resource.describe(), body=body, timeout=self.timeout)
        else:
            operation = self.compute.run('PATCH', resource.resource_path, 'update %s' % resource.describe(), body=body, timeout=self.timeout)
        self.links[resource.name] = operation.get('targetLink') or self.compute.url(resource.resource_path)

    def ensure_chain(self, chain):
        self.ensure(chain.network)
        raise_first(map_concurrently(self.ensure, chain.subnets + chain.firewalls))

    def apply(self):
        # Every chain at once: the critical path is then one network and one subnet or rule operation.
        raise_first(map_concurrently(self.ensure_chain, self.plan.chains, max_workers=len(self.plan.chains)))

    def network_results(self):
        return [{
            'role': chain.role, 'index': chain.index, 'name': chain.network.name, 'self_link': self.links.get(chain.network.name),
            'subnet': chain.subnet.name, 'subnet_self_link': self.links.get(chain.subnet.name),
            'cidr': chain.subnet.body['ipCidrRange'], 'firewalls': [firewall.name for firewall in chain.firewalls],
            'subnets': [{'name': subnet.name, 'cidr': subnet.body['ipCidrRange'], 'self_link': self.links.get(subnet.name)}
                        for subnet in chain.subnets],
        } for chain in self.plan.chains]


def instances_using(compute, plan):
    """Names of instances (any zone) with a NIC on one of the plan's networks."""
    ours = set(plan.network_names)
    users = []
    for scope, instance in compute.aggregated_list('instances', action='list instances'):
        networks = {links.resource_name(nic.get('network')) for nic in instance.get('networkInterfaces', [])}
        if networks & ours:
            users.append('%s (%s)' % (instance['name'], links.resource_name(scope)))
    return users


def remove(compute, executor, plan, current, timeout):
    """Delete what exists of the plan: rules and subnets first, then the networks, once no instance uses them."""
    users = instances_using(compute, plan) if current else []
    if users:
        raise InputError('the GPUDirect network %s is still used by instances %s; delete them first (gce_gpudirect_instance '
                         'state: absent, or playbooks/teardown.yml)' % (plan.prefix, ', '.join(users)))
    present = [resource for resource in plan.resources if (resource.kind, resource.name) in current]

    def delete(resource):
        compute.delete(resource.resource_path, 'delete %s' % resource.describe(), timeout=timeout)

    def delete_all():
        raise_first(map_concurrently(delete, [r for r in present if r.kind != 'network']))
        raise_first(map_concurrently(delete, [r for r in present if r.kind == 'network']))
    executor.do(['delete %s' % resource.describe() for resource in present], delete_all)
    return {}


def check_network_quota(compute, executor, plan, actions):
    """Refuse, before creating anything, a fabric whose new VPC networks do not fit in the project's NETWORKS quota
    (the project's ``quotas``): Compute Engine would refuse the network that passes the limit with 403 quotaExceeded
    ("Quota 'NETWORKS' exceeded. Limit: 15.0 globally."), leaving the fabric half made.  Check mode warns instead."""
    new_networks = [resource.name for resource in plan.resources if resource.kind == 'network' and actions.get(resource.name, (None,))[0] == 'create']
    if not new_networks:
        return
    project = compute.get(project_path(compute.project), 'get project %s' % compute.project) or {}
    quota = next((item for item in project.get('quotas', []) if item.get('metric') == 'NETWORKS'), None)
    if quota is None:
        return
    room = int(quota['limit'] - quota.get('usage', 0))
    if len(new_networks) > room:
        message = ('network_prefix: the GPUDirect network %s needs %d new VPC networks, and project %s has room for %d of its NETWORKS '
                   'quota (%d of %d used); ask for a quota increase or delete unused networks'
                   % (plan.prefix, len(new_networks), compute.project, max(room, 0), int(quota.get('usage', 0)), int(quota['limit'])))
        if not executor.assume(message):
            raise InputError(message)


def converge(compute, executor, plan, current, before, timeout):
    """Create or correct what the plan names; the planned view of every resource."""
    actions = plan_changes(plan, current)
    check_network_quota(compute, executor, plan, actions)
    runner = FabricRunner(compute, plan, current, actions, timeout)
    executor.do([describe_action(resource, actions[resource.name]) for resource in plan.resources if resource.name in actions], runner.apply)
    executor.result['networks'] = runner.network_results()
    return {resource.name: gce_network.view(dict(before.get(resource.name) or {}, **resource.body)) for resource in plan.resources}


def main():
    module = GpuDirectModule(ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    executor = Executor(module)
    try:
        plan = gce_network.plan_from_params(params, module.compute.project)
        executor.result['plan'] = dict(plan.summary(), **({'layout': params['layout']} if params['layout'] != 'gce' else {}))
        current = read_current(module.compute, plan)
        before = {name: gce_network.view(resource) for (_kind, name), resource in sorted(current.items())}
        if params['state'] == 'absent':
            after = remove(module.compute, executor, plan, current, params['timeout'])
        else:
            after = converge(module.compute, executor, plan, current, before, params['timeout'])
    except (InputError, GcpError) as exc:
        executor.fail(exc)
    executor.report(before, after)


if __name__ == '__main__':
    main()
