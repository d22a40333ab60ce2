"""Shared pytest fixtures: the Compute/Kubernetes Engine API sandbox, and the real gcloud CLI pointed at it.

- ``sandbox``: a started ``sandbox.Sandbox`` with fresh state for each test (see tests/sandbox/__init__.py).
- ``gcloud``: ``gcloud(*args, check=False, timeout=120) -> subprocess.CompletedProcess`` running the real
  Cloud SDK with its own temporary configuration aimed at the ``sandbox`` fixture (no credentials,
  core/project ``sandbox-project``, endpoint overrides for compute, container and serviceusage);
  ``gcloud.env`` is the environment it uses (CLOUDSDK_CONFIG, KUBECONFIG, ...) for other tools such as kubectl.
- ``api``: a ``sandbox.client.SandboxClient`` for the ``sandbox`` fixture (JSON over HTTP, stdlib only).
- ``kube_cluster``: one real Kubernetes control plane for a test module (``sandbox.kube``: kube-apiserver, the
  controller manager, the scheduler, kwok), named after the module, with its kubeconfig (the sandbox's token)
  written at ``kube_cluster.kubeconfig_path``; a module's ``KUBE_ADMISSION_PLUGINS`` (a tuple of names) are
  enabled on its API server (``--enable-admission-plugins``).
"""

import os
import shutil
import sys

import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)

from sandbox import Sandbox  # noqa: E402  pylint: disable=wrong-import-position
from sandbox.client import SandboxClient  # noqa: E402  pylint: disable=wrong-import-position
from sandbox.gcloud import GcloudRunner  # noqa: E402  pylint: disable=wrong-import-position
from sandbox.kube import KubeHub  # noqa: E402  pylint: disable=wrong-import-position

GCLOUD_PROJECT = 'sandbox-project'


@pytest.fixture
def sandbox():
    instance = Sandbox(latency=0.0, seed=0, project=GCLOUD_PROJECT).start()
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture
def gcloud(sandbox, tmp_path):
    if shutil.which('gcloud') is None:
        pytest.skip('the gcloud CLI is not installed')
    return GcloudRunner(sandbox, str(tmp_path / 'gcloud-config'))


@pytest.fixture
def api(sandbox):
    return SandboxClient(sandbox.url)


@pytest.fixture(scope='module')
def kube_cluster(request, tmp_path_factory):
    hub = KubeHub()
    # One control plane per module: starting one takes seconds, and the tests of a module share its objects knowingly.
    instance = hub.start_cluster(request.module.__name__.rsplit('.', 1)[-1].replace('_', '-'),
                                 admission_plugins=getattr(request.module, 'KUBE_ADMISSION_PLUGINS', ()))
    try:
        instance.kubeconfig_path = instance.write_kubeconfig(str(tmp_path_factory.mktemp('kube') / 'config'))
        yield instance
    finally:
        hub.stop_all()


# The modules that take longest, longest first, as pytest --durations showed them in the CI runs of 2026-12 (seconds of
# their slowest test on a loaded 2-core machine): they go to the front so that pytest-xdist, which hands the tests out
# in collection order, starts them first instead of leaving one of them to run alone at the end. Ordering only: which
# tests run, and how, is unchanged; a module keeps its tests together and in their order (its module-scoped fixtures
# are set up once).
SLOWEST_FIRST = (
    'test_openshift_rdma_diagnose',   # 419 s
    'test_openshift_rdma_playbook',   # 352 s + 80 s
    'test_gke_nccl_diagnose',         # about 350 s in all
    'test_gke_rdma_diagnose',         # 155 s in all
    'test_playbook_tags',             # 298 s
    'test_execution_environment',     # 200 s
    'test_gke_playbook_kubernetes',   # 173 s
    'test_parity_gcloud',             # 170 s
    'test_gke_k8s_roles',             # 160 s
    'test_nccl_diagnose',             # 103 s + 77 s
    'test_awx_job_templates',         # 125 s
)


def pytest_collection_modifyitems(items):
    rank = {name: index for index, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__.rsplit('.', 1)[-1], len(rank)))
