"""CustomResourceDefinitions: registering their kinds, their status, deleting their objects.

As apiextensions-apiserver: a created CRD whose names are free gets conditions ``NamesAccepted`` and
``Established`` (the real establishing controller sets them a moment later; the stand-in at once),
``status.acceptedNames`` and ``status.storedVersions``; its served versions appear in discovery and
OpenAPI and its objects are validated against each version's ``openAPIV3Schema`` (defaults applied,
unknown fields pruned unless ``x-kubernetes-preserve-unknown-fields``).  Deleting the CRD deletes
its custom resources first.  Not simulated: conversion webhooks (every version shares one storage
without conversion), CEL ``x-kubernetes-validations``, ``status``/``scale`` subresource paths for
``scale``.
"""

from .resources import Resource
from .store import now_rfc3339


class CrdController:
    """Hooks the write verbs call for CustomResourceDefinition objects."""

    def __init__(self, cluster):
        self.cluster = cluster

    @staticmethod
    def is_crd(resource):
        return resource.kind == 'CustomResourceDefinition' and resource.group == 'apiextensions.k8s.io'

    def validate(self, obj, causes):
        spec = obj.get('spec') or {}
        versions = spec.get('versions') or []
        if versions and sum(1 for version in versions if version.get('storage')) != 1:
            causes.append(('FieldValueInvalid', 'spec.versions', 'Invalid value: %s: must have exactly one version marked '
                           'as storage version' % _go_list(versions)))
        for index, version in enumerate(versions):
            if not (version.get('schema') or {}).get('openAPIV3Schema'):
                causes.append(('FieldValueRequired', 'spec.versions[%d].schema.openAPIV3Schema' % index,
                               'Required value: schemas are required'))

    def prepare(self, resource, obj, existing=None):
        if not self.is_crd(resource):
            return
        spec = obj.get('spec') or {}
        names = dict(spec.get('names') or {})
        names.setdefault('singular', names.get('kind', '').lower())
        names.setdefault('listKind', names.get('kind', '') + 'List')
        spec['names'] = names
        spec.setdefault('conversion', {'strategy': 'None'})
        status = dict((existing or {}).get('status') or {})
        when = now_rfc3339()
        previous = {condition['type']: condition for condition in status.get('conditions') or []}

        def condition(kind, reason, message):
            old = previous.get(kind)
            if old and old.get('status') == 'True':
                return old
            return {'type': kind, 'status': 'True', 'lastTransitionTime': when, 'reason': reason, 'message': message}
        status['conditions'] = [condition('NamesAccepted', 'NoConflicts', 'no conflicts found'),
                                condition('Established', 'InitialNamesAccepted', 'the initial names have been accepted')]
        status['acceptedNames'] = dict(names)
        stored = set(status.get('storedVersions') or [])
        stored |= {version['name'] for version in spec.get('versions') or [] if version.get('storage')}
        status['storedVersions'] = sorted(stored)
        obj['status'] = status

    def resources_of(self, crd):
        spec = crd['spec']
        names = spec['names']
        resources = []
        for version in spec.get('versions') or []:
            if not version.get('served', True):
                continue
            subresources = tuple(name for name in ('status', 'scale') if name in (version.get('subresources') or {}))
            resources.append(Resource(spec['group'], version['name'], names['plural'], names['kind'],
                                      spec.get('scope', 'Namespaced') == 'Namespaced', names.get('shortNames') or (),
                                      subresources, names.get('categories') or (), singular=names.get('singular'),
                                      crd=crd['metadata']['name'], list_kind=names.get('listKind')))
            self.cluster.schemas.custom[(spec['group'], version['name'], names['kind'])] = \
                (version.get('schema') or {}).get('openAPIV3Schema') or {}
        return resources

    def created(self, resource, crd):
        if self.is_crd(resource):
            self.cluster.api.add(self.resources_of(crd))

    def updated(self, resource, crd):
        if self.is_crd(resource) and not crd['metadata'].get('deletionTimestamp'):
            self.cluster.api.remove_crd(crd['metadata']['name'])
            self.cluster.api.add(self.resources_of(crd))

    def removed(self, crd):
        """Before the CRD goes: its custom resources go (the real CRD finalizer's cleanup)."""
        store = self.cluster.store
        for resource in [item for item in self.cluster.api.all() if item.crd == crd['metadata']['name']][:1]:
            for (group, plural, namespace, name) in list(store.objects):
                if (group, plural) == (resource.group, resource.plural):
                    store.objects[(group, plural, namespace, name)]['metadata'].pop('finalizers', None)
                    store.delete_object(resource, namespace, name)
        self.cluster.api.remove_crd(crd['metadata']['name'])


def _go_list(versions):
    return '[]apiextensions.CustomResourceDefinitionVersion{%s}' % ', '.join(
        'apiextensions.CustomResourceDefinitionVersion{Name:"%s", ...}' % version.get('name') for version in versions)
