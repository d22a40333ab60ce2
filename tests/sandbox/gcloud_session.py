"""The child of ``gcloud.GcloudSession``: the real gcloud CLI loaded once, running one command per request.

Run by the Cloud SDK's own Python, as bin/gcloud runs lib/gcloud.py (``python3 -S``, lib/ and
lib/third_party/ first on sys.path). Reads one JSON list of arguments per line on stdin; for each,
runs ``cli.Execute(args)`` the way ``googlecloudsdk.gcloud_main.main`` does (inside the credential
providers' context; an error ends in ``sys.exit``, whose code is the exit status) with file
descriptors 1 and 2 sent to temporary files, and answers one JSON line ``{returncode, stdout,
stderr}`` on the file descriptor named by argv[1]. Calliope resets its per-invocation state
(properties pushed from flags, parsed concepts) for each Execute, as gcloud's own test harness relies
on when it runs many commands with one CLI.
"""

import json
import os
import sys
import tempfile

SDK_LIB = os.path.join(os.environ['CLOUDSDK_ROOT_DIR'], 'lib')
sys.path[:0] = [os.path.join(SDK_LIB, 'third_party'), SDK_LIB]

from googlecloudsdk import gcloud_main  # noqa: E402  pylint: disable=wrong-import-position,import-error
from googlecloudsdk.core.credentials import creds_context_managers  # noqa: E402  pylint: disable=wrong-import-position,import-error


def run(cli, args):
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        code = 0
        try:
            with creds_context_managers.CredentialProvidersManager(None):
                cli.Execute(args)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        out.seek(0)
        err.seek(0)
        return {'returncode': code, 'stdout': out.read().decode('utf-8', 'replace'), 'stderr': err.read().decode('utf-8', 'replace')}


def main():
    answers = os.fdopen(int(sys.argv[1]), 'w', encoding='utf-8')
    cli = gcloud_main.CreateCLI([])
    for line in sys.stdin:
        answers.write(json.dumps(run(cli, json.loads(line))) + '\n')
        answers.flush()


if __name__ == '__main__':
    main()
