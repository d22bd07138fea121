"""The command guard checks what the controller will do, from the true start state, whichever planner ran."""
import pathlib

from ik_solver.core.chain import load_chain
from ik_solver.motion.guard import check_step, check_trajectory, MAX_DURATION, warm_up
from ik_solver.motion.limits import JointLimits, load_joint_limits, MotionState
from ik_solver.motion.timing import MAX_POINTS, plan_move, PlanningError, TimedPath
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def limits():
    chain = load_chain(str(ROOT / 'urdf' / 'ik7.urdf.xacro'), 'base_link', 'tool0')
    return load_joint_limits(chain, str(ROOT / 'config' / 'ik7_joint_limits.yaml')).limits


def one_joint(velocity=1.0, acceleration=2.0, jerk=np.inf):
    return JointLimits(('j',), np.array([-1.0]), np.array([1.0]), np.array([velocity]), np.array([acceleration]),
                       np.array([jerk]))


def path_of(times, positions, velocities=None, accelerations=None):
    arrays = [None if x is None else np.array(x, float).reshape(len(times), -1)
              for x in (positions, velocities, accelerations)]
    return TimedPath(np.array(times, float), *arrays)


def test_a_rest_to_rest_plan_from_a_moving_controller_leaves_the_limit(limits):
    """Regression: the old fallback planned from rest while the controller moved at half speed."""
    q0 = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
    q0[3] = limits.upper[3] - 0.001
    goal = q0.copy()
    goal[3] -= 0.05
    rest_to_rest = plan_move(MotionState.at_rest(q0), goal, limits)
    assert check_trajectory(MotionState.at_rest(q0), rest_to_rest, limits) == []  # fine if the arm were at rest
    moving = np.zeros(7)
    moving[3] = 0.5 * limits.velocity[3]
    reasons = check_trajectory(MotionState(q0, moving, np.zeros(7)), rest_to_rest, limits)
    assert any('joint4 leaves its upper limit' in r for r in reasons), reasons
    # Every point of that trajectory is inside: only the controller's spline leaves.
    assert np.all(rest_to_rest.positions <= limits.upper)


def test_random_moves_from_moving_states_none_leaves_the_limits(limits):
    """Regression: 600 random moves from moving states, many near a limit.

    Over 3 000 such moves the old planner left the limits in 291 (same sampling, measured once against
    the old code); now each is either refused because braking cannot stop in time, or passes the guard.
    """
    rng = np.random.default_rng(7)
    scaled = limits.scaled(0.5, 1.0)
    planned = 0
    for _ in range(600):
        q0 = rng.uniform(limits.lower, limits.upper)
        near = rng.random(7) < 0.3
        low = rng.random(7) < 0.5
        room = rng.uniform(0, 0.05, 7)
        q0[near] = np.where(low, limits.lower + room, limits.upper - room)[near]
        v0 = rng.uniform(-0.5, 0.5, 7) * limits.velocity
        goal = rng.uniform(limits.lower, limits.upper)
        goal[near] = np.clip(q0 + rng.uniform(-0.1, 0.1, 7), limits.lower, limits.upper)[near]
        start = MotionState(q0, np.clip(v0, -scaled.velocity, scaled.velocity), np.zeros(7))
        try:
            path = plan_move(start, goal, scaled)
        except PlanningError as error:
            assert 'cannot stop' in str(error)
            continue
        planned += 1
        assert check_trajectory(start, path, scaled) == []
    assert planned > 200 and 600 - planned > 100  # both outcomes are exercised (314 planned with this seed)


@pytest.mark.parametrize('case,expected', [
    ({'path': path_of([0.5], [[2.0]])}, 'leaves its upper limit'),
    ({'path': path_of([0.5], [[0.9]])}, 'velocity'),  # linear: 1.8 rad/s
    ({'path': path_of([0.5, 1.0], [[0.2], [0.4]])}, 'acceleration over one control period'),  # a velocity step
    ({'path': path_of([1.0], [[0.5]], [[0.0]])}, 'acceleration'),  # cubic: 3 m/s^2 at the start
    ({'path': path_of([1.0], [[0.1]], [[0.0]], [[0.0]]), 'jerk': 1.0}, 'jerk over one control period'),
    ({'path': path_of([1.0], [[0.1]], [[0.3]], [[0.0]])}, 'does not end at rest'),
    ({'path': path_of([0.0], [[0.1]], [[0.0]], [[0.0]])}, 'after the start'),
    ({'path': path_of([0.5, 0.5], [[0.1], [0.1]], [[0.0], [0.0]], [[0.0], [0.0]])}, 'strictly increasing'),
    ({'path': path_of([0.5], [[np.nan]], [[0.0]], [[0.0]])}, 'NaN'),
    ({'path': path_of([0.5], [[0.1, 0.2]], [[0.0]], [[0.0]])}, 'shape'),
    ({'path': TimedPath(np.arange(1, MAX_POINTS + 2) * 1e-3, np.zeros((MAX_POINTS + 1, 1)), None, None)},
     'MAX_POINTS'),
    ({'path': path_of([1.0], [[0.1]], [[0.0]], [[0.0]]),
      'start': MotionState(np.zeros(1), 0.2 * np.ones(1), np.zeros(1))}, None),
    # At t = 0 the controller steps from its own state to the spline's: 0.9 -> 0 rad/s in one period (900 rad/s^2).
    ({'path': path_of([1.0], [[0.0]]), 'start': MotionState(np.zeros(1), np.array([0.9]), np.zeros(1))},
     'acceleration over one control period 900 '),
    # A cubic holding at 0 has no acceleration, whatever the controller's 1.9: a 1900 rad/s^3 step at t = 0.
    ({'path': path_of([1.0], [[0.0]], [[0.0]]), 'jerk': 10.0,
      'start': MotionState(np.zeros(1), np.zeros(1), np.array([1.9]))}, 'jerk over one control period 1900 '),
    ({'path': path_of([MAX_DURATION + 1.0], [[0.1]], [[0.0]], [[0.0]])}, 'MAX_DURATION'),
    ({'path': path_of([1.0], [[0.1]], [[0.0]], [[0.0]]), 'tolerance': np.nan}, 'tolerance'),
    ({'path': path_of([1.0], [[0.1]], [[0.0]], [[0.0]]), 'tolerance': -0.5}, 'tolerance'),
    ({'path': path_of([1.0], [[0.1]], [[0.0]], [[0.0]]),
      'start': MotionState(np.zeros(1), np.array([np.nan]), np.zeros(1))}, 'start velocity'),
])
def test_each_violation_is_reported(case, expected):
    limits = one_joint(jerk=case.get('jerk', np.inf))
    start = case.get('start', MotionState.at_rest(np.zeros(1)))
    reasons = check_trajectory(start, case['path'], limits, tolerance=case.get('tolerance', 0.01))
    if expected is None:
        assert reasons == []  # from 0.2 rad/s to rest 0.1 rad on: |a| <= 0.3 (closed form)
    else:
        assert any(expected in r for r in reasons), reasons


def test_tolerance_is_relative_to_the_limit():
    limits = one_joint(velocity=1.0, acceleration=100.0)
    start = MotionState(np.zeros(1), np.array([1.005]), np.zeros(1))
    path = path_of([1.0], [[0.5]], [[0.0]], [[0.0]])  # the quintic only slows down: peak 1.005 at the start
    assert check_trajectory(start, path, limits, tolerance=0.01) == []
    assert check_trajectory(start, path, limits, tolerance=0.001) != []


def test_check_step_for_streamed_commands():
    limits = one_joint(velocity=1.0, acceleration=2.0, jerk=100.0)
    previous = MotionState(np.array([0.0]), np.array([0.5]), np.array([0.0]))
    assert check_step(previous, [0.005], [0.5], 0.01, limits) == []
    assert check_step(previous, [0.005], None, 0.01, limits) == []  # velocity from the position change
    assert any('velocity' in r for r in check_step(previous, [0.02], None, 0.01, limits))
    assert any('acceleration' in r for r in check_step(previous, [0.0055], [0.55], 0.01, limits))
    assert any('jerk' in r for r in check_step(previous, [0.00515], [0.515], 0.01, limits))
    assert any('upper limit' in r for r in check_step(MotionState.at_rest([0.999]), [1.001], [0.0], 0.01,
                                                      one_joint(acceleration=1e6, jerk=np.inf)))
    assert check_step(previous, [np.nan], [0.5], 0.01, limits) == ['command has NaN or inf values']
    assert 'positions for 1 joints' in check_step(previous, [0.0, 0.0], None, 0.01, limits)[0]
    assert 'step time' in check_step(previous, [0.0], None, 0.0, limits)[0]
    for bad in (MotionState([np.nan], [0.5], [0.0]), MotionState([0.0], [np.inf], [0.0]),
                MotionState([0.0], [0.5], [np.nan]), MotionState([0.0, 0.0], [0.5], [0.0])):
        assert any('previous' in r for r in check_step(bad, [0.005], [0.5], 0.01, limits))
    for tolerance in (np.nan, np.inf, -0.01, 'big'):
        assert any('tolerance' in r for r in check_step(previous, [0.005], [0.5], 0.01, limits, tolerance))


def test_nan_bounds_and_values_count_as_violations():
    """A NaN bound or value is a violation (it used to pass, as NaN > bound is False)."""
    nan_limit = one_joint(velocity=np.nan, acceleration=100.0)
    previous = MotionState(np.array([0.0]), np.array([0.5]), np.array([0.0]))
    assert any('velocity' in r for r in check_step(previous, [0.005], [0.5], 0.01, nan_limit))
    assert any('velocity' in r for r in check_trajectory(MotionState.at_rest([0.0]),
                                                         path_of([1.0], [[0.1]], [[0.0]], [[0.0]]), nan_limit))


def test_long_trajectory_is_scanned_in_constant_memory():
    """A 500 s move (issue: 1.36 s CPU, ~500 MB at once) is scanned without an array of its 500 000 ticks."""
    tracemalloc = pytest.importorskip('tracemalloc')
    limits = one_joint(velocity=1.0, acceleration=2.0)
    path = path_of([250.0, 500.0], [[0.5], [0.0]], [[0.0], [0.0]], [[0.0], [0.0]])
    check_trajectory(MotionState.at_rest([0.0]), path, limits)  # compiled
    tracemalloc.start()
    try:
        reasons = check_trajectory(MotionState.at_rest([0.0]), path, limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reasons == []
    assert peak < 1e6


def test_warm_up_plans_and_checks_without_error():
    """The node's start-up call runs every kernel path (planning, safe and failing checks, sampling)."""
    assert warm_up() is None
