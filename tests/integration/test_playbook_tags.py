"""Every tag docs/docsite/rst/guide_tags.rst documents, run with --tags TAG and with --skip-tags TAG against the
stand-ins, in check mode: a tagged stage runs with its tag and not without it, and skipping one stage leaves the others
running (--skip-tags nccl on GKE took the whole Kubernetes stage with it). What ran is read from ansible-playbook's
task headers, with skipped tasks not shown (ANSIBLE_DISPLAY_SKIPPED_HOSTS=false).

The GKE runs need a cluster that exists (a check run of a first run ends before the Kubernetes side): one real run of
the Google Cloud half makes it, on a sandbox whose clusters come alive as Kubernetes API stand-ins."""

import os
import re
import shutil

import pytest
import yaml

from playbook_runner import ansible_playbook, collection_root
from sandbox import Sandbox
from sandbox.gcloud import gcloud_environment, kubectl_binary

PROJECT = 'sandbox-project'
ZONE = 'us-central1-a'
TABLE = collection_root() / 'docs' / 'docsite' / 'rst' / 'guide_tags.rst'

# The task headers that show a stage ran, per playbook and tag. A stage whose tasks cannot run against the stand-ins
# (the Compute Engine host and NCCL plays skip the sandbox's API-only VMs) has none: its rows check the other stages.
STAGE_TASKS = {
    'gce_cluster.yml': {
        'network': ['aiinfra.gpudirect.gce_network : '],
        'instances': ['aiinfra.gpudirect.gce_instances : '],
        'host': [],
        'nccl': [],
    },
    'teardown.yml': {
        'instances': ['aiinfra.gpudirect.gce_instances : '],
        'network': ['aiinfra.gpudirect.gce_network : '],
    },
    'gke_cluster.yml': {
        'network': ['aiinfra.gpudirect.gke_cluster : Per-NIC VPC networks'],
        'cluster': ['aiinfra.gpudirect.gke_cluster : Cluster with Dataplane V2'],
        'nodepool': ['aiinfra.gpudirect.gke_node_pool : GPU node pool'],
        'k8s': ['aiinfra.gpudirect.gke_gpudirect : Read the multi-networking CRDs'],
        'nccl': ["aiinfra.gpudirect.gke_gpudirect : Render the NCCL test workload"],
    },
    'gke_teardown.yml': {
        'k8s': ['aiinfra.gpudirect.gke_gpudirect : '],
        'nodepool': ['aiinfra.gpudirect.gke_node_pool : GPU node pool'],
        'cluster': ['aiinfra.gpudirect.gke_cluster : Cluster with Dataplane V2'],
        'network': ['aiinfra.gpudirect.gke_cluster : Per-NIC VPC networks'],
    },
    'nccl_test.yml': {
        'nccl': ['aiinfra.gpudirect.nccl_test : '],
    },
}
# Stages that a skipped tag leaves to a read in check mode, as the later stages need what it returns (the cluster's
# endpoint): the task runs, changing nothing.
READ_WHEN_SKIPPED = {('gke_cluster.yml', 'cluster')}
# Stages that run in another's objects and go with it when it is skipped: the GKE NCCL test runs in the Kubernetes
# stage (its Pods use the Networks and DaemonSets that stage waits for).
SKIPPED_WITH = {('gke_cluster.yml', 'k8s'): {'nccl'}}
# Tested with its own stand-in (an OpenShift control plane with OLM) by test_openshift_rdma_playbook.py.
ELSEWHERE = {'openshift_rdma.yml'}
# The playbook each family playbook imports.
RUN_AS = {'gce_cluster.yml': 'a3high.yml', 'gke_cluster.yml': 'gke_a3mega.yml'}


def documented():
    """[(playbook, tag)] of the table's rows."""
    rows, text = [], TABLE.read_text(encoding='utf-8')
    for row in re.split(r'\n  \* - ', text.split('.. list-table::', 1)[1])[2:]:
        playbook = re.search(r'``([\w.]+\.yml)``', row).group(1)
        cells = row.split('\n    - ')
        rows += [(playbook, tag) for tag in re.findall(r'``([\w]+)``', cells[1])]
    return rows


def tags_in(playbook):
    """Every tag a playbook's own tasks carry (always excepted)."""
    found = set()

    def walk(node):
        if isinstance(node, dict):
            tags = node.get('tags')
            found.update([tags] if isinstance(tags, str) else tags or [])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
    with open(collection_root() / 'playbooks' / playbook, encoding='utf-8') as handle:
        walk(yaml.safe_load(handle))
    return found - {'always'}


def headers(run):
    return re.findall(r'^TASK \[(.*)\]', run.stdout, flags=re.M)


def ran(run, marker):
    return any(marker in 'TASK [%s]' % header for header in headers(run))


def test_every_tag_of_every_playbook_is_documented_and_has_its_stage_tasks():
    rows = documented()
    for playbook in STAGE_TASKS.keys() | ELSEWHERE:
        # (gke_cluster.yml's cluster task is tagged always and reads the tags in its condition; the NCCL test's tag is
        # given in a role: the runs below show those.)
        assert tags_in(playbook) <= {tag for name, tag in rows if name == playbook}, playbook
    assert {(playbook, tag) for playbook, stages in STAGE_TASKS.items() for tag in stages} \
        == {(playbook, tag) for playbook, tag in rows if playbook not in ELSEWHERE}


def check(run, playbook, tag, skipped):
    """--tags TAG runs TAG's stage; --skip-tags TAG runs every stage but TAG's."""
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    shown = '\n'.join(headers(run))
    for stage, markers in STAGE_TASKS[playbook].items():
        for marker in markers:
            if stage == tag and not (skipped and (playbook, tag) in READ_WHEN_SKIPPED):
                assert ran(run, marker) is not skipped, '%s %s TAG: %s %s\n%s' % (
                    playbook, '--skip-tags' if skipped else '--tags', marker, 'ran' if skipped else 'did not run', shown)
            elif skipped and stage in SKIPPED_WITH.get((playbook, tag), ()):
                assert not ran(run, marker), '%s --skip-tags %s: %s ran' % (playbook, tag, marker)
            elif skipped:
                assert ran(run, marker), '%s --skip-tags %s: stage %s (%s) did not run\n%s' % (playbook, tag, stage, marker, shown)


def display(env=None):
    return dict(env or {}, ANSIBLE_DISPLAY_SKIPPED_HOSTS='false')


@pytest.mark.parametrize('playbook', ['gce_cluster.yml', 'teardown.yml'])
def test_compute_engine_tags(sandbox, playbook):
    if playbook == 'teardown.yml':   # something to tear down (the network alone: with VMs on it, --tags network is refused)
        assert ansible_playbook(sandbox, 'a3high.yml', {}, args=['--tags', 'network']).returncode == 0
    for tag in STAGE_TASKS[playbook]:
        for skipped in (False, True):
            run = ansible_playbook(sandbox, RUN_AS.get(playbook, playbook), {'gpudirect_machine_type': 'a3-highgpu-8g'}
                                   if playbook == 'teardown.yml' else {},
                                   args=['--check', '--skip-tags' if skipped else '--tags', tag], env=display())
            check(run, playbook, tag, skipped)


def test_nccl_test_tags(sandbox, tmp_path):
    log = collection_root() / 'tests' / 'fixtures' / 'nccl' / 'current_tcpxo_fastrak_pass.txt'
    extra = {'nccl_test_mode': 'parse', 'nccl_test_log': str(log), 'nccl_test_machine_type': 'a3-megagpu-8g',
             'nccl_test_report_dir': str(tmp_path / 'report')}
    for skipped in (False, True):
        run = ansible_playbook(sandbox, 'nccl_test.yml', extra, project=None, args=['--skip-tags' if skipped else '--tags', 'nccl'],
                               env=display())
        check(run, 'nccl_test.yml', 'nccl', skipped)


@pytest.fixture
def gke(tmp_path):
    """A sandbox whose GKE clusters come alive, with gke_a3mega.yml's cluster and pool made, and the environment and
    extra vars of a run that reaches them (the kubeconfig's user runs gke-gcloud-auth-plugin beside gcloud)."""
    if not (collection_root().parents[1] / 'kubernetes' / 'core').is_dir() or kubectl_binary() is None:
        pytest.skip('kubernetes.core beside the collection and the Cloud SDK are needed')
    from sandbox.kube.gke import GkeClusters  # pylint: disable=import-outside-toplevel
    sandbox = Sandbox(latency=0.0, project=PROJECT).start()
    sandbox.kube = GkeClusters()
    config = tmp_path / 'gcloud'
    config.mkdir()
    (config / 'token').write_text('sandbox-token\n', encoding='ascii')
    env = {key: value for key, value in gcloud_environment(sandbox, str(config), PROJECT).items() if key.startswith('CLOUDSDK_')}
    env.update(CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=str(config / 'token'), GCP_AUTH_KIND='accesstoken', GCP_ACCESS_TOKEN='sandbox-token',
               PATH='%s:%s' % (os.path.dirname(os.path.realpath(shutil.which('gcloud'))), os.environ.get('PATH', '')),
               NO_PROXY='127.0.0.1,localhost', ANSIBLE_ASYNC_DIR=str(tmp_path / 'async'))
    extra = {'gpudirect_location': ZONE, 'gpudirect_kubeconfig_path': str(config / 'kubeconfig-a3mega')}
    try:
        made = ansible_playbook(sandbox, 'gke_a3mega.yml', extra, project=PROJECT, args=['--tags', 'network,cluster,nodepool'],
                                timeout=400, env=env)
        assert made.returncode == 0, made.stdout[-4000:] + made.stderr[-2000:]
        yield sandbox, extra, env
    finally:
        sandbox.stop()


def test_gke_tags(gke):
    sandbox, extra, env = gke
    for playbook in ('gke_cluster.yml', 'gke_teardown.yml'):
        for tag in STAGE_TASKS[playbook]:
            for skipped in (False, True):
                given = {'gpudirect_location': ZONE, 'gpudirect_machine_type': 'a3-megagpu-8g'} if playbook == 'gke_teardown.yml' else extra
                run = ansible_playbook(sandbox, RUN_AS.get(playbook, playbook), given, project=PROJECT,
                                       args=['--check', '--skip-tags' if skipped else '--tags', tag], timeout=400, env=display(env))
                check(run, playbook, tag, skipped)
