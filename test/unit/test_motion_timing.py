"""Ruckig moves and timed joint paths, checked as the controller interpolates them, against independent truths."""
from dataclasses import replace
import pathlib

from hypothesis import assume, example, given, HealthCheck, settings
from hypothesis import strategies as st
from ik_solver.motion.guard import check_trajectory
from ik_solver.motion.jtc import SplineSampler, Trajectory
from ik_solver.motion.limits import JointLimits, load_joint_limits, MotionState
from ik_solver.motion.path_timing import _jerk_peaks, plan_joint_path
from ik_solver.motion.timing import MAX_POINTS, MIN_GAP, plan_move, planning_jerk, PlanningError
import numpy as np
import pytest
import ruckig

CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config'


def limits_of(velocity, acceleration, jerk=None, lower=-3.0, upper=3.0):
    n = len(velocity)
    return JointLimits(tuple(f'j{i}' for i in range(n)), np.full(n, lower, float), np.full(n, upper, float),
                       np.asarray(velocity, float), np.asarray(acceleration, float),
                       np.full(n, np.inf) if jerk is None else np.asarray(jerk, float))


def sampler_of(start, path):
    return SplineSampler(start.position, start.velocity,
                         Trajectory(path.times, path.positions, path.velocities, path.accelerations),
                         start.acceleration)


def ruckig_optimum(start, goal, limits):
    """Ruckig's own time-optimal duration, asked directly."""
    n = len(goal)
    inp = ruckig.InputParameter(n)
    inp.current_position, inp.current_velocity = list(start.position), list(start.velocity)
    inp.current_acceleration = list(start.acceleration)
    inp.target_position = list(goal)
    inp.max_velocity, inp.max_acceleration = list(limits.velocity), list(limits.acceleration)
    inp.max_jerk = list(planning_jerk(limits))
    trajectory = ruckig.Trajectory(n)
    ruckig.Ruckig(n).calculate(inp, trajectory)
    return trajectory


def stopping_distance(v, a, j):
    """Return the closed-form shortest distance to stop from speed v (zero acceleration) with limits a, j."""
    v = abs(v)
    return v * v / (2 * a) + v * a / (2 * j) if v >= a * a / j else v * np.sqrt(v / j)


def test_long_single_joint_move_matches_the_closed_form():
    # Reaching v, a and j: T = d/v + v/a + a/j.
    limits = limits_of([1.0], [2.0], [20.0])
    path = plan_move(MotionState.at_rest([0.0]), [2.5], limits)
    assert path.duration == pytest.approx(2.5 / 1.0 + 1.0 / 2.0 + 2.0 / 20.0, abs=1e-9)
    assert check_trajectory(MotionState.at_rest([0.0]), path, limits, tolerance=1e-6) == []


def test_spline_is_ruckigs_trajectory_at_1khz_and_ends_exactly_at_rest():
    limits = load_joint_limits_ik7()
    start = MotionState(np.array([0.1, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0]), 0.3 * limits.velocity * [1, -1, 1, 0, 1, 0, -1],
                        0.5 * limits.acceleration * [0, 1, -1, 1, 0, 0, 1])
    goal = np.array([1.0, -0.3, 0.5, -1.0, 1.2, 0.1, -2.0])
    path = plan_move(start, goal, limits)
    reference = ruckig_optimum(start, goal, limits)
    t = np.arange(0.0, reference.duration, 0.001)
    got = sampler_of(start, path).evaluate(t)
    expected = np.array([reference.at_time(s) for s in t]).transpose(1, 0, 2)
    for k in range(3):
        np.testing.assert_allclose(got[k], expected[k], atol=1e-7)
    assert path.times[0] > 0 and np.all(np.diff(path.times) > 0)
    np.testing.assert_array_equal(path.positions[-1], goal)
    assert not path.velocities[-1].any() and not path.accelerations[-1].any()
    assert path.duration == pytest.approx(reference.duration, abs=1e-9)


def load_joint_limits_ik7():
    from ik_solver.core.chain import load_chain
    chain = load_chain(str(CONFIG.parent / 'urdf' / 'ik7.urdf.xacro'), 'base_link', 'tool0')
    return load_joint_limits(chain, str(CONFIG / 'ik7_joint_limits.yaml')).limits


@pytest.mark.parametrize('sample_period', [0.001, 0.05, 1.0])
def test_any_sample_period_gives_the_same_motion(sample_period):
    limits = load_joint_limits_ik7()
    start = MotionState(np.zeros(7), 0.5 * limits.velocity, np.zeros(7))
    goal = np.full(7, -0.4)
    path = plan_move(start, goal, limits, sample_period)
    assert check_trajectory(start, path, limits, tolerance=1e-4) == []
    assert np.all(np.diff(path.times) <= sample_period + 2 * MIN_GAP)


def test_points_are_capped_by_coarsening_the_grid():
    limits = limits_of([0.01], [0.01])
    start = MotionState.at_rest([-2.0])
    path = plan_move(start, [2.0], limits, sample_period=0.001)  # 400 s at 1 kHz would be 400 000 points
    assert len(path.times) <= MAX_POINTS
    assert check_trajectory(start, path, limits, tolerance=1e-4) == []


def test_joint4_below_its_limit_at_half_speed():
    """Regression: joint4 0.001 rad below its soft upper limit at half its velocity limit."""
    limits = load_joint_limits_ik7()
    q0 = np.array([0.0, 0.5, 0.0, 0.0, 0.0, 0.9, 0.0])
    q0[3] = limits.upper[3] - 0.001
    towards = np.zeros(7)
    towards[3] = 0.5 * limits.velocity[3]
    # Moving towards the limit it cannot stop in 0.001 rad (closed form): refused, never planned past the limit.
    assert stopping_distance(towards[3], limits.acceleration[3], limits.jerk[3]) > 0.001
    with pytest.raises(PlanningError, match='joint4 cannot stop before its upper limit'):
        plan_move(MotionState(q0, towards, np.zeros(7)), q0, limits)
    # Moving away, a goal at the limit: the swing back stops on it, and the controller's spline stays inside.
    for sample_period in (0.05, 1.0):
        start = MotionState(q0, -towards, np.zeros(7))
        goal = q0.copy()
        goal[3] = limits.upper[3]
        path = plan_move(start, goal, limits, sample_period)
        assert check_trajectory(start, path, limits) == []
        pos = sampler_of(start, path).evaluate(np.arange(0, path.duration, 1e-4))[0]
        assert pos[:, 3].max() <= limits.upper[3] + 1e-9


def test_overshooting_optimum_falls_back_to_braking_first():
    # Found by random search (1 in 20 000 moves): joint c, synchronised to the slower joints, swings past its
    # lower limit in Ruckig's optimum although braking first would stop it in time.
    limits = limits_of([2.42367145, 1.4145205, 2.41752514, 0.62006996, 1.90457919, 1.87366488],
                       [2.24059548, 3.79584139, 7.73250887, 4.9375259, 9.50503088, 8.132148],
                       [472.1832295, 1736.85282864, 328.34108523, 2193.57972533, 2920.24188234, 266.76033151],
                       lower=-1.0, upper=1.0)
    start = MotionState(np.array([-0.44782868, 0.34674439, -0.9969902, 0.2354541, -0.38362487, -0.75265169]),
                        np.array([0.31177314, 0.65097192, 0.00460327, 0.52974758, -0.04012032, -0.10110455]),
                        np.array([-1.23245504, 3.44698036, 3.90357479, -2.16546008, 0.18273177, -1.85976303]))
    goal = np.array([-0.73366719, 0.39007073, -1.0, -0.14777276, -0.6665633, -0.50898691])
    optimum = ruckig_optimum(start, goal, limits)
    positions = np.array([optimum.at_time(t)[0] for t in np.linspace(0, optimum.duration, 20001)])
    assert positions.min(axis=0)[2] < -1.0  # Ruckig's optimum leaves the limit (sampled: an independent truth)
    path = plan_move(start, goal, limits)
    assert check_trajectory(start, path, limits) == []
    assert path.duration > optimum.duration


def test_start_acceleration_beyond_the_limit_is_braked_not_refused():
    # Ruckig first brings an acceleration beyond the limit back (a brake phase); its unused second brake
    # phase has no position, which once read as a bogus extreme at 0, outside this joint's range.
    limits = limits_of([2.0], [3.0], [300.0], lower=-3.0, upper=-0.07)
    start = MotionState(np.array([-0.5]), np.array([-0.045]), np.array([3.02]))
    path = plan_move(start, [-0.4], limits)
    assert check_trajectory(start, path, limits) == []


def test_retargeting_a_stream_keeps_acceleration_continuous():
    limits = load_joint_limits_ik7()
    rng = np.random.default_rng(5)
    state = MotionState.at_rest(np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0]))
    goal = state.position.copy()
    period = 0.005  # a 200 Hz target stream
    accelerations = []
    for _ in range(300):
        goal = np.clip(goal + rng.normal(0, 0.02, 7), limits.lower + 0.3, limits.upper - 0.3)
        path = plan_move(state, goal, limits)
        assert check_trajectory(state, path, limits) == []
        sampler = sampler_of(state, path)
        t = np.arange(0.0, period, 0.001)
        accelerations.extend(sampler.evaluate(t)[2])
        pos, vel, acc, _ = sampler.evaluate(np.array([period]))
        state = MotionState(pos[0], vel[0], acc[0])
    jerk = np.abs(np.diff(accelerations, axis=0)) / 0.001
    assert np.all(jerk <= limits.jerk * 1.01)


finite = {'allow_nan': False, 'allow_infinity': False}


@st.composite
def moves(draw):
    n = draw(st.integers(1, 4))
    vel = np.array(draw(st.lists(st.floats(0.2, 3.0, **finite), min_size=n, max_size=n)))
    acc = np.array(draw(st.lists(st.floats(0.5, 15.0, **finite), min_size=n, max_size=n)))
    ratio = st.lists(st.floats(5.0, 500.0, **finite), min_size=n, max_size=n)
    jerk = None if draw(st.booleans()) else acc * np.array(draw(ratio))
    limits = limits_of(vel, acc, jerk, lower=-2.0, upper=2.0)
    fraction = st.floats(-1.0, 1.0, **finite)
    q0 = np.array(draw(st.lists(st.floats(-2.0, 2.0, **finite), min_size=n, max_size=n)))
    v0 = vel * draw(st.lists(fraction, min_size=n, max_size=n))
    a0 = acc * draw(st.lists(fraction, min_size=n, max_size=n))
    goal = np.array(draw(st.lists(st.floats(-2.0, 2.0, **finite), min_size=n, max_size=n)))
    return MotionState(q0, v0, a0), goal, limits


#: A start a subnormal distance from its goal: Ruckig's optimum lasts 4e-310 s, ours the landing blend's 29 ns.
SUBNORMAL_MOVE = (MotionState(np.array([1.94904376e-23]), np.array([0.0]), np.array([2.22507386e-308])),
                  np.array([0.0]), JointLimits(('j0',), np.array([-2.0]), np.array([2.0]), np.array([1.0]),
                                               np.array([1.0]), np.array([np.inf])))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moves())
@example(SUBNORMAL_MOVE)
def test_property_every_planned_move_stays_within_limits_as_the_controller_runs_it(move):
    start, goal, limits = move
    # A state at full speed still accelerating cannot avoid exceeding the velocity limit: no controller reaches it.
    assume(np.all(np.abs(start.velocity + start.acceleration * np.abs(start.acceleration) / (2 * planning_jerk(limits)))
                  <= limits.velocity))
    try:
        path = plan_move(start, goal, limits)
    except PlanningError as error:
        # Only a start that cannot stop before a limit is refused (checked by braking with Ruckig alone).
        assert 'cannot stop' in str(error)
        return
    assert check_trajectory(start, path, limits, tolerance=0.01) == []
    optimum = ruckig_optimum(start, goal, limits)
    positions = np.array([optimum.at_time(t)[0] for t in np.linspace(0, optimum.duration, 400)])
    if np.all(positions > limits.lower + 0.01) and np.all(positions < limits.upper - 0.01):
        # a move below Ruckig's precision (its duration 0, or a subnormal like 4e-310 s) takes the landing
        # blend's few microseconds
        assert path.duration <= 1.01 * optimum.duration + (2e-5 if optimum.duration < 1e-12 else 1e-8)


@settings(max_examples=100, deadline=None)
@given(moves(), st.floats(0.05, 0.95))
def test_property_retargeting_from_any_state_of_a_planned_move_is_never_refused(move, when):
    first, goal, limits = move
    assume(np.all(np.abs(first.position) < 1.9))
    start = MotionState.at_rest(first.position)
    path = plan_move(start, goal, limits)
    pos, vel, acc, _ = sampler_of(start, path).evaluate(np.array([when * path.duration]))
    middle = MotionState(pos[0], vel[0], acc[0])
    target = np.clip(first.position[::-1] if len(goal) > 1 else -goal, -2.0, 2.0)
    second = plan_move(middle, target, limits)  # a valid state can always brake within the limits
    assert check_trajectory(middle, second, limits) == []


@pytest.mark.parametrize('displacement', [2.220446049250313e-16, 1e-12, 3e-9])
def test_a_move_too_small_for_ruckig_keeps_the_controllers_spline_within_the_limits(displacement):
    """Ruckig makes no move of a few 1e-16 rad (duration 0); the one point still comes late enough.

    No rest-to-rest move of e within acceleration A and jerk J is shorter than 2 sqrt(e / A) or
    (32 e / J)^(1/3) (bang-bang).  Found by hypothesis: the point was at 1 ns, where the controller's
    quintic reached 1249 rad/s^2, and re-planning from inside it failed.
    """
    limits = limits_of([1.0], [1.5])
    start = MotionState.at_rest(np.array([displacement]))
    path = plan_move(start, np.zeros(1), limits)
    T = path.duration
    assert T >= 2 * np.sqrt(displacement / 1.5) and T >= np.cbrt(32 * displacement / planning_jerk(limits)[0])
    _, _, acc, jerk = sampler_of(start, path).evaluate(np.linspace(0.0, T, 201))
    assert np.abs(acc).max() <= 1.5 * 1.01 and np.abs(jerk).max() <= planning_jerk(limits)[0] * 1.01
    pos, vel, acc, _ = sampler_of(start, path).evaluate(np.array([0.25 * T]))
    second = plan_move(MotionState(pos[0], vel[0], acc[0]), np.zeros(1), limits)
    assert check_trajectory(MotionState(pos[0], vel[0], acc[0]), second, limits) == []


def test_refusals_match_the_closed_form_stopping_distance():
    rng = np.random.default_rng(11)
    limits = limits_of([1.5], [3.0], [60.0], lower=-1.0, upper=1.0)
    for _ in range(300):
        room = rng.uniform(1e-4, 0.6)
        v = rng.uniform(0.0, 1.5)
        start = MotionState(np.array([1.0 - room]), np.array([v]), np.zeros(1))
        d = stopping_distance(v, 3.0, 60.0)
        if abs(d - room) < 1e-6:
            continue
        if d > room:
            with pytest.raises(PlanningError):
                plan_move(start, [0.0], limits)
        else:
            assert check_trajectory(start, plan_move(start, [0.0], limits), limits) == []


@pytest.mark.parametrize('bad,match', [
    ({'goal': [0.0, 9.0]}, 'goal position of joint j1'),
    ({'goal': [0.0, np.nan]}, 'NaN'),
    ({'goal': [0.0]}, 'shape'),
    ({'position': [4.0, 0.0]}, 'start position of joint j0'),
    ({'velocity': [np.inf, 0.0]}, 'start velocity'),
    ({'sample_period': 0.0}, 'sample_period'),
])
def test_bad_input_is_a_value_error(bad, match):
    limits = limits_of([1.0, 1.0], [1.0, 1.0])
    start = MotionState(np.array(bad.get('position', [0.0, 0.0])), np.array(bad.get('velocity', [0.0, 0.0])),
                        np.zeros(2))
    with pytest.raises(ValueError, match=match):
        plan_move(start, bad.get('goal', [0.5, 0.5]), limits, bad.get('sample_period', 0.05))


def test_unbounded_acceleration_cannot_be_planned():
    limits = replace(limits_of([1.0], [1.0]), acceleration=np.array([np.inf]))
    with pytest.raises(ValueError, match='acceleration limits must be finite'):
        plan_move(MotionState.at_rest([0.0]), [0.5], limits)


# -- joint paths -------------------------------------------------------------------------------------------------

def test_joint_path_along_a_line_stays_on_it_within_limits():
    limits = load_joint_limits_ik7()
    q0 = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
    direction = np.array([1.0, -0.5, 0.3, 0.8, -1.0, 0.2, 0.6])
    waypoints = q0 + np.linspace(0, 1, 41)[1:, None] * direction
    start = MotionState.at_rest(q0)
    path = plan_joint_path(start, waypoints, limits)
    assert check_trajectory(start, path, limits) == []
    pos = sampler_of(start, path).evaluate(np.arange(0, path.duration, 0.001))[0]
    along = (pos - q0) @ direction / (direction @ direction)
    np.testing.assert_allclose(pos, q0 + along[:, None] * direction, atol=1e-9)  # on the line
    assert np.all(np.diff(along) >= -1e-12)  # never backwards
    for q in waypoints:  # every waypoint is passed (at a time rounded to the nanosecond)
        assert np.min(np.abs(path.positions - q).max(axis=1)) < 1e-9
    # A straight joint line is one Ruckig move: close to Ruckig's own optimum (2 % margin of the path timing).
    optimum = ruckig_optimum(start, waypoints[-1], limits).duration
    assert optimum - 1e-6 <= path.duration < 1.05 * optimum


def test_joint_path_along_a_curve_respects_velocity_acceleration_and_jerk():
    limits = load_joint_limits_ik7()
    q0 = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
    s = np.linspace(0, 1, 121)[1:, None]
    waypoints = q0 + 0.4 * np.sin(np.pi * s * np.arange(1, 8) / 3)
    start = MotionState.at_rest(q0)
    path = plan_joint_path(start, waypoints, limits, sample_period=0.02)
    assert check_trajectory(start, path, limits) == []
    assert np.all(np.diff(np.concatenate([[0.0], path.times])) <= 0.02 + 1e-9)
    np.testing.assert_array_equal(path.positions[-1], waypoints[-1])
    assert not path.velocities[-1].any() and not path.accelerations[-1].any()


def test_joint_path_edge_cases():
    limits = limits_of([1.0, 1.0], [2.0, 2.0])
    start = MotionState.at_rest([0.0, 0.0])
    single = plan_joint_path(start, [[0.5, -0.5]], limits)
    assert check_trajectory(start, single, limits) == []
    still = plan_joint_path(start, [[0.0, 0.0], [0.0, 0.0]], limits)
    assert len(still.times) == 1 and not still.positions.any()
    with pytest.raises(PlanningError, match='needs the arm at rest.*joint j0 velocity 0.5'):
        plan_joint_path(MotionState(np.zeros(2), np.array([0.5, 0.0]), np.zeros(2)), [[0.5, 0.5]], limits)
    with pytest.raises(PlanningError, match='needs the arm at rest.*joint j1 acceleration'):
        plan_joint_path(MotionState(np.zeros(2), np.zeros(2), np.array([0.0, 0.1])), [[0.5, 0.5]], limits)
    with pytest.raises(ValueError, match='MAX_POINTS'):
        plan_joint_path(start, np.zeros((MAX_POINTS + 1, 2)), limits)
    with pytest.raises(ValueError, match='waypoint 1 position of joint j0'):
        plan_joint_path(start, [[0.5, 0.5], [5.0, 0.0]], limits)


def test_the_path_timing_measures_the_splines_jerk_exactly(rng):
    """Peak jerk of the controller's quintics: exact per segment, so the guard never finds more than was timed.

    Checked against a dense evaluation (10 us) on long, uneven segments, where sampling each segment at
    PATH_SUBSAMPLES points missed the peak by up to 6 %.
    """
    times = np.cumsum(rng.uniform(0.02, 0.08, 12))
    n = 3
    trajectory = Trajectory(times, rng.normal(size=(12, n)), rng.normal(size=(12, n)), rng.normal(size=(12, n)) * 5)
    sampler = SplineSampler(np.zeros(n), np.zeros(n), trajectory, np.zeros(n))
    dense = np.abs(sampler.evaluate(np.arange(0.0, times[-1], 1e-5))[3]).max(axis=0)
    exact = _jerk_peaks(sampler)
    assert np.all(exact >= dense * (1 - 1e-9)) and np.allclose(exact, dense, rtol=1e-3)
