"""Timing a joint-space move for a joint_trajectory_controller.

A move from (q_start, v_start) to rest at q_goal follows a quintic: with
v_start = 0 it is the minimum-jerk profile s(t) = 10 tau^3 - 15 tau^4 + 6 tau^5,
zero velocity and acceleration at both ends, peak velocity 15/8 |dq| / T.
Starting from the arm's current velocity lets a stream of targets re-target
a moving arm smoothly instead of stopping it at every message.

The duration T is the smallest that keeps every joint within
``velocity_scaling`` times its velocity limit, and at least ``min_duration``.
A rest-to-rest move is a convex combination of its end points, so it cannot
leave the joint limits; a move from a non-zero velocity can overshoot, and
where it would leave the limits the rest-to-rest move is used instead.
"""
from dataclasses import dataclass

import numpy as np

#: Peak of ds/dtau for the minimum-jerk profile.
PEAK_VELOCITY_FACTOR = 15.0 / 8.0
#: Samples per move used to check velocity limits and overshoot.
CHECK_SAMPLES = 32


@dataclass
class TimedPath:
    """Samples of a move: times (K,) after the start, positions/velocities/accelerations (K, n)."""

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray

    @property
    def duration(self):
        return float(self.times[-1])


def quintic(p0, v0, a0, p1, v1, a1, h, s):
    """Position, velocity and acceleration at time s of the quintic from (p0, v0, a0) to (p1, v1, a1) in h."""
    c3 = (20 * (p1 - p0) - (8 * v1 + 12 * v0) * h - (3 * a0 - a1) * h ** 2) / (2 * h ** 3)
    c4 = (30 * (p0 - p1) + (14 * v1 + 16 * v0) * h + (3 * a0 - 2 * a1) * h ** 2) / (2 * h ** 4)
    c5 = (12 * (p1 - p0) - 6 * (v1 + v0) * h - (a0 - a1) * h ** 2) / (2 * h ** 5)
    pos = p0 + s * (v0 + s * (0.5 * a0 + s * (c3 + s * (c4 + s * c5))))
    vel = v0 + s * (a0 + s * (3 * c3 + s * (4 * c4 + s * 5 * c5)))
    acc = a0 + s * (6 * c3 + s * (12 * c4 + s * 20 * c5))
    return pos, vel, acc


def move_duration(q_start, q_goal, velocity_limits, velocity_scaling=1.0, min_duration=0.0):
    """Shortest duration of the rest-to-rest profile that respects the scaled velocity limits."""
    if not 0.0 < velocity_scaling <= 1.0:
        raise ValueError(f'velocity_scaling must be in (0, 1], got {velocity_scaling}')
    delta = np.abs(np.asarray(q_goal, float) - np.asarray(q_start, float))
    per_joint = PEAK_VELOCITY_FACTOR * delta / (velocity_scaling * np.asarray(velocity_limits, float))
    return float(max(min_duration, per_joint.max(initial=0.0)))


def plan_move(q_start, q_goal, velocity_limits, velocity_scaling=1.0, min_duration=0.1, sample_period=0.05,
              v_start=None, lower=None, upper=None):
    """Sample the move; the first sample is at a positive time, the last at rest on q_goal exactly."""
    q_start = np.asarray(q_start, float)
    q_goal = np.asarray(q_goal, float)
    limit = velocity_scaling * np.asarray(velocity_limits, float)
    duration = move_duration(q_start, q_goal, velocity_limits, velocity_scaling, min_duration)
    if duration <= 0.0:
        raise ValueError('a move needs a positive duration: set min_duration > 0')
    v0 = np.zeros_like(q_start) if v_start is None else np.clip(np.asarray(v_start, float), -limit, limit)
    if np.any(v0):
        duration, inside = _fit_moving_start(q_start, v0, q_goal, limit, duration, lower, upper)
        if not inside:
            v0 = np.zeros_like(q_start)
    count = max(1, int(np.ceil(duration / sample_period)))
    times = np.linspace(duration / count, duration, count)
    zero = np.zeros_like(q_start)
    pos, vel, acc = quintic(q_start, v0, zero, q_goal, zero, zero, duration, times[:, None])
    pos[-1] = q_goal  # exactly the solution, not a rounding of it
    vel[-1] = 0.0
    acc[-1] = 0.0
    return TimedPath(times, pos, vel, acc)


def _fit_moving_start(q0, v0, q1, limit, duration, lower, upper):
    """Lengthen a move from velocity v0 (20 % steps) until its peak velocity is within the limit.

    Returns the duration and whether the move stays within [lower, upper] (None: no position limits).
    """
    zero = np.zeros_like(q0)
    for _ in range(30):
        grid = np.linspace(0.0, duration, CHECK_SAMPLES)[:, None]
        pos, vel, _ = quintic(q0, v0, zero, q1, zero, zero, duration, grid)
        if np.all(np.abs(vel) <= limit * (1 + 1e-9)):
            break
        duration *= 1.2
    inside = lower is None or bool(np.all(pos >= lower) and np.all(pos <= upper))
    return duration, inside
