"""pod_exec's reading of the exec's error channel (plugins/plugin_utils/kube_client.py exec_outcome): the Status the
kubelet writes there, as kubelet-streams (the kubelet's remotecommand code) and a real kubelet write it."""

import json

from ansible_collections.aiinfra.gpudirect.plugins.plugin_utils.kube_client import exec_outcome


def test_success_is_rc_0():
    assert exec_outcome(json.dumps({'metadata': {}, 'status': 'Success'})) == (0, None)


def test_a_non_zero_exit_is_its_code():
    status = {'metadata': {}, 'status': 'Failure', 'message': 'command terminated with non-zero exit code: exit status 2',
              'reason': 'NonZeroExitCode', 'details': {'causes': [{'reason': 'ExitCode', 'message': '2'}]}}
    assert exec_outcome(json.dumps(status)) == (2, None)


def test_a_command_that_did_not_start_is_the_kubelets_message_not_a_number():
    """kubernetes.core's k8s_exec read causes[0].message as the exit code and failed with "invalid literal for int()"."""
    message = ('error executing command in container: failed to exec in container: failed to start exec: OCI runtime exec '
               'failed: exec failed: unable to start container process: exec: "/configs/allgather.sh": stat '
               '/configs/allgather.sh: no such file or directory: unknown')
    status = {'metadata': {}, 'status': 'Failure', 'message': message, 'reason': 'InternalError',
              'details': {'causes': [{'message': message}]}, 'code': 500}
    assert exec_outcome(json.dumps(status)) == (None, message)


def test_no_status_says_the_connection_closed():
    rc, message = exec_outcome('')
    assert rc is None and 'connection closed' in message
