"""poll.until with a WaitReport, on a clock that only the waits' sleeps advance: the lines a person sees, and when."""

import pytest

from ansible_collections.aiinfra.gpudirect.plugins.module_utils import poll


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        assert seconds > 0
        self.now += seconds


def waited(states, delays, interval=20.0, timeout=1000.0):
    """until() over ``states`` (one a read; 'DONE' ends the wait): (lines with the time each was said, finished)."""
    clock = Clock()
    said = []
    reads = iter(states)
    report = poll.WaitReport('create cluster c', emit=lambda line: said.append((clock.now, line)), interval=interval, clock=clock)
    _value, finished = poll.until(lambda: next(reads), lambda state: state == 'DONE', timeout, iter(delays), sleep=clock.sleep,
                                  clock=clock, report=report)
    assert [line for _at, line in said] == report.lines
    return said, finished


def test_a_line_at_first_then_one_each_interval_while_sleeping_between_far_apart_reads_then_a_summary():
    said, finished = waited(['RUNNING', 'RUNNING', 'DONE'], [50.0, 50.0])
    assert finished
    assert said == [(0.0, 'create cluster c: RUNNING (0 s)'),
                    (20.0, 'create cluster c: still RUNNING (20 s)'), (40.0, 'create cluster c: still RUNNING (40 s)'),
                    (60.0, 'create cluster c: still RUNNING (60 s)'), (80.0, 'create cluster c: still RUNNING (80 s)'),
                    (100.0, 'create cluster c: DONE after 100 s, 3 reads')]


def test_reads_more_often_than_the_interval_say_only_one_line_per_interval_with_the_state_seen_last():
    said, _finished = waited(['PENDING'] + ['RUNNING'] * 9 + ['DONE'], [5.0] * 10, interval=20.0)
    assert said == [(0.0, 'create cluster c: PENDING (0 s)'), (20.0, 'create cluster c: RUNNING (20 s)'),
                    (40.0, 'create cluster c: RUNNING (40 s)'), (50.0, 'create cluster c: DONE after 50 s, 11 reads')]


def test_a_wait_over_at_its_first_read_says_nothing():
    said, finished = waited(['DONE'], [])
    assert finished and said == []


def test_a_wait_that_gives_up_says_so_with_the_state_it_saw_last():
    said, finished = waited(['RUNNING'] * 5, [10.0] * 5, timeout=25.0)
    assert not finished
    assert said[-1] == (25.0, 'create cluster c: still RUNNING after 25 s, 4 reads; gave up')


def test_the_interval_comes_from_the_environment_and_a_wrong_one_is_named(monkeypatch):
    monkeypatch.setenv(poll.PROGRESS_INTERVAL_ENV, '2.5')
    assert poll.WaitReport('x').interval == 2.5
    monkeypatch.setenv(poll.PROGRESS_INTERVAL_ENV, 'often')
    with pytest.raises(ValueError, match='ANSIBLE_GPUDIRECT_PROGRESS_INTERVAL'):
        poll.WaitReport('x')


def test_live_output_is_where_a_report_made_without_emit_prints_and_only_while_it_lasts():
    lines = []
    with poll.live_output(lines.append):
        report = poll.WaitReport('x', interval=1.0)
    report.waiting('RUNNING')
    assert lines == ['x: RUNNING (0 s)']
    assert poll.WaitReport('y', interval=1.0).emit is None
