"""gke_gpudirect_cluster against the Container API sandbox: plan, create, rerun, adopt, refuse, update in place, delete."""

import pytest
import yaml

from ansible_collections.aiinfra.gpudirect.plugins.modules import gke_gpudirect_cluster
from module_runner import run_module

PROJECT = 'sandbox-project'
ZONE = 'us-central1-a'
PATH = 'projects/%s/locations/%s/clusters/' % (PROJECT, ZONE)


@pytest.fixture
def cluster(sandbox):
    base = {'project': PROJECT, 'auth_kind': 'none', 'container_endpoint': sandbox.container_url, 'location': ZONE,
            'cluster': 'mega', 'machine_type': 'a3-megagpu-8g'}

    def run(check_mode=False, diff=False, **overrides):
        return run_module(gke_gpudirect_cluster.main, dict(base, **overrides), check_mode=check_mode, diff=diff)
    return run


def mutating(sandbox, since=0):
    return [(e['method'], e['path'].split('?')[0]) for e in sandbox.request_log()[since:] if e['method'] in ('POST', 'PUT', 'PATCH', 'DELETE')]


def create_with_api(api, name, **cluster):
    body = {'cluster': dict({'name': name, 'initialClusterVersion': '1.33.5-gke.1308000',
                             'nodePools': [{'name': 'default-pool', 'initialNodeCount': 1}]}, **cluster)}
    api.must('POST', '/v1/projects/%s/locations/%s/clusters' % (PROJECT, ZONE), body)


def test_check_mode_plans_the_seed_cluster_without_a_mutating_request(sandbox, cluster):
    result = cluster(check_mode=True, diff=True)
    assert result['changed'] is True, result
    assert result['actions'] == ['create cluster mega (1.35.7-gke.1222000)'], 'the location default meets the TCPXO floor'
    assert result['diff']['before'] is None
    assert result['diff']['after']['networkConfig.datapathProvider'] == 'ADVANCED_DATAPATH'
    assert mutating(sandbox) == []
    assert sandbox.resources('container.clusters') == []


def test_creates_then_changes_nothing(sandbox, cluster):
    result = cluster()
    assert result['changed'] is True, result
    stored = sandbox.resources('container.clusters')[0]
    assert stored['networkConfig']['datapathProvider'] == 'ADVANCED_DATAPATH'
    assert stored['networkConfig']['enableMultiNetworking'] is True
    assert stored['ipAllocationPolicy']['useIpAliases'] is True
    assert stored['resourceLabels'] == {'aiinfra-gpudirect': 'managed'}
    assert result['cluster']['status'] == 'RUNNING'
    assert result['endpoint'] == 'https://' + stored['endpoint']
    assert result['ca_certificate'] == stored['masterAuth']['clusterCaCertificate']
    assert result['kubeconfig']['clusters'][0]['cluster']['server'] == result['endpoint']
    assert result['managed'] is True
    assert any('CREATE_CLUSTER' in line and 'DONE' in line for line in result['operations']), result['operations']

    before = len(sandbox.request_log())
    again = cluster(diff=True)
    assert again['changed'] is False, again['actions']
    assert mutating(sandbox, before) == []
    assert again['diff']['before'] == again['diff']['after']


def test_kubeconfig_path_is_written_once_and_only_outside_check_mode(sandbox, cluster, tmp_path):
    path = tmp_path / 'kube' / 'config.yaml'
    assert cluster(check_mode=True, kubeconfig_path=str(path))['actions'] == ['create cluster mega (1.35.7-gke.1222000)']
    assert not path.exists(), 'no cluster yet: nothing to write'
    cluster()
    planned = cluster(check_mode=True, kubeconfig_path=str(path))
    assert planned['changed'] is True and planned['actions'] == ['write kubeconfig %s' % path] and not path.exists()
    written = cluster(kubeconfig_path=str(path))
    assert written['actions'] == ['write kubeconfig %s' % path]
    assert yaml.safe_load(path.read_text(encoding='utf-8')) == written['kubeconfig']   # kubectl reads it as YAML
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert cluster(kubeconfig_path=str(path))['changed'] is False


def test_kubeconfig_path_of_the_users_own_kubeconfig_is_merged_into_not_replaced(sandbox, cluster, tmp_path):
    """An existing kubeconfig (YAML, as kubectl writes it) keeps its other clusters, contexts, users and settings; the
    cluster's entries are set by name and its context made current, as gcloud's get-credentials does."""
    path = tmp_path / 'config'
    theirs = {'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'prod', 'preferences': {'colors': True},
              'clusters': [{'name': 'prod', 'cluster': {'server': 'https://127.0.0.1:6443'}},
                           {'name': 'mega', 'cluster': {'server': 'https://127.0.0.1:1'}}],   # a stale entry of ours
              'contexts': [{'name': 'prod', 'context': {'cluster': 'prod', 'user': 'admin'}}],
              'users': [{'name': 'admin', 'user': {'token': 'their-secret-token'}}]}
    path.write_text(yaml.safe_dump(theirs), encoding='utf-8')
    cluster()
    written = cluster(kubeconfig_path=str(path))
    assert written['actions'] == ['write kubeconfig %s' % path], written
    merged = yaml.safe_load(path.read_text(encoding='utf-8'))
    assert merged['preferences'] == {'colors': True} and merged['current-context'] == 'mega'
    assert [c['name'] for c in merged['clusters']] == ['prod', 'mega']
    assert merged['clusters'][1] == written['kubeconfig']['clusters'][0]    # ours replaced the stale entry
    assert merged['users'][0] == {'name': 'admin', 'user': {'token': 'their-secret-token'}}
    assert [c['name'] for c in merged['contexts']] == ['prod', 'mega'] and [u['name'] for u in merged['users']] == ['admin', 'mega']
    assert not path.read_text(encoding='utf-8').lstrip().startswith('{'), 'a YAML file stays YAML'
    assert cluster(kubeconfig_path=str(path))['changed'] is False


@pytest.mark.parametrize('content, words', [
    (None, 'is a directory; give a file path'),
    ('just: [text', 'is neither JSON nor YAML'),
    ('- a\n- list\n', 'is not a kubeconfig'),
    ('kind: Pod\n', 'is not a kubeconfig'),
])
def test_kubeconfig_path_that_cannot_hold_a_context_is_refused_before_anything_is_created(sandbox, cluster, tmp_path, content, words):
    path = tmp_path / 'file'
    if content is None:
        path = tmp_path
    else:
        path.write_text(content, encoding='utf-8')
    since = len(sandbox.request_log())
    refused = cluster(kubeconfig_path=str(path))
    assert refused.get('failed') and refused['msg'].startswith('kubeconfig_path: %s ' % path) and words in refused['msg'], refused
    assert mutating(sandbox, since) == []
    if content is not None:
        assert path.read_text(encoding='utf-8') == content


def test_rdma_takes_the_default_at_or_above_seed_001s_floor_else_the_newest(sandbox, cluster):
    # The sandbox's default, 1.35.7-gke.1222000 (GKE's today), meets the Standard floor 1.34.8-gke.1278000 ...
    result = cluster(cluster='ultra', machine_type='a3-ultragpu-8g', check_mode=True)
    assert result['plan']['version'] == '1.35.7-gke.1222000', result['plan']
    # ... and not the Autopilot floor 1.36.2-gke.1368000: the newest version offered that does, Rapid's 1.36.4-gke.1082000.
    result = cluster(cluster='ultra', machine_type='a3-ultragpu-8g', cluster_mode='autopilot', check_mode=True)
    assert result['plan']['version'] == '1.36.4-gke.1082000', result['plan']


@pytest.mark.parametrize('overrides, words', [
    ({'cluster_mode': 'autopilot'}, ['cluster_mode', 'Autopilot', 'TCPXO']),
    ({'machine_type': 'a3-highgpu-8g', 'cluster_mode': 'autopilot'}, ['cluster_mode', 'TCPX', 'standard']),
    ({'version': '1.29.3-gke.1093000'}, ['version', '1.29.4-gke.1542000']),
    ({'machine_type': 'a3-highgpu-8g', 'version': '1.28.8-gke.1094999'}, ['version', '1.28.8-gke.1095000']),
    ({'machine_type': 'a4-highgpu-8g', 'version': '1.33.5-gke.1308000'}, ['version', '1.34.8-gke.1278000']),
    ({'machine_type': 'a4-highgpu-8g', 'cluster_mode': 'autopilot', 'version': '1.35.1-gke.1'}, ['1.36.2-gke.1368000']),
    ({'multi_networking': False}, ['multi_networking']),
    # Refused here, not by the API's 400 (gpudirect_plan checks the same).
    ({'cluster': 'Bad_Name'}, ["cluster: 'Bad_Name' is not a valid cluster name"]),
    ({'cluster': 'a' * 41}, ['is not a valid cluster name']),
    ({'location': 'Central'}, ["location: 'Central' is neither a zone"]),
    ({'default_pool_node_count': 0}, ['default_pool_node_count: 0']),
])
def test_refusals_come_before_any_mutating_request(sandbox, cluster, overrides, words):
    result = cluster(**overrides)
    assert result.get('failed'), result
    for word in words:
        assert word in result['msg'], result['msg']
    assert mutating(sandbox) == []


def test_an_existing_cluster_without_dataplane_v2_is_reported_field_by_field(sandbox, cluster, api):
    create_with_api(api, 'old')
    before = len(sandbox.request_log())
    result = cluster(cluster='old')
    assert result.get('failed'), result
    assert 'networkConfig.datapathProvider' in result['msg'] and 'LEGACY_DATAPATH' in result['msg']
    assert any('enableMultiNetworking' in problem for problem in result['noncompliant'])
    assert mutating(sandbox, before) == []


def test_an_adopted_cluster_without_multi_networking_is_refused_with_the_seeds_words_and_the_way_out(sandbox, cluster, api):
    """Seed 003: "No puedes actualizar un clúster existente para usar redes múltiples" (the API has the update field;
    the collection does not send it)."""
    create_with_api(api, 'dp2', networkConfig={'datapathProvider': 'ADVANCED_DATAPATH'})
    before = len(sandbox.request_log())
    for check_mode in (True, False):
        result = cluster(cluster='dp2', check_mode=check_mode)
        assert result.get('failed'), result
        assert 'an existing cluster cannot be updated to use multi-networking' in result['msg'], result['msg']
        assert 'you cannot update an existing cluster to use multi-networking' in result['msg']
        assert 'choose another cluster name' in result['msg']
    assert mutating(sandbox, before) == []


def test_an_adopted_cluster_gets_an_upgrade_in_place(sandbox, cluster, api):
    create_with_api(api, 'dp2', networkConfig={'datapathProvider': 'ADVANCED_DATAPATH', 'enableMultiNetworking': True})
    before = len(sandbox.request_log())
    planned = cluster(cluster='dp2', machine_type='a3-ultragpu-8g', check_mode=True)
    assert planned['actions'] == ['update cluster dp2: desiredMasterVersion=1.35.7-gke.1222000'], planned['actions']
    assert mutating(sandbox, before) == []
    result = cluster(cluster='dp2', machine_type='a3-ultragpu-8g')
    assert result['changed'] is True, result
    assert [method for method, _path in mutating(sandbox, before)] == ['PUT']
    assert result['cluster']['currentMasterVersion'] == '1.35.7-gke.1222000'
    assert result['managed'] is False
    assert cluster(cluster='dp2', machine_type='a3-ultragpu-8g')['changed'] is False
    # teardown leaves an adopted cluster alone unless told
    kept = cluster(cluster='dp2', state='absent')
    assert kept['changed'] is False and sandbox.resources('container.clusters')
    gone = cluster(cluster='dp2', state='absent', delete_adopted=True)
    assert gone['changed'] is True and sandbox.resources('container.clusters') == []


def test_a_busy_cluster_is_awaited_then_updated(sandbox, cluster, api):
    """GKE's one operation per cluster: the update meets 400 "Operation ... is currently ...", awaits it, retries."""
    create_with_api(api, 'busy', networkConfig={'datapathProvider': 'ADVANCED_DATAPATH', 'enableMultiNetworking': True})
    sandbox.operation_latency['CREATE_NODE_POOL'] = 1.0   # only the node pool creation takes time (bench/gke.py uses this)
    api.must('POST', '/v1/projects/%s/locations/%s/clusters/busy/nodePools' % (PROJECT, ZONE),
             {'nodePool': {'name': 'cpu', 'initialNodeCount': 1}})
    result = cluster(cluster='busy', machine_type='a3-ultragpu-8g', timeout=60)
    assert result['changed'] is True, result
    puts = [e['status'] for e in sandbox.request_log() if e['method'] == 'PUT']
    assert puts == [400, 200], 'refused while the node pool was being created, then sent again: %s' % puts
    assert any('another operation' in line for line in result['operations']), result['operations']
    assert result['cluster']['currentMasterVersion'] == '1.35.7-gke.1222000'


def test_delete_only_what_the_collection_created(sandbox, cluster):
    cluster()
    planned = cluster(state='absent', check_mode=True)
    assert planned['changed'] is True and sandbox.resources('container.clusters')
    result = cluster(state='absent')
    assert result['changed'] is True
    assert sandbox.resources('container.clusters') == []
    assert cluster(state='absent')['changed'] is False


def test_a_regional_cluster(sandbox, cluster):
    result = cluster(cluster='regional', location='us-central1', machine_type='a3-highgpu-8g')
    assert result['changed'] is True, result
    stored = sandbox.resources('container.clusters')[0]
    assert stored['location'] == 'us-central1' and len(stored['locations']) == 3
    assert cluster(cluster='regional', location='us-central1', machine_type='a3-highgpu-8g')['changed'] is False


def test_an_autopilot_cluster_for_rdma_at_seed_001s_autopilot_floor(sandbox, cluster):
    """Seed 001: Autopilot clusters take the automated RDMA installer from 1.36.2-gke.1368000. A version below it is
    refused before any mutating request, naming the floor; unset, the cluster gets the newest version offered above it."""
    refused = cluster(cluster='auto', machine_type='a3-ultragpu-8g', cluster_mode='autopilot', version='1.35.7-gke.1222000')
    assert refused.get('failed') and '1.36.2-gke.1368000' in refused['msg'], refused
    assert mutating(sandbox) == []
    result = cluster(cluster='auto', machine_type='a3-ultragpu-8g', cluster_mode='autopilot')
    assert result['changed'] is True, result
    stored = sandbox.resources('container.clusters')[0]
    assert stored['autopilot'] == {'enabled': True} and stored['currentMasterVersion'] == '1.36.4-gke.1082000', stored
    assert cluster(cluster='auto', machine_type='a3-ultragpu-8g', cluster_mode='autopilot')['changed'] is False
