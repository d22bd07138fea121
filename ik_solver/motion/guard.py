"""The one check of what the controller will really do with a command, whichever planner made it.

Every published point can be inside the limits while the controller's spline
between them is not: joint_trajectory_controller interpolates from its own
current state (position, velocity, acceleration) through the points, quintic
where points carry accelerations, cubic with velocities only, linear
otherwise.  ``check_trajectory`` runs exactly that interpolation (``jtc``'s splines)
from the true start state at the controller's 1 kHz, and checks positions,
velocities and accelerations (at every control tick and every point) and,
where limited, jerk.  Velocity and acceleration are also checked as
differences over one control period, so steps (the velocity jumps of linear
interpolation, the acceleration jumps of a cubic) count as the controller
executes them.  Jerk is checked only that way, as the change of the
controller's acceleration setpoint per period: that is the jerk the arm gets
from a 1 kHz controller, while the analytic jerk of a spline segment a few
microseconds long (two phase switches close together) is rounding noise.
The first tick is compared with the start state too: a controller moving at
0.9 rad/s that is sent positions only steps to the linear segment's velocity
in one period.  The 1 kHz scan runs in a compiled kernel that keeps only the
peaks (no array of the whole path), and a trajectory longer than
``MAX_DURATION`` is refused.  Non-finite values always count as violations.
``check_step`` does the same for one streamed command (servo, forward controllers).
"""
import math

from numba import njit
import numpy as np

from . import trajectory_cdr
from .jtc import arrays_of, segment_state, spline_coefficients, SplineSampler
from .limits import JointLimits, MotionState, POSITION_EPS
from .path_timing import plan_joint_path
from .timing import MAX_POINTS, plan_move, TimedPath

#: The controller's update period [s]: the guard samples at this rate.
CONTROL_PERIOD = 0.001
#: Velocities and accelerations of the last point below this count as rest.
REST_EPS = 1e-9
#: Longest trajectory the guard accepts [s]: one hour, 3.6 million control ticks (scanned in about 0.1 s).
MAX_DURATION = 3600.0
_PEAKS = ('velocity', 'acceleration', 'acceleration over one control period', 'jerk over one control period')


def check_trajectory(start, path, limits, tolerance=0.01):
    """Reasons ``path`` (TimedPath, times after now) would break ``limits`` from ``start`` ([] = safe).

    ``start`` is the controller's state (MotionState) when the trajectory starts.
    Limits are exceeded when beyond ``limits`` x (1 + tolerance); positions may
    not leave [lower, upper] at all.
    """
    arrays = _kernel_arrays(start, path, len(limits.names))
    bounds = limits.lower - POSITION_EPS, limits.upper + POSITION_EPS, limits.velocity, limits.acceleration, limits.jerk
    if arrays is not None and not _tolerance_reasons(tolerance) and _safe(
            *arrays, *bounds, 1.0 + tolerance, CONTROL_PERIOD, MAX_DURATION, REST_EPS):
        return []  # the common case in one kernel call; otherwise the checks below say what is wrong
    reasons = _tolerance_reasons(tolerance) + _check_shapes(start, path, limits)
    if reasons:
        return reasons
    reasons = _check_points(path)
    if reasons:
        return reasons
    peaks, leave = _peaks(*_kernel_arrays(start, path, len(limits.names)), bounds[0], bounds[1], CONTROL_PERIOD)
    reasons += _leave_reasons(leave, limits)
    factor = 1.0 + tolerance
    for what, peak, bound in zip(_PEAKS, peaks, (limits.velocity, limits.acceleration, limits.acceleration,
                                                 limits.jerk)):
        reasons += _bound_reasons(what, peak, bound * factor, limits.names)
    return reasons


def warm_up():
    """Load the motion kernels (numba, from its on-disk cache: about a second) so the first target is on time.

    A node calls this once at start-up; it plans, samples and checks a small move with every trajectory
    form the guard evaluates (a failing check too, for the detailed reasons), and writes one as CDR.
    """
    limits = JointLimits(('j',), np.array([-1.0]), np.array([1.0]), np.array([1.0]), np.array([2.0]),
                         np.array([np.inf]))
    start = MotionState.at_rest(np.zeros(1))
    path = plan_move(start, np.array([0.1]), limits)
    check_trajectory(start, path, limits)
    check_trajectory(start, plan_joint_path(start, np.array([[0.05], [0.1]]), limits), limits)
    for cut in (path.accelerations, path.velocities):
        check_trajectory(MotionState(np.zeros(1), np.array([0.5]), np.zeros(1)), TimedPath(
            path.times, path.positions, None if cut is path.velocities else path.velocities, None), limits)
    SplineSampler(start.position, start.velocity, path, start.acceleration).evaluate(path.times)
    trajectory_cdr.warm_up()


def check_step(previous, q, v, dt, limits, tolerance=0.01):
    """Reasons one streamed command (q, v after dt from ``previous``) would break ``limits`` ([] = safe).

    ``v`` may be None (a position-only command): the velocity is then the
    position change over ``dt``.  Acceleration and jerk are the changes over ``dt``.
    """
    n = len(limits.names)
    reasons = _tolerance_reasons(tolerance) + _state_reasons(previous, n, 'previous')
    if reasons:
        return reasons
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
    reasons = _position_reasons(dt, q, limits)
    for what, values, bound in (('velocity', v, limits.velocity), ('position change rate', implied, limits.velocity),
                                ('acceleration', acc, limits.acceleration), ('jerk', jerk, limits.jerk)):
        reasons += _bound_reasons(what, np.abs(values), bound * factor, limits.names)
    return reasons


def _check_shapes(start, path, limits):
    n = len(limits.names)
    times = np.asarray(path.times, float)
    if times.ndim != 1 or not len(times):
        return ['the trajectory has no points']
    if len(times) > MAX_POINTS:
        return [f'the trajectory has {len(times)} points, more than MAX_POINTS = {MAX_POINTS}']
    reasons = _state_reasons(start, n, 'start')
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
    if times[-1] > MAX_DURATION:
        reasons.append(f'the trajectory lasts {times[-1]:.6g} s, more than MAX_DURATION = {MAX_DURATION:g} s')
    for field in ('velocities', 'accelerations'):
        values = getattr(path, field)
        if values is not None and np.any(np.abs(np.asarray(values, float)[-1]) > REST_EPS):
            reasons.append(f'the trajectory does not end at rest: the last point has non-zero {field}')
    return reasons


def _state_reasons(state, n, what):
    reasons = []
    for field in ('position', 'velocity', 'acceleration'):
        values = np.asarray(getattr(state, field), float)
        if values.shape != (n,) or not np.isfinite(values).all():
            reasons.append(f'the {what} {field} is not {n} finite values')
    return reasons


def _tolerance_reasons(tolerance):
    try:
        if math.isfinite(tolerance) and tolerance >= 0.0:
            return []
    except TypeError:
        pass
    return [f'the tolerance must be a finite number >= 0, got {tolerance!r}']


def _position_reasons(t, q, limits):
    """Reasons one command ``q`` at time ``t`` leaves the position limits."""
    reasons = []
    for side, beyond in (('lower', ~(q >= limits.lower - POSITION_EPS)),
                         ('upper', ~(q <= limits.upper + POSITION_EPS))):
        for k in np.flatnonzero(beyond):
            reasons.append(_leave_reason(limits, k, side, t, q[k]))
    return reasons


def _leave_reasons(leave, limits):
    """Reasons from the scan's first time and position beyond each side ((2, 2, n), NaN time = never)."""
    reasons = []
    for side, (times, values) in zip(('lower', 'upper'), leave):
        for k in np.flatnonzero(~np.isnan(times)):
            reasons.append(_leave_reason(limits, k, side, times[k], values[k]))
    return reasons


def _leave_reason(limits, k, side, t, q):
    return (f'joint {limits.names[k]} leaves its {side} limit at t = {t:.4f} s '
            f'({q:.6g} vs [{limits.lower[k]:.6g}, {limits.upper[k]:.6g}])')


def _bound_reasons(what, peak, bound, names):
    """Reasons a per-joint peak magnitude exceeds its bound; NaN (never <= anything) counts as exceeding."""
    return [f'joint {names[k]} {what} {peak[k]:.6g} exceeds its limit {bound[k]:.6g} (tolerance included)'
            for k in np.flatnonzero(~(peak <= bound))]


@njit(cache=True)
def _scan(knots, c, positions, velocities, accelerations, v_start, a_start, period, ticks, low, high):
    """Peaks and position-limit crossings of the controller's spline at every tick and every point.

    Returns peaks (4, n): |velocity|, |acceleration|, |velocity change| / period and |acceleration change| /
    period, the first difference taken from the start state (v_start, a_start); and leave (2, 2, n): per side
    (below ``low``, above ``high``) the first time and position beyond it (NaN: never).  ``velocities`` and
    ``accelerations`` of the points may have no rows (field absent).  NaN counts as a violation.
    """
    n = c.shape[2]
    peaks = np.zeros((4, n))
    leave = np.full((2, 2, n), np.nan)
    previous = np.empty((2, n))
    previous[0], previous[1] = v_start, a_start
    end = 0
    for k in range(c.shape[0] + 1):  # each segment's ticks, then the hold after the end; joint by joint
        begin = end
        while end < ticks and (k == c.shape[0] or end * period < knots[k + 1]):
            end += 1
        for j in range(n):
            v_peak, a_peak, dv_peak, da_peak = peaks[0, j], peaks[1, j], peaks[2, j], peaks[3, j]
            v_before, a_before = previous[0, j], previous[1, j]
            for tick in range(begin, end):
                t = tick * period
                if k == c.shape[0]:
                    q, v, a = positions[-1, j], 0.0, 0.0
                else:
                    q, v, a, _ = segment_state(c, k, j, t - knots[k])
                v_peak, a_peak = _larger(v_peak, v), _larger(a_peak, a)
                dv_peak, da_peak = _larger(dv_peak, (v - v_before) / period), _larger(da_peak, (a - a_before) / period)
                v_before, a_before = v, a
                _leave(leave, j, t, q, low[j], high[j])
            peaks[0, j], peaks[1, j], peaks[2, j], peaks[3, j] = v_peak, a_peak, dv_peak, da_peak
            previous[0, j], previous[1, j] = v_before, a_before
    for i in range(positions.shape[0]):  # the spline passes through each point with the point's own values
        for j in range(n):
            if velocities.shape[0]:
                _peak(peaks, 0, j, velocities[i, j])
            if accelerations.shape[0]:
                _peak(peaks, 1, j, accelerations[i, j])
            _leave(leave, j, knots[i + 1], positions[i, j], low[j], high[j])
    return peaks, leave


@njit(cache=True)
def _peak(peaks, row, j, value):
    peaks[row, j] = _larger(peaks[row, j], value)


@njit(cache=True)
def _larger(peak, value):
    """Return the larger of a peak magnitude and |value|; NaN makes it inf (a violation that stays)."""
    magnitude = abs(value)
    if magnitude <= peak:
        return peak
    return magnitude if magnitude == magnitude else np.inf


@njit(cache=True)
def _leave(leave, j, t, q, low, high):
    if not q >= low and np.isnan(leave[0, 0, j]):
        leave[0, 0, j], leave[0, 1, j] = t, q
    if not q <= high and np.isnan(leave[1, 0, j]):
        leave[1, 0, j], leave[1, 1, j] = t, q


def _kernel_arrays(start, path, n):
    """(q0, v0, a0, times, positions, velocities, accelerations, mode) for the kernels, or None if a shape is wrong."""
    try:
        state = tuple(np.asarray(getattr(start, field), float) for field in ('position', 'velocity', 'acceleration'))
        points = arrays_of(path)
    except (IndexError, TypeError, ValueError):
        return None
    times = points[0]
    if any(x.shape != (n,) for x in state) or times.ndim != 1 or not 0 < len(times) <= MAX_POINTS:
        return None
    if any(x.shape != (len(times), n) for x in points[1:4] if len(x)) or points[1].shape != (len(times), n):
        return None
    return state + points


@njit(cache=True)
def _peaks(q0, v0, a0, times, positions, velocities, accelerations, mode, low, high, period):
    """``_scan`` of the spline from the start state (q0, v0, a0) through the points."""
    knots = np.empty(len(times) + 1)
    knots[0], knots[1:] = 0.0, times
    c = spline_coefficients(q0, v0, a0, times, positions, velocities, accelerations, mode)
    return _scan(knots, c, positions, velocities, accelerations, v0, a0, period, int(np.ceil(times[-1] / period)) + 1,
                 low, high)


@njit(cache=True)
def _safe(q0, v0, a0, times, positions, velocities, accelerations, mode, low, high, velocity, acceleration, jerk,
          factor, period, max_duration, rest_eps):
    """Tell whether the detailed checks would find nothing: finite values, times, rest at the end, peaks."""
    for values in (q0, v0, a0, times, positions.ravel(), velocities.ravel(), accelerations.ravel()):
        if not np.isfinite(values).all():
            return False
    if not (times[0] > 0.0 and times[-1] <= max_duration and np.all(times[1:] > times[:-1])):
        return False
    for last in (velocities, accelerations):
        if len(last) and not np.abs(last[-1]).max() <= rest_eps:
            return False
    peaks, leave = _peaks(q0, v0, a0, times, positions, velocities, accelerations, mode, low, high, period)
    if not np.isnan(leave[:, 0]).all():
        return False
    for j in range(len(q0)):
        for row, bound in enumerate((velocity[j], acceleration[j], acceleration[j], jerk[j])):
            if not peaks[row, j] <= bound * factor:
                return False
    return True
