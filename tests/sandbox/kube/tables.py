"""``as=Table`` answers (what ``kubectl get`` asks for), with the real columns for the kinds the seeds use.

Columns and cell rules follow kubernetes/kubernetes pkg/printers/internalversion/printers.go (built-in
kinds), apiextensions-apiserver's tableconvertor (custom resources: additionalPrinterColumns, else
Name and Age) and apiserver's default table convertor (Name, Created At) for everything else.  Rows
carry the object's metadata as PartialObjectMetadata (``includeObject=Metadata``, kubectl's default)
or the whole object with ``includeObject=Object``.
"""

import datetime
import re

TABLE_MEDIA = 'as=Table'
NAME = {'name': 'Name', 'type': 'string', 'format': 'name', 'description': 'Name must be unique within a namespace.',
        'priority': 0}
AGE = {'name': 'Age', 'type': 'string', 'format': '', 'description': 'CreationTimestamp is a timestamp representing the '
       'server time when this object was created.', 'priority': 0}


def column(name, kind='string', priority=0, description=''):
    return {'name': name, 'type': kind, 'format': '', 'description': description, 'priority': priority}


def age(obj):
    created = obj['metadata'].get('creationTimestamp')
    if not created:
        return '<unknown>'
    then = datetime.datetime.strptime(created, '%Y-%m-%dT%H:%M:%SZ').replace(tzinfo=datetime.timezone.utc)
    seconds = int((datetime.datetime.now(datetime.timezone.utc) - then).total_seconds())
    return human_duration(max(seconds, 0))


def human_duration(seconds):
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration (the common cases)."""
    if seconds < 120:
        return '%ds' % seconds
    minutes = seconds // 60
    if minutes < 10:
        return '%dm%ds' % (minutes, seconds % 60) if seconds % 60 else '%dm' % minutes
    if minutes < 180:
        return '%dm' % minutes
    hours = minutes // 60
    if hours < 8:
        return '%dh%dm' % (hours, minutes % 60) if minutes % 60 else '%dh' % hours
    if hours < 48:
        return '%dh' % hours
    days = hours // 24
    return '%dd%dh' % (days, hours % 24) if days < 8 and hours % 24 else '%dd' % days


def _containers(obj):
    return ((obj.get('spec') or {}).get('template') or {}).get('spec', {}).get('containers') or []


def _selector(obj):
    labels = ((obj.get('spec') or {}).get('selector') or {}).get('matchLabels') or {}
    return ','.join('%s=%s' % item for item in sorted(labels.items())) or '<none>'


def _node_selector(obj):
    selector = ((obj.get('spec') or {}).get('template') or {}).get('spec', {}).get('nodeSelector') or {}
    return ','.join('%s=%s' % item for item in sorted(selector.items())) or '<none>'


def _pod_row(pod):
    statuses = (pod.get('status') or {}).get('containerStatuses') or []
    containers = (pod.get('spec') or {}).get('containers') or []
    ready = sum(1 for status in statuses if status.get('ready'))
    restarts = sum(status.get('restartCount', 0) for status in statuses)
    reason = (pod.get('status') or {}).get('phase') or 'Pending'
    for status in statuses:
        waiting = (status.get('state') or {}).get('waiting')
        if waiting and waiting.get('reason'):
            reason = waiting['reason']
    if pod['metadata'].get('deletionTimestamp'):
        reason = 'Terminating'
    status = pod.get('status') or {}
    return ['%d/%d' % (ready, len(containers)), reason, restarts, None, status.get('podIP') or '<none>',
            (pod.get('spec') or {}).get('nodeName') or '<none>', status.get('nominatedNodeName') or '<none>', '<none>']


def _node_row(node):
    conditions = {c.get('type'): c.get('status') for c in (node.get('status') or {}).get('conditions') or []}
    status = 'Ready' if conditions.get('Ready') == 'True' else 'NotReady' if 'Ready' in conditions else 'Unknown'
    if (node.get('spec') or {}).get('unschedulable'):
        status += ',SchedulingDisabled'
    roles = sorted(key.split('/', 1)[1] for key in node['metadata'].get('labels') or {}
                   if key.startswith('node-role.kubernetes.io/'))
    info = (node.get('status') or {}).get('nodeInfo') or {}
    addresses = {a.get('type'): a.get('address') for a in (node.get('status') or {}).get('addresses') or []}
    return [status, ','.join(roles) or '<none>', None, info.get('kubeletVersion', ''), addresses.get('InternalIP', '<none>'),
            addresses.get('ExternalIP', '<none>'), info.get('osImage', '<unknown>'), info.get('kernelVersion', '<unknown>'),
            info.get('containerRuntimeVersion', '<unknown>')]


def _daemonset_row(ds):
    status = ds.get('status') or {}
    containers = _containers(ds)
    return [status.get('desiredNumberScheduled', 0), status.get('currentNumberScheduled', 0), status.get('numberReady', 0),
            status.get('updatedNumberScheduled', 0), status.get('numberAvailable', 0), _node_selector(ds), None,
            ','.join(c.get('name', '') for c in containers), ','.join(c.get('image', '') for c in containers), _selector(ds)]


def _deployment_row(deploy):
    status = deploy.get('status') or {}
    containers = _containers(deploy)
    return ['%d/%d' % (status.get('readyReplicas', 0), (deploy.get('spec') or {}).get('replicas', 1)),
            status.get('updatedReplicas', 0), status.get('availableReplicas', 0), None,
            ','.join(c.get('name', '') for c in containers), ','.join(c.get('image', '') for c in containers), _selector(deploy)]


def _service_row(service):
    spec = service.get('spec') or {}
    ports = ','.join('%s/%s' % (port.get('port'), port.get('protocol', 'TCP')) for port in spec.get('ports') or []) or '<none>'
    selector = ','.join('%s=%s' % item for item in sorted((spec.get('selector') or {}).items())) or '<none>'
    return [spec.get('type', 'ClusterIP'), spec.get('clusterIP') or '<none>', '<none>', ports, None, selector]


def _job_row(job):
    status = job.get('status') or {}
    conditions = {c.get('type'): c.get('status') for c in status.get('conditions') or []}
    state = 'Complete' if conditions.get('Complete') == 'True' else 'Failed' if conditions.get('Failed') == 'True' \
        else 'Suspended' if (job.get('spec') or {}).get('suspend') else 'Running'
    containers = _containers(job)
    return [state, '%d/%d' % (status.get('succeeded', 0), (job.get('spec') or {}).get('completions', 1)), '', None,
            ','.join(c.get('name', '') for c in containers), ','.join(c.get('image', '') for c in containers), _selector(job)]


WIDE_WORKLOAD = [column('Containers', priority=1), column('Images', priority=1), column('Selector', priority=1)]
PRINTERS = {
    ('', 'Pod'): ([NAME, column('Ready'), column('Status'), column('Restarts', 'string'), AGE, column('IP', priority=1),
                   column('Node', priority=1), column('Nominated Node', priority=1), column('Readiness Gates', priority=1)],
                  _pod_row),
    ('', 'Node'): ([NAME, column('Status'), column('Roles'), AGE, column('Version'), column('Internal-IP', priority=1),
                    column('External-IP', priority=1), column('OS-Image', priority=1), column('Kernel-Version', priority=1),
                    column('Container-Runtime', priority=1)], _node_row),
    ('', 'Namespace'): ([NAME, column('Status'), AGE], lambda ns: [(ns.get('status') or {}).get('phase', 'Active'), None]),
    ('', 'ConfigMap'): ([NAME, column('Data', 'integer'), AGE],
                        lambda cm: [len(cm.get('data') or {}) + len(cm.get('binaryData') or {}), None]),
    ('', 'Service'): ([NAME, column('Type'), column('Cluster-IP'), column('External-IP'), column('Port(s)'), AGE,
                       column('Selector', priority=1)], _service_row),
    ('apps', 'DaemonSet'): ([NAME, column('Desired', 'integer'), column('Current', 'integer'), column('Ready', 'integer'),
                             column('Up-to-date', 'integer'), column('Available', 'integer'), column('Node Selector'), AGE]
                            + WIDE_WORKLOAD, _daemonset_row),
    ('apps', 'Deployment'): ([NAME, column('Ready'), column('Up-to-date', 'integer'), column('Available', 'integer'), AGE]
                             + WIDE_WORKLOAD, _deployment_row),
    ('batch', 'Job'): ([NAME, column('Status'), column('Completions'), column('Duration'), AGE] + WIDE_WORKLOAD, _job_row),
}


_STEP = re.compile(r'\.(?P<field>[^.\[\]]+)|\[(?P<index>-?\d+)\]|\[(?P<star>\*)\]|\[\?\((?P<filter>[^]]*)\)\]')
_FILTER = re.compile(r'''^\s*@(?P<path>(?:\.[^.\s=!<>]+)+)\s*(?:(?P<op>==|!=)\s*(?P<value>"[^"]*"|'[^']*'|[-\w.]+))?\s*$''')


def _jsonpath_results(obj, path):
    """The results of a printer column's JSONPath, as client-go util/jsonpath finds them for
    apiextensions' table convertor: fields (``.a.b``), indexes (``[0]``, ``[-1]``), ``[*]`` and filters
    ``[?(@.type=="Updated")]`` / ``!=`` / ``[?(@.field)]`` (existence).  -> list of values, in document order."""
    current = [obj]
    position = 0
    for match in _STEP.finditer(path.strip()):
        if match.start() != position:
            return []   # a syntax the stand-in does not read: no value (the real CRD validation would refuse it)
        position = match.end()
        following = []
        for value in current:
            if match.group('field') is not None:
                if isinstance(value, dict) and match.group('field') in value:
                    following.append(value[match.group('field')])
            elif match.group('index') is not None:
                index = int(match.group('index'))
                if isinstance(value, list) and -len(value) <= index < len(value):
                    following.append(value[index])
            elif match.group('star'):
                following.extend(value if isinstance(value, list) else value.values() if isinstance(value, dict) else [])
            else:
                following.extend(item for item in (value if isinstance(value, list) else []) if _filter_matches(item, match.group('filter')))
        current = following
    return current if position == len(path.strip()) else []


def _filter_matches(item, expression):
    parsed = _FILTER.match(expression)
    if parsed is None:
        return False
    found = _jsonpath_results(item, parsed.group('path'))
    if parsed.group('op') is None:
        return bool(found)
    wanted = parsed.group('value')
    wanted = wanted[1:-1] if wanted[:1] in '"\'' else wanted
    equal = bool(found) and str(found[0]) == wanted
    return equal if parsed.group('op') == '==' else not equal


def _jsonpath(obj, path):
    """A printer column's cell value: the first result (apiextensions tableconvertor.go takes results[0][0])."""
    results = _jsonpath_results(obj, path)
    return results[0] if results else None


def table(cluster, resource, items, metadata, include_object):
    if resource.crd:
        columns, rower = _custom_columns(cluster, resource)
    elif (resource.group, resource.kind) in PRINTERS:
        columns, rower = PRINTERS[(resource.group, resource.kind)]
    else:   # apiserver's default table convertor
        columns = [NAME, {'name': 'Created At', 'type': 'date', 'format': '',
                          'description': AGE['description'], 'priority': 0}]

        def rower(obj):
            return [obj['metadata'].get('creationTimestamp')]
    rows = []
    for obj in items:
        cells = [obj['metadata']['name']] + rower(obj)
        cells = [age(obj) if cell is None and columns[index]['name'] == 'Age' else cell for index, cell in enumerate(cells)]
        row = {'cells': cells}
        if include_object == 'Object':
            row['object'] = obj
        elif include_object != 'None':
            row['object'] = {'kind': 'PartialObjectMetadata', 'apiVersion': 'meta.k8s.io/v1', 'metadata': obj['metadata']}
        rows.append(row)
    return {'kind': 'Table', 'apiVersion': 'meta.k8s.io/v1', 'metadata': metadata, 'columnDefinitions': columns,
            'rows': rows}


def _custom_columns(cluster, resource):
    crd = cluster.store.get('customresourcedefinitions.apiextensions.k8s.io', resource.crd) or {'spec': {}}
    version = next((v for v in crd['spec'].get('versions') or [] if v.get('name') == resource.version), {})
    printer = version.get('additionalPrinterColumns')
    if not printer:
        return [NAME, AGE], lambda obj: [None]
    columns = [NAME] + [column(entry['name'], entry.get('type', 'string'), entry.get('priority', 0),
                               entry.get('description', '')) for entry in printer]

    def rower(obj):
        cells = []
        for entry in printer:
            value = _jsonpath(obj, entry['jsonPath'])
            if entry.get('type') == 'date' and value:
                try:
                    value = age({'metadata': {'creationTimestamp': value}})
                except ValueError:
                    pass
            cells.append(value)
        return cells
    return columns, rower
