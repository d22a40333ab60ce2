"""Run a benchmark's command and measure what it cost the controller: CPU seconds and peak RSS of its process tree.

The process is reaped with ``os.wait4``, whose rusage covers the process and every descendant it waited for
(ansible-playbook's forked workers and module processes): ``ru_utime + ru_stime`` is their CPU seconds together,
``ru_maxrss`` the largest resident set any one of them reached (Linux's getrusage(2): for children, "the
maximum resident set size among all children", not a sum; forked workers share most pages with their parent, so a
sum would count them again).
"""

import dataclasses
import os
import subprocess
import tempfile


@dataclasses.dataclass
class Usage:
    """What the processes run under one ``Usage`` cost together: CPU seconds summed, peak RSS the largest seen."""

    cpu_s: float = 0.0
    peak_rss_mib: float = 0.0
    processes: int = 0

    def add(self, usage):
        self.cpu_s += usage.ru_utime + usage.ru_stime
        self.peak_rss_mib = max(self.peak_rss_mib, usage.ru_maxrss / 1024.0)
        self.processes += 1


def run(command, env=None, usage=None, stdin=None):
    """Run ``command`` to its end; returns subprocess.CompletedProcess (text stdout and stderr), its cost added to ``usage``
    (a Usage) when given."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err,  # pylint: disable=consider-using-with
                                   stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        if stdin is not None:
            process.stdin.write(stdin.encode())
            process.stdin.close()
        _pid, status, rusage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if usage is not None:
            usage.add(rusage)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(command, process.returncode, out.read().decode(errors='replace'),
                                           err.read().decode(errors='replace'))
