"""The IK node's one-slot mailbox of streamed targets: the newest wins, the ones it replaces are counted.

A stream faster than the solver must not queue: acting on old targets makes the arm lag behind its
client.  So one target waits at most; a newer one supersedes it (reported with the next status), and a
target put back because it waits for the model or a first joint state never replaces one that arrived
meanwhile.

A target that supersedes another while the worker handles one (the stream is faster than the worker)
pauses the stream: it is posted with a Future that the subscription callback awaits, so the executor
takes no more targets and stays free for service requests, whatever the flood.  Meanwhile the worker
takes the targets itself, from the subscription's queue (the middleware's one slot: the newest) each
time it is ready for one (``take``): the target it acts on is as fresh as the middleware has it, and it
never waits for the executor between two handlings, however busy the machine keeps that thread.  The
pause ends when the worker finds no target waiting: the executor then hands the stream over again.
"""
from dataclasses import dataclass
import threading
import time

from geometry_msgs.msg import PoseStamped
from rclpy.task import Future
from rclpy.time import Time

from .joint_states import received_monotonic
from .loop_inputs import queued_messages


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
        woken: called after a pause ended (its Future done): wakes the executor that awaits it.
        nudge: called when a handling ends during a pause: the worker looks for the next target (``Worker.nudge``).
        queued: returns the targets waiting in the subscription's queue, oldest first, taken on the calling
            thread (``queued_targets``); called by the worker during a pause only.
    """

    def __init__(self, reporter, woken=lambda: None, nudge=lambda: None, queued=list):
        self._reporter = reporter
        self._woken = woken
        self._nudge = nudge
        self._queued = queued
        self._pending = None
        self._busy = False   # the worker handles a target it took
        self._paused = None   # the Future a paused callback awaits, done when the worker has caught up
        self._lock = threading.Lock()

    def post(self, pending):
        """Put a target in the mailbox; one already there is superseded (unless it is older than ``pending``).

        Returns:
            None, or (when ``pending`` superseded a target during a handling) an rclpy Future done when the
            pause ends: the worker has found no target waiting.
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
            if self._paused is None:
                self._paused = Future()
            return self._paused

    def take(self):
        """Return the newest waiting target and empty the mailbox, or None; a target taken is being handled.

        During a pause the targets in the subscription's queue are taken first (the newest wins); finding
        none ends the pause.
        """
        with self._lock:
            if self._paused is not None:
                for pending in self._queued():
                    if self._pending is not None:
                        self._reporter.superseded()
                    self._pending = pending
            pending, self._pending = self._pending, None
            self._busy = pending is not None
            ended = None
            if pending is None:
                ended, self._paused = self._paused, None
        if ended is not None:
            ended.set_result(True)
            self._woken()
        return pending

    def handled(self):
        """End the handling of the target taken last; during a pause the worker then looks for the next one.

        Not when a target waits in the mailbox: a newer one has nudged the worker already, and one put back
        to wait for the model or a joint state is looked at again after the worker's idle period.
        """
        with self._lock:
            self._busy = False
            look = self._paused is not None and self._pending is None
        if look:
            self._nudge()


def queued_targets(subscription):
    """Return a function that takes the messages waiting in ``subscription``'s queue as Pending targets.

    For the worker during a pause, when the executor takes nothing from that subscription: the
    subscription's callback group is busy with the paused callback.  At most the queue's depth are
    taken, oldest first; none once the subscription is destroyed.

    Args:
        subscription: the rclpy Subscription of the targets (PoseStamped).
    """
    def take():
        return [Pending(msg, received_monotonic(info)) for msg, info in queued_messages(subscription)]
    return take


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
