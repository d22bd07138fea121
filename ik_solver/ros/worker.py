"""One background thread for a node's long jobs, so that a single-threaded executor stays responsive.

Why not rclpy's MultiThreadedExecutor: while a callback waits for a thread of
its pool, it polls in Python; with joint_states at 200 Hz it kept the idle IK
node at ~100 % of a core (a SingleThreadedExecutor: ~20 %), and on two cores it
starved the simulator and the clients.  So the node spins single-threaded and
its solves, which last up to a request's timeout, run here one at a time, in
arrival order, while ``~/compute_fk`` and the parameter services are answered
by the executor (an IK node's streams and ``~/solve`` by its inputs thread).

A service callback awaits its job (``async def``, ``return await
worker.run(fn, ...)``).  rclpy resumes a coroutine awaiting a Future only when
its executor wakes, so this thread wakes the node's executor after each job.
Such a service belongs to ``callback_group`` (reentrant): in a mutually
exclusive group, as the node's default one, an awaiting callback would keep the
group's other callbacks (parameters, joint states) out of the executor until
its job ends.  A job whose Future's done callbacks do the rest (``wake``
False: they run on the thread that sets it, this one or the watchdog's) leaves
the executor asleep: the IK node's ``~/solve`` is taken by its inputs thread
and answered from here, without the executor's two wake-ups per call.

Streamed inputs never queue here: they wait in the node's one-slot mailbox
(newest wins) that ``idle()`` empties, and ``nudge()`` queues at most one
wake-up however fast they come.  Every queued job runs before the next
streamed input, so a ``~/solve`` call waits for the handling in progress at
most, whatever the flood.  A job with a ``deadline`` (a service call's timeout,
from its reception) that has not started by then is answered by its ``late``
function on a watchdog thread and never runs: a caller always gets an answer
within its timeout, even behind a handling that outlasts it.  Other jobs are
never dropped.

The thread asks for SCHED_FIFO (``priority``), as the servo's loop does: under
CPU load a command then waits for the interpreter lock, not for the scheduler.
Where the system refuses (no CAP_SYS_NICE, no RLIMIT_RTPRIO) it runs with normal
scheduling and says so once.  The node's executor and the middleware's threads
run just below it (``real_time_executor``), as the servo's do below its loop.
"""
from collections import deque
import heapq
import itertools
import queue
import threading
import time

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future

from .spin import real_time, real_time_or_warn, RealTimeExecutor

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
        self.priority = priority
        self._jobs = queue.SimpleQueue()
        self._nudged = False
        self._stopped = False
        self.callback_group = ReentrantCallbackGroup()
        self._duty = DutyWindow(MAX_DUTY, DUTY_WINDOW)
        self._watchdog = Watchdog(self.wake_executor, priority)
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def run(self, fn, *args, deadline=None, late=None, wake=True):
        """Queue ``fn(*args)``; return an rclpy Future of its result that a coroutine can await.

        Args:
            fn: the job.
            deadline: None, or the monotonic instant [s] by which the job must have started.
            late: with ``deadline``, ``late()`` returns the result given instead when the job has not started by
                then (on the watchdog thread; the job then never runs).
            wake: wake the node's executor once the result is set (a coroutine awaiting it resumes only
                then); False when the Future's done callbacks, run on the thread that sets it, do the rest.
        """
        job = Job(fn, args, Future(), wake)
        if deadline is not None:
            self._watchdog.add(deadline, job, late)
        self._put(job)
        return job.future

    def post(self, fn, *args):
        """Queue ``fn(*args)`` without waiting for it; an exception is logged."""
        self._put(Job(fn, args, None))

    def nudge(self):
        """Run ``idle()`` soon (something it waits for has arrived); one wake-up waits at most."""
        if not self._nudged:
            self._nudged = True
            self._put(None)

    def stop(self, timeout=1.0):
        """Finish the job in progress, drop the others and end the thread (within ``timeout`` seconds)."""
        self._stopped = True
        self._watchdog.stop()
        self._put(None)
        self._thread.join(timeout)

    def _put(self, job):
        self._jobs.put(job)

    def _loop(self):
        real_time_or_warn(self._node.get_logger(), self.priority, self._thread.name, 'its commands')
        timeout = None
        while not self._stopped:
            item = self._next(timeout)
            while True:   # every queued job runs before the next streamed input
                if self._stopped:
                    return
                if item is None:
                    self._nudged = False  # inputs arriving from now on need a new wake-up
                else:
                    self._execute(item)
                if self._jobs.empty():
                    break
                item = self._jobs.get_nowait()   # this thread alone takes from the queue
            now = time.monotonic()
            rest = self._duty.due(now) - now
            if rest > 0.0:  # streamed inputs wait (the newest in its place); jobs do not
                timeout = rest
                continue
            again = self._run_idle()
            timeout = self._idle_period if again else None

    def _run_idle(self):
        """Run ``idle()`` and count its time against the duty window; an exception is logged, the thread goes on."""
        if self._idle is None:
            return False
        start = time.monotonic()
        try:
            again = self._idle()
        except Exception as exc:  # the thread outlives a failed handling, as a failed job
            self._node.get_logger().error(f'{getattr(self._idle, "__name__", self._idle)} failed: {exc!r}')
            again = False
        self._duty.record(start, time.monotonic())
        return again

    def _next(self, timeout):
        """Return the next job, or None for a nudge or once ``timeout`` [s] (None: no limit) has passed."""
        try:
            return self._jobs.get(timeout=timeout)
        except queue.Empty:
            return None

    def _execute(self, job):
        if not job.claim():  # answered late by the watchdog: it never runs
            return
        future = job.future
        try:
            result = job.fn(*job.args)
        except Exception as exc:  # the thread outlives a failed job; the caller learns of it
            if future is None:
                self._node.get_logger().error(f'{getattr(job.fn, "__name__", job.fn)} failed: {exc!r}')
                return
            future.set_exception(exc)
        else:
            if future is None:
                return
            future.set_result(result)
        if job.wake:
            self.wake_executor()

    def wake_executor(self):
        """Wake the node's executor: a coroutine awaiting a job's Future resumes only when it wakes."""
        executor = self._node.executor
        if executor is not None:
            executor.wake()


def real_time_executor():
    """Return the executor of a node with a worker: its thread and the middleware's under SCHED_FIFO where granted.

    Below the worker: the executor then does not hold the interpreter lock the worker needs while the
    scheduler runs other processes, and it takes requests and sends the answers of the worker's jobs on
    time however loaded the machine (``spin.RealTimeExecutor``); an IK node's ``~/solve`` bypasses it.  Its
    work stays bounded: streamed inputs reach it a few per handling at most (the IK node's ``target_mailbox``).
    """
    return RealTimeExecutor(_worker_priority)


def _worker_priority(node):
    """Return the SCHED_FIFO priority of ``node``'s Worker (its ``worker`` attribute), 0 without one."""
    worker = getattr(node, 'worker', None)
    return worker.priority if isinstance(worker, Worker) else 0


class Job:
    """A queued call: ``fn(*args)``, the Future of its result (None: nobody waits), and who claimed it.

    ``wake``: whether the executor is woken once the Future is set (``Worker.run``).
    """

    __slots__ = ('fn', 'args', 'future', 'wake', '_claimed', '_lock')

    def __init__(self, fn, args, future, wake=True):
        self.fn, self.args, self.future, self.wake = fn, args, future, wake
        self._claimed = False
        self._lock = threading.Lock()

    def claim(self):
        """Return True once: for the worker that runs the job, or the watchdog that answers it late."""
        with self._lock:
            claimed, self._claimed = self._claimed, True
        return not claimed

    @property
    def claimed(self):
        """Whether the worker or the watchdog has taken the job (one not yet taken may be taken any moment)."""
        return self._claimed


class Watchdog:
    """Answers jobs that have not started by their deadline, on a thread of its own (started when first needed).

    The thread sleeps until the earliest deadline: one added behind it does not wake it, and when it comes
    the thread forgets every job the worker has claimed meanwhile.  Calls the worker takes in time then cost
    it about two wake-ups per timeout, not two per call, each of which took the interpreter lock from the
    solve or the executor under way.

    Args:
        woken: called after a late answer is set, to wake the executor that awaits it.
        priority: SCHED_FIFO priority of the thread, as the worker's (0: normal scheduling; a refusal is
            left to the worker to report).
    """

    def __init__(self, woken, priority=0):
        self._woken = woken
        self._priority = priority
        self._heap = []                # (deadline [s], sequence, job, late), earliest first
        self._sequence = itertools.count()
        self._condition = threading.Condition()
        self._thread = None
        self._stopped = False

    def add(self, deadline, job, late):
        """Answer ``job`` with ``late()`` at ``deadline`` [s, monotonic] unless the worker has claimed it."""
        with self._condition:
            heapq.heappush(self._heap, (deadline, next(self._sequence), job, late))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name='worker_watchdog', daemon=True)
                self._thread.start()
            elif self._heap[0][2] is job:   # earlier than the deadline the thread waits for
                self._condition.notify()

    def stop(self):
        """End the thread; deadlines not yet reached are not answered."""
        with self._condition:
            self._stopped = True
            self._condition.notify()

    def _loop(self):
        if self._priority:
            real_time(self._priority)
        while True:
            with self._condition:
                due = self._due()
                if due is None:
                    return
            job, late = due
            if job.claim():
                self._answer(job, late)

    def _due(self):
        """Wait for the earliest deadline (the condition held); return its (job, late), or None once stopped.

        Jobs claimed meanwhile are forgotten when a deadline comes, not before: a call the worker takes at
        once leaves the thread asleep, and the next call's deadline, behind it, does not wake it either.
        """
        while not self._stopped:
            now = time.monotonic()
            if self._heap and self._heap[0][0] <= now:
                self._heap = [entry for entry in self._heap if not entry[2].claimed]   # started or answered
                heapq.heapify(self._heap)
                if self._heap and self._heap[0][0] <= now:
                    _, _, job, late = heapq.heappop(self._heap)
                    return job, late
                continue
            self._condition.wait(self._heap[0][0] - now if self._heap else None)
        return None

    def _answer(self, job, late):
        try:
            job.future.set_result(late())
        except Exception as exc:  # the caller learns of it, as of a failed job
            job.future.set_exception(exc)
        if job.wake:
            self._woken()


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
