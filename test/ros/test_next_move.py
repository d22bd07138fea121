"""How the next move takes over from the last command (CommandHistory.next_move), against an emulated JTC.

The truth here is the simulator's joint_trajectory_controller emulation (``sim.controllers``): it joins a
trajectory on arrival at its stamp, skips what lies before, and its LimitMonitor reports every step of its
reference (position and velocity changes per 1 ms tick) beyond the limits.  Clocks are exact and there is
no physics: what it reports is what the trajectories themselves do to a controller.
"""
import numpy as np
import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed')

from ik_solver.motion import jtc  # noqa: E402, I100
from ik_solver.motion.guard import check_trajectory  # noqa: E402
from ik_solver.motion.limits import JointLimits, MotionState  # noqa: E402
from ik_solver.motion.timing import plan_move  # noqa: E402
from ik_solver.ros.joint_states import CommandHistory  # noqa: E402
from ik_solver.sim.controllers import LimitMonitor, TrajectoryController  # noqa: E402

NAMES = ('a', 'b', 'c')
LIMITS = JointLimits(NAMES, np.full(3, -3.0), np.full(3, 3.0), np.full(3, 1.0), np.full(3, 3.0), np.full(3, 60.0))
TICK = 0.001


def _at_rest(q, t):
    return MotionState(q, np.zeros(3), np.zeros(3), t)


def _sampler(start, path):
    return jtc.SplineSampler(start.position, start.velocity, jtc.Trajectory(
        path.times, path.positions, path.velocities, path.accelerations), start.acceleration)


def _moving_history():
    """Return a history whose command is under way (moving) at t = 0.3 s, and its replay there."""
    history = CommandHistory()
    first = _at_rest(np.zeros(3), 0.0)
    history.sent(first, plan_move(first, np.array([1.0, -0.8, 0.5]), LIMITS, 0.05), 0.0)
    replay = history.reference(0.3)
    return history, MotionState(replay.position, replay.velocity, replay.acceleration, 0.3)


def test_a_move_from_motion_continues_the_last_command_exactly_then_departs_smoothly():
    history, start = _moving_history()
    assert np.abs(start.velocity).max() > 0.1
    goal = np.array([-0.5, 0.4, 1.0])
    origin, path = history.next_move(start, lambda state: plan_move(state, goal, LIMITS, 0.05), 0.05)
    assert origin.time <= start.time  # the last command's point before the start: the stamp moves back
    old, new = history._sent[3], _sampler(origin, path)
    times = np.arange(start.time, start.time + 0.05, TICK)
    for a, b in zip(old.evaluate(times - 0.0)[:3], new.evaluate(times - origin.time)[:3]):
        np.testing.assert_allclose(b, a, atol=1e-9)  # the lead time: what the controller already executes
    np.testing.assert_allclose(path.positions[-1], goal, atol=1e-9)
    assert check_trajectory(origin, path, LIMITS) == []  # and from there within the limits, jerk included


def test_a_start_off_the_replay_departs_at_once():
    history, start = _moving_history()
    measured = MotionState(start.position + 0.01, start.velocity, start.acceleration, start.time)
    origin, path = history.next_move(measured, lambda state: plan_move(state, np.zeros(3), LIMITS, 0.05), 0.05)
    assert origin is measured and history.continuation(measured, 0.05) is None


def test_a_controller_reference_follows_the_replay_unless_it_drifted():
    """A controller's reference stamped in the past stands for our replay now only if it is that replay."""
    history, start = _moving_history()
    earlier = history.reference(0.28)
    assert history.follows(MotionState(earlier.position, earlier.velocity, earlier.acceleration, 0.28))
    assert not history.follows(MotionState(earlier.position, earlier.velocity, earlier.acceleration, 0.3))
    scaled = history.reference(0.28 * 0.9)  # a speed-scaled controller is behind our replay
    assert not history.follows(MotionState(scaled.position, scaled.velocity, scaled.acceleration, 0.28))
    assert not CommandHistory().follows(start)
    goal = np.array([-0.5, 0.4, 1.0])
    origin, path = history.next_move(start, lambda state: plan_move(state, goal, LIMITS, 0.05), 0.05)
    history.sent(origin, path, origin.time)
    before = history._recent[0][3].evaluate(np.array([origin.time - 0.01]))  # the first command, before the second
    late = MotionState(before[0][0], before[1][0], before[2][0], origin.time - 0.01)
    assert history.follows(late)  # published late, or the controller has not taken the newest command yet


def test_a_path_never_carries_the_command_under_way():
    """A Cartesian path is planned from where the arm is: it does not go on with the last command first."""
    history, start = _moving_history()
    origin, path = history.next_move(start, lambda state: plan_move(state, np.zeros(3), LIMITS, 0.05), 0.05,
                                     follow=False)
    assert origin is start and path.hold == 0.0


def test_a_move_from_rest_holds_and_a_re_target_keeps_the_departure():
    history = CommandHistory()
    rest = _at_rest(np.zeros(3), 1.0)
    plan = lambda goal: lambda state: plan_move(state, goal, LIMITS, 0.05)  # noqa: E731
    start, path = history.next_move(rest, plan(np.full(3, 0.2)), 0.05)
    assert path.hold == pytest.approx(0.05) and path.times[0] == pytest.approx(0.05)
    history.sent(start, path, start.time)
    again = _at_rest(np.zeros(3), 1.02)
    _, second = history.next_move(again, plan(np.full(3, 0.3)), 0.05)
    assert second.hold == pytest.approx(0.03)  # departs at 1.05, as the held move would have


def _stream(lead, delays, rng, period=0.01, count=60):
    """Re-target a moving arm every ``period`` s, deliver each trajectory ``delays`` s late.

    Return the controller's reports, how many moves continued the command under way, and how many held
    the arm at rest for a whole lead time.
    """
    history = CommandHistory()
    controller = TrajectoryController(np.zeros(3), LimitMonitor(LIMITS, 0.01))
    goals = [np.array([np.sin(k / 9), np.cos(k / 7) - 1, 0.02 * k]) for k in range(count)]
    deliveries, reports, continued, holds = [], [], 0, 0
    for step in range(int((count * period + 1.5) / TICK)):
        now = step * TICK
        k = int(round(now / period))
        if k < count and abs(now - k * period) < TICK / 2:
            replay = history.reference(now)
            start = (_at_rest(np.zeros(3), now) if replay is None
                     else MotionState(replay.position, replay.velocity, replay.acceleration, now))
            origin, path = history.next_move(start, lambda state: plan_move(state, goals[k], LIMITS, 0.05), lead)
            assert check_trajectory(origin, path, LIMITS) == []
            continued += origin.time < now
            holds += lead > 0.0 and path.hold == pytest.approx(lead)
            history.sent(origin, path, origin.time)
            trajectory = jtc.Trajectory(path.times, path.positions, path.velocities, path.accelerations)
            deliveries.append((now + rng.uniform(*delays), trajectory, origin.time))
        while deliveries and deliveries[0][0] <= now + TICK / 2:
            arrival, trajectory, stamp = deliveries.pop(0)
            controller.load(trajectory, stamp, f'#{len(reports)}', arrival)
        reports += controller.update(now, TICK)[3]
    return reports, continued, holds


@pytest.mark.parametrize('lead', [0.05, 0.15])
def test_a_fast_stream_is_executed_without_steps_when_deliveries_come_within_the_lead_time(rng, lead):
    """A target that lands as the held first move departs (still at about zero speed) must not hold it again."""
    reports, continued, holds = _stream(lead, (0.0005, min(lead, 0.03)), rng)
    assert reports == [] and holds == 1 and continued > 40  # of 60 moves, the first from rest


def test_without_a_lead_time_the_same_stream_steps(rng):
    """The check above can fail: departing at once, every late join is a step in velocity and acceleration."""
    reports, _, _ = _stream(0.0, (0.0005, 0.03), rng)
    assert any(v.quantity == 'acceleration' for report in reports for v in report.violations)
