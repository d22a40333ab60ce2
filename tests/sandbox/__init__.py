"""A local stand-in for the Compute Engine v1 and Kubernetes Engine v1 REST APIs, for tests.

It serves the real URLs (routed from the discovery documents in google-api-python-client), checks
every request body against the real schemas, enforces the API's documented rules for A3/A4 VMs and
networks (``rules.py``), runs long-running operations with a configurable latency, injects faults,
de-duplicates ``requestId`` and logs every request.  The real gcloud CLI runs against it.

Interface::

    from sandbox import Sandbox
    sb = Sandbox(latency=0.0, seed=0, state_file=None)   # also project=, verbose=, wait_timeout=
    sb.start()                      # binds 127.0.0.1:0 (ephemeral port), serves in a thread
    sb.url                          # 'http://127.0.0.1:PORT'
    sb.compute_url                  # sb.url + '/compute/v1/'   (beta/ and alpha/ are served too)
    sb.container_url                # sb.url + '/'              (v1/ and v1beta1/)
    sb.inject_fault(method='compute.instances.insert', kind='http_503', rate=0.3)  # or count=2
    sb.clear_faults()
    sb.request_log()                # [{method, path, status, body, api_method, fault}, ...]
    sb.resources('compute.instances')   # stored resources of a collection, as dicts
    sb.set_quota('NVIDIA_H100_GPUS', 16, project='p', region='us-central1')   # or NETWORKS, ...; None: unlimited
    sb.clear_quotas()               # back to the defaults (NETWORKS 15 per project, GPUs unlimited)
    sb.set_capacity('us-central1-a', 'a3-megagpu-8g', 5)   # the zone takes 5 more such VMs (capacity.py); None: unlimited
    sb.clear_capacity()
    sb.reset()                      # clears state and log (faults and quotas stay)
    sb.latency = 2.0                # operations stay RUNNING this long
    sb.operation_latency['CREATE_CLUSTER'] = 300.0   # a Container operation type's own latency
    sb.operation_latency['compute.instances.bulkInsert'] = 5.0   # every operation one Compute request starts
    sb.stop()

Collections for ``resources``: compute.networks, compute.subnetworks, compute.firewalls,
compute.instances, compute.reservations, compute.resourcePolicies, compute.operations,
container.clusters, container.nodePools, container.operations.  ``sb.state`` is the underlying
``Store`` (``sb.state.lock`` guards it).

Fault kinds: http_429, http_500, http_503, reset, ZONE_RESOURCE_POOL_EXHAUSTED, QUOTA_EXCEEDED
(see ``faults.py``).  Control endpoints over HTTP: ``GET /_sandbox/requests``,
``POST /_sandbox/reset``, ``POST /_sandbox/faults`` ({method, kind, rate|count, retry_after}),
``DELETE /_sandbox/faults``, ``GET /_sandbox/quotas``, ``POST /_sandbox/quotas`` ({metric, limit, project,
region}), ``DELETE /_sandbox/quotas``, ``GET /_sandbox/state``.  Quotas refuse with a synchronous 403
``quotaExceeded`` (see ``quotas.py``).

Locations (regions, zones, auto-mode ranges, zones of each A3/A4 machine type) come from
``data/locations.json``, which names its sources.

Modules: server (HTTP, dispatch, log, controls), batch (Google's multipart batch endpoint),
discovery (routes from the discovery documents), validation (schema checks), faults, store (state,
state file), operations, registry, compute (catalog endpoints, operations, CRUD scaffolding, list
filters, network profiles), networking, instances, bulk (instances.bulkInsert), capacity (zone room), rules (each rule with its source), quotas,
container, serviceusage, catalog (zones, machine types, images, GKE versions), errors; for tests: client (stdlib JSON client with ``create_vpc``) and
gcloud (the real gcloud CLI pointed at a sandbox).
"""

from .server import Sandbox

__all__ = ['Sandbox']
