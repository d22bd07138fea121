"""Streamed inputs on the Worker: the newest is handled, wake-ups coalesced; the thread under SCHED_FIFO."""
import os
import threading
import time
from types import SimpleNamespace

from ik_solver.ros.worker import MAX_DUTY, Worker
import numpy as np


class FakeNode:
    """What a Worker uses of its node: the executor to wake and the logger."""

    def __init__(self):
        self.warnings = []
        self.executor = SimpleNamespace(wake=lambda: None)

    def get_logger(self):
        return SimpleNamespace(error=print, warning=self.warnings.append, info=lambda text: None)


def _wait(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.001)
    return condition()


def test_a_flood_of_inputs_wakes_the_worker_once_and_a_call_behind_it_waits_for_one_input():
    node = FakeNode()
    box = {}  # a one-slot mailbox as the node's: the newest input replaces the one waiting
    handled = []

    def idle():
        if box:
            handled.append(box.pop('input'))
        return False

    worker = Worker(node, idle=idle, priority=0)
    release = threading.Event()
    worker.post(release.wait, 5.0)  # the thread is busy while 10 000 inputs arrive
    for k in range(10_000):
        box['input'] = k
        worker.nudge()
    assert worker._jobs.qsize() <= 2  # the busy job's own entry aside, one wake-up at most
    call = worker.run(lambda: len(handled))
    release.set()
    assert _wait(call.done)
    assert call.result() <= 1  # the call waited for at most one input, not for the flood
    assert _wait(lambda: handled) and handled == [9999]
    worker.stop()


def test_the_worker_thread_runs_under_sched_fifo_or_says_why_not_once():
    node = FakeNode()
    policy = []
    worker = Worker(node, priority=5, idle=lambda: policy.append(
        os.sched_getscheduler(threading.get_native_id()) & ~os.SCHED_RESET_ON_FORK))
    worker.nudge()
    assert _wait(lambda: policy)
    if node.warnings:  # refused (no CAP_SYS_NICE): normal scheduling, one warning line
        assert policy[0] == os.SCHED_OTHER and len(node.warnings) == 1 and 'SCHED_FIFO' in node.warnings[0]
    else:
        assert policy[0] == os.SCHED_FIFO
        assert os.sched_getscheduler(threading.get_native_id()) == os.SCHED_OTHER  # only the worker's thread
    worker.stop()


def test_streamed_inputs_take_at_most_max_duty_of_the_thread_and_jobs_never_wait_for_the_rest():
    node = FakeNode()
    starts = []

    def idle():  # a target that takes 50 ms to handle, with another one always waiting
        starts.append(time.monotonic())
        time.sleep(0.05)
        worker.nudge()
        return False

    worker = Worker(node, idle=idle, priority=0)
    worker.nudge()
    assert _wait(lambda: len(starts) >= 4)
    gaps = np.diff(starts)
    assert gaps.min() >= 0.05 / MAX_DUTY - 0.002  # 50 ms of work, then 50 ms of rest (MAX_DUTY 0.5)
    time.sleep(0.01)  # somewhere in a rest or a handling
    queued = time.monotonic()
    answered = worker.run(time.monotonic)
    assert _wait(answered.done)
    assert answered.result() - queued <= 0.05 + 0.025  # at most the handling in progress, never the rest
    worker.stop()
