# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container (GKE) v1: the paths of its resources, and the client that calls it (a create that meets its own lost
first attempt, one operation at a time per cluster, operations polled)."""

from __future__ import annotations

import re
import time

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError, GcpTimeout, busy_operation
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.operations import await_polled
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import CONTAINER_DEFAULT_ENDPOINT, ApiClient, join

# Every Container path of the collection is built by one of these, and only here: relative to
# projects/PROJECT/locations/ (ContainerClient.url). A target is a resource's path within its location, which is how
# an operation's targetLink ends.


def cluster_target(cluster):
    return 'clusters/%s' % cluster


def node_pool_target(cluster, pool):
    return '%s/nodePools/%s' % (cluster_target(cluster), pool)


def clusters_path(location):
    return '%s/clusters' % location


def cluster_path(location, cluster):
    return '%s/%s' % (location, cluster_target(cluster))


def node_pools_path(location, cluster):
    return '%s/nodePools' % cluster_path(location, cluster)


def node_pool_path(location, cluster, pool):
    return '%s/%s' % (location, node_pool_target(cluster, pool))


def server_config_path(location):
    return '%s/serverConfig' % location


def operations_path(location):
    return '%s/operations' % location


def operation_path(location, name):
    return '%s/%s' % (operations_path(location), name)


class ContainerClient(ApiClient):
    """Container (GKE) v1. Paths are relative to ``projects/PROJECT/locations/``.

    The Container API has no requestId, so a create whose connection dropped may have been
    applied: a retry that then meets 409 looks for the operation the first attempt started.
    """

    SCOPE = 'locations/'

    def __init__(self, transport, project, base_url=CONTAINER_DEFAULT_ENDPOINT, version='v1'):
        super().__init__(transport, project, join(base_url, version + '/'))

    def call(self, method, path, action, body=None, params=None):
        return self.transport.request(method, self.url(path), action, params=params, body=body)

    def list(self, path, key, action=None):
        """Every item of a list call (Container lists are not paginated except operations)."""
        return list(self.transport.request('GET', self.url(path), action or 'list %s' % path).get(key, []))

    def create(self, path, body, target, action):
        """POST a create and return its operation.

        Callers create only what they found missing, so a 409 means the resource appeared since:
        most often our own earlier attempt, whose response a dropped connection lost. Then the
        newest operation on that target is the one to await.
        """
        try:
            return self.call('POST', path, action, body=body)
        except GcpError as exc:
            if exc.status != 409:
                raise
            mine = self.newest_operation(path.split('/', 1)[0], target, action)
            if mine is None:
                raise
            return mine

    def newest_operation(self, location, target, action, running=False):
        """The newest operation of ``location`` on ``target`` (``clusters/C`` or ``clusters/C/nodePools/P``), only
        among those not DONE with ``running``, or None."""
        mine = [operation for operation in self.list(operations_path(location), 'operations', action)
                if (operation.get('targetLink') or '').endswith('/' + target) and not (running and operation.get('status') == 'DONE')]
        return max(mine, key=lambda operation: operation.get('startTime', ''), default=None)

    def wait(self, operation, action, timeout=1800.0, progress=None, poll=None):
        """Poll the operation (``poll``: ProportionalPoll by default) until DONE; raise its error if any."""
        return await_polled(self.transport, self.url(operation_path(_location_of(operation), operation['name'])), operation,
                            action, timeout, progress, poll)

    def run(self, method, path, action, body=None, timeout=1800.0, progress=None, poll=None, target=None, wait=True):
        """One mutating call and its operation, awaited: the finished operation, or a GcpError. With ``wait=False``
        the operation as GKE accepted it, not awaited.

        ``target`` (``clusters/C`` or ``clusters/C/nodePools/P``) marks a create: it goes through
        create(), so a 409 from our own lost first attempt awaits that attempt's operation.

        GKE runs one operation at a time per cluster; another call meanwhile gets 400
        FAILED_PRECONDITION "Operation operation-... is currently ... Please wait and try again once
        it is done." (terraform-provider-google #10366). Then the blocking operation is awaited
        (its own outcome is not ours to report) and the call is sent again, within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                if target is not None:
                    operation = self.create(path, body, target, action)
                else:
                    operation = self.call(method, path, action, body=body)
            except GcpError as exc:
                blocking = busy_operation(exc)
                if blocking is None:
                    raise
                if progress:
                    progress({'name': blocking, 'status': 'RUNNING', 'detail': 'another operation on the cluster; waiting before: %s' % action})
                try:
                    self.wait({'name': blocking, 'location': path.split('/', 1)[0], 'status': 'RUNNING'},
                              'await %s before: %s' % (blocking, action), timeout=max(1.0, deadline - time.monotonic()),
                              progress=progress, poll=poll)
                except GcpTimeout:
                    raise
                except GcpError:
                    pass   # the other operation failed: that is its caller's news, ours is to retry
                continue
            if progress:
                progress(operation)
            if not wait:
                return operation
            return self.wait(operation, action, timeout=max(1.0, deadline - time.monotonic()), progress=progress, poll=poll)


def _location_of(operation):
    """The location of a Container operation from its selfLink, zone or location field."""
    match = re.search(r'/(?:locations|zones)/([^/]+)/operations/', operation.get('selfLink') or '')
    if match:
        return match.group(1)
    return operation.get('location') or operation.get('zone')
