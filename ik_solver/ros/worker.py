"""One background thread for a node's long jobs, so that a single-threaded executor stays responsive.

Why not rclpy's MultiThreadedExecutor: while a callback waits for a thread of
its pool, it polls in Python; with joint_states at 200 Hz it kept the idle IK
node at ~100 % of a core (a SingleThreadedExecutor: ~20 %), and on two cores it
starved the simulator and the clients.  So the node spins single-threaded and
its solves, which last up to a request's timeout, run here one at a time, in
arrival order, while joint states, ``~/compute_fk`` and the parameter services
are answered by the executor.

A service callback awaits its job (``async def``, ``return await
worker.run(fn, ...)``).  rclpy resumes a coroutine awaiting a Future only when
its executor wakes, so this thread wakes the node's executor after each job.
Such a service belongs to ``callback_group`` (reentrant): in a mutually
exclusive group, as the node's default one, an awaiting callback would keep the
group's other callbacks (parameters, joint states) out of the executor until
its job ends.

Streamed inputs never queue here: they wait in the node's one-slot mailbox
(newest wins) that ``idle()`` empties, and ``nudge()`` queues at most one
wake-up however fast they come, so a flood of targets costs one solve per job
slot and a ``~/solve`` call queued behind it waits for at most one target.
Jobs are never dropped.

The thread asks for SCHED_FIFO (``priority``), as the servo's loop does: under
CPU load a command then waits for the interpreter lock, not for the scheduler.
Where the system refuses (no CAP_SYS_NICE, no RLIMIT_RTPRIO) it runs with normal
scheduling and says so once.
"""
from collections import deque
import queue
import threading
import time

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future

from .spin import real_time

#: SCHED_FIFO priority of a worker thread: below the servo loop's default (40), which has the harder deadline.
PRIORITY = 30
#: Largest fraction of any ``DUTY_WINDOW`` of the thread's time that ``idle()`` (streamed inputs) may take.  A
#: stream the node cannot keep up with would otherwise keep a SCHED_FIFO thread busy without a pause, and
#: starve the process's other threads (the middleware's receive threads, the executor) on its core.  Jobs
#: (service calls) are not limited.
MAX_DUTY = 0.5
#: The span the duty is measured over [s].  A stream the node keeps up with (less than MAX_DUTY of it busy)
#: never rests, however its handlings vary; a handling longer than MAX_DUTY x DUTY_WINDOW rests as long as it
#: worked (1 / MAX_DUTY - 1 times as long): the window then holds nothing else.
DUTY_WINDOW = 0.1


class Worker:
    """Runs jobs for ``node`` on one thread, in order; see the module docstring.

    ``idle()``, if given, runs after every job and on ``nudge()``; while it
    returns True (work is waiting for something) it runs again every
    ``idle_period`` seconds.  ``priority``: the thread's SCHED_FIFO priority
    (0: normal scheduling).
    """

    def __init__(self, node, idle=None, idle_period=0.02, name='worker', priority=PRIORITY):
        self._node = node
        self._idle = idle
        self._idle_period = idle_period
        self._priority = priority
        self._jobs = queue.SimpleQueue()
        self._nudged = False
        self._stopped = False
        self.callback_group = ReentrantCallbackGroup()
        self._duty = DutyWindow(MAX_DUTY, DUTY_WINDOW)
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def run(self, fn, *args):
        """Queue ``fn(*args)``; return an rclpy Future of its result that a coroutine can await."""
        future = Future()
        self._put((fn, args, future))
        return future

    def post(self, fn, *args):
        """Queue ``fn(*args)`` without waiting for it; an exception is logged."""
        self._put((fn, args, None))

    def nudge(self):
        """Run ``idle()`` soon (something it waits for has arrived); one wake-up waits at most."""
        if not self._nudged:
            self._nudged = True
            self._put(None)

    def stop(self, timeout=1.0):
        """Finish the job in progress, drop the others and end the thread (within ``timeout`` seconds)."""
        self._stopped = True
        self._put(None)
        self._thread.join(timeout)

    def _put(self, job):
        self._jobs.put(job)

    def _loop(self):
        if self._priority:
            refused = real_time(self._priority)
            if refused is not None:
                self._node.get_logger().warning(
                    f'{self._thread.name} keeps normal scheduling: SCHED_FIFO priority {self._priority} refused '
                    f'({refused}); under CPU load its commands wait for the scheduler')
        timeout = None
        while not self._stopped:
            job = self._next(timeout)
            if self._stopped:
                return
            if job is not None:
                self._execute(*job)
            else:
                self._nudged = False  # inputs arriving from now on need a new wake-up
            now = time.monotonic()
            rest = self._duty.due(now) - now
            if rest > 0.0:  # streamed inputs wait (the newest in its place); jobs do not
                timeout = rest
                continue
            again = self._run_idle()
            timeout = self._idle_period if again else None

    def _run_idle(self):
        """Run ``idle()`` and count its time against the duty window."""
        if self._idle is None:
            return False
        start = time.monotonic()
        again = self._idle()
        self._duty.record(start, time.monotonic())
        return again

    def _next(self, timeout):
        """Return the next job, or None for a nudge or once ``timeout`` [s] (None: no limit) has passed."""
        try:
            return self._jobs.get(timeout=timeout)
        except queue.Empty:
            return None

    def _execute(self, fn, args, future):
        try:
            result = fn(*args)
        except Exception as exc:  # the thread outlives a failed job; the caller learns of it
            if future is None:
                self._node.get_logger().error(f'{getattr(fn, "__name__", fn)} failed: {exc!r}')
                return
            future.set_exception(exc)
        else:
            if future is None:
                return
            future.set_result(result)
        executor = self._node.executor
        if executor is not None:
            executor.wake()


class DutyWindow:
    """How much of the last ``window`` seconds some work took, and when more may start within ``duty`` of it.

    Args:
        duty: the largest busy fraction of any window (0 < duty <= 1).
        window: the window [s].
    """

    def __init__(self, duty, window):
        self._duty = duty
        self._window = window
        self._runs = deque()   # (start, end) [s] of the runs that end within the last window, oldest first

    def record(self, start, end):
        """Count a run of the work from ``start`` to ``end`` [s, monotonic]."""
        self._runs.append((start, end))

    def due(self, now):
        """Return the first instant [s] from ``now`` at which the last window's busy time is below its share.

        ``now`` itself when the window has room; else when enough of the oldest runs have left the window.
        """
        begin = now - self._window
        while self._runs and self._runs[0][1] <= begin:
            self._runs.popleft()
        excess = sum(end - max(start, begin) for start, end in self._runs) - self._duty * self._window
        if excess < 0.0:
            return now
        for start, end in self._runs:   # the window's start passes the runs: each leaves with its length
            start = max(start, begin)
            if end - start > excess:
                return start + excess + self._window
            excess -= end - start
        return now
