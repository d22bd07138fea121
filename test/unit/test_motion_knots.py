"""A Ruckig move is sent as knots at its phase switches: the controller's quintics through them are the profile.

Truths: Ruckig's own trajectory (``at_time``), asked directly, and the limits; the controller's interpolation is
``jtc.SplineSampler``'s.  The point count is checked against the switch times Ruckig reports.
"""
from ik_solver.motion.guard import check_trajectory
from ik_solver.motion.jtc import SplineSampler, Trajectory
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.timing import MIN_GAP, plan_move, planning_jerk
import numpy as np
import pytest
import ruckig

N = 7


def _limits(jerk):
    return JointLimits(tuple(f'j{i}' for i in range(N)), np.full(N, -3.0), np.full(N, 3.0),
                       np.linspace(1.0, 2.0, N), np.linspace(3.0, 6.0, N), np.full(N, jerk))


def _ruckig(start, goal, limits):
    inp = ruckig.InputParameter(N)
    inp.current_position, inp.current_velocity = list(start.position), list(start.velocity)
    inp.current_acceleration = list(start.acceleration)
    inp.target_position, inp.target_velocity, inp.target_acceleration = list(goal), [0.0] * N, [0.0] * N
    inp.max_velocity, inp.max_acceleration = list(limits.velocity), list(limits.acceleration)
    inp.max_jerk = list(planning_jerk(limits))
    trajectory = ruckig.Trajectory(N)
    assert ruckig.Ruckig(N).calculate(inp, trajectory) in (ruckig.Result.Working, ruckig.Result.Finished)
    return trajectory


def _switches(trajectory):
    """Phase switch times of every joint in (0, duration), as Ruckig reports them."""
    times = []
    for profile in trajectory.profiles[0]:
        times += list(np.cumsum(profile.t) + profile.brake.duration) + list(np.cumsum(profile.brake.t))
    times = np.unique(np.rint(np.array(times) * 1e9)) / 1e9
    return times[(times > 0.0) & (times < trajectory.duration - MIN_GAP)]


def _streamed_moves(rng, count):
    """Yield moves as a stream makes them: a moving start, a goal a few centimetres of joint motion away."""
    for _ in range(count):
        start = MotionState(rng.uniform(-1, 1, N), rng.uniform(-0.3, 0.3, N), rng.uniform(-1.0, 1.0, N))
        yield start, start.position + rng.uniform(-0.05, 0.05, N)


@pytest.mark.parametrize('jerk', [40.0, np.inf])
def test_the_controller_runs_the_ruckig_profile_through_the_knots(rng, jerk):
    limits = _limits(jerk)
    for start, goal in _streamed_moves(rng, 20):
        path = plan_move(start, goal, limits, sample_period=0.1)
        truth = _ruckig(start, goal, limits)
        ticks = np.arange(0.0, truth.duration, 0.001)
        expected = np.array([truth.at_time(t)[0] for t in ticks])
        sampler = SplineSampler(start.position, start.velocity,
                                Trajectory(path.times, path.positions, path.velocities, path.accelerations),
                                start.acceleration)
        position, velocity, acceleration, jolt = sampler.evaluate(ticks)
        assert np.abs(position - expected).max() <= 1e-6
        assert np.all(np.abs(velocity) <= limits.velocity * (1 + 1e-6))
        assert np.all(np.abs(acceleration) <= limits.acceleration * (1 + 1e-6))
        assert np.all(np.abs(jolt) <= planning_jerk(limits) * (1 + 1e-3))
        assert check_trajectory(start, path, limits) == []
        np.testing.assert_array_equal(path.positions[-1], goal)


def test_a_streamed_move_has_points_only_at_its_switches_the_end_and_in_long_gaps(rng):
    limits = _limits(40.0)
    for start, goal in _streamed_moves(rng, 20):
        path = plan_move(start, goal, limits, sample_period=0.05)
        switches = _switches(_ruckig(start, goal, limits))
        gaps = np.diff(np.concatenate([[0.0], switches, [path.duration]]))
        assert len(path.times) == len(switches) + 1 + int(np.sum(np.ceil(gaps / 0.05) - 1))
        assert all(np.abs(path.times - t).min() < 1e-9 for t in switches)


def test_a_long_gap_gets_points_no_further_apart_than_the_sample_period():
    limits = _limits(40.0)
    start = MotionState.at_rest(np.zeros(N))
    path = plan_move(start, np.full(N, 2.5), limits, sample_period=0.05)
    assert np.diff(np.concatenate([[0.0], path.times])).max() <= 0.05 + 1e-9
    switches = _switches(_ruckig(start, np.full(N, 2.5), limits))
    assert all(np.abs(path.times - t).min() < 1e-9 for t in switches)
    assert check_trajectory(start, path, limits) == []
