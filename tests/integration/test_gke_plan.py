"""Bad input to the GKE playbooks: refused by their first task (gpudirect_plan) with the playbook variable named,
before anything is created.

Each case is one real run of a GKE playbook (no --check, no --tags: every stage would run) against one sandbox, in
its own project, and asserts: the run fails at the plan step, every expected message is in it (cases that touch
different stages are grouped, as the plan reports every stage's problem at once), and the sandbox's request log has
no mutating request (Compute or Container) for that project. The runs go four at a time.
"""

import concurrent.futures
import re

import yaml

from playbook_runner import ansible_playbook, collection_root, wrong_values
from sandbox import Sandbox
from sandbox.client import SandboxClient

MUTATING = ('POST', 'PATCH', 'PUT', 'DELETE')


def every_variable_wrong(role, entry_points):
    values = wrong_values(role, entry_points)
    assert len(values) >= 8, (role, values)
    return values


PLAN_TASK = "Check every stage's input before anything is created]"
TCPXO_NETWORKS = [{'network': 'other-net-%d' % n, 'subnetwork': 'other-sub-%d' % n} for n in range(1, 4)]

# (case id, playbook, extra vars, texts the message must hold: each names the variable, then what is wrong)
CASES = [
    # The trial's four defects: a version below the floor (the networks were made first), a cluster name only the
    # server refused, a reservation that cannot exist (networks and cluster made first), a negative node count.
    ('version-floor+reservation-name', 'gke_a3mega.yml', {'gpudirect_gke_version': '1.26.1-gke.1', 'gpudirect_reservation': 'Bad_Name!'},
     ['gpudirect_gke_version: 1.26.1-gke.1 is older than', "gpudirect_reservation: 'Bad_Name!' is not a valid Compute Engine name"]),
    ('cluster-name', 'gke_a3mega.yml', {'gpudirect_cluster': 'Bad_Name'},
     ["gpudirect_cluster: 'Bad_Name' is not a valid cluster name",
      "gpudirect_network_prefix (unset: from gpudirect_cluster): 'Bad_Name-net-1' is not a valid Compute Engine name",
      "gpudirect_node_pool (unset: from gpudirect_cluster): 'Bad_Name-gpu' is not a valid node pool name"]),
    ('count-negative+version-not-offered', 'gke_a3mega.yml', {'gpudirect_node_count': -1, 'gpudirect_gke_version': '1.99.0-gke.1'},
     ['gpudirect_node_count: -1 nodes per zone; give 1 to 1000', 'gpudirect_gke_version: 1.99.0-gke.1 is not offered in us-central1-a']),
    ('count-text+provisioning-unknown', 'gke_a3high.yml', {'gpudirect_node_count': 'two', 'gpudirect_provisioning_model': 'preemptible'},
     ["gpudirect_node_count: 'two' is not a whole number", 'gpudirect_provisioning_model: preemptible is not one of standard, spot, flex_start']),
    # An alias skipped every floor: an Autopilot cluster was built below the ComputeClass path's 1.36.2 floor.
    ('alias-below-floor', 'gke_a3ultra.yml', {'gpudirect_gke_version': '1.35', 'gpudirect_rdma_networking': 'compute_class'},
     ['gpudirect_gke_version: 1.35 is 1.35.7-gke.1222000 here (getServerConfig), and 1.35.7-gke.1222000 is older than 1.36.2']),
    # An Autopilot cluster makes no node pool of ours: only the ComputeClass path runs there.
    ('autopilot-with-dranet', 'gke_a4.yml', {'gpudirect_cluster_mode': 'autopilot'},
     ['is an Autopilot cluster, which has no user node pools']),
    ('cluster-mode-unknown', 'gke_a4.yml', {'gpudirect_cluster_mode': 'serverless', 'gpudirect_rdma_networking': 'compute_class'},
     ['gpudirect_cluster_mode: serverless is not one of standard, autopilot']),
    # How the Kubernetes stage reaches the cluster: a way the collection lacks, or a token google-auth cannot give (the
    # sandbox's GCP_AUTH_KIND none), would fail only after the cluster and the pool were made.
    ('kube-credentials-unknown', 'gke_a4.yml', {'gpudirect_kube_credentials': 'kubectl'},
     ["gpudirect_kube_credentials: 'kubectl' is not one of auto, google_auth, gke_gcloud_auth_plugin"]),
    ('kube-credentials-no-token', 'gke_a3high.yml', {'gpudirect_kube_credentials': 'google_auth'},
     ['gpudirect_kube_credentials: google_auth hands kubernetes.core a token from google-auth, and auth_kind none']),
    # A kubeconfig path that is a directory was found only after 25 writes.
    ('kubeconfig-directory', 'gke_a3high.yml', {'gpudirect_kubeconfig_path': '/tmp'},
     ['gpudirect_kubeconfig_path: /tmp is a directory; give a file path']),
    # An empty GPU pool and one past GKE's limit per zone (a million nodes was once sent).
    ('count-zero', 'gke_a3high.yml', {'gpudirect_node_count': 0}, ['gpudirect_node_count: 0 nodes per zone; give 1 to 1000']),
    ('count-million', 'gke_a3mega.yml', {'gpudirect_node_count': 1000000},
     ["gpudirect_node_count: 1000000 nodes per zone; give 1 to 1000 (GKE's limit per node pool zone)"]),
    # Reads: the reservation in the node zone, the zone itself, the cluster's location.
    ('reservation-missing', 'gke_a3high.yml', {'gpudirect_reservation': 'no-such-reservation'},
     ["gpudirect_reservation: 'no-such-reservation' does not exist in us-central1-a"]),
    ('node-zone-unknown', 'gke_a3mega.yml', {'gpudirect_node_location': 'us-central1-z'},
     ['gpudirect_node_location: a3-megagpu-8g is not offered in zone us-central1-z']),
    ('node-zone-other-region', 'gke_a3mega.yml', {'gpudirect_node_location': 'us-east4-a'},
     ['gpudirect_node_location: us-east4-a is not in us-central1, the region of the cluster']),
    ('node-zone-not-a-zone+location-unknown', 'gke_a4.yml', {'gpudirect_node_location': 'Central', 'gpudirect_location': 'mars-north9'},
     ["gpudirect_node_location: 'Central' is not a zone name", 'gpudirect_location: mars-north9 is not a Kubernetes Engine location']),
    # An existing cluster the cluster module would refuse to adopt (made before the run without Dataplane V2: see
    # make_existing_resources).
    ('existing-cluster-without-dataplane-v2', 'gke_a3mega.yml', {'gpudirect_cluster': 'legacy'},
     ['gpudirect_cluster: legacy exists in us-central1-a but cannot carry GPUDirect-TCPXO node pools',
      'networkConfig.datapathProvider: LEGACY_DATAPATH']),
    # Seed 003: "No puedes actualizar un clúster existente para usar redes múltiples" (issue 24 item 8: it was updated in place).
    ('existing-cluster-without-multi-networking', 'gke_a3high.yml', {'gpudirect_cluster': 'single'},
     ['gpudirect_cluster: single exists in us-central1-a but cannot carry GPUDirect-TCPX node pools',
      "networkConfig.enableMultiNetworking: false, and an existing cluster cannot be updated to use multi-networking (Google's GKE "
      'GPUDirect-TCPX/TCPXO guide, ',
      'you cannot update an existing cluster to use multi-networking', 'choose another cluster name or delete that cluster']),
    # An existing pool that differs in fields only a new pool fixes (made before the run: see make_existing_resources).
    ('existing-pool-immutable', 'gke_a3ultra.yml', {},
     ['gpudirect_node_pool (unset: from gpudirect_cluster): node pool a3ultra-gpu exists and differs in fields the API cannot change',
      'config.gpuDirectConfig (now None', 'config.spot (now True']),
    # The pool's placement and host maintenance from the playbook (issue 24 items 8 and 11), checked with the module's spec.
    ('placement-both', 'gke_a3mega.yml', {'gpudirect_compact_placement': True, 'gpudirect_placement_policy': 'mine'},
     ['gpudirect_compact_placement: give either compact_placement (GKE makes the policy) or placement_policy (yours), not both']),
    ('host-maintenance-unknown', 'gke_a3high.yml', {'gpudirect_host_maintenance_interval': 'WEEKLY'},
     ['gpudirect_host_maintenance_interval: WEEKLY is not one of']),
    # The machine type: not one of the GKE GPUDirect types.
    ('machine-type-not-gke', 'gke_a3high.yml', {'gpudirect_machine_type': 'a3-edgegpu-8g'},
     ['gpudirect_machine_type: a3-edgegpu-8g is not one of']),
    # The Kubernetes roles' variables, rendered as the roles' first tasks render them.
    ('role-networks-count', 'gke_a3mega.yml', {'gke_gpudirect_networks': TCPXO_NETWORKS},
     ['gke_gpudirect_networks: GPUDirect-TCPXO needs 8 data VPCs']),
    ('role-plugin-image', 'gke_a3high.yml', {'gke_gpudirect_plugin_image': 'Bad Image:'},
     ["gke_gpudirect_plugin_image: 'Bad Image:' is not an image reference the kubelet can pull"]),
    # Role variables that the roles checked only when they started, after the cluster and the pool existed: each is
    # checked with the role's argument spec, and one that contradicts what the playbook derives is refused.
    ('role-contradicts-playbook', 'gke_a3mega.yml', {'gke_gpudirect_technology': 'TCPX', 'gke_gpudirect_node_pool': 'otherpool'},
     ["gke_gpudirect_technology: 'TCPX' differs from 'TCPXO', the technology of a3-megagpu-8g",
      'leave it unset (it is deprecated: the machine type decides)',
      "gke_gpudirect_node_pool: 'otherpool' differs from 'a3mega-gpu'"]),
    ('role-rdma-contradicts-playbook', 'gke_a3ultra.yml', {'gke_rdma_machine_type': 'a4-highgpu-8g'},
     ["gke_rdma_machine_type: 'a4-highgpu-8g' differs from 'a3-ultragpu-8g', which the playbook gives role gke_rdma"]),
    ('role-types', 'gke_a3mega.yml', {'gke_gpudirect_wait_retries': 'abc', 'gke_gpudirect_force_conflicts': 'maybe'},
     ["gke_gpudirect_wait_retries: 'abc' is not a whole number", "gke_gpudirect_force_conflicts: 'maybe' is not true or false"]),
    ('role-rdma-types-and-namespace', 'gke_a3ultra.yml', {'gke_rdma_nccl_thresholds': 'notadict', 'gke_rdma_namespace': 'Bad NS',
                                                          'gke_rdma_nccl_test_mode': 'diagnos'},
     ["gke_rdma_nccl_thresholds: 'notadict' is not a mapping", 'gke_rdma_nccl_test_mode: diagnos is not one of pair, diagnose']),
    ('role-rdma-namespace', 'gke_a4.yml', {'gke_rdma_namespace': 'Bad NS'},
     ["gke_rdma_namespace: 'Bad NS' is not a namespace name"]),
    ('role-misspelt', 'gke_a3high.yml', {'gke_gpudirect_technolgy': 'TCPX'},
     ['gke_gpudirect_technolgy: role gke_gpudirect has no such variable; did you mean gke_gpudirect_technology?']),
    # Every role variable of each Kubernetes role at once, each with a value of the wrong type (see wrong_values).
    *(('every-%s-variable' % role, playbook, values, ['%s: ' % name for name in values])
      for role, playbook, values in ((role, playbook, every_variable_wrong(role, points)) for role, playbook, points in (
          ('gke_gpudirect', 'gke_a3mega.yml', ('plan', 'apply', 'wait')), ('gke_rdma', 'gke_a3ultra.yml', ('main',))))),
    # Extra vars with the collection's prefixes that nothing reads: a renamed playbook variable, another role's variable.
    ('extra-var-renamed+other-role', 'gke_a3mega.yml', {'gpudirect_prefix': 'zz', 'gke_rdma_namespace': 'team'},
     ['gpudirect_prefix: gke_cluster.yml reads no such variable; did you mean gpudirect_network_prefix?',
      'gke_rdma_namespace: a variable of role gke_rdma; gke_cluster.yml runs no role gke_rdma, so nothing reads it: remove it']),
    # The project's regional GPU quota (regions.get): the pool's nodes would never come (set in make_existing_resources).
    ('gpu-quota-short', 'gke_a3mega.yml', {},
     ['gpudirect_node_count: 2 nodes per zone of a3-megagpu-8g in us-central1-a need 16 more GPUs of quota NVIDIA_H100_MEGA_GPUS in '
      'us-central1, and the project has 8 of its limit of 8 left there; request more quota', 'or give at most 1']),
    # The GKE GPUDirect RDMA guide's two VPC prefixes name an A3 Ultra/A4 multi-network pool's networks only.
    ('rdma-prefixes-on-tcpxo', 'gke_a3mega.yml', {'gpudirect_gvnic_network_prefix': 'shared-gvnic'},
     ['gpudirect_gvnic_network_prefix: the gVNIC and RDMA VPC prefixes']),
    ('rdma-prefixes-on-dranet', 'gke_a4.yml', {'gpudirect_rdma_network_prefix': 'shared-roce'},
     ['gpudirect_rdma_network_prefix: the gVNIC and RDMA VPC prefixes name the networks of an A3 Ultra / A4 pool with '
      'gpudirect_rdma_networking: multi_network']),
    ('role-compute-class-name+rdma-networking', 'gke_a3ultra.yml', {'gpudirect_rdma_networking': 'compute_class', 'gke_rdma_compute_class': 'Bad_Class'},
     ["gke_rdma_compute_class: 'Bad_Class' is not a valid ComputeClass name"]),
]


def project_of(case):
    return 'gke-plan-case-%02d' % [c for c, _p, _e, _x in CASES].index(case)


def make_existing_resources(sandbox):
    """What the existing-* cases find: a cluster made without --enable-dataplane-v2, one without --enable-multi-networking,
    and a Dataplane V2 cluster whose
    GPU pool was made as a spot pool without GPUDirect RDMA."""
    sandbox.set_quota('NVIDIA_H100_MEGA_GPUS', 8, project=project_of('gpu-quota-short'), region='us-central1')
    api = SandboxClient(sandbox.url)
    api.must('POST', '/v1/projects/%s/locations/us-central1-a/clusters' % project_of('existing-cluster-without-dataplane-v2'),
             {'cluster': {'name': 'legacy', 'initialClusterVersion': '1.33.5-gke.1308000',
                          'nodePools': [{'name': 'default-pool', 'initialNodeCount': 1}]}})
    api.must('POST', '/v1/projects/%s/locations/us-central1-a/clusters' % project_of('existing-cluster-without-multi-networking'),
             {'cluster': {'name': 'single', 'initialClusterVersion': '1.33.5-gke.1308000',
                          'networkConfig': {'datapathProvider': 'ADVANCED_DATAPATH'},
                          'nodePools': [{'name': 'default-pool', 'initialNodeCount': 1}]}})
    clusters = '/v1/projects/%s/locations/us-central1-b/clusters' % project_of('existing-pool-immutable')
    api.must('POST', clusters, {'cluster': {
        'name': 'a3ultra', 'initialClusterVersion': '1.34.8-gke.1278000', 'resourceLabels': {'aiinfra-gpudirect': 'managed'},
        'networkConfig': {'datapathProvider': 'ADVANCED_DATAPATH', 'enableMultiNetworking': True},
        'nodePools': [{'name': 'default-pool', 'initialNodeCount': 1}]}})
    api.must('POST', clusters + '/a3ultra/nodePools', {'nodePool': {
        'name': 'a3ultra-gpu', 'initialNodeCount': 1, 'locations': ['us-central1-b'],
        'config': {'machineType': 'a3-ultragpu-8g', 'spot': True}}})


def run_every_case():
    """{case id: (CompletedProcess, mutating requests of its project)}: every case run once, four at a time."""
    sandbox = Sandbox(latency=0.0, seed=0, project='sandbox-project').start()
    try:
        make_existing_resources(sandbox)
        since = len(sandbox.request_log())

        def run(case_row):
            case, playbook, extra, _expected = case_row
            extra = dict(extra, gpudirect_read_nodes=False)
            return case, ansible_playbook(sandbox, playbook, extra, project=project_of(case), timeout=300)

        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            results = dict(pool.map(run, CASES))
        log = sandbox.request_log()[since:]
    finally:
        sandbox.stop()
    runs = {}
    for case, _playbook, _extra, _expected in CASES:
        marker = '/projects/%s/' % project_of(case)
        runs[case] = (results[case], [entry for entry in log if entry['method'] in MUTATING and marker in entry['path']])
    return runs


def test_bad_gke_input_is_refused_by_the_plan_step_before_anything_is_written():
    """One test over the whole table (one sandbox, runs in parallel); every failing case is listed with what went wrong."""
    failures = []
    runs = run_every_case()
    for case, (result, written) in runs.items():
        expected = {c: x for c, _p, _e, x in CASES}[case]
        refusal = re.search(r'fatal: \[localhost\]: FAILED! => (\{.*\})', result.stdout)
        last_task = result.stdout.split('fatal:')[0].rsplit('TASK [', 1)[-1]
        if result.returncode == 0 or not refusal:
            failures.append('%s: not refused (rc %s): %s' % (case, result.returncode, result.stdout[-800:] + result.stderr[-800:]))
        elif not last_task.startswith(PLAN_TASK):
            failures.append('%s: refused by a later task: %s' % (case, last_task[:200]))
        else:
            for text in expected:
                if text not in refusal.group(1):
                    failures.append('%s: message %s does not hold %r' % (case, refusal.group(1)[:900], text))
        if written:
            failures.append('%s: %d mutating requests: %s' % (case, len(written), [(e['method'], e['path']) for e in written[:3]]))
    assert failures == [], '\n'.join(failures)
    for case, (result, _written) in runs.items():
        print(case, re.search(r'"problems": (\[.*?\])', result.stdout).group(1))


def test_the_plan_step_names_the_roles_the_gke_tasks_run_with_the_same_variables():
    """The plan step names the roles only (the stages' options are the roles' variables: gpudirect_plan's role_stages,
    and tests/integration/test_playbook_inputs.py holds the roles' tasks to ROLE_OPTION is OPTION), each with the
    variables the playbook's tasks give that role (an option the plan checks with another value than the one that
    runs would check something else), and names the playbook variable of each cloud role's variable."""
    plays = yaml.safe_load((collection_root() / 'playbooks' / 'gke_cluster.yml').read_text(encoding='utf-8'))
    tasks = plays[0]['tasks']
    # and the connection's options: the extra vars nothing reads, how the Kubernetes stage reaches the cluster
    assert set(tasks[0]['aiinfra.gpudirect.gpudirect_plan']) == {'unread_extra_vars', 'kube_credentials', 'roles'}
    entries = {entry['role']: entry for entry in tasks[0]['vars'].values() if isinstance(entry, dict) and 'role' in entry}
    ran = {}
    for play in plays:
        for task in play['tasks']:
            for key in ('ansible.builtin.import_role', 'ansible.builtin.include_role'):
                if key in task:
                    # gke_node_pool_wait is how the task runs (the pool's creation is started, then awaited), not what it makes;
                    # the Kubernetes roles' connection is the cluster's (the lookup reads its endpoint), checked as kube_credentials
                    given = {name: value for name, value in (task.get('vars') or {}).items()
                             if name not in ('gke_node_pool_wait', 'gke_gpudirect_kube_connection', 'gke_rdma_kube_connection')}
                    ran.setdefault(task[key]['name'].split('.')[-1], []).append(given)
    assert set(ran) == set(entries)
    for role, calls in ran.items():
        assert all(given in ({}, entries[role]['vars']) for given in calls), role
        assert entries[role]['vars'] in calls, role
    for role in ('gke_cluster', 'gke_node_pool'):
        assert set(entries[role]['sources']) == set(entries[role]['vars']), role
    assert tasks[0]['tags'] == ['always']


def test_a_rerun_on_an_existing_pool_counts_only_the_gpus_it_adds_against_the_quota():
    """A pool of 2 nodes exists and the quota has room for no more GPUs: the same pool again is not refused (its GPUs are
    counted once, in the quota's usage), and one node more per zone is, naming the 8 GPUs it adds (check mode)."""
    sandbox = Sandbox(latency=0.0, seed=0, project='sandbox-project').start()
    project = 'gke-plan-quota-rerun'
    try:
        sandbox.set_quota('NVIDIA_H100_MEGA_GPUS', 0, project=project, region='us-central1')
        api = SandboxClient(sandbox.url)
        clusters = '/v1/projects/%s/locations/us-central1-a/clusters' % project
        api.must('POST', clusters, {'cluster': {
            'name': 'a3mega', 'initialClusterVersion': '1.33.5-gke.1308000', 'resourceLabels': {'aiinfra-gpudirect': 'managed'},
            'networkConfig': {'datapathProvider': 'ADVANCED_DATAPATH', 'enableMultiNetworking': True},
            'nodePools': [{'name': 'default-pool', 'initialNodeCount': 1}]}})
        first = ansible_playbook(sandbox, 'gke_a3mega.yml', {'gpudirect_read_nodes': False, 'gpudirect_node_count': 2}, project=project,
                                 args=('--check', '--tags', 'cluster,nodepool'), timeout=300)
        assert first.returncode != 0 and 'need 16 more GPUs of quota NVIDIA_H100_MEGA_GPUS' in first.stdout, first.stdout[-3000:]
        sandbox.set_quota('NVIDIA_H100_MEGA_GPUS', None, project=project, region='us-central1')
        made = ansible_playbook(sandbox, 'gke_a3mega.yml', {'gpudirect_read_nodes': False, 'gpudirect_node_count': 2}, project=project,
                                args=('--tags', 'network,cluster,nodepool'), timeout=300)
        assert made.returncode == 0, made.stdout[-3000:]
        sandbox.set_quota('NVIDIA_H100_MEGA_GPUS', 0, project=project, region='us-central1')
        again = ansible_playbook(sandbox, 'gke_a3mega.yml', {'gpudirect_read_nodes': False, 'gpudirect_node_count': 2}, project=project,
                                 args=('--check', '--tags', 'cluster,nodepool'), timeout=300)
        assert again.returncode == 0, again.stdout[-3000:]
        more = ansible_playbook(sandbox, 'gke_a3mega.yml', {'gpudirect_read_nodes': False, 'gpudirect_node_count': 3}, project=project,
                                args=('--check', '--tags', 'cluster,nodepool'), timeout=300)
        assert more.returncode != 0 and 'gpudirect_node_count: 3 nodes per zone of a3-megagpu-8g in us-central1-a need 8 more GPUs' \
            in more.stdout, more.stdout[-3000:]
    finally:
        sandbox.stop()
