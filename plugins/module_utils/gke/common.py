# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the GKE modules share: plan errors, the field-by-field
comparison of managed fields, reading a node pool's Nodes from the cluster's Kubernetes API, and
writing a cluster's kubeconfig file.

Everything but ``read_node_names`` and the kubeconfig file is pure data, unit-tested on its own.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import time

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import families
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.catalog import gke as gke_catalog
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import ProportionalPoll, WaitReport, until

_MISSING = object()


def gke_family(machine_type, field='machine_type'):
    """The catalog family of a GKE GPU machine type, or InputError naming the GKE machine types."""
    try:
        family = families.get_family(machine_type, field=field)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if families.GKE not in family.platforms:
        raise InputError('%s: %s runs GPUDirect on Compute Engine only in this collection (no GKE manual covers it); use one of: %s'
                         % (field, family.machine_type, ', '.join(gke_catalog.GKE_MACHINE_TYPES)))
    return family


def dig(resource, dotted, default=None):
    """``dig(cluster, 'networkConfig.datapathProvider')``: a nested field, or ``default``."""
    value = resource
    for part in dotted.split('.'):
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return value


def capacity_message(error, what):
    code = error.capacity_code
    if not code:
        return None
    if 'QUOTA' in code:
        return ('%s: %s -- the project lacks quota (%s); request more GPU quota for the region, or use a reservation '
                '(reservation_affinity specific) that holds the GPUs' % (what, code, error.message))
    return ('%s: %s -- Google Cloud has no free capacity for the machine type in the node locations now (%s); use a '
            'reservation, other node_locations, flex-start or spot, or rerun later' % (what, code, error.message))


# ---------------------------------------------------------------------------------------------
# The cluster's Kubernetes API


NODE_POOL_LABEL = 'cloud.google.com/gke-nodepool'
# GKE labels every Node with the name of its node pool.


def read_node_names(transport, endpoint, ca_certificate, pool, expected=None, timeout=0.0, sleep=time.sleep):
    """Names of the Nodes of ``pool``, read from the cluster's Kubernetes API (GET /api/v1/nodes with
    labelSelector cloud.google.com/gke-nodepool=POOL), with the module's own bearer token (GKE takes
    the Google OAuth access token that gke-gcloud-auth-plugin would print) and the cluster's CA.

    With ``expected`` and ``timeout``, polls until that many Nodes are registered or the time is up
    (the VMs register through their kubelets after the pool's operation is DONE), as operations are polled
    (ProportionalPoll: soon after they register, whether that takes a second or minutes).
    """
    ca_file = tempfile.NamedTemporaryFile('wb', suffix='.pem', delete=False)
    try:
        ca_file.write(base64.b64decode(ca_certificate or ''))
        ca_file.close()
        url = 'https://%s/api/v1/nodes' % endpoint

        def read():
            headers = {'Accept': 'application/json'}
            transport.credentials.authorize(headers)
            response = transport.session.get(url, params={'labelSelector': '%s=%s' % (NODE_POOL_LABEL, pool)}, headers=headers,
                                             verify=ca_file.name, timeout=(10, 30))
            if response.status_code != 200:
                raise InputError('read the Nodes of node pool %s from the cluster API %s: HTTP %s %s; give the module credentials the '
                                 'cluster accepts, or set read_nodes: false' % (pool, endpoint, response.status_code, response.text[:200]))
            return sorted(item['metadata']['name'] for item in response.json().get('items', []))
        report = WaitReport('Nodes of node pool %s' % pool, describe=lambda names: '%d of %s registered' % (len(names), expected))
        names, _done = until(read, lambda names: expected is None or len(names) >= expected, timeout, ProportionalPoll().delays(), sleep=sleep,
                             report=report)
        return names
    finally:
        os.unlink(ca_file.name)


def kubeconfig(cluster_name, endpoint, ca_certificate):
    """A kubeconfig for the cluster whose user runs gke-gcloud-auth-plugin (no secret in it), as
    ``gcloud container clusters get-credentials`` writes it."""
    return {
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': cluster_name,
        'clusters': [{'name': cluster_name, 'cluster': {'server': 'https://%s' % endpoint, 'certificate-authority-data': ca_certificate}}],
        'contexts': [{'name': cluster_name, 'context': {'cluster': cluster_name, 'user': cluster_name}}],
        'users': [{'name': cluster_name, 'user': {'exec': {
            'apiVersion': 'client.authentication.k8s.io/v1beta1', 'command': 'gke-gcloud-auth-plugin',
            'installHint': 'Install gke-gcloud-auth-plugin for use with kubectl by following '
                           'https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin',
            'provideClusterInfo': True}}}],
    }


# How kubernetes.core authenticates to a GKE cluster (the GKE playbooks' gpudirect_kube_credentials, the
# gke_kube_connection lookup's credentials): a token of the collection's own from google-auth, or the kubeconfig whose
# user runs gke-gcloud-auth-plugin; auto picks the plugin only where it is on PATH.
AUTO, GOOGLE_AUTH, GKE_GCLOUD_AUTH_PLUGIN = 'auto', 'google_auth', 'gke_gcloud_auth_plugin'
KUBE_CREDENTIALS = (AUTO, GOOGLE_AUTH, GKE_GCLOUD_AUTH_PLUGIN)
AUTH_PLUGIN = 'gke-gcloud-auth-plugin'


def check_kube_credentials(value, field='kube_credentials'):
    """An InputError naming ``field`` unless ``value`` is one of KUBE_CREDENTIALS."""
    if value not in KUBE_CREDENTIALS:
        raise InputError('%s: %r is not one of %s; give auto (google_auth unless %s is on PATH), google_auth (a token of the '
                         "collection's own from google-auth: no gcloud needed) or gke_gcloud_auth_plugin"
                         % (field, value, ', '.join(KUBE_CREDENTIALS), AUTH_PLUGIN))


def kube_credentials(choice, kubeconfig_path, which):
    """GOOGLE_AUTH or GKE_GCLOUD_AUTH_PLUGIN for ``choice``: auto is the plugin where ``which`` finds it on PATH and a
    kubeconfig file is given, else google_auth."""
    check_kube_credentials(choice, 'credentials')
    if choice == GKE_GCLOUD_AUTH_PLUGIN and not kubeconfig_path:
        raise InputError('credentials: gke_gcloud_auth_plugin needs kubeconfig_path, the kubeconfig file gke_gpudirect_cluster writes')
    if choice == AUTO:
        return GKE_GCLOUD_AUTH_PLUGIN if kubeconfig_path and which(AUTH_PLUGIN) else GOOGLE_AUTH
    return choice


def kubeconfig_cluster(config):
    """(server URL, base64 CA) of the one cluster of a kubeconfig that kubeconfig() made."""
    try:
        cluster = config['clusters'][0]['cluster']
        return cluster['server'], cluster['certificate-authority-data']
    except (KeyError, IndexError, TypeError):
        raise InputError('the kubeconfig has no cluster with server and certificate-authority-data; give the kubeconfig '
                         'gke_gpudirect_cluster returns') from None


KUBECONFIG_LISTS = ('clusters', 'contexts', 'users')


def read_kubeconfig(path):
    """The kubeconfig at ``path`` as (dict, 'json' | 'yaml'), or (None, None) when there is no file; raise InputError
    naming kubeconfig_path for what cannot be merged into (a directory, an unreadable file, one that is not a
    kubeconfig)."""
    path = os.path.expanduser(path)
    if os.path.isdir(path):
        raise InputError('kubeconfig_path: %s is a directory; give a file path, e.g. %s' % (path, os.path.join(path, 'config')))
    try:
        with open(path, encoding='utf-8') as handle:
            text = handle.read()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise InputError('kubeconfig_path: cannot read %s (%s); give a file this user can read and write' % (path, exc.strerror)) from None
    try:
        return (json.loads(text) if text.strip() else {}), 'json'
    except ValueError:
        pass
    import yaml  # pylint: disable=import-outside-toplevel  # Ansible's own dependency; only for a file written as YAML
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise InputError('kubeconfig_path: %s is neither JSON nor YAML (%s); give a kubeconfig file or a new path'
                         % (path, str(exc).splitlines()[0])) from None
    if not isinstance(config, dict) or config.get('kind', 'Config') != 'Config' or any(
            not isinstance(config.get(key) or [], list) for key in KUBECONFIG_LISTS):
        raise InputError('kubeconfig_path: %s is not a kubeconfig (kind Config with lists clusters, contexts, users); give a '
                         'kubeconfig file or a new path' % path)
    return config, 'yaml'


def merged_kubeconfig(existing, config):
    """``existing`` with the entries of ``config`` set by name and its current context, as ``gcloud container clusters
    get-credentials`` merges into a kubeconfig: the file's other clusters, contexts, users and settings stay."""
    merged = dict(existing or {})
    for key in ('apiVersion', 'kind'):
        merged.setdefault(key, config[key])
    for key in KUBECONFIG_LISTS:
        ours = {entry['name']: entry for entry in config[key]}
        kept = [entry for entry in merged.get(key) or [] if entry.get('name') not in ours]
        merged[key] = kept + list(ours.values())
    merged['current-context'] = config['current-context']
    return merged


def kubeconfig_update(path, config):
    """(the file's content with the kubeconfig ``config`` (a dict) merged in, its format) when the file ``path`` does
    not already hold it, else None. merged_kubeconfig says what else the file holds stays."""
    existing, form = read_kubeconfig(os.path.expanduser(path))
    merged = merged_kubeconfig(existing, config)
    return None if existing == merged else (merged, form)


def write_kubeconfig(path, merged, form):
    """Write kubeconfig_update's content to ``path``. A new file is JSON, which kubectl and kubernetes.core read as the
    YAML it is; an existing file keeps its format. Mode 0600 (it holds no secret, like gcloud's, but is the user's),
    its directory created with mode 0700, replaced in one rename."""
    path = os.path.expanduser(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    handle = tempfile.NamedTemporaryFile('w', encoding='utf-8', dir=directory, prefix='.kubeconfig-', delete=False)
    try:
        with handle:
            if form == 'yaml':
                import yaml  # pylint: disable=import-outside-toplevel
                yaml.safe_dump(merged, handle, default_flow_style=False, sort_keys=False)
            else:
                json.dump(merged, handle, indent=2, sort_keys=True)
                handle.write('\n')
        os.chmod(handle.name, 0o600)
        os.replace(handle.name, path)
    finally:
        if os.path.exists(handle.name):
            os.unlink(handle.name)
