# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compute Engine v1: the paths of its resources, and the client that calls it (pagination, aggregated lists,
operations awaited with the API's wait method, bulkInsert read back VM by VM, VMs awaited to a status)."""

from __future__ import annotations

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError, GcpShortfall, error_from_operation
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.operations import await_with_wait_method
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.links import resource_name
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import COMPUTE_DEFAULT_ENDPOINT, ApiClient, RetryPolicy
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import WaitReport, until

# Every Compute path of the collection is built by one of these, and only here. A path is relative to projects/PROJECT/
# (ComputeClient.url), which is also how a request body refers to a resource of its own project; one that starts with
# projects/ names another project.


def project_path(project):
    return 'projects/%s' % project


def region_path(region):
    return 'regions/%s' % region


def machine_type_path(zone, machine_type):
    return 'zones/%s/machineTypes/%s' % (zone, machine_type)


def disk_type_path(zone, disk_type):
    return 'zones/%s/diskTypes/%s' % (zone, disk_type)


def image_family_path(project, family):
    return 'projects/%s/global/images/family/%s' % (project, family)


def reservation_path(zone, name, project=None):
    """A reservation of this project, or with ``project`` one another project shares."""
    return '%szones/%s/reservations/%s' % ('projects/%s/' % project if project else '', zone, name)


def networks_path():
    return 'global/networks'


def network_path(name, project=None):
    """A network of this project, or with ``project`` the full form that request bodies of other resources carry."""
    return '%s%s/%s' % ('projects/%s/' % project if project else '', networks_path(), name)


def network_profile_path(profile):
    return 'global/networkProfiles/%s' % profile


def subnetworks_path(region):
    return 'regions/%s/subnetworks' % region


def subnetwork_path(region, name):
    return '%s/%s' % (subnetworks_path(region), name)


def firewalls_path():
    return 'global/firewalls'


def resource_policies_path(region):
    return 'regions/%s/resourcePolicies' % region


def resource_policy_path(region, name):
    return '%s/%s' % (resource_policies_path(region), name)


def instances_path(zone):
    return 'zones/%s/instances' % zone


def instance_path(zone, name):
    return '%s/%s' % (instances_path(zone), name)


def zone_operations_path(zone):
    return 'zones/%s/operations' % zone


def operation_path(operation):
    """The path of an operation, from its zone, region or neither (global)."""
    if operation.get('zone'):
        return '%s/%s' % (zone_operations_path(resource_name(operation['zone'])), operation['name'])
    if operation.get('region'):
        return 'regions/%s/operations/%s' % (resource_name(operation['region']), operation['name'])
    return 'global/operations/%s' % operation['name']


def aggregated_path(collection):
    return 'aggregated/%s' % collection


# At most this many names in one list filter (about 20 characters each in the URL).
NAME_FILTER_LIMIT = 200


class ComputeClient(ApiClient):
    """Compute Engine v1. Paths are relative to ``projects/PROJECT/`` unless they are full URLs."""

    def __init__(self, transport, project, base_url=COMPUTE_DEFAULT_ENDPOINT):
        super().__init__(transport, project, base_url)

    def call(self, method, path, action, body=None, params=None):
        """One API call; a mutating call gets a requestId that every retry repeats."""
        return self.transport.request(method, self.url(path), action, params=params, body=body, request_id=True)

    def pages(self, path, action, params=None):
        """The raw pages of a list call, following nextPageToken."""
        params = dict(params or {})
        while True:
            page = self.transport.request('GET', self.url(path), action, params=params)
            yield page
            if not page.get('nextPageToken'):
                return
            params['pageToken'] = page['nextPageToken']

    def list(self, path, action=None, params=None):
        """Every item of a list call, following nextPageToken."""
        for page in self.pages(path, action or 'list %s' % path, params):
            yield from page.get('items', [])

    def aggregated_pages(self, collection, action=None, params=None):
        """The raw pages of an aggregatedList call (for callers that keep pages, such as the
        inventory's cache, or read ``unreachables``)."""
        params = dict(params or {})
        params.setdefault('returnPartialSuccess', 'true')
        return self.pages(aggregated_path(collection), action or 'list %s in every scope' % collection, params)

    def aggregated_list(self, collection, action=None, params=None):
        """(scope, item) pairs of an aggregatedList call, e.g. ('zones/us-central1-a', instance)."""
        for page in self.aggregated_pages(collection, action, params):
            for scope, scoped in sorted(page.get('items', {}).items()):
                for item in scoped.get(collection, []) or []:
                    yield scope, item

    def wait(self, operation, action, timeout=600.0, progress=None):
        """Block until the operation is DONE, using the API's own wait method; raise its error if any."""
        return await_with_wait_method(self.transport, self.url(operation_path(operation) + '/wait'), operation, action, timeout,
                                      progress)

    def run(self, method, path, action, body=None, params=None, timeout=600.0):
        """call() and wait() together: the finished operation, or a GcpError naming the resource."""
        return self.wait(self.call(method, path, action, body=body, params=params), action, timeout=timeout)

    def bulk_insert(self, zone, body, timeout=600.0):
        """One instances.bulkInsert of named VMs (perInstanceProperties), awaited: ([names created], {name: GcpError}).

        As gcloud's bulk create does, the VMs made are read from the zone's operations of the bulk operation's
        operationGroupId: a DONE insert without error is a VM created, an insert with an error is that VM's error, and a
        name with no insert is a shortfall (GcpShortfall). A refusal or a failed bulk operation is every VM's error."""
        names = list(body['perInstanceProperties'])
        action = 'create %d instances in %s (bulkInsert)' % (len(names), zone)
        try:
            operation = self.run('POST', instances_path(zone) + '/bulkInsert', action, body=body, timeout=timeout)
        except GcpError as exc:
            return [], {name: exc for name in names}
        query = {'filter': 'operationGroupId = "%s"' % operation.get('operationGroupId')}
        group = self.list(zone_operations_path(zone), 'list operations of %s' % action, params=query)
        inserts = {resource_name(item.get('targetLink')): item for item in group if item.get('operationType') == 'insert'}
        created, failed = [], {}
        made = sum(1 for insert in inserts.values() if not insert.get('error'))
        for name in names:
            insert = inserts.get(name)
            if insert is not None and insert.get('error'):
                failed[name] = error_from_operation("create instance '%s' in %s" % (name, zone), insert)
            elif insert is not None:
                created.append(name)
            else:
                failed[name] = GcpShortfall("create instance '%s' in %s" % (name, zone), 'bulkInsert operation %s created %d of the %d VMs '
                                            'asked; Compute Engine creates fewer only when the zone lacks capacity or quota'
                                            % (operation.get('name'), made, len(names)))
        return created, failed

    def instances_by_name(self, names):
        """{name: instance} for the named VMs that exist in any zone: one aggregatedList with a name filter."""
        wanted = set(names)
        if not wanted:
            return {}
        # A filter naming every VM keeps the answer small; past a few hundred names the URL would outgrow what the
        # API takes (HTTP 414), so a large group reads every VM of the project and keeps its own.
        query = {'filter': 'name eq "(%s)"' % '|'.join(sorted(wanted))} if len(wanted) <= NAME_FILTER_LIMIT else None
        return {instance['name']: instance for _scope, instance in self.aggregated_list('instances', 'list instances', params=query)
                if instance['name'] in wanted}

    def instance_names_labelled(self, key, value):
        """Names of the project's VMs, in any zone, whose label ``key`` is ``value``: one aggregatedList with a filter."""
        query = {'filter': 'labels.%s = "%s"' % (key, value)}
        found = self.aggregated_list('instances', 'list instances labelled %s=%s' % (key, value), params=query)
        return [instance['name'] for _scope, instance in found]

    def wait_for_instances(self, names, targets, timeout):
        """Poll (one aggregatedList a round, with backoff) until each VM of targets ({name: status}) has its status.

        Returns ({name: instance} of every name, [names still late at the deadline]); a VM not in targets is only read."""
        def late(current):
            return [name for name, status in targets.items() if current.get(name, {}).get('status') != status]
        report = WaitReport('VMs %s' % ', '.join(sorted(targets)), describe=lambda current: '%d of %d at %s' % (
            len(targets) - len(late(current)), len(targets), '/'.join(sorted(set(targets.values())))))
        current, _done = until(lambda: self.instances_by_name(names), lambda current: not late(current), timeout,
                               RetryPolicy(initial_delay=1.0, max_delay=10.0).delays(), sleep=self.transport.sleep, report=report)
        return current, late(current)

    def delete(self, path, action, timeout=600.0):
        """Delete and wait; False when there was nothing to delete."""
        try:
            self.run('DELETE', path, action, timeout=timeout)
        except GcpError as exc:
            if exc.not_found:
                return False
            raise
        return True
