"""The soak's checker: commands as ros2_controllers' controllers execute them, judged against the joint limits.

Every command a node sends is checked by ``TrajectoryCheck`` / ``StreamCheck``, written from ros2_controllers'
joint_trajectory_controller (trajectory.cpp, joint_trajectory_controller.cpp) and independent of the nodes'
guard, of ``motion/jtc.py`` and of the simulator's emulation: a trajectory is sampled at the controller's 1 kHz
from its publication as the controller joins it (its header.stamp; the segment under way; before its first
point, a spline from the state before it: the controller's last command, placed one period early as
joint_trajectory_controller.cpp places it), positions within the limits, velocities and accelerations within
them x 1.01 (analytically and as differences over one period), jerk as the change of acceleration per period; a
forward_position stream by its differences over the servo's period.  ``Truth`` is the simulator's physics state,
which each command is also compared with when it was sent.  No ROS here: the checker is tested on its own.
"""
from collections import deque
import math

import numpy as np
import yaml

#: The controller's update period [s]: commands are sampled at this rate, as a 1 kHz controller runs them.
CONTROL_PERIOD = 0.001
#: Relative tolerance of velocity, acceleration and jerk limits (the guard's 1 %); positions: POSITION_EPS.
TOLERANCE = 0.01
POSITION_EPS = 1e-6
#: Truth samples further apart than this [s] (the simulator's physics skipped ahead) judge no command between.
TRUTH_GAP = 0.05


# -- limits -------------------------------------------------------------------------------------------------------

class Limits:
    """Joint limits in chain order: positions and velocities of the URDF, the MoveIt yaml's (tighter) rest."""

    def __init__(self, names, lower, upper, velocity, acceleration, jerk):
        self.names = list(names)
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.velocity, self.acceleration = np.asarray(velocity, float), np.asarray(acceleration, float)
        self.jerk = np.asarray(jerk, float)

    @classmethod
    def from_files(cls, chain, limits_file):
        """Read ``limits_file`` (MoveIt joint_limits.yaml) over ``chain``'s URDF limits; absent: unlimited."""
        with open(limits_file) as f:
            entries = yaml.safe_load(f)['joint_limits']
        n = len(chain.joint_names)
        lower, upper = np.array(chain.lower, float), np.array(chain.upper, float)
        velocity = np.array(chain.velocity_limits, float)
        acceleration, jerk = np.full(n, np.inf), np.full(n, np.inf)
        for i, name in enumerate(chain.joint_names):
            e = entries.get(name, {})
            if e.get('has_position_limits'):
                lower[i], upper[i] = max(lower[i], e['min_position']), min(upper[i], e['max_position'])
            if e.get('has_velocity_limits'):
                velocity[i] = min(velocity[i], e['max_velocity'])
            if e.get('has_acceleration_limits'):
                acceleration[i] = e['max_acceleration']
            if e.get('has_jerk_limits'):
                jerk[i] = e['max_jerk']
        return cls(chain.joint_names, lower, upper, velocity, acceleration, jerk)


# -- joint_trajectory_controller, from trajectory.cpp ----------------------------------------------------------

def segment_coefficients(p0, v0, a0, p1, v1, a1, h):
    """Coefficients c0..c5 (6, n) of joint_trajectory_controller's polynomial from point a to point b, ``h`` s apart.

    ``v0``/``v1`` None: linear; ``a0``/``a1`` None: cubic; all given: quintic (``interpolate_between_points``).
    """
    c = np.zeros((6, len(p0)))
    c[0] = p0
    if v0 is None or v1 is None:
        c[1] = (p1 - p0) / h if h != 0.0 else 0.0
        return c
    c[1] = v0
    if h == 0.0:
        return c
    if a0 is None or a1 is None:
        c[2] = (-3.0 * p0 + 3.0 * p1 - 2.0 * v0 * h - v1 * h) / h ** 2
        c[3] = (2.0 * p0 - 2.0 * p1 + v0 * h + v1 * h) / h ** 3
        return c
    c[2] = 0.5 * a0
    c[3] = (-20.0 * p0 + 20.0 * p1 - 3.0 * a0 * h ** 2 + a1 * h ** 2 - 12.0 * v0 * h - 8.0 * v1 * h) / (2.0 * h ** 3)
    c[4] = (30.0 * p0 - 30.0 * p1 + 3.0 * a0 * h ** 2 - 2.0 * a1 * h ** 2 + 16.0 * v0 * h + 14.0 * v1 * h) / (
        2.0 * h ** 4)
    c[5] = (-12.0 * p0 + 12.0 * p1 - a0 * h ** 2 + a1 * h ** 2 - 6.0 * v0 * h - 6.0 * v1 * h) / (2.0 * h ** 5)
    return c


def polynomial(c, s):
    """Positions, velocities, accelerations (each (T, n)) of coefficients ``c`` (6, n) at local times ``s`` (T,)."""
    s = s[:, None]
    q = c[0] + s * (c[1] + s * (c[2] + s * (c[3] + s * (c[4] + s * c[5]))))
    v = c[1] + s * (2 * c[2] + s * (3 * c[3] + s * (4 * c[4] + s * 5 * c[5])))
    a = 2 * c[2] + s * (6 * c[3] + s * (12 * c[4] + s * 20 * c[5]))
    return q, v, a


class ControllerTrajectory:
    """One trajectory as joint_trajectory_controller samples it (``Trajectory::sample``), on absolute times.

    ``start``: its header.stamp [s] (the caller puts the update that took it for a zero stamp); ``times`` (K,),
    ``positions`` (K, n), ``velocities``/``accelerations`` (K, n) or None; ``before``: the state (q, v, a) the
    controller set before it (``state_before_traj_msg_``), placed at ``before_time`` (``time_before_traj_msg_``).
    Before the first point the controller splines from that state to the point; from the first point on it
    runs the message's own segments, and the state before plays no part.
    """

    def __init__(self, start, times, positions, velocities, accelerations, before, before_time):
        self.start = float(start)
        self.times = np.asarray(times, float)
        self.positions = np.asarray(positions, float)
        self.velocities = None if velocities is None else np.asarray(velocities, float)
        self.accelerations = None if accelerations is None else np.asarray(accelerations, float)
        self.before = tuple(np.asarray(x, float) for x in before)
        self.before_time = float(before_time)
        self.points_at = self.start + self.times
        self._lead_in = self._first_segment()
        self._segments = [self._segment(i) for i in range(len(self.times) - 1)]

    @property
    def end(self):
        return float(self.points_at[-1])

    def _point(self, k):
        v = None if self.velocities is None else self.velocities[k]
        a = None if self.accelerations is None else self.accelerations[k]
        return self.positions[k], v, a

    def _first_segment(self):
        """From the state before to the first point (velocities and accelerations as JTC resizes), or None.

        None when the first point is not after the state before: the controller never samples that segment.
        """
        p1, v1, a1 = self._point(0)
        q, v, a = self.before
        h = self.points_at[0] - self.before_time
        if not h > 0.0:
            return None
        return segment_coefficients(q, None if v1 is None else v, None if a1 is None else a, p1, v1, a1, h), h

    def _segment(self, i):
        p0, v0, a0 = self._point(i)
        p1, v1, a1 = self._point(i + 1)
        h = self.times[i + 1] - self.times[i]
        return segment_coefficients(p0, v0, a0, p1, v1, a1, h), h

    def sample(self, t):
        """(q, v, a), each (T, n), the controller's output at absolute times ``t`` (T,).

        Before the state before: that state; before the first point: the spline from the state before; between
        two points: their polynomial, the elapsed time clamped to the segment (past its end JTC takes it
        linear: the end point); from the last point on: the last point held (velocities and accelerations of
        the point, zero where absent).
        """
        t = np.asarray(t, float)
        n = self.positions.shape[1]
        q, v, a = np.zeros((len(t), n)), np.zeros((len(t), n)), np.zeros((len(t), n))
        seg = np.searchsorted(self.points_at, t, side='right') - 1   # -1: before the first point
        early = (seg < 0) & (t < self.before_time)
        q[early], v[early], a[early] = self.before
        lead_in = (seg < 0) & ~early
        if lead_in.any():
            c, h = self._lead_in
            q[lead_in], v[lead_in], a[lead_in] = polynomial(c, np.clip(t[lead_in] - self.before_time, 0.0, h))
        late = seg >= len(self.times) - 1
        last_q, last_v, last_a = self._point(len(self.times) - 1)
        q[late] = last_q
        v[late] = 0.0 if last_v is None else last_v
        a[late] = 0.0 if last_a is None else last_a
        for k in np.unique(seg[(seg >= 0) & ~late]):
            rows = seg == k
            c, h = self._segments[k]
            q[rows], v[rows], a[rows] = polynomial(c, np.clip(t[rows] - self.points_at[k], 0.0, h))
        return q, v, a


def controller_refusal(names, msg_points, joint_names):
    """Why joint_trajectory_controller refuses a trajectory (its validation), or None.

    ``msg_points``: [(time_from_start, positions, velocities, accelerations)].
    """
    if sorted(names) != sorted(joint_names) or len(set(names)) != len(names):
        return f"joints {names} are not the controller's {joint_names}"
    if not msg_points:
        return 'no points'
    previous = -np.inf
    for i, (t, p, v, a) in enumerate(msg_points):
        if not t > previous:
            return f'time_from_start of point {i} not increasing'
        previous = t
        if len(p) != len(names) or len(v) not in (0, len(names)) or len(a) not in (0, len(names)):
            return f'point {i} has sizes {len(p)}/{len(v)}/{len(a)} for {len(names)} joints'
        if not np.isfinite(np.concatenate([p, v, a])).all():
            return f'point {i} has NaN or inf'
    if len(msg_points[-1][2]) and np.any(np.asarray(msg_points[-1][2]) != 0.0):
        return 'the last point moves'
    return None


class TrajectoryCheck:
    """Checks a node's JointTrajectory stream as a 1 kHz joint_trajectory_controller executes it."""

    def __init__(self, limits, period=CONTROL_PERIOD, tolerance=TOLERANCE):
        self.limits = limits
        self.dt = period
        self.factor = 1.0 + tolerance
        self.previous = None   # the ControllerTrajectory under way
        self.rest = None       # (q, v, a) the controller holds before the first trajectory

    def output_before(self, t):
        """Return the controller's output at ``t`` [s]: the trajectory under way sampled, or the state held."""
        if self.previous is None:
            return self.rest
        q, v, a = self.previous.sample(np.array([t]))
        return q[0], v[0], a[0]

    def check(self, arrival, stamp, names, points):
        """Violations (list of dicts) of a trajectory whose first command is for ``arrival`` [s], and its first output.

        ``stamp``: header.stamp [s] (0: start at the update that takes it); ``points``: [(time_from_start, p, v,
        a)] in the message's joint order.  Times are best counted from a recent epoch: seconds since 1970 in a
        float are a quarter of a microsecond apart, enough to put a spline through a point in the wrong place.
        Returns (violations, (positions, seconds after arrival) of the first point the controller has still to
        reach, or None when the controller refuses the trajectory).

        As joint_trajectory_controller's ``update`` takes a new trajectory (jazzy 4.21 and later, with
        interpolate_from_desired_state or open_loop_control): at the update ``arrival - dt`` it sets the state
        before to its last command (``last_commanded_state_``), which it sampled one period ahead
        (``command_next_``), so the command for ``arrival - dt``, yet places it at the time of the update before
        (``last_commanded_time_``, ``arrival - 2 dt``); from then on it commands the trajectory one period ahead,
        for ``arrival`` first.  A trajectory whose first point lies ahead of its arrival is therefore joined
        with the motion under way shifted by one period; one that starts at a point already passed is not.
        """
        refusal = controller_refusal(list(names), points, self.limits.names)
        if refusal is not None:
            return [{'quantity': 'malformed', 'detail': refusal}], None
        order = [list(names).index(n) for n in self.limits.names]
        times = np.array([p[0] for p in points])
        pos = np.array([p[1] for p in points], float)[:, order]
        vel = np.array([p[2] for p in points], float)[:, order] if all(len(p[2]) for p in points) else None
        acc = np.array([p[3] for p in points], float)[:, order] if vel is not None and all(
            len(p[3]) for p in points) else None
        update = arrival - self.dt
        before = self.output_before(update)
        start = stamp if stamp != 0.0 else update
        trajectory = ControllerTrajectory(start, times, pos, vel, acc, before, update - self.dt)
        ticks = arrival + self.dt * np.arange(int(math.ceil(max(0.0, trajectory.end - arrival) / self.dt)) + 2)
        q, v, a = trajectory.sample(ticks)
        violations = self.violations(np.vstack([before[0], q]), np.vstack([before[1], v]),
                                     np.vstack([before[2], a]), ticks - arrival)
        self.previous = trajectory
        k = min(int(np.searchsorted(trajectory.points_at, arrival)), len(times) - 1)
        return violations, (pos[k], max(0.0, trajectory.points_at[k] - arrival))

    def violations(self, q, v, a, times):
        """Violations of sampled outputs (rows: the state before, then one per tick at ``times`` after arrival)."""
        lim, dt, f = self.limits, self.dt, self.factor
        found = []

        def record(quantity, values, bound, rows_times):
            excess = np.abs(values) - bound
            if (excess > 0).any():
                row, j = np.unravel_index(np.argmax(excess), excess.shape)
                found.append({'quantity': quantity, 'joint': lim.names[j], 'value': float(values[row, j]),
                              'limit': float(bound[j]), 'time': float(rows_times[row])})
        outside = np.maximum(lim.lower - POSITION_EPS - q[1:], q[1:] - lim.upper - POSITION_EPS)
        if (outside > 0).any():
            row, j = np.unravel_index(np.argmax(outside), outside.shape)
            found.append({'quantity': 'position', 'joint': lim.names[j], 'value': float(q[1 + row, j]),
                          'limit': float(lim.upper[j] if q[1 + row, j] > lim.upper[j] else lim.lower[j]),
                          'time': float(times[row])})
        record('velocity', v[1:], lim.velocity * f, times)
        record('acceleration', a[1:], lim.acceleration * f, times)
        record('velocity over one period', np.diff(q, axis=0) / dt, lim.velocity * f, times)
        record('acceleration over one period', np.diff(v, axis=0) / dt, lim.acceleration * f, times)
        record('jerk over one period', np.diff(a, axis=0) / dt, lim.jerk * f, times)
        return found


class StreamCheck:
    """Checks a forward_position command stream: positions, and its differences as the controller takes them.

    The controller jumps to each command however late it came, so a stream is judged command by command,
    each one period of motion: its step over one period, and the changes of those steps (acceleration, jerk)
    over one period.  A sender starved of CPU must then move the arm slower in real time, never catch up: a
    late command that covers the periods missed is a step of several periods' motion in one, and is flagged.
    After a pause the controller held the last command, so the first command after it is a step from that.
    """

    def __init__(self, limits, period, tolerance=TOLERANCE):
        self.limits = limits
        self.period = period
        self.factor = 1.0 + tolerance
        self.history = deque(maxlen=2)   # (sent, q) of the last two commands, newest last
        self.last_sent = None
        self.velocity = self.acceleration = None   # of the stream, at the last command

    def check(self, sent, q, held=None):
        """Violations of command ``q`` sent at ``sent`` [s]; ``held``: the target before the first command."""
        lim, T, f = self.limits, self.period, self.factor
        q = np.asarray(q, float)
        if len(q) != len(lim.names) or not np.isfinite(q).all():
            self.last_sent = sent
            return [{'quantity': 'malformed', 'detail': f'{len(q)} values, finite: {bool(np.isfinite(q).all())}'}]
        if not self.history:   # the controller holds its target: the arm rests there
            self.history.append((sent - T, np.asarray(held, float)))
        self.last_sent = sent
        self.history.append((sent, q))
        found = []
        outside = np.maximum(lim.lower - POSITION_EPS - q, q - lim.upper - POSITION_EPS)
        if (outside > 0).any():
            j = int(np.argmax(outside))
            found.append({'quantity': 'position', 'joint': lim.names[j], 'value': float(q[j]),
                          'limit': float(lim.upper[j] if q[j] > lim.upper[j] else lim.lower[j]), 'time': sent})
        step = self.history[-1][1] - self.history[-2][1]
        velocity = step / T
        checks = [('velocity over one period', velocity, lim.velocity)]
        if self.velocity is not None:
            acceleration = (velocity - self.velocity) / T
            checks.append(('acceleration over one period', acceleration, lim.acceleration))
            if self.acceleration is not None:
                checks.append(('jerk over one period', (acceleration - self.acceleration) / T, lim.jerk))
            self.acceleration = acceleration
        self.velocity = velocity
        for quantity, value, bound in checks:
            excess = np.abs(value) - bound * f
            if (excess > 0).any():
                j = int(np.argmax(excess))
                found.append({'quantity': quantity, 'joint': lim.names[j], 'value': float(value[j]),
                              'limit': float(bound[j]), 'time': sent})
        return found


class Truth:
    """The simulator's physics state over time (stamps on the ROS clock), interpolated."""

    def __init__(self):
        self.stamps, self.positions = [], []

    def add(self, stamp, q):
        self.stamps.append(stamp)
        self.positions.append(q)

    def freeze(self):
        order = np.argsort(self.stamps, kind='stable')
        self._t = np.asarray(self.stamps, float)[order]
        self._q = np.asarray(self.positions, float)[order]

    def at(self, t):
        """Positions at ``t`` [s] (linear between samples; None outside the recorded span or in a gap)."""
        k = int(np.searchsorted(self._t, t))
        if k == 0 or k >= len(self._t) or self._t[k] - self._t[k - 1] > TRUTH_GAP:
            return None
        w = (t - self._t[k - 1]) / max(self._t[k] - self._t[k - 1], 1e-9)
        return (1 - w) * self._q[k - 1] + w * self._q[k]
