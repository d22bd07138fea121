"""The IK node's one-slot mailbox of streamed targets: the newest wins, the ones it replaces are counted.

A stream faster than the solver must not queue: acting on old targets makes the arm lag behind its
client.  So one target waits at most; a newer one supersedes it (reported with the next status), and a
target put back because it waits for the model or a first joint state never replaces one that arrived
meanwhile.

A target that supersedes another (the stream is faster than the worker) is posted with a Future that is
done when the worker takes it: the subscription callback awaits it, so the executor takes no more targets
meanwhile and the middleware's one-slot queue keeps the newest one.  During a flood the executor then
converts and hands over a few targets per handling, not every one that arrives, and stays free for
service requests; the target the worker acts on is never older than one handling.
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
        self._taken = None   # the Future of the target that superseded another, done when it is taken
        self._lock = threading.Lock()

    def post(self, pending):
        """Put a target in the mailbox; one already there is superseded (unless it is older than ``pending``).

        Returns:
            None, or (when ``pending`` superseded a target) an rclpy Future done once the worker takes it.
        """
        with self._lock:
            if self._pending is None:
                self._pending = pending
                return None
            self._reporter.superseded()
            if pending.waited:  # a waiting target put back never replaces one that arrived meanwhile
                return None
            self._pending = pending
            if self._taken is None:
                self._taken = Future()
            return self._taken

    def take(self):
        """Return the waiting Pending target and empty the mailbox, or None."""
        with self._lock:
            pending, self._pending = self._pending, None
            taken, self._taken = self._taken, None
        if taken is not None:
            taken.set_result(True)
            self._woken()
        return pending


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
