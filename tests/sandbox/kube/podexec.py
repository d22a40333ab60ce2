"""The exec hook of kubelet-streams (tests/controlplane/kubernetes/cmd/kubelet-streams): what runs on this
host when `kubectl exec` (or kubernetes.core.k8s_exec) reaches a kwok Node's kubelet endpoint.

    podexec.py SOCKET NAMESPACE POD CONTAINER COMMAND...

It asks the cluster's exec runtime (exec.ExecRuntime, in the process that runs the simulation) over the
Unix socket SOCKET which argv stands for COMMAND in that container, then replaces itself with that argv,
so the command's streams and exit code are the session's. Standard library only.

SIMULATION (the container's command).  A real kubelet runs COMMAND inside the container, from the image's
root filesystem; here no container exists, so the runtime answers with a stand-in program on this host
(exec.py says which).  When no runtime answers, the command ends as a CRI exec of a missing binary does:
exit code 126 and the OCI runtime's message.
"""

import json
import os
import socket
import sys


def ask(path, question):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(path)
        sock.sendall(json.dumps(question).encode() + b'\n')
        answer = b''
        while not answer.endswith(b'\n'):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    return json.loads(answer)


def main(argv):
    path, namespace, pod, container, command = argv[1], argv[2], argv[3], argv[4], argv[5:]
    try:
        answer = ask(path, {'namespace': namespace, 'pod': pod, 'container': container, 'command': command})
    except (OSError, ValueError) as error:
        answer = {'error': 'no exec runtime answers for this cluster (%s)' % error}
    if answer.get('error'):
        sys.stderr.write('OCI runtime exec failed: exec failed: %s: unknown\n' % answer['error'])
        return 126
    env = dict(os.environ, **answer.get('env', {}))
    os.execvpe(answer['argv'][0], answer['argv'], env)
    return 127


if __name__ == '__main__':
    sys.exit(main(sys.argv))
