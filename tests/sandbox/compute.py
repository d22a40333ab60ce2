"""Compute Engine v1 read-only catalog endpoints, operations, and the CRUD scaffolding shared by
``networking.py`` and ``instances.py``.

Keys and links: a resource's key is its relative path (``projects/p/global/networks/n``); its
``selfLink`` is ``COMPUTE_LINK + key``.  References in request bodies may be full URLs (any host, any
of v1/beta/alpha), ``projects/...`` paths, scope-relative paths (``global/networks/n``) or bare
names; ``ref_key`` turns each into a key.
"""

import hashlib
import re
import time
import zlib

from . import catalog
from .errors import already_exists, invalid, not_found
from .operations import start_compute_operation
from .quotas import gpu_usage, network_usage, project_quotas
from .registry import handles
from .rules import DISK_TYPES, check_name
from .store import COMPUTE_LINK, rfc3339

# plural in URLs -> (scope kind, resource kind, store collection)
COLLECTIONS = {
    'networks': ('global', 'compute#network'),
    'firewalls': ('global', 'compute#firewall'),
    'subnetworks': ('regions', 'compute#subnetwork'),
    'resourcePolicies': ('regions', 'compute#resourcePolicy'),
    'instances': ('zones', 'compute#instance'),
    'reservations': ('zones', 'compute#reservation'),
}
# singular path parameter of each plural, as the discovery documents name it
SINGULAR = {'networks': 'network', 'firewalls': 'firewall', 'subnetworks': 'subnetwork',
            'resourcePolicies': 'resourcePolicy', 'instances': 'instance', 'reservations': 'reservation'}
_URL_PREFIX = re.compile(r'^.*?/compute/(?:v1|beta|alpha)/')


def collection(plural):
    return 'compute.' + plural


def link(key):
    return COMPUTE_LINK + key


def name_of(key_or_link):
    return key_or_link.rstrip('/').rsplit('/', 1)[-1]


def ref_key(value, plural, project, scope_kind='global', scope=None):
    """The canonical key for a reference given in any of the forms the API accepts."""
    text = _URL_PREFIX.sub('', value.strip())
    if text.startswith('projects/'):
        return text
    if text.startswith(('global/', 'zones/', 'regions/')):
        return 'projects/%s/%s' % (project, text)
    if scope_kind == 'global':
        return 'projects/%s/global/%s/%s' % (project, plural, text)
    return 'projects/%s/%s/%s/%s/%s' % (project, scope_kind, scope, plural, text)


def stable_id(text):
    """A fixed uint64-looking id for catalog entries, the same on every run."""
    return str(1000000000000000000 + zlib.crc32(text.encode()) * 1000003)


def project_number(project):
    return str(100000000000 + int(hashlib.sha256(project.encode()).hexdigest(), 16) % 900000000000)


def fingerprint(call):
    """An opaque base64-looking fingerprint that changes with every write."""
    return hashlib.md5(str(call.store.new_serial()).encode()).hexdigest()[:11] + '='  # nosec - not for security


def check_zone(zone):
    if zone != '-' and zone not in catalog.ZONES:
        raise invalid("Invalid value for field 'zone': '%s'. Unknown zone." % zone)


def check_region(region):
    if region not in catalog.REGIONS:
        raise invalid("Invalid value for field 'region': '%s'. Unknown region." % region)


def scope_path(call, scope_kind):
    """``projects/P/global`` | ``projects/P/regions/R`` | ``projects/P/zones/Z`` for this call."""
    project = call.project
    if scope_kind == 'global':
        return 'projects/%s/global' % project
    if scope_kind == 'regions':
        check_region(call.params['region'])
        return 'projects/%s/regions/%s' % (project, call.params['region'])
    check_zone(call.params['zone'])
    return 'projects/%s/zones/%s' % (project, call.params['zone'])


def resource_key(call, plural):
    scope_kind = COLLECTIONS[plural][0]
    return '%s/%s/%s' % (scope_path(call, scope_kind), plural, call.params[SINGULAR[plural]])


def new_key(call, plural):
    """The store key of the resource an insert call names in its body."""
    return '%s/%s/%s' % (scope_path(call, COLLECTIONS[plural][0]), plural, call.body.get('name'))


def require(call, plural, key):
    resource = call.store.get(collection(plural), key)
    if resource is None:
        raise not_found(key)
    return resource


def new_resource(call, plural, key, body):
    """Common fields of a freshly inserted resource; refuses bad names and duplicates."""
    check_name(body.get('name'))
    if call.store.get(collection(plural), key) is not None:
        raise already_exists(key)
    resource = dict(body)
    resource.pop('params', None)  # input-only, never persisted
    resource.update({
        'kind': COLLECTIONS[plural][1],
        'id': call.store.new_id(),
        'creationTimestamp': rfc3339(call.now),
        'name': body['name'],
        'selfLink': link(key),
    })
    return resource


def insert(call, plural, key, resource, final_fields=None, quota_metric='CPUS'):
    """Store ``resource`` (unless an operation fault fires) and return the insert operation."""
    effects = []
    if call.fault is None:
        call.store.put(collection(plural), key, resource)
        if final_fields:
            effects.append({'action': 'update', 'collection': collection(plural), 'key': key, 'fields': final_fields})
    scope = key.rsplit('/', 2)[0]
    return start_compute_operation(call, scope, 'insert', key, resource['id'], effects, quota_metric)


def delete(call, plural, key, interim_fields=None, then=()):
    resource = require(call, plural, key)
    if interim_fields:
        resource.update(interim_fields)
    effect = {'action': 'delete', 'collection': collection(plural), 'key': key, 'then': list(then)}
    return start_compute_operation(call, key.rsplit('/', 2)[0], 'delete', key, resource['id'], [effect])


_FILTER_TERM = re.compile(r'\(?\s*([\w.-]+)\s*(!=|=|\beq\b|\bne\b)\s*(?:"([^"]*)"|\'([^\']*)\'|([^\s)]+))\s*\)?')


def matches_filter(resource, expression):
    """Compute's list ``filter``: ``field = value``, ``field != value`` (exact, ``*`` wildcard; a label key may hold
    ``-``: ``labels.my-key = value``) and
    ``field eq regex`` / ``field ne regex`` (full match), several terms joined by AND."""
    return compile_filter(expression)(resource)


def compile_filter(expression):
    """``matches_filter`` for one expression, parsed once: a list call tests every stored resource of the project on
    every page (50,000 VMs: about a hundred pages), so the terms are not parsed again for each resource."""
    terms = []
    for field, operator, *quoted in _FILTER_TERM.findall(expression or ''):
        value = next((text for text in quoted if text), '')
        pattern = re.compile(value if operator in ('eq', 'ne') else re.escape(value).replace('\\*', '.*'))
        terms.append((field.split('.'), pattern, operator in ('eq', '=')))
    if not terms:
        return lambda resource: True

    def matches(resource):
        for parts, pattern, wanted in terms:
            actual = resource
            for part in parts:
                actual = actual.get(part) if isinstance(actual, dict) else None
            actual = '' if actual is None else str(actual).lower() if isinstance(actual, bool) else str(actual)
            if (pattern.fullmatch(actual) is not None) != wanted:
                return False
        return True
    return matches


# The API's page size when maxResults is not given, and its ceiling.  maxResults: "Acceptable values are
# `0` to `500`, inclusive. (Default: `500`)" (compute.v1 discovery document, every list method; "minimum": "0",
# no maximum): 0 asks for the default page, a larger value is capped at 500, not refused.
DEFAULT_PAGE_SIZE = MAX_PAGE_SIZE = 500


def page_bounds(query, total):
    """(start, end, next token) of the page that maxResults / pageToken ask for, as the API pages."""
    try:
        size = int(query.get('maxResults', DEFAULT_PAGE_SIZE))
        start = int(query.get('pageToken') or 0)
    except ValueError:
        raise invalid("Invalid value for field 'maxResults' or 'pageToken'.") from None
    if size < 0:
        # A negative value is not a uint32: the parser refuses it (wording: the sandbox's).
        raise invalid("Invalid value for field 'maxResults': '%s'. Acceptable values are 0 to 500, inclusive." % size)
    size = min(size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    end = start + size
    return start, end, str(end) if end < total else None


def list_response(plural, scope, items, expression=None, query=None):
    matches = compile_filter(expression)
    items = [item for item in items if matches(item)]
    start, end, token = page_bounds(query or {}, len(items))
    kind = COLLECTIONS.get(plural, ('', 'compute#' + plural[:-1]))[1] + 'List'
    response = {'kind': kind, 'id': '%s/%s' % (scope, plural), 'selfLink': link('%s/%s' % (scope, plural))}
    if items[start:end]:
        response['items'] = items[start:end]
    if token:
        response['nextPageToken'] = token
    return response


def aggregated_response(call, plural, scope_kind, items_by_scope):
    """An aggregatedList page: items of every scope in scope order, filtered and paged as a whole."""
    kind = COLLECTIONS.get(plural, ('', 'compute#' + plural[:-1]))[1] + 'AggregatedList'
    scopes = catalog.ZONES if scope_kind == 'zones' else catalog.REGIONS
    matches = compile_filter(call.query.get('filter'))
    flat = [('%s/%s' % (scope_kind, name), item) for name in scopes
            for item in items_by_scope.get('%s/%s' % (scope_kind, name), []) if matches(item)]
    start, end, token = page_bounds(call.query, len(flat))
    page = {}
    for scope, item in flat[start:end]:
        page.setdefault(scope, []).append(item)
    aggregated = {}
    for name in scopes:
        scope = '%s/%s' % (scope_kind, name)
        if page.get(scope):
            aggregated[scope] = {plural: page[scope]}
        else:
            aggregated[scope] = {'warning': {'code': 'NO_RESULTS_ON_PAGE', 'message': "There are no results for scope '%s' on this page." % scope,
                                             'data': [{'key': 'scope', 'value': scope}]}}
    response = {'kind': kind, 'id': 'projects/%s/aggregated/%s' % (call.project, plural), 'items': aggregated,
                'selfLink': link('projects/%s/aggregated/%s' % (call.project, plural))}
    if token:
        response['nextPageToken'] = token
    return response


def register_crud(plural):
    """get / list / aggregatedList handlers for a stored collection (insert and delete are per kind)."""
    scope_kind = COLLECTIONS[plural][0]

    @handles('compute.%s.get' % plural)
    def get(call):
        return require(call, plural, resource_key(call, plural))

    @handles('compute.%s.list' % plural)
    def list_(call):
        scope = scope_path(call, scope_kind)
        return list_response(plural, scope, [value for _key, value in call.store.items(collection(plural), scope + '/' + plural + '/')],
                             call.query.get('filter'), call.query)

    @handles('compute.%s.aggregatedList' % plural)
    def aggregated(call):
        by_scope = {}
        for key, value in call.store.items(collection(plural), 'projects/%s/' % call.project):
            by_scope.setdefault('/'.join(key.split('/')[2:4]), []).append(value)
        return aggregated_response(call, plural, scope_kind, by_scope)

    return get, list_, aggregated


# ----------------------------------------------------------------------------------------- catalog
@handles('compute.projects.get')
def get_project(call):
    project = call.project
    number = project_number(project)
    return {
        'kind': 'compute#project',
        'id': number,
        'name': project,
        'creationTimestamp': '2024-01-01T00:00:00.000-08:00',
        'selfLink': link('projects/%s' % project),
        'defaultServiceAccount': '%s-compute@developer.gserviceaccount.com' % number,
        'commonInstanceMetadata': {'kind': 'compute#metadata', 'fingerprint': 'sandbox0000=', 'items': []},
        'defaultNetworkTier': 'PREMIUM',
        'xpnProjectStatus': 'UNSPECIFIED_XPN_PROJECT_STATUS',
        'quotas': project_quotas(call.sandbox, project, lambda metric: network_usage(call) if metric == 'NETWORKS' else 0),
    }


def zone_resource(project, zone):
    region = catalog.ZONES[zone]
    return {
        'kind': 'compute#zone', 'id': stable_id(zone), 'creationTimestamp': '1969-12-31T16:00:00.000-08:00',
        'name': zone, 'description': zone, 'status': 'UP',
        'region': link('projects/%s/regions/%s' % (project, region)),
        'selfLink': link('projects/%s/zones/%s' % (project, zone)),
        'availableCpuPlatforms': ['Intel Emerald Rapids', 'Intel Sapphire Rapids', 'Intel Cascade Lake', 'Intel Broadwell', 'AMD Genoa'],
        'supportsPzs': True,
    }


@handles('compute.zones.get')
def get_zone(call):
    zone = call.params['zone']
    if zone not in catalog.ZONES:
        raise not_found('projects/%s/zones/%s' % (call.project, zone))
    return zone_resource(call.project, zone)


@handles('compute.zones.list')
def list_zones(call):
    return list_response('zones', 'projects/%s' % call.project, [zone_resource(call.project, zone) for zone in catalog.ZONES])


def region_resource(call, project, region):
    return {
        'kind': 'compute#region', 'id': stable_id(region), 'creationTimestamp': '1969-12-31T16:00:00.000-08:00',
        'name': region, 'description': region, 'status': 'UP',
        'zones': [link('projects/%s/zones/%s-%s' % (project, region, letter)) for letter in catalog.REGIONS[region]],
        'quotas': [item for item in project_quotas(call.sandbox, project, lambda metric: gpu_usage(call, region, metric), region)
                   if item['metric'] != 'NETWORKS'],
        'selfLink': link('projects/%s/regions/%s' % (project, region)),
        'supportsPzs': True,
    }


@handles('compute.regions.get')
def get_region(call):
    region = call.params['region']
    if region not in catalog.REGIONS:
        raise not_found('projects/%s/regions/%s' % (call.project, region))
    return region_resource(call, call.project, region)


@handles('compute.regions.list')
def list_regions(call):
    return list_response('regions', 'projects/%s' % call.project, [region_resource(call, call.project, region) for region in catalog.REGIONS])


def machine_type_resource(project, zone, name):
    public = catalog.machine_type_resource(name)
    if public is None:
        return None
    public.update({
        'kind': 'compute#machineType', 'id': stable_id(name), 'creationTimestamp': '1969-12-31T16:00:00.000-08:00',
        'name': name, 'zone': zone, 'imageSpaceGb': 0,
        'selfLink': link('projects/%s/zones/%s/machineTypes/%s' % (project, zone, name)),
    })
    return public


@handles('compute.machineTypes.get')
def get_machine_type(call):
    zone, name = call.params['zone'], call.params['machineType']
    resource = machine_type_resource(call.project, zone, name) if catalog.machine_type_in_zone(name, zone) and zone in catalog.ZONES else None
    if resource is None:
        raise not_found('projects/%s/zones/%s/machineTypes/%s' % (call.project, zone, name))
    return resource


@handles('compute.machineTypes.list')
def list_machine_types(call):
    zone = call.params['zone']
    check_zone(zone)
    return list_response('machineTypes', 'projects/%s/zones/%s' % (call.project, zone),
                         [machine_type_resource(call.project, zone, name) for name in catalog.MACHINE_TYPES if catalog.machine_type_in_zone(name, zone)])


@handles('compute.machineTypes.aggregatedList')
def aggregated_machine_types(call):
    by_zone = {'zones/' + zone: [machine_type_resource(call.project, zone, name) for name in catalog.MACHINE_TYPES if catalog.machine_type_in_zone(name, zone)]
               for zone in catalog.ZONES}
    return aggregated_response(call, 'machineTypes', 'zones', by_zone)


def disk_type_resource(project, zone, name):
    return {
        'kind': 'compute#diskType', 'id': stable_id(zone + '/' + name), 'creationTimestamp': '1969-12-31T16:00:00.000-08:00',
        'name': name, 'description': name, 'validDiskSize': '10GB-65536GB', 'defaultDiskSizeGb': '100',
        'zone': link('projects/%s/zones/%s' % (project, zone)),
        'selfLink': link('projects/%s/zones/%s/diskTypes/%s' % (project, zone, name)),
    }


# diskTypes.get: the types instances.insert accepts (rules.DISK_TYPES), in every zone of the catalog; an unknown
# zone or type is a 404 as for any missing resource. (Google offers some types only in some zones; the sandbox
# does not model that.)
@handles('compute.diskTypes.get')
def get_disk_type(call):
    zone, name = call.params['zone'], call.params['diskType']
    if zone not in catalog.ZONES or name not in DISK_TYPES:
        raise not_found('projects/%s/zones/%s/diskTypes/%s' % (call.project, zone, name))
    return disk_type_resource(call.project, zone, name)


def image_resource(project, name):
    image = catalog.image_resource(project, name)
    if image is not None:
        image['id'] = stable_id(project + '/' + name)
        image['selfLink'] = link('projects/%s/global/images/%s' % (project, name))
    return image


def resolve_image(value, project):
    """``(image_project, image_name)`` for a sourceImage reference (family or name), or None."""
    key = _URL_PREFIX.sub('', value.strip())
    if key.startswith('global/'):
        key = 'projects/%s/%s' % (project, key)
    elif not key.startswith('projects/'):
        key = 'projects/%s/global/images/%s' % (project, key)
    parts = key.split('/')
    family = None
    if len(parts) == 6 and parts[2:5] == ['global', 'images', 'family']:
        family = parts[5]
    elif len(parts) == 6 and parts[2] == 'zones' and parts[4] == 'imageFamilyViews':
        family = parts[5]  # gcloud sends families as zonal family views: projects/P/zones/-/imageFamilyViews/F
    if family:
        name = catalog.image_from_family(parts[1], family)
        return (parts[1], name) if name else None
    if len(parts) == 5 and parts[2:4] == ['global', 'images'] and catalog.image_resource(parts[1], parts[4]):
        return parts[1], parts[4]
    return None


@handles('compute.images.get')
def get_image(call):
    image = image_resource(call.project, call.params['image'])
    if image is None:
        raise not_found('projects/%s/global/images/%s' % (call.project, call.params['image']))
    return image


@handles('compute.images.getFromFamily')
def get_image_from_family(call):
    name = catalog.image_from_family(call.project, call.params['family'])
    if name is None:
        raise not_found('projects/%s/global/images/family/%s' % (call.project, call.params['family']))
    return image_resource(call.project, name)


@handles('compute.images.list')
def list_images(call):
    return list_response('images', 'projects/%s/global' % call.project,
                         [image_resource(call.project, name) for name in sorted(catalog.IMAGES.get(call.project, {}))])


@handles('compute.imageFamilyViews.get')
def get_image_family_view(call):
    check_zone(call.params['zone'])
    return {'image': get_image_from_family(call)}


# -------------------------------------------------------------------------------------- operations
def _operation_scope(call):
    """projects/P/zones/Z, projects/P/regions/R or projects/P/global: where the call's operations live."""
    for scope_kind in ('zones', 'regions'):
        singular = scope_kind[:-1]
        if singular in call.params:
            return 'projects/%s/%s/%s' % (call.project, scope_kind, call.params[singular])
    return 'projects/%s/global' % call.project


def _operation_key(call):
    return '%s/operations/%s' % (_operation_scope(call), call.params['operation'])


def find_operation(call):
    key = _operation_key(call)
    operation = call.store.get('compute.operations', key)
    if operation is None:
        raise not_found(key)
    return operation


def operation_wait_deadline(call, wait_timeout):
    """When ``operations.wait`` should stop blocking: the operation's end, capped like the real API's ~2 min."""
    operation = find_operation(call)
    if operation['status'] == 'DONE':
        return None
    return min(operation['_done_at'], time.time() + wait_timeout)


@handles('compute.zoneOperations.get', 'compute.regionOperations.get', 'compute.globalOperations.get',
         'compute.zoneOperations.wait', 'compute.regionOperations.wait', 'compute.globalOperations.wait')
def get_operation(call):
    return find_operation(call)


@handles('compute.zoneOperations.delete', 'compute.regionOperations.delete', 'compute.globalOperations.delete')
def delete_operation(call):
    find_operation(call)
    call.store.delete('compute.operations', _operation_key(call))
    return {}


@handles('compute.zoneOperations.list', 'compute.regionOperations.list', 'compute.globalOperations.list')
def list_operations(call):
    scope = _operation_scope(call)
    items = [value for _key, value in call.store.items('compute.operations', scope + '/operations/')]
    return list_response('operations', scope, items, call.query.get('filter'))


@handles('compute.globalOperations.aggregatedList')
def aggregated_operations(call):
    by_scope = {}
    for key, value in call.store.items('compute.operations', 'projects/%s/' % call.project):
        parts = key.split('/')
        if parts[2] != 'global':
            by_scope.setdefault('/'.join(parts[2:4]), []).append(value)
    return aggregated_response(call, 'operations', 'zones', by_scope)


# ---------------------------------------------------------------------------------- network profiles
# RDMA network profiles (https://cloud.google.com/vpc/docs/rdma-network-profiles): ``ZONE-vpc-roce`` exists in
# the zones of the machine types it serves ("RDMA network profiles are available in the same zones as their
# supported machine types" -- A3 Ultra and A4 here).  Features as the NetworkProfile schema of the compute.v1
# discovery document names them: MRDMA interfaces only, several NICs of one VM in the same network allowed.
ROCE_MACHINE_TYPES = ('a3-ultragpu-8g', 'a4-highgpu-8g')


def roce_zones():
    return sorted({zone for name in ROCE_MACHINE_TYPES for zone in catalog.MACHINE_TYPE_ZONES.get(name, ())})


def network_profile_resource(project, name):
    zone = name[:-len('-vpc-roce')] if name.endswith('-vpc-roce') else None
    if zone not in roce_zones():
        return None
    return {
        'kind': 'compute#networkProfile', 'id': stable_id(name), 'creationTimestamp': '1969-12-31T16:00:00.000-08:00',
        'name': name, 'description': 'RDMA over converged ethernet v2 (RoCE v2) profile for %s' % zone,
        'profileType': {'networkType': 'RDMA', 'rdmaSubtype': 'ROCE'},
        'location': {'name': zone, 'scope': 'ZONE'},
        'features': {'interfaceTypes': ['MRDMA'], 'allowMultiNicInSameNetwork': 'MULTI_NIC_IN_SAME_NETWORK_ALLOWED',
                     'allowAutoModeSubnet': 'AUTO_MODE_SUBNET_BLOCKED', 'allowExternalIpAccess': 'EXTERNAL_IP_ACCESS_BLOCKED'},
        'selfLink': link('projects/%s/global/networkProfiles/%s' % (project, name)),
    }


@handles('compute.networkProfiles.get')
def get_network_profile(call):
    profile = network_profile_resource(call.project, call.params['networkProfile'])
    if profile is None:
        raise not_found('projects/%s/global/networkProfiles/%s' % (call.project, call.params['networkProfile']))
    return profile


@handles('compute.networkProfiles.list')
def list_network_profiles(call):
    return list_response('networkProfiles', 'projects/%s/global' % call.project,
                         [network_profile_resource(call.project, zone + '-vpc-roce') for zone in roce_zones()],
                         call.query.get('filter'), call.query)
