# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OLM and operator-status decisions for the openshift_rdma role (pure functions over API objects).

``verdict(kind, objects, **expect)`` answers ``ready``, ``pending: <last status>`` or ``failed: <why>``
for every kind the role waits on, reading only status fields that the operators at the chapter's
versions set (tests/unit/seeds/openshift-rdma.md, "What a test stand-in must simulate").
"""

from __future__ import annotations

import json
import re

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import openshift as catalog


class OlmError(ValueError):
    """A decision that cannot be made from the objects read (names the object and the fix)."""


def version_tuple(text):
    """'v24.10.0-rc.1' / 'gpu-operator-certified.v24.9.2' -> (24, 10, 0)."""
    match = re.search(r'(\d+)\.(\d+)(?:\.(\d+))?', str(text or ''))
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def resolve_channel(manifest, channel=None, package=None):
    """(channel, currentCSV) from a PackageManifest: the given channel or ``status.defaultChannel``."""
    if not manifest:
        raise OlmError('PackageManifest %s not found in %s: check the CatalogSource and the package name'
                       % (package, catalog.MARKETPLACE_NAMESPACE))
    status = manifest.get('status') or {}
    chosen = channel or status.get('defaultChannel')
    channels = {entry.get('name'): entry for entry in status.get('channels') or []}
    if chosen not in channels:
        raise OlmError('PackageManifest %s has no channel %r (channels: %s): set the channel to one of them'
                       % (manifest['metadata']['name'], chosen, ', '.join(sorted(channels)) or 'none'))
    return chosen, channels[chosen].get('currentCSV')


def installplan_to_approve(plans, csv):
    """The name of the one unapproved plan whose spec.clusterServiceVersionNames holds ``csv``, or None.

    A plan for any other CSV is left alone: approving it would install past the pin (style §3)."""
    for plan in plans or []:
        spec = plan.get('spec') or {}
        if csv in (spec.get('clusterServiceVersionNames') or []) and not spec.get('approved'):
            return plan['metadata']['name']
    return None


def operator_groups_problem(groups, wanted):
    """'', or why the namespace's OperatorGroups forbid installing (OLM fails CSVs with
    TooManyOperatorGroups when a namespace holds more than one)."""
    others = sorted(group['metadata']['name'] for group in groups or [] if group['metadata']['name'] != wanted)
    if others:
        return ('namespace %s already holds OperatorGroup %s; OLM allows one per namespace '
                '(CSVs fail with TooManyOperatorGroups): delete it or set its name for this operator'
                % (groups[0]['metadata'].get('namespace'), ', '.join(others)))
    return ''


def below_floor(csv_name, floor):
    """True when the CSV's version is older than the catalog's floor."""
    version = version_tuple(csv_name)
    return version is not None and version < version_tuple(floor)


def alm_example(csv, kind):
    """The ``kind`` sample of a CSV's ``alm-examples`` annotation (JSON list)."""
    text = ((csv or {}).get('metadata') or {}).get('annotations', {}).get('alm-examples')
    if not text:
        raise OlmError('CSV %s has no alm-examples annotation' % (csv or {}).get('metadata', {}).get('name'))
    for sample in json.loads(text):
        if sample.get('kind') == kind:
            return sample
    raise OlmError('CSV %s alm-examples holds no %s sample' % (csv['metadata']['name'], kind))


def _conditions(obj):
    return {c.get('type'): c for c in (obj.get('status') or {}).get('conditions') or []}


def _name(obj):
    meta = obj.get('metadata') or {}
    return '%s %s%s' % (obj.get('kind'), (meta.get('namespace') + '/') if meta.get('namespace') else '', meta.get('name'))


def _one(kind, obj, expect):  # pylint: disable=too-many-return-statements,too-many-branches
    status = obj.get('status') or {}
    name = _name(obj)
    if kind == 'CatalogSource':
        state = (status.get('connectionState') or {}).get('lastObservedState')
        return 'ready' if state == 'READY' else 'pending: %s connectionState %s' % (name, state)
    if kind == 'Subscription':
        if expect.get('csv') and status.get('installedCSV') == expect['csv']:
            return 'ready'
        if not expect.get('csv') and status.get('installedCSV'):
            return 'ready'
        failed = [c for c in status.get('conditions') or [] if c.get('type') == 'ResolutionFailed' and c.get('status') == 'True']
        if failed:
            return 'failed: %s ResolutionFailed: %s' % (name, failed[0].get('message'))
        return 'pending: %s state %r installPlanRef %s' % (name, status.get('state', ''),
                                                           (status.get('installPlanRef') or {}).get('name'))
    if kind == 'InstallPlan':
        phase = status.get('phase', '')
        if phase == 'Complete':
            return 'ready'
        if phase == 'Failed':
            reasons = [c.get('message') for c in status.get('conditions') or [] if c.get('status') == 'False']
            return 'failed: %s phase Failed: %s' % (name, '; '.join(filter(None, reasons)) or 'no message')
        return 'pending: %s phase %s' % (name, phase or 'none')
    if kind == 'ClusterServiceVersion':
        phase = status.get('phase', '')
        if phase == catalog.CSV_SUCCEEDED:
            return 'ready'
        detail = '%s phase %s reason %s: %s' % (name, phase or 'none', status.get('reason'), status.get('message'))
        return ('pending: ' if phase in catalog.CSV_PENDING_PHASES else 'failed: ') + detail
    if kind == 'CustomResourceDefinition':
        established = _conditions(obj).get('Established', {})
        return 'ready' if established.get('status') == 'True' else 'pending: %s not Established' % name
    if kind == 'NodeFeatureDiscovery':
        conditions = _conditions(obj)
        if conditions.get('Degraded', {}).get('status') == 'True':
            return 'failed: %s Degraded: %s' % (name, conditions['Degraded'].get('message'))
        return 'ready' if conditions.get('Available', {}).get('status') == 'True' else 'pending: %s not Available' % name
    if kind in ('NicClusterPolicy', 'ClusterPolicy', 'MacvlanNetwork', 'HostDeviceNetwork', 'IPoIBNetwork'):
        state = status.get('state', '')
        if state == 'ready':
            return 'ready'
        if state in ('error', 'ignore', 'ignored'):
            return 'failed: %s state %s: %s' % (name, state, status.get('reason') or _applied_errors(status))
        return 'pending: %s state %s' % (name, state or 'none')
    if kind == 'SriovNetworkNodeState':
        sync = status.get('syncStatus', '')
        if sync == 'Failed':
            return 'failed: %s syncStatus Failed: %s' % (name, status.get('lastSyncError'))
        if sync == 'Succeeded' and not status.get('lastSyncError'):
            return 'ready'
        return 'pending: %s syncStatus %s' % (name, sync or 'none')
    if kind == 'MachineConfigPool':
        conditions = _conditions(obj)
        if conditions.get('Degraded', {}).get('status') == 'True':
            return 'failed: %s Degraded: %s' % (name, conditions['Degraded'].get('message'))
        if conditions.get('Updated', {}).get('status') == 'True' and conditions.get('Updating', {}).get('status') != 'True' \
                and status.get('observedGeneration', 0) >= obj['metadata'].get('generation', 0):
            return 'ready'
        return 'pending: %s updated %s/%s machines' % (name, status.get('updatedMachineCount'), status.get('machineCount'))
    if kind == 'Node':
        resource = expect.get('resource')
        if not resource:
            return 'ready'
        have = (status.get('allocatable') or {}).get(resource, '0')
        want = int(expect.get('at_least', 1))
        return 'ready' if int(have) >= want else 'pending: %s allocatable %s=%s' % (name, resource, have)
    if kind == 'Pod':
        phase = status.get('phase', '')
        if phase == 'Running':
            return 'ready'
        if phase in ('Failed', 'Succeeded'):
            return 'failed: %s phase %s' % (name, phase)
        return 'pending: %s phase %s' % (name, phase or 'none')
    if kind == 'NetworkAttachmentDefinition':
        return 'ready'
    raise OlmError('no verdict rule for kind %s' % kind)


def _applied_errors(status):
    return '; '.join('%s %s %s' % (s.get('name'), s.get('state'), s.get('message', ''))
                     for s in status.get('appliedStates') or [] if s.get('state') != 'ready') or 'no reason given'


def verdict(objects, kind=None, minimum=1, expect=None, **more):
    """One verdict over a k8s_info result: every object ready -> 'ready'; any failed -> that; else the
    first pending one.  Fewer than ``minimum`` objects is pending (nothing created yet).  ``expect``
    (and keyword arguments): csv for a Subscription, resource and at_least for Nodes."""
    expect = dict(expect or {}, **more)
    minimum = int(minimum)
    objects = list(objects or [])
    if len(objects) < minimum:
        return 'pending: %d of %d %s objects exist' % (len(objects), minimum, kind or 'expected')
    results = [_one(kind or obj.get('kind'), obj, expect) for obj in objects]
    for result in results:
        if result.startswith('failed'):
            return result
    for result in results:
        if result.startswith('pending'):
            return result
    return 'ready'


# All four operators at once: one read per kind and poll, one verdict naming the operator and its phase.
def plan(operators, manifests, channels=None):
    """Each catalog operator with its resolved ``channel`` and ``csv`` (from its PackageManifest)."""
    channels = channels or {}
    by_name = {manifest['metadata']['name']: manifest for manifest in manifests or []}
    resolved = []
    for operator in operators:
        try:
            channel, csv = resolve_channel(by_name.get(operator['package']), channels.get(operator['key']) or operator['channel'],
                                           operator['package'])
        except OlmError as error:
            raise OlmError('%s: %s' % (operator['title'], error)) from None
        resolved.append(dict(operator, channel=channel, csv=csv))
    return resolved


def group_problems(planned, groups):
    """One message per operator whose namespace holds an OperatorGroup other than the catalog's."""
    problems = []
    for operator in planned:
        mine = [group for group in groups or [] if group['metadata'].get('namespace') == operator['namespace']]
        problem = operator_groups_problem(mine, operator['operator_group'])
        if problem:
            problems.append('%s: %s' % (operator['title'], problem))
    return problems


def floor_reports(planned, subscriptions):
    """One message per operator whose installed CSV is older than its floor."""
    reports = []
    for operator in planned:
        sub = _find(subscriptions, operator['namespace'], operator['subscription'])
        installed = ((sub or {}).get('status') or {}).get('installedCSV')
        if installed and below_floor(installed, operator['floor']):
            reports.append('%s: installed %s is older than the floor %s; upgrade it through its Subscription'
                           % (operator['title'], installed, operator['floor']))
    return reports


def _find(objects, namespace, name):
    return next((obj for obj in objects or [] if obj['metadata'].get('namespace') == namespace
                 and obj['metadata']['name'] == name), None)


def progress(objects, planned, stage, subscriptions=None):
    """'ready', 'pending: OPERATOR: phase STAGE: ...' or 'failed: OPERATOR: phase STAGE: ...' for one stage of
    the OLM install of every planned operator: Subscription (has its InstallPlan), InstallPlan (Complete),
    ClusterServiceVersion (Succeeded), CustomResourceDefinition (Established)."""
    pending = []
    for operator in planned:
        title = operator['title']
        sub = _find(subscriptions if stage != 'Subscription' else objects, operator['namespace'], operator['subscription'])
        sub_status = (sub or {}).get('status') or {}
        if stage == 'Subscription':
            if sub is None:
                result = 'pending: Subscription %s/%s not found' % (operator['namespace'], operator['subscription'])
            elif sub_status.get('installPlanRef'):
                result = 'ready'
            else:
                result = _one('Subscription', sub, {'csv': '\0'})
            targets = [result]
        elif stage == 'InstallPlan':
            name = (sub_status.get('installPlanRef') or {}).get('name')
            found = _find(objects, operator['namespace'], name)
            targets = [_one('InstallPlan', found, {}) if found else 'pending: InstallPlan %s not found' % name]
        elif stage == 'ClusterServiceVersion':
            name = operator['csv'] if operator['pin_csv'] else sub_status.get('currentCSV')
            found = _find(objects, operator['namespace'], name)
            targets = [_one('ClusterServiceVersion', found, {}) if found else 'pending: CSV %s not created yet' % name]
        else:
            by_name = {obj['metadata']['name']: obj for obj in objects or []}
            targets = [_one('CustomResourceDefinition', by_name[crd], {}) if crd in by_name else 'pending: CRD %s absent' % crd
                       for crd in operator['crds']]
        for result in targets:
            if result.startswith('failed'):
                return 'failed: %s: phase %s: %s' % (title, stage, result.split(': ', 1)[1])
            if result.startswith('pending'):
                pending.append('pending: %s: phase %s: %s' % (title, stage, result.split(': ', 1)[1]))
    return pending[0] if pending else 'ready'
