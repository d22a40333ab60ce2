#!/usr/bin/python
# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# The action plugin plugins/action/k8s_delete.py does the work; this file holds its documentation.

DOCUMENTATION = r"""
---
module: k8s_delete
short_description: Delete Kubernetes objects through kubernetes.core.k8s and show each one in the diff
version_added: 0.1.0
description:
  - Deletes the given objects (as read, for example with the C(kubernetes.core.k8s) lookup) with one
    M(kubernetes.core.k8s) call (O(kubernetes.core.k8s#module:state=absent), a list of definitions, deleted in order).
  - M(kubernetes.core.k8s) returns no diff for a deletion; this action adds one for each object that existed, its
    definition before and nothing after (the after header is the object's kind and name followed by the word deleted
    in parentheses), so C(ansible-playbook --diff) shows what was removed (with C(--check), what would be removed).
  - C(metadata.managedFields) is left out of the diff.
  - An object already gone is not changed and not shown.
author:
  - aiinfra.gpudirect contributors (@aiinfra)
attributes:
  action:
    support: full
    details: Runs M(kubernetes.core.k8s) on the target.
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: M(kubernetes.core.k8s) runs in check mode (nothing is deleted); the diff shows what would be removed.
  diff_mode:
    support: full
    details: Each deleted object's definition before, nothing after.
  platform:
    support: full
    platforms: posix
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
requirements:
  - the kubernetes.core collection and, on the target, the Python libraries M(kubernetes.core.k8s) needs
options:
  objects:
    description:
      - The objects to delete, each with C(apiVersion), C(kind), C(metadata.name) and, when namespaced,
        C(metadata.namespace); the rest of each object is what the diff shows.
    type: list
    elements: dict
    required: true
  kubeconfig:
    description: Passed to M(kubernetes.core.k8s) (its O(kubernetes.core.k8s#module:kubeconfig)), a path or a dict.
    type: raw
  context:
    description: Passed to M(kubernetes.core.k8s) (its O(kubernetes.core.k8s#module:context)).
    type: str
  wait:
    description: Wait until each object is gone (not in check mode).
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for each object.
    type: int
    default: 120
  wait_sleep:
    description: Seconds between checks while waiting.
    type: int
    default: 5
  field_managers:
    description:
      - Delete only the objects one of these field managers wrote (their C(metadata.managedFields) name it), for example
        the field manager of the applies that made them; the others are left alone, named in RV(left_alone) and a warning.
      - Unset, every object given is deleted.
    type: list
    elements: str
seealso:
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
- name: Read the ConfigMaps of an old release
  ansible.builtin.set_fact:
    old_config_maps: "{{ query('kubernetes.core.k8s', kind='ConfigMap', namespace='demo', label_selector='release=old') }}"

- name: Delete them, each one shown by --diff
  aiinfra.gpudirect.k8s_delete:
    objects: "{{ old_config_maps }}"
    wait: true
"""

RETURN = r"""
removed:
  description: C(KIND NAME) or C(KIND NAMESPACE/NAME) of each object deleted (in check mode, that would be deleted).
  returned: success
  type: list
  elements: str
  sample: [MacvlanNetwork rdmashared-net, SriovNetwork openshift-sriov-network-operator/sriov-network]
left_alone:
  description: The objects not deleted because none of O(field_managers) wrote them, each with the managers that did.
  returned: when O(field_managers) left an object alone
  type: list
  elements: str
  sample: [Namespace openshift-nfd (written by kubectl-create)]
"""
