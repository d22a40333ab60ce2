"""The write verbs, shared by the HTTPS front end and the store's system calls.

Each verb: resolve the resource -> validate (schema, names, namespace) -> build the new object
(system metadata, defaults, managedFields) -> a no-op leaves the stored object alone -> commit,
unless ``dry_run`` (then the answer is the object as it would be stored).
"""

import copy
import re

from . import errors
from .defaults import apply_defaults
from .managed import FieldSets, apply as ssa_apply, apply_merge, track_update
from .patch import StrategicMerge, json_patch, merge_patch
from .store import keeps_generation, new_uid, now_rfc3339, spec_part

DNS1123_SUBDOMAIN = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
DNS1123_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')
DNS1035_LABEL = re.compile(r'^[a-z]([-a-z0-9]*[a-z0-9])?$')
# k8s.io/apimachinery/pkg/util/validation/validation.go messages.
SUBDOMAIN_MESSAGE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                     "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MESSAGE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
                 "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MESSAGE = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
                   "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
                   "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
# Which name rule each kind's validation applies (pkg/apis/core/validation: ValidateNamespaceName is a
# label, ValidateServiceName DNS-1035, most others ValidateObjectMeta with NameIsDNSSubdomain).
NAME_RULES = {'Namespace': (DNS1123_LABEL, LABEL_MESSAGE, 63), 'Service': (DNS1035_LABEL, DNS1035_MESSAGE, 63)}
SYSTEM_METADATA = ('uid', 'creationTimestamp', 'generation', 'resourceVersion', 'deletionTimestamp',
                   'deletionGracePeriodSeconds', 'selfLink')


WORKLOADS_WITH_SELECTOR = {('apps', 'DaemonSet'), ('apps', 'Deployment'), ('apps', 'ReplicaSet'), ('apps', 'StatefulSet')}


def go_string_map(labels):
    """A map[string]string as Go's %#v prints it (keys sorted), the way field.Invalid shows the value."""
    if labels is None:
        return 'map[string]string(nil)'
    return 'map[string]string{%s}' % ', '.join('"%s":"%s"' % (key, labels[key]) for key in sorted(labels))


def label_selector_matches(selector, labels):
    """metav1.LabelSelectorAsSelector(selector).Matches(labels); a nil selector matches nothing."""
    from .selectors import labels_match  # pylint: disable=import-outside-toplevel
    if selector is None:
        return False
    operators = {'In': 'in', 'NotIn': 'notin', 'Exists': 'exists', 'DoesNotExist': '!exists'}
    requirements = [(key, '=', [value]) for key, value in (selector.get('matchLabels') or {}).items()]
    requirements += [(item.get('key'), operators.get(item.get('operator'), 'in'), item.get('values') or [])
                     for item in selector.get('matchExpressions') or []]
    return labels_match(requirements, labels or {})


def selector_causes(resource, obj):
    """pkg/apis/apps/validation (ValidateDaemonSetSpec, ValidateDeploymentSpec, ...): the selector must
    match the template's labels; a missing selector matches nothing."""
    if resource.crd or (resource.group, resource.kind) not in WORKLOADS_WITH_SELECTOR:
        return []
    spec = obj.get('spec') if isinstance(obj.get('spec'), dict) else {}
    template = spec.get('template') if isinstance(spec.get('template'), dict) else None
    if template is None:
        return []
    labels = (template.get('metadata') or {}).get('labels')
    if label_selector_matches(spec.get('selector'), labels):
        return []
    return [('FieldValueInvalid', 'spec.template.metadata.labels', 'Invalid value: %s: `selector` does not match template '
             '`labels`' % go_string_map(labels))]


def generate_job_selector(job):
    """pkg/registry/batch/job/strategy.go generateSelector: unless spec.manualSelector, the Job's
    selector is its uid, and the template carries the uid and the Job's name as labels."""
    spec = job.get('spec')
    if not isinstance(spec, dict) or spec.get('manualSelector'):
        return
    uid, name = job['metadata']['uid'], job['metadata']['name']
    labels = spec.setdefault('template', {}).setdefault('metadata', {}).setdefault('labels', {})
    labels.update({'batch.kubernetes.io/controller-uid': uid, 'batch.kubernetes.io/job-name': name,
                   'controller-uid': uid, 'job-name': name})
    spec['selector'] = {'matchLabels': {'batch.kubernetes.io/controller-uid': uid}}


def is_extended_resource(name):
    """k8s.io/kubernetes pkg/apis/core/helper IsExtendedResourceName: a qualified name with a domain outside
    kubernetes.io (IsNativeResource), not a quota ``requests.`` name."""
    domain = name.split('/', 1)[0] if '/' in name else ''
    native = not domain or domain == 'kubernetes.io' or domain.endswith('.kubernetes.io')
    return not native and not name.startswith('requests.')


def extended_resource_toleration(pod):
    """The ExtendedResourceToleration admission plugin (plugin/pkg/admission/extendedresourcetoleration): every
    extended resource a container or init container requests (a limit without a request defaults to one) gets a
    toleration ``{key: R, operator: Exists, effect: NoSchedule}``, in sorted order, unless the Pod already has that
    exact toleration (core/helper AddOrUpdateTolerationInPod).  GKE enables it: "GKE automatically applies the
    corresponding tolerations to Pods requesting GPUs by running the ExtendedResourceToleration admission controller"
    (cloud.google.com/kubernetes-engine/docs/how-to/gpus, "Restrict workloads ... GPU nodes").  The stand-in applies
    it on create only (the real plugin also on Pod updates) and, as the real field manager runs before admission,
    the tolerations it adds belong to no managedFields entry."""
    spec = pod.get('spec') or {}
    names = set()
    for container in (spec.get('containers') or []) + (spec.get('initContainers') or []):
        resources = container.get('resources') or {}
        names |= {name for name in list(resources.get('requests') or {}) + list(resources.get('limits') or {}) if is_extended_resource(name)}
    tolerations = list(spec.get('tolerations') or [])
    for name in sorted(names):
        wanted = {'key': name, 'operator': 'Exists', 'effect': 'NoSchedule'}
        if wanted not in tolerations:
            tolerations.append(wanted)
    if tolerations:
        spec['tolerations'] = tolerations


def default_manager(user_agent):
    """The manager the apiserver names an update by when no fieldManager is given: the user agent's first word."""
    return (user_agent or 'unknown').split('/')[0] or 'unknown'


class Operations:
    """Write verbs of one cluster."""

    def __init__(self, cluster):
        self.cluster = cluster

    @property
    def store(self):
        return self.cluster.store

    def resource_for(self, obj):
        api_version, kind = obj.get('apiVersion'), obj.get('kind')
        if not api_version or not kind:
            raise errors.bad_request('Object \'Kind\' is missing in \'%s\'' % obj if not kind else
                                     'Object \'apiVersion\' is missing in \'%s\'' % obj)
        resource = self.cluster.api.find_kind(api_version, kind)
        if resource is None:
            raise errors.unknown_resource()
        return resource

    def fieldsets(self, resource):
        return FieldSets(self.cluster.schemas, self._schema(resource), resource.has_status())

    def _schema(self, resource):
        return self.cluster.schemas.root_schema(resource)

    # ----- checks -----
    def check_name(self, resource, obj, causes):
        metadata = obj.get('metadata') or {}
        name = metadata.get('name')
        if not name and not metadata.get('generateName'):
            causes.append(('FieldValueRequired', 'metadata.name', 'Required value: name or generateName is required'))
            return
        if not name:
            return
        pattern, message, limit = NAME_RULES.get(resource.kind, (DNS1123_SUBDOMAIN, SUBDOMAIN_MESSAGE, 253))
        if resource.crd is None and resource.kind == 'CustomResourceDefinition':
            spec = obj.get('spec') or {}
            expected = '%s.%s' % ((spec.get('names') or {}).get('plural'), spec.get('group'))
            if name != expected:
                causes.append(('FieldValueInvalid', 'metadata.name',
                               'Invalid value: "%s": must be spec.names.plural+"."+spec.group' % name))
        if len(name) > limit:
            causes.append(('FieldValueInvalid', 'metadata.name', 'Invalid value: "%s": must be no more than %d characters'
                           % (name, limit)))
        elif not pattern.match(name):
            causes.append(('FieldValueInvalid', 'metadata.name', 'Invalid value: "%s": %s' % (name, message)))

    def check_namespace(self, resource, obj, namespace, creating):
        metadata = obj.setdefault('metadata', {})
        if not resource.namespaced:
            metadata.pop('namespace', None)
            return ''
        if namespace and metadata.get('namespace') and metadata['namespace'] != namespace:
            raise errors.bad_request('the namespace of the provided object does not match the namespace sent on the request')
        namespace = namespace or metadata.get('namespace') or 'default'
        metadata['namespace'] = namespace
        phase = self.store.namespace_phase(namespace)
        if phase is None:
            raise errors.namespace_not_found(namespace)
        if creating and phase == 'Terminating':
            raise errors.forbidden(resource, metadata.get('name', ''), 'unable to create new content in namespace %s because '
                                   'it is being terminated' % namespace,
                                   {'reason': 'NamespaceTerminating', 'message': 'namespace %s is being terminated'
                                    % namespace, 'field': 'metadata.namespace'})
        return namespace

    def validate(self, resource, obj, validation, warnings, subresource=None):
        causes = []
        try:
            found = self.cluster.schemas.check(resource, obj, validation, subresource)
        except errors.KubeError as error:
            if error.code != 422:
                raise
            causes = [(cause['reason'], cause['field'], cause['message']) for cause in error.status['details']['causes']]
            found = []
        if warnings is not None:
            warnings.extend(found)
        if subresource is None:
            causes.extend(selector_causes(resource, obj))
        self.check_name(resource, obj, causes)
        if resource.kind == 'CustomResourceDefinition' and resource.group == 'apiextensions.k8s.io':
            self.cluster.crds.validate(obj, causes)
        if causes:
            raise errors.invalid(resource, (obj.get('metadata') or {}).get('name', ''), causes)

    # ----- create -----
    def create(self, obj, resource=None, namespace=None, dry_run=False, field_manager=None, validation='Strict',
               warnings=None, user_agent=None):
        obj = copy.deepcopy(obj)
        resource = resource or self.resource_for(obj)
        if obj.get('apiVersion') != resource.api_version or obj.get('kind') != resource.kind:
            if obj.get('kind') and obj.get('kind') != resource.kind:
                raise errors.bad_request('the API version in the data (%s) does not match the expected API version (%s)'
                                         % (obj.get('apiVersion'), resource.api_version)
                                         if obj.get('apiVersion') != resource.api_version else
                                         '%s in version "%s" cannot be handled as a %s: no kind "%s" is registered for '
                                         'version "%s"' % (obj['kind'], resource.version, resource.kind, obj['kind'],
                                                           resource.api_version))
        self.validate(resource, obj, validation, warnings)
        namespace = self.check_namespace(resource, obj, namespace, creating=True)
        metadata = obj['metadata']
        if str(metadata.get('resourceVersion') or '').isdigit() and int(metadata['resourceVersion']) > 0:
            # etcd3 store.Create refuses it with a plain error: 500 without a reason (a "-1" passes, as there).
            raise errors.internal('resourceVersion should not be set on objects to be created')
        if not metadata.get('name'):
            metadata['name'] = metadata['generateName'] + new_uid()[:5]
        for key in SYSTEM_METADATA:
            metadata.pop(key, None)
        metadata['uid'] = new_uid()
        metadata['creationTimestamp'] = now_rfc3339()
        if keeps_generation(resource):
            metadata['generation'] = 1
        if resource.has_status() and resource.kind not in ('Namespace',):
            obj['status'] = {}
        if (resource.group, resource.kind) == ('batch', 'Job'):
            generate_job_selector(obj)
        apply_defaults(resource, obj)
        self.cluster.crds.prepare(resource, obj)
        manager = field_manager or default_manager(user_agent)
        metadata.pop('managedFields', None)
        metadata['managedFields'] = track_update(self.fieldsets(resource), None, obj, manager, resource.api_version,
                                                 metadata['creationTimestamp'])
        if not metadata['managedFields']:
            del metadata['managedFields']
        if 'ExtendedResourceToleration' in self.cluster.admission_plugins and (resource.group, resource.kind) == ('', 'Pod'):
            extended_resource_toleration(obj)
        with self.store.lock:
            if self.store.lookup(resource, namespace, metadata['name']) is not None:
                raise errors.already_exists(resource, metadata['name'])
            if dry_run:
                return obj
            stored = self.store.commit_create(resource, obj)
        self.cluster.crds.created(resource, stored)
        return stored

    # ----- update (PUT, and the common tail of patch) -----
    def update(self, obj, resource=None, namespace=None, name=None, subresource=None, dry_run=False, field_manager=None,
               validation='Strict', warnings=None, user_agent=None, operation='Update', force=False):
        obj = copy.deepcopy(obj)
        resource = resource or self.resource_for(obj)
        metadata = obj.setdefault('metadata', {})
        name = name or metadata.get('name')
        if metadata.get('name') and metadata['name'] != name:
            raise errors.bad_request('the name of the object (%s) does not match the name on the URL (%s)'
                                     % (metadata['name'], name))
        metadata['name'] = name
        namespace = self.check_namespace(resource, obj, namespace, creating=False)
        with self.store.lock:
            existing = self.store.lookup(resource, namespace, name)
            if existing is None:
                raise errors.not_found(resource, name)
            existing = copy.deepcopy(existing)
            wanted_rv = metadata.get('resourceVersion')
            if wanted_rv and wanted_rv != existing['metadata']['resourceVersion']:
                raise errors.conflict(resource, name)
            if not wanted_rv and resource.crd and subresource is None:
                # apiextensions-apiserver's strategy does not allow unconditional updates.
                raise errors.invalid(resource, name, [('FieldValueInvalid', 'metadata.resourceVersion',
                                                       'Invalid value: 0x0: must be specified for an update')])
            self.validate(resource, obj, validation, warnings, subresource)
            new = self.merge_system_fields(resource, existing, obj, subresource)
            manager = field_manager or default_manager(user_agent)
            new['metadata']['managedFields'] = track_update(self.fieldsets(resource), existing, new, manager,
                                                            resource.api_version, now_rfc3339(), subresource)
            return self.commit_if_changed(resource, existing, new, dry_run)

    def merge_system_fields(self, resource, existing, obj, subresource):
        if subresource == 'status':
            new = copy.deepcopy(existing)
            new['status'] = obj.get('status', {})
            new['metadata'].pop('managedFields', None)
            if obj['metadata'].get('managedFields') is not None:
                new['metadata']['managedFields'] = obj['metadata']['managedFields']
            return new
        new = copy.deepcopy(obj)
        new['apiVersion'], new['kind'] = resource.api_version, resource.kind
        for key in SYSTEM_METADATA:
            if key in existing['metadata']:
                new['metadata'][key] = existing['metadata'][key]
            else:
                new['metadata'].pop(key, None)
        if resource.has_status():
            if 'status' in existing:
                new['status'] = existing['status']
            else:
                new.pop('status', None)
        apply_defaults(resource, new)
        self.cluster.crds.prepare(resource, new, existing)
        return new

    def commit_if_changed(self, resource, existing, new, dry_run):
        def comparable(obj):
            result = copy.deepcopy(obj)
            for entry in result['metadata'].get('managedFields') or []:
                entry.pop('time', None)
            if not result['metadata'].get('managedFields'):
                result['metadata'].pop('managedFields', None)
            return result
        if not new['metadata'].get('managedFields'):
            new['metadata'].pop('managedFields', None)
        if comparable(new) == comparable(existing):
            return existing
        if keeps_generation(resource) and spec_part(new) != spec_part(existing):
            new['metadata']['generation'] = existing['metadata'].get('generation', 1) + 1
        if dry_run:
            return new
        stored = self.store.commit_update(resource, new)
        self.cluster.crds.updated(resource, stored)
        if stored['metadata'].get('deletionTimestamp') and not stored['metadata'].get('finalizers'):
            # registry/generic/registry/store.go Update (ShouldDeleteDuringUpdate): an update that removes the
            # last finalizer of an object being deleted deletes it; the answer is the object as updated.
            meta = stored['metadata']
            self.store.delete_object(resource, meta.get('namespace', ''), meta['name'])
        return stored

    # ----- patch -----
    def patch(self, resource, namespace, name, patch_type, body, subresource=None, dry_run=False, field_manager=None,
              validation='Strict', warnings=None, user_agent=None, force=False):
        if patch_type == 'apply':
            return self.server_side_apply(resource, namespace, name, body, subresource, dry_run, field_manager, validation,
                                          warnings, force)
        with self.store.lock:
            existing = self.store.lookup(resource, namespace if resource.namespaced else '', name)
            if existing is None:
                raise errors.not_found(resource, name)
            if patch_type == 'json':
                patched = json_patch(existing, body)
            elif patch_type == 'merge':
                patched = merge_patch(existing, body)
            else:
                if resource.crd:
                    raise errors.unsupported_media_type('application/strategic-merge-patch+json', (
                        'application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml'))
                patched = StrategicMerge(self.cluster.schemas).apply(existing, body, self._schema(resource))
            if not isinstance(patched, dict):
                raise errors.bad_request('the patch did not produce an object')
            patched.setdefault('metadata', {})
            if 'resourceVersion' not in ((body or {}).get('metadata') or {} if isinstance(body, dict) else {}) \
                    and patch_type != 'json':
                patched['metadata']['resourceVersion'] = existing['metadata']['resourceVersion']
            return self.update(patched, resource, namespace, name, subresource, dry_run, field_manager, validation,
                               warnings, user_agent)

    def server_side_apply(self, resource, namespace, name, body, subresource, dry_run, field_manager, validation, warnings,
                          force):
        if not field_manager:
            raise errors.bad_request('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
                                     'for apply patch')
        if not isinstance(body, dict):
            raise errors.bad_request('error decoding YAML: the apply patch is not an object')
        if body.get('apiVersion') != resource.api_version or body.get('kind') != resource.kind:
            raise errors.bad_request('Incorrect version specified in apply patch. Specified patch version: %s, expected: %s'
                                     % (body.get('apiVersion', ''), resource.api_version))
        undeclared = self.cluster.schemas.undeclared_fields(resource, body)
        if undeclared:
            # structuredmerge.go: a plain error, so 500 without a reason (kubernetes/kubernetes#122480).
            owner = namespace or '' if resource.namespaced else ''
            identity = '%s/%s; %s/%s, Kind=%s' % (owner, name, resource.group, resource.version, resource.kind)
            detail = ('%s: field not declared in schema' % undeclared[0] if len(undeclared) == 1 else
                      'errors:\n  ' + '\n  '.join('%s: field not declared in schema' % path for path in undeclared))
            raise errors.internal('failed to create typed patch object (%s): %s' % (identity, detail))
        applied = copy.deepcopy(body)
        metadata = applied.setdefault('metadata', {})
        if metadata.get('name') and metadata['name'] != name:
            raise errors.bad_request('the name of the object (%s) does not match the name on the URL (%s)'
                                     % (metadata['name'], name))
        metadata['name'] = name
        namespace = self.check_namespace(resource, applied, namespace, creating=False)
        with self.store.lock:
            existing = self.store.lookup(resource, namespace, name)
            if existing is None:
                self.check_namespace(resource, applied, namespace, creating=True)
            probe = copy.deepcopy(applied)
            self.validate(resource, probe, validation, warnings)
            fieldsets = self.fieldsets(resource)
            time = now_rfc3339()
            try:
                merged = ssa_apply(fieldsets, copy.deepcopy(existing) if existing else None, probe, field_manager,
                                   resource.api_version, force, time, apply_merge(fieldsets))
            except errors.KubeError:
                raise
            merged['apiVersion'], merged['kind'] = resource.api_version, resource.kind
            if existing is None:
                entries = merged['metadata'].pop('managedFields', [])
                created = self.create(merged, resource, namespace, dry_run=True, field_manager=field_manager,
                                      validation='Ignore')
                created['metadata']['managedFields'] = entries
                if dry_run:
                    return created
                stored = self.store.commit_create(resource, created)
                self.cluster.crds.created(resource, stored)
                return stored
            new = self.merge_system_fields(resource, copy.deepcopy(existing), merged, subresource)
            new['metadata']['managedFields'] = merged['metadata']['managedFields']
            return self.commit_if_changed(resource, copy.deepcopy(existing), new, dry_run)
