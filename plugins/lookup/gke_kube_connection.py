# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: gke_kube_connection
short_description: The kubernetes.core connection options of a GKE cluster, with a token from google-auth or through gke-gcloud-auth-plugin
version_added: 0.1.0
description:
  - Gives the connection options of M(kubernetes.core.k8s) (and of every module of C(group/kubernetes.core.k8s), the
    C(kubernetes.core.k8s) lookup and this collection's Kubernetes actions) for a GKE cluster, from the kubeconfig
    M(aiinfra.gpudirect.gke_gpudirect_cluster) returns (RV(aiinfra.gpudirect.gke_gpudirect_cluster#module:kubeconfig),
    the cluster's endpoint and CA from the Container API).
  - With O(credentials=google_auth), C(host) (the cluster's endpoint), C(api_key) (a Google OAuth access token from
    google-auth, scope C(cloud-platform), which GKE takes as C(gke-gcloud-auth-plugin) would print it) and C(ca_cert)
    (the cluster's CA, written to a file in this run's local temporary directory, which ansible-core removes at the
    end). Neither gcloud nor C(gke-gcloud-auth-plugin) is needed, as in the collection's execution environment.
  - The credentials are the collection's own, as its Google Cloud modules get them (M(aiinfra.gpudirect.gke_gpudirect_cluster)'s
    O(aiinfra.gpudirect.gke_gpudirect_cluster#module:auth_kind) and the others); the options below, else the C(GCP_*)
    environment variables of the controller (those AWX's Google Compute Engine credential sets, such as
    C(GCP_AUTH_KIND=serviceaccount) and C(GCP_SERVICE_ACCOUNT_FILE)), else application default credentials
    (C(google.auth.default())). C(auth_kind=none) gives no token and is refused here.
  - With O(credentials=gke_gcloud_auth_plugin), C(kubeconfig) (O(kubeconfig_path), the file
    M(aiinfra.gpudirect.gke_gpudirect_cluster) writes, whose user runs C(gke-gcloud-auth-plugin)).
  - With O(credentials=auto), C(google_auth) when C(gke-gcloud-auth-plugin) is not on the controller's E(PATH) or no
    O(kubeconfig_path) is given, else C(gke_gcloud_auth_plugin).
  - Each use of the lookup asks google-auth for a valid token (it refreshes an expired one), so a variable set to
    this lookup gives every task a token that has not expired. The token is a secret; pass it only as C(api_key),
    a C(no_log) option of kubernetes.core and of this collection's Kubernetes actions, and never set a fact to the
    result (facts are shown at C(-v)).
author:
  - aiinfra.gpudirect contributors (@aiinfra)
requirements:
  - google-auth >= 2.29 (for O(credentials=google_auth))
options:
  _terms:
    description: The cluster's kubeconfig, as M(aiinfra.gpudirect.gke_gpudirect_cluster) returns it (one cluster and its CA).
    required: true
    type: dict
  credentials:
    description: How kubernetes.core authenticates to the cluster (see the description).
    type: str
    choices: [auto, google_auth, gke_gcloud_auth_plugin]
    default: auto
  kubeconfig_path:
    description: The kubeconfig file M(aiinfra.gpudirect.gke_gpudirect_cluster) wrote (O(credentials=gke_gcloud_auth_plugin)).
    type: str
    default: ""
  auth_kind:
    description: As the collection's modules' O(aiinfra.gpudirect.gke_gpudirect_cluster#module:auth_kind); unset, E(GCP_AUTH_KIND), else V(application).
    type: str
    choices: [application, serviceaccount, accesstoken, machineaccount, none]
  service_account_file:
    description: A service account key file (O(auth_kind=serviceaccount)); unset, E(GCP_SERVICE_ACCOUNT_FILE).
    type: path
  service_account_contents:
    description: A service account key as JSON text (O(auth_kind=serviceaccount)); unset, E(GCP_SERVICE_ACCOUNT_CONTENTS).
    type: str
  access_token:
    description: An OAuth access token (O(auth_kind=accesstoken)); unset, E(GCP_ACCESS_TOKEN).
    type: str
  scopes:
    description: OAuth scopes; unset, E(GCP_SCOPES), else C(https://www.googleapis.com/auth/cloud-platform).
    type: list
    elements: str
notes:
  - The GKE playbooks set this once, from C(gpudirect_kube_credentials), as the play's C(module_defaults) for
    C(group/kubernetes.core.k8s) and as the C(gke_gpudirect_kube_connection) / C(gke_rdma_kube_connection) of their roles.
seealso:
  - module: aiinfra.gpudirect.gke_gpudirect_cluster
"""

EXAMPLES = r"""
- name: Cluster (its kubeconfig in the result)
  aiinfra.gpudirect.gke_gpudirect_cluster:
    name: a3mega
    location: us-central1
    machine_type: a3-megagpu-8g
    kubeconfig_path: ~/.kube/aiinfra-gpudirect-a3mega.yaml
  register: cluster

- name: The DaemonSets, with a token of the collection's own (no gcloud, no gke-gcloud-auth-plugin)
  kubernetes.core.k8s_info:
    kind: DaemonSet
    namespace: kube-system
    host: "{{ connection.host }}"
    api_key: "{{ connection.api_key }}"
    ca_cert: "{{ connection.ca_cert }}"
  vars:
    # a variable, not a fact: each task that uses it gets a token that has not expired
    connection: "{{ lookup('aiinfra.gpudirect.gke_kube_connection', cluster.kubeconfig, credentials='google_auth') }}"

- name: The Nodes, through the kubernetes.core.k8s lookup with the same connection
  ansible.builtin.debug:
    msg: "{{ query('kubernetes.core.k8s', kind='Node', **connection) | map(attribute='metadata.name') }}"
  vars:
    connection: "{{ lookup('aiinfra.gpudirect.gke_kube_connection', cluster.kubeconfig) }}"
"""

RETURN = r"""
_value:
  description:
    - The connection options, for C(module_defaults) of C(group/kubernetes.core.k8s) or as keyword arguments of the
      C(kubernetes.core.k8s) lookup.
    - "O(credentials=google_auth): C(host), C(api_key), C(ca_cert); O(credentials=gke_gcloud_auth_plugin): C(kubeconfig)."
  type: dict
"""

import base64
import hashlib
import json
import os
import shutil
import tempfile

from ansible import constants as C
from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.transport import load_credentials, resolve_settings
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import common

SETTINGS = ('auth_kind', 'service_account_file', 'service_account_contents', 'access_token', 'scopes')
# The credentials of each setting in this process (a task's worker): a task templates the connection once per option
# it passes, and google-auth refreshes a token only when it has expired.
_CREDENTIALS = {}


def write_ca(ca_data, directory):
    """The path of a file holding the PEM of ``ca_data`` (base64, as the Container API gives it), written once per content."""
    pem = base64.b64decode(ca_data)
    path = os.path.join(directory, 'gke-ca-%s.pem' % hashlib.sha256(pem).hexdigest()[:16])
    if not os.path.exists(path):
        os.makedirs(directory, mode=0o700, exist_ok=True)
        handle = tempfile.NamedTemporaryFile('wb', dir=directory, prefix='.gke-ca-', delete=False)
        with handle:
            handle.write(pem)
        os.replace(handle.name, path)
    return path


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1 or not isinstance(terms[0], dict):
            raise AnsibleLookupError('gke_kube_connection: give one term, the cluster\'s kubeconfig (gke_gpudirect_cluster\'s result '
                                     'kubeconfig); got %d terms' % len(terms))
        try:
            server, ca_data = common.kubeconfig_cluster(terms[0])
            method = common.kube_credentials(self.get_option('credentials'), self.get_option('kubeconfig_path'), shutil.which)
        except ValueError as exc:
            raise AnsibleLookupError('gke_kube_connection: %s' % exc) from None
        if method == common.GKE_GCLOUD_AUTH_PLUGIN:
            return [{'kubeconfig': os.path.expanduser(self.get_option('kubeconfig_path'))}]
        settings = resolve_settings({name: self.get_option(name) for name in SETTINGS})
        try:
            key = json.dumps(settings, sort_keys=True)
            if key not in _CREDENTIALS:
                _CREDENTIALS[key] = load_credentials(settings)
            credentials = _CREDENTIALS[key]
            if credentials is None:
                raise GcpError('authenticate', 'auth_kind none (GCP_AUTH_KIND) gives no token for the cluster\'s API; set auth_kind '
                                               '(GCP_AUTH_KIND) to application, serviceaccount, accesstoken or machineaccount, or use '
                                               'credentials gke_gcloud_auth_plugin')
            headers = {}
            credentials.authorize(headers)
        except GcpError as exc:
            raise AnsibleLookupError('gke_kube_connection: credentials google_auth: %s' % exc) from None
        return [{'host': server, 'api_key': headers['Authorization'].split(' ', 1)[1],
                 'ca_cert': write_ca(ca_data, C.DEFAULT_LOCAL_TMP)}]
