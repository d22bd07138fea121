"""The joint_trajectory_controller contract: its rejections and its interpolation, against closed forms."""
from ik_solver.motion import jtc
import numpy as np
import pytest


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
    (['a', 'b'], [(0.1, [0, 0], [], [], []), (0.2, [0, 0], [0, float('inf')], [], [])], 'point 1 has NaN'),
    (['a', 'b'], [(0.1, [0, 0], [0.1, 0], [], [])], 'last point has non-zero velocities'),
    (['a', 'a'], [(0.1, [0, 0], [], [], [])], 'duplicate'),
    (['a', 'b'], [(0.1, [0, 2.0], [], [], [])], 'outside the joint limits'),
])
def test_jtc_rejections(names, points, reason):
    reasons = jtc.validate(names, points, ['a', 'b'], lower=[-1, -1], upper=[1, 1])
    assert any(reason in r for r in reasons), reasons


def test_jtc_lists_the_reasons_point_by_point():
    points = [(0.1, [0.0, float('nan')], [], [], []), (0.1, [0.0], [], [], [1.0])]
    assert jtc.validate(['a', 'b'], points, ['a', 'b']) == [
        'point 0 has NaN or inf values', 'time_from_start of point 1 is not strictly increasing',
        'point 1 has 1 positions for 2 joints', 'point 1 has effort, which a position-controlled joint cannot take']


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


def test_quintic_segment_meets_both_end_states_including_the_start_acceleration(rng):
    p0, v0, a0, p1, v1, a1 = rng.normal(size=(6, 3))
    h = 0.7
    sampler = jtc.SplineSampler(p0, v0, jtc.Trajectory(np.array([h]), p1[None], v1[None], a1[None]), a0)
    pos, vel, acc, _ = sampler.evaluate(np.array([0.0, h - 1e-12]))
    np.testing.assert_allclose([pos[0], vel[0], acc[0]], [p0, v0, a0], atol=1e-12)
    np.testing.assert_allclose([pos[1], vel[1], acc[1]], [p1, v1, a1], atol=1e-8)


def test_quintic_reproduces_any_quintic_and_its_derivatives(rng):
    """Samples of a known quintic at two times are interpolated into that same quintic."""
    c = rng.normal(size=6)
    poly = np.polynomial.Polynomial(c)
    t0, t1 = 0.0, 0.37
    state = [np.array([d(t)]) for t in (t0, t1) for d in (poly, poly.deriv(1), poly.deriv(2))]
    sampler = jtc.SplineSampler(state[0], state[1], jtc.Trajectory(np.array([t1]), state[3][None], state[4][None],
                                                                   state[5][None]), state[2])
    s = np.linspace(0, t1 * (1 - 1e-12), 9)  # at t1 the controller holds the last point
    pos, vel, acc, jerk = sampler.evaluate(s)
    for got, d in zip((pos, vel, acc, jerk), range(4)):
        np.testing.assert_allclose(got[:, 0], poly.deriv(d)(s), rtol=1e-9, atol=1e-9)


def test_derivatives_match_finite_differences_across_segments(rng):
    times = np.cumsum(rng.uniform(0.05, 0.2, 6))
    positions, velocities, accelerations = rng.normal(size=(3, 6, 2))
    velocities[-1] = accelerations[-1] = 0.0
    for v, a in ((velocities, accelerations), (velocities, None)):
        sampler = jtc.SplineSampler(np.zeros(2), np.ones(2), jtc.Trajectory(times, positions, v, a), np.ones(2))
        t = np.linspace(0.001, times[-1] - 0.001, 500)
        dt = 1e-6
        pos_plus, vel_plus, acc_plus, _ = sampler.evaluate(t + dt)
        pos_minus, vel_minus, acc_minus, _ = sampler.evaluate(t - dt)
        _, vel, acc, jerk = sampler.evaluate(t)
        smooth = np.min(np.abs(t[:, None] - np.concatenate([[0.0], times])[None]), axis=1) > 2 * dt
        np.testing.assert_allclose(((pos_plus - pos_minus) / (2 * dt))[smooth], vel[smooth], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(((vel_plus - vel_minus) / (2 * dt))[smooth], acc[smooth], rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(((acc_plus - acc_minus) / (2 * dt))[smooth], jerk[smooth], rtol=1e-5, atol=1e-2)


def test_hold_after_the_end_and_first_point_at_zero():
    trajectory = jtc.Trajectory(np.array([0.0, 1.0]), np.array([[1.0], [2.0]]), np.zeros((2, 1)), np.zeros((2, 1)))
    sampler = jtc.SplineSampler(np.zeros(1), np.zeros(1), trajectory)
    pos, vel, acc, jerk = sampler.evaluate(np.array([0.0, 5.0]))
    assert pos[0, 0] == 1.0  # a first point at time 0 is where the controller starts
    assert pos[1, 0] == 2.0 and vel[1, 0] == acc[1, 0] == jerk[1, 0] == 0.0
