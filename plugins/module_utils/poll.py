# Copyright: (c) 2026, aiinfra.gpudirect contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one way to wait: read, judge, and sleep the next delay without passing a deadline.

Every wait of the collection goes through ``until``: a Container operation, VMs reaching a status, a node pool's Nodes,
a cluster leaving a transitional status, an object deleted, the Kubernetes readiness of ``k8s_wait``. What differs
between them is the read, the judgement and the delays (a fixed interval, or ``ProportionalPoll``). A wait given a
``WaitReport`` says where it stands while it waits (see there). Standard library only: modules that run on a target
host may import it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time

# Seconds between two progress lines of a wait (tests shorten it); the issue asked for a line at least every 30 s.
PROGRESS_INTERVAL_ENV = 'ANSIBLE_GPUDIRECT_PROGRESS_INTERVAL'
PROGRESS_INTERVAL = 20.0


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


def progress_interval():
    """The seconds between two progress lines: ANSIBLE_GPUDIRECT_PROGRESS_INTERVAL, else PROGRESS_INTERVAL."""
    given = os.environ.get(PROGRESS_INTERVAL_ENV)
    try:
        interval = float(given) if given else PROGRESS_INTERVAL
    except ValueError:
        raise ValueError('%s=%r: give a number of seconds above 0 (default %s)' % (PROGRESS_INTERVAL_ENV, given, PROGRESS_INTERVAL)) from None
    if interval <= 0:
        raise ValueError('%s=%r: give a number of seconds above 0 (default %s)' % (PROGRESS_INTERVAL_ENV, given, PROGRESS_INTERVAL))
    return interval


_LIVE_OUTPUT = []


@contextlib.contextmanager
def live_output(emit):
    """While the block runs, a WaitReport made without ``emit`` prints its lines with ``emit`` (the in-worker run of a
    module passes ansible's Display, which a worker process forwards to ansible-playbook's output). A module run as its
    own process has no such channel: its lines are only what its result returns."""
    _LIVE_OUTPUT.append(emit)
    try:
        yield
    finally:
        _LIVE_OUTPUT.pop()


class WaitReport:
    """What a long wait says while it waits, for a person watching: a line when the wait first finds it has to wait,
    then one every ``interval`` seconds with the state seen last (also while sleeping between two far-apart reads),
    and a summary line at the end. A wait that is over at its first read says nothing. ``describe(value)``: the state
    a read value shows, as a short text (an operation's status, "3 of 4 Nodes"). ``emit``: where a line goes (by
    default the live_output of the moment; none: the lines are only kept in ``lines``)."""

    def __init__(self, what, describe=str, emit=None, interval=None, clock=time.monotonic):
        self.what, self.describe, self.clock = what, describe, clock
        self.emit = emit if emit is not None else (_LIVE_OUTPUT[-1] if _LIVE_OUTPUT else None)
        self.interval = interval if interval is not None else progress_interval()
        self.started = clock()
        self.reads = 0
        self.state = None
        self.said_at = None
        self.lines = []

    def waiting(self, value):
        """A read value that is not yet the end: said at once the first time, then when a line is due."""
        self.state = self.describe(value)
        if self.said_at is None or self.due_in() <= 0:
            self._say('%s (%.0f s)' % (self.state, self.clock() - self.started))

    def due_in(self):
        """Seconds until the next line is due (the interval, before the first line)."""
        return self.interval if self.said_at is None else self.said_at + self.interval - self.clock()

    def tick(self):
        """Between reads: the state seen last, when a line is due."""
        if self.said_at is not None and self.due_in() <= 0:
            self._say('still %s (%.0f s)' % (self.state, self.clock() - self.started))

    @contextlib.contextmanager
    def while_blocked(self):
        """Around one read that blocks (Compute's operations.wait holds its request up to two minutes): the state seen
        last is said whenever a line is due until the read returns, from a thread that does nothing else. Before the
        wait has said anything it says nothing (a wait over at its first read stays silent)."""
        if self.said_at is None:
            yield
            return
        stop = threading.Event()

        def heartbeat():
            while not stop.wait(max(self.due_in(), 0.01)):
                self.tick()
        ticker = threading.Thread(target=heartbeat, name='wait-report', daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()

    def end(self, value, finished):
        """The summary, when the wait said anything: the state at the end, the time and the reads."""
        if self.said_at is None:
            return
        took = '%.0f s, %d read%s' % (self.clock() - self.started, self.reads, '' if self.reads == 1 else 's')
        self._say('%s after %s' % (self.describe(value), took) if finished else 'still %s after %s; gave up' % (self.describe(value), took))

    def _say(self, text):
        line = '%s: %s' % (self.what, text)
        self.lines.append(line)
        self.said_at = self.clock()
        if self.emit is not None:
            self.emit(line)


_UNREAD = object()


def until(read, finished, timeout, delays, sleep=time.sleep, clock=time.monotonic, value=_UNREAD, report=None):
    """Call ``read()`` until ``finished(value)`` holds or ``timeout`` seconds have passed: (the last value read, True when
    it finished). Between reads it sleeps the next of ``delays`` (an iterator of seconds), never past the deadline; the
    last read is at the deadline, so a wait that gives up judges a fresh value. ``value``: one already read (an
    operation a call returned), judged before the first sleep. ``report``: a WaitReport told of each read and woken
    while sleeping when a line is due, so a person sees where the wait stands however far apart the reads are."""
    deadline = clock() + timeout
    if value is _UNREAD:
        value = _counted(read, report)
    done = True
    while not finished(value):
        if report is not None:
            report.waiting(value)
        remaining = deadline - clock()
        if remaining <= 0:
            done = False
            break
        _sleep(min(next(delays), remaining), sleep, report)
        value = _counted(read, report)
    if report is not None:
        report.end(value, done)
    return value, done


def _counted(read, report):
    if report is not None:
        report.reads += 1
    return read()


def _sleep(seconds, sleep, report):
    """sleep(seconds), in steps that end when the report's next line is due."""
    while seconds > 0:
        step = seconds if report is None else min(seconds, max(report.due_in(), 0.01))
        sleep(step)
        seconds -= step
        if report is not None and seconds > 0:   # at the end of the sleep a read follows, which says the state if due
            report.tick()
