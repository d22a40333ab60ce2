"""Offline stand-in for the get-pip.py bootstrap script that ansible-test downloads.

ansible-test bootstraps pip in each sanity virtualenv by running a cached get-pip.py from
ci-files.testing.ansible.com, which this network cannot reach. The real script installs pip
from an embedded wheel and then runs ``pip install --upgrade --force-reinstall ARGS``; this one
does the same with the interpreter's own ensurepip wheel, so the versions pinned by
ansible-test still come from PyPI.
"""

import subprocess
import sys


def main():
    args = sys.argv[1:]
    # get-pip.py's own options: leave out setuptools / wheel, which pip install does not know.
    no_setuptools = '--no-setuptools' in args
    args = [arg for arg in args if arg not in ('--no-setuptools', '--no-wheel')]
    # In a child process: ensurepip points PIP_CONFIG_FILE at /dev/null in its own environment,
    # which would hide the machine's pip configuration (index, CA bundle) from the install below.
    rc = subprocess.call([sys.executable, '-m', 'ensurepip', '--upgrade'])
    pip = [sys.executable, '-m', 'pip']
    if rc == 0:
        rc = subprocess.call(pip + ['install', '--upgrade', '--force-reinstall'] + args)
    if rc == 0 and no_setuptools:
        rc = subprocess.call(pip + ['uninstall', '--yes', '--quiet', 'setuptools'])
    return rc


if __name__ == '__main__':
    sys.exit(main())
