# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Awaiting long-running operations. Compute has a wait method that blocks for up to two minutes; Container has none
and is polled (poll.py). Both end the same way: the finished operation, its error as a GcpError, or a GcpTimeout that
says the work goes on in Google Cloud. While an operation runs, a WaitReport (poll.py) says where it stands: its
status, its detail and the progress the API gives (Container's stages and metrics)."""

from __future__ import annotations

import time

from ansible_collections.aiinfra.gpudirect.plugins.module_utils.gcp.errors import GcpTimeout, error_from_operation
from ansible_collections.aiinfra.gpudirect.plugins.module_utils.poll import ProportionalPoll, WaitReport, until


def operation_state(operation, with_type=True):
    """What an operation shows of its progress, as one short text: 'CREATE_CLUSTER RUNNING (detail) [stage: status,
    metric=value]' (without the type unless ``with_type``). Container's ``progress`` (OperationProgress) has stages
    and metrics; Compute's ``progress`` is a percentage."""
    text = ' '.join(str(part) for part in (operation.get('operationType') if with_type else None, operation.get('status') or 'PENDING') if part)
    detail = operation.get('detail') or operation.get('statusMessage')
    if detail:
        text += ' (%s)' % detail
    progress = operation.get('progress')
    if isinstance(progress, dict):
        parts = ['%s: %s' % (stage.get('name'), stage.get('status')) for stage in progress.get('stages') or [] if stage.get('status')]
        parts += ['%s=%s' % (metric.get('name'), next((metric[key] for key in ('intValue', 'doubleValue', 'stringValue') if key in metric), '?'))
                  for metric in progress.get('metrics') or []]
        if parts:
            text += ' [%s]' % ', '.join(parts)
    elif progress:
        text += ' [%s%%]' % progress
    return text


def operation_report(operation, action):
    """The WaitReport of awaiting ``operation`` for ``action``."""
    return WaitReport('%s, operation %s' % (action, operation.get('name', '?')), describe=operation_state)


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
    until timeout seconds have passed; no wait call is allowed to outlast the time that is left. While a wait call
    blocks, the WaitReport says the status seen last when a line is due (WaitReport.while_blocked).
    """
    deadline = time.monotonic() + timeout
    report = operation_report(operation, action)
    while operation.get('status') != 'DONE':
        report.waiting(operation)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            report.reads += 1
            with report.while_blocked():
                operation = transport.request('POST', url, action, deadline=remaining)
        except GcpTimeout:
            break   # the time is up; outcome says so, naming the operation
        if progress:
            progress(operation)
    report.end(operation, operation.get('status') == 'DONE')
    return outcome(action, operation, operation.get('status') == 'DONE', timeout)


def await_polled(transport, url, operation, action, timeout, progress=None, poll=None):
    """GET the operation at ``url`` (``poll``: ProportionalPoll by default) until it is DONE (Container)."""
    def read():
        current = transport.request('GET', url, action)
        if progress:
            progress(current)
        return current
    operation, done = until(read, lambda current: current.get('status') == 'DONE', timeout, (poll or ProportionalPoll()).delays(),
                            sleep=transport.sleep, value=operation, report=operation_report(operation, action))
    return outcome(action, operation, done, timeout)
