"""The joint_trajectory_controller contract (ros2_controllers, jazzy and later), without ROS.

``validate`` refuses what the controller refuses, with its reasons; a
``SplineSampler`` interpolates as the controller does: from the state at the
start of the trajectory (position, velocity, acceleration) through each point,
quintic where points carry accelerations, cubic where they carry velocities,
linear otherwise, and it holds the last point after the end.  It returns the
derivatives too (velocity, acceleration, jerk), so the command guard checks
limits on exactly the polynomials the controller will run.
"""
from dataclasses import dataclass

from numba import njit
import numpy as np

from .limits import POSITION_EPS


@dataclass
class Trajectory:
    """A trajectory in the controller's joint order: times (K,) and (K, n) arrays; None = field absent."""

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray = None
    accelerations: np.ndarray = None


def validate(joint_names, points, controller_joints, lower=None, upper=None, allow_partial=False):
    """Reasons the controller would reject a trajectory message ([] = accepted).

    ``points``: sequence of (time_from_start [s], positions, velocities, accelerations, effort) lists.
    ``lower``/``upper`` (controller order) add this package's stricter check that
    no position leaves the joint limits.  The values are checked as arrays, not point by point: a
    simulated controller validates a 100-point trajectory every few milliseconds, beside its physics.
    """
    reasons = []
    if not joint_names:
        return ['empty joint_names']
    if len(set(joint_names)) != len(joint_names):
        reasons.append('duplicate joint names')
    unknown = [n for n in joint_names if n not in controller_joints]
    if unknown:
        reasons.append(f"incoming joint(s) {', '.join(unknown)} don't match the controller's joints")
    if not allow_partial and len(joint_names) != len(controller_joints):
        reasons.append(f'joints_names has {len(joint_names)} joints, the controller {len(controller_joints)}; '
                       'partial joint goals are not allowed')
    if not points:
        return reasons + ['empty trajectory (no points)']
    times = np.array([point[0] for point in points], float)
    increasing = times > np.concatenate(([-np.inf], times[:-1]))   # NaN fails, and so does the point after it
    per_point = [(i, f'time_from_start of point {i} is not strictly increasing') for i in np.flatnonzero(~increasing)]
    per_point += _shape_reasons(points, len(joint_names))
    per_point += [(i, f'point {i} has NaN or inf values') for i in _non_finite_points(points)]
    reasons += [text for _, text in sorted(per_point, key=lambda item: item[0])]   # point by point, as JTC lists them
    last_vel = points[-1][2]
    if len(last_vel) and np.any(np.asarray(last_vel) != 0.0):
        reasons.append('the last point has non-zero velocities')
    if lower is not None and not reasons:
        order = [list(controller_joints).index(name) for name in joint_names]
        low, high = np.asarray(lower)[order] - POSITION_EPS, np.asarray(upper)[order] + POSITION_EPS
        positions = np.array([point[1] for point in points], float)
        outside = ((positions < low) | (positions > high)).any(axis=1)
        reasons += [f'point {i} has positions outside the joint limits' for i in np.flatnonzero(outside)]
    return reasons


def _shape_reasons(points, n):
    """Return (point index, reason) of the field lengths refused (velocities, accelerations: n or none)."""
    reasons = []
    for i, (_, pos, vel, acc, effort) in enumerate(points):
        if len(pos) != n:
            reasons.append((i, f'point {i} has {len(pos)} positions for {n} joints'))
        for field, values in (('velocities', vel), ('accelerations', acc)):
            if len(values) not in (0, n):
                reasons.append((i, f'point {i} has {len(values)} {field} for {n} joints'))
        if len(effort):
            reasons.append((i, f'point {i} has effort, which a position-controlled joint cannot take'))
    return reasons


def _non_finite_points(points):
    """Return the indices of the points with a NaN or infinite position, velocity or acceleration, in order."""
    bad = np.zeros(len(points), bool)
    for k in (1, 2, 3):
        rows = [point[k] for point in points]
        if len({len(row) for row in rows}) == 1:   # as a controller is sent: one (K, n) array per field
            bad |= ~np.isfinite(np.array(rows, float)).all(axis=1)
        else:
            bad |= [not np.isfinite(np.asarray(row, float)).all() for row in rows]
    return np.flatnonzero(bad)


def reorder(joint_names, points, controller_joints):
    """Return a validated message's points as a Trajectory in controller joint order."""
    order = [joint_names.index(name) for name in controller_joints]
    times = np.array([p[0] for p in points], float)
    positions = np.array([p[1] for p in points], float)[:, order]

    def field(k):
        if any(len(p[k]) == 0 for p in points):
            return None
        return np.array([p[k] for p in points], float)[:, order]
    return Trajectory(times, positions, field(2), field(3))


class SplineSampler:
    """Samples a trajectory started at time 0 from state (q0, v0, a0) as the controller interpolates it."""

    def __init__(self, q0, v0, trajectory, a0=None):
        t = trajectory
        q0 = np.ascontiguousarray(q0, float)   # the kernels' argument types stay those the warm-up loaded
        a0 = np.zeros_like(q0) if a0 is None else np.ascontiguousarray(a0, float)
        self.times = np.concatenate(((0.0,), np.asarray(t.times, float)))
        self.positions = np.vstack([q0, t.positions])
        self.velocities = None if t.velocities is None else np.vstack([v0, t.velocities])
        self.accelerations = None if t.accelerations is None else np.vstack([a0, t.accelerations])
        if not np.all(self.times[1:] >= self.times[:-1]):
            raise ValueError('trajectory times must be increasing, finite and not negative')
        v0 = np.zeros_like(q0) if v0 is None else np.ascontiguousarray(v0, float)
        #: Polynomial coefficients c0..c5 (segments, 6, n) of each segment in its local time.
        self.coefficients = spline_coefficients(q0, v0, a0, *arrays_of(t))
        self._end = np.ascontiguousarray(self.positions[-1])   # held after the end

    @property
    def end_time(self):
        return float(self.times[-1])

    def sample(self, t):
        """(positions, velocities) at time t after the start."""
        pos, vel, _, _ = self.evaluate(np.array([t], float))
        return pos[0], vel[0]

    def evaluate(self, times):
        """Positions, velocities, accelerations and jerks (each (T, n)) at ``times`` (T,) after the start.

        Within a segment these are the derivatives of its polynomial; a segment
        starts at its first point (right limit).  After the end the last point is held.
        """
        out = _evaluate(self.times, self.coefficients, self._end, np.ascontiguousarray(times, float).reshape(-1))
        return out[0], out[1], out[2], out[3]


#: Interpolation of a trajectory: positions only, with velocities, with accelerations too.
LINEAR, CUBIC, QUINTIC = 0, 1, 2


def arrays_of(trajectory):
    """Return (times, positions, velocities, accelerations, mode) of a Trajectory for the kernels (absent: no rows)."""
    positions = np.ascontiguousarray(trajectory.positions, float)
    absent = np.zeros((0, positions.shape[1]))
    mode = LINEAR if trajectory.velocities is None else CUBIC if trajectory.accelerations is None else QUINTIC
    return (np.ascontiguousarray(trajectory.times, float), positions,
            absent if trajectory.velocities is None else np.ascontiguousarray(trajectory.velocities, float),
            absent if trajectory.accelerations is None else np.ascontiguousarray(trajectory.accelerations, float),
            mode)


@njit(cache=True)
def spline_coefficients(q0, v0, a0, times, p, v, a, mode):
    """Polynomial coefficients c0..c5 (segments, 6, n) from the start state at 0 through the points at ``times``."""
    c = np.zeros((len(times), 6, len(q0)))
    for k in range(len(times)):
        h = times[k] - (times[k - 1] if k else 0.0)
        if not h > 0.0:
            h = 1.0  # a zero-length segment (first point at 0) is never sampled
        for j in range(len(q0)):
            p0, p1 = p[k - 1, j] if k else q0[j], p[k, j]
            c[k, 0, j] = p0
            if mode == LINEAR:
                c[k, 1, j] = (p1 - p0) / h
                continue
            v0_, v1 = v[k - 1, j] if k else v0[j], v[k, j]
            c[k, 1, j] = v0_
            if mode == CUBIC:
                c[k, 2, j] = (3 * (p1 - p0) - (2 * v0_ + v1) * h) / h ** 2
                c[k, 3, j] = (2 * (p0 - p1) + (v0_ + v1) * h) / h ** 3
                continue
            a0_, a1 = a[k - 1, j] if k else a0[j], a[k, j]
            c[k, 2, j] = 0.5 * a0_
            c[k, 3, j] = (20 * (p1 - p0) - (8 * v1 + 12 * v0_) * h - (3 * a0_ - a1) * h ** 2) / (2 * h ** 3)
            c[k, 4, j] = (30 * (p0 - p1) + (14 * v1 + 16 * v0_) * h + (3 * a0_ - 2 * a1) * h ** 2) / (2 * h ** 4)
            c[k, 5, j] = (12 * (p1 - p0) - 6 * (v1 + v0_) * h - (a0_ - a1) * h ** 2) / (2 * h ** 5)
    return c


@njit(cache=True)
def segment_state(c, k, j, s):
    """(position, velocity, acceleration, jerk) of joint j, ``s`` after the start of segment k."""
    pos = c[k, 0, j] + s * (c[k, 1, j] + s * (c[k, 2, j] + s * (c[k, 3, j] + s * (c[k, 4, j] + s * c[k, 5, j]))))
    vel = c[k, 1, j] + s * (2 * c[k, 2, j] + s * (3 * c[k, 3, j] + s * (4 * c[k, 4, j] + s * 5 * c[k, 5, j])))
    acc = 2 * c[k, 2, j] + s * (6 * c[k, 3, j] + s * (12 * c[k, 4, j] + s * 20 * c[k, 5, j]))
    return pos, vel, acc, 6 * c[k, 3, j] + s * (24 * c[k, 4, j] + s * 60 * c[k, 5, j])


@njit(cache=True)
def segment_at(knots, t):
    """Index of the segment that holds time t: the last knot at or before t, within [0, segments - 1]."""
    return min(max(np.searchsorted(knots, t, side='right') - 1, 0), len(knots) - 2)


@njit(cache=True)
def _evaluate(knots, c, last, times):
    out = np.zeros((4, len(times), c.shape[2]))
    for i in range(len(times)):
        t = times[i]
        if t >= knots[-1]:
            out[0, i] = last
            continue
        k = segment_at(knots, t)
        s = max(t, knots[0]) - knots[k]
        for j in range(c.shape[2]):
            out[0, i, j], out[1, i, j], out[2, i, j], out[3, i, j] = segment_state(c, k, j, s)
    return out
