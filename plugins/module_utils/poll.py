# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one way to wait: read, judge, and sleep the next delay without passing a deadline.

Every wait of the collection goes through ``until``: a Container operation, VMs reaching a status, a node pool's Nodes,
a cluster leaving a transitional status, an object deleted, the Kubernetes readiness of ``k8s_wait``. What differs
between them is the read, the judgement and the delays (a fixed interval, or ``ProportionalPoll``). Standard library
only: modules that run on a target host may import it.
"""

from __future__ import annotations

import itertools
import time


class ProportionalPoll:
    """Delays for polling an operation that has no wait method (Container API v1): each is ``fraction`` of the time
    already waited, within [initial_delay, max_delay]. An operation is then seen DONE at most about that fraction
    after it finished, whether it takes 2 seconds or 10 minutes: 21 reads to reach the 20 s cap (at 89 s), then one
    each 20 s (a node pool's 3 minutes: 27 reads, seen within 20 s of DONE). The exponential backoff from 2 s it
    replaces read a 3 minute operation about 12 times, but saw a 2 s operation 1-4 s late."""

    def __init__(self, initial_delay=0.5, fraction=0.25, max_delay=20.0):
        self.initial_delay, self.fraction, self.max_delay = initial_delay, fraction, max_delay

    def delays(self):
        waited = 0.0
        while True:
            delay = min(self.max_delay, max(self.initial_delay, waited * self.fraction))
            waited += delay
            yield delay


def every(seconds):
    """A fixed interval between reads, as ``delays`` for ``until``."""
    return itertools.repeat(float(seconds))


_UNREAD = object()


def until(read, finished, timeout, delays, sleep=time.sleep, clock=time.monotonic, value=_UNREAD):
    """Call ``read()`` until ``finished(value)`` holds or ``timeout`` seconds have passed: (the last value read, True when
    it finished). Between reads it sleeps the next of ``delays`` (an iterator of seconds), never past the deadline; the
    last read is at the deadline, so a wait that gives up judges a fresh value. ``value``: one already read (an
    operation a call returned), judged before the first sleep."""
    deadline = clock() + timeout
    if value is _UNREAD:
        value = read()
    while not finished(value):
        remaining = deadline - clock()
        if remaining <= 0:
            return value, False
        sleep(min(next(delays), remaining))
        value = read()
    return value, True
