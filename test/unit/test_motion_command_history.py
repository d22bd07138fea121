"""Our commands as the controller executes them (motion.command_history): the replay, and the next move.

The replay is checked against the trajectory's own samples; how the next move takes over
(``CommandHistory.next_move``) against an emulated JTC.  A stream of moves through a controller that
joins them late is in test_motion_commander.py, through the whole pipeline.

The truth here is the simulator's joint_trajectory_controller emulation (``sim.controllers``): it joins a
trajectory on arrival at its stamp, skips what lies before, and its LimitMonitor reports every step of its
reference (position and velocity changes per 1 ms tick) beyond the limits.  Clocks are exact and there is
no physics: what it reports is what the trajectories themselves do to a controller.
"""
from ik_solver.motion import jtc
from ik_solver.motion.command_history import CommandHistory
from ik_solver.motion.guard import check_trajectory
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.start_state import choose_start
from ik_solver.motion.timing import plan_move
import numpy as np
import pytest

NAMES = ('a', 'b', 'c')
LIMITS = JointLimits(NAMES, np.full(3, -3.0), np.full(3, 3.0), np.full(3, 1.0), np.full(3, 3.0), np.full(3, 60.0))
TICK = 0.001


def _at_rest(q, t):
    return MotionState(q, np.zeros(3), np.zeros(3), t)


def _sampler(start, path):
    return jtc.SplineSampler(start.position, start.velocity, jtc.Trajectory(
        path.times, path.positions, path.velocities, path.accelerations), start.acceleration)


def test_the_replay_follows_the_trajectory_as_sent():
    history = CommandHistory(clock=lambda: 0.0)
    assert history.reference() is None
    home = np.array([0.1, -0.2, 0.3])
    start = MotionState(home, np.array([0.2, 0.0, -0.1]), np.zeros(3))
    path = plan_move(start, home + [0.5, -0.4, 0.2], LIMITS)
    history.sent(start, path, t0=100.0)
    for k in range(len(path.times)):
        reference = history.reference(now=100.0 + path.times[k])
        np.testing.assert_allclose(reference.position, path.positions[k], atol=1e-9)
        np.testing.assert_allclose(reference.velocity, path.velocities[k], atol=1e-9)
    after = history.reference(now=100.0 + path.duration + 1.0)
    np.testing.assert_allclose(after.position, path.positions[-1])
    assert not after.velocity.any() and not after.acceleration.any()
    np.testing.assert_allclose(history.reference().position, start.position)   # its clock: 0, before it started
    expected = history.expectation(100.0 + path.duration + 0.2, LIMITS.velocity, 0.25)
    np.testing.assert_allclose(expected.upper - np.maximum(home, path.positions.max(axis=0)), 0.2)  # 1 rad/s x 0.2 s
    expected = history.expectation(100.0 + path.duration + 2.0, LIMITS.velocity, 0.25)
    np.testing.assert_allclose(expected.upper - np.maximum(home, path.positions.max(axis=0)), 0.25)  # capped


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


def test_a_measurement_older_than_the_newest_command_is_compared_with_the_command_then():
    """A reading from before the newest command started belongs to the command the arm was following then.

    Compared with the newest command's start instead, a reading 0.4 s old from a driver that fell silent
    looked 0.1 rad off the command, won over the replay and became a move's start: a step of 0.1 rad.
    """
    history, start = _moving_history()
    goal = np.array([-0.5, 0.4, 1.0])
    origin, path = history.next_move(start, lambda state: plan_move(state, goal, LIMITS, 0.05), 0.05)
    history.sent(origin, path, origin.time)
    first = history._recent[0][3]
    q, v, _, _ = first.evaluate(np.array([0.1]))
    then = history.reference(0.1)
    np.testing.assert_allclose(then.position, q[0], atol=1e-12)
    np.testing.assert_allclose(then.velocity, v[0], atol=1e-12)
    assert np.abs(then.position - start.position).max() > 0.05   # the newest command's start is elsewhere
    measured = MotionState(q[0], np.zeros(3), np.zeros(3), 0.1)  # the driver's last reading, at rest
    chosen = choose_start(measured, None, history, 0.5, 0.05, LIMITS.lower, LIMITS.upper)
    np.testing.assert_allclose(chosen.position, history.reference(0.5).position)
    assert chosen.time == 0.5 and np.abs(chosen.velocity).max() > 0.1   # the replay now, moving


def test_a_reading_from_before_the_newest_command_is_expected_where_the_command_then_took_the_arm():
    """The envelope of a reading's instant unites the command run then and those sent since, no older one.

    A true joint state read late (a simulator behind the wall clock by up to 0.4 s, a driver's delay) shows
    the arm where an earlier command of a stream took it, which the newest command need not pass.  Before
    every command kept, only the newest counts: nothing kept says where the arm was then.
    """
    history = CommandHistory()
    rest = _at_rest(np.zeros(3), 0.0)
    first = plan_move(rest, np.array([1.0, -0.8, 0.5]), LIMITS, 0.05)
    history.sent(rest, first, 0.0)
    there = _at_rest(first.positions[-1], 5.0)
    back = plan_move(there, np.array([0.6, -0.5, 0.2]), LIMITS, 0.05)
    history.sent(there, back, 5.0)
    early = history.reference(0.2).position   # on the first command, before the second started
    late = history.expectation(5.1, LIMITS.velocity, 0.25)
    assert np.any(early < late.lower)   # the newest command alone never takes the arm there
    then = history.expectation(0.2, LIMITS.velocity, 0.25)
    assert np.all(then.lower <= early) and np.all(early <= then.upper)
    np.testing.assert_allclose(then.lower, np.minimum.reduce([rest.position, first.positions.min(axis=0),
                                                              back.positions.min(axis=0)]))
    np.testing.assert_allclose(then.upper, np.maximum.reduce([rest.position, first.positions.max(axis=0),
                                                              back.positions.max(axis=0)]))
    before = history.expectation(-1.0, LIMITS.velocity, 0.25)   # before both
    np.testing.assert_allclose(before.lower, late.lower)
    np.testing.assert_allclose(before.upper, late.upper)
    assert late.origin == then.origin == 5.0   # the newest command is the one a waiver names


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


def test_a_move_from_rest_holds_and_a_re_target_goes_on_with_its_departure():
    history = CommandHistory()
    rest = _at_rest(np.zeros(3), 1.0)
    plan = lambda goal: lambda state: plan_move(state, goal, LIMITS, 0.05)  # noqa: E731
    start, path = history.next_move(rest, plan(np.full(3, 0.2)), 0.05)
    assert path.hold == pytest.approx(0.05) and path.times[0] == pytest.approx(0.05)
    history.sent(start, path, start.time)
    again = _at_rest(np.zeros(3), 1.02)
    origin, second = history.next_move(again, plan(np.full(3, 0.3)), 0.05)
    # it goes on with the held move, which departs at 1.05, for the lead time: the controller may have
    # departed along it when the re-target arrives
    assert origin.time == 1.0 and second.times[0] == pytest.approx(0.05) and second.state_time == pytest.approx(0.02)
    old, new = _sampler(start, path), _sampler(origin, second)
    times = np.arange(1.02, 1.07, TICK)
    for a, b in zip(old.evaluate(times - 1.0)[:3], new.evaluate(times - 1.0)[:3]):
        np.testing.assert_allclose(b, a, atol=1e-9)
    np.testing.assert_allclose(second.positions[-1], 0.3, atol=1e-9)
    # a path, which must start at rest, departs when the held move would have
    _, path_after = history.next_move(again, plan(np.full(3, 0.3)), 0.05, follow=False)
    assert path_after.hold == pytest.approx(0.03)
