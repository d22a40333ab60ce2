# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Awaiting long-running operations. Compute has a wait method that blocks for up to two minutes; Container has none
and is polled (poll.py). Both end the same way: the finished operation, its error as a GcpError, or a GcpTimeout that
says the work goes on in Google Cloud."""

from __future__ import annotations

import time

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpTimeout, error_from_operation
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import ProportionalPoll, until


def outcome(action, operation, done, timeout):
    """The operation once ``done``; else GcpTimeout. A DONE operation that carries an error raises it."""
    if not done:
        raise GcpTimeout(action, 'operation %s still %s after %ss; it goes on in Google Cloud, rerun to pick it up'
                         % (operation.get('name'), operation.get('status'), timeout), operation=operation)
    if operation.get('error'):
        raise error_from_operation(action, operation)
    return operation


def await_with_wait_method(transport, url, operation, action, timeout, progress=None):
    """Block until the operation is DONE by POSTing its ``wait`` URL (Compute).

    Each wait call returns when the operation is DONE or after at most about two minutes, so this loops until DONE or
    until timeout seconds have passed; no wait call is allowed to outlast the time that is left.
    """
    deadline = time.monotonic() + timeout
    while operation.get('status') != 'DONE':
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            operation = transport.request('POST', url, action, deadline=remaining)
        except GcpTimeout:
            break   # the time is up; outcome says so, naming the operation
        if progress:
            progress(operation)
    return outcome(action, operation, operation.get('status') == 'DONE', timeout)


def await_polled(transport, url, operation, action, timeout, progress=None, poll=None):
    """GET the operation at ``url`` (``poll``: ProportionalPoll by default) until it is DONE (Container)."""
    def read():
        current = transport.request('GET', url, action)
        if progress:
            progress(current)
        return current
    operation, done = until(read, lambda current: current.get('status') == 'DONE', timeout, (poll or ProportionalPoll()).delays(),
                            sleep=transport.sleep, value=operation)
    return outcome(action, operation, done, timeout)
