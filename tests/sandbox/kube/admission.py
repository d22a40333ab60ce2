"""GKE's own admission of Pods, as a mutating admission webhook of the real API server.

SIMULATION (GKE's built-in Pod admission).  Real GKE mutates Pods in its control plane; what the seeds
depend on is written here, each rule with its source:

- **ComputeClass toleration** ("About custom ComputeClasses",
  https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes, "Node taints"):
  nodes GKE creates for a ComputeClass carry the taint ``cloud.google.com/compute-class=NAME:NoSchedule``
  (autoprovisioning.pool_bodies), and a Pod that selects the class (nodeSelector
  ``cloud.google.com/compute-class: NAME``) gets the matching toleration, so only such Pods land there.

The webhook is served here on 127.0.0.1 with the cluster's own serving certificate (its CA is the
webhook's caBundle) and registered as a MutatingWebhookConfiguration on Pod CREATE, failurePolicy Fail:
GKE's admission cannot be skipped, so while the simulation runs no Pod escapes it.  What differs: the
configuration is an object any admin can see or delete (``gke-simulated-pod-admission``); on GKE the
rules are compiled into the control plane.
"""

import base64
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMPUTE_CLASS_LABEL = 'cloud.google.com/compute-class'
CONFIGURATION = 'gke-simulated-pod-admission'


def pod_patch(pod):
    """JSON patch operations GKE's admission applies to ``pod`` (see the module docstring)."""
    compute_class = (pod.get('spec', {}).get('nodeSelector') or {}).get(COMPUTE_CLASS_LABEL)
    if not compute_class:
        return []
    toleration = {'key': COMPUTE_CLASS_LABEL, 'operator': 'Equal', 'value': compute_class, 'effect': 'NoSchedule'}
    tolerations = pod['spec'].get('tolerations')
    if tolerations is None:
        return [{'op': 'add', 'path': '/spec/tolerations', 'value': [toleration]}]
    if toleration in tolerations:
        return []
    return [{'op': 'add', 'path': '/spec/tolerations/-', 'value': toleration}]


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # pylint: disable=invalid-name
        review = json.loads(self.rfile.read(int(self.headers.get('Content-Length') or 0)))
        request = review['request']
        patch = pod_patch(request.get('object') or {})
        response = {'uid': request['uid'], 'allowed': True}
        if patch:
            response.update(patchType='JSONPatch', patch=base64.b64encode(json.dumps(patch).encode()).decode())
        body = json.dumps({'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview', 'response': response}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


class PodAdmission:
    """The webhook server of one cluster: ``start()`` serves and registers it; ``stop()`` ends it."""

    def __init__(self, plane):
        self.plane = plane
        self.server = ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(plane.pki['cert'], plane.pki['key'])
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={'poll_interval': 0.5},
                                        name='gke-admission-%s' % plane.key, daemon=True)

    def start(self):
        self._thread.start()
        url = 'https://127.0.0.1:%d/pods' % self.server.server_address[1]
        configuration = {
            'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'MutatingWebhookConfiguration',
            'metadata': {'name': CONFIGURATION},
            'webhooks': [{'name': 'pods.gke-simulated-admission.aiinfra.test', 'admissionReviewVersions': ['v1'],
                          'sideEffects': 'None', 'failurePolicy': 'Fail', 'timeoutSeconds': 10,
                          'clientConfig': {'url': url, 'caBundle': base64.b64encode(self.plane.ca_pem.encode()).decode()},
                          'rules': [{'apiGroups': [''], 'apiVersions': ['v1'], 'operations': ['CREATE'],
                                     'resources': ['pods'], 'scope': 'Namespaced'}]}]}
        self.plane.request('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', json.dumps(configuration))
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
