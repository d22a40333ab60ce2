# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's Kubernetes actions (k8s_converge, k8s_wait, pod_exec) share: where they run and how they connect
(plugins/plugin_utils/kube_client.py)."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    DOCUMENTATION = r"""
attributes:
  action:
    support: full
    details: Runs on the controller in the worker process, whatever the host's connection.
  async:
    support: none
  bypass_host_loop:
    support: none
  platform:
    support: full
    platforms: posix
requirements:
  - the kubernetes.core collection and, on the controller, the C(kubernetes) Python library it needs
notes:
  - >-
    Runs in the task's worker on the controller, with kubernetes.core's own client and authentication (its
    O(kubernetes.core.k8s#module:kubeconfig) and O(kubernetes.core.k8s#module:context) handling); no module process. The
    connection options a play's C(module_defaults) give C(group/kubernetes.core.k8s) or M(kubernetes.core.k8s)
    (C(kubeconfig), C(context), C(host), C(api_key) and the others of kubernetes.core) apply here too, below this task's
    O(kubeconfig), O(context), O(host), O(api_key) and O(ca_cert).
options:
  kubeconfig:
    description: A kubeconfig path or a dict, as M(kubernetes.core.k8s)'s O(kubernetes.core.k8s#module:kubeconfig); unset, kubernetes.core's defaults.
    type: raw
  context:
    description: The kubeconfig context, as M(kubernetes.core.k8s)'s O(kubernetes.core.k8s#module:context).
    type: str
  host:
    description:
      - The API server's URL, as M(kubernetes.core.k8s)'s O(kubernetes.core.k8s#module:host); with O(api_key), no
        kubeconfig is read (the lookup P(aiinfra.gpudirect.gke_kube_connection#lookup) gives both for a GKE cluster).
    type: str
  api_key:
    description: A bearer token, as M(kubernetes.core.k8s)'s O(kubernetes.core.k8s#module:api_key).
    type: str
  ca_cert:
    description: The path of the API server's CA certificate, as M(kubernetes.core.k8s)'s O(kubernetes.core.k8s#module:ca_cert).
    type: path
"""
