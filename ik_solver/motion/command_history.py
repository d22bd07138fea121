"""Our commands as the controller executes them: the replay, and how the next move takes over.

``CommandHistory`` replays the last trajectory the way joint_trajectory_controller interpolates it: the
start state of the next move where the controller's own reference is not available, the envelope of where
the arm can be (``expectation``, for the plausibility of joint states), and the lead-in a new move
continues exactly, so a trajectory that arrives while the last one runs joins it without a step.

The lead-in begins at a point of the last command that the controller has already passed when the new
trajectory arrives.  The controller splines from its own state only up to a trajectory's first point
(``Trajectory::sample``); from there on it runs the message's segments.  Its own state is not the motion
under way at that instant: jazzy's joint_trajectory_controller takes its last command, sampled one period
ahead, at the time of the update before (interpolate_from_desired_state), or the measured state, its
acceleration zero unless the hardware reports one (the default); and a stamp a few microseconds off moves
the first point against it.  A first point ahead of the arrival turns each of these into a peak of
acceleration and jerk at the join.  A first point already passed leaves the controller on the last
command's own segments, and a stamp off by dt only shifts the motion by dt: its acceleration by jerk x dt.
All instants are seconds on one clock (``time.monotonic`` in the nodes; a simulated one in tests).
"""
from collections import deque
from dataclasses import replace
import time

import numpy as np

from .jtc import SplineSampler, Trajectory
from .limits import MotionState
from .plausibility import Expectation
from .timing import held, joined

#: A state is on the last command's replay when it agrees this well (position [rad or m], velocity per s).
REPLAY_MATCH = 1e-6
#: A controller executes our last command when its reference agrees with the replay this well (position
#: [rad or m], velocity per s): far below what a speed-scaled or preempted trajectory drifts in one cycle.
FOLLOW_TOLERANCE = 1e-3
#: Commands kept to judge a controller's reference stamped before the newest (100 Hz: the last 0.64 s).
RECENT_COMMANDS = 64
#: Commands whose envelopes are kept to judge a joint state stamped before the newest (200 Hz: the last 2.5 s,
#: beyond joint_states_timeout): two vectors each, where a command's replay holds its whole spline.
RECENT_ENVELOPES = 512
#: A start whose joints all move slower than this (rad/s or m/s; accelerations: per s) is at rest.
REST_SPEED = 1e-3


class CommandHistory:
    """The last trajectories sent to the controller, with the instants they started (on ``clock``, seconds).

    It decides how the next move takes over (``next_move``): the controller joins a trajectory on arrival
    and skips what lies before it, with a step, so a move first goes on for a lead time with what the
    controller is executing, and departs from there.
    """

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        #: (t0, start MotionState, TimedPath, SplineSampler) of the last commands, oldest first
        self._recent = deque(maxlen=RECENT_COMMANDS)
        #: (t0, end [s], lowest, highest positions, start included) of the last commands, oldest first: one
        #: tuple appended per command, so ``expectation`` on another thread reads a consistent snapshot
        self._envelopes = deque(maxlen=RECENT_ENVELOPES)

    @property
    def _sent(self):
        """Return the last command (t0, start, path, sampler), or None."""
        return self._recent[-1] if self._recent else None

    def sent(self, start, path, t0=None):
        """Remember ``path`` (TimedPath), sent from MotionState ``start`` at ``t0`` [s on the clock; None: now]."""
        trajectory = Trajectory(path.times, path.positions, path.velocities, path.accelerations)
        sampler = SplineSampler(start.position, start.velocity, trajectory, start.acceleration)
        t0 = self._clock() if t0 is None else t0
        self._recent.append((t0, start, path, sampler))
        self._envelopes.append((t0, t0 + sampler.end_time, np.minimum(start.position, path.positions.min(axis=0)),
                                np.maximum(start.position, path.positions.max(axis=0))))

    def next_move(self, start, plan, lead, follow=True):
        """Return (start, TimedPath): ``plan(state)``, a move from ``state``, departing ``lead`` s after ``start``.

        ``follow`` False (a Cartesian path, which must start at rest where it was planned): never carry a
        command under way; a start at rest holds, a moving one departs at once.

        - While the last command has not ended (it may still hold at its start, or move at about zero
          speed), or the arm moves, the move continues that command exactly where ``start`` is its replay
          (``continuation``): the returned start is then a point of that command in the past, and the path's
          first point is the command's last point at or before ``start`` (the path's ``state_time`` says how
          long after its start ``start`` lies).  A command that ends within the lead time is held at its end
          for the rest of it.  Where ``start`` is not the replay (the controller's reference or the measured
          state differ from it), the move departs at once.  So a re-target during a hold departs when the
          held move would have (held afresh, each target of a stream faster than the lead time would keep
          the arm at rest), and along it for the rest of the lead time: the controller may have taken that
          departure when the re-target arrives.
        - Otherwise (at rest, the last command ended) it holds still first.  A path during a hold departs
          when the held move would have.
        """
        if lead <= 0.0:
            return start, plan(start)
        at_rest = max(np.abs(start.velocity).max(), np.abs(start.acceleration).max()) <= REST_SPEED
        if at_rest and not (follow and self._pending(start.time)):
            departure = self.departure()
            if departure is not None and departure > start.time:
                lead = min(lead, departure - start.time)
            return start, held(plan(MotionState.at_rest(start.position)), start.position, lead)
        lead_in = self.continuation(start, lead) if follow else None
        if lead_in is None:
            return start, plan(start)
        origin, times, q, v, a = lead_in
        since = start.time - origin.time
        rest = lead - (times[-1] - since)  # the command ended that long before the lead time
        if rest > 0.0:
            path = joined(times, q, v, a, held(plan(MotionState.at_rest(q[-1])), q[-1], rest))
        else:
            path = joined(times, q, v, a, plan(MotionState(q[-1], v[-1], a[-1])))
        return origin, replace(path, state_time=since)

    def _pending(self, at):
        """Tell whether the last command has not yet ended at ``at`` [s] (holding at its start, or moving)."""
        if self._sent is None:
            return False
        t0, _, path, _ = self._sent
        return at < t0 + path.duration

    def continuation(self, start, duration):
        """Return the last command around ``start`` as (origin, times, q, v, a), or None.

        The points are the command's own, from its last point at or before ``start`` up to the first one at
        least ``duration`` after ``start`` (or its end); ``origin`` (a MotionState with its instant) is the
        point before the first of them, or the command's own start, and the times count from it.  A
        trajectory of these points stamped at the origin is exactly what the controller is executing: it
        joins it at any instant after its first point on the command's own segments, without a step, and a
        move planned from the last point departs without one.  None unless ``start`` (stamped with its
        instant) is the command's replay at that instant.
        """
        if self._sent is None:
            return None
        t0, command_start, path, sampler = self._sent
        at = start.time - t0
        if not _agrees(sampler, at, start, REPLAY_MATCH):
            return None
        i = int(np.searchsorted(path.times, at, side='right'))  # points at or before start: path.times[:i]
        last = min(int(np.searchsorted(path.times, at + duration)), len(path.times) - 1)
        if i > last:
            return None
        first = max(i - 1, 0)   # passed when the trajectory arrives: the controller never splines to it
        origin = MotionState(path.positions[first - 1], path.velocities[first - 1], path.accelerations[first - 1],
                             t0 + path.times[first - 1]) if first else replace(command_start, time=t0)
        keep = slice(first, last + 1)
        return (origin, path.times[keep] - (origin.time - t0), path.positions[keep], path.velocities[keep],
                path.accelerations[keep])

    def follows(self, reference):
        """Tell whether a controller's ``reference`` (MotionState at its instant ``time``) follows our commands.

        It is compared with the command that was our newest at its instant: a reference stamped before the
        newest command's start (the controller publishes it late, or has not taken that command yet) is
        judged against the one it was executing.  Each command continues the one before it exactly over
        the lead time, so following that one means following the newest.
        """
        if reference.time is None:
            return False
        for t0, _, _, sampler in reversed(self._recent):
            if t0 <= reference.time:
                return _agrees(sampler, reference.time - t0, reference, FOLLOW_TOLERANCE)
        return False

    def goal(self, start):
        """Return the positions the last command ends at while ``start`` is on its way there, else None.

        Args:
            start: a MotionState stamped with its instant (``time``), e.g. the next move's start state.

        Returns:
            (n,) positions [rad or m] when ``start`` is the replay of the last command before its end (the
            arm follows it), else None (no command, it has ended, or the arm does something else).
        """
        if start.time is None or not self._pending(start.time):
            return None
        t0, _, path, sampler = self._sent
        if not _agrees(sampler, start.time - t0, start, REPLAY_MATCH):
            return None
        return path.positions[-1].copy()   # a solver must not write into what was sent

    def departure(self):
        """Return the instant [s] the last command leaves its start (after its hold), or None."""
        if self._sent is None:
            return None
        t0, _, path, _ = self._sent
        return t0 + path.hold

    def reference(self, now=None):
        """Return the commanded state at ``now`` [s; None: the clock's now], held after the end.

        As the controller interpolates the command that was our newest then: a measurement that describes an
        instant before the newest command's start (a driver fell silent, its last reading stays believed) is
        compared with the command the arm was following, not with the newest one's start.
        """
        if self._sent is None:
            return None
        at = self._clock() if now is None else now
        t0, _, _, sampler = next((c for c in reversed(self._recent) if c[0] <= at), self._recent[0])
        q, v, a, _ = sampler.evaluate(np.array([at - t0]))
        return MotionState(q[0], v[0], a[0])

    def expectation(self, at, velocity_limits, pause):
        """Return where the arm can be at ``at`` [s] under our commands (an Expectation), or None.

        Anywhere the command the controller ran at ``at`` passes, or one sent after it: a reading describes
        an instant that may lie before the newest command (delivered late, or from a simulator behind the
        wall clock), when the arm was on an earlier one, which a stream's newest need not pass.  After the
        newest command's end, as far as ``velocity_limits`` allow in the time since, counted up to ``pause``
        [s] at most: a bound that grew with every second of rest would, after a pause, take any reading for
        one the commands explain.  A reading from before every command kept is held to the newest alone:
        nothing kept says where the arm was then.
        """
        envelopes = tuple(self._envelopes)   # the worker appends while joint states are judged
        if not envelopes:
            return None
        first = next((i for i in range(len(envelopes) - 1, -1, -1) if envelopes[i][0] <= at), len(envelopes) - 1)
        low = np.min([envelope[2] for envelope in envelopes[first:]], axis=0)
        high = np.max([envelope[3] for envelope in envelopes[first:]], axis=0)
        t0, end = envelopes[-1][:2]
        drift = np.asarray(velocity_limits) * min(max(0.0, at - end), pause)
        return Expectation(low - drift, high + drift, origin=t0)


def _agrees(sampler, t, state, tolerance):
    """Tell whether a command's ``sampler`` at ``t`` has ``state``'s position and velocity within ``tolerance``."""
    q, v, _, _ = sampler.evaluate(np.array([t]))
    return np.abs(q[0] - state.position).max() <= tolerance and np.abs(v[0] - state.velocity).max() <= tolerance
