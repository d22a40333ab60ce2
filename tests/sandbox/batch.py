"""Google's HTTP batch protocol (``POST /batch/compute/v1``), which gcloud uses when one command acts
on several resources (``gcloud compute instances delete a b``).

The body is ``multipart/mixed``; each part is a whole HTTP request (``application/http``).  Each is
dispatched as if it had arrived on its own (so each is validated, faulted and logged), and the answer
is a ``multipart/mixed`` body of HTTP responses whose Content-IDs are ``response-`` + the request's.
"""

import re
import uuid
from urllib.parse import urlsplit

_BOUNDARY = re.compile(r'boundary="?([^";]+)"?')
_STATUS_TEXT = {200: 'OK', 400: 'Bad Request', 404: 'Not Found', 409: 'Conflict', 429: 'Too Many Requests',
                500: 'Internal Server Error', 501: 'Not Implemented', 503: 'Service Unavailable'}


def _split_head(blob):
    for separator in (b'\r\n\r\n', b'\n\n'):
        if separator in blob:
            head, body = blob.split(separator, 1)
            return head.replace(b'\r\n', b'\n').decode('utf-8', 'replace').split('\n'), body
    return blob.decode('utf-8', 'replace').replace('\r\n', '\n').split('\n'), b''


def _headers(lines):
    headers = {}
    for line in lines:
        name, _colon, value = line.partition(':')
        if value:
            headers[name.strip().lower()] = value.strip()
    return headers


def parse_batch(content_type, raw_body):
    """``[(content_id, method, path, body bytes)]`` of a multipart/mixed batch request."""
    found = _BOUNDARY.search(content_type or '')
    if not found:
        raise ValueError('batch request without a multipart boundary')
    delimiter = b'--' + found.group(1).encode()
    requests = []
    for part in raw_body.split(delimiter)[1:]:
        if part.startswith(b'--'):
            break
        part_head, inner = _split_head(part.lstrip(b'\r\n'))
        content_id = _headers(part_head).get('content-id', '<%s>' % uuid.uuid4())
        inner_head, inner_body = _split_head(inner.lstrip(b'\r\n'))
        method, target = inner_head[0].split()[:2]
        split = urlsplit(target)
        path = split.path + ('?' + split.query if split.query else '')
        length = _headers(inner_head[1:]).get('content-length')
        body = inner_body[:int(length)] if length else inner_body.rstrip(b'\r\n')
        requests.append((content_id, method, path, body))
    return requests


def render_batch(answers):
    """``answers``: ``[(content_id, status, headers, body bytes)]`` -> ``(content type, body bytes)``."""
    boundary = 'batch_%s' % uuid.uuid4().hex
    chunks = []
    for content_id, status, headers, body in answers:
        response_id = '<response-%s>' % content_id.strip('<>')
        lines = ['--' + boundary, 'Content-Type: application/http', 'Content-ID: ' + response_id, '',
                 'HTTP/1.1 %d %s' % (status, _STATUS_TEXT.get(status, 'Error')),
                 'Content-Type: application/json; charset=UTF-8', 'Content-Length: %d' % len(body)]
        lines.extend('%s: %s' % item for item in headers.items())
        chunks.append(('\r\n'.join(lines) + '\r\n\r\n').encode() + body + b'\r\n')
    chunks.append(('--%s--\r\n' % boundary).encode())
    return 'multipart/mixed; boundary=%s' % boundary, b''.join(chunks)
