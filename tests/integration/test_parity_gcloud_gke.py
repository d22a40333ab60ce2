"""Parity with the GKE manuals: the seeds' gcloud commands and our modules send the same request bodies.

Seed 003 (GPUDirect-TCPX tab: 4 VPCs, the cluster, the A3 High node pool) and seed 001's manual
multi-network variant (gVNIC VPC, RoCE VPC with 8 subnets, the A3 Ultra node pool) run through the
real gcloud (SDK 528) in one project of a sandbox; gce_gpudirect_network, gke_gpudirect_cluster and
gke_gpudirect_node_pool run in another. Every create request body is compared field by field, with
the project's name set aside. The differences kept on purpose are listed in KEPT with the reason; any
other difference fails. Seed 001's gcloud (Standard) DRANET pool is compared the same way.

SDK 528 has no ``--gpudirect-strategy`` (seed 001 asks for gcloud >= 550) and no
``--accelerator-network-profile``: the seed 001 manual node pool runs without the first, and its
``gpuDirectConfig`` is compared with the Container v1 schema's field instead (the sandbox validates
every body against the discovery document); the DRANET pool is
run by SDK 528 with every flag it has (all but those two), and the two fields those flags set are compared with
the Container v1 fields gcloud >= 550 sends for them (GPUDirectConfig.gpuDirectStrategy RDMA,
NodeNetworkConfig.acceleratorNetworkProfile auto; the sandbox checks both names and values against the discovery
document).

gcloud runs in one GcloudSession per test (tests/sandbox/gcloud.py): the real CLI loaded once, each
command through its own Execute, so the test pays gcloud's start-up (about a second of CPU) once, not
per command. The sandbox's operations are DONE at once (latency 0), so no command waits.
"""

import json
import shutil

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.modules import gce_gpudirect_network, gke_gpudirect_cluster, gke_gpudirect_node_pool
from module_runner import run_module
from sandbox.gcloud import GcloudSession

SEED_PROJECT = 'seed-project'
OUR_PROJECT = 'our-project'
REGION = 'us-central1'
VERSION = '1.30.4-gke.1129000'
CLOUD_PLATFORM = 'https://www.googleapis.com/auth/cloud-platform'

# (what, field) -> why the bodies differ on purpose.
KEPT = {
    ('cluster', 'resourceLabels'): 'our label aiinfra-gpudirect=managed marks the clusters the collection created (teardown '
                                   'deletes only those)',
    ('tcpx node pool', 'config.resourceLabels'): 'our label aiinfra-gpudirect=managed on the nodes marks the pools the collection '
                                                 'created (teardown deletes only those)',
    ('rdma node pool', 'config.resourceLabels'): 'as for the TCPX pool',
    ('dranet node pool', 'config.resourceLabels'): 'as for the TCPX pool',
    ('tcpx node pool', 'config.oauthScopes'): "seed 003's TCPX tab passes no --scopes (gcloud's default scopes); its TCPXO tab and "
                                              'seed 001 pass cloud-platform, which the module always sends',
    ('tcpx node pool', 'config.reservationAffinity'): 'the module always states its affinity (ANY_RESERVATION, the API default '
                                                      'when unset)',
    ('tcpx node pool', 'config.imageType'): 'the module always states the COS image (COS_CONTAINERD, the default gcloud leaves to '
                                            'the API); seed 003 requires COS',
    ('rdma node pool', 'config.imageType'): 'as for the TCPX pool',
    ('rdma node pool', 'config.gpuDirectConfig'): 'seed 001 --gpudirect-strategy=rdma: SDK 528 has no such flag',
    ('dranet node pool', 'config.imageType'): 'as for the TCPX pool',
    ('dranet node pool', 'config.oauthScopes'): "seed 001's gcloud (Standard) tab passes no --scopes (gcloud's default scopes); "
                                                'the module always sends cloud-platform, as seed 001 does in its manual variant',
    ('dranet node pool', 'config.gpuDirectConfig'): 'seed 001 --gpudirect-strategy=rdma: SDK 528 has no such flag (compared '
                                                    'with the Container v1 field below)',
    ('dranet node pool', 'networkConfig.acceleratorNetworkProfile'): 'seed 001 --accelerator-network-profile=auto: SDK 528 has '
                                                                     'no such flag (compared with the Container v1 field below)',
}


def flatten(value, prefix=''):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(flatten(item, '%s.%s' % (prefix, key) if prefix else key))
        return out
    if isinstance(value, str) and 'projects/PROJECT/' in value:
        value = value.split('projects/PROJECT/', 1)[1]   # a full URL and a partial path name the same resource
    return {prefix: value}


def bodies(sandbox, project, api_method):
    """Request bodies of successful calls to ``api_method`` in ``project``, with the project's name set aside."""
    found = []
    for entry in sandbox.request_log():
        if entry.get('api_method') == api_method and entry['status'] < 300 and '/projects/%s/' % project in entry['path']:
            found.append(json.loads(json.dumps(entry['body']).replace(project, 'PROJECT')))
    return found


KEPT_SEEN = set()


def differences(what, seed, ours):
    """The differences between two bodies that KEPT does not list; a listed difference that does not occur
    fails too (through kept_all_seen), so the list never outlives the code."""
    seed, ours = flatten(seed), flatten(ours)
    unexpected = {}
    for field in sorted(set(seed) | set(ours)):
        if seed.get(field) == ours.get(field):
            continue
        top = '.'.join(field.split('.')[:2]) if field.startswith(('config.', 'networkConfig.')) else field.split('.')[0]
        if (what, top) not in KEPT:
            unexpected[field] = (seed.get(field), ours.get(field))
        else:
            KEPT_SEEN.add((what, top))
    return unexpected


def kept_all_seen(*whats):
    assert {key for key in KEPT if key[0] in whats} - KEPT_SEEN == set()


@pytest.fixture
def gcloud(sandbox, tmp_path):
    """The real gcloud in one session (the module docstring says why); shadows conftest's per-process runner."""
    if shutil.which('gcloud') is None:
        pytest.skip('the gcloud CLI is not installed')
    with GcloudSession(sandbox, str(tmp_path / 'gcloud-config')) as session:
        yield session


def run_all(gcloud, chains):
    """Run chains of gcloud commands, each in order (one gcloud process: one command at a time; with two
    cores, concurrent gcloud processes were not faster either)."""
    for command in (command for chain in chains for command in chain):
        result = gcloud(*command)
        assert result.returncode == 0, '%s\n%s' % (' '.join(command), result.stderr[-2000:])


def ours(sandbox):
    return {'project': OUR_PROJECT, 'auth_kind': 'none', 'compute_endpoint': sandbox.compute_url, 'container_endpoint': sandbox.container_url}


def complete_seed_networks(sandbox, **module_args):
    """The seed loop's other iterations in the seed project, through the module (their bodies are not compared)."""
    args = dict(ours(sandbox), project=SEED_PROJECT, region=REGION, **module_args)
    assert run_module(gce_gpudirect_network.main, args)['changed']


def compare_networks(sandbox, gcloud_names):
    """Each body gcloud sent against ours of the same name (gcloud runs one iteration of the seed's loop,
    whose commands differ only in N: the test stays fast on two cores)."""
    for api_method in ('compute.networks.insert', 'compute.subnetworks.insert', 'compute.firewalls.insert'):
        seed = sorted((b for b in bodies(sandbox, SEED_PROJECT, api_method) if b['name'] in gcloud_names), key=lambda body: body['name'])
        mine = {body['name']: body for body in bodies(sandbox, OUR_PROJECT, api_method)}
        assert seed and {b['name'] for b in seed} <= set(mine), api_method
        for seed_body, our_body in ((b, mine[b['name']]) for b in seed):
            assert differences(api_method, seed_body, our_body) == {}, (api_method, seed_body['name'])


def test_seed_003_tcpx_networks_cluster_and_node_pool(sandbox, gcloud):
    zone = 'us-central1-a'
    project = ['--project=' + SEED_PROJECT]
    chains = [[
        ['compute', 'networks', 'create', 'p-net-%d' % n, '--subnet-mode=custom', '--mtu=8244'] + project,
        ['compute', 'networks', 'subnets', 'create', 'p-sub-%d' % n, '--network=p-net-%d' % n, '--region=' + REGION,
         '--range=192.168.%d.0/24' % n] + project,
        ['compute', 'firewall-rules', 'create', 'p-internal-%d' % n, '--network=p-net-%d' % n, '--action=ALLOW',
         '--rules=tcp:0-65535,udp:0-65535,icmp', '--source-ranges=192.168.0.0/16'] + project,
    ] for n in (1,)]
    chains.append([['container', 'clusters', 'create', 'hi', '--location=' + zone, '--cluster-version=' + VERSION,
                    '--enable-dataplane-v2', '--enable-ip-alias', '--enable-multi-networking', '--no-enable-autoupgrade'] + project])
    run_all(gcloud, chains)
    complete_seed_networks(sandbox, machine_type='a3-highgpu-8g', layout='gke', network_prefix='p')
    run_all(gcloud, [[['container', 'node-pools', 'create', 'gpu', '--cluster=hi', '--location=' + zone, '--machine-type=a3-highgpu-8g',
                       '--accelerator=type=nvidia-h100-80gb,count=8,gpu-driver-version=LATEST']
                      + ['--additional-node-network=network=p-net-%d,subnetwork=p-sub-%d' % (n, n) for n in range(1, 5)]
                      + ['--enable-gvnic', '--no-enable-autoupgrade'] + project]])

    common = ours(sandbox)
    assert run_module(gce_gpudirect_network.main, dict(common, region=REGION, machine_type='a3-highgpu-8g', layout='gke',
                                                       network_prefix='p'))['changed']
    assert run_module(gke_gpudirect_cluster.main, dict(common, cluster='hi', location=zone, machine_type='a3-highgpu-8g',
                                                       version=VERSION))['changed']
    # gcloud's default --num-nodes is 3; the module's node_count is given the same value.
    pool = run_module(gke_gpudirect_node_pool.main, dict(common, cluster='hi', location=zone, name='gpu', machine_type='a3-highgpu-8g',
                                                         network_prefix='p', node_count=3, read_nodes=False))
    assert pool['changed'], pool

    compare_networks(sandbox, {'p-net-1', 'p-sub-1', 'p-internal-1'})
    (seed_cluster,), (our_cluster,) = (bodies(sandbox, p, 'container.projects.locations.clusters.create') for p in (SEED_PROJECT, OUR_PROJECT))
    seed_cluster['cluster'].pop('nodePools')[0]['config'].pop('oauthScopes')   # gcloud's default scopes for the CPU default-pool
    # gcloud also sends `parent` in the body, which repeats the URL's location.
    assert differences('cluster', seed_cluster['cluster'], {k: v for k, v in our_cluster['cluster'].items() if k != 'nodePools'}) == {}
    assert our_cluster['cluster']['nodePools'][0] == {'name': 'default-pool', 'initialNodeCount': 3, 'upgradeSettings': {'maxSurge': 1},
                                                      'management': {'autoRepair': True, 'autoUpgrade': False}}
    (seed_pool,), (our_pool,) = (bodies(sandbox, p, 'container.projects.locations.clusters.nodePools.create') for p in (SEED_PROJECT, OUR_PROJECT))
    assert differences('tcpx node pool', seed_pool['nodePool'], our_pool['nodePool']) == {}
    assert our_pool['nodePool']['config']['oauthScopes'] == [CLOUD_PLATFORM]
    kept_all_seen('cluster', 'tcpx node pool')


def test_seed_001_manual_multi_network_rdma_pool(sandbox, gcloud):
    zone = 'us-central1-b'
    project = ['--project=' + SEED_PROJECT]
    chains = [[
        ['compute', 'networks', 'create', 'u-gvnic-net', '--subnet-mode=custom', '--mtu=8896'] + project,
        ['compute', 'networks', 'subnets', 'create', 'u-gvnic-sub', '--network=u-gvnic-net', '--region=' + REGION,
         '--range=192.168.0.0/24'] + project,
        ['compute', 'firewall-rules', 'create', 'u-gvnic-internal', '--network=u-gvnic-net', '--action=ALLOW',
         '--rules=tcp:0-65535,udp:0-65535,icmp', '--source-ranges=192.168.0.0/16'] + project,
    ], [
        ['compute', 'networks', 'create', 'u-rdma-net', '--subnet-mode=custom', '--mtu=8896', '--network-profile=%s-vpc-roce' % zone] + project,
    ] + [['compute', 'networks', 'subnets', 'create', 'u-rdma-sub-%d' % n, '--network=u-rdma-net', '--region=' + REGION,
          '--range=192.168.%d.0/24' % (n + 1)] + project for n in (0,)]]
    chains.append([['container', 'clusters', 'create', 'ul', '--location=' + zone, '--cluster-version=1.34.8-gke.1278000',
                    '--enable-dataplane-v2', '--enable-ip-alias', '--enable-multi-networking', '--no-enable-autoupgrade',
                    '--num-nodes=1'] + project])
    run_all(gcloud, chains)
    complete_seed_networks(sandbox, zone=zone, machine_type='a3-ultragpu-8g', layout='gke_rdma', network_prefix='u')
    # seed 001 "高度な構成" without --gpudirect-strategy=rdma (SDK 528 lacks it); RESERVATION left out (none in this project).
    run_all(gcloud, [[['container', 'node-pools', 'create', 'rdma', '--location=' + zone, '--node-locations=' + zone, '--cluster=ul',
                       '--num-nodes=2', '--machine-type=a3-ultragpu-8g',
                       '--accelerator=type=nvidia-h200-141gb,count=8,gpu-driver-version=LATEST',
                       '--additional-node-network=network=u-gvnic-net,subnetwork=u-gvnic-sub']
                      + ['--additional-node-network=network=u-rdma-net,subnetwork=u-rdma-sub-%d' % n for n in range(8)]
                      + ['--scopes', CLOUD_PLATFORM, '--reservation-affinity=any', '--no-enable-autoupgrade'] + project]])

    common = ours(sandbox)
    assert run_module(gce_gpudirect_network.main, dict(common, region=REGION, zone=zone, machine_type='a3-ultragpu-8g',
                                                       layout='gke_rdma', network_prefix='u'))['changed']
    assert run_module(gke_gpudirect_cluster.main, dict(common, cluster='ul', location=zone, machine_type='a3-ultragpu-8g',
                                                       default_pool_node_count=1))['changed']
    pool = run_module(gke_gpudirect_node_pool.main, dict(common, cluster='ul', location=zone, name='rdma', machine_type='a3-ultragpu-8g',
                                                         networking='multi_network', network_prefix='u', node_locations=[zone],
                                                         read_nodes=False))
    assert pool['changed'], pool

    compare_networks(sandbox, {'u-gvnic-net', 'u-gvnic-sub', 'u-gvnic-internal', 'u-rdma-net', 'u-rdma-sub-0'})
    (seed_pool,), (our_pool,) = (bodies(sandbox, p, 'container.projects.locations.clusters.nodePools.create') for p in (SEED_PROJECT, OUR_PROJECT))
    assert differences('rdma node pool', seed_pool['nodePool'], our_pool['nodePool']) == {}
    assert our_pool['nodePool']['config']['gpuDirectConfig'] == {'gpuDirectStrategy': 'RDMA'}
    kept_all_seen('rdma node pool')


def test_seed_001_dranet_pool_with_a_reservation_block(sandbox, gcloud, api):
    """Seed 001 "gcloud（Standard）": the node pool with the automated installer, DRANET and a reservation block."""
    zone = 'us-central1-b'
    for project in (SEED_PROJECT, OUR_PROJECT):
        api.must('POST', 'compute/v1/projects/%s/zones/%s/reservations' % (project, zone),
                 {'name': 'res', 'specificReservationRequired': True,
                  'specificReservation': {'count': 2, 'instanceProperties': {'machineType': 'a3-ultragpu-8g'}}})
    run_all(gcloud, [[['container', 'clusters', 'create', 'dr', '--location=' + zone, '--cluster-version=1.34.8-gke.1278000',
                       '--enable-dataplane-v2', '--enable-ip-alias', '--enable-multi-networking', '--no-enable-autoupgrade',
                       '--num-nodes=1', '--project=' + SEED_PROJECT]]])
    # The seed's command less --accelerator-network-profile=auto and --gpudirect-strategy=rdma (SDK 528 has neither).
    run_all(gcloud, [[['container', 'node-pools', 'create', 'rdma', '--location=' + zone, '--cluster=dr', '--project=' + SEED_PROJECT,
                       '--node-locations=' + zone, '--accelerator=type=nvidia-h200-141gb,count=8,gpu-driver-version=default',
                       '--machine-type=a3-ultragpu-8g', '--num-nodes=2', '--reservation-affinity=specific',
                       '--reservation=projects/%s/reservations/res/reservationBlocks/block-1' % SEED_PROJECT,
                       '--node-labels=cloud.google.com/gke-networking-dra-driver=true', '--no-enable-autoupgrade']]])
    common = ours(sandbox)
    assert run_module(gke_gpudirect_cluster.main, dict(common, cluster='dr', location=zone, machine_type='a3-ultragpu-8g',
                                                       default_pool_node_count=1))['changed']
    pool = run_module(gke_gpudirect_node_pool.main, dict(common, cluster='dr', location=zone, name='rdma', machine_type='a3-ultragpu-8g',
                                                         node_locations=[zone], gpu_driver_version='default', reservation='res',
                                                         reservation_project=OUR_PROJECT, reservation_block='block-1', read_nodes=False))
    assert pool.get('changed'), pool
    (seed_pool,), (our_pool,) = (bodies(sandbox, p, 'container.projects.locations.clusters.nodePools.create') for p in (SEED_PROJECT, OUR_PROJECT))
    assert differences('dranet node pool', seed_pool['nodePool'], our_pool['nodePool']) == {}
    # What --gpudirect-strategy=rdma and --accelerator-network-profile=auto set (gcloud >= 550), in the API's names.
    assert our_pool['nodePool']['config']['gpuDirectConfig'] == {'gpuDirectStrategy': 'RDMA'}
    assert our_pool['nodePool']['networkConfig'] == {'acceleratorNetworkProfile': 'auto'}
    assert seed_pool['nodePool']['config']['labels'] == our_pool['nodePool']['config']['labels'] == {
        'cloud.google.com/gke-networking-dra-driver': 'true'}
    kept_all_seen('dranet node pool')
