"""The ros2_control controllers the simulated arm emulates, and a witness of what they executed, without ROS.

A real ``joint_trajectory_controller`` checks neither velocity nor timing, and
``forward_command_controller``s pass any value of the right length to the
hardware.  The simulator keeps exactly that behaviour, so tests see what a
real arm would do with a command; but a ``LimitMonitor`` watches every
reference the physics executes and reports what went beyond the position,
velocity or acceleration limits, so tests can assert that nothing did.

Each controller gives, at every physics step, the servo command (position,
velocity, acceleration) for that step, computed on the physics clock as a real
controller computes it on its update loop's fixed period (sampling at the
jittery wall-clock time of a non-real-time thread would shake a stiff servo):
the trajectory controller commands its splines one period ahead, the state
they reach at the step's end.  Commands arrive on the ROS thread and are
taken over by the physics thread under a lock.
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

    ``time`` [s]: for a trajectory, the time its command samples, after the
    trajectory's start; for a stream command, when it was sent (system clock);
    for an integrated velocity target, physics time.
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
    """joint_trajectory_controller: the trajectory's splines from the state before it, commanded one period ahead.

    Each ``update`` does what joint_trajectory_controller.cpp's does (jazzy branch).  A trajectory
    arrived since the update before is taken over, its first sample setting the state before it::

        if (params_.interpolate_from_desired_state || params_.open_loop_control)
          current_trajectory_->set_point_before_trajectory_msg(last_commanded_time_, last_commanded_state_, ...);
        else
          current_trajectory_->set_point_before_trajectory_msg(time, state_current_, ...);
        traj_time_ = time;

    so with ``open_loop`` (``open_loop_control``; placed at ``last_commanded_time_`` since 4.21, the Jazzy
    and Kilted releases) the last command (position, velocity, acceleration) placed at the previous
    update's time (at this update's before any update), else the measured state (position, velocity) at
    this update's.  Then the reference is the trajectory at the update's time, and the command, which the
    physics step after it runs to, the trajectory one period later::

        current_trajectory_->sample(traj_time_, interpolation_method_, state_desired_, ...);
        current_trajectory_->sample(traj_time_ + update_period_, interpolation_method_, command_next_, ...);
        last_commanded_state_ = command_next_;
        last_commanded_time_ = time;

    The last command is therefore one period ahead of the time it is placed at: a trajectory that
    starts before its first point continues the motion under way shifted by one period.

    Sampled as trajectory.cpp's ``Trajectory::sample``: a zero ``header.stamp`` starts it at the update that
    takes it; before its first point, the segment from the state before to that point; later, the segment
    between two of its points (no matter where the arm is: where the trajectory differs from the motion
    under way, the command steps); from its last point on, that point (its velocities and accelerations,
    zero where absent), held until the next trajectory.

    A trajectory stamped so early that it ends before it arrives is refused on arrival by the controller
    (``ends_in_the_past``), not here.  The splines are evaluated ``BLOCK_STEPS`` updates at a time (one
    vectorised evaluation instead of one per update) and each command is checked: positions, the splines'
    velocities and accelerations, and the command's own differences from the one before (position change /
    period, velocity change / period), which no continuous spline makes larger than its peaks but which
    see every step the physics is commanded: at a join, or at the points of a linear interpolation
    (positions only).  A violation's time is the command's sample time after the trajectory's stamp.
    """

    kind = 'joint_trajectory'

    def __init__(self, q0, monitor, open_loop=True):
        self.monitor = monitor
        self.open_loop = open_loop
        self._lock = threading.Lock()
        self._pending = deque()  # (trajectory, start, label, arrival), in the order they arrived
        #: (sampler, its time 0, label, the trajectory's stamp (reports count from it), its last point (q, v, a))
        self._active = None
        #: (sample times after the sampler's 0, positions, velocities, accelerations: BLOCK_STEPS + 1 rows, the
        #: reference of update k in row k and its command in row k + 1; then per update k, its command's position
        #: and velocity steps / period and whether to check it)
        self._block = None
        rest = (np.array(q0, float), np.zeros(len(q0)), np.zeros(len(q0)))
        #: The last update's command (q, v, a), ``last_commanded_state_``: the trajectory one period ahead.
        self.output = rest
        #: The trajectory at the last update's time (q, v, a), ``state_desired_``: controller_state's reference.
        self.reference = rest
        self._updated = None  # the time of the previous update: ``last_commanded_time_``

    def warm_up(self):
        """Compile (or load from the cache) the spline kernels now, before the physics runs.

        Loaded at the first trajectory, they held the physics thread for seconds
        on a busy machine (numba's start-up), with no joint_states meanwhile:
        the first command a client sent was never executed.
        """
        n = len(self.output[0])
        ahead = jtc.Trajectory(np.array([0.01, 0.02]), np.zeros((2, n)), np.zeros((2, n)), np.zeros((2, n)))
        jtc.SplineSampler(self.output[0], np.zeros(n), ahead).evaluate(np.array([0.0, 0.015, 0.03]))

    def load(self, trajectory, start, label, arrival=None):
        """Execute ``trajectory`` (jtc.Trajectory, controller order) from ``start`` (ROS thread).

        ``start``: the controller-clock time of the trajectory's time 0 (its
        ``header.stamp``), possibly in the past; None (a zero stamp): on arrival.
        ``arrival``: the controller-clock time it arrived at; the controller takes
        it over at its first update from then on (None: the next update), so a
        controller running behind the clock takes over the trajectories of a
        stream one after the other, as they arrived; of several arrived within
        one period, the newest.
        """
        with self._lock:
            self._pending.append((trajectory, start, label, -np.inf if arrival is None else arrival))

    def update(self, now, dt, measured=None):
        """Return the command (q, v, a) of the update at ``now`` (period ``dt``) and Reports of ended trajectories.

        The command is the trajectory at ``now + dt``, the state the physics step that follows runs to.
        ``measured``: the joints' (positions, velocities) now, the state before a new trajectory in closed loop.
        """
        reports = []
        with self._lock:
            arrived = _arrived(self._pending, 3, now + 0.5 * dt)
        if arrived:
            trajectory, start, label, _ = arrived[-1]   # the newest of those arrived preempts the others
            start = now if start is None else start
            joined = self._aligned(trajectory, now, start, *self._state_before(now, measured))
            reports += self._report()
            self._active, self._block = joined + (label, start, _last_point(trajectory)), None
        self._updated = now
        if self._active is None:  # the last point of the trajectory before (or the start) held
            self.reference = self.output
            return self.output + (reports,)
        _, begin, _, origin, _ = self._active
        block, row = self._row(now - begin, dt)
        times, q, v, a = block[:4]
        self.reference = (q[row], v[row], a[row])
        self.output = (q[row + 1], v[row + 1], a[row + 1])
        if block[6][row]:
            t = now + dt - origin
            self.monitor.check(t, *self.output)
            self.monitor.check(t, self.output[0], block[4][row], block[5][row])
        if times[row + 1] >= self._active[0].end_time:
            reports += self._report()
            self._active = None
        return self.output + (reports,)

    def _state_before(self, now, measured):
        """Return the state (q, v, a) a new trajectory starts from and its time.

        Open loop: the last command at the previous update's time (``last_commanded_state_`` at
        ``last_commanded_time_``); closed loop: the measured state, now.
        """
        if self.open_loop or measured is None:
            return self.output, now if self._updated is None else min(self._updated, now)
        q, v = measured
        return (np.array(q, float), np.array(v, float), np.zeros(len(q))), now

    def _aligned(self, trajectory, now, start, state, at):
        """(sampler, its time 0) of ``trajectory`` stamped ``start``, joined at ``now`` from ``state`` at ``at``.

        The sampler covers ``now`` and every later time: from the state before when ``now`` is before the
        first point, else from the last point at or before ``now``.
        """
        t = trajectory
        past = int(np.searchsorted(start + t.times, now, side='right'))  # points at or before now
        if past == 0:  # from the state before, at its time, to the first point at its stamped time
            q, v, a = state
            ahead = jtc.Trajectory(t.times + (start - at), t.positions, t.velocities, t.accelerations)
            return jtc.SplineSampler(q, v, ahead, a0=a), at
        k = past - 1
        if past == len(t.times):  # all played out: a sampler that ends at once, so the last point is held
            return jtc.SplineSampler(t.positions[k], None, jtc.Trajectory(np.zeros(1), t.positions[k:])), now
        rest = jtc.Trajectory(t.times[k + 1:] - t.times[k], t.positions[k + 1:], _tail(t.velocities, k + 1),
                              _tail(t.accelerations, k + 1))
        zero = np.zeros(t.positions.shape[1])
        v0 = zero if t.velocities is None else t.velocities[k]
        a0 = zero if t.accelerations is None else t.accelerations[k]
        return jtc.SplineSampler(t.positions[k], v0, rest, a0=a0), start + t.times[k]

    def _row(self, t, dt):
        """Return the block of evaluated samples whose row holds the reference at sampler time ``t``, and that row.

        A new block is evaluated when needed: ``BLOCK_STEPS + 1`` samples ``dt`` apart from ``t``, those at or
        after the sampler's end the trajectory's last point as the controller holds it.
        """
        if self._block is not None:
            row = int(round((t - self._block[0][0]) / dt))
            if 0 <= row < BLOCK_STEPS:
                return self._block, row
        sampler, last = self._active[0], self._active[4]
        times = t + dt * np.arange(BLOCK_STEPS + 1)
        q, v, a, _ = sampler.evaluate(times)
        held = times >= sampler.end_time
        q[held], v[held], a[held] = last
        stepped = (np.diff(q[1:], axis=0, prepend=self.output[0][None]) / dt,
                   np.diff(v[1:], axis=0, prepend=self.output[1][None]) / dt)
        check = self.monitor.exceeded(q[1:], v[1:], a[1:]) | self.monitor.exceeded(q[1:], *stepped)
        self._block = (times, q, v, a) + stepped + (check,)
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


def _last_point(trajectory):
    """Return the state (q, v, a) the controller holds from a trajectory's last point on (absent fields: zero)."""
    q = trajectory.positions[-1]
    zero = np.zeros_like(q)
    return (q, zero if trajectory.velocities is None else trajectory.velocities[-1],
            zero if trajectory.accelerations is None else trajectory.accelerations[-1])


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
