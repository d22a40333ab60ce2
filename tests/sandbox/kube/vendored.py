"""The manifests the seed manuals apply by URL or show inline, as the tests read them (manifests/SOURCES.md).

The files the collection ships too (plugins/module_utils/k8s/manifests/, which it renders from) are not copied
here a second time: ``path`` gives the collection's copy once its SHA-256 is the one recorded in
manifests/UPSTREAM.sha256 from the upstream file (container-engine-accelerators at the commit SOURCES.md names,
or the seed's text), so a test never reads a file the collection changed. The other files are the tests' own
(manifests/*/).
"""

import glob
import hashlib
import os

OWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'manifests')
COLLECTION = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(OWN)))), 'plugins', 'module_utils', 'k8s', 'manifests')


def _upstream():
    with open(os.path.join(OWN, 'UPSTREAM.sha256'), encoding='utf-8') as handle:
        return {name: digest for digest, name in (line.split() for line in handle if line.strip())}


UPSTREAM = _upstream()


def path(name):
    """The file manifests/NAME (such as gpudirect-tcpxo/nccl-tcpxo-installer.yaml), checked against upstream when it
    is the collection's copy."""
    if name not in UPSTREAM:
        return os.path.join(OWN, name)
    shipped = os.path.join(COLLECTION, name)
    with open(shipped, 'rb') as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    if digest != UPSTREAM[name]:
        raise AssertionError('%s: the collection ships a file that is not the upstream one (sha256 %s, upstream %s); restore it '
                             'from the commit in tests/sandbox/kube/manifests/SOURCES.md' % (shipped, digest, UPSTREAM[name]))
    return shipped


def every():
    """The paths of every manifest, sorted by name."""
    own = {os.path.relpath(found, OWN) for found in glob.glob(os.path.join(OWN, '*', '*.yaml'))}
    return [path(name) for name in sorted(own | set(UPSTREAM))]
