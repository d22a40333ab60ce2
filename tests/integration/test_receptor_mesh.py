# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX's way of running a sliced job on execution nodes, on loopback, with the real ansible-runner.

AWX (awx/main/tasks/receptor.py, AWXReceptorJob) runs a job on an execution node as three streams: on the controller
``ansible-runner transmit`` packs the private data directory, Receptor carries it as a work unit of type
``ansible-runner`` to the node, whose work-command runs ``ansible-runner worker`` on it (stdin in, events out), and on the
controller ``ansible-runner process`` reads the results back into the controller's artifacts. Job slicing
(awx/main/models/inventory.py, Inventory.get_sliced_hosts) gives slice N of K the hosts, ordered by name, [N-1::K].

Two transports carry the streams between the controller and the two execution nodes:
- ``receptor``: a controller node and two execution nodes of real Receptor (tests/receptor/build.sh) with TCP listener
  and peers on 127.0.0.1, work submitted with receptorctl as AWX submits it (built by setup from tests/receptor).
- ``worker-pipe``: without Receptor, each node's ``ansible-runner worker`` run in the node's own directory with the
  stream on its stdin and its stdout read back, which is what Receptor's work-command does at the far end. It tests
  everything but Receptor itself.

The stage run on the slices is the host stage's first steps (roles/cos_host_prep tasks python.yml and plan.yml: the
python3 check by raw and the catalog plan, whose modules run on each host against the real container engine of
tests/ci/podman.sh); the stand-in hosts are inventory names on local connection. The NCCL stage is refused in a slice.
"""
from __future__ import annotations

import concurrent.futures
import io
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import types

import pytest

ansible_runner = pytest.importorskip('ansible_runner')

from playbook_runner import collection_root, collections_path  # noqa: E402  (after the skip)

SOCKET = os.environ.get('GPUDIRECT_DOCKER_SOCKET')
RECEPTOR = os.path.join(os.environ.get('GPUDIRECT_RECEPTOR_BIN', ''), 'receptor')
HOSTS = ['cos-%d' % n for n in range(5)]
NODES = ['exec-1', 'exec-2']
PLAN_TASK = "Read the catalog's host facts and validate the RxDM side of the version pair"
HOST_STAGE = """
- name: The host stage's first steps on each host of the slice
  hosts: gpudirect_cluster
  gather_facts: false
  tasks:
    - name: Check for python3
      ansible.builtin.include_role: {name: aiinfra.gpudirect.cos_host_prep, tasks_from: python}
    - name: Plan the host from the catalog
      ansible.builtin.include_role: {name: aiinfra.gpudirect.cos_host_prep, tasks_from: plan}
"""


def sliced(hosts, number, count):
    """Slice NUMBER of COUNT as AWX makes it: Inventory.get_sliced_hosts on the hosts ordered by name."""
    return sorted(hosts)[number - 1::count]


def inventory(hosts, **group_vars):
    lines = ['[gpudirect_cluster]', *hosts, '[gpudirect_cluster:vars]', 'ansible_connection=local',
             'ansible_python_interpreter=%s' % sys.executable]
    lines += ['%s=%s' % (name, value) for name, value in group_vars.items()]
    return '\n'.join(lines) + '\n'


def worker_environment():
    """What an execution node's ansible-runner worker runs with: this virtualenv's tools on PATH (an EE's image has
    them), nothing of the controller's ANSIBLE_* settings."""
    env = {key: value for key, value in os.environ.items() if not key.startswith('ANSIBLE_')}
    env['PATH'] = os.pathsep.join([os.path.dirname(sys.executable), env.get('PATH', '')])
    return env


class WorkerPipe:
    """Each node a directory of its own; the work unit is `ansible-runner worker` there, stream in and out."""

    name = 'worker-pipe'

    def __init__(self, root):
        self.root = root

    def run(self, node, private_data_dir, stream):
        node_dir = self.root / node / private_data_dir.name
        done = subprocess.run([shutil.which('ansible-runner', path=os.path.dirname(sys.executable)), 'worker',
                               '--private-data-dir', str(node_dir)], input=stream, capture_output=True,
                              env=worker_environment(), timeout=600, check=False)
        # A failed play exits non-zero too (as a Receptor work unit then ends Failed); its rc travels in the stream.
        assert done.stdout, done.stderr.decode()
        return done.stdout


class ReceptorMesh:
    """A controller node listening on 127.0.0.1 and two execution nodes peering to it, as AWX's docker-compose
    development mesh configures them (tools/docker-compose/ansible/roles/sources/templates/receptor-*.conf.j2)."""

    name = 'receptor'

    def __init__(self, root):
        import yaml
        self.root, self.processes = root, []
        root.mkdir(parents=True)
        port = free_port()
        self.control = str(root / 'controller.sock')
        configs = {'controller': [{'node': {'id': 'controller', 'datadir': str(root / 'controller-data')}},
                                  {'log-level': 'info'},
                                  {'tcp-listener': {'bindaddr': '127.0.0.1', 'port': port}},
                                  {'control-service': {'service': 'control', 'filename': self.control}}]}
        for node in NODES:
            configs[node] = [{'node': {'id': node, 'datadir': str(root / (node + '-data'))}},
                             {'log-level': 'info'},
                             {'tcp-peer': {'address': '127.0.0.1:%d' % port, 'redial': True}},
                             {'work-command': {'worktype': 'ansible-runner', 'command': 'ansible-runner', 'params': 'worker',
                                               'allowruntimeparams': True}},
                             {'control-service': {'service': 'control', 'filename': str(root / (node + '.sock'))}}]
        for node, config in configs.items():
            path = root / (node + '.yml')
            path.write_text(yaml.safe_dump(config))
            log = open(root / (node + '.log'), 'wb')  # pylint: disable=consider-using-with
            self.processes.append(subprocess.Popen([RECEPTOR, '--config', str(path)], stdout=log, stderr=subprocess.STDOUT,
                                                   env=worker_environment()))
        try:
            self.wait_for_routes()
        except AssertionError:
            self.close()
            raise

    def controller(self):
        from receptorctl.socket_interface import ReceptorControl
        return ReceptorControl(self.control)

    def wait_for_routes(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if os.path.exists(self.control):
                try:
                    routes = self.controller().simple_command('status').get('RoutingTable') or {}
                except (OSError, RuntimeError, ValueError):
                    routes = {}
                if set(NODES) <= set(routes):
                    return
            time.sleep(0.5)
        raise AssertionError('the execution nodes did not join the mesh in 60 s: %s' % (self.root / 'controller.log').read_text())

    def run(self, node, private_data_dir, stream):
        node_dir = self.root / node / private_data_dir.name
        # AWXReceptorJob._run_internal: work type ansible-runner on the job's execution node, the private data
        # directory in the params (AWX adds --delete; kept here to show where the work ran).
        unit = self.controller().submit_work(worktype='ansible-runner', node=node, payload=stream,
                                             params={'params': '--private-data-dir=%s' % node_dir})['unitid']
        results = self.controller().get_work_results(unit, return_sockfile=True)
        return results.read()

    def close(self):
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=30)


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@pytest.fixture(params=['receptor', 'worker-pipe'])
def mesh(request, tmp_path):
    if request.param == 'worker-pipe':
        yield WorkerPipe(tmp_path / 'nodes')
        return
    # scripts/lib.sh's setup builds it from the source kept in tests/receptor; a missing binary is a failure.
    assert os.access(RECEPTOR, os.X_OK), 'receptor is not built (%s): run bash tests/receptor/build.sh' % RECEPTOR
    pytest.importorskip('receptorctl')
    built = ReceptorMesh(tmp_path / 'nodes')
    yield built
    built.close()


def controller_job(root, name, playbook, hosts=None, playbook_text=None, extravars=None):
    """A private data directory on the controller, as AWX writes one for a job."""
    private = root / 'controller' / name
    (private / 'project').mkdir(parents=True)
    (private / 'inventory').mkdir()
    (private / 'env').mkdir()
    if playbook_text:
        (private / 'project' / playbook).write_text(playbook_text)
    else:
        shutil.copy(collection_root() / 'playbooks' / playbook, private / 'project' / playbook)
    (private / 'inventory' / 'hosts').write_text(hosts or '')
    # The execution environment has the collection installed; here the copy under test is named to the worker.
    (private / 'env' / 'envvars').write_text(json.dumps({
        'ANSIBLE_COLLECTIONS_PATH': collections_path(), 'ANSIBLE_NOCOLOR': '1', 'ANSIBLE_LOCALHOST_WARNING': 'False',
        'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'False', 'CONTAINERS_CONF': os.environ.get('CONTAINERS_CONF', '')}))
    (private / 'env' / 'extravars').write_text(json.dumps(extravars or {}))
    return private


def run_on(mesh, node, private, playbook):
    """transmit on the controller, the work unit on NODE, process back on the controller; return the Runner."""
    sent = private.parent / (private.name + '.stream')   # a file: transmit writes to a file object with a name
    with open(sent, 'wb') as stream:
        ansible_runner.run(streamer='transmit', _output=stream, private_data_dir=str(private), playbook=playbook,
                           ident=private.name, quiet=True)
    returned = mesh.run(node, private, sent.read_bytes())
    events = []   # as AWX's event_handler receives them, one by one from the stream

    def received(event):
        events.append(event)
        return True
    processed = ansible_runner.run(streamer='process', _input=io.BytesIO(returned), private_data_dir=str(private),
                                   ident=private.name, quiet=True, event_handler=received)
    artifacts = pathlib.Path(processed.artifact_dir)
    # The worker's rc, status and stdout, as `process` writes them into the controller's artifacts.
    return types.SimpleNamespace(status=processed.status, rc=int((artifacts / 'rc').read_text()), events=events,
                                 artifact_dir=artifacts, stdout=(artifacts / 'stdout').read_text())


def ok_hosts(runner, task):
    return [event['event_data']['host'] for event in runner.events
            if event['event'] == 'runner_on_ok' and event['event_data'].get('task') == task]


@pytest.mark.skipif(not SOCKET, reason='GPUDIRECT_DOCKER_SOCKET is not set: source tests/ci/podman.sh')
def test_sliced_host_stage_runs_each_host_once_on_its_node_and_reports_back(mesh, tmp_path):
    count = len(NODES)
    jobs = {number: controller_job(tmp_path, 'slice-%d' % number, 'host_stage.yml', playbook_text=HOST_STAGE,
                                   hosts=inventory(sliced(HOSTS, number, count), cos_host_prep_machine_type='a3-highgpu-8g',
                                                   cos_host_prep_docker_socket=SOCKET))
            for number in range(1, count + 1)}
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=count) as pool:   # the slices run at once, one per node
        futures = {number: pool.submit(run_on, mesh, NODES[number - 1], private, 'host_stage.yml') for number, private in jobs.items()}
        runners = {number: future.result() for number, future in futures.items()}
    elapsed = time.monotonic() - started

    prepared = []
    for number, runner in runners.items():
        assert (runner.status, runner.rc) == ('successful', 0), (mesh.name, number, runner.stdout)
        hosts = ok_hosts(runner, PLAN_TASK)
        assert sorted(hosts) == sliced(HOSTS, number, count), (number, hosts)
        prepared += hosts
        # The events came back to the controller's own artifacts, written by `ansible-runner process`.
        written = list((runner.artifact_dir / 'job_events').glob('*.json'))
        assert runner.artifact_dir == jobs[number] / 'artifacts' / ('slice-%d' % number)
        assert len(written) == len(runner.events) > 0
        # The work ran in the node's directory, not the controller's: the node holds the project it was sent.
        node_dir = mesh.root / NODES[number - 1] / ('slice-%d' % number)
        assert (node_dir / 'project' / 'host_stage.yml').is_file()
        assert not (mesh.root / NODES[number % count] / ('slice-%d' % number)).exists()
    assert sorted(prepared) == sorted(HOSTS), 'every host prepared exactly once across the slices: %s' % prepared
    print('%s: %d slices of %d hosts on %s in %.1f s' % (mesh.name, count, len(HOSTS), ', '.join(NODES), elapsed))


AWX_SLICE = {'awx_job_template_name': 'GPUDirect NCCL test', 'awx_workflow_job_name': 'GPUDirect NCCL test',
             'awx_workflow_job_id': 41, 'awx_job_launch_type': 'workflow'}


@pytest.mark.parametrize('playbook', ['nccl_test.yml', 'nccl_diagnose.yml'])
def test_the_nccl_stage_refuses_a_slice_and_names_the_fix(mesh, tmp_path, playbook):
    """AWX's variables of a slice job (awx_meta_vars: the workflow job slicing makes takes the template's name)."""
    private = controller_job(tmp_path, 'nccl-slice-1', playbook, hosts=inventory(sliced(HOSTS, 1, 2)),
                             extravars=dict(AWX_SLICE, gpudirect_nccl_hosts='gpudirect_cluster', nccl_test_mode='gce',
                                            nccl_test_machine_type='a3-highgpu-8g'))
    runner = run_on(mesh, NODES[0], private, playbook)
    assert runner.status == 'failed'
    failed = [event['event_data'] for event in runner.events if event['event'] == 'runner_on_failed']
    assert [event['task'] for event in failed] == ['Refuse to run as one slice of an AWX sliced job (the test needs every host at once)']
    message = failed[0]['res']['msg']
    assert message.startswith("job_slice_count: this run is one slice of the AWX sliced job 'GPUDirect NCCL test'")
    assert 'sees only 3 of the cluster' in message and "set the job template's job_slice_count to 1" in message
    # Nothing ran on the hosts before the refusal: no container start, no test.
    assert not [event for event in runner.events if event['event'] == 'runner_on_ok' and 'container' in event['event_data'].get('task', '').lower()]


def test_the_nccl_stage_runs_in_a_workflow_of_its_own(mesh, tmp_path):
    """A workflow that is not slicing (its own name) runs the test: parse mode on a saved log, on the node."""
    log = pathlib.Path(__file__).parent.parent / 'fixtures' / 'nccl' / 'seed003_tcpx_all_gather.txt'
    private = controller_job(tmp_path, 'nccl-workflow', 'nccl_test.yml', extravars=dict(
        AWX_SLICE, awx_workflow_job_name='GPUDirect cluster', nccl_test_mode='parse', nccl_test_log=str(log),
        nccl_test_machine_type='a3-highgpu-8g', nccl_test_report_dir=str(tmp_path / 'report'), nccl_test_plot=False))
    runner = run_on(mesh, NODES[1], private, 'nccl_test.yml')
    assert (runner.status, runner.rc) == ('successful', 0), runner.stdout
    assert any('NCCL verdict: PASS' in (event.get('stdout') or '') for event in runner.events)
