"""The servo core (motion/servo.py) against independent truths: FK finite differences, limits, closed forms."""
from dataclasses import replace

from conftest import printed_by_kernel_process
from ik_solver.core.chain import load_chain
from ik_solver.core.nullspace import NullspaceGoals
from ik_solver.core.transforms import make_pose, rotation_vector
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.servo import (FOLLOW_TIME, JointJogCommand, PoseCommand, Servo, ServoSettings, Status,
                                    TwistCommand)
from ik_solver_demos.tools.resources import arm_files
import numpy as np
import pytest

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
ACCELERATION = 4.0
RAMP = 0.05
TOL = 1e-9


@pytest.fixture(scope='module')
def chain():
    return load_chain(arm_files('ik7')[0], 'base_link', 'tool0')


def limits_of(chain, jerk=np.inf):
    n = chain.n
    return JointLimits(tuple(chain.joint_names), chain.lower, chain.upper, chain.velocity_limits,
                       np.full(n, ACCELERATION), np.full(n, jerk))


class Run:
    """Drive a Servo cycle by cycle on a simulated clock and record what it commands."""

    def __init__(self, chain, q0=HOME, **settings):
        settings.setdefault('command_in_type', 'speed_units')
        self.chain = chain
        self.limits = limits_of(chain)
        self.servo = Servo(chain, self.limits, ServoSettings(**settings))
        self.dt = self.servo.settings.publish_period
        self.t = 0.0
        self.measured = MotionState.at_rest(q0)
        self.outputs = []

    def cycles(self, count, command=None, state_error=None):
        for _ in range(count):
            if command is not None:
                self.servo.set_command(command, self.t)
            out = self.servo.step(self.t, self.measured, state_error)
            self.outputs.append(out)
            self.measured = MotionState.at_rest(out.state.position)   # a perfect position controller
            self.t += self.dt
        return self.outputs[-count:]

    @property
    def q(self):
        return self.servo.state.position

    def arrays(self, outputs=None):
        outputs = self.outputs if outputs is None else outputs
        return (np.array([o.state.position for o in outputs]), np.array([o.state.velocity for o in outputs]),
                np.array([o.state.acceleration for o in outputs]))


def assert_within_limits(run, margin=0.0):
    """No NaN; positions, velocities, accelerations and jerks (by differences) within the limits."""
    Q, V, A = run.arrays()
    lim = run.limits
    assert np.isfinite(Q).all() and np.isfinite(V).all() and np.isfinite(A).all()
    assert (Q >= lim.lower + margin - 1e-6).all() and (Q <= lim.upper - margin + 1e-6).all()
    assert (np.abs(V) <= lim.velocity * (1 + TOL)).all()
    assert (np.abs(A) <= lim.acceleration * (1 + TOL)).all()
    # velocities are the position differences, accelerations the velocity differences: no jump
    Q0 = np.vstack([run.outputs[0].state.position - run.outputs[0].state.velocity * run.dt, Q])
    np.testing.assert_allclose(np.diff(Q0, axis=0) / run.dt, V, atol=1e-9)
    jerk = np.diff(A, axis=0) / run.dt
    assert (np.abs(jerk) <= ACCELERATION / RAMP * (1 + TOL)).all()


def tip_twist(chain, q_a, q_b, dt):
    """Base-frame twist of the tip between two configurations, by FK differences."""
    Ta, Tb = chain.fk(q_a), chain.fk(q_b)
    return np.concatenate([(Tb[:3, 3] - Ta[:3, 3]) / dt, rotation_vector(Tb[:3, :3] @ Ta[:3, :3].T) / dt])


@pytest.mark.parametrize('frame', ['base', 'tool'])
@pytest.mark.parametrize('twist', [[0.1, 0, 0, 0, 0, 0], [0, 0, 0.05, 0, 0, 0], [0, 0, 0, 0, 0, 0.3]])
def test_twist_gives_that_tip_velocity(chain, frame, twist):
    run = Run(chain)
    twist = np.array(twist, float)
    command = TwistCommand(twist, None if frame == 'base' else 'tool0')
    run.cycles(60, command)   # past the acceleration ramp
    q_a = run.q.copy()
    R = np.eye(3) if frame == 'base' else chain.fk(q_a)[:3, :3]
    run.cycles(1, command)
    measured = tip_twist(chain, q_a, run.q, run.dt)
    expected = np.concatenate([R @ twist[:3], R @ twist[3:]])
    np.testing.assert_allclose(measured, expected, atol=2e-3 * max(1.0, np.abs(twist).max()))
    assert run.outputs[-1].status == Status.NO_WARNING
    assert_within_limits(run)


def test_unitless_commands_are_scaled(chain):
    run = Run(chain, command_in_type='unitless', scale_linear=0.2, scale_rotational=0.5)
    command = TwistCommand(np.array([0.5, 0, 0, 0, 0, 0.4]))
    run.cycles(80, command)
    q_a = run.q.copy()
    run.cycles(1, command)
    np.testing.assert_allclose(tip_twist(chain, q_a, run.q, run.dt), [0.1, 0, 0, 0, 0, 0.2], atol=2e-3)


def command_frame_twist(run, command, cycles=60):
    """Tip twist over one cycle after ``cycles`` of ``command``, by FK differences, in the command's frame."""
    run.cycles(cycles, command)
    q_a = run.q.copy()
    run.cycles(1, command)
    R = np.eye(3) if command.frame is None else run.chain.fk(q_a, command.frame)[:3, :3]
    measured = tip_twist(run.chain, q_a, run.q, run.dt)
    return np.concatenate([R.T @ measured[:3], R.T @ measured[3:]])


@pytest.mark.parametrize('frame', [None, 'tool0'], ids=['base', 'tool'])
def test_drift_dimensions_leave_free_axes_and_keep_the_others(chain, frame):
    """Axes rx and ry of the command frame drift: their commands are ignored, the other four are kept."""
    drift = (False, False, False, True, True, False)
    kept = np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.2])
    on_free_axes = kept + np.array([0, 0, 0, 0.5, -0.4, 0])
    run = Run(chain, drift_dimensions=drift)
    free = command_frame_twist(run, TwistCommand(kept, frame))
    np.testing.assert_allclose(free[[0, 1, 2, 5]], kept[[0, 1, 2, 5]], atol=2e-3)
    # freed from holding rx and ry, the minimum-norm motion turns about them (0.03 rad/s in base, 0.2 in tool0)
    assert np.linalg.norm(free[3:5]) > 0.01, free
    ignored = Run(chain, drift_dimensions=drift)
    command_frame_twist(ignored, TwistCommand(on_free_axes, frame))
    np.testing.assert_allclose(ignored.arrays()[0], run.arrays()[0], rtol=0, atol=1e-12)


def test_settings_changed_at_run_time_act_as_if_built_with_them(chain):
    """A parameter change (ros2 param set) swaps the settings: drift rows and ramp-time jerk must follow them."""
    changed = {'drift_dimensions': (False,) * 5 + (True,), 'acceleration_ramp_time': 0.2}
    built = Run(chain, **changed)
    switched = Run(chain)
    switched.servo.settings = replace(switched.servo.settings, **changed)
    unchanged = Run(chain)
    command = TwistCommand(np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.3]), None)
    for run in (built, switched, unchanged):
        run.cycles(80, command)
    np.testing.assert_allclose(switched.arrays()[0], built.arrays()[0], rtol=0, atol=1e-12)
    assert np.abs(unchanged.arrays()[0] - built.arrays()[0]).max() > 1e-3   # the change matters


def test_a_second_of_twist_moves_the_tip_that_far(chain):
    run = Run(chain)
    T0 = chain.fk(HOME)
    run.cycles(100, TwistCommand(np.array([0.1, 0, 0, 0, 0, 0])))
    run.cycles(100, TwistCommand(np.zeros(6)))  # the teleop's zero twist on key release
    T1 = chain.fk(run.q)
    assert abs((T1[0, 3] - T0[0, 3]) - 0.1) < 0.005
    assert np.linalg.norm(T1[1:3, 3] - T0[1:3, 3]) < 1e-3
    assert np.linalg.norm(rotation_vector(T1[:3, :3] @ T0[:3, :3].T)) < 0.01
    assert not np.any(run.servo.state.velocity)


def test_approaching_matches_the_change_of_the_condition_number(chain):
    """The servo's toward/away decision equals the sign of d(cond)/dt along the commanded motion."""
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(400):
        q = HOME + rng.uniform(-1.0, 1.0, chain.n) * np.array([0.5, 0.6, 0.5, 1.2, 0.5, 0.8, 0.5])
        servo = Servo(chain, limits_of(chain), ServoSettings(command_in_type='speed_units'))
        servo.reset(MotionState.at_rest(q))
        cond = np.linalg.cond(chain.jacobian(q))
        if not 17 < cond < 60:
            continue
        twist = rng.normal(size=6) * 0.1
        wanted = servo._cartesian(twist, np.eye(3))
        dq = wanted.velocity / max(wanted.scale, 1e-3)
        change = np.linalg.cond(chain.jacobian(q + 1e-6 * dq)) - cond
        if abs(change) < 1e-6 * cond:
            continue
        approaching = wanted.status == Status.DECELERATE_FOR_APPROACHING_SINGULARITY or (
            wanted.status == Status.HALT_FOR_SINGULARITY and cond < 60)
        assert approaching == (change > 0), (q, twist, cond, change, wanted.status)
        checked += 1
    assert checked >= 10


def test_stretching_into_the_singularity_slows_halts_and_reversing_leaves(chain):
    run = Run(chain)
    outward = TwistCommand(np.array([0.15, 0, 0, 0, 0, 0]))
    out = run.cycles(600, outward)
    statuses = {o.status for o in out}
    assert Status.DECELERATE_FOR_APPROACHING_SINGULARITY in statuses
    conditions = np.array([o.condition_number for o in out])
    assert conditions.max() < 30 * 1.2   # halted near the hard stop
    assert np.abs(out[-1].state.velocity).max() < 1e-3
    scales = np.array([o.velocity_scale for o in out])
    assert scales[-1] < 0.05
    x_stop = chain.fk(run.q)[0, 3]
    back = run.cycles(100, TwistCommand(-outward.twist))
    assert chain.fk(run.q)[0, 3] < x_stop - 0.02
    assert back[-1].condition_number < conditions[-1]
    assert Status.DECELERATE_FOR_LEAVING_SINGULARITY in {o.status for o in back}
    assert_within_limits(run)


@pytest.mark.parametrize('elbow, away_moves', [(-0.3, True), (-0.15, False)], ids=['cond39', 'cond78'])
def test_beyond_the_hard_stop_only_motion_away_is_allowed(chain, elbow, away_moves):
    """From cond 39 (past 30, within 30 x leaving multiplier 2) only leaving moves; from cond 78 nothing does.

    Toward and away are the tip twists of straightening and bending the elbow
    (J e4); the truth for each is the change of the condition number along the
    least-squares joint motion for it.
    """
    q0 = HOME.copy()
    q0[3] = elbow
    J = chain.jacobian(q0)
    condition = np.linalg.cond(J)
    settings = ServoSettings()
    assert settings.hard_stop_singularity_threshold < condition
    assert (condition < settings.hard_stop_singularity_threshold
            * settings.leaving_singularity_threshold_multiplier) == away_moves
    toward = 0.1 * J[:, 3]
    assert np.linalg.cond(chain.jacobian(q0 + 1e-4 * np.linalg.pinv(J) @ toward)) > condition
    run = Run(chain, q0=q0)
    out = run.cycles(50, TwistCommand(toward))
    assert {o.status for o in out} == {Status.HALT_FOR_SINGULARITY}
    assert all(o.velocity_scale == 0.0 and not np.any(o.state.velocity) for o in out)
    np.testing.assert_array_equal(run.q, q0)
    # the operator is told the way out: a command away, or (past the leaving limit) only joint jogs
    assert ('jog the joints' in out[-1].message) != away_moves, out[-1].message
    run = Run(chain, q0=q0)
    out = run.cycles(50, TwistCommand(-toward))
    if away_moves:
        assert {o.status for o in out} == {Status.DECELERATE_FOR_LEAVING_SINGULARITY}
        assert np.linalg.cond(chain.jacobian(run.q)) < condition - 1.0
        moved = chain.fk(run.q)[:3, 3] - chain.fk(q0)[:3, 3]
        assert moved @ -toward[:3] > 0.9 * np.linalg.norm(moved) * np.linalg.norm(toward[:3])   # along the command
        assert_within_limits(run)
    else:
        assert {o.status for o in out} == {Status.HALT_FOR_SINGULARITY}
        np.testing.assert_array_equal(run.q, q0)


def test_joint_jog_stops_at_the_margin(chain):
    margin = 0.1
    run = Run(chain, joint_limit_margin=margin)
    jog = np.full(chain.n, np.nan)
    jog[3] = 1.0   # joint4 toward its upper limit (2.06 rad) from -1.4
    out = run.cycles(600, JointJogCommand(jog))
    q = run.q
    upper = chain.upper[3] - margin
    assert abs(q[3] - upper) < 0.01
    assert Status.JOINT_BOUND in {o.status for o in out}
    moved = np.abs(q - HOME) > 1e-12
    assert moved.tolist() == [i == 3 for i in range(chain.n)]
    assert_within_limits(run)
    Q, _, _ = run.arrays()
    assert Q[:, 3].max() <= upper + 1e-3


def test_cartesian_motion_into_a_joint_margin_halts_as_a_whole(chain):
    run = Run(chain, joint_limit_margin=0.1)
    out = run.cycles(800, TwistCommand(np.array([0, 0, 0, 0, 0, 1.0]), 'tool0'))  # spins joint7
    assert Status.JOINT_BOUND in {o.status for o in out}
    assert np.abs(out[-1].state.velocity).max() < 1e-6
    assert_within_limits(run, margin=0.1 - 1e-3)


def test_stopping_decelerates_within_the_acceleration_limits_in_the_time_they_imply(chain):
    run = Run(chain)
    run.cycles(80, JointJogCommand(np.array([0.8, -0.8, 0.8, 0.8, 0.8, 0.8, 0.8])))
    v0 = np.abs(run.servo.state.velocity).max()
    out = run.cycles(200)
    timeout = run.servo.settings.incoming_command_timeout
    at_rest = next(k for k, o in enumerate(out) if not np.any(o.state.velocity)) * run.dt
    # the watchdog waits incoming_command_timeout, then brakes: v/a plus the jerk ramp
    assert at_rest <= timeout + v0 / ACCELERATION + RAMP + 3 * run.dt
    assert at_rest >= v0 / ACCELERATION
    assert {o.status for o in out[int(timeout / run.dt) + 1:]} == {Status.STALE_COMMAND}
    assert_within_limits(run)
    published = [o.publish for o in out]
    assert not published[-1] and sum(published) < 200   # stops publishing after the halt messages


def test_random_twist_stream_stays_within_every_limit(chain):
    rng = np.random.default_rng(7)
    run = Run(chain, publish_period=0.002)
    for _ in range(300):
        twist = rng.normal(size=6) * np.array([0.3, 0.3, 0.3, 1.0, 1.0, 1.0])
        run.cycles(int(rng.integers(1, 40)), TwistCommand(twist, 'tool0' if rng.random() < 0.5 else None))
    assert_within_limits(run)
    statuses = {o.status for o in run.outputs}
    assert Status.NO_WARNING in statuses


def test_pause_stops_and_resume_moves_again(chain):
    run = Run(chain)
    command = TwistCommand(np.array([0, 0.1, 0, 0, 0, 0]))
    run.cycles(30, command)
    run.servo.set_paused(True)
    out = run.cycles(100, command)
    assert {o.status for o in out} == {Status.PAUSED}
    assert not np.any(out[-1].state.velocity) and not out[-1].publish
    q_paused = run.q.copy()
    run.servo.set_paused(False)
    run.cycles(30, command)
    assert np.linalg.norm(run.q - q_paused) > 1e-3
    assert_within_limits(run)


def test_idle_servo_restarts_from_an_arm_moved_by_someone_else(chain):
    run = Run(chain)
    run.cycles(30, TwistCommand(np.array([0, 0.1, 0, 0, 0, 0])))
    run.cycles(100)
    moved = run.q + 0.2
    run.measured = MotionState.at_rest(moved)
    run.servo.set_command(JointJogCommand(np.zeros(chain.n)), run.t)
    run.servo.step(run.t, run.measured)
    np.testing.assert_allclose(run.q, moved)


@pytest.mark.parametrize('received, restarts', [(-0.005, False), (0.005, False), (FOLLOW_TIME + 0.005, True)],
                         ids=['before', 'while-following', 'after'])
def test_idle_servo_restarts_only_from_readings_taken_follow_time_after_its_last_command(chain, received, restarts):
    """A reading from before FOLLOW_TIME after the last command does not pull the arm back on the next command.

    In flight (or queued) while the arm came to rest, or taken while it may still follow the last commands,
    it shows the arm short of them: the servo waits, commanding nothing, for a later reading.
    """
    run = Run(chain)
    run.cycles(30, TwistCommand(np.array([0, 0.1, 0, 0, 0, 0])))
    run.cycles(100)
    last_sent = max(k for k, out in enumerate(run.outputs) if out.publish) * run.dt
    resting = run.q.copy()
    reading = replace(MotionState.at_rest(resting - 0.05), time=last_sent + received)
    run.servo.set_command(JointJogCommand(np.zeros(chain.n)), run.t)
    out = run.servo.step(run.t, reading)
    np.testing.assert_allclose(run.q, resting - 0.05 if restarts else resting)
    assert out.publish == restarts


def test_stale_state_halts(chain):
    run = Run(chain)
    run.cycles(30, TwistCommand(np.array([0, 0.1, 0, 0, 0, 0])))
    out = run.cycles(100, TwistCommand(np.array([0, 0.1, 0, 0, 0, 0])), state_error='joint_states are 1 s old')
    assert {o.status for o in out} == {Status.STALE_STATE}
    assert not np.any(out[-1].state.velocity)
    assert_within_limits(run)


def test_pose_target_is_reached(chain):
    run = Run(chain)
    goal = chain.fk(HOME + np.array([0.2, -0.1, 0.1, 0.2, -0.1, 0.1, 0.3]))
    run.servo.set_command(PoseCommand(goal), run.t)
    run.cycles(400)
    T = chain.fk(run.q)
    assert np.linalg.norm(T[:3, 3] - goal[:3, 3]) < 1e-3
    assert np.linalg.norm(rotation_vector(goal[:3, :3] @ T[:3, :3].T)) < 5e-3
    assert_within_limits(run)


def test_moving_pose_target_is_tracked(chain):
    run = Run(chain)
    T0 = chain.fk(HOME)
    radius, period = 0.05, 4.0
    errors = []
    for k in range(600):
        angle = 2 * np.pi * k * run.dt / period
        goal = make_pose(T0[:3, 3] + radius * np.array([0, np.sin(angle), 1 - np.cos(angle)]), T0[:3, :3])
        run.servo.set_command(PoseCommand(goal), run.t)
        run.cycles(1)
        if k > 100:
            errors.append(np.linalg.norm(chain.fk(run.q)[:3, 3] - goal[:3, 3]))
    speed = 2 * np.pi * radius / period
    assert max(errors) < 1.5 * speed / run.servo.settings.pose_linear_gain + 1e-3


def test_bad_settings_are_refused(chain):
    for bad in ({'command_in_type': 'furlongs'}, {'lower_singularity_threshold': 40.0},
                {'drift_dimensions': (True,) * 6}, {'publish_period': 0.0}):
        with pytest.raises(ValueError):
            Servo(chain, limits_of(chain), ServoSettings(**bad))


def test_unitless_components_beyond_one_are_refused_with_the_reason(chain):
    """As MoveIt Servo: a unitless command is a fraction of scale.*; 5 would silently mean five times the speed."""
    unitless = Servo(chain, limits_of(chain), ServoSettings(command_in_type='unitless'))
    jog = np.full(chain.n, np.nan)
    jog[3] = -1.5
    assert unitless.command_problem(TwistCommand(np.array([0.0, 1.0, 0.0, 0.0, 0.0, -1.0]), None)) is None
    assert '5' in unitless.command_problem(TwistCommand(np.array([0.0, 5.0, 0.0, 0.0, 0.0, 0.0]), None))
    assert '1.5' in unitless.command_problem(JointJogCommand(jog))
    assert unitless.command_problem(PoseCommand(chain.fk(HOME))) is None
    speed = Servo(chain, limits_of(chain), ServoSettings(command_in_type='speed_units'))
    assert speed.command_problem(TwistCommand(np.array([0.0, 5.0, 0.0, 0.0, 0.0, 0.0]), None)) is None


def test_unitless_joint_jog_moves_at_scale_joint(chain):
    run = Run(chain, command_in_type='unitless', scale_joint=0.3)
    jog = np.full(chain.n, np.nan)
    jog[3] = 1.0
    run.cycles(100, JointJogCommand(jog))
    _, V, _ = run.arrays()
    np.testing.assert_allclose(V[-1], np.eye(chain.n)[3] * 0.3, atol=1e-12)


def test_nullspace_goal_moves_the_posture_without_moving_the_hand_off_the_twist(chain):
    """A posture goal turns the redundant elbow toward q_pref while the tip follows the twist as without it."""
    q_pref = HOME + np.array([0.0, 0.0, 0.6, 0.0, 0.0, 0.0, 0.0])
    goals = NullspaceGoals(posture=1.0, q_pref=q_pref)
    twist = TwistCommand(np.array([0.0, 0.05, 0.0, 0.0, 0.0, 0.0]), None)
    plain, with_goal = Run(chain), Run(chain, nullspace=goals, nullspace_gain=2.0)
    for run in (plain, with_goal):
        run.cycles(150, twist)
        assert_within_limits(run)
    for run in (plain, with_goal):   # every cycle's tip twist is the commanded one (after the first ramp)
        Q = run.arrays()[0]
        moved = [tip_twist(chain, a, b, run.dt) for a, b in zip(Q[60:-1], Q[61:])]
        np.testing.assert_allclose(moved, np.tile(twist.twist, (len(moved), 1)), atol=2e-3)
    assert np.linalg.norm(with_goal.q - q_pref) < np.linalg.norm(plain.q - q_pref) - 0.05


def test_joint_jog_reports_the_condition_number_it_moves_through(chain):
    """Jogs are not slowed near singularities, but the status tells how near: the Jacobian's condition number."""
    run = Run(chain)
    jog = np.full(chain.n, np.nan)
    jog[3] = 0.5
    for out in run.cycles(20, JointJogCommand(jog)):
        assert np.isfinite(out.condition_number)
    before = run.outputs[-2].state.position   # each cycle judges the state it starts from
    np.testing.assert_allclose(run.outputs[-1].condition_number, np.linalg.cond(chain.jacobian(before)), rtol=1e-9)


#: In a fresh process that compiles what the cache lacks: the types of the kernels only the servo calls after
#: ``warm_up_kernels``, then after the warm-up and cycles (a twist in a tool frame, a joint jog) of a servo on ik7
#: with nullspace goals, as a node runs them.
KERNEL_CHECK = f"""
from ik_solver.core import kinematics, nullspace
from ik_solver.core.chain import load_chain
from ik_solver.motion import servo as module
from ik_solver.motion.limits import JointLimits, MotionState
import numpy as np
kernels = (module._margin_caps, module._filter_step, kinematics.goal_rows, nullspace.secondary_step)
module.warm_up_kernels()
warm = [sorted(map(str, k.signatures)) for k in kernels]
chain = load_chain({arm_files('ik7')[0]!r}, 'base_link', 'tool0')
n = chain.n
limits = JointLimits(tuple(chain.joint_names), chain.lower, chain.upper, chain.velocity_limits, np.full(n, 4.0),
                     np.full(n, np.inf))
goals = nullspace.NullspaceGoals(posture=1.0, pole=1.0, pole_link='link4', pole_target=np.array([-0.3, 0.0, 1.2]))
servo = module.Servo(chain, limits, module.ServoSettings(command_in_type='speed_units', nullspace=goals))
servo.warm_up()
home = MotionState.at_rest(np.array({HOME.tolist()!r}))
for k, command in enumerate([module.TwistCommand(np.array([0.05, 0, 0, 0, 0, 0.1]), 'link4'),
                             module.JointJogCommand(np.full(n, 0.1))]):
    for i in range(3):
        now = 0.1 * k + 0.01 * i
        servo.set_command(command, now)
        servo.step(now, home)
print(warm == [sorted(map(str, k.signatures)) for k in kernels], all(warm))
"""


def test_warm_up_kernels_loads_every_type_a_servo_cycle_passes():
    """After ``warm_up_kernels`` (what set-up runs) a servo's cycles add no kernel type: nothing compiles at start."""
    assert printed_by_kernel_process(KERNEL_CHECK) == ['True', 'True']
