"""The IK node's motion policy without ROS: from a joint solution to a command the controller can join.

One pipeline, whatever asked for the move (a streamed target, a SolveIK with execute, a Cartesian path):

    solution -> start state -> timed move -> guard, checked at sending -> sent -> remembered

- The start is read just before sending (``start_state``): the controller joins a trajectory at its
  arrival, so a start read before a solve would be skipped with a step.
- The move is timed by Ruckig within the scaled limits and takes over from the command under way
  (``CommandHistory.next_move``).
- At sending, a move planned from a state older than the lead time would be joined mid-way: it is planned
  once more from the state then, and refused 'expired' if it is late again (a path is not planned again: it
  is refused at once).  A move that continues the command under way starts at that command's points before
  its state, which the controller has passed when it arrives (see ``command_history``); they do not age it.
- Only what the guard passed reaches ``transport``, and only what was delivered is remembered.

The commander owns no thread and no message type: the ROS node adapts its joint-state tracker and
controller to ``StateSources`` and its trajectory publisher to ``transport``, so the whole policy runs
in a unit test on a simulated ``clock``, as moveit_servo's servo.cpp runs without its servo_node.cpp.
"""
from dataclasses import dataclass
from functools import partial
import time
from typing import Callable

import numpy as np

from .command_guard import CommandGuard
from .command_history import CommandHistory
from .limits import JointLimits, MotionState
from .path_timing import plan_joint_path
from .start_state import choose_start, StateError
from .timing import plan_move, SAMPLE_PERIOD, TimedPath
from ..core.reasons import Reason

#: The guard's refusal of a command whose start is older than the lead time when it is to leave (reported as
#: EXPIRED by ``move`` once planned again, by ``execute`` at once).
LATE = 'late'
#: How far [m] a tip moves per radian of orientation error when a seed's nearness to a target is judged: a
#: point of the tool 10 cm from the flange.
SEED_ROTATION_LENGTH = 0.1
#: Labels of the reasons the commander itself gives (``Outcome.reason``, ~/status; SolveIK.Response names).
SUCCESS, EXPIRED = Reason.SUCCESS.label, Reason.EXPIRED.label
LIMIT_VIOLATION, CONTROLLER_UNAVAILABLE = Reason.LIMIT_VIOLATION.label, Reason.CONTROLLER_UNAVAILABLE.label


@dataclass(frozen=True)
class CommanderSettings:
    """What the commander needs to know of the robot and the node's parameters.

    Attributes:
        names: the chain's joint names, in order (the columns of every trajectory).
        limits: the limits a move may use (JointLimits, already scaled by velocity/acceleration_scaling).
        lead_time: command_lead_time [s]: a move goes on with the command under way (or holds still) this long
            before it departs, and is not sent when its start is older than that; 0: neither.
        sample_period: time between trajectory points [s].
        state_tolerance: how far the measurement may be from the controller's reference [rad or m].
        workspace: None, or (lower, upper) corners of the allowed target box in the base frame [m].
        max_joint_jump: largest change of a joint between consecutive waypoints [rad or m].
        collision: None, or a model with ``check_path(Q)`` (the guard refuses a move through a collision).
    """

    names: tuple
    limits: JointLimits
    lead_time: float = 0.0
    sample_period: float = SAMPLE_PERIOD
    state_tolerance: float = 0.1
    workspace: tuple = None
    max_joint_jump: float = np.inf
    collision: object = None


@dataclass(frozen=True)
class StateSources:
    """Where the state comes from: callables, so the commander reads them at the instant it needs them.

    Attributes:
        measured: returns the believed measured MotionState; raises StateError when none is believed.
        reference: returns the controller's reference (MotionState stamped on the commander's clock), or None.
    """

    measured: Callable[[], MotionState]
    reference: Callable[[], MotionState] = lambda: None


@dataclass
class MoveResult:
    """What became of one move, as Ruckig's Result with its OutputParameter: why, and the trajectory.

    Attributes:
        reason: a reason label, as ``Outcome.reason``: SUCCESS once sent, else why not.
        message: why, for a person.
        start: the MotionState the trajectory starts at (its ``time``: the instant its stamp describes).
        path: the timed trajectory (TimedPath), or None when none was planned.
    """

    reason: str
    message: str = ''
    start: MotionState = None
    path: TimedPath = None

    @property
    def sent(self):
        """Return whether the trajectory went to the controller."""
        return self.reason == SUCCESS


class Commander:
    """Plans, checks, sends and remembers moves for one robot model; see the module docstring.

    Args:
        settings: CommanderSettings.
        sources: StateSources of the measured state and the controller's reference.
        transport: ``transport(names, path, t0)`` delivers a checked TimedPath that starts at instant ``t0``
            [s on ``clock``] (the message is stamped with it: converting an age would read the clock a second
            time, later under load, and shift the stamp); returns None, or a message when it could not.
        history: the CommandHistory of this model's commands (shared by the commanders of one model, so a
            parameter change or a collision variant continues the command under way).
        clock: returns the current instant [s]; the clock of ``history``, of the sources' stamps and of the
            arm (monotonic in a node, simulated in tests).
    """

    def __init__(self, settings, sources, transport, history=None, clock=time.monotonic):
        self.settings = settings
        self.history = CommandHistory(clock) if history is None else history
        self.guard = CommandGuard(settings.limits, settings.workspace, settings.max_joint_jump, send=self._send,
                                  collision=settings.collision)
        self._sources = sources
        self._transport = transport
        self._clock = clock

    def start_state(self):
        """Return the state a move starts from (MotionState stamped with its instant); see ``choose_start``.

        Raises:
            StateError: no believed measurement, or the arm does not follow the controller's reference.
        """
        now = self._clock()
        measured = self._sources.measured()
        limits = self.settings.limits
        return choose_start(measured, self._sources.reference(), self.history, now, self.settings.state_tolerance,
                            limits.lower, limits.upper)

    def seed(self, start, target_errors):
        """Return the joint positions a solve for the move from ``start`` begins at.

        A stream's targets lie a few millimetres apart while the arm runs some way behind them: solved from
        the arm's position, each solution's redundant joints depend on how far behind it happened to be, so
        consecutive goals wander in the nullspace and the arm falls further behind; solved from the goal of
        the command under way, each is the nearby solution of a nearby target, in a few iterations.  A target
        nearer the arm than that goal (a new one after a long move was commanded) starts at the arm.

        Args:
            start: the move's start state (``start_state``).
            target_errors: ``target_errors(Q)`` returns how far the tip at each row of joint positions Q (B, n)
                is from the target: (B, 2) position [m] and orientation [rad] errors, one call for both
                candidates; an orientation error counts as ``SEED_ROTATION_LENGTH`` x it.

        Returns:
            (n,) joint positions [rad or m]: the goal of the command under way while the arm follows it, unless
            the arm is nearer the target; else the start's positions.
        """
        goal = self.history.goal(start)
        if goal is None:
            return start.position
        errors = np.asarray(target_errors(np.stack([start.position, goal])), float)
        at_start, at_goal = errors[:, 0] + SEED_ROTATION_LENGTH * errors[:, 1]
        return start.position if at_start < at_goal else goal

    def move(self, goal):
        """Move to joint positions ``goal`` [rad or m]: time it from the state now, check it and send it.

        A move that is late at sending (the process was held up) is planned once more from the state then,
        because the controller would join it mid-way, with a step.

        Args:
            goal: (n,) joint positions in chain order, within the limits.

        Returns:
            MoveResult: SUCCESS once sent; the StateError's reason; 'limit_violation' when no move within the
            limits exists or the guard refuses it; 'joint_jump', 'collision_path', 'controller_unavailable';
            'expired' when it was late twice.
        """
        plan = partial(plan_move, goal_q=np.asarray(goal, float), limits=self.settings.limits,
                       sample_period=self.settings.sample_period)
        late = None
        for _ in range(2):
            try:
                start, path = self.history.next_move(self.start_state(), plan, self.settings.lead_time)
            except StateError as exc:
                return MoveResult(exc.reason, str(exc))
            except ValueError as exc:
                return MoveResult(LIMIT_VIOLATION, f'no move within the limits: {exc}')
            refusal = self.guard.execute(start, path, self.settings.names)
            if refusal is None or refusal[0] != LATE:
                return _result(refusal, start, path)
            late = refusal
        return _result(late, start, path)

    def time_path(self, joints, start=None):
        """Time a joint path through ``joints`` within the limits, ending at rest.

        Args:
            joints: (K, n) joint positions the path passes, its start excluded [rad or m].
            start: the MotionState it starts at (a planning request), or None: the state now, as a move to
                be sent starts (a path never carries the command under way: it holds still from rest).

        Returns:
            (start, TimedPath): the start with the instant it describes, and the timed path.

        Raises:
            StateError: None ``start`` and no state to start from.
            ValueError: no path within the limits (a PlanningError) or bad input.
        """
        plan = partial(plan_joint_path, waypoints=joints, limits=self.settings.limits,
                       sample_period=self.settings.sample_period)
        if start is not None:
            return start, plan(start)
        return self.history.next_move(self.start_state(), plan, self.settings.lead_time, follow=False)

    def execute(self, start, path, waypoints=None):
        """Check and send a timed path (from ``time_path``) as it is: no second plan.

        Args:
            start: the MotionState ``path`` starts at.
            path: the TimedPath.
            waypoints: (K, n) joint positions it was planned through, start first (the jump check).

        Returns:
            MoveResult: SUCCESS once sent, else the guard's or the transport's reason; 'expired' when its start
            is older than the lead time.
        """
        return _result(self.guard.execute(start, path, self.settings.names, waypoints), start, path)

    def _send(self, names, start, path):
        """Deliver a checked trajectory unless it is late, and remember it; the guard's only way out.

        Returns:
            None once sent, else (LATE, message) or ('controller_unavailable', message), as the guard's checks.
        """
        now = self._clock()
        t0 = now if start.time is None else min(start.time, now)
        age = now - min(t0 + path.state_time, now)   # of the state it was planned from
        lead = self.settings.lead_time
        if lead > 0.0 and age > lead:
            return LATE, (f'the move was {age:.3f} s old when it was to be sent, more than command_lead_time '
                          f'{lead:g} s: the controller would join it mid-way, with a step')
        problem = self._transport(names, path, t0)
        if problem is not None:
            return CONTROLLER_UNAVAILABLE, problem
        self.history.sent(start, path, t0)
        return None


def _result(refusal, start, path):
    """Return the MoveResult of the guard's answer: None (sent) or (reason label or LATE, message)."""
    if refusal is None:
        return MoveResult(SUCCESS, '', start, path)
    reason, message = refusal
    return MoveResult(EXPIRED if reason == LATE else reason, message, start, path)
