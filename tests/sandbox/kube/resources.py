"""The built-in resource table and the live registry of served resources (built-ins plus CRDs).

``BUILTIN_RESOURCES`` is the one table of built-in resources: group, version, plural, kind, scope,
short names, subresources and categories, as a real kube-apiserver's discovery lists them.  Source:
kubernetes/kubernetes ``api/discovery/aggregated_v2.json`` and ``api/discovery/api__v1.json`` (the
discovery documents the project generates from a real apiserver; read at commits
0209a4cb57a359609b96779f044bcdff8e8df70d and 4d817e791304350f797ea28d315a677873d20cba), restricted
to the GA versions a GKE cluster serves by default, plus ``resource.k8s.io/v1`` (GA in 1.34:
``api/discovery/apis__resource.k8s.io__v1.json``).  A row whose kind has no schema in the selected
Kubernetes minor is left out at start (``ApiRegistry``), so a 1.33 cluster has no resource.k8s.io/v1.

Verbs are the standard eight for every row, except where ``VERBS_EXCEPTIONS`` says otherwise (also
from those files: namespaces have no deletecollection).
"""

import threading

STANDARD_VERBS = ('create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch')
VERBS_EXCEPTIONS = {('', 'namespaces'): ('create', 'delete', 'get', 'list', 'patch', 'update', 'watch')}

# group, version, plural, kind, namespaced, shortNames, subresources, categories
BUILTIN_RESOURCES = (
    ('', 'v1', 'configmaps', 'ConfigMap', True, ('cm',), (), ()),
    ('', 'v1', 'endpoints', 'Endpoints', True, ('ep',), (), ()),
    ('', 'v1', 'events', 'Event', True, ('ev',), (), ()),
    ('', 'v1', 'limitranges', 'LimitRange', True, ('limits',), (), ()),
    ('', 'v1', 'namespaces', 'Namespace', False, ('ns',), ('status', 'finalize'), ()),
    ('', 'v1', 'nodes', 'Node', False, ('no',), ('status', 'proxy'), ()),
    ('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', True, ('pvc',), ('status',), ()),
    ('', 'v1', 'persistentvolumes', 'PersistentVolume', False, ('pv',), ('status',), ()),
    ('', 'v1', 'pods', 'Pod', True, ('po',),
     ('status', 'log', 'exec', 'attach', 'portforward', 'binding', 'eviction', 'ephemeralcontainers', 'proxy'), ('all',)),
    ('', 'v1', 'podtemplates', 'PodTemplate', True, (), (), ()),
    ('', 'v1', 'replicationcontrollers', 'ReplicationController', True, ('rc',), ('status', 'scale'), ('all',)),
    ('', 'v1', 'resourcequotas', 'ResourceQuota', True, ('quota',), ('status',), ()),
    ('', 'v1', 'secrets', 'Secret', True, (), (), ()),
    ('', 'v1', 'serviceaccounts', 'ServiceAccount', True, ('sa',), ('token',), ()),
    ('', 'v1', 'services', 'Service', True, ('svc',), ('status', 'proxy'), ('all',)),
    ('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations', 'MutatingWebhookConfiguration', False, (), (),
     ('api-extensions',)),
    ('admissionregistration.k8s.io', 'v1', 'validatingadmissionpolicies', 'ValidatingAdmissionPolicy', False, (),
     ('status',), ('api-extensions',)),
    ('admissionregistration.k8s.io', 'v1', 'validatingadmissionpolicybindings', 'ValidatingAdmissionPolicyBinding', False,
     (), (), ('api-extensions',)),
    ('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations', 'ValidatingWebhookConfiguration', False,
     (), (), ('api-extensions',)),
    ('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', False, ('crd', 'crds'),
     ('status',), ('api-extensions',)),
    ('apiregistration.k8s.io', 'v1', 'apiservices', 'APIService', False, (), ('status',), ('api-extensions',)),
    ('apps', 'v1', 'controllerrevisions', 'ControllerRevision', True, (), (), ()),
    ('apps', 'v1', 'daemonsets', 'DaemonSet', True, ('ds',), ('status',), ('all',)),
    ('apps', 'v1', 'deployments', 'Deployment', True, ('deploy',), ('status', 'scale'), ('all',)),
    ('apps', 'v1', 'replicasets', 'ReplicaSet', True, ('rs',), ('status', 'scale'), ('all',)),
    ('apps', 'v1', 'statefulsets', 'StatefulSet', True, ('sts',), ('status', 'scale'), ('all',)),
    ('autoscaling', 'v2', 'horizontalpodautoscalers', 'HorizontalPodAutoscaler', True, ('hpa',), ('status',), ('all',)),
    ('batch', 'v1', 'cronjobs', 'CronJob', True, ('cj',), ('status',), ('all',)),
    ('batch', 'v1', 'jobs', 'Job', True, (), ('status',), ('all',)),
    ('certificates.k8s.io', 'v1', 'certificatesigningrequests', 'CertificateSigningRequest', False, ('csr',),
     ('status', 'approval'), ()),
    ('coordination.k8s.io', 'v1', 'leases', 'Lease', True, (), (), ()),
    ('discovery.k8s.io', 'v1', 'endpointslices', 'EndpointSlice', True, (), (), ()),
    ('events.k8s.io', 'v1', 'events', 'Event', True, ('ev',), (), ()),
    ('flowcontrol.apiserver.k8s.io', 'v1', 'flowschemas', 'FlowSchema', False, (), ('status',), ()),
    ('flowcontrol.apiserver.k8s.io', 'v1', 'prioritylevelconfigurations', 'PriorityLevelConfiguration', False, (),
     ('status',), ()),
    ('networking.k8s.io', 'v1', 'ingressclasses', 'IngressClass', False, (), (), ()),
    ('networking.k8s.io', 'v1', 'ingresses', 'Ingress', True, ('ing',), ('status',), ()),
    ('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy', True, ('netpol',), (), ()),
    ('node.k8s.io', 'v1', 'runtimeclasses', 'RuntimeClass', False, (), (), ()),
    ('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', True, ('pdb',), ('status',), ()),
    ('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', False, (), (), ()),
    ('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', False, (), (), ()),
    ('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', True, (), (), ()),
    ('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', True, (), (), ()),
    ('resource.k8s.io', 'v1', 'deviceclasses', 'DeviceClass', False, (), (), ()),
    ('resource.k8s.io', 'v1', 'resourceclaims', 'ResourceClaim', True, (), ('status',), ()),
    ('resource.k8s.io', 'v1', 'resourceclaimtemplates', 'ResourceClaimTemplate', True, (), (), ()),
    ('resource.k8s.io', 'v1', 'resourceslices', 'ResourceSlice', False, (), (), ()),
    ('scheduling.k8s.io', 'v1', 'priorityclasses', 'PriorityClass', False, ('pc',), (), ()),
    ('storage.k8s.io', 'v1', 'csidrivers', 'CSIDriver', False, (), (), ()),
    ('storage.k8s.io', 'v1', 'csinodes', 'CSINode', False, (), (), ()),
    ('storage.k8s.io', 'v1', 'csistoragecapacities', 'CSIStorageCapacity', True, (), (), ()),
    ('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', False, ('sc',), (), ()),
    ('storage.k8s.io', 'v1', 'volumeattachments', 'VolumeAttachment', False, (), ('status',), ()),
)

# Subresources served by another kind (discovery's responseKind / group+version of the subresource row).
SUBRESOURCE_KINDS = {'scale': ('autoscaling', 'v1', 'Scale'), 'eviction': ('policy', 'v1', 'Eviction'),
                     'token': ('authentication.k8s.io', 'v1', 'TokenRequest'), 'exec': ('', 'v1', 'PodExecOptions'),
                     'attach': ('', 'v1', 'PodAttachOptions'), 'portforward': ('', 'v1', 'PodPortForwardOptions'),
                     'proxy': ('', 'v1', 'ProxyOptions'), 'binding': ('', 'v1', 'Binding')}
# Verbs of each subresource (api__v1.json).
SUBRESOURCE_VERBS = {'status': ('get', 'patch', 'update'), 'scale': ('get', 'patch', 'update'),
                     'approval': ('get', 'patch', 'update'), 'ephemeralcontainers': ('get', 'patch', 'update'),
                     'finalize': ('update',), 'log': ('get',), 'exec': ('create', 'get'), 'attach': ('create', 'get'),
                     'portforward': ('create', 'get'), 'proxy': ('create', 'delete', 'get', 'patch', 'update'),
                     'binding': ('create',), 'eviction': ('create',), 'token': ('create',)}


class Resource:  # pylint: disable=too-many-instance-attributes
    """One served resource of one group/version: what discovery, routing and the store need to know."""

    def __init__(self, group, version, plural, kind, namespaced, short_names=(), subresources=(), categories=(),
                 singular=None, crd=None, list_kind=None, verbs=None):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced = namespaced
        self.short_names = tuple(short_names)
        self.subresources = tuple(subresources)
        self.categories = tuple(categories)
        self.singular = singular or kind.lower()
        self.crd = crd            # the CRD's name for custom resources, else None
        self.list_kind = list_kind or kind + 'List'
        self.verbs = tuple(verbs) if verbs else VERBS_EXCEPTIONS.get((group, plural), STANDARD_VERBS)

    @property
    def api_version(self):
        return '%s/%s' % (self.group, self.version) if self.group else self.version

    @property
    def ref(self):
        """'daemonsets.apps', 'pods': the name the store's system calls take (kubectl's resource.group)."""
        return '%s.%s' % (self.plural, self.group) if self.group else self.plural

    @property
    def group_kind(self):
        return '%s.%s' % (self.kind, self.group) if self.group else self.kind

    @property
    def group_resource(self):
        return self.ref

    @property
    def readonly(self):
        """Served for reading only (``KubeCluster.add_readonly``): every write verb answers 405."""
        return not {'create', 'update', 'patch', 'delete'} & set(self.verbs)

    def has_status(self):
        return 'status' in self.subresources

    def __repr__(self):
        return '<Resource %s/%s>' % (self.api_version, self.plural)


class ApiRegistry:
    """The resources one cluster serves: the built-ins whose kind the schema catalog knows, and the CRDs'."""

    def __init__(self, schemas):
        self._lock = threading.RLock()
        self._resources = []
        for row in BUILTIN_RESOURCES:
            resource = Resource(*row)
            if schemas.has_kind(resource.group, resource.version, resource.kind):
                self._resources.append(resource)
        self.generation = 0   # bumped whenever a CRD comes or goes (discovery/OpenAPI caches key on it)

    def all(self):
        with self._lock:
            return list(self._resources)

    def groups(self):
        """[(group, [versions, preferred first])], core group first, in registration order."""
        order = {}
        for resource in self.all():
            versions = order.setdefault(resource.group, [])
            if resource.version not in versions:
                versions.append(resource.version)
        return list(order.items())

    def find(self, group, version, plural):
        for resource in self.all():
            if (resource.group, resource.version, resource.plural) == (group, version, plural):
                return resource
        return None

    def find_kind(self, api_version, kind):
        group, _slash, version = api_version.rpartition('/')
        for resource in self.all():
            if (resource.group, resource.version, resource.kind) == (group, version, kind):
                return resource
        return None

    def find_ref(self, ref):
        """'daemonsets.apps', 'pods', 'computeclasses.cloud.google.com' -> the preferred version's resource."""
        plural, _dot, group = ref.partition('.')
        for resource in self.all():
            if resource.plural == plural and resource.group == group:
                return resource
        raise KeyError('no resource %r is served' % ref)

    def versions_of(self, group, plural):
        return [resource for resource in self.all() if resource.group == group and resource.plural == plural]

    def add(self, resources):
        with self._lock:
            self._resources.extend(resources)
            self.generation += 1

    def remove_crd(self, crd_name):
        with self._lock:
            self._resources = [resource for resource in self._resources if resource.crd != crd_name]
            self.generation += 1
