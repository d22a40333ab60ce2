"""The real discovery documents, and the URL routes built from them.

The discovery documents shipped inside google-api-python-client describe every REST method of
Compute Engine (v1, beta, alpha), Kubernetes Engine (v1, v1beta1) and Service Usage (v1): its
HTTP verb, its URL template and its request schema.  Routing from the documents themselves means
the sandbox answers exactly the URLs Google serves, and validates bodies against the same schemas.
"""

import importlib.util
import json
import os
import re
import threading

# URL prefix (as the request path starts, without the leading slash) -> documents served there.
DOCUMENTS_BY_PREFIX = {
    'compute/v1/': ('compute.v1.json',),
    'compute/beta/': ('compute.beta.json',),
    'compute/alpha/': ('compute.alpha.json',),
    'v1/': ('container.v1.json', 'serviceusage.v1.json'),
    'v1beta1/': ('container.v1beta1.json',),
}

_PARAM = re.compile(r'\\\{(\\\+)?(\w+)\\\}')
_cache = {}
_cache_lock = threading.Lock()


def documents_dir():
    """Where the installed google-api-python-client keeps its discovery documents.

    ``SANDBOX_DISCOVERY_DIR`` overrides it; the package is located without importing it.
    """
    override = os.environ.get('SANDBOX_DISCOVERY_DIR')
    if override:
        return override
    spec = importlib.util.find_spec('googleapiclient')
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError('google-api-python-client is not installed: the sandbox needs its discovery documents')
    return os.path.join(list(spec.submodule_search_locations)[0], 'discovery_cache', 'documents')


def load_document(filename):
    with _cache_lock:
        if filename not in _cache:
            with open(os.path.join(documents_dir(), filename), encoding='utf-8') as handle:
                _cache[filename] = json.load(handle)
        return _cache[filename]


class Route:
    """One REST method: verb, URL pattern, discovery id and request schema."""

    def __init__(self, document, method):
        self.document = document
        self.api = document['name']
        self.version = document['version']
        self.http_method = method['httpMethod']
        self.method_id = method['id']
        self.request_ref = (method.get('request') or {}).get('$ref')
        self.parameters = method.get('parameters') or {}
        template = document['servicePath'] + method.get('flatPath', method['path'])
        pattern = _PARAM.sub(self._group, re.escape(template))
        self.regex = re.compile('^' + pattern + '$')
        literal = _PARAM.sub('', re.escape(template))
        # Templates with more literal text win over ones with more parameters
        # ("instances/bulkInsert" before "instances/{instance}").
        self.specificity = len(literal)

    @staticmethod
    def _group(match):
        if match.group(1):
            return '(?P<%s>.+)' % match.group(2)
        return '(?P<%s>[^/:]+)' % match.group(2)


def _walk_methods(resource):
    yield from resource.get('methods', {}).values()
    for child in resource.get('resources', {}).values():
        yield from _walk_methods(child)


_routes_cache = {}


def routes_for_prefix(prefix):
    """All routes served under one URL prefix, most specific first (built once, then cached)."""
    with _cache_lock:
        cached = _routes_cache.get(prefix)
    if cached is not None:
        return cached
    routes = []
    for filename in DOCUMENTS_BY_PREFIX[prefix]:
        document = load_document(filename)
        routes.extend(Route(document, method) for method in _walk_methods(document))
    routes.sort(key=lambda route: -route.specificity)
    with _cache_lock:
        _routes_cache[prefix] = routes
    return routes


def find_route(http_method, path):
    """Return ``(route, path_params)`` for a request path (without leading slash), or ``(None, None)``.

    ``(None, {})`` means the URL exists but not for this HTTP verb.
    """
    for prefix in DOCUMENTS_BY_PREFIX:
        if path.startswith(prefix):
            break
    else:
        return None, None
    url_exists = False
    for route in routes_for_prefix(prefix):
        found = route.regex.match(path)
        if found is None:
            continue
        if route.http_method == http_method:
            return route, found.groupdict()
        url_exists = True
    return None, ({} if url_exists else None)
