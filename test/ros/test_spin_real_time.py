"""SCHED_FIFO requests: one kernel call each; ``real_time_or_warn`` logs a grant as info, a refusal as a warning.

The loop thread, an IK worker and inputs thread and the simulator's threads all ask the kernel the same way.
"""
import os
import threading

from ik_solver.ros import spin


class Log:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(('info', text))

    def warning(self, text):
        self.lines.append(('warning', text))


def _asked(monkeypatch, answer=None):
    """Replace the kernel call; return the list of (tid, priority) asked.

    ``answer``: an exception every call raises, or a list of those the first calls raise, one each.
    """
    calls = []

    def setscheduler(tid, policy, param):
        assert policy == os.SCHED_FIFO | os.SCHED_RESET_ON_FORK   # a child process starts with normal scheduling
        calls.append((tid, param.sched_priority))
        if isinstance(answer, list):
            if answer:
                raise answer.pop(0)
        elif answer is not None:
            raise answer
    monkeypatch.setattr(os, 'sched_setscheduler', setscheduler)
    return calls


def test_priority_zero_asks_nothing_and_logs_nothing(monkeypatch):
    calls, log = _asked(monkeypatch), Log()
    assert spin.real_time_or_warn(log, 0, 'ik_solver_worker', 'its commands') is None
    assert calls == [] and log.lines == []


def test_a_grant_is_one_info_line_naming_the_thread(monkeypatch):
    calls, log = _asked(monkeypatch), Log()
    assert spin.real_time_or_warn(log, 30, 'ik_solver_worker', 'its commands') is None
    assert calls == [(threading.get_native_id(), 30)]
    assert log.lines == [('info', 'ik_solver_worker runs under SCHED_FIFO, priority 30')]


def test_a_refusal_is_one_warning_with_the_reason_and_what_waits(monkeypatch):
    _asked(monkeypatch, PermissionError(1, 'Operation not permitted'))
    log = Log()
    refused = spin.real_time_or_warn(log, 29, 'ik_solver_inputs', 'its messages and requests')
    assert 'Operation not permitted' in refused
    [(level, text)] = log.lines
    assert level == 'warning' and text.startswith('ik_solver_inputs keeps normal scheduling: SCHED_FIFO priority 29')
    assert 'Operation not permitted' in text and 'its messages and requests wait for the scheduler' in text


def test_a_thread_that_ended_meanwhile_is_no_refusal_and_the_others_are_still_asked(monkeypatch):
    calls = _asked(monkeypatch, [ProcessLookupError(3, 'No such process')])
    assert spin.real_time_threads(20) is None
    assert sorted(tid for tid, _ in calls) == sorted(int(t) for t in os.listdir('/proc/self/task'))
