"""The built-in defaults the seeds' workloads need, from pkg/apis/core/v1/defaults.go and
pkg/apis/apps/v1/defaults.go / batch/v1/defaults.go (the real API sets many more; see README).
``kubectl rollout status ds`` needs ``spec.updateStrategy.type: RollingUpdate``, set by SetDefaults_DaemonSet.
"""


def _pod_spec(spec):
    spec.setdefault('restartPolicy', 'Always')
    spec.setdefault('terminationGracePeriodSeconds', 30)
    spec.setdefault('dnsPolicy', 'ClusterFirst')
    spec.setdefault('securityContext', {})
    spec.setdefault('schedulerName', 'default-scheduler')
    for container in (spec.get('containers') or []) + (spec.get('initContainers') or []):
        if not isinstance(container, dict):
            continue
        image = container.get('image') or ''
        tag = image.rsplit('/', 1)[-1]
        if 'imagePullPolicy' not in container:
            container['imagePullPolicy'] = 'Always' if ':' not in tag and '@' not in tag or tag.endswith(':latest') \
                else 'IfNotPresent'
        container.setdefault('terminationMessagePath', '/dev/termination-log')
        container.setdefault('terminationMessagePolicy', 'File')
        container.setdefault('resources', {})
        for port in container.get('ports') or []:
            if isinstance(port, dict):
                port.setdefault('protocol', 'TCP')


def _pod(spec):
    """SetDefaults_Pod (pkg/apis/core/v1/defaults.go), which runs on a Pod and not on a Pod template: a container's
    (or init container's) limits default its missing requests, key by key; enableServiceLinks defaults to true; with
    hostNetwork every port's hostPort defaults to its containerPort. Not done: the resizePolicy defaults that the
    InPlacePodVerticalScaling feature gate adds."""
    for container in (spec.get('containers') or []) + (spec.get('initContainers') or []):
        if not isinstance(container, dict):
            continue
        resources = container.get('resources') or {}
        if isinstance(resources.get('limits'), dict):
            requests = resources.setdefault('requests', {})
            for name, quantity in resources['limits'].items():
                requests.setdefault(name, quantity)
        if spec.get('hostNetwork'):
            for port in container.get('ports') or []:
                if isinstance(port, dict) and not port.get('hostPort') and 'containerPort' in port:
                    port['hostPort'] = port['containerPort']
    spec.setdefault('enableServiceLinks', True)


def _template(obj):
    template = (obj.get('spec') or {}).get('template')
    if isinstance(template, dict) and isinstance(template.get('spec'), dict):
        _pod_spec(template['spec'])


def apply_defaults(resource, obj):
    """Set the defaults of the kinds below in place (idempotent)."""
    if resource.crd or not isinstance(obj.get('spec'), dict) and resource.kind != 'Namespace':
        return
    spec = obj.get('spec')
    kind = resource.kind
    if kind == 'Pod':
        _pod_spec(spec)
        _pod(spec)
    elif kind == 'DaemonSet':
        strategy = spec.setdefault('updateStrategy', {})
        strategy.setdefault('type', 'RollingUpdate')
        if strategy['type'] == 'RollingUpdate':
            rolling = strategy.setdefault('rollingUpdate', {})
            rolling.setdefault('maxUnavailable', 1)
            rolling.setdefault('maxSurge', 0)
        spec.setdefault('revisionHistoryLimit', 10)
        _template(obj)
    elif kind == 'Deployment':
        spec.setdefault('replicas', 1)
        strategy = spec.setdefault('strategy', {})
        strategy.setdefault('type', 'RollingUpdate')
        if strategy['type'] == 'RollingUpdate':
            rolling = strategy.setdefault('rollingUpdate', {})
            rolling.setdefault('maxUnavailable', '25%')
            rolling.setdefault('maxSurge', '25%')
        spec.setdefault('revisionHistoryLimit', 10)
        spec.setdefault('progressDeadlineSeconds', 600)
        _template(obj)
    elif kind in ('StatefulSet', 'ReplicaSet'):
        spec.setdefault('replicas', 1)
        _template(obj)
    elif kind == 'Job':
        spec.setdefault('backoffLimit', 6)
        spec.setdefault('completions', spec.get('parallelism', 1) if 'completions' not in spec else spec['completions'])
        spec.setdefault('parallelism', 1)
        spec.setdefault('completionMode', 'NonIndexed')
        spec.setdefault('suspend', False)
        _template(obj)
    elif kind == 'Namespace':
        obj.setdefault('spec', {}).setdefault('finalizers', ['kubernetes'])
        obj.setdefault('status', {}).setdefault('phase', 'Active')
        obj['metadata'].setdefault('labels', {})['kubernetes.io/metadata.name'] = obj['metadata']['name']
