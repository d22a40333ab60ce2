#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# The action plugin plugins/action/k8s_converge.py does the work; this file holds its documentation.

DOCUMENTATION = r"""
---
module: k8s_converge
short_description: Server-side apply only the Kubernetes objects that differ, or delete only those the collection wrote, each in the diff
version_added: 0.1.0
description:
  - >-
    With O(state=present), reads the live copy of the given objects (one read per kind and namespace: a list, or a get by
    name for a kind with one object there), then server-side applies, in order, each object whose live copy does not
    already hold it. An object holds when the live copy has every field and value given (a number given where the live
    copy has text, such as a quantity, compared as text) and the annotation C(aiinfra.gpudirect/applied-hash) that this
    action adds to each object applied, a hash of the object as given, which catches a field no longer given (the
    apply then removes it). A rerun sends no write.
  - A field another field manager changed after the apply (C(kubectl set image), C(kubectl edit)) makes the API server
    refuse that object with 409 Conflict; the objects after it are still applied, and the task fails naming the object,
    the fields, their manager and the way out (O(force_conflicts), named as O(force_conflicts_variable)). Any other
    refusal stops at that object (a later object may need it), named with the API server's code, reason and message.
  - With O(state=absent), deletes, in order, each given object that exists and that one of O(delete_managers) wrote (its
    C(metadata.managedFields) name it); the others are left alone and named in RV(left_alone) and a warning.
author:
  - aiinfra.gpudirect contributors (@aiinfra)
attributes:
  check_mode:
    support: full
    details: >-
      Applies are the API server's dry runs (C(dryRun=All)), so its validation and defaulting still answer; a kind the
      server does not serve yet (its CRD installed by an earlier step that check mode did not run) is reported as a change.
      Nothing is deleted; what would be is reported.
  diff_mode:
    support: full
    details: >-
      One diff per object applied (the live copy before, the API server's answer after) or deleted (before, nothing
      after), without C(metadata.managedFields) and C(metadata.resourceVersion).
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - aiinfra.gpudirect.kube_action
options:
  objects:
    description:
      - >-
        The objects, each with C(apiVersion), C(kind), C(metadata.name) and, when namespaced, C(metadata.namespace); for
        O(state=present) as they should be, for O(state=absent) as rendered or as read (only those fields are used).
    type: list
    elements: dict
    required: true
  state:
    description: Apply what differs (C(present)) or delete what the collection wrote (C(absent)).
    type: str
    choices: [present, absent]
    default: present
  field_manager:
    description: The field manager of the applies; with O(state=absent), the one whose objects are deleted unless O(delete_managers) is set.
    type: str
    required: true
  delete_managers:
    description: With O(state=absent), delete the objects any of these field managers wrote (default O(field_manager) alone).
    type: list
    elements: str
  delete_unmanaged:
    description: With O(state=absent), delete every given object that exists, whoever wrote it.
    type: bool
    default: false
  force_conflicts:
    description: Take fields another field manager owns (server-side apply's C(force=true)).
    type: bool
    default: false
  force_conflicts_variable:
    description: The name a conflict's message gives for O(force_conflicts), such as the role variable that sets it.
    type: str
    default: force_conflicts
  wait:
    description: With O(state=absent), wait until each object is gone before the next is deleted (a finalizer, an operator), read every second.
    type: bool
    default: false
  timeout:
    description:
      - Seconds to wait for each object with O(wait).
      - C(wait_timeout) is its old name, deprecated (removed in 1.0.0).
    type: int
    default: 120
    aliases: [wait_timeout]
seealso:
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
- >-
  name: Apply the objects that differ
  aiinfra.gpudirect.k8s_converge:
    objects: "{{ lookup('ansible.builtin.file', 'objects.json') | from_json }}"
    field_manager: my.team.release
    force_conflicts_variable: release_force_conflicts
    force_conflicts: "{{ release_force_conflicts | default(false) }}"

- >-
  name: Delete them again, each one shown by --diff, only where this field manager made them
  aiinfra.gpudirect.k8s_converge:
    objects: "{{ lookup('ansible.builtin.file', 'objects.json') | from_json | reverse | list }}"
    state: absent
    field_manager: my.team.release
    wait: true
"""

RETURN = r"""
applied:
  description: C(KIND NAME) or C(KIND NAMESPACE/NAME) of each object applied (in check mode, that would be).
  returned: O(state=present)
  type: list
  elements: str
  sample: [DaemonSet kube-system/nccl-tcpxo-installer, Network vpc1]
unchanged:
  description: The objects whose live copy already held them (not sent).
  returned: O(state=present)
  type: list
  elements: str
  sample: [Network vpc2]
conflicts:
  description: For each object refused with a field-manager conflict, what the message says of it.
  returned: when an object was in conflict
  type: list
  elements: str
removed:
  description: The objects deleted (in check mode, that would be).
  returned: O(state=absent)
  type: list
  elements: str
  sample: [MacvlanNetwork rdmashared-net]
left_alone:
  description: The objects not deleted because none of the field managers wrote them, each with the managers that did.
  returned: O(state=absent)
  type: list
  elements: str
  sample: [Namespace openshift-nfd (written by kubectl-create)]
"""
