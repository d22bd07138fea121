"""The IK node's motion policy (motion.commander) in-process, on a simulated clock: no ROS, no processes.

The truths: a move planned independently with ``plan_move`` from the state the policy must pick, the
command's own replay (``jtc.SplineSampler``), the guard's limits check, and the simulator's emulation of
joint_trajectory_controller (``sim.controllers``), which reports every step its reference takes beyond the
limits when it joins trajectories at their stamps.  Time passes only when a test moves the clock, so
nothing here depends on the load of the machine.
"""
from dataclasses import replace

from ik_solver.motion import jtc
from ik_solver.motion.command_history import CommandHistory
from ik_solver.motion.commander import Commander, CommanderSettings, StateSources
from ik_solver.motion.guard import check_trajectory
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.start_state import StateError
from ik_solver.motion.timing import plan_move
from ik_solver_demos.sim.controllers import LimitMonitor, TrajectoryController
import numpy as np
import pytest

NAMES = ('a', 'b', 'c')
LIMITS = JointLimits(NAMES, np.full(3, -2.0), np.full(3, 2.0), np.full(3, 1.0), np.full(3, 4.0), np.full(3, 60.0))
HOME = np.array([0.1, -0.2, 0.3])
LEAD = 0.05
PERIOD = 0.01


class Clock:
    """A simulated monotonic clock [s]: time passes only when told."""

    def __init__(self, t=100.0):
        self.t = t

    def __call__(self):
        return self.t

    def advance(self, dt):
        self.t += dt


class Arm:
    """The state sources of a simulated arm: a believed measurement and, optionally, a controller reference."""

    def __init__(self, clock, q=HOME):
        self.clock = clock
        self.measured = MotionState.at_rest(q)
        self.reference = None       # MotionState stamped on the clock, or None (no controller_state)
        self.error = None           # a StateError the tracker would raise

    def measure(self):
        if self.error is not None:
            raise self.error
        return replace(self.measured, time=self.clock())

    def sources(self):
        return StateSources(self.measure, lambda: self.reference)


class Transport:
    """Records what reached the controller; ``problem``: what a missing action server answers."""

    def __init__(self, problem=None):
        self.sent, self.problem = [], problem

    def __call__(self, names, path, t0):
        if self.problem is None:
            self.sent.append((names, path, t0))
        return self.problem


class SlowCollision:
    """A collision model that holds the guard up ``delays[k]`` s at its k-th check (a loaded executor)."""

    def __init__(self, clock, delays):
        self.clock, self.delays, self.checks = clock, list(delays), []

    def check_path(self, Q):
        self.checks.append(self.clock())
        if len(self.checks) <= len(self.delays):
            self.clock.advance(self.delays[len(self.checks) - 1])
        return None


def _commander(clock, arm, transport, **settings):
    values = {'names': NAMES, 'limits': LIMITS, 'lead_time': LEAD, 'sample_period': PERIOD, 'state_tolerance': 0.05}
    values.update(settings)
    return Commander(CommanderSettings(**values), arm.sources(), transport, CommandHistory(clock), clock)


@pytest.fixture
def setup():
    clock = Clock()
    arm = Arm(clock)
    transport = Transport()
    return clock, arm, transport, _commander(clock, arm, transport)


# -- the start state -------------------------------------------------------------------------------------------


def test_without_a_command_or_a_reference_a_move_starts_from_the_measurement_now(setup):
    clock, arm, _, commander = setup
    arm.measured = MotionState(HOME, np.array([0.1, 0.0, 0.0]), np.zeros(3), clock() - 0.3)
    start = commander.start_state()
    np.testing.assert_array_equal(start.position, HOME)
    np.testing.assert_array_equal(start.velocity, [0.1, 0.0, 0.0])
    assert start.time == clock()


def test_a_controller_reference_is_the_start_at_its_own_stamp(setup):
    """A moving reference stamped 20 ms ago taken for now would be a step: its stamp is the start's instant."""
    clock, arm, _, commander = setup
    arm.reference = MotionState(HOME + 0.01, np.full(3, 0.2), np.zeros(3), clock() - 0.02)
    start = commander.start_state()
    assert start.time == clock() - 0.02
    np.testing.assert_array_equal(start.position, HOME + 0.01)
    np.testing.assert_array_equal(start.velocity, 0.2)


def test_a_reference_the_arm_does_not_follow_refuses_the_move(setup):
    clock, arm, transport, commander = setup
    arm.reference = MotionState(HOME + [0.0, 0.3, 0.0], np.zeros(3), np.zeros(3), clock())
    with pytest.raises(StateError, match=r"0\.300 rad from the controller's reference") as refused:
        commander.start_state()
    assert refused.value.reason == 'inconsistent_state'
    result = commander.move(HOME + 0.1)
    assert result.reason == 'inconsistent_state' and not result.sent and not transport.sent


def test_a_reference_within_noise_of_a_limit_is_clipped_to_it(setup):
    clock, arm, _, commander = setup
    arm.measured = MotionState.at_rest([2.0, 0.0, -2.0])
    arm.reference = MotionState(np.array([2.004, 0.0, -2.004]), np.zeros(3), np.zeros(3), clock())
    np.testing.assert_array_equal(commander.start_state().position, [2.0, 0.0, -2.0])


def test_no_believed_measurement_refuses_even_with_a_reference(setup):
    clock, arm, transport, commander = setup
    arm.reference = MotionState.at_rest(HOME)
    arm.error = StateError('stale_state', 'no joint state received yet')
    with pytest.raises(StateError, match='no joint state'):
        commander.start_state()
    assert commander.move(HOME + 0.1).reason == 'stale_state' and not transport.sent


def _sent_move(clock, commander, goal):
    result = commander.move(goal)
    assert result.sent, result.message
    return result


def test_after_a_command_the_replay_is_the_start_now(setup):
    """Without a controller reference, our command as the controller interpolates it is the start."""
    clock, arm, _, commander = setup
    first = _sent_move(clock, commander, HOME + 0.4)
    clock.advance(0.3)
    replay = jtc.SplineSampler(first.start.position, first.start.velocity, jtc.Trajectory(
        first.path.times, first.path.positions, first.path.velocities, first.path.accelerations))
    q, v, _, _ = replay.evaluate(np.array([clock() - first.start.time]))
    arm.measured = MotionState.at_rest(q[0] + 0.01)   # within state_tolerance of the replay
    start = commander.start_state()
    np.testing.assert_allclose(start.position, q[0], atol=1e-12)
    np.testing.assert_allclose(start.velocity, v[0], atol=1e-12)
    assert start.time == clock() and np.abs(v[0]).max() > 0.1


def test_the_measurement_wins_over_a_replay_it_disagrees_with(setup):
    clock, arm, _, commander = setup
    _sent_move(clock, commander, HOME + 0.4)
    clock.advance(0.3)
    arm.measured = MotionState.at_rest(HOME)   # the arm did not move: another client, or a dead driver
    start = commander.start_state()
    np.testing.assert_array_equal(start.position, HOME) and np.testing.assert_array_equal(start.velocity, 0.0)
    assert start.time == clock()


def test_a_reference_that_follows_our_command_stands_for_the_replay_now(setup):
    """A reference published 20 ms late is our replay then: the start is the replay now, exact."""
    clock, arm, _, commander = setup
    _sent_move(clock, commander, HOME + 0.4)
    clock.advance(0.3)
    before = commander.history.reference(clock() - 0.02)
    arm.reference = MotionState(before.position, before.velocity, before.acceleration, clock() - 0.02)
    now = commander.history.reference(clock())
    arm.measured = MotionState.at_rest(now.position)
    start = commander.start_state()
    assert start.time == clock()
    np.testing.assert_allclose(start.position, now.position, atol=1e-12)
    scaled = commander.history.reference(clock() - 0.05)   # a speed-scaled controller is behind our replay
    arm.reference = MotionState(scaled.position, scaled.velocity, scaled.acceleration, clock() - 0.02)
    start = commander.start_state()
    assert start.time == clock() - 0.02
    np.testing.assert_allclose(start.position, scaled.position)


# -- the seed of the next solve ---------------------------------------------------------------------------------


def _error_to(target):
    """Return target_errors for a target at joint positions ``target`` (the joints stand for the tip, in metres)."""
    return lambda Q: np.stack([np.linalg.norm(np.asarray(Q) - target, axis=1), np.zeros(len(Q))], axis=1)


def _following(clock, arm, commander, goal, after=0.3):
    """Send a move to ``goal``, let ``after`` s pass with the arm on it; return the start state then."""
    _sent_move(clock, commander, goal)
    clock.advance(after)
    arm.measured = MotionState.at_rest(commander.history.reference(clock()).position)
    return commander.start_state()


def test_while_the_arm_follows_a_command_a_nearby_target_is_solved_from_its_goal(setup):
    """A stream's next target lies near the last goal, not near the arm, which runs behind it."""
    clock, arm, _, commander = setup
    goal = HOME + [0.6, -0.4, 0.3]
    start = _following(clock, arm, commander, goal)
    assert np.abs(start.position - goal).max() > 0.1      # on its way, far from the goal
    seed = commander.seed(start, _error_to(goal + 0.01))
    np.testing.assert_array_equal(seed, goal)
    seed[:] = 0.0   # the solver's scratch: what was sent stays as sent
    np.testing.assert_array_equal(commander.seed(start, _error_to(goal + 0.01)), goal)


def test_a_target_nearer_the_arm_than_the_goal_under_way_is_solved_from_the_arm(setup):
    """After a long move was commanded, a new target near the arm must not be solved near the far goal."""
    clock, arm, _, commander = setup
    goal = HOME + [0.6, -0.4, 0.3]
    start = _following(clock, arm, commander, goal)
    np.testing.assert_array_equal(commander.seed(start, _error_to(start.position + 0.01)), start.position)


def test_an_orientation_error_counts_as_a_tip_distance():
    """0.1 rad of orientation weighs as much as 1 cm of position (SEED_ROTATION_LENGTH)."""
    clock = Clock()
    arm = Arm(clock)
    commander = _commander(clock, arm, Transport())
    goal = HOME + [0.6, -0.4, 0.3]
    start = _following(clock, arm, commander, goal)

    def error(position_at_start, turn_at_goal):
        def errors(Q):
            assert np.array_equal(Q, [start.position, goal])   # the start's row first, then the goal's
            return np.array([[position_at_start, 0.0], [0.0, turn_at_goal]])
        return errors
    np.testing.assert_array_equal(commander.seed(start, error(0.02, 0.1)), goal)           # 2 cm against 1 cm
    np.testing.assert_array_equal(commander.seed(start, error(0.02, 0.3)), start.position)  # 2 cm against 3 cm


def test_without_a_command_under_way_the_solve_starts_at_the_start_state(setup):
    clock, arm, _, commander = setup
    start = commander.start_state()   # nothing sent yet
    assert commander.history.goal(start) is None
    np.testing.assert_array_equal(commander.seed(start, _error_to(HOME + 0.2)), HOME)
    goal = HOME + 0.2
    result = _sent_move(clock, commander, goal)
    clock.advance(result.path.duration + 0.1)   # the command has ended: the arm is there
    arm.measured = MotionState.at_rest(goal)
    assert commander.history.goal(commander.start_state()) is None


def test_an_arm_that_does_not_follow_the_command_is_solved_from_where_it_is(setup):
    clock, arm, _, commander = setup
    goal = HOME + 0.4
    _sent_move(clock, commander, goal)
    clock.advance(0.3)
    arm.measured = MotionState.at_rest(HOME)   # another client moves it, or the driver is dead
    start = commander.start_state()
    assert commander.history.goal(start) is None
    np.testing.assert_array_equal(commander.seed(start, _error_to(goal)), HOME)


# -- a move: timed, checked at sending, sent, remembered -------------------------------------------------------


def test_a_move_from_rest_holds_the_lead_time_then_reaches_the_goal(setup):
    clock, arm, transport, commander = setup
    goal = HOME + [0.3, -0.2, 0.1]
    result = _sent_move(clock, commander, goal)
    (names, path, t0), = transport.sent
    assert names == NAMES and t0 == pytest.approx(result.start.time) and path is result.path
    assert path.hold == pytest.approx(LEAD) and path.times[0] == pytest.approx(LEAD)
    expected = plan_move(MotionState.at_rest(HOME), goal, LIMITS, PERIOD)
    assert path.duration == pytest.approx(LEAD + expected.duration, abs=1e-9)
    np.testing.assert_allclose(path.positions[-1], goal, atol=1e-12)
    assert check_trajectory(result.start, path, LIMITS) == []
    np.testing.assert_allclose(commander.history.reference(clock() + path.duration + 1.0).position, goal)


def test_a_move_while_the_last_runs_continues_it_exactly_over_the_lead_time(setup):
    clock, arm, transport, commander = setup
    first = _sent_move(clock, commander, HOME + [0.8, -0.6, 0.4])
    clock.advance(0.35)
    arm.measured = MotionState.at_rest(commander.history.reference(clock()).position)
    second = _sent_move(clock, commander, HOME + [-0.3, 0.2, 0.5])
    origin = second.start
    assert origin.time < clock() and transport.sent[-1][2] == pytest.approx(origin.time)
    old, new = (jtc.SplineSampler(r.start.position, r.start.velocity, jtc.Trajectory(
        r.path.times, r.path.positions, r.path.velocities, r.path.accelerations), r.start.acceleration)
        for r in (first, second))
    times = np.arange(clock(), clock() + LEAD, 0.001)
    for a, b in zip(old.evaluate(times - first.start.time)[:3], new.evaluate(times - origin.time)[:3]):
        np.testing.assert_allclose(b, a, atol=1e-9)
    assert check_trajectory(origin, second.path, LIMITS) == []


@pytest.mark.parametrize('delays,sent,reason', [([0.12], 1, 'success'), ([0.12, 0.12], 0, 'expired')])
def test_a_move_held_up_past_the_lead_time_is_planned_again_or_expires(delays, sent, reason):
    """Held up 0.12 s at the guard once: planned again from the state then; twice: refused 'expired'."""
    clock, transport = Clock(), Transport()
    arm = Arm(clock)
    slow = SlowCollision(clock, delays)
    commander = _commander(clock, arm, transport, collision=slow)
    result = commander.move(HOME + 0.05)
    assert len(slow.checks) == 2 and slow.checks[1] == pytest.approx(slow.checks[0] + 0.12)
    assert len(transport.sent) == sent and result.reason == reason and result.sent == bool(sent)
    if sent:
        assert result.start.time == pytest.approx(slow.checks[1])
        assert transport.sent[0][2] == pytest.approx(slow.checks[1])
    else:
        assert 'more than command_lead_time 0.05 s' in result.message
        assert commander.history.reference() is None   # nothing sent, nothing remembered


def test_a_start_older_than_the_lead_time_is_not_sent_a_younger_one_is_stamped_its_age(setup):
    """The controller joins a trajectory at its arrival: after the lead time it would skip part of it, a step."""
    clock, arm, transport, commander = setup
    path = plan_move(MotionState.at_rest(HOME), HOME + 0.3, LIMITS, PERIOD)
    late = MotionState(HOME, np.zeros(3), np.zeros(3), clock() - 0.08)
    result = commander.execute(late, path)
    assert result.reason == 'expired' and 'more than command_lead_time 0.05 s' in result.message
    assert not transport.sent and commander.history.reference() is None
    assert commander.execute(replace(late, time=clock() - 0.03), path).sent
    (_, sent, t0), = transport.sent
    assert sent is path and t0 == pytest.approx(clock() - 0.03)


def test_without_a_lead_time_lateness_is_not_checked():
    clock, transport = Clock(), Transport()
    commander = _commander(clock, Arm(clock), transport, lead_time=0.0, collision=SlowCollision(clock, [0.5]))
    result = commander.move(HOME + 0.05)
    assert result.sent and clock() - transport.sent[0][2] == pytest.approx(0.5) and result.path.hold == 0.0


def test_a_command_the_controller_cannot_take_is_refused_and_not_remembered():
    clock = Clock()
    transport = Transport('action server jtc/follow_joint_trajectory is not available')
    commander = _commander(clock, Arm(clock), transport)
    result = commander.move(HOME + 0.3)
    assert (result.reason, result.message) == ('controller_unavailable', transport.problem)
    assert commander.history.reference() is None


def test_the_guard_refuses_before_anything_is_sent(setup):
    clock, arm, transport, _ = setup
    commander = _commander(clock, arm, transport, max_joint_jump=0.5)
    result = commander.move(HOME + [0.6, 0.0, 0.0])
    assert result.reason == 'joint_jump'
    assert result.message == 'the move changes a by 0.600, more than max_joint_jump 0.5'
    result = commander.move(HOME + [0.0, 0.0, 1.9])   # beyond the position limit 2.0
    assert result.reason == 'limit_violation' and result.message.startswith('no move within the limits')
    assert not transport.sent and commander.history.reference() is None


# -- a joint path ----------------------------------------------------------------------------------------------


def test_a_path_from_the_current_state_holds_at_rest_and_never_continues_a_command(setup):
    clock, arm, transport, commander = setup
    joints = np.array([HOME + 0.1, HOME + 0.2])
    start, path = commander.time_path(joints)
    assert start.time == clock() and path.hold == pytest.approx(LEAD)
    _sent_move(clock, commander, HOME + [0.8, -0.6, 0.4])
    clock.advance(0.35)
    arm.measured = MotionState.at_rest(commander.history.reference(clock()).position)
    with pytest.raises(ValueError, match='needs the arm at rest at its start'):
        commander.time_path(joints)   # a path is solved from where the arm is: it cannot depart moving


def test_a_path_from_a_given_start_is_planned_from_it(setup):
    _, _, _, commander = setup
    given = MotionState.at_rest(HOME - 0.1)
    start, path = commander.time_path(np.array([HOME]), start=given)
    assert start is given and path.hold == 0.0
    np.testing.assert_allclose(path.positions[-1], HOME)


def test_a_late_path_expires_without_a_second_plan():
    clock, transport = Clock(), Transport()
    slow = SlowCollision(clock, [0.12])
    commander = _commander(clock, Arm(clock), transport, collision=slow)
    joints = np.array([HOME + 0.05, HOME + 0.1])
    start, path = commander.time_path(joints)
    result = commander.execute(start, path, np.vstack([start.position, joints]))
    assert result.reason == 'expired' and len(slow.checks) == 1 and not transport.sent
    start, path = commander.time_path(joints)
    assert commander.execute(start, path, np.vstack([start.position, joints])).sent


def test_a_path_with_a_jump_between_its_waypoints_is_refused(setup):
    clock, arm, transport, _ = setup
    commander = _commander(clock, arm, transport, max_joint_jump=0.15)
    joints = np.array([HOME + 0.1, HOME + [0.3, 0.1, 0.1]])
    start, path = commander.time_path(joints)
    result = commander.execute(start, path, np.vstack([start.position, joints]))
    assert result.reason == 'joint_jump' and 'changes a by 0.200' in result.message and not transport.sent


# -- against an emulated joint_trajectory_controller -----------------------------------------------------------


def _stream(lead, delays, rng, count=40):
    """Stream targets through the commander to an emulated JTC.

    Return its reports, the moves that continued and those that held the arm at rest for a whole lead time.
    A target every PERIOD s; each trajectory reaches the controller ``delays`` s late; the controller's
    reference is the arm's measured state.
    """
    tick = 0.001
    clock = Clock(0.0)
    arm = Arm(clock, np.zeros(3))
    controller = TrajectoryController(np.zeros(3), LimitMonitor(LIMITS, 0.01))
    deliveries = []

    def transport(names, path, t0):
        trajectory = jtc.Trajectory(path.times, path.positions, path.velocities, path.accelerations)
        deliveries.append((clock() + rng.uniform(*delays), trajectory, t0))

    commander = _commander(clock, arm, transport, lead_time=lead, sample_period=0.05)
    goals = [np.array([np.sin(k / 9), np.cos(k / 7) - 1, 0.02 * k]) for k in range(count)]
    reports, continued, holds = [], 0, 0
    for step in range(int((count * PERIOD + 1.5) / tick)):
        clock.t = step * tick
        k = int(round(clock.t / PERIOD))
        if k < count and abs(clock.t - k * PERIOD) < tick / 2:
            result = commander.move(goals[k])
            assert result.sent, result.message
            continued += result.start.time < clock.t
            holds += lead > 0.0 and result.path.hold == pytest.approx(lead)
        while deliveries and deliveries[0][0] <= clock.t + tick / 2:
            arrival, trajectory, stamp = deliveries.pop(0)
            controller.load(trajectory, stamp, f'#{len(reports)}', arrival)
        q, v, a, done = controller.update(clock.t, tick)
        reports += done
        arm.measured = MotionState(q, v, a)
    return reports, continued, holds


@pytest.mark.parametrize('lead', [0.05, 0.15])
def test_a_fast_stream_reaches_the_controller_without_steps_within_the_lead_time(rng, lead):
    """A target that lands as the held first move departs (still at about zero speed) must not hold it again."""
    reports, continued, holds = _stream(lead, (0.0005, min(lead, 0.03)), rng)
    assert reports == [] and holds == 1
    assert continued >= 40 - 1 - round(lead / PERIOD)   # all but those before the first departed


def test_without_a_lead_time_the_same_stream_steps(rng):
    """The check above can fail: departing at once, every late join is a step in velocity and acceleration."""
    reports, _, _ = _stream(0.0, (0.0005, 0.03), rng)
    assert any(v.quantity == 'acceleration' for report in reports for v in report.violations)
