"""Project quotas the sandbox enforces when a request arrives, as the real API does.

The real API refuses a request that would exceed a quota with a synchronous 403 ``quotaExceeded``
(domain ``usageLimits``): "Quota 'NETWORKS' exceeded. Limit: 5.0 globally." (trailofbits/algo#1520)
and, per region, "Quota 'CPUS' exceeded. Limit: 24.0 in region us-central1." (the shape gcloud prints
as "Could not fetch resource: - Quota ... exceeded").  Two quotas are enforced:

- ``NETWORKS`` (global, per project): 15 by default, the documented default of the VPC quotas page
  (https://cloud.google.com/vpc/docs/quota#per_project);
- GPUs per region, one metric per GPU model as GCE names them (``NVIDIA_H100_GPUS``,
  ``NVIDIA_H100_MEGA_GPUS``, ``NVIDIA_H200_GPUS``, ``NVIDIA_B200_GPUS``; ``PREEMPTIBLE_`` prefix for
  Spot and preemptible VMs; https://cloud.google.com/compute/resource-usage#gpu_quota): unlimited
  unless a test sets a limit (new real projects start at 0, which would make every GPU test a quota test).

Limits are set per project (or for every project) with ``Sandbox.set_quota(metric, limit,
project=None, region=None)`` or ``POST /_sandbox/quotas`` ``{metric, limit, project, region}``;
``Sandbox.clear_quotas()`` / ``DELETE /_sandbox/quotas`` go back to the defaults.  ``projects.get`` and
``regions.get`` report the limits and the usage.  The QUOTA_EXCEEDED operation fault (faults.py) stays
for the other path, an operation that fails later.
"""

import re

from .errors import quota_exceeded

DEFAULT_LIMITS = {'NETWORKS': 15.0}
_STOPPED = ('TERMINATED', 'STOPPING', 'SUSPENDED')


def gpu_quota_metric(instance):
    """``nvidia-h100-mega-80gb`` -> ``NVIDIA_H100_MEGA_GPUS`` (``PREEMPTIBLE_...`` for Spot), or 'CPUS' without GPUs."""
    accelerators = instance.get('guestAccelerators')
    if not accelerators:
        return 'CPUS'
    metric = re.sub(r'_\d+GB$', '', accelerators[0]['acceleratorType'].rsplit('/', 1)[-1].upper().replace('-', '_')) + '_GPUS'
    scheduling = instance.get('scheduling') or {}
    if scheduling.get('provisioningModel') == 'SPOT' or scheduling.get('preemptible'):
        metric = 'PREEMPTIBLE_' + metric
    return metric


def gpu_count(instance):
    return sum(int(item.get('acceleratorCount', 0)) for item in instance.get('guestAccelerators') or [])


def network_usage(call):
    return len(call.store.items('compute.networks', 'projects/%s/global/networks/' % call.project))


def gpu_usage(call, region, metric):
    """GPUs of ``metric`` held by the project's running (not stopped) instances in ``region``."""
    total = 0
    for key, instance in call.store.items('compute.instances', 'projects/%s/zones/%s-' % (call.project, region)):
        if instance.get('status') not in _STOPPED and gpu_quota_metric(instance) == metric and key.split('/')[3].rsplit('-', 1)[0] == region:
            total += gpu_count(instance)
    return total


def check_network_quota(call):
    limit = call.sandbox.quota_limit(call.project, 'NETWORKS')
    if limit is not None and network_usage(call) + 1 > limit:
        raise quota_exceeded('NETWORKS', limit, 'globally')


def check_gpu_quota(call, region, new_instances):
    """Refuse ``new_instances`` (built, not stored) when their GPUs would pass the region's limit."""
    wanted = {}
    for instance in new_instances:
        if gpu_count(instance):
            metric = gpu_quota_metric(instance)
            wanted[metric] = wanted.get(metric, 0) + gpu_count(instance)
    for metric, count in wanted.items():
        limit = call.sandbox.quota_limit(call.project, metric, region)
        if limit is not None and gpu_usage(call, region, metric) + count > limit:
            raise quota_exceeded(metric, limit, 'in region %s' % region)


def project_quotas(sandbox, project, usage, region=None):
    """The ``quotas`` list of a project or region resource: every limit that applies, with its usage."""
    return [{'metric': metric, 'limit': limit, 'usage': float(usage(metric))}
            for metric, limit in sorted(sandbox.quota_limits(project, region).items())]
