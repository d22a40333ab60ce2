"""Start a stand-in OpenShift (a real Kubernetes control plane, controlplane.py, with openshift.py's
simulation of OLM and the operators) and keep it up until interrupted; prints ``openshift on URL
kubeconfig PATH``.  Used by ``scripts/demo openshift_rdma.yml``.

    python tests/sandbox/kube/openshift_run.py [--kubeconfig PATH] [--delay SECONDS]
"""

import sys

# Run as a script, this file's directory would come first on sys.path (its modules, such as exec.py and
# errors.py, importable as top-level names): put tests/ there instead, so that sandbox.kube imports as a package.
sys.path[0] = __file__.rsplit('/', 3)[0]

import argparse  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order
import os  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order
import signal  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order
import tempfile  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order
import threading  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order

from sandbox.kube import KubeHub  # noqa: E402  pylint: disable=wrong-import-position
from sandbox.kube.openshift import OpenShiftSimulation  # noqa: E402  pylint: disable=wrong-import-position


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--kubeconfig', default=os.path.join(tempfile.mkdtemp(prefix='openshift-'), 'kubeconfig'))
    parser.add_argument('--delay', type=float, default=0.1, help='seconds each simulated operator step takes')
    args = parser.parse_args()
    hub = KubeHub()
    cluster = hub.start_cluster('openshift', version='1.30.6', openshift=True)
    simulation = OpenShiftSimulation(cluster, delay=args.delay).start()
    cluster.write_kubeconfig(args.kubeconfig)
    print('openshift on %s kubeconfig %s' % (cluster.url, args.kubeconfig), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    simulation.stop()
    hub.stop_all()


if __name__ == '__main__':
    main()
