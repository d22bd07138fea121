"""Timing a dense joint path (a Cartesian line solved point by point) within the limits, ending at rest.

Ruckig cannot (no intermediate waypoints in the community version), so
``plan_joint_path`` builds two timings and keeps the faster: one jerk-limited
Ruckig profile of the path parameter (arc length in joint space) within bounds
that hold along the whole path, the joints on the cubic Hermite curve through
the points (exact for a straight joint line); and a forward/backward pass on
the path speed within velocity and acceleration limits (better where one spot
of the path is much slower than the rest).  Each then gets one uniform time
scaling measured on the controller's own quintics, which is exact: scaling
time by c divides velocity by c, acceleration by c^2 and jerk by c^3.
"""
import numpy as np
import ruckig

from .jtc import SplineSampler, Trajectory
from .limits import POSITION_EPS
from .timing import calculate, check_period, check_positions, check_start, MAX_POINTS, planning_jerk, PlanningError, \
    Profiles, SAMPLE_PERIOD, sample_times, TimedPath

#: A joint path starts at rest: |v| and |a| below this fraction of their limits.
REST_FRACTION = 1e-3
#: A timed joint path uses at most this fraction of each limit (the rest is margin for rounding).
PATH_LIMIT_FRACTION = 0.98
#: Sub-samples per segment when measuring a joint path's peaks.
PATH_SUBSAMPLES = 24


def plan_joint_path(start, waypoints, limits, sample_period=SAMPLE_PERIOD):
    """Time the joint path start.position -> waypoints (K, n) within the limits, ending at rest.

    ``start`` must be at rest (see REST_FRACTION), else PlanningError says so.  A waypoint equal to its
    predecessor is skipped.  Points closer than ``sample_period`` in time are
    kept; longer segments get intermediate points on the same quintic.
    """
    q0, v0, a0 = check_start(start, limits)
    _check_at_rest(v0, a0, limits)
    check_period(sample_period)
    path = _path_points(q0, waypoints, limits)
    if len(path) == 1:
        return TimedPath(np.array([sample_period]), q0[None].copy(), np.zeros((1, len(q0))), np.zeros((1, len(q0))))
    s, d1, d2 = _path_derivatives(path)
    candidates = [_scale_to_limits(start, _speed_passes(path, s, d1, d2, limits), limits),
                  _scale_to_limits(start, _ruckig_along_path(path, s, d1, d2, limits, sample_period), limits)]
    return _refine(start, min(candidates, key=lambda timed: timed.duration), sample_period)


# -- the points and their timings --------------------------------------------------------------------------------------

def _path_points(q0, waypoints, limits):
    """Return start + waypoints without repeats, densified to at least four segments."""
    W = np.asarray(waypoints, float)
    if W.ndim != 2 or W.shape[1] != len(q0) or not len(W):
        raise ValueError(f'waypoints must have shape (K, {len(q0)}), got {W.shape}')
    if len(W) > MAX_POINTS:
        raise ValueError(f'a joint path has at most MAX_POINTS = {MAX_POINTS} waypoints, got {len(W)}')
    for k, q in enumerate(W):
        check_positions(q, limits, f'waypoint {k}')
    path = np.vstack([q0, W])
    path = path[np.concatenate([[True], np.any(np.diff(path, axis=0) != 0.0, axis=1)])]
    if 1 < len(path) < 5:
        parts = int(np.ceil(4 / (len(path) - 1)))
        fractions = np.arange(parts)[:, None, None] / parts
        inner = path[:-1][None] + fractions * np.diff(path, axis=0)[None]
        path = np.vstack([inner.transpose(1, 0, 2).reshape(-1, len(q0)), path[-1:]])
    return path


def _path_derivatives(path):
    """Return the path parameter s (joint-space arc length), dq/ds and d2q/ds2 at each point."""
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(path, axis=0), axis=1))])
    d1 = np.gradient(path, s, axis=0, edge_order=2)
    return s, d1, np.gradient(d1, s, axis=0, edge_order=2)


def _speed_passes(path, s, d1, d2, limits):
    """Time the path by a forward/backward pass on the path speed (velocity and acceleration, no jerk)."""
    with np.errstate(divide='ignore'):
        speed = np.min(limits.velocity / np.abs(d1), axis=1)
        speed = np.minimum(speed, np.min(np.sqrt(0.5 * limits.acceleration / np.abs(d2)), axis=1))
        push = np.min(0.5 * limits.acceleration / np.abs(d1), axis=1)  # the other half of |a| is along the path
    speed[0] = speed[-1] = 0.0
    ds = np.diff(s)
    for k in range(len(ds)):
        speed[k + 1] = min(speed[k + 1], np.sqrt(speed[k] ** 2 + 2 * push[k] * ds[k]))
    for k in reversed(range(len(ds))):
        speed[k] = min(speed[k], np.sqrt(speed[k + 1] ** 2 + 2 * push[k + 1] * ds[k]))
    times = np.cumsum(2 * ds / (speed[:-1] + speed[1:]))
    tangential = np.gradient(speed ** 2, s, edge_order=1) / 2
    return _path_points_timed(path, d1, d2, times, speed, tangential)


def _ruckig_along_path(path, s, d1, d2, limits, sample_period):
    """Time the path by one jerk-limited Ruckig profile of s, within bounds that hold along the whole path.

    The joints follow the cubic Hermite curve through the points with tangents dq/ds; samples are the
    points, the profile's phase switches and points in gaps longer than sample_period (a straight joint line
    is then exact).
    """
    peak1, peak2 = np.abs(d1).max(axis=0), np.abs(d2).max(axis=0)
    with np.errstate(divide='ignore', invalid='ignore'):
        speed = min(np.min(limits.velocity / peak1), np.min(np.sqrt(0.5 * limits.acceleration / peak2)))
        push = np.min((limits.acceleration - peak2 * speed ** 2) / peak1)  # what the curvature leaves
        jerk = np.min(planning_jerk(limits) / peak1)
    inp = ruckig.InputParameter(1)
    inp.current_position, inp.target_position = [0.0], [float(s[-1])]
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [speed], [push], [jerk]
    profile = Profiles(calculate(inp))
    at_points = _times_at(profile, s[1:-1])
    times = sample_times(np.concatenate([profile.switch_times(), at_points]), profile.duration, sample_period)
    along, rate, change = profile.evaluate(times)[:, :, 0]
    q, dq, ddq = _hermite(path, s, d1, np.minimum(along, s[-1]))
    positions, velocities = q, dq * rate[:, None]
    accelerations = ddq * rate[:, None] ** 2 + dq * change[:, None]
    positions[-1], velocities[-1], accelerations[-1] = path[-1], 0.0, 0.0
    return TimedPath(times, positions, velocities, accelerations)


def _times_at(profile, values):
    """Return the times at which a one-joint profile's (increasing) position reaches ``values`` (bisection)."""
    low, high = np.zeros(len(values)), np.full(len(values), profile.duration)
    for _ in range(60):
        middle = 0.5 * (low + high)
        below = profile.evaluate(middle)[0, :, 0] < values
        low, high = np.where(below, middle, low), np.where(below, high, middle)
    return high


def _hermite(path, s, d1, values):
    """Positions and first and second derivatives (by s) of the cubic Hermite curve through path at ``values``."""
    k = np.clip(np.searchsorted(s, values, side='right') - 1, 0, len(s) - 2)
    h = (s[k + 1] - s[k])[:, None]
    u = ((values - s[k])[:, None]) / h
    p0, p1, m0, m1 = path[k], path[k + 1], d1[k] * h, d1[k + 1] * h
    q = (2 * u ** 3 - 3 * u ** 2 + 1) * p0 + (u ** 3 - 2 * u ** 2 + u) * m0 + (-2 * u ** 3 + 3 * u ** 2) * p1 \
        + (u ** 3 - u ** 2) * m1
    dq = ((6 * u ** 2 - 6 * u) * p0 + (3 * u ** 2 - 4 * u + 1) * m0 + (-6 * u ** 2 + 6 * u) * p1
          + (3 * u ** 2 - 2 * u) * m1) / h
    ddq = ((12 * u - 6) * p0 + (6 * u - 4) * m0 + (-12 * u + 6) * p1 + (6 * u - 2) * m1) / h ** 2
    return q, dq, ddq


def _path_points_timed(path, d1, d2, times, speed, tangential):
    """Return the points path[1:] at ``times``, with velocities and accelerations from the path speed and its rate."""
    velocities = d1 * speed[:, None]
    accelerations = d2 * speed[:, None] ** 2 + d1 * tangential[:, None]
    velocities[-1] = accelerations[-1] = 0.0
    if not np.all(np.diff(np.concatenate([[0.0], times])) > 0.0):
        raise PlanningError('the joint path could not be timed (points too close together)')
    return TimedPath(times, path[1:], velocities[1:], accelerations[1:])


def _scale_to_limits(start, path, limits):
    """Scale the path's time uniformly so its peak v, a (and finite jerk) are PATH_LIMIT_FRACTION of the limits."""
    _, vel, acc, jerk = _peaks(start, path)
    ratio = max(np.max(vel / limits.velocity), np.sqrt(np.max(acc / limits.acceleration)),
                np.cbrt(np.max(np.where(np.isfinite(limits.jerk), jerk / limits.jerk, 0.0))))
    c = ratio / PATH_LIMIT_FRACTION
    scaled = TimedPath(path.times * c, path.positions, path.velocities / c, path.accelerations / c ** 2)
    low, high = _peaks(start, scaled)[0]
    outside = np.flatnonzero((low < limits.lower - POSITION_EPS) | (high > limits.upper + POSITION_EPS))
    if len(outside):
        raise PlanningError(f'the timed path leaves the position limits of joint {limits.names[outside[0]]}')
    return scaled


def _peaks(start, path):
    """((min, max) positions, peak |v|, |a|, |jerk| per joint) of the controller's spline.

    Positions, velocities and accelerations densely sampled; jerk exactly (see ``_jerk_peaks``).
    """
    sampler = SplineSampler(start.position, start.velocity, _as_trajectory(path), start.acceleration)
    edges = sampler.times
    fractions = np.linspace(0.0, 1.0, PATH_SUBSAMPLES + 1)[:-1]
    times = np.concatenate([(edges[:-1, None] + np.diff(edges)[:, None] * fractions).ravel(), edges[-1:]])
    pos, vel, acc, _ = sampler.evaluate(times)
    return ((pos.min(axis=0), pos.max(axis=0)), np.abs(vel).max(axis=0), np.abs(acc).max(axis=0),
            _jerk_peaks(sampler))


def _jerk_peaks(sampler):
    """Peak |jerk| per joint of a quintic spline: each segment's is at an end or at its parabola's vertex.

    Sampled at PATH_SUBSAMPLES per segment it was missed by up to 6 % on 50 ms segments, and the guard's
    1 kHz check then refused the path it had timed.
    """
    c = sampler.coefficients                       # (segments, 6, n): c0..c5 in local time
    h = np.diff(sampler.times)[:, None]            # (segments, 1)
    c3, c4, c5 = c[:, 3], c[:, 4], c[:, 5]
    with np.errstate(divide='ignore', invalid='ignore'):
        vertex = np.clip(np.where(c5 != 0.0, -c4 / (5.0 * c5), 0.0), 0.0, h)
    peaks = [np.abs(6.0 * c3 + 24.0 * c4 * t + 60.0 * c5 * t ** 2) for t in (0.0, h, vertex)]
    return np.max(peaks, axis=(0, 1))


def _refine(start, path, sample_period):
    """Add points on the same quintics so no two are more than sample_period apart (within MAX_POINTS)."""
    edges = np.concatenate([[0.0], path.times])
    parts = np.ceil(np.diff(edges) / sample_period).astype(int)
    if parts.sum() > MAX_POINTS or np.all(parts == 1):
        return path
    times = np.concatenate([edges[k] + np.diff(edges)[k] * np.arange(1, p + 1) / p for k, p in enumerate(parts)])
    times[np.cumsum(parts) - 1] = path.times  # the original points exactly
    sampler = SplineSampler(start.position, start.velocity, _as_trajectory(path), start.acceleration)
    pos, vel, acc, _ = sampler.evaluate(times)
    keep = np.cumsum(parts) - 1
    pos[keep], vel[keep], acc[keep] = path.positions, path.velocities, path.accelerations
    return TimedPath(times, pos, vel, acc)


def _as_trajectory(path):
    return Trajectory(path.times, path.positions, path.velocities, path.accelerations)


def _check_at_rest(v0, a0, limits):
    """Refuse a moving start: the path was solved from where the arm is, and it must be at rest there."""
    for field, values, bound in (('velocity', v0, limits.velocity), ('acceleration', a0, limits.acceleration)):
        moving = np.flatnonzero(np.abs(values) > REST_FRACTION * bound)
        if len(moving):
            k = moving[0]
            raise PlanningError(f'a joint path needs the arm at rest at its start; it is moving (joint '
                                f'{limits.names[k]} {field} {values[k]:.4g}): wait until it stops, or plan a move')
