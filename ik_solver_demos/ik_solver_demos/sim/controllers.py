"""The ros2_control controllers the simulated arm emulates, and a witness of what they executed, without ROS.

A real ``joint_trajectory_controller`` checks neither velocity nor timing, and
``forward_command_controller``s pass any value of the right length to the
hardware.  The simulator keeps exactly that behaviour, so tests see what a
real arm would do with a command; but a ``LimitMonitor`` watches every
reference the physics executes and reports what went beyond the position,
velocity or acceleration limits, so tests can assert that nothing did.

Each controller gives, at every physics step, the servo reference (position,
velocity, acceleration) at the physics time, as a real controller samples its splines at its
update loop's fixed period (sampling at the jittery wall-clock time of a
non-real-time thread would shake a stiff servo).  Commands arrive on the ROS
thread and are taken over by the physics thread under a lock.
"""
from collections import deque
from dataclasses import dataclass
import threading

from ik_solver.motion import jtc
import numpy as np

#: Positions within this of a limit [rad or m] count as inside (the spline's rounding).
POSITION_TOLERANCE = 1e-6
#: Command stream period estimation (StreamRate): commands kept; commands and time span [s] before it is
#: known; pauses that start a new stream (in periods, and in seconds while the period is unknown).
RATE_WINDOW, RATE_SETTLE, RATE_SPAN, GAP_PERIODS, FIRST_GAP = 200, 25, 0.2, 5.0, 0.5
#: Physics steps of a trajectory's splines evaluated at once.
BLOCK_STEPS = 50


@dataclass(frozen=True)
class Violation:
    """The worst excursion of one joint beyond one limit.

    ``time`` [s]: after the start of a trajectory; for a stream command, when
    it was sent (system clock); for an integrated velocity target, physics time.
    """

    joint: str
    quantity: str  # 'position', 'velocity' or 'acceleration'
    value: float
    limit: float
    time: float

    def describe(self):
        return f'{self.joint} {self.quantity} {self.value:.4g} beyond {self.limit:.4g} at {self.time:.3f} s'


class LimitMonitor:
    """Collects the worst excursions of sampled references beyond the limits (``tolerance``: relative, v and a)."""

    def __init__(self, limits, tolerance=0.01):
        self.names = list(limits.names)
        self.lower, self.upper = limits.lower, limits.upper
        self.velocity, self.acceleration = limits.velocity, limits.acceleration
        self._low, self._high = limits.lower - POSITION_TOLERANCE, limits.upper + POSITION_TOLERANCE
        self._vmax = limits.velocity * (1.0 + tolerance)
        self._amax = limits.acceleration * (1.0 + tolerance)
        self._worst = {}

    def check(self, t, q, v=None, a=None):
        """Record the excursions of one sample (``v``/``a`` None: not checked)."""
        if (q < self._low).any() or (q > self._high).any():
            for i in np.flatnonzero((q < self._low) | (q > self._high)):
                bound = self.lower[i] if q[i] < self._low[i] else self.upper[i]
                self._record(i, 'position', q[i], bound, abs(q[i] - bound), t)
        for quantity, values, bound, allowed in (('velocity', v, self.velocity, self._vmax),
                                                 ('acceleration', a, self.acceleration, self._amax)):
            if values is not None and (np.abs(values) > allowed).any():
                for i in np.flatnonzero(np.abs(values) > allowed):
                    self._record(i, quantity, values[i], bound[i], abs(values[i]) - bound[i], t)

    def exceeded(self, q, v, a):
        """Which rows of (T, n) positions, velocities and accelerations have a value beyond the limits."""
        bad = (q < self._low) | (q > self._high) | (np.abs(v) > self._vmax) | (np.abs(a) > self._amax)
        return bad.any(axis=1)

    def _record(self, i, quantity, value, bound, excess, t):
        key = (i, quantity)
        if key not in self._worst or excess > self._worst[key][0]:
            limit = float(bound) if quantity == 'position' else float(np.copysign(bound, value))
            self._worst[key] = (excess, Violation(self.names[i], quantity, float(value), limit, float(t)))

    def take(self):
        """Return the recorded violations (worst per joint and quantity) and start afresh."""
        found = [v for _, v in sorted(self._worst.values(), key=lambda item: -item[0])]
        self._worst = {}
        return found


@dataclass(frozen=True)
class Report:
    """Violations of one executed command: ``source`` is the controller, ``label`` names the command."""

    source: str
    label: str
    violations: list


class TrajectoryController:
    """joint_trajectory_controller: splines from the state before each trajectory through it (jtc.SplineSampler).

    A new trajectory preempts the current one at the controller's first update
    after it arrived, as the controller's ``update`` takes it:

    - the state before it is the previous update's output (position, velocity,
      acceleration), placed at that update's time, with ``open_loop``
      (``open_loop_control``: joint_trajectory_controller 4.21 and later, the
      Jazzy and Kilted releases), else the measured state (position, velocity),
      placed at this update's time;
    - it is sampled at this update's time against its ``header.stamp`` (zero:
      this update): before its first point, the segment runs from the state
      before it to that point; later, the segment under way between two of its
      points is joined (no matter where the arm is: where the trajectory
      differs from the motion under way, the reference steps, as the real
      controller's does); past its last point, that point is held.

    A trajectory stamped so early that it ends before it arrives is refused on
    arrival by the controller (``ends_in_the_past``), not here.
    The splines are evaluated ``BLOCK_STEPS`` physics steps at a time (one
    vectorised evaluation instead of one per step) and each executed step is
    checked: positions, the splines' velocities and accelerations, and the
    reference's own differences over the step (position change / step,
    velocity change / step), which no continuous spline makes larger than its
    peaks but which see every step of the reference: at a join, or at the
    points of a linear interpolation (positions only).
    """

    kind = 'joint_trajectory'

    def __init__(self, q0, monitor, open_loop=True):
        self.monitor = monitor
        self.open_loop = open_loop
        self._lock = threading.Lock()
        self._pending = deque()  # (trajectory, start, label, arrival), in the order they arrived
        self._active = None  # (sampler, its start, label, the trajectory's time 0: reports count from it)
        #: (first time, positions, velocities, accelerations, position and velocity steps / dt, rows to check)
        self._block = None
        self.reference = (np.array(q0, float), np.zeros(len(q0)), np.zeros(len(q0)))
        self._updated = None  # the time of the previous update: the time of ``reference``

    def warm_up(self):
        """Compile (or load from the cache) the spline kernels now, before the physics runs.

        Loaded at the first trajectory, they held the physics thread for seconds
        on a busy machine (numba's start-up), with no joint_states meanwhile:
        the first command a client sent was never executed.
        """
        n = len(self.reference[0])
        ahead = jtc.Trajectory(np.array([0.01, 0.02]), np.zeros((2, n)), np.zeros((2, n)), np.zeros((2, n)))
        jtc.SplineSampler(self.reference[0], np.zeros(n), ahead).evaluate(np.array([0.0, 0.015, 0.03]))

    def load(self, trajectory, start, label, arrival=None):
        """Execute ``trajectory`` (jtc.Trajectory, controller order) from ``start`` (ROS thread).

        ``start``: the controller-clock time of the trajectory's time 0 (its
        ``header.stamp``), possibly in the past; None (a zero stamp): on arrival.
        ``arrival``: the controller-clock time it arrived at; the controller takes
        it over at its first step from then on (None: the next step), so a
        controller running behind the clock takes over the trajectories of a
        stream one after the other, as they arrived; of several arrived within
        one step, the newest.
        """
        with self._lock:
            self._pending.append((trajectory, start, label, -np.inf if arrival is None else arrival))

    def update(self, now, dt, measured=None):
        """Servo reference (q, v, a) at physics time ``now`` (steps of ``dt``), and Reports of ended trajectories.

        ``measured``: the joints' (positions, velocities) now, the start of a new trajectory in closed loop.
        """
        reports = []
        with self._lock:
            arrived = _arrived(self._pending, 3, now + 0.5 * dt)
        if arrived:
            trajectory, start, label, _ = arrived[-1]   # the newest of those arrived preempts the others
            start = now if start is None else start
            joined = self._aligned(trajectory, now, start, *self._state_before(now, measured))
            reports += self._report()
            self._active, self._block = joined + (label, start), None
        self._updated = now
        if self._active is None or now < self._active[1]:
            if self.reference[1].any() or self.reference[2].any():  # hold still
                q = self.reference[0]
                self.reference = (q, np.zeros_like(q), np.zeros_like(q))
            return self.reference + (reports,)
        sampler, start, _, origin = self._active
        t = now - start
        block, row = self._row(sampler, t, dt)
        q, v, a = block[1][row], block[2][row], block[3][row]
        if block[6][row]:
            self.monitor.check(now - origin, q, v, a)
            self.monitor.check(now - origin, q, block[4][row], block[5][row])
        self.reference = (q, v, a)
        if t >= sampler.end_time:
            reports += self._report()
            self._active = None
        return q, v, a, reports

    def _state_before(self, now, measured):
        """Return the state (q, v, a) a new trajectory starts from and its time.

        Open loop: the last output at the previous update's time (the controller's
        ``last_commanded_time_``), so the spline to the first point continues the
        motion under way; closed loop: the measured state, now.
        """
        if self.open_loop or measured is None:
            return self.reference, now if self._updated is None else min(self._updated, now)
        q, v = measured
        return (np.array(q, float), np.array(v, float), np.zeros(len(q))), now

    def _aligned(self, trajectory, now, start, state, at):
        """(sampler, its time 0) of ``trajectory`` stamped ``start``, joined at ``now`` from ``state`` at ``at``."""
        t = trajectory
        past = int(np.searchsorted(start + t.times, now, side='right'))  # points at or before now
        if past == 0:  # from the state before, at its time, to the first point at its stamped time
            q, v, a = state
            ahead = jtc.Trajectory(t.times + (start - at), t.positions, t.velocities, t.accelerations)
            return jtc.SplineSampler(q, v, ahead, a0=a), at
        k = past - 1
        if past == len(t.times):  # all played out: hold the last point, as the controller does
            t = jtc.Trajectory(t.times[k:] + 1e-9, t.positions[k:], _zeros_like(t.velocities, k),
                               _zeros_like(t.accelerations, k))
            return jtc.SplineSampler(t.positions[0], np.zeros(t.positions.shape[1]), t), now - 1.0
        rest = jtc.Trajectory(t.times[k + 1:] - t.times[k], t.positions[k + 1:], _tail(t.velocities, k + 1),
                              _tail(t.accelerations, k + 1))
        zero = np.zeros(t.positions.shape[1])
        v0 = zero if t.velocities is None else t.velocities[k]
        a0 = zero if t.accelerations is None else t.accelerations[k]
        return jtc.SplineSampler(t.positions[k], v0, rest, a0=a0), start + t.times[k]

    def _row(self, sampler, t, dt):
        """Return the block of evaluated steps that holds time ``t`` and its row (evaluating a new block if needed)."""
        if self._block is not None:
            row = int(round((t - self._block[0]) / dt))
            if 0 <= row < len(self._block[1]):
                return self._block, row
        times = t + dt * np.arange(BLOCK_STEPS)
        q, v, a, _ = sampler.evaluate(times)
        stepped = (np.diff(q, axis=0, prepend=self.reference[0][None]) / dt,
                   np.diff(v, axis=0, prepend=self.reference[1][None]) / dt)
        check = self.monitor.exceeded(q, v, a) | self.monitor.exceeded(q, *stepped)
        self._block = (t, q, v, a) + stepped + (check,)
        return self._block, 0

    def _report(self):
        """Return Reports of what the active trajectory executed beyond the limits."""
        if self._active is None:
            return []
        violations = self.monitor.take()
        return [Report(self.kind, self._active[2], violations)] if violations else []


def ends_in_the_past(stamp, last_time, now):
    """Tell whether joint_trajectory_controller refuses a trajectory on arrival at ``now`` as already over.

    ``stamp``: its header.stamp [s] (0: start on arrival, never refused); ``last_time``: its last point's
    time_from_start [s].
    """
    return stamp != 0.0 and stamp + last_time < now


def _arrived(pending, field, until):
    """Pop and return, oldest first, the entries of deque ``pending`` up to the newest that arrived by ``until``.

    ``field``: the index of an entry's arrival time.  Entries placed on the clock before the physics
    skipped ahead lie in its future: taken with the first entry that arrived after them, they do not hold
    up every later command.
    """
    arrived = [k for k, entry in enumerate(pending) if entry[field] <= until]
    return [pending.popleft() for _ in range(arrived[-1] + 1)] if arrived else []


def _tail(values, k):
    return None if values is None else values[k:]


def _zeros_like(values, k):
    return None if values is None else np.zeros_like(values[k:])


class StreamRate:
    """Nominal period of a command stream: the least-squares slope of send time over command count.

    Over many commands the slope is insensitive to the sender's jitter (a
    few ms on a 10 ms stream move it by well under 1 % after 25 commands),
    and a sender starved of CPU that publishes late commands in a burst does
    not shorten it, so velocities and accelerations implied by successive
    commands are judged on the period the sender meant.  Until a stream has
    ``RATE_SETTLE`` commands over at least ``RATE_SPAN`` seconds its period is
    unknown (a burst at its start would look like a fast stream).  A pause
    longer than ``GAP_PERIODS`` periods (or ``FIRST_GAP`` before the period is
    known) starts a new stream.
    """

    def __init__(self):
        self._times = deque(maxlen=RATE_WINDOW)
        self.period = None

    def arrived(self, now):
        """Record a command sent at ``now`` [s]; return the stream's period [s], or None while it is not known."""
        if self._times and now - self._times[-1] > (FIRST_GAP if self.period is None else GAP_PERIODS * self.period):
            self._times.clear()
            self.period = None
        self._times.append(now)
        if len(self._times) < RATE_SETTLE or self._times[-1] - self._times[0] < RATE_SPAN:
            return None
        t = np.array(self._times)
        i = np.arange(len(t)) - 0.5 * (len(t) - 1)
        self.period = float(i @ (t - t.mean()) / (i @ i))
        return self.period if self.period > 0.0 else None


class ForwardController:
    """forward_position_controller / forward_velocity_controller: each command is applied as it comes.

    ``command`` checks a command against the limits as part of its stream:
    positions (or velocities) as given, velocities and accelerations implied by
    successive commands over the stream's nominal period (``StreamRate``; the
    first commands of a stream, until its period is known, are judged on
    their values only).  Position commands are servo targets at rest;
    velocity commands are integrated by the physics step into the position
    target, which stops at the joint limits as a hard stop would (reported).
    A command takes effect at the first update at or after its arrival on the
    controller's clock (as the trajectory controller's), so a physics thread
    running behind the clock does not execute a command before the instant it
    arrived at.
    """

    def __init__(self, kind, q0, monitor):
        if kind not in ('forward_position', 'forward_velocity'):
            raise ValueError(f'unknown forward controller {kind!r}')
        self.kind = kind
        self.monitor = monitor
        self._lock = threading.Lock()
        self._rate = StreamRate()
        self._count = 0
        self._target = np.array(q0, float)
        self._velocity = np.zeros(len(q0))
        self._previous = (self._target if kind == 'forward_position' else self._velocity, None)
        self._at_limit = np.zeros(len(q0), bool)
        self._pending = deque()   # (values, arrival on the controller's clock), in the order they arrived

    def command(self, values, now, arrival=None):
        """Take one command sent at ``now`` [s] (ROS thread); return its Report if beyond the limits, else None.

        ``arrival``: the controller-clock time it arrived at (None: the next update applies it).

        Implied derivatives are finite differences of the commands over the
        current period estimate (second differences too, so that a change of
        the estimate scales them but never creates an acceleration).
        """
        values = np.array(values, float)
        period = self._rate.arrived(now)
        with self._lock:
            self._count += 1
            delta = values - self._previous[0]
            first = second = None
            if period is not None:
                first = delta / period
                if self._previous[1] is not None:
                    second = (delta - self._previous[1]) / period ** 2
            if self.kind == 'forward_position':
                self.monitor.check(now, values, first, second)
            else:
                self.monitor.check(now, self._target, values, first)
            self._pending.append((values, -np.inf if arrival is None else arrival))
            self._previous = (values, None if period is None else delta)
            violations = self.monitor.take()
            return Report(self.kind, f'command #{self._count}', violations) if violations else None

    def update(self, now, dt):
        """Servo reference (q, v, a) for the next physics step of ``dt`` seconds, and Reports (limit hits)."""
        with self._lock:
            for values, _ in _arrived(self._pending, 1, now + 0.5 * dt):
                if self.kind == 'forward_position':
                    self._target = values
                else:
                    self._velocity = values
            if self.kind == 'forward_position':
                return self._target, np.zeros_like(self._target), np.zeros_like(self._target), []
            unclipped = self._target + self._velocity * dt
            q = np.clip(unclipped, self.monitor.lower, self.monitor.upper)
            at_limit = q != unclipped
            v = np.where(at_limit, 0.0, self._velocity)
            reports = []
            if (at_limit & ~self._at_limit).any():  # the integrated target reached a limit: a hard stop
                self.monitor.check(now, unclipped)
                reports.append(Report(self.kind, f'integrated command #{self._count}', self.monitor.take()))
            self._target, self._at_limit = q, at_limit
        return q, v, np.zeros_like(q), reports
