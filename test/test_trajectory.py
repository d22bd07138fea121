"""Trajectory timing and the joint_trajectory_controller contract, against closed forms."""
from ik_solver.motion import jtc
from ik_solver.motion.timing import move_duration, PEAK_VELOCITY_FACTOR, plan_move, quintic
import numpy as np
import pytest


def points_of(path):
    return [(t, list(q), list(v), list(a), []) for t, q, v, a in
            zip(path.times, path.positions, path.velocities, path.accelerations)]


def test_rest_to_rest_duration_from_velocity_limits():
    q0, q1 = np.zeros(3), np.array([1.0, -0.5, 0.2])
    limits = np.array([2.0, 0.5, 1.0])
    # joint 1 limits: 15/8 * 0.5 / (0.5 * 0.5) = 3.75 s
    assert move_duration(q0, q1, limits, 0.5) == pytest.approx(PEAK_VELOCITY_FACTOR * 0.5 / 0.25)
    assert move_duration(q0, q0, limits, 0.5, min_duration=0.3) == 0.3
    with pytest.raises(ValueError, match='velocity_scaling'):
        move_duration(q0, q1, limits, 0.0)


def test_rest_to_rest_plan_respects_limits_and_ends_at_rest(rng):
    for _ in range(20):
        q0, q1 = rng.uniform(-2, 2, 4), rng.uniform(-2, 2, 4)
        limits = rng.uniform(0.5, 3.0, 4)
        path = plan_move(q0, q1, limits, 0.8, 0.1, 0.01)
        assert path.times[0] > 0 and np.all(np.diff(path.times) > 0)
        np.testing.assert_array_equal(path.positions[-1], q1)
        assert not path.velocities[-1].any() and not path.accelerations[-1].any()
        assert np.all(np.abs(path.velocities) <= 0.8 * limits * (1 + 1e-9))
        # a convex combination of the end points: never outside their box
        lo, hi = np.minimum(q0, q1), np.maximum(q0, q1)
        assert np.all(path.positions >= lo - 1e-12) and np.all(path.positions <= hi + 1e-12)
        assert not jtc.validate(['a', 'b', 'c', 'd'], points_of(path), ['a', 'b', 'c', 'd'])


def test_plan_from_moving_state_continues_velocity_and_respects_limits():
    q0, v0, q1 = np.array([0.0, 0.0]), np.array([0.6, -0.2]), np.array([0.3, 0.1])
    limits = np.array([1.0, 1.0])
    path = plan_move(q0, q1, limits, 1.0, 0.2, 0.001, v_start=v0)
    trajectory = jtc.Trajectory(path.times, path.positions, path.velocities, path.accelerations)
    sampler = jtc.SplineSampler(q0, v0, trajectory)
    # The first sample continues the current velocity: no jump at the start.
    np.testing.assert_allclose(sampler.sample(1e-6)[1], v0, atol=1e-3)
    assert np.all(np.abs(path.velocities) <= limits * (1 + 1e-9))


def test_overshoot_past_a_limit_falls_back_to_rest_to_rest():
    q0, v0, q1 = np.array([0.9]), np.array([1.0]), np.array([0.95])
    path = plan_move(q0, q1, np.array([1.0]), 1.0, 0.5, 0.01, v_start=v0, lower=np.array([-1.0]),
                     upper=np.array([1.0]))
    assert path.positions.max() <= 1.0
    assert path.velocities[0, 0] < v0[0]  # it did not continue at full speed


def test_quintic_boundary_conditions(rng):
    p0, v0, a0, p1, v1, a1 = rng.normal(size=6)
    h = 0.7
    np.testing.assert_allclose(quintic(p0, v0, a0, p1, v1, a1, h, 0.0), (p0, v0, a0), atol=1e-12)
    np.testing.assert_allclose(quintic(p0, v0, a0, p1, v1, a1, h, h), (p1, v1, a1), atol=1e-9)


@pytest.mark.parametrize('names,points,reason', [
    ([], [(0.1, [0.0], [], [], [])], 'empty joint_names'),
    (['a', 'x'], [(0.1, [0, 0], [], [], [])], 'incoming joint'),
    (['a'], [(0.1, [0.0], [], [], [])], 'partial joint goals'),
    (['a', 'b'], [], 'empty trajectory'),
    (['a', 'b'], [(0.2, [0, 0], [], [], []), (0.2, [0, 0], [], [], [])], 'not strictly increasing'),
    (['a', 'b'], [(0.1, [0], [], [], [])], '1 positions for 2 joints'),
    (['a', 'b'], [(0.1, [0, 0], [1], [], [])], '1 velocities'),
    (['a', 'b'], [(0.1, [0, 0], [0, 0], [], [1, 1])], 'effort'),
    (['a', 'b'], [(0.1, [0, float('nan')], [], [], [])], 'NaN'),
    (['a', 'b'], [(0.1, [0, 0], [0.1, 0], [], [])], 'last point has non-zero velocities'),
    (['a', 'a'], [(0.1, [0, 0], [], [], [])], 'duplicate'),
    (['a', 'b'], [(0.1, [0, 2.0], [], [], [])], 'outside the joint limits'),
])
def test_jtc_rejections(names, points, reason):
    reasons = jtc.validate(names, points, ['a', 'b'], lower=[-1, -1], upper=[1, 1])
    assert any(reason in r for r in reasons), reasons


def test_jtc_accepts_any_joint_order_and_reorders():
    points = [(0.5, [0.2, 0.1], [0.0, 0.0], [], [])]
    assert jtc.validate(['b', 'a'], points, ['a', 'b']) == []
    t = jtc.reorder(['b', 'a'], points, ['a', 'b'])
    np.testing.assert_array_equal(t.positions[0], [0.1, 0.2])
    assert t.accelerations is None


def test_spline_sampler_linear_cubic_and_hold():
    linear = jtc.SplineSampler(np.zeros(1), np.zeros(1), jtc.Trajectory(np.array([1.0]), np.array([[2.0]])))
    assert linear.sample(0.5)[0][0] == pytest.approx(1.0)
    cubic = jtc.SplineSampler(np.zeros(1), np.zeros(1),
                              jtc.Trajectory(np.array([1.0]), np.array([[1.0]]), np.array([[0.0]])))
    q, v = cubic.sample(0.5)
    assert q[0] == pytest.approx(0.5) and v[0] == pytest.approx(1.5)  # 3 s^2 - 2 s^3, peak 1.5
    q, v = cubic.sample(3.0)
    assert q[0] == 1.0 and v[0] == 0.0
