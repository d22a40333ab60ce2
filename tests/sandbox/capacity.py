"""Zone capacity: how many more VMs of a machine type a zone can take, as a test sets it.

Google does not publish free capacity; a request finds out. In the real API a zone without room
for an ``instances.insert`` fails the insert's operation with ``ZONE_RESOURCE_POOL_EXHAUSTED``
(HTTP 503 in the operation), and ``instances.bulkInsert`` checks capacity before it starts: when the
zone cannot take ``minCount`` VMs it refuses at once with HTTP 503 reason ``insufficientCapacity``
("Troubleshooting bulk creation of VMs",
https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-bulk-vm-creation, and the
"Upfront validation: with capacity and quota" row of "About bulk creation of VMs",
https://cloud.google.com/compute/docs/instances/multiple/about-bulk-creation).

The sandbox models room as a number per (zone, machine type), unlimited unless a test sets one
(``Sandbox.set_capacity(zone, machine_type, free)``); every VM created takes one, and a deleted VM
gives none back (capacity elsewhere is not freed for you either). The operation-error faults of
faults.py stay for failures that do not depend on the zone's state.
"""

from .errors import ApiError
from .operations import no_room_message


def room(call, zone, machine_type):
    """How many more VMs of machine_type the zone takes (None: unlimited)."""
    return call.sandbox.capacity.get((zone, machine_type))


def take(call, zone, machine_type, count=1):
    free = room(call, zone, machine_type)
    if free is not None:
        call.sandbox.capacity[(zone, machine_type)] = max(0, free - count)


def insufficient_capacity(scope_path):
    """bulkInsert's upfront refusal: 503, reason insufficientCapacity (troubleshooting page above); the message
    is the one GCE gives ZONE_RESOURCE_POOL_EXHAUSTED."""
    return ApiError(503, 'insufficientCapacity', no_room_message(scope_path))
