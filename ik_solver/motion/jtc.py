"""The joint_trajectory_controller contract (ros2_controllers, jazzy and later), without ROS.

``validate`` refuses what the controller refuses, with its reasons; a
``SplineSampler`` interpolates as the controller does: from the state at the
start of the trajectory through each point, quintic where points carry
accelerations, cubic where they carry velocities, linear otherwise, and it
holds the last point after the end.
"""
from dataclasses import dataclass

import numpy as np

from .timing import quintic


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
    no position leaves the joint limits.
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
    n = len(joint_names)
    previous = -np.inf
    for i, (t, pos, vel, acc, effort) in enumerate(points):
        if not t > previous:
            reasons.append(f'time_from_start of point {i} is not strictly increasing')
        previous = t
        if len(pos) != n:
            reasons.append(f'point {i} has {len(pos)} positions for {n} joints')
        for field, values in (('velocities', vel), ('accelerations', acc)):
            if len(values) not in (0, n):
                reasons.append(f'point {i} has {len(values)} {field} for {n} joints')
        if len(effort):
            reasons.append(f'point {i} has effort, which a position-controlled joint cannot take')
        if not np.isfinite(np.concatenate([np.asarray(pos, float), np.asarray(vel, float),
                                           np.asarray(acc, float)])).all():
            reasons.append(f'point {i} has NaN or inf values')
    last_vel = points[-1][2]
    if len(last_vel) and np.any(np.asarray(last_vel) != 0.0):
        reasons.append('the last point has non-zero velocities')
    if lower is not None and not reasons:
        order = [list(controller_joints).index(name) for name in joint_names]
        low, high = np.asarray(lower)[order], np.asarray(upper)[order]
        for i, (_, pos, _, _, _) in enumerate(points):
            if np.any(np.asarray(pos) < low - 1e-9) or np.any(np.asarray(pos) > high + 1e-9):
                reasons.append(f'point {i} has positions outside the joint limits')
    return reasons


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
    """Samples a trajectory started at time 0 from state (q0, v0)."""

    def __init__(self, q0, v0, trajectory):
        t = trajectory
        n = len(q0)
        self.times = np.concatenate([[0.0], t.times])
        self.positions = np.vstack([q0, t.positions])
        self.velocities = None if t.velocities is None else np.vstack([v0, t.velocities])
        self.accelerations = None if t.accelerations is None else np.vstack([np.zeros(n), t.accelerations])

    @property
    def end_time(self):
        return float(self.times[-1])

    def sample(self, t):
        """(positions, velocities) at time t after the start."""
        if t >= self.times[-1]:
            v = np.zeros(self.positions.shape[1])
            return self.positions[-1].copy(), v
        k = max(0, int(np.searchsorted(self.times, t, side='right')) - 1)
        t0, t1 = self.times[k], self.times[k + 1]
        h = t1 - t0
        s = (t - t0)
        p0, p1 = self.positions[k], self.positions[k + 1]
        if self.velocities is None:
            return p0 + (p1 - p0) * s / h, (p1 - p0) / h
        v0, v1 = self.velocities[k], self.velocities[k + 1]
        if self.accelerations is None:
            return _cubic(p0, v0, p1, v1, h, s)
        pos, vel, _ = quintic(p0, v0, self.accelerations[k], p1, v1, self.accelerations[k + 1], h, s)
        return pos, vel


def _cubic(p0, v0, p1, v1, h, s):
    a2 = (3 * (p1 - p0) - (2 * v0 + v1) * h) / h ** 2
    a3 = (2 * (p0 - p1) + (v0 + v1) * h) / h ** 3
    return p0 + v0 * s + a2 * s ** 2 + a3 * s ** 3, v0 + 2 * a2 * s + 3 * a3 * s ** 2
