"""The IK node's one-slot mailbox of streamed targets: the newest wins, the ones it replaces are counted.

A stream faster than the solver must not queue: acting on old targets makes the arm lag behind its
client.  So one target waits at most; a newer one supersedes it (reported with the next status), and a
target put back because it waits for the model or a first joint state never replaces one that arrived
meanwhile.  The node's inputs thread posts, its worker takes.

Newer means stamped later, where both are stamped (received later otherwise), and a target stamped before
the last one taken is superseded as it arrives: a sender held up between stamping and publishing (a loaded
machine), a second publisher, or a retransmission deliver targets out of order, and acting on one would
move the arm back toward an older intent.  One older than the node's ``max_target_age`` is left to the
worker, which reports it expired, the more telling reason.  Stamps are compared on the node's clock as far
as it has come: a stamp ahead of it (a sender whose clock runs ahead) orders by arrival and counts as the
clock's reading when taken, and a clock that went back (a restarted simulation) starts the comparison
afresh.

While a target waits in the mailbox or is being handled (``held``), the inputs thread leaves the
subscription alone: its queue (the middleware's one slot) keeps the newest target, which the worker
takes itself when it takes the mailbox's.  A flood then costs a take or two per handling, not one per
message, and the worker still acts on the newest target.  When nothing is held any more the inputs
thread is woken (``resume``) to take targets again.
"""
from dataclasses import dataclass
import math
import threading
import time

from geometry_msgs.msg import PoseStamped

from .joint_states import received_monotonic
from .loop_inputs import queued_messages


@dataclass
class Pending:
    """A target waiting for the worker."""

    msg: PoseStamped
    arrival: float                 # monotonic [s], when the middleware received it
    waited: bool = False           # it waited for the model or a first joint state

    @property
    def stamp(self):
        """header.stamp [ns]; 0: unstamped (a negative stamp, refused later, counts as unstamped here)."""
        return max(stamp_ns(self.msg), 0)

    def newer_than(self, other, now):
        """Whether this target supersedes ``other``: stamped later, else received later.

        Stamps are compared where both are set and no later than ``now`` [ns, the node's clock].
        """
        if 0 < self.stamp <= now and 0 < other.stamp <= now and self.stamp != other.stamp:
            return self.stamp > other.stamp
        return self.arrival > other.arrival


class TargetMailbox:
    """Holds one Pending target; see the module docstring.

    Args:
        reporter: the node's OutcomeReporter; ``superseded()`` counts each target replaced.
        queued: returns the targets waiting in the subscription's queue, oldest first, taken on the calling
            thread (``queued_targets``); called by the worker while the subscription is held.
        resume: called when nothing is held any more: the inputs thread looks at the subscription again.
        now_ns: returns the node's clock [ns], the one stamps are on.
        max_age: returns max_target_age [s]: a target older is not superseded here but expired by the worker.
    """

    def __init__(self, reporter, queued=list, resume=lambda: None, now_ns=time.time_ns, max_age=lambda: math.inf):
        self._reporter = reporter
        self._queued = queued
        self._resume = resume
        self._now_ns = now_ns
        self._max_age = max_age
        self._pending = None
        self._taken_stamp = 0    # [ns] the newest stamp taken, at most the clock then; 0: none
        self._clock = 0          # [ns] the node's clock when last read: a later reading below it went back
        self._handling = False   # the worker handles a target it took
        self._lock = threading.Lock()

    @property
    def held(self):
        """Whether the inputs thread leaves the subscription alone: a target waits here or is being handled."""
        return self._handling or self._pending is not None

    def post(self, pending):
        """Put a target in the mailbox: of it and one waiting there, the later received stays, the other is dropped."""
        with self._lock:
            self._put(pending)

    def take(self):
        """Return the newest waiting target (the subscription's queue included) and empty the mailbox, or None.

        A target taken is being handled until ``handled``.
        """
        with self._lock:
            held = self.held
            if held:
                for pending in self._queued():
                    self._put(pending)
            pending, self._pending = self._pending, None
            self._handling = pending is not None
            if pending is not None and pending.stamp:
                self._taken_stamp = max(self._taken_stamp, min(pending.stamp, self._now()))
        if held and pending is None:
            self._resume()
        return pending

    def collect(self):
        """Pull the targets that arrived during a handling into the mailbox; return whether one waits there.

        Called by the worker before ``handled``, while the subscription is held, so that it can take the next
        target before it reports the last one (``IKSolverNode._take_target``).
        """
        with self._lock:
            if self._handling:
                for pending in self._queued():
                    self._put(pending)
            return self._pending is not None

    def handled(self):
        """End the handling of the target taken last."""
        with self._lock:
            self._handling = False
            released = self._pending is None
        if released:
            self._resume()

    def _put(self, pending):
        now = self._now()
        if self._stale(pending, now):
            self._reporter.superseded()
            return
        if self._pending is not None:
            self._reporter.superseded()
            if not pending.newer_than(self._pending, now):
                return
        self._pending = pending

    def _stale(self, pending, now):
        """Whether ``pending`` is stamped before the last target taken, and not expired (see the module docstring)."""
        return 0 < pending.stamp < self._taken_stamp and (now - pending.stamp) * 1e-9 <= self._max_age()

    def _now(self):
        """Return the node's clock [ns]; one that went back since it was last read clears the last stamp taken."""
        now = self._now_ns()
        if now < self._clock:
            self._taken_stamp = 0
        self._clock = now
        return now


def queued_targets(subscription):
    """Return a function that takes the messages waiting in ``subscription``'s queue as Pending targets.

    Args:
        subscription: the rclpy Subscription of the targets (PoseStamped), held by the inputs thread.
    """
    def take():
        return [Pending(msg, received_monotonic(info)) for msg, info in queued_messages(subscription)]
    return take


def stamp_ns(msg):
    """Return a message's header.stamp in nanoseconds: 0 unset, negative for a malformed stamp."""
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def target_age(msg, arrival, clock):
    """Return the seconds since the target's stamp on ``clock`` (rclpy Clock); an unset stamp counts from ``arrival``.

    Args:
        msg: the PoseStamped target.
        arrival: monotonic instant it was received [s].
        clock: the node's clock, the one header stamps are on.
    """
    stamp = stamp_ns(msg)
    if stamp <= 0:   # zero: unstamped; negative (refused as malformed): no instant to count from
        return time.monotonic() - arrival
    return max(0.0, (clock.now().nanoseconds - stamp) * 1e-9)


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
