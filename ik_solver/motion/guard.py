"""The one check of what the controller will really do with a command, whichever planner made it.

Every published point can be inside the limits while the controller's spline
between them is not: joint_trajectory_controller interpolates from its own
current state (position, velocity, acceleration) through the points, quintic
where points carry accelerations, cubic with velocities only, linear
otherwise.  ``check_trajectory`` runs exactly that interpolation (``jtc.SplineSampler``)
from the true start state at the controller's 1 kHz, and checks positions,
velocities and accelerations (at every control tick and every point) and,
where limited, jerk.  Velocity and acceleration are also checked as
differences over one control period, so steps (the velocity jumps of linear
interpolation, the acceleration jumps of a cubic) count as the controller
executes them.  Jerk is checked only that way, as the change of the
controller's acceleration setpoint per period: that is the jerk the arm gets
from a 1 kHz controller, while the analytic jerk of a spline segment a few
microseconds long (two phase switches close together) is rounding noise.
``check_step`` does the same for one streamed command (servo, forward controllers).
"""
import numpy as np

from .jtc import SplineSampler, Trajectory
from .timing import MAX_POINTS, POSITION_EPS

#: The controller's update period [s]: the guard samples at this rate.
CONTROL_PERIOD = 0.001
#: Velocities and accelerations of the last point below this count as rest.
REST_EPS = 1e-9


def check_trajectory(start, path, limits, tolerance=0.01):
    """Reasons ``path`` (TimedPath, times after now) would break ``limits`` from ``start`` ([] = safe).

    ``start`` is the controller's state (MotionState) when the trajectory starts.
    Limits are exceeded when beyond ``limits`` x (1 + tolerance); positions may
    not leave [lower, upper] at all.
    """
    reasons = _check_shapes(start, path, limits)
    if reasons:
        return reasons
    reasons = _check_points(path)
    if reasons:
        return reasons
    trajectory = _trajectory(path)
    sampler = SplineSampler(start.position, start.velocity, trajectory, start.acceleration)
    grid = np.arange(0.0, sampler.end_time + CONTROL_PERIOD, CONTROL_PERIOD)
    pos, vel, acc, _ = sampler.evaluate(grid)
    stepped_acc = np.diff(vel, axis=0) / CONTROL_PERIOD
    stepped_jerk = np.diff(acc, axis=0) / CONTROL_PERIOD
    # The spline passes through every point with the point's own values: they are checked as they are.
    times = np.concatenate([grid, trajectory.times])
    pos = np.vstack([pos, trajectory.positions])
    if trajectory.velocities is not None:
        vel = np.vstack([vel, trajectory.velocities])
    if trajectory.accelerations is not None:
        acc = np.vstack([acc, trajectory.accelerations])
    reasons += _position_reasons(times, pos, limits)
    factor = 1.0 + tolerance
    for what, values, bound in (('velocity', vel, limits.velocity), ('acceleration', acc, limits.acceleration),
                                ('acceleration over one control period', stepped_acc, limits.acceleration),
                                ('jerk over one control period', stepped_jerk, limits.jerk)):
        reasons += _bound_reasons(what, values, bound * factor, limits.names)
    return reasons


def check_step(previous, q, v, dt, limits, tolerance=0.01):
    """Reasons one streamed command (q, v after dt from ``previous``) would break ``limits`` ([] = safe).

    ``v`` may be None (a position-only command): the velocity is then the
    position change over ``dt``.  Acceleration and jerk are the changes over ``dt``.
    """
    n = len(limits.names)
    q = np.asarray(q, float)
    if q.shape != (n,):
        return [f'command has {q.size} positions for {n} joints']
    if not (np.isfinite(dt) and dt > 0.0):
        return [f'the step time must be positive and finite, got {dt}']
    implied = (q - previous.position) / dt
    v = implied if v is None else np.asarray(v, float)
    if v.shape != (n,):
        return [f'command has {v.size} velocities for {n} joints']
    if not (np.isfinite(q).all() and np.isfinite(v).all()):
        return ['command has NaN or inf values']
    acc = (v - previous.velocity) / dt
    jerk = (acc - previous.acceleration) / dt
    factor = 1.0 + tolerance
    reasons = _position_reasons(np.array([dt]), q[None], limits)
    for what, values, bound in (('velocity', v, limits.velocity), ('position change rate', implied, limits.velocity),
                                ('acceleration', acc, limits.acceleration), ('jerk', jerk, limits.jerk)):
        reasons += _bound_reasons(what, values[None], bound * factor, limits.names)
    return reasons


def _check_shapes(start, path, limits):
    n = len(limits.names)
    times = np.asarray(path.times, float)
    if times.ndim != 1 or not len(times):
        return ['the trajectory has no points']
    if len(times) > MAX_POINTS:
        return [f'the trajectory has {len(times)} points, more than MAX_POINTS = {MAX_POINTS}']
    reasons = []
    for field in ('position', 'velocity', 'acceleration'):
        values = np.asarray(getattr(start, field), float)
        if values.shape != (n,) or not np.isfinite(values).all():
            reasons.append(f'the start {field} is not {n} finite values')
    for field in ('positions', 'velocities', 'accelerations'):
        values = getattr(path, field)
        if values is None and field != 'positions':
            continue
        values = np.asarray(values, float)
        if values.shape != (len(times), n):
            reasons.append(f'{field} have shape {values.shape}, expected ({len(times)}, {n}) for joints '
                           f'{", ".join(limits.names)}')
        elif not np.isfinite(values).all():
            reasons.append(f'{field} have NaN or inf values')
    return reasons


def _check_points(path):
    times = np.asarray(path.times, float)
    reasons = []
    if not np.isfinite(times).all():
        return ['times have NaN or inf values']
    if times[0] <= 0.0:
        reasons.append(f'the first point is at {times[0]:g} s; it must be after the start')
    if np.any(np.diff(times) <= 0.0):
        reasons.append('times are not strictly increasing')
    for field in ('velocities', 'accelerations'):
        values = getattr(path, field)
        if values is not None and np.any(np.abs(np.asarray(values, float)[-1]) > REST_EPS):
            reasons.append(f'the trajectory does not end at rest: the last point has non-zero {field}')
    return reasons


def _position_reasons(times, pos, limits):
    reasons = []
    for side, beyond in (('lower', pos < limits.lower - POSITION_EPS), ('upper', pos > limits.upper + POSITION_EPS)):
        for k in np.flatnonzero(beyond.any(axis=0)):
            i = int(np.argmax(beyond[:, k]))
            reasons.append(f'joint {limits.names[k]} leaves its {side} limit at t = {times[i]:.4f} s '
                           f'({pos[i, k]:.6g} vs [{limits.lower[k]:.6g}, {limits.upper[k]:.6g}])')
    return reasons


def _bound_reasons(what, values, bound, names):
    reasons = []
    peak = np.abs(values).max(axis=0, initial=0.0)
    for k in np.flatnonzero(peak > bound):
        reasons.append(f'joint {names[k]} {what} {peak[k]:.6g} exceeds its limit {bound[k]:.6g} (tolerance included)')
    return reasons


def _trajectory(path):
    return Trajectory(np.asarray(path.times, float), np.asarray(path.positions, float),
                      None if path.velocities is None else np.asarray(path.velocities, float),
                      None if path.accelerations is None else np.asarray(path.accelerations, float))
