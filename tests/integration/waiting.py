"""Polling for the integration tests: what a stand-in's controllers or the sandbox do a moment after a request."""

import time


def wait_until(predicate, what, timeout=60, interval=0.2):
    """Call ``predicate`` until it returns a true value, and return that value; after ``timeout`` seconds fail,
    naming ``what`` was awaited and the last value seen (a test's message then says which state never came)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError('timed out after %gs waiting for %s (last value: %.300r)' % (timeout, what, value))
        time.sleep(interval)
