"""HTTPS CONNECT-proxy mode of the sandbox, for tools that hard-code Google's API hosts.

The google.cloud collection (our benchmark anchor) always calls ``https://compute.googleapis.com`` or
``https://www.googleapis.com`` and has no endpoint option.  Run it with
``HTTPS_PROXY=http://127.0.0.1:PORT`` and ``REQUESTS_CA_BUNDLE=<ca_file>``: this proxy answers
``CONNECT compute.googleapis.com:443`` (or www.googleapis.com) itself, terminates TLS with a
certificate from a test CA made at start, and serves the decrypted requests with the sandbox's own
request handler, so links in the answers read ``https://compute.googleapis.com/compute/v1/...`` as
on the real API.  Nothing is forwarded anywhere: a CONNECT to any other host, and any request that
is not a CONNECT, is refused with 403, so no request can leave the machine.

Interface::

    from sandbox import Sandbox
    from sandbox.proxy import ConnectProxy
    sb = Sandbox().start()
    proxy = ConnectProxy(sb).start()   # binds 127.0.0.1:0; ConnectProxy(sb, port=N) for a fixed port
    proxy.url                          # 'http://127.0.0.1:PORT'  -> HTTPS_PROXY
    proxy.ca_file                      # PEM of the test CA        -> REQUESTS_CA_BUNDLE
    proxy.refused                      # ['evil.example.com:443', ...] CONNECTs it refused
    proxy.stop()

``tests/sandbox/run --https-proxy-port N`` starts one beside the sandbox.  The certificates are made
with the ``cryptography`` package (a dependency of ansible-core) and live in a temporary directory
that ``stop()`` removes.
"""

import datetime
import os
import shutil
import socketserver
import ssl
import tempfile
import threading

from .server import _RequestHandler, serve_in_thread, shut_down

SERVED_HOSTS = ('compute.googleapis.com', 'www.googleapis.com')


def make_test_ca(directory, hosts):
    """Write ca.pem, and server.pem + server.key for ``hosts`` signed by it; return their paths.

    A host that is an IP address ('127.0.0.1') goes into the certificate as an IP address SAN (the
    Kubernetes stand-in's endpoints are addressed by IP, as GKE's are).
    """
    import ipaddress  # pylint: disable=import-outside-toplevel
    # Imported here: only the proxy needs it, and the rest of the sandbox must import without it.
    from cryptography import x509  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives import hashes, serialization  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives.asymmetric import ec  # pylint: disable=import-outside-toplevel
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # pylint: disable=import-outside-toplevel

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'aiinfra.gpudirect sandbox test CA')])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                            encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
               .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([_san(x509, ipaddress, host) for host in hosts]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {name: os.path.join(directory, name) for name in ('ca.pem', 'server.pem', 'server.key')}
    with open(paths['ca.pem'], 'wb') as handle:
        handle.write(ca_cert.public_bytes(serialization.Encoding.PEM))
    with open(paths['server.pem'], 'wb') as handle:
        handle.write(cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(serialization.Encoding.PEM))
    with open(paths['server.key'], 'wb') as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return paths['ca.pem'], paths['server.pem'], paths['server.key']


def _san(x509, ipaddress, host):
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


class _TlsHandler(_RequestHandler):
    """The sandbox's handler, answering as https://HOST on a connection the proxy has decrypted."""
    scheme = 'https'


class _ProxyHandler(socketserver.BaseRequestHandler):
    def handle(self):
        proxy = self.server.proxy
        head = self._read_head()
        if head is None:
            return
        request_line = head.split(b'\r\n', 1)[0].decode('latin-1')
        parts = request_line.split()
        target = parts[1] if len(parts) == 3 else ''
        host, _colon, port = target.rpartition(':')
        if parts[:1] != ['CONNECT'] or host not in proxy.hosts or port != '443':
            proxy.note_refused(target or request_line)
            body = ('this proxy serves only CONNECT to %s on port 443\n' % ', '.join(proxy.hosts)).encode()
            self.request.sendall(b'HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n'
                                 b'Content-Length: %d\r\n\r\n%s' % (len(body), body))
            return
        self.request.sendall(b'HTTP/1.1 200 Connection established\r\n\r\n')
        try:
            tls = proxy.context.wrap_socket(self.request, server_side=True)
        except (ssl.SSLError, OSError):
            return   # the client gave up or did not trust the CA; it reports that itself
        try:
            _TlsHandler(tls, self.client_address, proxy.sandbox_server)
        except (ssl.SSLError, OSError):
            pass
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def _read_head(self):
        data = b''
        while b'\r\n\r\n' not in data:
            chunk = self.request.recv(4096)
            if not chunk or len(data) > 65536:
                return None
            data += chunk
        return data


class _ProxyServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy = None


class _SandboxView:
    """What the sandbox's request handler reads from its server: the sandbox and an address."""

    def __init__(self, sandbox, address):
        self.sandbox = sandbox
        self.server_address = address


class ConnectProxy:
    """A CONNECT proxy on loopback that serves ``hosts`` from ``sandbox`` over TLS (see the module docstring)."""

    def __init__(self, sandbox, host='127.0.0.1', port=0, hosts=SERVED_HOSTS):
        self.sandbox = sandbox
        self.host = host
        self.requested_port = port
        self.hosts = tuple(hosts)
        self.refused = []
        self._lock = threading.Lock()
        self._directory = None
        self._server = None
        self._thread = None
        self.ca_file = None
        self.context = None
        self.sandbox_server = None

    def start(self):
        self._directory = tempfile.mkdtemp(prefix='sandbox-ca-')
        self.ca_file, cert_file, key_file = make_test_ca(self._directory, self.hosts)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert_file, key_file)
        self._server = _ProxyServer((self.host, self.requested_port), _ProxyHandler)
        self._server.proxy = self
        self.sandbox_server = _SandboxView(self.sandbox, (self.hosts[0], 443))
        self._thread = serve_in_thread(self._server, 'sandbox-https-proxy', poll_interval=0.05)
        return self

    def stop(self):
        shut_down(self._server, self._thread)
        self._server = self._thread = None
        if self._directory:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    def note_refused(self, target):
        with self._lock:
            self.refused.append(target)

    @property
    def port(self):
        return self._server.server_address[1]

    @property
    def url(self):
        return 'http://%s:%d' % (self.host, self.port)

    def environment(self):
        """The variables that send requests-based tools (google.cloud) through this proxy."""
        return {'HTTPS_PROXY': self.url, 'https_proxy': self.url, 'REQUESTS_CA_BUNDLE': self.ca_file,
                'NO_PROXY': '', 'no_proxy': ''}
