# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aiinfra.gpudirect.k8s_wait: wait until Kubernetes objects are ready, from the task's worker. Documentation:
plugins/modules/k8s_wait.py; the waiting and the message: plugins/module_utils/k8s/waiter.py; the readiness of each
kind: plugins/module_utils/k8s/readiness.py.

Why not kubernetes.core.k8s_info with ``until``, as the roles did: a wait that runs out of retries there says "Unknown
error." or only the last verdict, with no Pod, event or node named; each k8s_info poll is a module process (or, through
the lookup in ``until``, a task result per poll); and the roles each wrote the loop, the verdict and the message anew."""

from __future__ import annotations

import time

from ansible.errors import AnsibleActionFail
from ansible.utils.display import Display

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import converge, waiter
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.openshift import olm
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import WaitReport
from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.kube_client import CONNECTION_OPTIONS, KubeAction

ARGUMENT_SPEC = {
    'objects': {'type': 'list', 'elements': 'dict'},
    'api_version': {'type': 'str', 'default': 'v1'},
    'kind': {'type': 'str'},
    'namespace': {'type': 'str'},
    'names': {'type': 'list', 'elements': 'str'},
    'label_selectors': {'type': 'list', 'elements': 'str'},
    'minimum': {'type': 'int', 'default': 1},
    'expect': {'type': 'dict', 'default': {}},
    'timeout': {'type': 'float', 'default': 300},
    'delay': {'type': 'float', 'default': 2},
    'description': {'type': 'str'},
    'olm': {'type': 'dict', 'options': {
        'operators': {'type': 'list', 'elements': 'dict', 'required': True},
        'subscriptions': {'type': 'list', 'elements': 'dict', 'default': []},
    }},
    **CONNECTION_OPTIONS,
}
OLM_STAGES = ('Subscription', 'InstallPlan', 'ClusterServiceVersion', 'CustomResourceDefinition')

display = Display()


class ActionModule(KubeAction):
    """See the module docstring."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, mutually_exclusive=[('objects', 'kind')],
                                                        required_one_of=[('objects', 'kind')])
        what = args['description'] or (args['kind'] or 'objects')
        chosen = waiter.selections(objects=args['objects'], api_version=args['api_version'], kind=args['kind'], namespace=args['namespace'],
                                   names=args['names'], label_selectors=args['label_selectors'])
        if args['objects'] is not None and not args['objects']:
            return dict(result, changed=False, verdict='ready', objects=[], reads=0, msg='%s: nothing to wait for' % what)
        verdict_of = self._olm_stage(args)
        started = time.monotonic()
        # A GKE DaemonSet or an operator takes minutes, and a silent task looks hung: the wait says where it stands.
        report = WaitReport('%s [%s]' % (self._task.get_name(), what), describe=lambda outcome: outcome[0], emit=display.display)
        try:
            api = self.client(args)
            verdict, named, summaries, reads = waiter.wait(api, chosen, expect=args['expect'], minimum=args['minimum'],
                                                           timeout=args['timeout'], delay=args['delay'], report=report,
                                                           verdict_of=verdict_of)
            explanation = waiter.explain(api, named, args['expect'], verdict) if named is not None and verdict != 'ready' else []
        except (waiter.WaitError, converge.ApiRefusal) as exc:
            raise AnsibleActionFail('k8s_wait: %s: %s' % (what, exc)) from None
        waited = round(time.monotonic() - started, 1)
        result.update(changed=False, verdict=verdict, objects=summaries, reads=reads, waited=waited)
        if verdict == 'ready':
            placed = ', '.join('%s on %s' % (each['name'], each['node']) for each in summaries if each.get('node'))
            result['msg'] = '%s: ready%s (%d read%s, %.0f s)' % (what, ': ' + placed if placed else '', reads, '' if reads == 1 else 's', waited)
            # An ok result prints nothing at the default verbosity; what is ready, and where, is worth one line (the
            # report's summary when it said where the wait stood).
            if not report.lines:
                display.display(result['msg'])
            return result
        gave_up = ' (still pending after %.0f s, %d reads)' % (waited, reads) if verdict.startswith('pending') else ''
        return dict(result, failed=True, msg='%s: %s%s%s' % (what, verdict, gave_up, ''.join('; ' + part for part in explanation)))

    @staticmethod
    def _olm_stage(args):
        """With ``olm``: the verdict of one OLM stage (``kind``) of every planned operator over all the objects of that kind,
        each operator's object judged by the readiness table (olm.progress), else None."""
        if args['olm'] is None:
            return None
        if args['kind'] not in OLM_STAGES or args['names'] or args['label_selectors']:
            raise AnsibleActionFail('k8s_wait: olm: give kind %s and no names or label_selectors (every object of the kind is '
                                    'read; olm.operators names them)' % ', '.join(OLM_STAGES))
        operators, subscriptions = args['olm']['operators'], args['olm']['subscriptions']
        return lambda objects: olm.progress(objects, operators, args['kind'], subscriptions)
