"""spin.real_time_or_warn: asks only for a priority, and logs a grant as info and a refusal as one warning."""
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
    """Replace the kernel call: return the list of (tid, priority) asked; ``answer`` is raised if given."""
    calls = []

    def setscheduler(tid, policy, param):
        calls.append((tid, param.sched_priority))
        if answer is not None:
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
    refused = spin.real_time_or_warn(log, 29, 'ik_solver_inputs', 'joint states and targets')
    assert 'Operation not permitted' in refused
    [(level, text)] = log.lines
    assert level == 'warning' and text.startswith('ik_solver_inputs keeps normal scheduling: SCHED_FIFO priority 29')
    assert 'Operation not permitted' in text and 'joint states and targets wait for the scheduler' in text
