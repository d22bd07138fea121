"""The IK node's one-slot mailbox of streamed targets: the newest wins, the ones it replaces are counted.

A stream faster than the solver must not queue: acting on old targets makes the arm lag behind its
client.  So one target waits at most; a newer one supersedes it (reported with the next status), and a
target put back because it waits for the model or a first joint state never replaces one that arrived
meanwhile.  The node's inputs thread posts, its worker takes.

While the worker handles a target the inputs thread leaves the subscription alone (``handling``; its
queue keeps the newest target), and ``handled`` lets it look again (``resume``): a flood then costs a
take or two per handling, not per message.
"""
from dataclasses import dataclass
import threading
import time

from geometry_msgs.msg import PoseStamped
from rclpy.time import Time


@dataclass
class Pending:
    """A target waiting for the worker."""

    msg: PoseStamped
    arrival: float                 # monotonic [s], when the middleware received it
    waited: bool = False           # it waited for the model or a first joint state


class TargetMailbox:
    """Holds one Pending target; see the module docstring.

    Args:
        reporter: the node's OutcomeReporter; ``superseded()`` counts each target replaced.
        resume: called when a handling ends: the inputs thread looks at the subscription again.
    """

    def __init__(self, reporter, resume=lambda: None):
        self._reporter = reporter
        self._resume = resume
        self._pending = None
        self.handling = False   # the worker handles a target it took
        self._lock = threading.Lock()

    def post(self, pending):
        """Put a target in the mailbox: of it and one waiting there, the later received stays, the other is dropped."""
        with self._lock:
            if self._pending is not None:
                self._reporter.superseded()
                if pending.arrival < self._pending.arrival:
                    return
            self._pending = pending

    def take(self):
        """Return the waiting target and empty the mailbox, or None; a target taken is being handled."""
        with self._lock:
            pending, self._pending = self._pending, None
            self.handling = pending is not None
        return pending

    def handled(self):
        """End the handling of the target taken last: the inputs thread takes targets again."""
        self.handling = False
        self._resume()


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
