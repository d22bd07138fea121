"""The IK node's one-slot mailbox of streamed targets: the newest wins, the ones it replaces are counted.

A stream faster than the solver must not queue: acting on old targets makes the arm lag behind its
client.  So one target waits at most; a newer one supersedes it (reported with the next status), and a
target put back because it waits for the model or a first joint state never replaces one that arrived
meanwhile.

A target that supersedes another while the worker handles one (the stream is faster than the worker) is
posted with a Future that is done when that handling ends: the subscription callback awaits it, so the
executor takes no more targets meanwhile and the middleware's one-slot queue keeps the newest one.  During
a flood the executor then hands over a few targets per handling, not every one that arrives, and stays
free for service requests.  While the worker rests or waits, targets replace each other as they come:
the one it takes next is as fresh as the executor can make it.
"""
from dataclasses import dataclass
import threading
import time

from geometry_msgs.msg import PoseStamped
from rclpy.task import Future
from rclpy.time import Time


@dataclass
class Pending:
    """A target waiting for the worker."""

    msg: PoseStamped
    arrival: float                 # monotonic [s], when the middleware received it
    waited: bool = False           # it waited for the model or a first joint state


class TargetMailbox:
    """Holds one Pending target; ``superseded()`` of ``reporter`` counts each one replaced.

    Args:
        reporter: the node's OutcomeReporter.
        woken: called after ``take()`` completed a Future from ``post()``: wakes the executor that awaits it.
    """

    def __init__(self, reporter, woken=lambda: None):
        self._reporter = reporter
        self._woken = woken
        self._pending = None
        self._busy = False   # the worker handles a target it took
        self._handled = None   # the Future a paused callback awaits, done when that handling ends
        self._lock = threading.Lock()

    def post(self, pending):
        """Put a target in the mailbox; one already there is superseded (unless it is older than ``pending``).

        Returns:
            None, or (when ``pending`` superseded a target during a handling) an rclpy Future done when the
            handling ends.
        """
        with self._lock:
            if self._pending is None:
                self._pending = pending
                return None
            self._reporter.superseded()
            if pending.waited:  # a waiting target put back never replaces one that arrived meanwhile
                return None
            self._pending = pending
            if not self._busy:
                return None
            if self._handled is None:
                self._handled = Future()
            return self._handled

    def take(self):
        """Return the waiting Pending target and empty the mailbox, or None; a target taken is being handled."""
        with self._lock:
            pending, self._pending = self._pending, None
            self._busy = pending is not None
        return pending

    def handled(self):
        """End the handling of the target taken last: a paused stream goes on."""
        with self._lock:
            future, self._handled, self._busy = self._handled, None, False
        if future is not None:
            future.set_result(True)
            self._woken()


def target_age(msg, arrival, clock):
    """Return the seconds since the target's stamp on ``clock`` (rclpy Clock); a zero stamp counts from ``arrival``.

    Args:
        msg: the PoseStamped target.
        arrival: monotonic instant it was received [s].
        clock: the node's clock, the one header stamps are on.
    """
    stamp = Time.from_msg(msg.header.stamp)
    if stamp.nanoseconds == 0:
        return time.monotonic() - arrival
    return max(0.0, (clock.now() - stamp).nanoseconds * 1e-9)


def waiting_for(context, joint_states):
    """Return what a target waits for before it can be solved (the model, a first or consistent joint state), or None.

    Args:
        context: the model's Context (``ik_context``), or None before a model is loaded.
        joint_states: the node's JointStateTracker.
    """
    if context is None:
        return 'the robot model'
    names = context.model.chain.joint_names
    if not joint_states.has(names):
        return 'a first joint state'
    return 'consistent joint states' if joint_states.settling(names) else None
