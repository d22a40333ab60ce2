# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUDirect for a user's workload: what the GKE GPUDirect-TCPX/TCPXO guide's "Add GPUDirect to your manifests" (TCPX / TCPXO)
and the GKE GPUDirect RDMA guide's test Pods (RDMA with DRANET) ask users to add by hand, done on a Pod, Deployment,
StatefulSet, Job, CronJob or JobSet.

Rules: the result of a second run equals the first (idempotent); what the workload already sets is
kept when it agrees and refused when it conflicts (never silently overwritten); one Pod uses all
GPUs of a node (Google's GKE GPUDirect-TCPX/TCPXO guide "Limitations"), so GPU requests other than the node's count are refused.
"""

from __future__ import annotations

import copy

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.families import GKE
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.gke import (
    GKE_RDMA, GKE_SHARED_MEMORY, gke_pod_annotations, gke_stack, nccl_env,
)
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog.host_stacks import version_pair
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s.render import _technology, check_image, gke_family
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError

GPU_RESOURCE = 'nvidia.com/gpu'
RDMA_CLAIM_NAME = 'rdma'
# the GKE GPUDirect RDMA guide's test Pods name their claim reference ``rdma`` (resourceClaims[].name, resources.claims[].name).
NCCL_ENV_CHOICES = ('required', 'recommended', 'profile', 'none')


def pod_templates(obj):
    """The pod specs' owners (dicts with ``metadata`` and ``spec``) inside a workload, with their paths."""
    kind = obj.get('kind')
    spec = obj.get('spec') or {}
    if kind == 'Pod':
        return [('', obj)]
    if kind in ('Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'):
        return [('spec.template', spec.setdefault('template', {}))]
    if kind == 'CronJob':
        return [('spec.jobTemplate.spec.template', spec.setdefault('jobTemplate', {}).setdefault('spec', {}).setdefault('template', {}))]
    if kind == 'JobSet':
        jobs = spec.get('replicatedJobs') or []
        if not jobs:
            raise InputError('workload: JobSet %s has no spec.replicatedJobs' % _name(obj))
        return [('spec.replicatedJobs[%s].template.spec.template' % job.get('name', i),
                 job.setdefault('template', {}).setdefault('spec', {}).setdefault('template', {})) for i, job in enumerate(jobs)]
    raise InputError('workload: kind %r cannot carry GPUDirect; give a Pod, Deployment, StatefulSet, Job, CronJob or JobSet' % kind)


# Workloads that complete: their Pods must end when the application ends, which a daemon container would keep running.
# GoogleCloudPlatform/container-engine-accelerators, gpudirect-tcpxo/best-practice.md ("Automatic Sidecar Termination"): the
# daemon goes in as a native sidecar (an init container with restartPolicy Always; on by default from GKE minor 1.29), which
# the kubelet stops once the main containers have exited. Long-running kinds keep it as a container, as the guide's
# manifests have it (and as GKE minors before 1.29 need).
COMPLETING_KINDS = ('Job', 'CronJob', 'JobSet')


def _name(obj):
    return '%s/%s' % (obj.get('kind'), (obj.get('metadata') or {}).get('name'))


def _merge_named(items, wanted, where, key='name'):
    """Add ``wanted`` to ``items`` (a list of dicts with ``key``); an item of that name must be equal."""
    for item in items:
        if item.get(key) == wanted[key]:
            if item != wanted:
                raise InputError('%s: %s %r already exists and differs from what GPUDirect needs (%r); remove it or make it equal'
                                 % (where, key, wanted[key], wanted))
            return
    items.append(copy.deepcopy(wanted))


def _gpu_containers(pod_spec, where, gpus, skip):
    containers = [c for c in pod_spec.get('containers') or [] if c.get('name') not in skip]
    if not containers:
        raise InputError('%s.containers: no container to run the GPU workload' % where)
    asking = [c for c in containers if _gpu_count(c) is not None]
    if not asking:
        if len(containers) > 1:
            raise InputError('%s.containers: several containers and none requests %s; set resources.limits[%s] on the GPU '
                             'containers (all %d GPUs of the node in all)' % (where, GPU_RESOURCE, GPU_RESOURCE, gpus))
        containers[0].setdefault('resources', {}).setdefault('limits', {})[GPU_RESOURCE] = gpus
        asking = containers
    total = sum(_gpu_count(c) for c in asking)
    if total != gpus:
        raise InputError('%s.containers: the GPU containers request %d %s; GPUDirect needs one Pod per node using all %d GPUs '
                         'and all NICs of the node (Google\'s GKE GPUDirect-TCPX/TCPXO guide, "Limitations"); request %d'
                         % (where, total, GPU_RESOURCE, gpus, gpus))
    return asking


def _gpu_count(container):
    resources = container.get('resources') or {}
    for part in ('limits', 'requests'):
        value = (resources.get(part) or {}).get(GPU_RESOURCE)
        if value is not None:
            try:
                return int(value)
            except (TypeError, ValueError):
                raise InputError('containers[%s].resources.%s[%s]: %r is not a whole number' % (container.get('name'), part, GPU_RESOURCE, value)) from None
    return None


def _add_env(container, pairs, where):
    env = container.setdefault('env', [])
    names = {item.get('name') for item in env}
    for name, value in pairs:
        if name not in names:
            env.append({'name': name, 'value': value})
            names.add(name)


def _add_mounts(container, mounts):
    existing = container.setdefault('volumeMounts', [])
    paths = {m.get('mountPath') for m in existing}
    for mount in mounts:
        if mount['mountPath'] not in paths:
            existing.append(mount)


def _refuse_host_network(pod_spec, where):
    if pod_spec.get('hostNetwork'):
        raise InputError('%s.hostNetwork: true; GPUDirect on GKE gives the Pod its NICs through multi-networking or DRANET, '
                         'remove hostNetwork' % where)


def _shared_memory(size_limit=None):
    name, mount_path, medium = GKE_SHARED_MEMORY
    empty_dir = {'medium': medium}
    if size_limit:
        empty_dir['sizeLimit'] = size_limit
    return {'name': name, 'emptyDir': empty_dir}, {'name': name, 'mountPath': mount_path}


def _tcpx_env(technology, mode):
    """The GPU containers' env: the GKE GPUDirect-TCPX/TCPXO guide's per-container pair(s), then the NCCL set of ``mode``. Kubernetes
    env cannot append to a variable, so nccl_env's shell expression ``${LD_LIBRARY_PATH}:...`` is left
    to the per-container LD_LIBRARY_PATH the seed gives."""
    stack = gke_stack(technology)
    pairs = list(stack.gpu_container_env)
    if mode in ('required', 'recommended'):
        pairs += [(k, v) for k, v in nccl_env(technology, debug=mode == 'recommended').items() if '${' not in v]
    elif mode == 'profile':
        if stack.nccl_env_profile is None:
            raise InputError('nccl_env: profile is a GPUDirect-TCPXO option (nccl-env-profile.sh); for %s choose one of: '
                             'required, recommended, none' % technology)
        pairs.append(stack.nccl_env_profile[:2])
    return pairs


def gpudirect_workload(obj, technology, nccl_env_mode='required', daemon_image=None, shared_memory_limit=None):
    """Return a copy of ``obj`` with GPUDirect-TCPX / TCPXO (Google's GKE GPUDirect-TCPX/TCPXO guide): annotations, the RxDM sidecar
    (tcpx-daemon / tcpxo-daemon; a native sidecar in a Job, CronJob or JobSet, so that it completes: COMPLETING_KINDS),
    volumes and mounts, /dev/shm, GPU requests and the NCCL env."""
    tech = _technology(technology, ('TCPXO', 'TCPX'))
    if nccl_env_mode not in NCCL_ENV_CHOICES:
        raise InputError('nccl_env: %r; choose one of: %s' % (nccl_env_mode, ', '.join(NCCL_ENV_CHOICES)))
    stack = gke_stack(tech)
    gpus = gke_family(tech).gpu_count
    result = copy.deepcopy(obj)
    volumes = [{'name': name, 'emptyDir': {}} if path is None else {'name': name, 'hostPath': {'path': path}} for name, path in stack.volumes]
    shm_volume, shm_mount = _shared_memory(shared_memory_limit)
    image = check_image(daemon_image, 'daemon_image') if daemon_image else version_pair(tech, platform=GKE).rxdm_image
    daemon = {
        'name': stack.daemon_container, 'image': image, 'imagePullPolicy': 'Always',
        'command': list(stack.daemon_command),
        'securityContext': {'capabilities': {'add': list(stack.daemon_capabilities)}},
        'volumeMounts': [{'name': n, 'mountPath': p, **({'readOnly': True} if ro else {})} for n, p, ro in stack.daemon_mounts],
        'env': [{'name': k, 'value': v} for k, v in stack.daemon_env],
    }
    if stack.daemon_args:
        daemon['args'] = list(stack.daemon_args)
    for where, template in pod_templates(result):
        where = where or 'spec'
        metadata = template.setdefault('metadata', {})
        pod_spec = template.setdefault('spec', {})
        _refuse_host_network(pod_spec, where)
        annotations = metadata.setdefault('annotations', {})
        for key, value in gke_pod_annotations(tech).items():
            if annotations.get(key, value) != value:
                raise InputError('%s.metadata.annotations[%s]: already set to another value; GPUDirect-%s needs %r; remove it'
                                 % (where or 'metadata', key, tech, value))
            annotations[key] = value
        gpu_containers = _gpu_containers(pod_spec, where, gpus, skip=(stack.daemon_container,))
        if result.get('kind') in COMPLETING_KINDS:
            _merge_named(pod_spec.setdefault('initContainers', []), dict(daemon, restartPolicy='Always'), where + '.initContainers')
        else:
            _merge_named(pod_spec.setdefault('containers', []), daemon, where + '.containers')
        for volume in volumes + [shm_volume]:
            _merge_named(pod_spec.setdefault('volumes', []), volume, where + '.volumes')
        mounts = [{'name': n, 'mountPath': p, **({'readOnly': True} if ro else {})} for n, p, ro in stack.gpu_container_mounts]
        for container in gpu_containers:
            _add_env(container, _tcpx_env(tech, nccl_env_mode), where)
            _add_mounts(container, _socket_mounts(stack, container, mounts, where) + [shm_mount])
    return result


def _socket_mounts(stack, container, mounts, where):
    """``mounts`` with the daemon's socket volume moved to the path the container's env names (seed 003: TCPX's
    NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX other than /tmp moves the tcpx-socket mount there)."""
    if stack.gpu_socket_prefix is None:
        return mounts
    variable, volume = stack.gpu_socket_prefix
    prefix = next((item.get('value') for item in container.get('env') or [] if item.get('name') == variable), None)
    if prefix is None:
        return mounts
    if not str(prefix).startswith('/'):
        raise InputError('%s.containers[%s].env[%s]: %r is not an absolute path; the %s volume is mounted at it, give one such as /tmp'
                         % (where, container.get('name'), variable, prefix, volume))
    return [dict(mount, mountPath=str(prefix).rstrip('/') or '/') if mount['name'] == volume else mount for mount in mounts]


def rdma_workload(obj, claim_template=None, shared_memory_limit=None):
    """Return a copy of ``obj`` with GPUDirect-RDMA through DRANET (the GKE GPUDirect RDMA guide's test Pods): the claim of
    the ResourceClaimTemplate (``all-mrdma``), GPU requests, the host's NVIDIA and gIB directories,
    /dev/shm and LD_LIBRARY_PATH. NCCL's RDMA settings come from the gIB image's script, which the
    workload's command sources (``GKE_RDMA['nccl_env_script']``)."""
    template_name = claim_template or GKE_RDMA['resource_claim_template']
    result = copy.deepcopy(obj)
    size = shared_memory_limit or dict(GKE_RDMA['shared_memory'])['sizeLimit']
    for where, template in pod_templates(result):
        where = where or 'spec'
        metadata = template.setdefault('metadata', {})
        pod_spec = template.setdefault('spec', {})
        _refuse_host_network(pod_spec, where)
        if 'networking.gke.io/interfaces' in (metadata.get('annotations') or {}):
            raise InputError('%s.metadata.annotations[networking.gke.io/interfaces]: the multi-network API and DRANET cannot '
                             'share a node pool (Google\'s GKE GPUDirect RDMA guide); remove the annotation or use the manual multi-network path' % where)
        gpu_containers = _gpu_containers(pod_spec, where, 8, skip=())
        _merge_named(pod_spec.setdefault('resourceClaims', []), {'name': RDMA_CLAIM_NAME, 'resourceClaimTemplateName': template_name},
                     where + '.resourceClaims')
        mounts = []
        for name, host_path, mount_path in GKE_RDMA['volumes']:
            if host_path is None:
                volume, mount = _shared_memory(size)
            else:
                volume, mount = {'name': name, 'hostPath': {'path': host_path}}, {'name': name, 'mountPath': mount_path}
            _merge_named(pod_spec.setdefault('volumes', []), volume, where + '.volumes')
            mounts.append(mount)
        for container in gpu_containers:
            claims = container.setdefault('resources', {}).setdefault('claims', [])
            _merge_named(claims, {'name': RDMA_CLAIM_NAME}, where + '.containers[%s].resources.claims' % container.get('name'))
            _add_env(container, GKE_RDMA['workload_env'], where)
            _add_mounts(container, mounts)
    return result
