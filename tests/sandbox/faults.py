"""Fault injection: make chosen API methods fail the way Google's front end or backend can.

A fault rule names a discovery method id (``compute.instances.insert``; ``*`` or a glob such as
``compute.*.insert`` for many) and a kind:

- ``http_403``, ``http_429``, ``http_500``, ``http_503``: the request is refused with that status (403 as
  a caller lacking the method's permission on the project; 429 carries ``Retry-After``, 0 seconds
  unless ``retry_after`` says otherwise);
- ``reset``: the TCP connection is dropped without any response;
- ``ZONE_RESOURCE_POOL_EXHAUSTED``, ``QUOTA_EXCEEDED``: a mutating call is accepted, and its
  operation ends DONE with ``error.errors[0].code`` set to that code; nothing is created;
- ``unreachable`` (needs ``zone``): that zone is down.  An ``aggregatedList`` leaves out the zone's
  items and, with ``returnPartialSuccess=true``, names it in ``unreachables`` with an ``UNREACHABLE``
  warning as the real API does (without it the whole call is refused with 503); a call on the zone
  itself is refused with 503.

A rule may be narrowed to one ``project`` (``project=P``), e.g. a project the caller may not read.

It fires either for the next ``count`` matching requests or with probability ``rate`` drawn from a
seeded RNG (deterministic for a given request order).  Faults are decided before the request has any
effect, so a retry can succeed.  Command-line syntax: ``METHOD:KIND[:rate=R|count=N][:retry_after=S]``,
e.g. ``compute.instances.insert:http_503:rate=0.3``, ``*:reset:count=2``,
``compute.instances.aggregatedList:http_403:rate=1:project=other`` or
``compute.instances.*:unreachable:rate=1:zone=us-east1-b``.
"""

import fnmatch
import random
import threading

HTTP_FAULTS = {'http_403': 403, 'http_429': 429, 'http_500': 500, 'http_503': 503}
OPERATION_FAULTS = ('ZONE_RESOURCE_POOL_EXHAUSTED', 'QUOTA_EXCEEDED')
UNREACHABLE = 'unreachable'
FAULT_KINDS = tuple(HTTP_FAULTS) + ('reset',) + OPERATION_FAULTS + (UNREACHABLE,)


class FaultRule:
    def __init__(self, method, kind, rate=None, count=None, retry_after=0, project=None, zone=None):
        if kind not in FAULT_KINDS:
            raise ValueError('unknown fault kind %r; expected one of %s' % (kind, ', '.join(FAULT_KINDS)))
        if (rate is None) == (count is None):
            raise ValueError('a fault needs exactly one of rate or count')
        if rate is not None and not 0.0 <= float(rate) <= 1.0:
            raise ValueError('fault rate must be between 0 and 1')
        self.method = method
        self.kind = kind
        self.rate = None if rate is None else float(rate)
        self.remaining = None if count is None else int(count)
        self.retry_after = retry_after
        if (kind == UNREACHABLE) != bool(zone):
            raise ValueError('zone= goes with the unreachable fault, and only with it')
        self.project = project
        self.zone = zone

    def applies_to(self, method_id, returns_operation, params=None):
        params = params or {}
        if self.kind in OPERATION_FAULTS and not returns_operation:
            return False
        if self.project and params.get('project') != self.project:
            return False
        if self.kind == UNREACHABLE and not (method_id.endswith('.aggregatedList') or params.get('zone') == self.zone):
            return False
        return self.method == '*' or fnmatch.fnmatchcase(method_id, self.method)

    def to_json(self):
        rule = {'method': self.method, 'kind': self.kind, 'rate': self.rate, 'count': self.remaining, 'retry_after': self.retry_after}
        rule.update({name: value for name, value in (('project', self.project), ('zone', self.zone)) if value})
        return rule


def unreachable_zone(rule, method_id, query, payload):
    """Apply an ``unreachable`` rule: the answer of an aggregatedList without the zone (see the module
    docstring), or an error (status, reason, message) for a call that cannot be answered at all."""
    scope = 'zones/%s' % rule.zone
    message = "The zone '%s' is currently unavailable; try again later." % rule.zone
    if not method_id.endswith('.aggregatedList'):
        return 503, 'backendError', message
    if str(query.get('returnPartialSuccess', '')).lower() != 'true':
        return 503, 'backendError', message + ' (set returnPartialSuccess=true to get the other scopes)'
    items = payload.get('items') or {}
    if scope in items:
        items[scope] = {'warning': {'code': 'UNREACHABLE', 'message': "Scope '%s' is unreachable." % scope,
                                    'data': [{'key': 'scope', 'value': scope}]}}
    payload.setdefault('unreachables', []).append(scope)
    return payload


def parse_fault_spec(spec):
    """``METHOD:KIND[:rate=R|count=N][:retry_after=S]`` -> FaultRule (count=1 when neither is given)."""
    parts = spec.split(':')
    if len(parts) < 2:
        raise ValueError('fault spec %r: expected METHOD:KIND[:rate=R|count=N]' % spec)
    options = {}
    for option in parts[2:]:
        name, _equals, value = option.partition('=')
        if name not in ('rate', 'count', 'retry_after', 'project', 'zone') or not value:
            raise ValueError('fault spec %r: unknown option %r' % (spec, option))
        options[name] = value if name in ('project', 'zone') else float(value) if name != 'count' else int(value)
    if 'rate' not in options and 'count' not in options:
        options['count'] = 1
    return FaultRule(parts[0], parts[1], **options)


class FaultInjector:
    def __init__(self, seed=0):
        self.lock = threading.Lock()
        self.seed = seed
        self.rules = []
        self.random = random.Random(seed)

    def add(self, rule):
        with self.lock:
            self.rules.append(rule)

    def clear(self):
        with self.lock:
            self.rules = []
            self.random = random.Random(self.seed)

    def draw(self, method_id, returns_operation, params=None):
        """The first rule that fires for this request (consuming a count), or None."""
        with self.lock:
            for rule in self.rules:
                if not rule.applies_to(method_id, returns_operation, params):
                    continue
                if rule.remaining is not None:
                    if rule.remaining > 0:
                        rule.remaining -= 1
                        return rule
                elif self.random.random() < rule.rate:
                    return rule
            return None
