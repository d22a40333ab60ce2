"""GcloudSession (tests/sandbox/gcloud.py) runs the real gcloud CLI in one long-lived process. What it sends
and what it reports must be what a `gcloud` process sends and reports, or the tests that use it (the GKE
parity test) would compare something else than the manual's commands."""

import json
import re

from sandbox.gcloud import GcloudSession

COMMANDS = [
    ['compute', 'networks', 'create', 'n-1', '--subnet-mode=custom', '--mtu=8244'],
    ['compute', 'networks', 'subnets', 'create', 's-1', '--network=n-1', '--region=us-central1', '--range=192.168.1.0/24'],
    ['container', 'clusters', 'create', 'c', '--location=us-central1-a', '--enable-dataplane-v2', '--enable-ip-alias',
     '--enable-multi-networking', '--no-enable-autoupgrade', '--num-nodes=1'],
    ['compute', 'networks', 'create', 'n-1', '--subnet-mode=custom', '--mtu=8244'],   # exists: exit 1
    ['compute', 'networks', 'list', '--format=value(name,mtu)'],
]


def sent(sandbox, project):
    """(method, path, body) of each request to ``project``, with the project's and the operations' names set aside."""
    return [json.loads(re.sub(r'operation-[0-9a-z-]+', 'OPERATION', json.dumps([entry['method'], entry['path'], entry['body']])
                              .replace(project, 'PROJECT')))
            for entry in sandbox.request_log() if '/projects/%s/' % project in entry['path']]


def test_a_session_sends_and_reports_what_gcloud_processes_do(sandbox, gcloud, tmp_path):
    by_process = [gcloud(*command, '--project=by-process') for command in COMMANDS]
    with GcloudSession(sandbox, str(tmp_path / 'session-config')) as session:
        # Each command's --project holds for that command only, as in separate processes.
        by_session = [session(*command, '--project=' + project) for command in COMMANDS for project in ('by-session', 'other')][::2]

    assert [r.returncode for r in by_session] == [r.returncode for r in by_process] == [0, 0, 0, 1, 0]
    assert by_session[3].stderr == by_process[3].stderr.replace('by-process', 'by-session')
    assert 'already exists' in by_session[3].stderr
    assert by_session[4].stdout == by_process[4].stdout == 'n-1\t8244\n'
    assert [r.stderr for r in by_session[:2]] == [r.stderr.replace('by-process', 'by-session') for r in by_process[:2]]
    assert sent(sandbox, 'by-session') == sent(sandbox, 'by-process') != []
    assert len(sent(sandbox, 'other')) == len(sent(sandbox, 'by-session'))
