"""The lookup aiinfra.gpudirect.gke_kube_connection, as the GKE playbooks use it (gpudirect_kube_credentials), run by the
real ansible against the kubeconfig gke_gpudirect_cluster returns: google_auth gives kubernetes.core host, api_key (the
token google-auth gives for the GCP_* variables) and ca_cert (the cluster's CA in a file); auto picks it where
gke-gcloud-auth-plugin is not on PATH and the plugin's kubeconfig where it is; a token google-auth cannot give, or a
way the collection lacks, is an error that says what to set."""

import base64
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.errors import InputError
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gke import common
from playbook_runner import collections_path

CA_PEM = '-----BEGIN CERTIFICATE-----\nTUlJQ3N0YW5kLWluLWNh\n-----END CERTIFICATE-----\n'   # any PEM text: the lookup only copies it
KUBECONFIG = common.kubeconfig('c1', '127.0.0.1:6443', base64.b64encode(CA_PEM.encode()).decode())


def connection(tmp_path, options, path_has_plugin, **env):
    """The lookup's value, through ansible's debug module (the real templating and plugin loading), or the failure text."""
    bindir = tmp_path / 'bin'
    bindir.mkdir(exist_ok=True)
    if path_has_plugin:
        plugin = bindir / 'gke-gcloud-auth-plugin'
        plugin.write_text('#!/bin/sh\nexit 1\n')
        plugin.chmod(0o755)
    term = "lookup('aiinfra.gpudirect.gke_kube_connection', cluster, %s)" % ', '.join('%s=%r' % item for item in options.items())
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible'), 'localhost', '-m', 'ansible.builtin.debug',
                          '-a', 'msg={{ %s | to_json }}' % term, '-e', json.dumps({'cluster': KUBECONFIG})],
                         env=dict({k: v for k, v in os.environ.items() if not k.startswith(('GCP_', 'ANSIBLE_'))},
                                  ANSIBLE_COLLECTIONS_PATH=collections_path(), PATH='%s:%s' % (bindir, os.path.dirname(sys.executable)),
                                  ANSIBLE_LOCALHOST_WARNING='False', ANSIBLE_NOCOLOR='1', HOME=str(tmp_path), **env),
                         capture_output=True, text=True, timeout=120, check=False)
    if run.returncode != 0:
        return run.stdout + run.stderr
    shown = run.stdout[run.stdout.index('{'):]
    return json.loads(json.loads(shown)['msg'])


def test_google_auth_gives_host_token_and_the_clusters_ca_in_a_file(tmp_path):
    found = connection(tmp_path, {'credentials': 'auto', 'kubeconfig_path': str(tmp_path / 'kubeconfig')}, False,
                       GCP_AUTH_KIND='accesstoken', GCP_ACCESS_TOKEN='ya29.from-the-environment')
    assert isinstance(found, dict), found
    assert sorted(found) == ['api_key', 'ca_cert', 'host'] and found['host'] == 'https://127.0.0.1:6443'
    assert found['api_key'] == 'ya29.from-the-environment'
    # in the run's own temporary folder, which ansible-core removes at its end
    assert found['ca_cert'].startswith(str(tmp_path / '.ansible' / 'tmp')) and not os.path.exists(found['ca_cert'])
    # the option wins over the environment, as the collection's modules take it
    found = connection(tmp_path, {'credentials': 'google_auth', 'auth_kind': 'accesstoken', 'access_token': 'ya29.option'}, True,
                       GCP_AUTH_KIND='none')
    assert found['api_key'] == 'ya29.option'


def test_auto_takes_the_plugins_kubeconfig_where_the_plugin_is_on_path(tmp_path):
    path = str(tmp_path / 'kubeconfig')
    assert connection(tmp_path, {'kubeconfig_path': path}, True, GCP_AUTH_KIND='none') == {'kubeconfig': path}
    assert connection(tmp_path, {'credentials': 'gke_gcloud_auth_plugin', 'kubeconfig_path': path}, False) == {'kubeconfig': path}


@pytest.mark.parametrize('options, env, message', [
    ({'credentials': 'google_auth'}, {'GCP_AUTH_KIND': 'none'},
     'credentials google_auth: Failed to authenticate: auth_kind none (GCP_AUTH_KIND) gives no token'),
    ({'credentials': 'google_auth'}, {'GCP_AUTH_KIND': 'accesstoken'}, 'auth_kind accesstoken needs access_token (or GCP_ACCESS_TOKEN)'),
    ({'credentials': 'gke_gcloud_auth_plugin'}, {}, 'credentials: gke_gcloud_auth_plugin needs kubeconfig_path'),
    ({'credentials': 'kubectl'}, {}, "credentials"),
])
def test_what_cannot_work_is_an_error_that_says_what_to_set(tmp_path, options, env, message):
    found = connection(tmp_path, options, False, **env)
    assert isinstance(found, str) and message in found, found


def test_the_choice_of_credentials():
    which = {'gke-gcloud-auth-plugin': '/usr/bin/gke-gcloud-auth-plugin'}.get
    assert common.kube_credentials('auto', '/k', which) == common.GKE_GCLOUD_AUTH_PLUGIN
    assert common.kube_credentials('auto', '', which) == common.GOOGLE_AUTH   # no kubeconfig file to hand the plugin
    assert common.kube_credentials('auto', '/k', lambda name: None) == common.GOOGLE_AUTH
    assert common.kube_credentials('google_auth', '/k', which) == common.GOOGLE_AUTH
    with pytest.raises(InputError, match="credentials: 'gcloud' is not one of auto, google_auth, gke_gcloud_auth_plugin"):
        common.kube_credentials('gcloud', '/k', which)
    with pytest.raises(InputError, match='kubeconfig has no cluster'):
        common.kubeconfig_cluster({'clusters': []})
