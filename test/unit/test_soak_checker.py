"""The soak's command checker flags what a controller would execute beyond the limits, and passes what it would not.

Positive controls: a Ruckig-timed move (``plan_move``) passes; the same move played twice as fast, a step
at its start, a join that skips part of a different motion, and a forward_position stream with a jump are
flagged, each by the quantity at fault.  The interpolation itself is compared with closed forms of
joint_trajectory_controller's polynomials.
"""
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.timing import held, plan_move
from ik_solver_demos.tools.soak_checks import ControllerTrajectory, Limits, StreamCheck, TrajectoryCheck, Truth
from ik_solver_demos.tools.soak_lane import servo_lag, trailing
import numpy as np
import pytest

NAMES = ('a', 'b')
LOWER, UPPER = np.array([-2.0, -2.0]), np.array([2.0, 2.0])
VELOCITY, ACCELERATION, JERK = np.array([1.0, 1.5]), np.array([3.0, 4.0]), np.array([120.0, 160.0])


@pytest.fixture
def limits():
    return Limits(NAMES, LOWER, UPPER, VELOCITY, ACCELERATION, JERK)


def _move(goal, start=(0.0, 0.0), scale=0.9):
    planning = JointLimits(NAMES, LOWER, UPPER, VELOCITY * scale, ACCELERATION * scale, JERK * scale)
    return plan_move(MotionState.at_rest(np.array(start)), np.array(goal), planning)


def _points(path, time_scale=1.0):
    return [(t * time_scale, list(p), list(v / time_scale), list(a / time_scale ** 2))
            for t, p, v, a in zip(path.times, path.positions, path.velocities, path.accelerations)]


def _check(limits, points, start=(0.0, 0.0), arrival=100.0, stamp=0.0):
    checker = TrajectoryCheck(limits)
    checker.rest = (np.array(start), np.zeros(2), np.zeros(2))
    return checker.check(arrival, stamp, list(NAMES), points)[0]


def _quantities(violations):
    return {v['quantity'] for v in violations}


def test_a_ruckig_timed_move_passes(limits):
    """Sent as the IK node sends a move from rest: held there first, so the controller departs at a point."""
    path = held(_move((1.2, -0.7)), np.zeros(2), 0.05)
    assert _check(limits, _points(path)) == []


def test_the_same_move_twice_as_fast_breaks_velocity_and_acceleration(limits):
    path = _move((1.2, -0.7))
    found = _quantities(_check(limits, _points(path, 0.5)))
    assert {'velocity', 'acceleration', 'velocity over one period'} <= found, found


def test_a_step_at_the_start_is_flagged(limits):
    path = _move((1.2, -0.7))
    points = _points(path)
    # the controller rests 0.1 rad from where the move starts: it joins with a step
    found = _check(limits, points, start=(0.1, 0.0))
    assert 'velocity over one period' in _quantities(found), found
    assert any(v['joint'] == 'a' and abs(v['value']) > 50.0 for v in found), found


def test_a_positions_only_trajectory_steps_in_velocity(limits):
    path = _move((0.5, 0.0))
    # linear interpolation through the samples: the velocity steps at every point
    found = _quantities(_check(limits, [(t, p, [], []) for t, p, _, _ in _points(path)]))
    assert 'acceleration over one period' in found, found


def test_a_join_on_the_motion_under_way_passes_and_one_far_from_it_is_flagged(limits):
    path = _move((1.2, -0.7))
    checker = TrajectoryCheck(limits)
    checker.rest = (np.zeros(2), np.zeros(2), np.zeros(2))
    assert checker.check(100.0, 100.0, list(NAMES), _points(path))[0] == []
    # the same trajectory, stamped at its own start, joined 0.4 s in: seamless
    assert checker.check(100.4, 100.0, list(NAMES), _points(path))[0] == []
    # a move from rest at the start position, joined while the arm is under way: a step
    other = _move((-0.5, 0.5))
    found = _quantities(checker.check(100.6, 100.5, list(NAMES), _points(other))[0])
    assert found & {'velocity over one period', 'acceleration over one period'}, found


def test_a_join_splines_from_the_last_command_placed_one_period_early(limits):
    """joint_trajectory_controller (jazzy) places its last command one period before the instant it is for.

    A trajectory that goes on with the motion under way from its next point ahead is joined through a spline
    from that misplaced state: a velocity x 1 ms error made up before the point, peaks of acceleration and
    jerk.  The same trajectory from a point the controller has already passed runs on its own segments.
    """
    path = _move((1.2, -0.7))   # departs from rest at 100.0
    points = _points(path)
    checker = TrajectoryCheck(limits)
    checker.rest = (np.zeros(2), np.zeros(2), np.zeros(2))
    assert checker.check(99.96, 99.95, list(NAMES), _points(held(path, np.zeros(2), 0.05)))[0] == []
    arrival = 100.0 + 0.5 * (path.times[20] + path.times[21])   # cruising, between two points
    ahead = [p for p in points if 100.0 + p[0] > arrival]
    quantities = _quantities(checker.check(arrival, 100.0, list(NAMES), ahead)[0])
    assert {'acceleration', 'jerk over one period'} <= quantities, quantities
    later = arrival + 0.1
    passed = points[int(np.searchsorted(100.0 + path.times, later)) - 1:]
    assert 100.0 + passed[0][0] < later and checker.check(later, 100.0, list(NAMES), passed)[0] == []


def test_a_move_beyond_a_position_limit_is_flagged(limits):
    planning = JointLimits(NAMES, LOWER - 1.0, UPPER + 1.0, VELOCITY * 0.9, ACCELERATION * 0.9, JERK * 0.9)
    path = plan_move(MotionState.at_rest(np.zeros(2)), np.array([2.5, 0.0]), planning)
    assert 'position' in _quantities(_check(limits, _points(path)))


def test_malformed_trajectories_are_flagged(limits):
    path = _move((0.3, 0.3))
    points = _points(path)
    points[3] = (points[3][0], [np.nan, 0.0], points[3][2], points[3][3])
    assert _quantities(_check(limits, points)) == {'malformed'}
    assert _quantities(_check(limits, _points(path)[::-1])) == {'malformed'}


def test_quintic_and_cubic_segments_match_closed_forms():
    # rest to rest over h: the quintic is 10 s^3 - 15 s^4 + 6 s^5 of the distance, the cubic 3 s^2 - 2 s^3
    h, d = 0.8, np.array([0.6, -0.2])
    s = np.linspace(0.0, 1.0, 11)
    for accelerations, shape in (([[0, 0]], 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5), (None, 3 * s ** 2 - 2 * s ** 3)):
        rest = (np.zeros(2), np.zeros(2), np.zeros(2))
        t = ControllerTrajectory(10.0, [h], [d], [[0.0, 0.0]], accelerations, rest, 10.0)
        q, v, _ = t.sample(10.0 + s * h)
        assert np.allclose(q, shape[:, None] * d, atol=1e-12)
        assert np.allclose(v[[0, -1]], 0.0, atol=1e-12)
    # after the last point: held; before the state before: that state
    q, v, a = t.sample(np.array([9.0, 20.0]))
    assert np.allclose(q, [[0.0, 0.0], d]) and np.allclose(v, 0.0)


def test_a_smooth_stream_passes_and_a_jump_is_flagged(limits):
    period = 0.01
    stream = StreamCheck(limits, period)
    t = np.arange(60) * period
    q = np.stack([0.2 * (1 - np.cos(2.0 * t)), np.zeros_like(t)], axis=1)  # peak 0.4 rad/s, 0.8 rad/s^2
    assert all(stream.check(100.0 + ti, qi, held=np.zeros(2)) == [] for ti, qi in zip(t, q))
    found = stream.check(100.0 + 60 * period, q[-1] + [0.05, 0.0])
    assert {'velocity over one period', 'acceleration over one period'} <= _quantities(found), found
    # after a pause the stream starts afresh from the held target: a step is still a step
    found = stream.check(200.0, q[-1] + [0.5, 0.0])
    assert 'velocity over one period' in _quantities(found), found


def test_a_late_command_that_keeps_the_pace_passes_and_one_that_catches_up_is_flagged(limits):
    period = 0.01
    sent = [100.0 + k * period for k in range(20)] + [100.26, 100.29, 100.30]  # starved: 70 ms, then 30 ms late
    moving = np.array([-0.1 * period, 0.0])                                       # where it was a period before
    # one period of motion per command however late it is sent (0.1 rad/s per command): the arm moves slower
    stream = StreamCheck(limits, period)
    paced = [np.array([0.1 * period * k, 0.0]) for k in range(len(sent))]
    assert all(stream.check(t, qi, held=moving) == [] for t, qi in zip(sent, paced))
    # 35 mrad more in one period: a jump of 3.5 rad/s
    found = stream.check(100.31, paced[-1] + [0.035, 0.0])
    assert 'velocity over one period' in _quantities(found), found
    # a sender that catches up the 70 ms in one command steps 8 periods' motion at once
    stream = StreamCheck(limits, period)
    caught_up = [np.array([0.1 * (t - 100.0), 0.0]) for t in sent]
    found = [v for t, qi in zip(sent, caught_up) for v in stream.check(t, qi, held=moving)]
    assert 'acceleration over one period' in _quantities(found), found


def test_a_forward_position_target_may_lead_the_physics_by_its_servo_lag_at_the_true_speed():
    truth = Truth()
    for k in range(200):   # joint 0 at 2 rad/s, joint 1 at rest, sampled at 1 kHz
        truth.add(10.0 + k * 0.001, np.array([2.0 * k * 0.001, 0.5]))
    truth.freeze()
    lag = servo_lag()
    assert lag == pytest.approx(80.0 / 2000.0)   # the simulated arm's kv / kp: a PD servo trails by kv/kp x v
    allowance = trailing(lag, truth, 10.15, truth.at(10.15))
    assert allowance == pytest.approx([lag * 2.0, 0.0])
    assert np.all(trailing(lag, truth, 10.005, truth.at(10.005)) == 0.0)   # no velocity recorded before it
