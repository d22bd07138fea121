"""Streamed inputs on the Worker: newest wins (Mailbox, on an injected clock), wake-ups coalesced, SCHED_FIFO."""
import os
import threading
import time
from types import SimpleNamespace

from ik_solver.ros.worker import Mailbox, Worker
import pytest


class Clock:
    """A clock the test moves by hand [s]."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class FakeNode:
    """What a Worker uses of its node: the executor to wake and the logger."""

    def __init__(self):
        self.warnings = []
        self.executor = SimpleNamespace(wake=lambda: None)

    def get_logger(self):
        return SimpleNamespace(error=print, warning=self.warnings.append)


def _wait(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.001)
    return condition()


def test_the_newest_input_wins_and_the_replaced_ones_are_counted():
    clock = Clock()
    box = Mailbox(clock)
    assert box.take() is None
    for k in range(5):
        assert box.put(f'target {k}')
        clock.now += 0.005
    clock.now += 0.002
    assert box.take() == ('target 4', pytest.approx(0.007), 4)  # aged from its own arrival, four replaced
    assert box.take() is None
    box.put('late', arrival=clock.now - 0.03)  # arrival as the middleware saw it
    assert box.take() == ('late', pytest.approx(0.03), 0)


def test_an_input_put_back_never_replaces_a_newer_one_and_keeps_its_arrival():
    clock = Clock()
    box = Mailbox(clock)
    box.put('old')
    item, age, _ = box.take()
    clock.now += 0.5
    box.put('new')
    assert not box.put(item, arrival=clock.now - 0.5 - age, again=True)  # waited for a joint state: dropped
    assert box.take() == ('new', 0.0, 1)
    assert box.put('old', arrival=clock.now - 0.5, again=True)  # nothing newer: it waits on, as old as it is
    clock.now += 0.1
    assert box.take() == ('old', pytest.approx(0.6), 0)


def test_a_flood_of_inputs_wakes_the_worker_once_and_a_call_behind_it_waits_for_one_input():
    node = FakeNode()
    box = Mailbox()
    handled = []

    def idle():
        taken = box.take()
        if taken is not None:
            handled.append(taken)
        return False

    worker = Worker(node, idle=idle, priority=0)
    release = threading.Event()
    worker.post(release.wait, 5.0)  # the thread is busy while 10 000 inputs arrive
    for k in range(10_000):
        box.put(k)
        worker.nudge()
    assert worker._jobs.qsize() <= 2  # the busy job's own entry aside, one wake-up at most
    call = worker.run(lambda: len(handled))
    release.set()
    assert _wait(call.done)
    assert call.result() <= 1  # the call waited for at most one input, not for the flood
    assert _wait(lambda: handled) and handled[0][0] == 9999 and handled[0][2] == 9999
    worker.stop()


def test_the_worker_thread_runs_under_sched_fifo_or_says_why_not_once():
    node = FakeNode()
    policy = []
    worker = Worker(node, idle=lambda: policy.append(os.sched_getscheduler(threading.get_native_id())), priority=5)
    worker.nudge()
    assert _wait(lambda: policy)
    if node.warnings:  # refused (no CAP_SYS_NICE): normal scheduling, one warning line
        assert policy[0] == os.SCHED_OTHER and len(node.warnings) == 1 and 'SCHED_FIFO' in node.warnings[0]
    else:
        assert policy[0] == os.SCHED_FIFO
        assert os.sched_getscheduler(threading.get_native_id()) == os.SCHED_OTHER  # only the worker's thread
    worker.stop()
