"""Timing joint motion for a joint_trajectory_controller: Ruckig moves, and the timed path every planner returns.

``plan_move`` asks Ruckig (community version) for the time-optimal,
jerk-limited move from the controller's current position, velocity and
acceleration to rest at the goal, all joints synchronised.  Between Ruckig's
phase switches every joint follows a cubic (constant jerk), and the
controller's quintic through two samples with exact positions, velocities and
accelerations reproduces a cubic exactly.  So the knots are every phase switch
of every joint and the end, each at a whole nanosecond as the message carries
it: the controller then runs Ruckig's own trajectory, within its limits.  A gap
between knots longer than ``sample_period`` gets evenly spaced points on the
same cubics (for display and for controllers that drop accelerations); a
streamed move, whose switches are a few milliseconds apart, gets none.  We do
not sample at a fixed rate: every point costs the node and the controller
time and adds nothing the knots do not already carry.

Where a joint has no jerk limit, Ruckig still plans with a finite one, the
acceleration reached in ``JERK_RAMP_TIME``: an acceleration step cannot be
carried by trajectory points (one acceleration per point), and a real arm
prefers a short ramp to a step.  Only real jerk limits are checked by the guard.

Community Ruckig does not enforce position limits: from a moving start its
time-optimal move can swing past a limit.  Then the move brakes every joint
as hard as allowed first (minimum stopping distance), and moves rest to rest
from there (rest-to-rest Ruckig profiles are monotone); a state that cannot
stop before a limit at all is refused (``PlanningError``).

A dense joint path (a Cartesian line solved point by point) is timed by
``path_timing.plan_joint_path`` with the Ruckig profiles, sample times and input checks of this module.
"""
from dataclasses import dataclass, replace
from itertools import accumulate
import threading

from numba import njit
import numpy as np
import ruckig

from .limits import POSITION_EPS

#: Default longest time between two points [s]; the knots are the phase switches (see the module docstring).
SAMPLE_PERIOD = 0.05
#: Most points a trajectory may have.  A longer move gets fewer points in its long gaps (the phase switches,
#: which keep it exact, stay); a joint path with more waypoints is refused.
MAX_POINTS = 10_000
#: Where a joint has no jerk limit, Ruckig plans with acceleration / JERK_RAMP_TIME [s].
JERK_RAMP_TIME = 0.02
#: Samples closer than this [s] are merged (keeps the controller's quintics well conditioned).
MIN_GAP = 1e-6
#: Peaks of the minimum-jerk blend (10 - 15 tau + 6 tau^2) tau^3 of a displacement e over a time T:
#: acceleration 10 / sqrt(3) e / T^2, jerk 60 e / T^3 (_land_on).
BLEND_ACCELERATION, BLEND_JERK = 10.0 / np.sqrt(3.0), 60.0
_NS = 1e9
_local = threading.local()


class PlanningError(ValueError):
    """A move that cannot be planned within the limits, with the reason."""


@dataclass
class TimedPath:
    """Samples of a move: times (K,) after the start, positions/velocities/accelerations (K, n).

    ``hold``: how long it stays at rest at its start before it departs [s] (see ``held``).
    ``state_time``: the time after its start [s] of the state it was planned from: 0, or later when it begins
    with points of the command under way that lie before that state (``CommandHistory.next_move``).
    """

    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    hold: float = 0.0
    state_time: float = 0.0

    @property
    def duration(self):
        return float(self.times[-1])


def held(path, position, hold):
    """Return ``path``, planned from rest at ``position``, preceded by ``hold`` seconds at rest there.

    A controller joins a trajectory on arrival and skips what lies before it; a
    move from rest that holds still for longer than the delivery takes departs
    without a step.
    """
    zero = np.zeros((1, len(position)))
    return replace(joined(np.array([hold]), np.asarray(position, float)[None], zero, zero, path), hold=hold)


def joined(times, positions, velocities, accelerations, path):
    """Return the samples (times from the start, ...) of a lead-in followed by ``path``, planned from its end."""
    return TimedPath(np.concatenate([times, path.times + times[-1]]), np.vstack([positions, path.positions]),
                     np.vstack([velocities, path.velocities]), np.vstack([accelerations, path.accelerations]))


def planning_jerk(limits):
    """Jerk Ruckig plans with: the limit where finite, else acceleration / JERK_RAMP_TIME."""
    return np.where(np.isfinite(limits.jerk), limits.jerk, limits.acceleration / JERK_RAMP_TIME)


def plan_move(start, goal_q, limits, sample_period=SAMPLE_PERIOD):
    """Time-optimal synchronised move from ``start`` (MotionState) to rest at ``goal_q``, sampled.

    ``limits`` are the limits the move may use (already scaled).  The first
    sample is at a positive time, the last is ``goal_q`` exactly, at rest.
    Raises ValueError for bad input and PlanningError for a start that cannot
    stop before a position limit.
    """
    q0, v0, a0, goal = _move_inputs(start, goal_q, limits)
    check_period(sample_period)
    pieces = _pieces(q0, v0, a0, goal, limits)
    return _sample(pieces, goal, sample_period, limits)


def ruckig_duration(start, goal_q, limits):
    """Duration of Ruckig's time-optimal move for these limits (the benchmark's reference)."""
    q0, v0, a0 = check_start(start, limits)
    return calculate(_input(q0, v0, a0, np.asarray(goal_q, float), limits)).duration


# -- plan_move ---------------------------------------------------------------------------------------------------

def _pieces(q0, v0, a0, goal, limits):
    """Return the move's Ruckig trajectories (Profiles) in order: the optimum, or a brake then a move from rest."""
    direct = Profiles(calculate(_input(q0, v0, a0, goal, limits)))
    if _outside(direct, limits) is None:
        return [direct]
    brake = Profiles(calculate(_input(q0, v0, a0, None, limits)))
    beyond = _outside(brake, limits)
    if beyond is not None:
        k, side, extreme = beyond
        raise PlanningError(f'joint {limits.names[k]} cannot stop before its {side} limit: at {v0[k]:.4g} it '
                            f'reaches {extreme:.6g} even braking at its acceleration and jerk limits')
    stop = brake.evaluate(np.array([brake.duration]))[0, 0]
    rest_move = Profiles(calculate(_input(stop, np.zeros_like(q0), np.zeros_like(q0), goal, limits)), brake.duration)
    if _outside(rest_move, limits) is not None:
        raise PlanningError('the rest-to-rest move after braking leaves the joint limits')
    return [brake, rest_move]


def _input(q0, v0, a0, goal, limits):
    """Ruckig input: a position move to rest at ``goal``, or (goal None) braking each joint to rest alone."""
    n = len(q0)
    inp = ruckig.InputParameter(n)
    inp.current_position, inp.current_velocity, inp.current_acceleration = q0.tolist(), v0.tolist(), a0.tolist()
    inp.max_velocity = limits.velocity.tolist()
    inp.max_acceleration = limits.acceleration.tolist()
    inp.max_jerk = planning_jerk(limits).tolist()
    if goal is None:
        inp.control_interface = ruckig.ControlInterface.Velocity
        inp.synchronization = ruckig.Synchronization.No
        inp.target_velocity = [0.0] * n
    else:
        inp.target_position = goal.tolist()
        inp.target_velocity = [0.0] * n
    inp.target_acceleration = [0.0] * n
    return inp


def calculate(inp):
    """Return Ruckig's trajectory for the InputParameter ``inp`` (one Ruckig per thread and size, reused).

    Raises:
        PlanningError: Ruckig refused the input or found no trajectory.
    """
    n = inp.degrees_of_freedom
    cache = _local.__dict__.setdefault('ruckig', {})
    otg = cache.get(n) or cache.setdefault(n, ruckig.Ruckig(n))
    trajectory = ruckig.Trajectory(n)
    try:
        result = otg.calculate(inp, trajectory)
    except RuntimeError as error:  # Ruckig throws for invalid input
        raise PlanningError(f'Ruckig refused the move: {error}') from None
    if result not in (ruckig.Result.Working, ruckig.Result.Finished):
        raise PlanningError(f'Ruckig could not plan the move: {result}')
    return trajectory


def _outside(profiles, limits):
    """(index, 'lower'|'upper', extreme) of the first joint the trajectory takes past a limit, else None."""
    low, high = profiles.extrema()
    for k in range(len(low)):
        if low[k] < limits.lower[k] - POSITION_EPS:
            return k, 'lower', low[k]
        if high[k] > limits.upper[k] + POSITION_EPS:
            return k, 'upper', high[k]
    return None


class Profiles:
    """A Ruckig trajectory as per-joint tables of constant-jerk phases, evaluated vectorised.

    Ruckig's ``at_time`` integrates the same tables one instant per call; this
    evaluates all sample times at once and lists the phase switch times.
    """

    PHASES = 10  # two brake phases, seven jerk phases, the hold at the end

    def __init__(self, trajectory, offset=0.0):
        self.offset, self.duration = offset, trajectory.duration
        flat = []
        for profile in trajectory.profiles[0]:
            flat += self._phases(profile)
        self.table = np.ascontiguousarray(np.array(flat).reshape(-1, 5, self.PHASES).transpose(1, 0, 2))
        self.table[0] += offset

    @classmethod
    def _phases(cls, profile):
        """Phases of one joint as the rows starts, p, v, a, j one after the other, padded with inf starts.

        Its brake phases (if braking), seven jerk phases, then the hold at the end.
        Plain Python: a few dozen floats per joint cost less than NumPy calls.
        """
        brake = profile.brake
        braking = brake.duration
        starts, p, v, a, j = ([braking + t for t in accumulate(profile.t, initial=0.0)], profile.p, profile.v,
                              profile.a, profile.j + [0.0])
        if braking > 0.0:
            used = [i for i, length in enumerate(brake.t) if length > 0.0]  # Ruckig leaves one unfilled
            brake_starts = list(accumulate(brake.t, initial=0.0))
            starts, p, v, a, j = ([row[i] for i in used] + tail for row, tail in zip(
                (brake_starts, brake.p, brake.v, brake.a, brake.j), (starts, p, v, a, j)))
        pad = cls.PHASES - len(starts)
        zeros = [0.0] * pad
        return starts + [np.inf] * pad + p + zeros + v + zeros + a + zeros + j + zeros

    def extrema(self):
        """(min, max) position per joint: phase starts and the velocity roots inside each phase.

        (Ruckig's own ``position_extrema`` misses reversals in some profiles, so it is not used.)
        """
        return _table_extrema(self.table)

    def switch_times(self):
        starts = self.table[0, :, 1:]
        return starts[np.isfinite(starts)]

    def evaluate(self, times):
        """Positions, velocities, accelerations (each (T, n)) at absolute ``times``."""
        return _table_evaluate(self.table, np.asarray(times, float))


@njit(cache=True)
def _table_extrema(table):
    starts, p, v, a, j = table[0], table[1], table[2], table[3], table[4]
    low, high = np.full(starts.shape[0], np.inf), np.full(starts.shape[0], -np.inf)
    for d in range(starts.shape[0]):
        for k in range(starts.shape[1]):
            if not np.isfinite(starts[d, k]):
                continue
            low[d], high[d] = min(low[d], p[d, k]), max(high[d], p[d, k])
            h = starts[d, k + 1] - starts[d, k] if k + 1 < starts.shape[1] else 0.0
            if not np.isfinite(h):
                h = 0.0  # the hold has no length
            disc = a[d, k] ** 2 - 2 * j[d, k] * v[d, k]
            root = np.sqrt(disc) if disc >= 0.0 else np.nan
            with_jerk = (-a[d, k] + root) / j[d, k] if j[d, k] != 0.0 else np.nan
            against = (-a[d, k] - root) / j[d, k] if j[d, k] != 0.0 else np.nan
            constant = -v[d, k] / a[d, k] if a[d, k] != 0.0 else np.nan  # a constant-acceleration phase
            for tau in (with_jerk, against, constant):
                if np.isfinite(tau) and 0.0 < tau < h:
                    value = p[d, k] + tau * (v[d, k] + tau * (a[d, k] / 2 + tau * j[d, k] / 6))
                    low[d], high[d] = min(low[d], value), max(high[d], value)
    return low, high


@njit(cache=True)
def _table_evaluate(table, times):
    starts, p, v, a, j = table[0], table[1], table[2], table[3], table[4]
    out = np.empty((3, len(times), starts.shape[0]))
    for i in range(len(times)):
        for d in range(starts.shape[0]):
            k = 0
            while k + 1 < starts.shape[1] and starts[d, k + 1] <= times[i]:
                k += 1
            dt = max(times[i] - starts[d, k], 0.0)
            out[0, i, d] = p[d, k] + dt * (v[d, k] + dt * (a[d, k] / 2 + dt * j[d, k] / 6))
            out[1, i, d] = v[d, k] + dt * (a[d, k] + dt * j[d, k] / 2)
            out[2, i, d] = a[d, k] + dt * j[d, k]
    return out


def _sample(pieces, goal, sample_period, limits):
    """Sample the pieces at their phase switches and the end (long gaps filled, see ``sample_times``).

    A move Ruckig finds too small to make (below its precision, about 1e-15 rad: its duration 0) is
    made by the landing blend alone, in the shortest time that keeps the blend within the acceleration
    and jerk limits (a few microseconds), never in one nanosecond, which the controller's spline to the
    goal would cross at thousands of rad/s^2.
    """
    duration = pieces[-1].offset + pieces[-1].duration
    if duration * _NS < 1.0:
        residual = np.abs(goal - pieces[-1].evaluate(np.array([duration]))[0, 0])
        duration = float(np.max(np.maximum(np.sqrt(BLEND_ACCELERATION * residual / limits.acceleration),
                                           np.cbrt(BLEND_JERK * residual / planning_jerk(limits)))))
    times = sample_times(np.concatenate([piece.switch_times() for piece in pieces]), duration, sample_period)
    states = np.empty((3, len(times), len(goal)))
    for piece, end in zip(pieces, [piece.offset for piece in pieces[1:]] + [np.inf]):
        inside = (times >= piece.offset) & (times < end)
        states[:, inside] = piece.evaluate(times[inside])
    positions, velocities, accelerations = states
    _land_on(goal, times, positions, velocities, accelerations)
    return TimedPath(times, positions, velocities, accelerations)


@njit(cache=True)
def _land_on(goal, times, positions, velocities, accelerations):
    """Make the last sample the goal exactly, at rest.

    Ruckig ends within about 1e-8 of its target.  The difference is added along the
    whole move as a minimum-jerk blend (zero velocity and acceleration at both ends),
    a quintic in time: every segment stays a quintic, which the controller reproduces.
    """
    end = times[-1]
    error = goal - positions[-1]
    for i in range(len(times)):
        tau = times[i] / end
        blend = tau ** 3 * (10 + tau * (-15 + 6 * tau))
        blend_velocity = 30 * tau ** 2 * (1 - tau) ** 2 / end
        blend_acceleration = 60 * tau * (1 - tau) * (1 - 2 * tau) / end ** 2
        positions[i] += blend * error
        velocities[i] += blend_velocity * error
        accelerations[i] += blend_acceleration * error
    positions[-1], velocities[-1], accelerations[-1] = goal, 0.0, 0.0


def sample_times(switches, duration, sample_period):
    """Switch times and the end, gaps longer than sample_period filled (within MAX_POINTS), in whole nanoseconds."""
    return _sample_times_ns(np.asarray(switches, float), float(duration), float(sample_period), MAX_POINTS,
                            MIN_GAP * _NS) / _NS


@njit(cache=True)
def _sample_times_ns(switches, duration, sample_period, max_points, min_gap_ns):
    """Sample times in whole nanoseconds, sorted.

    The knots: the switches in (0, end], no two closer than min_gap_ns (the end always kept).  Then each
    gap between knots (and from 0 to the first) longer than the period gets evenly spaced points, the
    period widened as far as needed to stay within max_points.
    """
    end_ns = max(1.0, np.ceil(duration * 1e9))
    kept = np.empty(len(switches) + 1)
    size, last = 0, 0.0
    for t in np.unique(np.rint(switches * 1e9)):
        if t - last >= min_gap_ns and t < end_ns - min_gap_ns:
            kept[size] = t
            size += 1
            last = t
    kept[size] = end_ns
    kept = kept[:size + 1]
    gaps = np.diff(np.concatenate((np.zeros(1), kept)))
    period_ns = sample_period * 1e9
    budget = max_points - len(kept)
    while budget >= 0 and np.sum(np.ceil(gaps / period_ns) - 1.0) > budget:
        period_ns *= 2.0
    out = np.empty(max(len(kept), max_points))
    size, start = 0, 0.0
    for k in range(len(kept)):
        parts = int(np.ceil(gaps[k] / period_ns))
        for i in range(1, parts):
            out[size] = np.rint(start + i * gaps[k] / parts)
            size += 1
        out[size] = kept[k]
        size += 1
        start = kept[k]
    return out[:size]


# -- input checks ------------------------------------------------------------------------------------------------

def _move_inputs(start, goal_q, limits):
    """Return (q0, v0, a0, goal) as arrays, checked in one kernel call; the detailed checks raise what is wrong."""
    arrays = [np.asarray(x, float) for x in (start.position, start.velocity, start.acceleration, goal_q)]
    n = len(limits.names)
    if all(x.shape == (n,) for x in arrays) and _inputs_ok(*arrays, limits.lower - POSITION_EPS,
                                                           limits.upper + POSITION_EPS, limits.velocity,
                                                           limits.acceleration):
        return arrays
    return (*check_start(start, limits), check_positions(goal_q, limits, 'goal'))


@njit(cache=True)
def _inputs_ok(q0, v0, a0, goal, low, high, velocity, acceleration):
    """Tell whether ``check_start`` and ``check_positions`` of the goal would pass."""
    for j in range(len(q0)):
        for value in (q0[j], v0[j], a0[j], goal[j]):
            if not np.isfinite(value):
                return False
        if not (low[j] <= q0[j] <= high[j] and low[j] <= goal[j] <= high[j]):
            return False
        if not (0.0 < velocity[j] < np.inf and 0.0 < acceleration[j] < np.inf):
            return False
    return True


def check_start(start, limits):
    """Return the start's (position, velocity, acceleration) arrays; ValueError for shapes, NaN, limits."""
    n = len(limits.names)
    arrays = [np.asarray(getattr(start, field), float) for field in ('position', 'velocity', 'acceleration')]
    for field, values in zip(('position', 'velocity', 'acceleration'), arrays):
        if values.shape != (n,):
            raise ValueError(f'start {field} has shape {values.shape}, the limits have {n} joints')
        if not np.isfinite(values).all():
            raise ValueError(f'start {field} has NaN or inf values')
    for field in ('velocity', 'acceleration'):
        bound = getattr(limits, field)
        if not (np.isfinite(bound).all() and np.all(bound > 0.0)):
            raise ValueError(f'{field} limits must be finite and positive to plan a move, got {bound}')
    check_positions(arrays[0], limits, 'start')
    return arrays


def check_positions(q, limits, what):
    """Return ``q`` as an array; ValueError names ``what`` when its shape, finiteness or limits are wrong."""
    q = np.asarray(q, float)
    if q.shape != (len(limits.names),):
        raise ValueError(f'{what} has shape {q.shape}, the limits have {len(limits.names)} joints')
    if not np.isfinite(q).all():
        raise ValueError(f'{what} has NaN or inf positions')
    outside = np.flatnonzero((q < limits.lower - POSITION_EPS) | (q > limits.upper + POSITION_EPS))
    if len(outside):
        k = outside[0]
        raise ValueError(f'{what} position of joint {limits.names[k]} ({q[k]:.6g}) is outside its limits '
                         f'[{limits.lower[k]:.6g}, {limits.upper[k]:.6g}]')
    return q


def check_period(sample_period):
    """Refuse (ValueError) a sample period [s] that is not positive and finite."""
    if not (np.isfinite(sample_period) and sample_period > 0.0):
        raise ValueError(f'sample_period must be positive and finite, got {sample_period}')
