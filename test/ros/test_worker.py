"""The IK node's Worker: jobs in order on one thread, results to awaiting callbacks, the executor woken."""
import threading
import time
from types import SimpleNamespace

from ik_solver.ros.worker import Worker
import pytest


class FakeNode:
    """What a Worker uses of its node: the executor to wake and the logger."""

    def __init__(self):
        self.wakes = 0
        self.errors = []
        self.warnings = []   # SCHED_FIFO refused
        self.executor = SimpleNamespace(wake=self._wake)

    def _wake(self):
        self.wakes += 1

    def get_logger(self):
        return SimpleNamespace(error=self.errors.append, warning=self.warnings.append, info=lambda text: None)


def _wait(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.001)
    return condition()


@pytest.fixture
def node():
    return FakeNode()


def test_jobs_run_in_order_on_one_other_thread_and_wake_the_executor(node):
    worker = Worker(node)
    seen = []

    def job(i):
        time.sleep(0.01 if i == 0 else 0.0)  # the first is the slowest: order is still kept
        seen.append((i, threading.current_thread().name))
        return i * i

    futures = [worker.run(job, i) for i in range(5)]
    assert _wait(lambda: all(f.done() for f in futures))
    assert [f.result() for f in futures] == [0, 1, 4, 9, 16]
    assert [i for i, _ in seen] == list(range(5))
    assert {name for _, name in seen} == {'worker'} != {threading.current_thread().name}
    assert node.wakes == 5
    worker.stop()


def test_a_job_whose_done_callbacks_do_the_rest_leaves_the_executor_asleep(node):
    """wake=False (the IK node's ~/solve): its done callback runs on the worker, in time or late, no wake-up."""
    worker = Worker(node)
    seen = []
    done = worker.run(lambda: 'answer', wake=False)
    done.add_done_callback(lambda future: seen.append((future.result(), threading.current_thread().name)))
    release = threading.Event()
    worker.post(release.wait, 5.0)   # holds the worker past the next job's deadline
    late = worker.run(lambda: 'solved', deadline=time.monotonic() + 0.05, late=lambda: 'late', wake=False)
    late.add_done_callback(lambda future: seen.append((future.result(), threading.current_thread().name)))
    assert _wait(late.done)
    release.set()
    assert _wait(lambda: len(seen) == 2)
    assert seen[0][0] == 'answer' and seen[0][1] in ('worker', 'MainThread')   # main: done before it was added
    assert seen[1] == ('late', 'worker_watchdog')
    time.sleep(0.05)
    assert node.wakes == 0
    worker.stop()


def test_a_failed_job_reaches_its_caller_and_the_thread_goes_on(node):
    worker = Worker(node)
    failed = worker.run(lambda: 1 / 0)
    after = worker.run(lambda: 'still here')
    assert _wait(after.done)
    assert isinstance(failed.exception(), ZeroDivisionError) and after.result() == 'still here'
    worker.post(lambda: [][1])
    assert _wait(lambda: node.errors) and 'IndexError' in node.errors[0]
    worker.stop()


def test_an_awaiting_coroutine_gets_the_result():
    """How a service callback uses it: ``await worker.run(...)`` resumes with the job's result."""
    node = FakeNode()
    worker = Worker(node)

    async def callback():
        return await worker.run(lambda: 42)

    coroutine = callback()
    value = None
    deadline = time.monotonic() + 5.0
    while value is None and time.monotonic() < deadline:  # an executor re-runs a pending task on each wake
        try:
            coroutine.send(None)
        except StopIteration as done:
            value = done.value
        time.sleep(0.001)
    assert value == 42
    worker.stop()


def test_idle_runs_after_a_nudge_and_again_while_it_waits(node):
    calls = []
    waiting = threading.Event()
    waiting.set()

    def idle():
        calls.append(time.monotonic())
        return waiting.is_set()

    worker = Worker(node, idle=idle, idle_period=0.01)
    time.sleep(0.05)
    assert calls == []  # nothing to do: the thread sleeps
    worker.nudge()
    assert _wait(lambda: len(calls) >= 4)  # it waits for something: polled every idle_period
    waiting.clear()
    time.sleep(0.05)
    settled = len(calls)
    time.sleep(0.05)
    assert len(calls) == settled  # no longer waiting: no more polls
    worker.run(lambda: None)
    assert _wait(lambda: len(calls) == settled + 1)  # and after each job
    worker.stop()


def test_stop_ends_the_thread_and_skips_queued_jobs(node):
    worker = Worker(node)
    started, release = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(5.0)

    worker.run(slow)
    queued = worker.run(lambda: 'never')
    assert started.wait(5.0)
    threading.Timer(0.05, release.set).start()
    worker.stop(timeout=5.0)
    assert not worker._thread.is_alive() and not queued.done()
