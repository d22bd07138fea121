"""The arm's measured state, and whether it may be trusted to start a move from.

A dead driver's last reading, a spoofed message or a joint beyond its limit must
never seed a move.  ``JointStateTracker`` keeps the newest reading of every joint
with the instant the middleware received it on this machine (robust to clocks
that differ between machines, and to readings queued behind a busy executor)
and answers ``state()`` only when the reading is:

- fresh: younger than ``timeout`` (else ``stale_state``; a joint never seen is stale too);
- well formed: no duplicate names, as many positions as names, finite (else ``invalid_input``);
- within the position limits (``LIMIT_SLACK`` of encoder noise is clamped; beyond it, ``inconsistent_state``);
- plausible: a joint may have moved since its previous reading only as fast as its velocity limit allows,
  and it must lie where the last command (``CommandHistory``) can have taken it, within ``tolerance``
  and what the velocity limit allows since that command ended (else ``inconsistent_state``).

``CommandHistory`` also replays the last trajectory the way the controller interpolates it: the start state
of the next move where the controller's own reference is not available.
"""
import bisect
from collections import deque
from dataclasses import replace
import threading
import time

import numpy as np
from rclpy.time import Time
from sensor_msgs.msg import JointState

from ..motion.jtc import SplineSampler, Trajectory
from ..motion.limits import MotionState
from ..motion.timing import held, joined

#: Readings this far outside a position limit are clamped onto it (encoder noise) [rad or m].
LIMIT_SLACK = 0.01
#: Joint readings kept to resolve targets stamped in a moving link at their stamp.
HISTORY = 400
#: A state is on the last command's replay when it agrees this well (position [rad or m], velocity per s).
REPLAY_MATCH = 1e-6
#: A controller executes our last command when its reference agrees with the replay this well (position
#: [rad or m], velocity per s): far below what a speed-scaled or preempted trajectory drifts in one cycle.
FOLLOW_TOLERANCE = 1e-3
#: Commands kept to judge a controller's reference stamped before the newest (100 Hz: the last 0.64 s).
RECENT_COMMANDS = 64
#: A start whose joints all move slower than this (rad/s or m/s; accelerations: per s) is at rest.
REST_SPEED = 1e-3


def received_ago(info):
    """Seconds since the middleware received a message (``MessageInfo``; 0 without a reception stamp).

    A busy executor runs queued callbacks late; judged by callback time, a dead
    driver's queued readings would look fresh.  The reception stamp is this
    machine's system clock, so it is comparable with ``time.time_ns()`` here
    whatever the sender's clock says.
    """
    received = info.get('received_timestamp', 0) if info is not None else 0
    return max(0.0, (time.time_ns() - received) * 1e-9) if received else 0.0


def received_monotonic(info):
    """Monotonic time at which the middleware received a message, not when its callback ran (``received_ago``)."""
    return time.monotonic() - received_ago(info)


class StateError(Exception):
    """No state to start a move from: ``reason`` is 'stale_state', 'inconsistent_state' or 'invalid_input'."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


class CommandHistory:
    """The last trajectory sent to the controller, with the instant it started (monotonic clock).

    It decides how the next move takes over (``next_move``): the controller joins a trajectory on arrival
    and skips what lies before it, with a step, so a move first goes on for a lead time with what the
    controller is executing, and departs from there.
    """

    def __init__(self):
        #: (t0, start MotionState, TimedPath, SplineSampler) of the last commands, oldest first
        self._recent = deque(maxlen=RECENT_COMMANDS)

    @property
    def _sent(self):
        """Return the last command (t0, start, path, sampler), or None."""
        return self._recent[-1] if self._recent else None

    def sent(self, start, path, t0=None):
        trajectory = Trajectory(path.times, path.positions, path.velocities, path.accelerations)
        sampler = SplineSampler(start.position, start.velocity, trajectory, start.acceleration)
        self._recent.append((time.monotonic() if t0 is None else t0, start, path, sampler))

    def next_move(self, start, plan, lead, follow=True):
        """Return (start, TimedPath): ``plan(state)``, a move from ``state``, departing ``lead`` s after ``start``.

        ``follow`` False (a Cartesian path, which must start at rest where it was planned): never carry a
        command under way; a start at rest holds, a moving one departs at once.

        - While the last command is under way (departed, not ended: its velocity may still be about zero),
          or the arm moves, the move continues that command exactly where ``start`` is its replay
          (``continuation``): the returned start is then the command's last point before ``start``, in the
          past.  A command that ends within the lead time is held at its end for the rest of it.  Where
          ``start`` is not the replay (the controller's reference or the measured state differ from it),
          the move departs at once.
        - Otherwise (at rest) it holds still first.  A re-target during that hold departs when the held
          move would have (held afresh, each target of a stream faster than the lead time would keep the
          arm at rest).
        """
        if lead <= 0.0:
            return start, plan(start)
        at_rest = max(np.abs(start.velocity).max(), np.abs(start.acceleration).max()) <= REST_SPEED
        if at_rest and not (follow and self._under_way(start.time)):
            departure = self.departure()
            if departure is not None and departure > start.time:
                lead = min(lead, departure - start.time)
            return start, held(plan(MotionState.at_rest(start.position)), start.position, lead)
        lead_in = self.continuation(start, lead) if follow else None
        if lead_in is None:
            return start, plan(start)
        origin, times, q, v, a = lead_in
        rest = lead - (times[-1] - (start.time - origin.time))  # the command ended that long before the lead time
        if rest > 0.0:
            return origin, joined(times, q, v, a, held(plan(MotionState.at_rest(q[-1])), q[-1], rest))
        return origin, joined(times, q, v, a, plan(MotionState(q[-1], v[-1], a[-1])))

    def _under_way(self, at):
        """Tell whether the last command has departed and not yet ended at monotonic time ``at``."""
        if self._sent is None:
            return False
        t0, _, path, _ = self._sent
        return t0 + path.hold <= at < t0 + path.duration

    def continuation(self, start, duration):
        """Return the last command around ``start`` as (origin, times, q, v, a), or None.

        ``origin`` (a MotionState with its monotonic instant) is the command's last point at or before
        ``start``, or its own start; times count from it, through the command's own points up to the first
        one at least ``duration`` after ``start`` (or its end).  A trajectory of these points stamped at the
        origin is exactly what the controller is executing: it joins it at any instant without a step, and
        a move planned from the last point departs without one.  None unless ``start`` (stamped with its
        monotonic instant) is the command's replay at that instant.
        """
        if self._sent is None:
            return None
        t0, first, path, sampler = self._sent
        at = start.time - t0
        if not _agrees(sampler, at, start, REPLAY_MATCH):
            return None
        i = int(np.searchsorted(path.times, at, side='right'))  # points at or before start: path.times[:i]
        last = min(int(np.searchsorted(path.times, at + duration)), len(path.times) - 1)
        if i > last:
            return None
        origin = MotionState(path.positions[i - 1], path.velocities[i - 1], path.accelerations[i - 1],
                             t0 + path.times[i - 1]) if i else replace(first, time=t0)
        keep = slice(i, last + 1)
        return (origin, path.times[keep] - (origin.time - t0), path.positions[keep], path.velocities[keep],
                path.accelerations[keep])

    def follows(self, reference):
        """Tell whether a controller's ``reference`` (MotionState at its monotonic ``time``) follows our commands.

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

    def departure(self):
        """Return the monotonic instant the last command leaves its start (after its hold), or None."""
        if self._sent is None:
            return None
        t0, _, path, _ = self._sent
        return t0 + path.hold

    def reference(self, now=None):
        """Return the commanded state now, as the controller interpolates the last trajectory (held after its end)."""
        if self._sent is None:
            return None
        t0, _, _, sampler = self._sent
        q, v, a, _ = sampler.evaluate(np.array([(time.monotonic() if now is None else now) - t0]))
        return MotionState(q[0], v[0], a[0])

    def envelope(self, at, velocity_limits, tolerance):
        """(lower, upper) bounds on where the arm can be at monotonic time ``at`` under the last command."""
        if self._sent is None:
            return None
        t0, start, path, sampler = self._sent
        low = np.minimum(start.position, path.positions.min(axis=0))
        high = np.maximum(start.position, path.positions.max(axis=0))
        drift = tolerance + np.asarray(velocity_limits) * max(0.0, at - t0 - sampler.end_time)
        return low - drift, high + drift


def _agrees(sampler, t, state, tolerance):
    """Tell whether a command's ``sampler`` at ``t`` has ``state``'s position and velocity within ``tolerance``."""
    q, v, _, _ = sampler.evaluate(np.array([t]))
    return np.abs(q[0] - state.position).max() <= tolerance and np.abs(v[0] - state.velocity).max() <= tolerance


class JointStateTracker:
    """Newest joint readings from ``topic``; see the module docstring."""

    def __init__(self, node, topic='joint_states', timeout=0.5, callback_group=None, tolerance=0.1):
        self.timeout = timeout
        self.tolerance = tolerance
        self._lock = threading.Lock()
        self._joints = {}        # name -> (position, velocity, arrival, previous position, previous arrival)
        self._problems = {}      # name -> (reason, message) of its newest message, if that was bad
        self._arrivals = deque(maxlen=100)
        self._history = deque(maxlen=HISTORY)   # (header stamp [ns], {name: position})
        self._clock = node.get_clock()
        self._logger = node.get_logger()
        node.create_subscription(JointState, topic, self._on_message_with_info, 10, callback_group=callback_group)

    def _on_message_with_info(self, msg, info):
        self.on_message(msg, received_monotonic(info))

    def on_message(self, msg, arrival=None):
        """Record a reading that reached this process at monotonic ``arrival`` (default: now)."""
        now = time.monotonic() if arrival is None else arrival
        names = list(msg.name)
        problem = _malformed(msg)
        with self._lock:
            self._arrivals.append(now)
            if problem is not None:
                for name in names:
                    self._problems[name] = ('invalid_input', problem)
                self._logger.warning(f'joint_states refused: {problem}', throttle_duration_sec=2.0)
                return
            has_velocity = len(msg.velocity) == len(names)
            for i, name in enumerate(names):
                q = float(msg.position[i])
                v = float(msg.velocity[i]) if has_velocity and np.isfinite(msg.velocity[i]) else 0.0
                if not np.isfinite(q):
                    self._problems[name] = ('invalid_input', f'joint_states has NaN or inf for {name}')
                    continue
                previous = self._joints.get(name)
                self._joints[name] = (q, v, now) + ((previous[0], previous[2]) if previous else (q, -np.inf))
                self._problems.pop(name, None)
            stamp = Time.from_msg(msg.header.stamp).nanoseconds or self._clock.now().nanoseconds
            self._history.append((stamp, {name: record[0] for name, record in self._joints.items()}))

    def has(self, names):
        """Whether every joint of ``names`` has had a reading (good or bad)."""
        with self._lock:
            return all(n in self._joints or n in self._problems for n in names)

    def positions(self):
        """{name: position} of every joint seen (for frames and FK; not checked)."""
        with self._lock:
            return {name: record[0] for name, record in self._joints.items()}

    def positions_at(self, stamp):
        """{name: position} measured at builtin_interfaces Time ``stamp``: the newest at or before it.

        A zero stamp, or one older than the kept history, gives the newest (or the oldest kept) reading.
        """
        at = Time.from_msg(stamp).nanoseconds
        with self._lock:
            if at == 0 or not self._history:
                return {name: record[0] for name, record in self._joints.items()}
            stamps = [s for s, _ in self._history]
            k = max(0, bisect.bisect_right(stamps, at) - 1)
            return dict(self._history[k][1])

    def age(self):
        """Seconds since the newest joint_states message, or None before the first."""
        with self._lock:
            return time.monotonic() - self._arrivals[-1] if self._arrivals else None

    def rate(self):
        """Messages per second over the last 100 (0 before two have arrived)."""
        with self._lock:
            if len(self._arrivals) < 2 or self._arrivals[-1] <= self._arrivals[0]:
                return 0.0
            return (len(self._arrivals) - 1) / (self._arrivals[-1] - self._arrivals[0])

    def state(self, names, lower=None, upper=None, velocity=None, history=None):
        """Return the MotionState of ``names`` (acceleration zero), checked as the module docstring says.

        Raises StateError.

        ``velocity``: velocity limits, for the plausibility checks; ``history``: the commands sent.
        """
        with self._lock:
            problems = [(n, self._problems[n]) for n in names if n in self._problems]
            records = [self._joints.get(n) for n in names]
        if problems:
            raise StateError(problems[0][1][0], problems[0][1][1])
        missing = [n for n, r in zip(names, records) if r is None]
        if missing:
            raise StateError('stale_state', f'no joint_states yet for {", ".join(missing)}')
        q, v, arrival, q_prev, arrival_prev = (np.array(column) for column in zip(*records))
        age = time.monotonic() - arrival.min()
        if age > self.timeout:
            raise StateError('stale_state', f'joint_states are {age:.2f} s old (joint_states_timeout '
                             f'{self.timeout:g} s)')
        if lower is not None:
            q = self._within_limits(names, q, lower, upper)
        if velocity is not None:
            self._check_plausible(names, q, q_prev, arrival - arrival_prev, velocity)
            envelope = history.envelope(arrival.min(), velocity, self.tolerance) if history is not None else None
            if envelope is not None:
                _check_inside(names, q, *envelope, 'where the last command can have taken it')
        return MotionState(q, v, np.zeros_like(q), time=float(arrival.min()))

    def _within_limits(self, names, q, lower, upper):
        _check_inside(names, q, np.asarray(lower) - LIMIT_SLACK, np.asarray(upper) + LIMIT_SLACK,
                      'the joint limits')
        return np.clip(q, lower, upper)

    def _check_plausible(self, names, q, q_prev, dt, velocity):
        allowed = np.asarray(velocity) * dt + self.tolerance
        jumped = np.abs(q - q_prev) > allowed
        if jumped.any():
            i = int(np.argmax(jumped))
            raise StateError('inconsistent_state', f'joint_states jumped {names[i]} by {abs(q[i] - q_prev[i]):.3f} '
                             f'in {dt[i]:.3f} s, faster than its velocity limit allows')


def _check_inside(names, q, low, high, what):
    outside = (q < low) | (q > high)
    if outside.any():
        i = int(np.argmax(outside))
        raise StateError('inconsistent_state', f'joint_states put {names[i]} at {q[i]:.4f}, outside {what} '
                         f'[{low[i]:.4f}, {high[i]:.4f}]')


def _malformed(msg):
    """Why a JointState message cannot be read as a whole, or None."""
    names = list(msg.name)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        return f'duplicate joint names {", ".join(duplicates)}'
    if len(msg.position) != len(names):
        return f'{len(names)} names but {len(msg.position)} positions'
    if len(msg.velocity) not in (0, len(names)):
        return f'{len(names)} names but {len(msg.velocity)} velocities'
    return None
