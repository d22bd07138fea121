"""Run a node until SIGINT, SIGTERM or SIGHUP, then tear it down cleanly and exit 0.

Why not rclpy's own signal handlers: a SIGINT sent to a whole process group
(``timeout -s INT``, CI runners, ``ros2 launch`` forwarding it once more)
reaches a node twice, and rclpy turns each into a KeyboardInterrupt, which
can land inside ``destroy_node`` and print a traceback with exit code -2.
SIGTERM and SIGHUP ended the process without any cleanup.

Here one Python handler serves all three signals: the first one asks for a
clean shutdown, later ones are ignored.  The executor spins in
a worker thread so the main thread, which Python runs signal handlers in,
is never blocked inside ``rcl_wait``.

Once the node is built, everything made so far is moved out of the garbage collector's reach
(``settle_heap``): a full collection scanned all of a node's start-up (numba, rclpy, the model) and held the
interpreter for 40-90 ms, long enough for a simulated controller to take trajectories late and a servo to
miss cycles.
"""
import gc
import os
import signal
import sys
import threading

import rclpy
from rclpy.exceptions import InvalidHandle
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from .compiler_pages import release_compiler_code
from .entry import STOP_SIGNALS

#: A node stopped during start-up has ended this long after the signal [s], well within launch's 5 s.
STARTUP_EXIT_DEADLINE = 2.0


class ShutdownRequested(SystemExit):
    """Raised in the main thread by the first stop signal while ``ShutdownSignals.raising``; exits with 0."""

    def __init__(self, signum):
        super().__init__(0)
        self.signum = signum


class ShutdownSignals:
    """Turn SIGINT, SIGTERM and SIGHUP into one clean shutdown request.

    While ``raising`` is true (start-up, or a script's main loop) the first
    signal raises ``ShutdownRequested`` in the main thread; otherwise it only
    sets ``event``.  With ``exit_after`` (seconds; a node process) a raised
    request also ends the process with 0 after that long, in case the
    exception was swallowed and the teardown never comes.  From then on the
    three signals are ignored (SIG_IGN), so the teardown is never
    interrupted, not even while the interpreter
    finalizes (it resets Python-level handlers to the default, which would
    kill the process with -2 on a signal forwarded a moment later).  Install
    from the main thread.
    """

    def __init__(self, raising=True, exit_after=None):
        self.raising = raising
        self.exit_after = exit_after
        self.event = threading.Event()
        self.signum = None
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._handle)

    @property
    def requested(self):
        """Whether a stop signal has arrived."""
        return self.signum is not None

    def _handle(self, signum, frame):
        if self.signum is not None:
            # A second signal that arrived before the first handler set SIG_IGN: Python runs its handler
            # later, maybe in the cleanup; raising there would skip the cleanup (nodes left running).
            return
        for other in STOP_SIGNALS:  # SIG_IGN also survives Python's finalization, which resets Python handlers
            signal.signal(other, signal.SIG_IGN)
        self.signum = signum
        self.event.set()
        if self.raising:
            if self.exit_after is not None:
                # Python swallows an exception raised in a ctypes callback (numba's cache writes during
                # start-up): start-up would go on for minutes with the stop signals ignored.
                threading.Timer(self.exit_after, _exit_now).start()
            raise ShutdownRequested(signum)

    def check(self):
        """Raise ShutdownRequested for a signal whose exception was lost (raised inside a ctypes callback).

        Numba loads and writes its cached kernels through ctypes callbacks, and
        Python only prints an exception raised there; a script's main loop calls
        this at each step so that the stop still comes.
        """
        if self.raising and self.signum is not None:
            raise ShutdownRequested(self.signum)

    def wait(self):
        """Block until a stop signal (or ``event.set()`` by someone else)."""
        while not self.event.wait(1.0):
            pass


def real_time(priority):
    """Run the calling thread under SCHED_FIFO at ``priority``; return None, or the reason it was refused.

    A thread of a Python node that waits for input most of the time (a servo loop, an IK worker) then
    preempts busy processes as soon as its input arrives.  Refused without CAP_SYS_NICE or an
    RLIMIT_RTPRIO of at least ``priority``; the caller then keeps normal scheduling and says so.
    """
    return _fifo(threading.get_native_id(), priority)


def real_time_or_warn(logger, priority, what, delayed):
    """Run the calling thread under SCHED_FIFO at ``priority`` (``real_time``) and log the outcome.

    Granted: one info line.  Refused: one warning with the reason and what waits for the scheduler under CPU
    load; the thread keeps normal scheduling.  A priority under 1 is normal scheduling, asked for nothing.

    Args:
        logger: the node's logger.
        priority: SCHED_FIFO priority, 1-99.
        what: the thread's name in the messages ('loop thread', 'ik_solver_worker').
        delayed: what waits for the scheduler when it is refused ('its commands').

    Returns:
        None, or the reason it was refused.
    """
    if priority < 1:
        return None
    refused = real_time(priority)
    if refused:
        logger.warning(f'{what} keeps normal scheduling: SCHED_FIFO priority {priority} refused ({refused}); '
                       f'under CPU load {delayed} wait for the scheduler (thread_priority 0: normal scheduling, '
                       'without this warning)')
    else:
        logger.info(f'{what} runs under SCHED_FIFO, priority {priority}')
    return refused


class RealTimeExecutor(SingleThreadedExecutor):
    """A single-threaded executor whose thread, and the middleware's, run under SCHED_FIFO where granted.

    For a node whose real-time thread (an IK node's Worker, a servo's loop) shares the interpreter lock with the
    executor: under normal scheduling, other processes' load delays the executor while it holds the lock (and
    the real-time thread waits behind it), and the answers it sends wait for the scheduler. The middleware's
    threads (``middleware_threads_real_time``) receive every message before the executor or the node sees it:
    under load a request or a target waited there too. Refused (no CAP_SYS_NICE, no RLIMIT_RTPRIO), they keep
    normal scheduling and each node says so.

    Args:
        priority_of: returns the SCHED_FIFO priority of a node's real-time thread (0: it has none).  The
            executor thread runs one below the highest, the middleware's threads two below; a priority under
            1 is normal scheduling.
    """

    def __init__(self, priority_of, **kwargs):
        super().__init__(**kwargs)
        self._priority_of = priority_of

    def spin(self):
        top = max((self._priority_of(node) for node in self.get_nodes()), default=0)
        refused = real_time(top - 1) if top > 1 else None
        if refused is None and top > 2:
            refused = middleware_threads_real_time(top - 2)
        for node in self.get_nodes() if refused is not None else ():
            node.get_logger().warning(f'the executor and middleware threads keep normal scheduling: SCHED_FIFO '
                                      f'priority {top - 1} refused ({refused}); under CPU load the '
                                      "node's answers and inputs wait for the scheduler")
        super().spin()


def middleware_threads_real_time(priority):
    """Run the middleware's threads of this process under SCHED_FIFO at ``priority``; return None, or why refused.

    They are the threads Python did not start that carry a name of their own (Fast DDS's ``dds.*``, Cyclone
    DDS's ``recv``, ``tev``, ...): they receive and send every message.  Unnamed native threads keep normal
    scheduling: a BLAS pool's threads spin while they wait for work, which under SCHED_FIFO would hold a core.
    """
    python = {thread.native_id for thread in threading.enumerate()}
    main = _thread_name(os.getpid())
    for tid in map(int, os.listdir('/proc/self/task')):
        if tid in python or _thread_name(tid) in (None, main) or _real_time_priority(tid) >= priority:
            continue
        refused = _fifo(tid, priority)
        if refused:
            return refused
    return None


def _thread_name(tid):
    """Return the kernel's name of thread ``tid`` of this process (its ``comm``), or None once it has ended."""
    try:
        with open(f'/proc/self/task/{tid}/comm') as f:
            return f.read().strip()
    except OSError:
        return None


def real_time_threads(priority):
    """Run every thread of this process under SCHED_FIFO at ``priority``; return None, or why it was refused.

    For a process that stands in for a real-time controller (the simulator): its executor and the
    middleware's receive threads then take a command on time however busy the other cores are, as a
    controller on a real robot does.  Threads started later keep normal scheduling, and threads already
    under a real-time policy at ``priority`` or above keep theirs (a node's loop thread above its executor).
    """
    for tid in os.listdir('/proc/self/task'):
        if _real_time_priority(int(tid)) >= priority:
            continue
        refused = _fifo(int(tid), priority)
        if refused:
            return refused
    return None


def _fifo(tid, priority):
    """Put thread ``tid`` (a native id) under SCHED_FIFO at ``priority``; return None, or why it was refused.

    A thread that ended meanwhile is no refusal: there is nothing left to schedule.  Processes the thread
    starts later (the kernels' background compiler: minutes of CPU) get normal scheduling
    (SCHED_RESET_ON_FORK), not a real-time priority that would hold a core against the loop it serves.

    Args:
        tid: the kernel's id of the thread (``threading.get_native_id``, or an entry of /proc/self/task).
        priority: SCHED_FIFO priority, 1-99.

    Returns:
        None, or the error text (no CAP_SYS_NICE, RLIMIT_RTPRIO below ``priority``, no such call on this OS).
    """
    try:
        os.sched_setscheduler(tid, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(priority))
    except ProcessLookupError:
        return None
    except (OSError, AttributeError) as exc:  # AttributeError: a platform without sched_setscheduler
        return str(exc)
    return None


def _real_time_priority(tid):
    """Return the SCHED_FIFO or SCHED_RR priority of thread ``tid``, 0 under normal scheduling or once ended."""
    try:
        if (os.sched_getscheduler(tid) & ~os.SCHED_RESET_ON_FORK) in (os.SCHED_FIFO, os.SCHED_RR):
            return os.sched_getparam(tid).sched_priority
    except (OSError, AttributeError):   # ended meanwhile, or a platform without these calls
        pass
    return 0


def settle_heap():
    """Collect once, then freeze what is left (``gc.freeze``): later full collections scan only new objects.

    The objects of a node's start-up live as long as the node; scanning them again at every full collection
    held every thread of the process for tens of milliseconds.
    """
    gc.collect()
    gc.freeze()


def _exit_now():
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def spin_executor(executor, done):
    """Spin ``executor`` (a thread's target) until it stops; then set ``done``.

    ``Executor.shutdown`` destroys the executor's guard conditions while a spin that has not yet seen the
    shutdown may be building its wait set, or running the guard's handler: that spin raises ``InvalidHandle``
    or, where the guard is already gone, ``AttributeError``.  Once the owner is stopping (``done`` set before
    it shuts the executor down), that is the end of spinning, not an error to print.

    Args:
        executor: the rclpy executor to spin.
        done: a threading.Event; set it before ``executor.shutdown()``, and it is set when spinning ends.
    """
    try:
        executor.spin()
    except ExternalShutdownException:
        pass
    except (InvalidHandle, AttributeError):
        if not done.is_set():
            raise
    finally:
        done.set()


def run_node(make_node, args=None, executor=None, exit_process=True):
    """Create ``make_node()``, spin it until a stop signal or rclpy shutdown, destroy it, and exit with 0.

    ``executor``: an rclpy executor, or a function making one after ``rclpy.init``
    (e.g. ``lambda: MultiThreadedExecutor(4)``); default single-threaded.
    With ``exit_process`` (a node's ``main``) the process ends right after the
    teardown: the interpreter's own finalization (numba, LLVM) takes seconds
    and would outlast launch's 5 s before it escalates to SIGTERM and SIGKILL.
    Otherwise it returns 0.
    """
    signals = ShutdownSignals(raising=True, exit_after=STARTUP_EXIT_DEADLINE if exit_process else None)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    if executor is None:
        executor = SingleThreadedExecutor()
    elif callable(executor) and not isinstance(executor, Executor):
        executor = executor()
    try:
        node = make_node()
        settle_heap()
        release_compiler_code()   # the node's kernels are loaded (``compiler_pages``)
        signals.raising = False
        executor.add_node(node)
        worker = threading.Thread(target=spin_executor, args=(executor, signals.event), name='spin', daemon=True)
        worker.start()
        signals.wait()
        executor.shutdown(timeout_sec=5.0)
        worker.join(5.0)
    except ShutdownRequested:
        pass
    finally:
        signals.raising = False
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    if exit_process:
        _exit_now()
    return 0
