# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one error family of the Google Cloud APIs: what was being done, and why it failed (status, reason, operation
error codes). Standard library only."""

from __future__ import annotations

import re

# The codes that mean "no room now" (a stockout or a quota), which another zone or a later rerun may cure: Compute
# operations carry them as error codes, Container operations in their message ("ZONE_RESOURCE_POOL_EXHAUSTED: ...").
# In this order: the first found is the one named.
CAPACITY_CODES = ('ZONE_RESOURCE_POOL_EXHAUSTED', 'ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS', 'GCE_STOCKOUT', 'QUOTA_EXCEEDED',
                  'RESOURCE_EXHAUSTED')


class GcpError(Exception):
    """A failed call or operation, with what was being done and why it failed.

    ``status`` is the HTTP status (None for transport failures and timeouts), ``reason`` the API's
    reason (``notFound``, ``alreadyExists``, ...), ``codes`` the operation error codes
    (``ZONE_RESOURCE_POOL_EXHAUSTED``, ``QUOTA_EXCEEDED``, ...). ``str()`` is one line.
    """

    def __init__(self, action, message, status=None, reason=None, codes=(), operation=None):
        self.action = action
        self.message = ' '.join(str(message).split())
        self.status = status
        self.reason = reason
        self.codes = tuple(codes)
        self.operation = operation
        super().__init__(str(self))

    def __str__(self):
        cause = []
        if self.status is not None:
            cause.append('HTTP %s' % self.status)
        if self.reason:
            cause.append(self.reason)
        cause.extend(code for code in self.codes if code != self.reason)
        prefix = 'Failed to %s' % self.action if self.action else 'Request failed'
        return '%s (%s): %s' % (prefix, ', '.join(cause), self.message) if cause else '%s: %s' % (prefix, self.message)

    @property
    def not_found(self):
        return self.status == 404

    @property
    def capacity_code(self):
        """The capacity or quota code (CAPACITY_CODES) the error names in its codes or its message, QUOTA_EXCEEDED for a
        403 about quota, or ''."""
        text = '%s %s' % (' '.join(self.codes), self.message)
        found = next((code for code in CAPACITY_CODES if code in text), '')
        if not found and self.status == 403 and 'quota' in self.message.lower():
            return 'QUOTA_EXCEEDED'
        return found

    @property
    def capacity(self):
        """True for the errors that mean 'no room now', which a fallback zone or a later rerun may solve."""
        return bool(self.capacity_code) or self.reason == 'insufficientCapacity'

    def to_dict(self):
        return {'action': self.action, 'message': self.message, 'status': self.status, 'reason': self.reason,
                'codes': list(self.codes)}


class GcpShortfall(GcpError):
    """A VM a bulkInsert with minCount below count did not create, with no error of its own: Compute Engine makes fewer
    than asked when the zone lacks capacity or quota for the rest, so another zone or a later run may make it."""

    @property
    def capacity(self):
        return True


class GcpTimeout(GcpError):
    """An operation or the retry deadline ran out before the work was done."""


class MissingLibrary(GcpError):
    """google-auth or requests is not installed on the controller."""


def error_from_response(action, response):
    """GcpError from an HTTP error response in Google's error shape (or whatever came back)."""
    reason = None
    try:
        error = response.json().get('error', {})
    except ValueError:
        error = {}
    if isinstance(error, dict):
        message = error.get('message') or response.reason or ''
        details = error.get('errors') or []
        if details and isinstance(details[0], dict):
            reason = details[0].get('reason')
        reason = reason or error.get('status')
    else:
        message = str(error)
    return GcpError(action, message or 'no error message', status=response.status_code, reason=reason)


def error_from_operation(action, operation):
    """GcpError from a DONE operation that carries an error (Compute or Container shape)."""
    compute_errors = (operation.get('error') or {}).get('errors') or []
    if compute_errors:
        codes = [item.get('code', '') for item in compute_errors]
        message = '; '.join(item.get('message', item.get('code', '')) for item in compute_errors)
        return GcpError(action, message, status=operation.get('httpErrorStatusCode'), reason=codes[0], codes=codes, operation=operation)
    status = operation.get('error') or {}
    message = status.get('message') or operation.get('statusMessage') or 'operation failed'
    code = status.get('code')
    return GcpError(action, message, reason=str(code) if code is not None else None, operation=operation)


_BUSY = re.compile(r'\bOperation (operation-[\w.-]+) is currently\b', re.I)


def busy_operation(error):
    """The name of the operation that blocks a Container call refused with "currently ...", or None."""
    if error.status != 400:
        return None
    match = _BUSY.search(error.message)
    return match.group(1) if match else None
