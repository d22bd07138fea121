"""The Worker's duty cap over a window: a stream it keeps up with never rests, one it cannot is held to MAX_DUTY."""
import threading
import time
from types import SimpleNamespace

from ik_solver.ros.worker import DUTY_WINDOW, DutyWindow, MAX_DUTY, Worker
import numpy as np
import pytest


class FakeNode:
    """What a Worker uses of its node: the executor to wake and the logger."""

    def __init__(self):
        self.executor = SimpleNamespace(wake=lambda: None)

    def get_logger(self):
        return SimpleNamespace(error=print, warning=print)


def test_a_long_handling_among_short_ones_does_not_delay_the_next_input():
    """An input arriving 2 ms after a 10 ms handling is handled at once: the window has room for both."""
    node = FakeNode()
    starts, durations = [], [0.002, 0.010, 0.002]
    done = threading.Event()

    def idle():
        starts.append(time.monotonic())
        time.sleep(durations[len(starts) - 1])
        if len(starts) == len(durations):
            done.set()
        return False

    worker = Worker(node, idle=idle, priority=0)
    for k in range(len(durations)):
        worker.nudge()
        while len(starts) <= k:
            time.sleep(0.0005)
        time.sleep(durations[k] + 0.002)   # the next input arrives 2 ms after this handling ends
    assert done.wait(5.0)
    delays = np.diff(starts) - np.array(durations[:-1])
    assert delays.max() < 0.006   # per-call resting would hold the third input back 10 ms
    worker.stop()


def test_a_stream_the_worker_cannot_keep_up_with_gets_at_most_max_duty_of_every_window():
    """Handlings of 8 ms, always another waiting: over any window at most MAX_DUTY of it (plus one handling)."""
    node = FakeNode()
    runs = []

    def idle():
        start = time.monotonic()
        time.sleep(0.008)
        runs.append((start, time.monotonic()))
        worker.nudge()
        return False

    worker = Worker(node, idle=idle, priority=0)
    worker.nudge()
    time.sleep(0.6)
    worker.stop()
    runs = np.array(runs)
    for begin in np.arange(runs[0, 0], runs[-1, 1] - DUTY_WINDOW, 0.005):
        busy = np.clip(np.minimum(runs[:, 1], begin + DUTY_WINDOW) - np.maximum(runs[:, 0], begin), 0.0, None).sum()
        assert busy <= MAX_DUTY * DUTY_WINDOW + 0.008 + 0.003   # the run that crossed the share, and timer slack
    busy = (runs[:, 1] - runs[:, 0]).sum() / (runs[-1, 1] - runs[0, 0])
    assert busy == pytest.approx(MAX_DUTY, abs=0.12)   # and it did use its share


@pytest.mark.parametrize('runs, now, due', [
    ([], 10.0, 10.0),                                   # nothing in the window: at once
    ([(9.95, 9.99)], 10.0, 10.0),                       # 40 ms of 100: room left
    ([(9.89, 9.95)], 9.95, 10.0),                       # 60 ms: when its first 10 ms have left
    ([(9.90, 9.92), (9.94, 9.98)], 9.98, 10.01),        # 60 ms: the first 10 ms of the oldest run must leave
])
def test_due_is_when_enough_of_the_oldest_runs_left_the_window(runs, now, due):
    window = DutyWindow(0.5, 0.1)
    for start, end in runs:
        window.record(start, end)
    assert window.due(now) == pytest.approx(due, abs=1e-9)
