"""A minimal JSON client for the sandbox (stdlib only), for tests that talk REST directly."""

import json
import urllib.error
import urllib.request


class Response:
    def __init__(self, status, body, headers):
        self.status = status
        self.body = body
        self.headers = headers

    def __repr__(self):
        return 'Response(%d, %r)' % (self.status, self.body)


class SandboxClient:
    """``client.post('compute/v1/projects/p/global/networks', {...}) -> Response(status, body, headers)``."""

    def __init__(self, base_url):
        self.base_url = base_url.rstrip('/') + '/'

    def request(self, method, path, body=None, raw=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.base_url + path.lstrip('/'), data=data, method=method,
                                         headers={'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:  # nosec - loopback test server
                return Response(answer.status, json.loads(answer.read() or b'null'), dict(answer.headers))
        except urllib.error.HTTPError as error:
            return Response(error.code, json.loads(error.read() or b'null'), dict(error.headers))

    def get(self, path):
        return self.request('GET', path)

    def post(self, path, body=None, raw=None):
        return self.request('POST', path, body if body is not None else ({} if raw is None else None), raw)

    def delete(self, path):
        return self.request('DELETE', path)

    def must(self, method, path, body=None):
        """Like ``request`` but raises unless the answer is 200 (for test set-up)."""
        answer = self.request(method, path, body)
        if answer.status != 200:
            raise AssertionError('%s %s -> %d %s' % (method, path, answer.status, answer.body))
        return answer.body

    def create_vpc(self, project, network, subnet, region, cidr, mtu=8244):
        """A custom-mode network with one subnet, the way the seeds' loops make them."""
        self.must('POST', 'compute/v1/projects/%s/global/networks' % project, {'name': network, 'autoCreateSubnetworks': False, 'mtu': mtu})
        self.must('POST', 'compute/v1/projects/%s/regions/%s/subnetworks' % (project, region),
                  {'name': subnet, 'network': 'global/networks/%s' % network, 'ipCidrRange': cidr})
