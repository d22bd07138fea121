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

A subscription created in ``inputs`` (a callback group no executor runs) is
taken by this thread itself, between jobs: its callback runs here, at most its
queue's depth of messages per wake-up, with no executor dispatch (most of a
millisecond of Python per message) and no hand-over between threads on the way
from a target to its command.  A flood then costs a C-level take per job slot:
the middleware's KEEP_LAST queue drops what the thread had no time for.

The thread asks for SCHED_FIFO (``priority``), as the servo's loop does: under
CPU load a command then waits for the interpreter lock, not for the scheduler.
Where the system refuses (no CAP_SYS_NICE, no RLIMIT_RTPRIO) it runs with normal
scheduling and says so once.
"""
import inspect
import queue
import threading
import time

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.exceptions import InvalidHandle
from rclpy.guard_condition import GuardCondition
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.task import Future

from .loop_inputs import LoopGroup, LoopInputs
from .spin import real_time

#: SCHED_FIFO priority of a worker thread: below the servo loop's default (40), which has the harder deadline.
PRIORITY = 30
#: Largest fraction of the thread's time that ``idle()`` (streamed inputs) may take.  A stream the node cannot
#: keep up with would otherwise keep a SCHED_FIFO thread busy without a pause, and starve the process's
#: other threads (the middleware's receive threads, the executor) on its core: targets then reached the node
#: late, and service calls were answered late.  Jobs (service calls) are not limited.
MAX_DUTY = 0.5
#: While no subscription is in ``inputs`` yet (the node creates them after its worker), look again this often [s].
INPUTS_LOOKUP = 0.1


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
        self.inputs = LoopGroup()
        context = getattr(node, 'context', None)  # None: a stand-in node without ROS (tests)
        self._guard = GuardCondition(None, None, context) if context is not None else None
        self._entries, self._wait_set = [], None
        self._idle_due = 0.0     # monotonic [s]: idle() rests until then (MAX_DUTY)
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
        if self._guard is not None and not self._thread.is_alive():
            self._guard.destroy()

    def _put(self, job):
        self._jobs.put(job)
        if self._guard is not None:
            self._guard.trigger()

    def _loop(self):
        if self._priority:
            refused = real_time(self._priority)
            if refused is not None:
                self._node.get_logger().warning(
                    f'{self._thread.name} keeps normal scheduling: SCHED_FIFO priority {self._priority} refused '
                    f'({refused}); under CPU load its commands wait for the scheduler')
        timeout, inputs = None, True
        while not self._stopped:
            job = self._next(timeout, inputs)
            if self._stopped:
                return
            if job is not None:
                self._execute(*job)
            else:
                self._nudged = False  # inputs arriving from now on need a new wake-up
            rest = self._idle_due - time.monotonic()
            if rest > 0.0:  # streamed inputs wait (the newest in its place); jobs do not
                timeout, inputs = rest, False
                continue
            again = self._run_idle()
            timeout, inputs = (self._idle_period if again else None), True

    def _run_idle(self):
        """Run ``idle()``; it may run again only after resting (1 / MAX_DUTY - 1) times as long as it took."""
        if self._idle is None:
            return False
        start = time.monotonic()
        again = self._idle()
        self._idle_due = start + (time.monotonic() - start) / MAX_DUTY
        return again

    def _next(self, timeout, inputs=True):
        """Return the next job, or None once inputs were taken, a nudge came or ``timeout`` [s] passed.

        ``inputs`` False: the subscriptions in ``inputs`` are left waiting.
        """
        if self._guard is None:
            try:
                return self._jobs.get(timeout=timeout)
            except queue.Empty:
                return None
        try:
            return self._jobs.get_nowait()
        except queue.Empty:
            pass
        self._wait_and_take(timeout, inputs)
        try:
            return self._jobs.get_nowait()
        except queue.Empty:
            return None

    def _wait_and_take(self, timeout, inputs=True):
        """Wait (the interpreter lock released) for a job or a message of ``inputs``; run the inputs' callbacks."""
        found, wait_set = self._inputs()
        if not found:
            timeout = INPUTS_LOOKUP if timeout is None else min(timeout, INPUTS_LOOKUP)
        entries = found if inputs else []
        wait_set.clear_entities()
        try:
            for subscription, _ in entries:  # the wait set has room for all, fewer may be added
                with subscription.handle:
                    wait_set.add_subscription(subscription.handle)
            with self._guard.handle:
                wait_set.add_guard_condition(self._guard.handle)
        except InvalidHandle:  # the node is being destroyed
            return
        wait_set.wait(-1 if timeout is None else int(timeout * 1e9))
        ready = set(wait_set.get_ready_entities('subscription'))
        LoopInputs.dispatch([entry for entry in entries if entry[0].handle.pointer in ready])

    def _inputs(self):
        """Return the subscriptions in ``inputs`` [(subscription, callback takes message info)] and a wait set."""
        subscriptions = [s for s in self._node.subscriptions if s.callback_group is self.inputs]
        if self._wait_set is None or [s for s, _ in self._entries] != subscriptions:
            self._entries = [(s, len(inspect.signature(s.callback).parameters) == 2) for s in subscriptions]
            self._wait_set = _rclpy.WaitSet(len(subscriptions), 1, 0, 0, 0, 0, self._node.context.handle)
        return self._entries, self._wait_set

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
