# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aiinfra.gpudirect.k8s_delete: kubernetes.core.k8s state=absent for objects already read, with a diff.

kubernetes.core.k8s diffs only applies and updates (its module_utils/k8s/runner.py ``perform_action`` skips
``diff_objects`` for the methods create and delete), so a deletion is invisible to ``--diff``.  This action
deletes through that module unchanged and reports, for each object it says existed, the object before and
nothing after.  Documentation: plugins/modules/k8s_delete.py."""

from __future__ import annotations

import copy

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import applied

ARGUMENT_SPEC = {
    'objects': {'type': 'list', 'elements': 'dict', 'required': True},
    'kubeconfig': {'type': 'raw', 'no_log': True},
    'context': {'type': 'str'},
    'wait': {'type': 'bool', 'default': False},
    'wait_timeout': {'type': 'int', 'default': 120},
    'wait_sleep': {'type': 'int', 'default': 5},
    'field_managers': {'type': 'list', 'elements': 'str'},
}


def reference(obj, index):
    """The definition kubernetes.core.k8s deletes by: apiVersion, kind, name and namespace of the object."""
    meta = obj.get('metadata') or {}
    if not (obj.get('apiVersion') and obj.get('kind') and meta.get('name')):
        raise AnsibleActionFail('objects[%d] lacks apiVersion, kind or metadata.name: give each object as read '
                                '(for example from the kubernetes.core.k8s lookup)' % index)
    metadata = {'name': meta['name']}
    if meta.get('namespace'):
        metadata['namespace'] = meta['namespace']
    return {'apiVersion': obj['apiVersion'], 'kind': obj['kind'], 'metadata': metadata}


def title(obj):
    meta = obj['metadata']
    return '%s %s%s' % (obj['kind'], meta['namespace'] + '/' if meta.get('namespace') else '', meta['name'])


def shown(obj):
    """The object as the diff shows it: without metadata.managedFields (the server's bookkeeping)."""
    shown_obj = copy.deepcopy(obj)
    (shown_obj.get('metadata') or {}).pop('managedFields', None)
    return shown_obj


class ActionModule(ActionBase):
    """See the module docstring."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        objects = args['objects']
        for index, obj in enumerate(objects):
            reference(obj, index)   # every object named before anything is deleted
        result.update(changed=False, removed=[])
        if args['field_managers'] is not None:
            ours = applied.managed_by(objects, args['field_managers'])
            others = [obj for obj in objects if not any(obj is mine for mine in ours)]
            if others:
                result['left_alone'] = ['%s (written by %s)' % (title(reference(obj, 0)), ', '.join(applied.managers(obj)) or 'no field manager')
                                        for obj in others]
                result['warnings'] = ['not deleted, not made by %s: %s' % (' or '.join(args['field_managers']), '; '.join(result['left_alone']))]
            objects = ours
        definitions = [reference(obj, index) for index, obj in enumerate(objects)]
        if not definitions:
            return result
        module_args = {'state': 'absent', 'definition': definitions, 'wait': args['wait'],
                       'wait_timeout': args['wait_timeout'], 'wait_sleep': args['wait_sleep']}
        module_args.update({key: args[key] for key in ('kubeconfig', 'context') if args[key]})
        deleted = self._execute_module(module_name='kubernetes.core.k8s', module_args=module_args, task_vars=task_vars)
        if deleted.get('failed'):
            return dict(deleted, removed=[], **({'left_alone': result['left_alone']} if 'left_alone' in result else {}))
        # One definition: the module exits with its result; several: {'result': {'results': [...]}}, in order.
        each = deleted['result']['results'] if len(definitions) > 1 else [deleted]
        gone = [obj for obj, outcome in zip(definitions, each) if outcome.get('changed')]
        full = {title(ref): obj for ref, obj in zip(definitions, objects)}
        result.update(changed=bool(gone), removed=[title(ref) for ref in gone])
        if deleted.get('warnings'):
            result['warnings'] = result.get('warnings', []) + deleted['warnings']
        if self._task.diff:
            result['diff'] = [{'before_header': title(ref), 'after_header': '%s (deleted)' % title(ref),
                               'before': shown(full[title(ref)]), 'after': ''} for ref in gone]
        return result
