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
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.k8s import readiness
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError


def version_tuple(text):
    """'v24.10.0-rc.1' / 'gpu-operator-certified.v24.9.2' -> (24, 10, 0)."""
    match = re.search(r'(\d+)\.(\d+)(?:\.(\d+))?', str(text or ''))
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def resolve_channel(manifest, channel=None, package=None):
    """(channel, currentCSV) from a PackageManifest: the given channel or ``status.defaultChannel``."""
    if not manifest:
        raise InputError('PackageManifest %s not found in %s: check the CatalogSource and the package name'
                         % (package, catalog.MARKETPLACE_NAMESPACE))
    status = manifest.get('status') or {}
    chosen = channel or status.get('defaultChannel')
    channels = {entry.get('name'): entry for entry in status.get('channels') or []}
    if chosen not in channels:
        raise InputError('PackageManifest %s has no channel %r (channels: %s): set the channel to one of them'
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
        raise InputError('CSV %s has no alm-examples annotation' % (csv or {}).get('metadata', {}).get('name'))
    for sample in json.loads(text):
        if sample.get('kind') == kind:
            return sample
    raise InputError('CSV %s alm-examples holds no %s sample' % (csv['metadata']['name'], kind))


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
        except InputError as error:
            raise InputError('%s: %s' % (operator['title'], error)) from None
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
                result = readiness.judge(sub, {'csv': '\0'})
            targets = [result]
        elif stage == 'InstallPlan':
            name = (sub_status.get('installPlanRef') or {}).get('name')
            found = _find(objects, operator['namespace'], name)
            targets = [readiness.judge(found) if found else 'pending: InstallPlan %s not found' % name]
        elif stage == 'ClusterServiceVersion':
            name = operator['csv'] if operator['pin_csv'] else sub_status.get('currentCSV')
            found = _find(objects, operator['namespace'], name)
            targets = [readiness.judge(found) if found else 'pending: CSV %s not created yet' % name]
        else:
            by_name = {obj['metadata']['name']: obj for obj in objects or []}
            targets = [readiness.judge(by_name[crd]) if crd in by_name else 'pending: CRD %s absent' % crd
                       for crd in operator['crds']]
        for result in targets:
            if result.startswith('failed'):
                return 'failed: %s: phase %s: %s' % (title, stage, result.split(': ', 1)[1])
            if result.startswith('pending'):
                pending.append('pending: %s: phase %s: %s' % (title, stage, result.split(': ', 1)[1]))
    return pending[0] if pending else 'ready'
