#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gce_gpudirect_instance
short_description: A group of A3 Mega, A3 High or A3 Edge VMs with their GPUDirect NICs, in one call
version_added: 0.1.0
description:
  - Creates, checks, starts, stops or deletes a group of GPU VMs as the Compute Engine manual creates them one by one
    with C(gcloud compute instances create), with one management gVNIC and one gVNIC per data network of the machine type
    (8 on A3 Mega, 4 on A3 High and A3 Edge), Container-Optimized OS, and the manual's four provisioning models.
  - The catalog entry comes from O(machine_type); its NIC layout is taken from the GPUDirect network of O(network_prefix) (made by
    M(aiinfra.gpudirect.gce_gpudirect_network)) or from O(network_interfaces), and is checked against the catalog.
  - Two or more new VMs of a zone are created with one C(instances.bulkInsert) request, as C(gcloud compute instances bulk create)
    does (one request against the API rate limits, capacity and quota checked before it starts). It names every VM and asks
    for at least one (C(minCount) 1), so Compute Engine creates as many as the zone takes now instead of none. A single new VM,
    and C(flex_start) VMs (a bulk request cannot carry their C(request_valid_for_duration)), get one C(instances.insert) each,
    concurrently.
  - A VM not created for want of capacity (C(ZONE_RESOURCE_POOL_EXHAUSTED), quota, a zone that refuses the bulk request with
    C(insufficientCapacity), or a VM the bulk request made no room for) is reported by name with its error while the others go
    on; O(fallback_zones) are tried in order for those VMs only, and a rerun creates only what is still missing.
  - A second run with the same arguments changes nothing. Labels, metadata and network tags are changed in place; any
    other difference on an existing VM is reported by VM and field, and the VM is replaced only with O(recreate=true).
  - Of the metadata, labels and network tags of an existing VM, only the keys the collection sets (the catalog's
    C(cos-update-strategy) metadata) or that you give are managed; keys added by you or by other tools (an C(ssh-keys) entry
    written by C(gcloud compute ssh), a label of a monitoring agent) are left alone, unless the field is in O(exclusive).
author:
  - aiinfra.gpudirect contributors (@aiinfra)
extends_documentation_fragment:
  - aiinfra.gpudirect.gcp
attributes:
  check_mode:
    support: full
    description: Reports what would be created, changed, started, stopped or deleted without calling any mutating method.
  diff_mode:
    support: full
    description: Shows every VM's summary before and after, with its labels, metadata and network tags.
options:
  names:
    description:
      - Names of the VMs. Mutually exclusive with O(count).
    type: list
    elements: str
  count:
    description:
      - Number of VMs, named by O(name_pattern). Unset (and no O(names)), the catalog's default node count, 2 (the two
        hosts of the NCCL test).
    type: int
  name_pattern:
    description:
      - Pattern of the VM names when O(count) is given; C({prefix}) is O(network_prefix), C({n}) counts from 1.
    type: str
    default: '{prefix}-vm-{n}'
  zone:
    description:
      - Zone of the VMs. It must exist and offer O(machine_type), as the API answers; another zone is refused before anything
        is created.
    type: str
    required: true
  fallback_zones:
    description:
      - Zones of the same region to try in order when O(zone) has no capacity for a VM; each must offer O(machine_type).
    type: list
    elements: str
    default: []
  machine_type:
    description:
      - The machine type, which decides the family.
    type: str
    required: true
    choices: [a3-megagpu-8g, a3-highgpu-8g, a3-edgegpu-8g]
  network_prefix:
    description:
      - Prefix of the GPUDirect network made by M(aiinfra.gpudirect.gce_gpudirect_network); its networks give the NICs.
      - Mutually exclusive with O(network_interfaces).
    type: str
  network_interfaces:
    description:
      - The NICs in order (management first), when the networks were not made by this collection.
    type: list
    elements: dict
    suboptions:
      network:
        description: Network name or URL.
        type: str
        required: true
      subnetwork:
        description: Subnetwork name or URL.
        type: str
        required: true
  external_ip:
    description:
      - Give the management NIC an external address, as the manual does. Data NICs never get one.
    type: bool
    default: true
  provisioning_model:
    description:
      - V(standard), V(spot), V(flex_start) (Dynamic Workload Scheduler) or V(reservation_bound).
      - "V(reservation_bound) on C(a3-edgegpu-8g) is disputed (Google's current page on reservation-bound instances lists
        A3 Edge, the older Compute Engine manual says it is not supported): refused unless
        O(accept_disputed_provisioning_model=true)."
    type: str
    choices: [standard, spot, flex_start, reservation_bound]
    default: standard
  accept_disputed_provisioning_model:
    description:
      - Accept a provisioning model that the machine type's sources disagree on (today V(reservation_bound) on
        C(a3-edgegpu-8g)), once you know your reservation takes it; without it such a model is refused before anything is
        created, naming both sources.
    type: bool
    default: false
  termination_action:
    description:
      - What happens when a spot VM is reclaimed or a flex_start or reservation_bound VM's time ends.
      - Required for those models.
    type: str
    choices: [STOP, DELETE]
  max_run_duration:
    description:
      - Longest run of a flex_start VM, from 10m to 7d, written like C(7d) or C(1h30m).
    type: str
  request_valid_for_duration:
    description:
      - How long a flex_start request may wait for capacity; 90s to 2h for this zone only, or C(0s) for any zone.
    type: str
  reservation:
    description:
      - Name or URL of the reservation a reservation_bound VM consumes. It must exist, reserve O(machine_type), have been
        created with specificReservationRequired and have room for the VMs to create; otherwise the module fails before
        creating any VM, as Compute Engine would refuse them.
    type: str
  restart_on_failure:
    description:
      - Restart the VM automatically after a host failure. Spot VMs never restart automatically, as with gcloud.
    type: bool
    default: true
  image:
    description:
      - Boot image URL; when unset, the newest image of O(image_family) in O(image_project).
    type: str
  image_family:
    description:
      - Boot image family; C(cos-121-lts) when unset.
    type: str
  image_project:
    description:
      - Project of O(image_family); C(cos-cloud) when unset.
    type: str
  boot_disk_size_gb:
    description:
      - Boot disk size in GB.
    type: int
  boot_disk_type:
    description:
      - Boot disk type such as C(pd-balanced); the API's default when unset. A3 Mega, High and Edge take C(pd-balanced), C(pd-ssd)
        and Hyperdisk types (Google's accelerator-optimized machines page); another type is refused before anything is created.
    type: str
  metadata:
    description:
      - Instance metadata. When unset, C(cos-update-strategy=update_disabled) as in the manual.
    type: dict
  service_account_email:
    description:
      - Service account of the VMs.
    type: str
    default: default
  service_account_scopes:
    description:
      - OAuth scopes of the VMs' service account; the manual's cloud-platform scope when unset.
    type: list
    elements: str
  labels:
    description:
      - Labels of the VMs.
      - The collection adds its own to the VMs it creates, C(aiinfra-gpudirect=managed) and, with O(network_prefix),
        C(aiinfra-gpudirect-group=PREFIX); they are never added to an existing VM it did not create, and these keys cannot
        be given here.
    type: dict
  tags:
    description:
      - Network tags of the VMs.
    type: list
    elements: str
  placement_policy:
    description:
      - Name of a compact placement policy (resource policy of the region) for the VMs.
    type: str
  create_placement_policy:
    description:
      - Create O(placement_policy) as a compact (collocated) policy when it does not exist.
    type: bool
    default: false
  state:
    description:
      - V(present) creates missing VMs and leaves running state alone; V(started) and V(stopped) also start or stop them;
        V(absent) deletes them.
      - V(absent) deletes only VMs the collection created (label C(aiinfra-gpudirect=managed)); a VM of such a name that
        someone else made is left alone with a warning (RV(left_alone)). With O(network_prefix) it also deletes every VM
        labelled with that group, so a teardown finds all the VMs of a run with a larger O(count).
    type: str
    choices: [present, started, stopped, absent]
    default: present
  exclusive:
    description:
      - The fields whose whole set this module enforces on existing VMs, removing keys it did not set; by default only the keys
        the collection sets or that you give are managed.
    type: list
    elements: str
    choices: [metadata, labels, tags]
    default: []
  recreate:
    description:
      - Replace a VM whose settings differ in a field that Compute Engine cannot change in place.
    type: bool
    default: false
  timeout:
    description:
      - Seconds to wait for each VM to be created, started, stopped or deleted.
    type: int
    default: 900
"""

EXAMPLES = r"""
- name: Two A3 High VMs on the a3high GPUDirect network, as in the manual
  aiinfra.gpudirect.gce_gpudirect_instance:
    project: my-project
    zone: us-central1-a
    machine_type: a3-highgpu-8g
    network_prefix: a3high
    count: 2
    boot_disk_size_gb: 200

- name: Eight spot A3 Mega VMs, trying a second zone when the first has no capacity
  aiinfra.gpudirect.gce_gpudirect_instance:
    zone: us-central1-a
    fallback_zones: [us-central1-c]
    machine_type: a3-megagpu-8g
    network_prefix: mega
    count: 8
    provisioning_model: spot
    termination_action: STOP
    placement_policy: mega-compact
    create_placement_policy: true

- name: Flex-start VMs for a week
  aiinfra.gpudirect.gce_gpudirect_instance:
    zone: us-central1-a
    machine_type: a3-megagpu-8g
    network_prefix: mega
    names: [mega-a, mega-b]
    provisioning_model: flex_start
    termination_action: DELETE
    max_run_duration: 7d
    request_valid_for_duration: 2h

- name: Delete them
  aiinfra.gpudirect.gce_gpudirect_instance:
    zone: us-central1-a
    machine_type: a3-megagpu-8g
    network_prefix: mega
    names: [mega-a, mega-b]
    state: absent
"""

RETURN = r"""
left_alone:
  description: The VMs O(state=absent) did not delete because the collection did not create them.
  returned: when such a VM exists
  type: list
  elements: str
instances:
  description: Every VM of the call, in the order of the names.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: VM name.
      type: str
    zone:
      description: Zone the VM is in.
      type: str
    status:
      description: C(RUNNING), C(TERMINATED), ... or C(ABSENT), or C(FAILED) when it could not be created.
      type: str
    machine_type:
      description: Machine type.
      type: str
    provisioning_model:
      description: C(STANDARD), C(SPOT), C(FLEX_START) or C(RESERVATION_BOUND).
      type: str
    management_ip:
      description: Internal address of the management NIC.
      type: str
    external_ip:
      description: External address of the management NIC, if any.
      type: str
    data_ips:
      description: Internal addresses of the data NICs, in NIC order (eth1, eth2, ... in the guest).
      type: list
      elements: str
    networks:
      description: Network of each NIC, in order.
      type: list
      elements: str
    nic_types:
      description: Type of each NIC, in order (C(GVNIC) on A3).
      type: list
      elements: str
    error:
      description: Why the VM could not be created, when it could not.
      type: str
  sample:
    - name: a3high-vm-1
      zone: us-central1-a
      status: RUNNING
      machine_type: a3-highgpu-8g
      provisioning_model: STANDARD
      management_ip: 192.168.0.2
      external_ip: 34.1.2.3
      data_ips: [192.168.1.2, 192.168.2.2, 192.168.3.2, 192.168.4.2]
      networks: [a3high-mgmt-net, a3high-data-net-1, a3high-data-net-2, a3high-data-net-3, a3high-data-net-4]
progress:
  description: One progress line per VM and step, in the order they happened.
  returned: always
  type: list
  elements: str
  sample: ["bulkInsert of 8 VMs in us-central1-a: 8 created after 41.2s", "a3high-vm-1: created in us-central1-a after 41.2s"]
events:
  description: The same list as RV(progress), under its old name (deprecated, removed in 1.0.0).
  returned: always
  type: list
  elements: str
actions:
  description: What was done (or would be done in check mode), one line per VM and step.
  returned: always
  type: list
  elements: str
  sample: ["create instance 'a3high-vm-1' in us-central1-a"]
"""

import threading
import time

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp import links
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import instance as gce_instance
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gce import lookups as gce_lookups
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.concurrency import map_concurrently
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.compute import instance_path, instances_path, resource_policies_path, resource_policy_path
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.executor import Executor
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.module import GpuDirectModule
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import compute as compute_catalog

ARGUMENT_SPEC = gce_instance.ARGUMENT_SPEC
MUTUALLY_EXCLUSIVE = gce_instance.MUTUALLY_EXCLUSIVE
REQUIRED_ONE_OF = gce_instance.REQUIRED_ONE_OF


class GroupRunner:
    """Carries out the plan for the group: each VM on its own thread, every step recorded as an event."""

    def __init__(self, module, spec, zones, progress):
        self.compute = module.compute
        self.spec = spec
        self.zones = zones
        self.timeout = module.params['timeout']
        self.exclusive = module.params['exclusive']
        self.progress = progress
        self.errors = {}
        self.created = {}
        self.done = 0
        self._lock = threading.Lock()

    def event(self, line, done=True):
        """Record a progress line; done=True also counts a change made."""
        with self._lock:
            self.progress.note(line)
            self.done += 1 if done else 0

    def create(self, names):
        """Create the VMs of names, trying the zones in order: ({name: zone} created, {name: GcpError} not created).

        In each zone, two or more VMs go in one bulkInsert (gce/instance.py bulk_requests says when), otherwise one
        insert each, concurrently. A VM refused for capacity moves on to the next zone; in the last zone its error stays."""
        created, failed, pending = {}, {}, list(names)
        for zone in self.zones:
            started = time.monotonic()
            made, refused = self.insert_in(zone, pending)
            for name in made:
                created[name] = zone
                self.event('%s: created in %s after %.1fs' % (name, zone, time.monotonic() - started))
            pending = []
            for name, error in refused.items():
                if error.capacity and zone != self.zones[-1]:
                    self.event('%s: no capacity in %s (%s), trying the next zone' % (name, zone, ', '.join(error.codes) or error.reason
                                                                                     or 'fewer made than asked'), done=False)
                    pending.append(name)
                else:
                    failed[name] = error
            if not pending:
                break
        return created, failed

    def insert_in(self, zone, names):
        """([names created], {name: GcpError}) of one zone: bulkInsert where it serves, else one insert per VM."""
        bodies = gce_instance.bulk_requests(self.spec, zone, names)
        made, refused = [], {}
        for body in bodies:
            started = time.monotonic()
            created, failed = self.compute.bulk_insert(zone, body, timeout=self.timeout)
            self.event('bulkInsert of %s VMs in %s: %d created after %.1fs' % (body['count'], zone, len(created), time.monotonic() - started),
                       done=False)
            made.extend(created)
            refused.update(failed)
        if bodies:
            return made, refused

        def insert(name):
            self.compute.run('POST', instances_path(zone), "create instance '%s' in %s" % (name, zone), body=self.spec.body(name, zone),
                             timeout=self.timeout)
        for name, _result, error in map_concurrently(insert, names, max_workers=16):
            if error is None:
                made.append(name)
            else:
                refused[name] = error
        return made, refused

    def run_on(self, instance, verb):
        zone = links.resource_name(instance['zone'])
        path = instance_path(zone, instance['name'])
        started = time.monotonic()
        if verb == 'delete':
            self.compute.delete(path, "delete instance '%s'" % instance['name'], timeout=self.timeout)
        else:
            self.compute.run('POST', path + '/' + verb, "%s instance '%s'" % (verb, instance['name']), timeout=self.timeout)
        done = {'delete': 'deleted', 'start': 'started', 'stop': 'stopped'}[verb]
        self.event('%s: %s in %s after %.1fs' % (instance['name'], done, zone, time.monotonic() - started))

    def update(self, instance, fields, body):
        zone = links.resource_name(instance['zone'])
        path = instance_path(zone, instance['name'])
        for field in fields:
            value = gce_instance.managed_value(field, body.get(field), instance.get(field), field in self.exclusive)
            if field == 'labels':
                payload = {'labels': value, 'labelFingerprint': instance.get('labelFingerprint')}
            else:   # metadata and tags: items plus the fingerprint of what is there
                payload = {'items': value['items'], 'fingerprint': (instance.get(field) or {}).get('fingerprint')}
            self.compute.run('POST', '%s/%s' % (path, gce_instance.IN_PLACE[field]), "set %s of instance '%s'" % (field, instance['name']),
                             body=payload, timeout=self.timeout)
        self.event('%s: %s set in place' % (instance['name'], ', '.join(fields)))

    def carry_out(self, name, plan, instance, in_place):
        """The steps of one VM's plan, in order (gce/instance.py plan_vm decides them); a 'create' first step has been
        done for the whole group by create_group."""
        for step in plan.steps:
            if step == 'recreate':
                self.run_on(instance, 'delete')
                created, failed = self.create([name])
                if failed:
                    raise failed[name]
                instance = {'name': name, 'zone': created[name]}
            elif step == 'create':
                instance = {'name': name, 'zone': self.created[name]}
            elif step == 'update':
                self.update(instance, in_place, self.spec.body(name))
            elif step == 'wait':
                settled = gce_instance.RUNNING if instance.get('status') in gce_instance.STARTING else 'TERMINATED'
                current, late = self.compute.wait_for_instances([name], {name: settled}, self.timeout)
                if late:
                    raise GcpError("wait for instance '%s'" % name, 'still %s after %ss' % (current.get(name, {}).get('status', 'missing'),
                                                                                            self.timeout))
                instance = current[name]
                self.event('%s: %s' % (name, settled), done=False)
            else:   # start, stop, delete
                self.run_on(instance, step)

    def create_group(self, names):
        """The 'create' steps of every VM that starts with one, together: bulkInsert needs them in one request."""
        self.created, failed = self.create(names)
        for name in names:
            if name in failed:
                self.fail(name, failed[name])

    def fail(self, name, error):
        self.errors[name] = error
        self.event('%s: FAILED: %s' % (name, error), done=False)

    def each(self, function, items, key):
        """Run function on every item concurrently; record failures by name instead of stopping the others."""
        for item, _result, error in map_concurrently(function, items, max_workers=16):
            if error is not None:
                self.fail(key(item), error)

    def apply(self, names, plans, current):
        """Carry out every VM's plan (creates together, then the rest concurrently) and wait for the statuses the plans
        end in: the group as it then is ({name: instance})."""
        touched = [name for name in names if plans[name].steps]
        self.create_group([name for name in touched if plans[name].steps[0] == 'create'])
        rest = [name for name in touched if name not in self.errors and plans[name].steps != ['create']]
        self.each(lambda name: self.carry_out(name, plans[name], current.get(name), plans[name].in_place), rest, key=lambda name: name)
        targets = {name: plans[name].wait_for for name in touched if plans[name].wait_for and name not in self.errors}
        final, late = self.compute.wait_for_instances(names, targets, self.timeout)
        for name in late:
            self.errors[name] = GcpError("bring instance '%s' to %s" % (name, targets[name]), 'still %s after %ss'
                                         % (final.get(name, {}).get('status', 'missing'), self.timeout))
        return final


def ensure_placement_policy(compute, executor, params):
    name = params['placement_policy']
    if not name:
        return
    region = links.region_of(params['zone'])
    path = resource_policy_path(region, name)
    if compute.get(path, "get resource policy '%s'" % name) is not None:
        return
    if not params['create_placement_policy']:
        raise InputError("placement_policy: '%s' does not exist in %s; create it or set create_placement_policy: true" % (name, region))
    executor.do("create compact placement policy '%s' in %s" % (name, region), lambda: compute.run(
        'POST', resource_policies_path(region), "create resource policy '%s'" % name,
        body={'name': name, 'groupPlacementPolicy': {'collocation': 'COLLOCATED'}}))


def check_references(compute, executor, spec, params, names, new_vms):
    """Fail before any VM is created when what they need does not exist: zones, machine type, disk type, image,
    networks and subnetworks with free addresses for every VM, a reservation of their machine type with room for them.

    In check mode missing networks are a warning: a whole playbook run with --check plans the
    GPUDirect network in an earlier task without creating it.
    """
    names = [name for name in names if name]
    existing = gce_lookups.check_references(compute, spec, names, params['zone'], params['fallback_zones'], new_vms=new_vms)
    networks = {links.resource_name(nic['network']) for nic in spec.template['networkInterfaces']}
    missing = sorted(networks - existing)
    if missing:
        message = 'network_interfaces: network %s does not exist; create the GPUDirect network first (gce_gpudirect_network, or the ' \
                  'network tag of the playbook)' % ', '.join(missing)
        if not executor.assume(message + ' (check mode: assuming an earlier task creates it)'):
            raise InputError(message)


def absent_targets(compute, executor, names, group):
    """(names, {name: instance}) that state absent deletes: the VMs named (or counted) and every VM labelled with the
    group (a run with a larger count made more), of those only what the collection created (its mark). A VM of such a
    name that someone else made is left alone, named in a warning and in ``left_alone``."""
    if group:
        names = list(names) + sorted(set(compute.instance_names_labelled(compute_catalog.GROUP_LABEL, group)) - set(names))
    current = compute.instances_by_name(names)
    foreign = [name for name in names if name in current and not gce_instance.is_managed(current[name])]
    if foreign:
        key, value = compute_catalog.MANAGED_LABEL
        executor.module.warn('VMs %s were not created by aiinfra.gpudirect (no label %s=%s): left alone; delete them yourself if they '
                             'should go' % (', '.join(foreign), key, value))
        executor.result['left_alone'] = ['instance %s (not created by aiinfra.gpudirect)' % name for name in foreign]
    return [name for name in names if name not in foreign], {name: vm for name, vm in current.items() if name not in foreign}


def describe_step(name, step, zone, in_place, fixed):
    return {'create': "create instance '%s' in %s" % (name, zone), 'recreate': "replace instance '%s' (%s)" % (name, ', '.join(fixed)),
            'update': "set %s of instance '%s'" % (', '.join(in_place), name)}.get(step, "%s instance '%s'" % (step, name))


def plan_group(spec, names, current, params):
    """Every VM's plan (gce/instance.py plan_vm), with the fields it sets in place and those it replaces it for;
    InputError for VMs that differ in what only a replacement changes, unless recreate."""
    plans = {}
    for name in names:
        vm = current.get(name)
        fields, fixed = [], []
        if vm is not None and params['state'] != 'absent':
            fields, fixed = gce_instance.differences(spec.body(name, links.resource_name(vm['zone'])), vm, params['exclusive'])
        plans[name] = gce_instance.plan_vm(vm.get('status') if vm else None, params['state'], fields, fixed, params['recreate'])
    refused = [(name, plans[name].refused) for name in names if plans[name].refused]
    if refused:
        raise InputError('these VMs exist with settings that Compute Engine cannot change in place: %s; set recreate: true '
                         'to replace them, or delete them' % '; '.join('%s (%s)' % (name, ', '.join(fields)) for name, fields in refused))
    return plans


def converge(module, executor, runner, spec, names, current):
    """Check what new VMs need, then carry out the plans: the group as it then is (as found, in check mode)."""
    params, compute = module.params, module.compute
    plans = plan_group(spec, names, current, params)
    if any(step in ('create', 'recreate') for plan in plans.values() for step in plan.steps):
        check_references(compute, executor, spec, params, names, new_vms=sum('create' in plan.steps for plan in plans.values()))
        ensure_placement_policy(compute, executor, params)
    lines = []
    for name in names:
        lines.extend(describe_step(name, step, params['zone'], plans[name].in_place, plans[name].fixed) for step in plans[name].steps
                     if step != 'wait')
        if 'wait' in plans[name].steps:
            lines.append("wait for instance '%s' (%s)" % (name, current[name].get('status')))
    if not any(plans[name].steps for name in names):
        return current
    return executor.do(lines, lambda: runner.apply(names, plans, current), planned=current)


def report(module, executor, runner, spec, names, current, before, final):
    """Exit (or fail, naming the VMs that failed) with every VM's summary, the diff and whether anything changed."""
    params = module.params
    for name in names:
        summary = gce_instance.instance_summary(final[name]) if name in final else gce_instance.planned_summary(spec, name)
        if name in runner.errors:
            summary.update(status='FAILED', error=str(runner.errors[name]))
        executor.result['instances'].append(summary)
    # The diff shows each VM's summary with its labels, metadata and tags; in check mode, those it would have.
    planned = {} if params['state'] == 'absent' else {
        name: dict(before[name], **gce_instance.planned_shared_fields(spec.body(name, links.resource_name(current[name]['zone'])),
                                                                      current[name], params['exclusive']))
        if name in before else {'name': name, 'zone': params['zone'], 'status': 'RUNNING'} for name in names}
    after = executor.live(lambda: {item['name']: dict(item, **gce_instance.shared_fields_view(final[item['name']]))
                                   for item in executor.result['instances'] if item['status'] not in ('ABSENT', 'FAILED')}, planned)
    changed = executor.live(lambda: runner.done > 0, bool(executor.actions))
    if runner.errors:
        executor.fail('%d of %d VMs failed: %s; the others are done, and a rerun retries only these' % (
            len(runner.errors), len(names), '; '.join('%s: %s' % (name, runner.errors[name]) for name in names if name in runner.errors)),
            changed=changed, diff={'before': before, 'after': after})
    executor.report(before, after, changed=changed)


def main():
    module = GpuDirectModule(ARGUMENT_SPEC, supports_check_mode=True, mutually_exclusive=MUTUALLY_EXCLUSIVE,
                             required_one_of=REQUIRED_ONE_OF)
    params = module.params
    executor = Executor(module, progress_keys=('progress', 'events'))
    executor.result['instances'] = []
    try:
        names, spec = gce_instance.build_from_params(params, module.compute.project)
        runner = GroupRunner(module, spec, [params['zone']] + list(params['fallback_zones']), executor.progress)
        if params['state'] == 'absent':
            names, current = absent_targets(module.compute, executor, names, params['network_prefix'])
        else:
            current = module.compute.instances_by_name(names)
        before = {name: dict(gce_instance.instance_summary(current[name]), **gce_instance.shared_fields_view(current[name]))
                  for name in names if name in current}
        final = converge(module, executor, runner, spec, names, current)
    except (InputError, GcpError) as exc:
        executor.fail(exc)
    report(module, executor, runner, spec, names, current, before, final)


if __name__ == '__main__':
    main()
