# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 26: the fabric diagnosis (role nccl_test, entry point diagnose) on the stand-in Compute Engine hosts of the
host-stage tests: every host of the inventory is this machine (connection local) with its own NCCL test container on
podman's Docker API (tests/ci/podman.sh), started from the stand-in plugin image, whose run scripts print SYNTHETIC
nccl-tests output and break a host, a NIC, a plugin version or a GPU where its faults file says
(tests/images/installer/scripts/README). Each test marks one fault and the diagnosis must name it, and only it.

The stand-in's plugin is installed as the host stage does: the stand-in installer writes /var/lib/tcpxo/lib64 on this
machine, which every NCCL test container mounts."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import uuid

import pytest
import yaml

from module_runner import run_module
from playbook_runner import ansible_playbook_command, collections_path
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.cos import docker_api
from ansible_collections.aiinfra.gpudirect.plugins.modules import nccl_container

SOCKET = os.environ.get('GPUDIRECT_DOCKER_SOCKET')
IMAGES = os.path.join(os.path.dirname(__file__), '..', 'images', 'build.py')
pytestmark = pytest.mark.skipif(not SOCKET, reason='GPUDIRECT_DOCKER_SOCKET is not set: source tests/ci/podman.sh')
MACHINE_TYPE = 'a3-megagpu-8g'


def plugin_image():
    """This checkout's stand-in plugin image, by the tag of its inputs' hash (tests/images/build.py), which another
    worktree's build on the shared engine does not move."""
    spec = importlib.util.spec_from_file_location('standin_images', IMAGES)
    images = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(images)
    return images.installer_content_tag(images.load_families(), 'TCPXO')


IMAGE = plugin_image() if SOCKET else None


class Fabric:
    """N stand-in hosts, each with its NCCL test container; the faults file written into every container."""

    def __init__(self, count):
        tag = uuid.uuid4().hex[:6]
        self.hosts = ['diag%s-%d' % (tag, n) for n in range(1, count + 1)]
        self.containers = {host: 'nccl-%s' % host for host in self.hosts}
        self.client = docker_api.DockerClient(SOCKET)

    def container(self, host, **args):
        base = {'machine_type': MACHINE_TYPE, 'name': self.containers[host], 'pull': 'never', 'docker_socket': SOCKET,
                'image': IMAGE, 'force_version_pair': True}   # its tag is a hash, not a plugin version
        return run_module(nccl_container.main, dict(base, **args))

    def exec(self, host, *argv):
        rc, output, _timed_out = docker_api.exec_run(self.client, self.containers[host], list(argv), 60)
        assert rc == 0, output
        return output

    def start(self, faults):
        for host in self.hosts:
            assert not self.container(host).get('failed')
            self.exec(host, 'sh', '-c', 'mkdir -p /etc/aiinfra-standin && printf "%s" "$0" >/etc/aiinfra-standin/faults',
                      ''.join('%s\n' % line for line in faults))
        self.exec(self.hosts[0], '/bin/sh', '/scripts/installer', 'install')   # the host stage's plugin install

    def remove(self):
        for host in self.hosts:
            self.container(host, state='absent')


@pytest.fixture
def fabric():
    made = []

    def make(count, faults):
        found = Fabric(count)
        made.append(found)
        found.start([line.format(*found.hosts) for line in faults])
        return found
    yield make
    for found in made:
        found.remove()


def diagnose(fabric, tmp_path, check=False, extra=None):
    """Run playbooks/nccl_diagnose.yml over the fabric's hosts (then a play that writes the fact nccl_test_bad_hosts);
    (process, report.json or None, the fact or None)."""
    inventory = {'all': {'hosts': {h: {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                                       'nccl_test_container': fabric.containers[h]} for h in fabric.hosts}}}
    bad_file = tmp_path / 'bad_hosts.json'
    play = [{'ansible.builtin.import_playbook': 'aiinfra.gpudirect.nccl_diagnose'},
            {'name': 'Keep what the diagnosis found', 'hosts': 'all', 'gather_facts': False,
             'tasks': [{'ansible.builtin.copy': {'content': '{{ nccl_test_bad_hosts | to_json }}', 'dest': str(bad_file)},
                        'delegate_to': 'localhost', 'run_once': True, 'when': 'nccl_test_bad_hosts is defined'}]}]
    (tmp_path / 'inventory.yml').write_text(yaml.safe_dump(inventory))
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play, sort_keys=False))
    variables = dict({'gpudirect_nccl_hosts': 'all', 'nccl_test_machine_type': MACHINE_TYPE, 'nccl_test_preflight': False,
                      'nccl_test_pull': 'never', 'nccl_test_image': IMAGE, 'nccl_test_force_version_pair': True,
                      'nccl_test_docker_socket': SOCKET, 'nccl_test_fail_on_verdict': False,
                      'nccl_test_report_dir': str(tmp_path / 'report')}, **(extra or {}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='False')
    run = subprocess.run([*ansible_playbook_command(), '-i', str(tmp_path / 'inventory.yml'), '-f', '8', str(tmp_path / 'play.yml'),
                          '-e', json.dumps(variables)] + (['--check'] if check else []),
                         env=env, capture_output=True, text=True, timeout=900, check=False)
    report_path = tmp_path / 'report' / 'report.json'
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return run, report, (json.loads(bad_file.read_text()) if bad_file.exists() else None)


def test_one_bad_host_among_four_is_named_alone_after_two_rounds(fabric, tmp_path):
    hosts = fabric(4, ['bad-host {2}'])
    run, report, bad = diagnose(hosts, tmp_path, extra={'nccl_test_plot': True})   # the plot only when asked for (matplotlib)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    named = hosts.hosts[2]
    assert bad == [named] and report['bad_hosts'] == [named] and report['suspect_hosts'] == [], run.stdout[-3000:]
    assert report['host_rounds'] == 2 and report['synthetic'] is True and not any(f['named'] for f in report['nics'])
    assert report['hosts'][named]['reasons'] == ['every pair failed, also with healthy %s, %s' % (hosts.hosts[0], hosts.hosts[3])]
    summary = (tmp_path / 'report' / 'summary.md').read_text()
    assert 'STAND-IN OUTPUT' in summary and '| %s | bad | every pair failed' % named in summary
    assert (tmp_path / 'report' / 'pairs.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert 'NCCL diagnosis (STAND-IN OUTPUT, synthetic numbers): bad %s; suspect none' % named in run.stdout


def test_one_bad_nic_among_six_hosts_is_named_on_its_host(fabric, tmp_path):
    hosts = fabric(6, ['bad-nic {1} eth3'])
    run, report, bad = diagnose(hosts, tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    named = hosts.hosts[1]
    assert bad == [named] and report['suspect_hosts'] == [], run.stdout[-3000:]
    weak = [f for f in report['nics'] if f['named']]
    assert [(f['host'], f['nic']) for f in weak] == [(named, 'eth3')] and len(report['nics']) == 8
    assert report['hosts'][named]['bad_nics'] == ['eth3'] and report['nic_threshold_gbps'] == 15.0
    assert 'Bad NICs: eth3 on %s' % named in run.stdout


def test_mixed_plugin_version_and_a_missing_gpu_are_named(fabric, tmp_path):
    hosts = fabric(4, ['plugin-version {3} 1.0.12', 'missing-gpu {0}'])
    run, report, bad = diagnose(hosts, tmp_path)
    assert bad == [hosts.hosts[0], hosts.hosts[3]], run.stdout[-3000:]
    assert report['hosts'][hosts.hosts[3]]['reasons'] == [
        'GPUDirect plugin FasTrak 1.0.12 differs from FasTrak 1.0.13 (mixed versions hang NCCL)']
    assert report['hosts'][hosts.hosts[0]]['reasons'] == ['GPUs seen: 7 of 8']
    assert report['hosts'][hosts.hosts[1]]['status'] == 'healthy'


def test_check_mode_prints_the_plan_and_runs_nothing(fabric, tmp_path):
    hosts = fabric(5, [])
    run, report, _bad = diagnose(hosts, tmp_path, check=True)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    printed = re.sub(r'\s', '', run.stdout)
    assert report is None and '"pairs":[["%s","%s"],["%s","%s"]]' % tuple(hosts.hosts[:4]) in printed
    assert '(and%s,leftover)withahostthatpassed' % hosts.hosts[4] in printed
    assert 'Run this host\'s pair' not in run.stdout   # the rounds' tasks are not even included


def test_a_bad_host_fails_the_play_after_the_report_and_a_misspelt_variable_before_any_run(fabric, tmp_path):
    hosts = fabric(4, ['bad-host {0}'])
    run, report, _bad = diagnose(hosts, tmp_path, extra={'nccl_test_fail_on_verdict': True})
    assert run.returncode == 2 and report['bad_hosts'] == [hosts.hosts[0]]
    assert 'NCCL diagnosis: bad %s; suspect none (report: ' % hosts.hosts[0] in run.stdout, run.stdout[-2500:]
    (tmp_path / 'wrong').mkdir()
    wrong, _report, _bad = diagnose(hosts, tmp_path / 'wrong', extra={'nccl_test_diagnose_round': 2})
    assert wrong.returncode == 2 and 'nccl_test_diagnose_round: role nccl_test has no such variable' in wrong.stdout
    assert 'Run this host\'s pair' not in wrong.stdout
    (tmp_path / 'other').mkdir()
    other, _report, _bad = diagnose(hosts, tmp_path / 'other', extra={'nccl_test_hosts': [hosts.hosts[0], 'vm-elsewhere']})
    assert other.returncode == 2 and "nccl_test_hosts: vm-elsewhere not among the play's hosts" in other.stdout
    assert 'Start the seed' not in other.stdout
