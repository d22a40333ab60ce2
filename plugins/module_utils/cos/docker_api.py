# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

# A small Docker Engine API client over the engine's unix socket, for modules that run on
# Container-Optimized OS: standard library only (http.client + socket), no requests, no docker SDK
# (COS has neither, and requests 2.32 broke the SDK's unix transport; see style.md).
#
# Layers: UnixHTTPConnection (transport) -> DockerClient (one method per API call, typed errors)
# -> helpers the modules share (create body from a catalog ContainerSpec, pull policy, waiting for
# a log line, running a container to completion). Works against Docker and podman's
# Docker-compatible service (API 1.41).

import http.client
import json
import os
import re
import socket
import stat
import time
import urllib.parse
from datetime import datetime, timedelta, timezone

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.image_reference import ImageReference

DEFAULT_SOCKET = '/var/run/docker.sock'
API_VERSION = '1.41'
PULL_POLICIES = ('always', 'missing', 'never')
CONFIG_LABEL = 'aiinfra.gpudirect.config'
MANAGED_BY_LABEL = 'aiinfra.gpudirect.managed-by'


class DockerError(Exception):
    """Base of every error this client raises; ``str()`` is a complete sentence for fail_json."""


class DockerConnectionError(DockerError):
    """The socket is missing or nobody answers on it."""


class APIError(DockerError):
    """The engine answered with an HTTP error."""

    def __init__(self, method, path, status, explanation):
        self.method, self.path, self.status, self.explanation = method, path, status, explanation
        super().__init__('Docker Engine API %s %s failed with HTTP %s: %s' % (method, path, status, explanation))


class NotFound(APIError):
    """HTTP 404: no such container or image."""


class Conflict(APIError):
    """HTTP 409: e.g. a container of that name exists already."""


class WaitTimeout(DockerError):
    """A wait ran out of time; ``log_tail`` holds the container's last log lines."""

    def __init__(self, message, log_tail=''):
        self.log_tail = log_tail
        super().__init__(message)


class ContainerExited(DockerError):
    """A container that should keep running (or finish successfully) exited; ``log_tail`` explains why."""

    def __init__(self, message, exit_code, log_tail=''):
        self.exit_code, self.log_tail = exit_code, log_tail
        super().__init__(message)


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over an AF_UNIX stream socket instead of TCP."""

    def __init__(self, socket_path, timeout=60):
        super().__init__('localhost', timeout=timeout)
        self.socket_path = socket_path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class DockerClient:
    """One method per Engine API call. ``inspect_*`` return None for 404; other errors raise."""

    def __init__(self, socket_path=DEFAULT_SOCKET, timeout=60):
        self.socket_path = socket_path
        self.timeout = timeout

    # -- transport -------------------------------------------------------------------------------

    def _request(self, method, path, query=None, body=None, timeout=None, versioned=True):
        url = ('/v%s%s' % (API_VERSION, path)) if versioned else path
        if query:
            url += '?' + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        headers = {'Host': 'docker'}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode('utf-8')
            headers['Content-Type'] = 'application/json'
        conn = UnixHTTPConnection(self.socket_path, timeout=timeout or self.timeout)
        try:
            conn.request(method, url, body=payload, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise DockerConnectionError(
                'cannot reach the Docker Engine API at unix://%s (%s); start the container engine '
                '(on COS: sudo systemctl start docker) or point docker_socket at its socket'
                % (self.socket_path, exc.strerror or exc)) from None
        except socket.timeout:
            raise DockerConnectionError('the Docker Engine API at unix://%s did not answer %s %s within %s s'
                                        % (self.socket_path, method, path, timeout or self.timeout)) from None
        except (OSError, http.client.HTTPException) as exc:
            raise DockerConnectionError('lost the connection to the Docker Engine API at unix://%s during %s %s: %s'
                                        % (self.socket_path, method, path, exc)) from None
        finally:
            conn.close()
        if response.status >= 400:
            raise _api_error(method, path, response.status, data)
        return data

    def _json(self, method, path, query=None, body=None, timeout=None):
        data = self._request(method, path, query, body, timeout)
        return json.loads(data.decode('utf-8')) if data.strip() else None

    # -- engine ----------------------------------------------------------------------------------

    def ping(self):
        return self._request('GET', '/_ping', versioned=False).decode('utf-8', 'replace').strip() == 'OK'

    def version(self):
        return self._json('GET', '/version')

    # -- images ----------------------------------------------------------------------------------

    def inspect_image(self, ref):
        try:
            return self._json('GET', '/images/%s/json' % urllib.parse.quote(ref, safe=''))
        except NotFound:
            return None

    def pull_image(self, ref, timeout=600):
        """Pull ``ref``; the engine streams JSON progress lines and reports failures inside the stream."""
        repository, tag = split_image_ref(ref)
        data = self._request('POST', '/images/create', {'fromImage': repository, 'tag': tag}, timeout=timeout)
        for line in data.decode('utf-8', 'replace').splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get('error'):
                raise APIError('POST', '/images/create', 500, 'pull of %s failed: %s' % (ref, event['error']))
        return self.inspect_image(ref)

    # -- containers ------------------------------------------------------------------------------

    def inspect_container(self, name):
        try:
            return self._json('GET', '/containers/%s/json' % urllib.parse.quote(name, safe=''))
        except NotFound:
            return None

    def create_container(self, name, body):
        result = self._json('POST', '/containers/create', {'name': name}, body)
        return result['Id']

    def start_container(self, container_id):
        self._request('POST', '/containers/%s/start' % container_id)

    def remove_container(self, container_id, force=True):
        try:
            self._request('DELETE', '/containers/%s' % container_id, {'force': 'true' if force else 'false', 'v': 'true'})
        except NotFound:
            return False
        return True

    def wait_container(self, container_id, timeout):
        """Block until the container exits; return its exit code (raises WaitTimeout)."""
        try:
            result = self._json('POST', '/containers/%s/wait' % container_id, timeout=timeout)
        except DockerConnectionError:
            raise WaitTimeout('container %s did not exit within %s s' % (container_id[:12], timeout)) from None
        return int(result.get('StatusCode', -1))

    def container_logs(self, container_id, tail='all', timestamps=False):
        """stdout and stderr interleaved, as text (the engine multiplexes them in 8-byte-header frames)."""
        data = self._request('GET', '/containers/%s/logs' % container_id,
                             {'stdout': 1, 'stderr': 1, 'tail': tail, 'timestamps': 1 if timestamps else 0})
        return demux_logs(data).decode('utf-8', 'replace')

    def exec_create(self, container, command, env=None):
        """POST /containers/{id}/exec: an exec instance of ``command`` (argv) in a running container."""
        body = {'Cmd': list(command), 'AttachStdout': True, 'AttachStderr': True, 'Tty': False}
        if env:
            body['Env'] = ['%s=%s' % (k, v) for k, v in env.items()]
        return self._json('POST', '/containers/%s/exec' % urllib.parse.quote(container, safe=''), body=body)['Id']

    def exec_start(self, exec_id, timeout):
        """POST /exec/{id}/start, attached: the command's stdout and stderr once it ends (raises WaitTimeout)."""
        try:
            data = self._request('POST', '/exec/%s/start' % exec_id, body={'Detach': False, 'Tty': False}, timeout=timeout)
        except DockerConnectionError:
            raise WaitTimeout('exec %s did not end within %s s' % (exec_id[:12], timeout)) from None
        return demux_logs(data).decode('utf-8', 'replace')

    def exec_inspect(self, exec_id):
        return self._json('GET', '/exec/%s/json' % exec_id)


def _api_error(method, path, status, data):
    try:
        explanation = json.loads(data.decode('utf-8')).get('message') or data.decode('utf-8', 'replace')
    except (ValueError, AttributeError):
        explanation = data.decode('utf-8', 'replace').strip()
    cls = {404: NotFound, 409: Conflict}.get(status, APIError)
    if status == 500 and 'already in use' in explanation:
        cls = Conflict  # podman answers a name clash with 500 where Docker answers 409
    return cls(method, path, status, explanation)


def demux_logs(data):
    """Strip the stream headers of a non-TTY log stream ([stream, 0, 0, 0, size32]); pass raw TTY logs through."""
    out, pos = [], 0
    while pos + 8 <= len(data) and data[pos] in (0, 1, 2) and data[pos + 1:pos + 4] == b'\0\0\0':
        size = int.from_bytes(data[pos + 4:pos + 8], 'big')
        out.append(data[pos + 8:pos + 8 + size])
        pos += 8 + size
    if pos == 0:
        return data
    return b''.join(out) + data[pos:]


def split_image_ref(ref):
    """``registry:5000/repo/name:tag`` -> (``registry:5000/repo/name``, ``tag``); no tag -> ``latest``;
    a digest reference keeps its digest as the tag (the API accepts it there)."""
    reference = ImageReference.parse(ref)
    if reference.digest:
        return str(reference._replace(digest=None)), reference.digest
    return reference.name, reference.tag or 'latest'


def short_id(image_or_container_id):
    return (image_or_container_id or '').split(':', 1)[-1][:12]


def missing_devices(paths):
    """The paths that are not character devices on this host (the engine refuses to create otherwise)."""
    missing = []
    for path in paths:
        try:
            if not stat.S_ISCHR(os.stat(path).st_mode):
                missing.append(path)
        except OSError:
            missing.append(path)
    return missing


_SIZE_RE = re.compile(r'^(\d+)([bkmg]?)$', re.I)


def size_bytes(text):
    """Docker CLI sizes (``8g``, ``1g``, ``512m``) -> bytes."""
    match = _SIZE_RE.match(str(text).strip())
    if not match:
        raise ValueError('%r is not a size such as 512m or 8g' % (text,))
    return int(match.group(1)) * {'': 1, 'b': 1, 'k': 1024, 'm': 1024 ** 2, 'g': 1024 ** 3}[match.group(2).lower()]


def container_summary(spec, image):
    """What a catalog ContainerSpec asks of a container, as a plain dict: compared for drift and shown in diffs."""
    summary = {
        'image': image,
        'entrypoint': spec.entrypoint,
        'args': list(spec.args),
        'env': dict(spec.env),
        'volumes': list(spec.volumes),
        'devices': list(spec.devices),
        'privileged': spec.privileged,
        'cap_add': list(spec.cap_add),
        'network_mode': 'host' if spec.network_host else 'default',
        'shm_size': spec.shm_size,
        'ulimits': dict(spec.ulimits),
        'user': spec.user,
        'userns_host': spec.userns_host,
    }
    if spec.interactive:
        # Only when set: containers made before this field existed keep a matching label.
        summary['interactive'] = True
    return summary


def create_body(spec, image, managed_by):
    """The POST /containers/create body for a catalog ContainerSpec (one ``docker run`` of the guide).

    Not translated: ``--rm`` (AutoRemove). The module owns the container's life cycle, and a container
    that exits must keep its logs so the failure can say why. The summary is stored in a label so a
    later run can tell whether the running container still matches what is asked for.
    """
    summary = container_summary(spec, image)
    host_config = {
        'Binds': list(spec.volumes),
        'Devices': [{'PathOnHost': d, 'PathInContainer': d, 'CgroupPermissions': 'rwm'} for d in spec.devices],
        'Privileged': bool(spec.privileged),
        'CapAdd': list(spec.cap_add),
    }
    if spec.network_host:
        host_config['NetworkMode'] = 'host'
    if spec.shm_size:
        host_config['ShmSize'] = size_bytes(spec.shm_size)
    if spec.ulimits:
        host_config['Ulimits'] = [{'Name': name, 'Soft': int(value), 'Hard': int(value)} for name, value in spec.ulimits]
    if spec.userns_host:
        host_config['UsernsMode'] = 'host'
    body = {
        'Image': image,
        'Cmd': list(spec.args),
        'Env': ['%s=%s' % item for item in spec.env],
        'Labels': {CONFIG_LABEL: json.dumps(summary, sort_keys=True), MANAGED_BY_LABEL: managed_by},
        'HostConfig': host_config,
    }
    if spec.entrypoint:
        body['Entrypoint'] = [spec.entrypoint]
    if spec.user:
        body['User'] = spec.user
    if spec.interactive:
        # docker run -it: stdin kept open and a terminal, so the container's shell waits instead of exiting.
        body.update(Tty=True, OpenStdin=True, AttachStdin=False)
    return body


def labelled_summary(container):
    """The summary a managed container was created with, or None for a container made some other way."""
    labels = (container.get('Config') or {}).get('Labels') or {}
    try:
        return json.loads(labels[CONFIG_LABEL])
    except (KeyError, TypeError, ValueError):
        return None


def ensure_image(client, ref, pull, check_mode=False):
    """Apply the pull policy. Returns (image inspect dict or None, action) with action one of
    ``present``, ``pulled``, ``would pull``. ``never`` with a missing image raises DockerError."""
    if pull not in PULL_POLICIES:
        raise ValueError('pull: %r; choose one of: %s' % (pull, ', '.join(PULL_POLICIES)))
    image = client.inspect_image(ref)
    if pull == 'never' and image is None:
        raise DockerError('image %s is not on this host and pull is never; load it (docker load) or set pull: missing' % ref)
    if pull == 'always' or image is None:
        if check_mode:
            return image, 'would pull'
        return client.pull_image(ref), 'pulled'
    return image, 'present'


# -- a long-running container of a catalog spec (gpudirect_rxdm, nccl_container) -------------------


def drift_reasons(current, desired, image_id, restart=False):
    """Why the container must be (re)created to match ``desired`` (a container_summary); empty when it may stay."""
    if current is None:
        return ['create: no container of that name']
    if restart:
        return ['recreate: restart requested']
    reasons = []
    running = (current.get('State') or {}).get('Running')
    if not running:
        reasons.append('recreate: it exited (code %s)' % (current.get('State') or {}).get('ExitCode'))
    labelled = labelled_summary(current)
    if labelled is None:
        reasons.append('recreate: it was not created by this collection (no configuration label)')
    else:
        changed = sorted(k for k in set(labelled) | set(desired) if labelled.get(k) != desired.get(k))
        if changed:
            reasons.append('recreate: configuration changed (%s)' % ', '.join(changed))
    if image_id and short_id(current.get('Image')) != short_id(image_id):
        reasons.append('recreate: the image %s now has a different ID' % desired['image'])
    return reasons


def current_summary(current):
    """What a diff shows of an existing container (its label, else its image)."""
    if current is None:
        return {}
    return labelled_summary(current) or {'image': (current.get('Config') or {}).get('Image'),
                                         'note': 'created outside aiinfra.gpudirect'}


def recreate(client, current, name, body):
    """Remove ``current`` (when there is one), then create and start ``name``; return the new container's ID."""
    if current is not None:
        client.remove_container(current['Id'], force=True)
    container_id = client.create_container(name, body)
    client.start_container(container_id)
    return container_id


def exec_run(client, container, command, timeout, env=None):
    """``docker exec CONTAINER COMMAND...`` through the API: (exit code or None when stopped by the timeout, output,
    timed out). A timeout stops waiting; the Engine API cannot stop an exec, so the command may run on in the container."""
    exec_id = client.exec_create(container, command, env)
    try:
        output = client.exec_start(exec_id, timeout)
    except WaitTimeout:
        return None, '', True
    return (client.exec_inspect(exec_id) or {}).get('ExitCode'), output, False


# -- waiting ---------------------------------------------------------------------------------------

_TS_RE = re.compile(r'^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?')


def parse_timestamp(text):
    """RFC 3339 with nanoseconds, as Docker and podman write them -> aware datetime (None if unparsable)."""
    match = _TS_RE.match(str(text or '').strip())
    if not match:
        return None
    base, fraction, zone = match.groups()
    micro = int((fraction or '0')[:6].ljust(6, '0'))
    moment = datetime.strptime(base, '%Y-%m-%dT%H:%M:%S').replace(microsecond=micro)
    if zone in (None, 'Z'):
        return moment.replace(tzinfo=timezone.utc)
    zone = zone.replace(':', '')
    offset = (int(zone[1:3]) * 60 + int(zone[3:5])) * (1 if zone[0] == '+' else -1)
    return moment.replace(tzinfo=timezone.utc) - timedelta(minutes=offset)


def log_tail(client, container_id, lines):
    try:
        return client.container_logs(container_id, tail=lines).rstrip('\n')
    except DockerError as exc:
        return '(logs unavailable: %s)' % exc


def find_log_line(client, container_id, needle, started):
    """(line, seconds from ``started`` to that line) or (None, None); uses the engine's timestamps."""
    for raw in client.container_logs(container_id, timestamps=True).splitlines():
        stamp, line = (raw.split(' ', 1) + [''])[:2]
        if needle in line:
            when = parse_timestamp(stamp)
            seconds = round((when - started).total_seconds(), 3) if when and started else None
            return line, seconds
    return None, None


def wait_for_log_line(client, container_id, needle, timeout, tail_lines=20, interval=0.5, clock=time.monotonic, sleep=time.sleep):
    """Wait until the container logs ``needle``. Raises ContainerExited if it stops first and
    WaitTimeout after ``timeout`` seconds, both with the last ``tail_lines`` log lines."""
    deadline = clock() + timeout
    while True:
        # One inspect per poll, before the logs are read: a container that logs the line and then
        # exits is still seen to have logged it.
        state = (client.inspect_container(container_id) or {}).get('State') or {}
        line, seconds = find_log_line(client, container_id, needle, parse_timestamp(state.get('StartedAt')))
        if line is not None:
            return line, seconds
        if not state.get('Running'):
            code = state.get('ExitCode')
            raise ContainerExited('container %s exited (code %s) before it logged %r'
                                  % (short_id(container_id), code, needle), code, log_tail(client, container_id, tail_lines))
        if clock() >= deadline:
            raise WaitTimeout('container %s did not log %r within %s s' % (short_id(container_id), needle, timeout),
                              log_tail(client, container_id, tail_lines))
        sleep(interval)


def run_to_completion(client, name, body, timeout, tail_lines=20):
    """Create, start and wait for a one-shot container; return (exit code, logs). The container is
    removed afterwards whatever happens (it is not AutoRemove, so its logs can be read first)."""
    stale = client.inspect_container(name)
    if stale is not None:
        client.remove_container(stale['Id'], force=True)
    container_id = client.create_container(name, body)
    try:
        client.start_container(container_id)
        try:
            code = client.wait_container(container_id, timeout)
        except WaitTimeout as exc:
            raise WaitTimeout(str(exc), log_tail(client, container_id, tail_lines)) from None
        return code, client.container_logs(container_id)
    finally:
        client.remove_container(container_id, force=True)
