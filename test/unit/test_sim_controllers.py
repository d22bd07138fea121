"""The simulator's controller emulations, limit witness and physics, checked against closed forms (no ROS)."""
from types import SimpleNamespace

from ik_solver.collision.scene import make_obstacle
from ik_solver.motion import jtc
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.timing import plan_move
from ik_solver_demos.sim.controllers import ends_in_the_past, ForwardController, LimitMonitor, TrajectoryController
import numpy as np
import pytest

pytest.importorskip('mujoco', reason='mujoco is not installed')
from ik_solver_demos.sim.physics import ArmSimulation  # noqa: E402, I100

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
#: Touches the ik7 table below (tip at about x 0.83, z 0.24).
DOWN = np.array([0.0, 1.2, 0.0, -1.0, 0.0, 0.0, 0.0])
TABLE = make_obstacle('table', 'box', [0.6, 1.0, 0.04], [0.65, 0.0, 0.18])
#: The wrist folded (joint6 at its limit): the link5 and link7 cylinders overlap by about 1 cm.
OVERLAP = np.array([1.538, 0.47, -1.031, 0.895, -0.091, 2.057, 1.667])


def _limits(n=2, velocity=1.0, acceleration=2.0):
    return JointLimits(tuple(f'j{i}' for i in range(n)), np.full(n, -1.0), np.full(n, 1.0), np.full(n, velocity),
                       np.full(n, acceleration), np.full(n, np.inf))


def _cubic_to(q1, duration):
    """One-point trajectory at rest: the controller runs a cubic from the current state."""
    q1 = np.atleast_2d(q1)
    return jtc.Trajectory(np.array([duration]), q1, np.zeros_like(q1))


def _hermite(q0, v0, q1, h, t):
    """trajectory.cpp's cubic (``interpolate_between_points``) from (q0, v0) to q1 at rest ``h`` s later, at ``t``.

    Returns the position and velocity.
    """
    c2 = (3.0 * (q1 - q0) - 2.0 * v0 * h) / h ** 2
    c3 = (2.0 * (q0 - q1) + v0 * h) / h ** 3
    return q0 + v0 * t + c2 * t ** 2 + c3 * t ** 3, v0 + 2.0 * c2 * t + 3.0 * c3 * t ** 2


def _run(controller, until, dt=1e-3):
    reports, t = [], 0.0
    while t <= until:
        reports += controller.update(t, dt)[3]
        t += dt
    return reports


def test_monitor_keeps_the_worst_excursion_per_joint_and_quantity():
    monitor = LimitMonitor(_limits(), tolerance=0.01)
    monitor.check(0.1, np.array([0.0, 0.0]), np.array([1.005, -1.5]), np.array([0.0, 0.0]))
    monitor.check(0.2, np.array([1.2, 0.0]), np.array([0.0, -1.8]), np.array([0.0, 2.5]))
    found = {(v.joint, v.quantity): v for v in monitor.take()}
    assert set(found) == {('j0', 'position'), ('j1', 'velocity'), ('j1', 'acceleration')}  # 1.005 is tolerated
    assert found['j1', 'velocity'].value == -1.8 and found['j1', 'velocity'].limit == -1.0
    assert found['j1', 'velocity'].time == 0.2
    assert found['j0', 'position'].limit == 1.0
    assert monitor.take() == []


def test_a_too_fast_trajectory_is_reported_with_its_cubic_peaks():
    """The cubic's peaks: v = 1.5 dq / T = 3.0 at T / 2, a = 6 dq / T^2 = 48 at its ends.

    The controller never commands its ends' accelerations: its first command is the cubic one period in
    (``command_next_``), its last the point itself, at rest.  The worst acceleration the physics is
    commanded is the velocity step to that first command, v(dt) / dt = 47.8, and back from the last but one.
    """
    dq, duration, dt = 0.5, 0.25, 1e-3
    controller = TrajectoryController(np.zeros(2), LimitMonitor(_limits()))
    controller.load(_cubic_to([dq, 0.0], duration), None, 'fast')
    reports = _run(controller, 0.5)
    assert len(reports) == 1 and reports[0].label == 'fast'
    found = {(v.joint, v.quantity): v for v in reports[0].violations}
    assert set(found) == {('j0', 'velocity'), ('j0', 'acceleration')}
    assert found['j0', 'velocity'].value == pytest.approx(1.5 * dq / duration, rel=1e-3)
    assert found['j0', 'velocity'].time == pytest.approx(duration / 2, abs=2e-3)
    assert abs(found['j0', 'acceleration'].value) == pytest.approx(_hermite(0.0, 0.0, dq, duration, dt)[1] / dt,
                                                                   rel=1e-9)
    assert np.allclose(controller.output[0], [dq, 0.0]) and not controller.output[1].any()


def test_a_trajectory_within_the_limits_is_not_reported():
    controller = TrajectoryController(np.zeros(2), LimitMonitor(_limits()))
    controller.load(_cubic_to([0.5, -0.5], 2.0), None, 'slow')  # v 0.375, a 0.75
    assert _run(controller, 2.5) == []


def test_each_update_commands_the_trajectory_one_period_ahead_of_its_reference():
    """joint_trajectory_controller commands ``command_next_``, its trajectory at ``traj_time_ + update_period_``.

    From rest at 0 s, a cubic to 0.1 rad at 0.1 s: the update at k ms commands the cubic at k + 1 ms (the
    physics step after it runs there), its reference (``state_desired_``) is the cubic at k ms, and the
    update at 99 ms commands the point itself, which is held from then on.
    """
    controller = TrajectoryController(np.zeros(2), LimitMonitor(_limits()))
    controller.load(_cubic_to([0.1, 0.0], 0.1), None, 'short')
    for k in range(100):
        q, v, _, _ = controller.update(k * 1e-3, 1e-3)
        assert (q[0], v[0]) == pytest.approx(_hermite(0.0, 0.0, 0.1, 0.1, (k + 1) * 1e-3), abs=1e-12)
        assert controller.reference[0][0] == pytest.approx(_hermite(0.0, 0.0, 0.1, 0.1, k * 1e-3)[0], abs=1e-12)
    assert q.tolist() == [0.1, 0.0] and not v.any()
    assert controller.update(0.1, 1e-3)[0].tolist() == [0.1, 0.0] and controller.reference[0].tolist() == [0.1, 0.0]


def test_past_its_last_point_the_controller_commands_that_point_as_given():
    """``Trajectory::sample`` returns the last point itself once played out: its accelerations too.

    (Its velocities must be zero: the controller refuses the trajectory otherwise.)
    """
    last = jtc.Trajectory(np.array([0.05]), np.array([[0.01, 0.0]]), np.zeros((1, 2)), np.array([[0.5, -0.25]]))
    controller = TrajectoryController(np.zeros(2), LimitMonitor(_limits(acceleration=100.0)))
    controller.load(last, None, 'ends accelerating')
    assert _run(controller, 0.2) == []
    q, v, a = controller.output
    assert q.tolist() == [0.01, 0.0] and not v.any() and a.tolist() == [0.5, -0.25]


def test_linear_interpolation_reports_its_velocity_steps_as_accelerations():
    positions = np.array([[0.1, 0.0], [0.2, 0.0]])  # positions only: 0.2 rad/s from rest, then back to rest
    controller = TrajectoryController(np.zeros(2), LimitMonitor(_limits()))
    controller.load(jtc.Trajectory(np.array([0.5, 1.0]), positions), None, 'linear')
    reports = _run(controller, 1.2)
    assert [(v.joint, v.quantity) for v in reports[0].violations] == [('j0', 'acceleration')]
    assert abs(reports[0].violations[0].value) == pytest.approx(0.2 / 1e-3, rel=1e-6)  # one step: 200 rad/s^2


def test_preemption_reports_only_what_was_executed_and_starts_from_the_last_command():
    """Open loop, joint_trajectory_controller starts a new trajectory from its previous update's command.

    That command (``last_commanded_state_``) is the first trajectory at 0.501 s, sampled one period
    ahead of the update at 0.5 s, whose time it is placed at (``last_commanded_time_``).  The second
    trajectory starts on arrival at 0.501 s, its point at 0.601 s: the cubic runs from that state over
    0.101 s, and the update at 0.501 s commands it at 0.502 s (0.002 s in).
    """
    controller = TrajectoryController(np.zeros(2), LimitMonitor(_limits()))
    controller.load(_cubic_to([0.9, 0.0], 2.0), None, 'first')  # within the limits for its first 0.5 s
    reports = [r for k in range(501) for r in controller.update(k * 1e-3, 1e-3)[3]]   # updates at 0 .. 0.5 s
    q_before, v_before = _hermite(0.0, 0.0, 0.9, 2.0, 0.501)
    assert controller.output[0][0] == pytest.approx(q_before, abs=1e-12)
    assert controller.reference[0][0] == pytest.approx(_hermite(0.0, 0.0, 0.9, 2.0, 0.5)[0], abs=1e-12)
    controller.load(_cubic_to([0.0, 0.0], 0.1), None, 'second')  # back within 0.1 s: far too fast
    q, v, _, step_reports = controller.update(0.501, 1e-3)
    assert (q[0], v[0]) == pytest.approx(_hermite(q_before, v_before, 0.0, 0.101, 0.002), abs=1e-12)
    assert controller.reference[0][0] == pytest.approx(_hermite(q_before, v_before, 0.0, 0.101, 0.001)[0], abs=1e-12)
    assert 0.0 < v[0] <= v_before  # braking from the motion under way, not from a standstill
    reports += step_reports + _run_from(controller, 0.502, 1.0)
    assert [r.label for r in reports] == ['second']


def test_closed_loop_starts_a_new_trajectory_from_the_measured_state():
    """The state before is the measured one at the update's time: the reference, and the command one period on."""
    controller = TrajectoryController(np.zeros(2), LimitMonitor(_limits()), open_loop=False)
    controller.load(_cubic_to([0.5, 0.0], 1.0), None, 'first')
    _run_from(controller, 0.0, 0.5)
    controller.load(_cubic_to([0.5, 0.0], 1.0), None, 'second')
    measured = (np.array([0.2, 0.01]), np.array([0.3, 0.0]))
    q, v, _, _ = controller.update(0.501, 1e-3, measured)
    assert np.allclose(controller.reference[0], measured[0], atol=1e-15)
    assert np.allclose(controller.reference[1], measured[1], atol=1e-15)
    for j, goal in enumerate((0.5, 0.0)):  # the cubic from the measured state at 0.501 s to the point at 1.501 s
        expected = _hermite(measured[0][j], measured[1][j], goal, 1.0, 1e-3)
        assert (q[j], v[j]) == pytest.approx(expected, abs=1e-15)


def test_a_stamped_trajectory_that_ends_before_it_arrives_is_refused():
    assert ends_in_the_past(10.0, 0.02, 10.021)
    assert not ends_in_the_past(10.0, 0.02, 10.019)
    assert not ends_in_the_past(0.0, 0.02, 10.021)   # zero stamp: starts on arrival


def _wave(t0, t1):
    """Points of the smooth motion q = 0.1 (1 - cos(pi t)) on both joints at 20 Hz over (t0, t1], times from t0."""
    times = np.arange(t0 + 0.05, t1 + 1e-9, 0.05)
    q = 0.1 * (1 - np.cos(np.pi * times))
    v = 0.1 * np.pi * np.sin(np.pi * times)
    a = 0.1 * np.pi ** 2 * np.cos(np.pi * times)
    column = np.ones((1, 2))
    return jtc.Trajectory(times - t0, q[:, None] * column, v[:, None] * column, a[:, None] * column)


def _positions(controller, t0, t1, dt=1e-3):
    out = []
    for k in range(int(round((t1 - t0) / dt))):
        out.append(controller.update(t0 + k * dt, dt)[0].copy())
    return np.array(out)


@pytest.mark.parametrize('delay', [0.004, 0.049, 0.051, 0.2])
def test_a_restamped_continuation_is_joined_in_step_however_late_it_arrives(delay):
    """A trajectory planned at 0.3 s from the motion under way, arriving ``delay`` s late, changes little.

    Sampled at its stamp: from the command that reaches its first point (at 0.35 s) on, the controller
    runs the segment under way between two of its points, exactly the motion under way.  Before it, the
    first segment runs from the previous update's command (open loop), the wave one period after the
    update it is placed at: a lead of at most v dt that the segment removes by the first point.  Started
    on arrival instead, it would lag by ``delay``.
    """
    alone = TrajectoryController(np.zeros(2), LimitMonitor(_limits()))
    relayed = TrajectoryController(np.zeros(2), LimitMonitor(_limits()))
    arrival = int(round((0.3 + delay) / 1e-3))
    for controller in (alone, relayed):
        controller.load(_wave(0.0, 1.0), 0.0, 'wave')
        _positions(controller, 0.0, arrival * 1e-3)
    relayed.load(_wave(0.3, 1.0), 0.3, 'continuation')  # stamped 0.3 s, received at 0.3 + delay
    error = np.abs(_positions(relayed, arrival * 1e-3, 1.2) - _positions(alone, arrival * 1e-3, 1.2)).max(axis=1)
    speed = 0.1 * np.pi  # the wave's fastest
    assert error.max() < (1e-9 if 0.3 + delay > 0.35 else speed * 1e-3), error.max()
    assert error[max(0, int(round((0.35 - 0.3 - delay) / 1e-3)) - 1):].max() < 1e-9   # in step from the first point
    assert relayed.monitor.take() == []  # no step at the join


def test_trajectories_are_taken_over_at_their_arrival_not_before():
    """The physics may run behind the clock: trajectories loaded early are taken over at their arrival instants."""
    controller = TrajectoryController(np.zeros(2), LimitMonitor(_limits()))
    controller.load(_wave(0.0, 1.0), 0.0, 'wave')
    _positions(controller, 0.0, 0.3)
    controller.load(_cubic_to([0.0, 0.0], 0.5), None, 'back', arrival=0.35)
    controller.load(_cubic_to([0.0, 0.1], 0.5), None, 'aside', arrival=0.4)
    wave = _positions(controller, 0.3, 0.35)
    times = 0.3 + 1e-3 * np.arange(1, len(wave) + 1)  # each update commands the wave one period ahead
    assert np.allclose(wave[:, 0], 0.1 * (1 - np.cos(np.pi * times)), atol=1e-9)  # still the wave until 0.35
    back = _positions(controller, 0.35, 0.4)
    # The cubic from the last command, the wave at 0.35 s (a point of it: exact), placed at the update at
    # 0.349 s, to rest at 0.85 s; commanded from 0.351 s.
    q0, v0, h = 0.1 * (1 - np.cos(0.35 * np.pi)), 0.1 * np.pi * np.sin(0.35 * np.pi), 0.501
    cubic = _hermite(q0, v0, 0.0, h, 1e-3 * np.arange(2, len(back) + 2))[0]
    assert np.allclose(back, cubic[:, None], atol=1e-12)  # both joints ran the wave
    aside = _positions(controller, 0.4, 1.0)
    assert aside[1, 1] > aside[0, 1] and np.allclose(aside[-1], [0.0, 0.1])  # then aside from 0.4


def _late_move(delay):
    """Return the reports of a Ruckig move from rest, stamped ``delay`` s before the controller takes it over at 0.5 s.

    Planned with a 2 rad/s^2 limit and no jerk limit, Ruckig ramps the acceleration in 20 ms (jerk
    100 rad/s^3): its first point is at 20 ms, with v = 0.02 rad/s.
    """
    limits = _limits()
    path = plan_move(MotionState.at_rest(np.zeros(2)), [0.5, 0.0], limits)
    assert path.times[0] == pytest.approx(0.02) and path.velocities[0, 0] == pytest.approx(0.02)
    controller = TrajectoryController(np.zeros(2), LimitMonitor(limits))
    _run(controller, 0.499)
    controller.load(jtc.Trajectory(path.times, path.positions, path.velocities, path.accelerations), 0.5 - delay,
                    'move', arrival=0.5)
    return _run_from(controller, 0.5, 0.5 + path.duration + 0.1)


def test_a_move_taken_over_at_its_stamp_is_not_reported():
    assert _late_move(0.0) == []


def test_a_join_past_the_first_point_is_reported_as_the_velocity_step():
    """Taken over 30 ms after its stamp, past its first point, the move is commanded 31 ms into it.

    The update that takes it over commands it one period ahead, where v = 0.02 + 2 x 0.011 = 0.042 rad/s:
    the command steps from rest to it in one 1 ms period, which the witness reports as 42 rad/s^2 at that
    command's time, though no spline exceeds 2.
    """
    reports = _late_move(0.03)
    found = {(v.joint, v.quantity): v for v in reports[0].violations}
    assert set(found) == {('j0', 'acceleration')}
    assert found['j0', 'acceleration'].value == pytest.approx(0.042 / 1e-3, rel=1e-3)
    assert found['j0', 'acceleration'].time == pytest.approx(0.031, abs=1e-6)


def test_a_join_before_the_first_point_is_reported_as_the_compressed_spline():
    """Taken over 10 ms after its stamp, the move's first 20 ms are run from rest in 10 ms: too fast."""
    reports = _late_move(0.01)
    found = {(v.joint, v.quantity): v for v in reports[0].violations}
    assert set(found) == {('j0', 'acceleration')}
    assert found['j0', 'acceleration'].value > 2.0 * 1.01 and found['j0', 'acceleration'].time <= 0.02


def _run_from(controller, t0, t1, dt=1e-3):
    reports, t = [], t0
    while t <= t1:
        reports += controller.update(t, dt)[3]
        t += dt
    return reports


def test_forward_position_stream_is_judged_on_the_stream_period_despite_jitter(rng):
    controller = ForwardController('forward_position', np.zeros(2), LimitMonitor(_limits()))
    period, step = 0.01, 0.0097  # 0.97 rad/s: within the 1.0 limit only if the period is known to 4 %
    reports = []
    for k in range(1, 80):
        sent = k * period + rng.uniform(-0.003, 0.003)  # a sender jitter of +-30 % of the period
        reports.append(controller.command([k * step, 0.0], sent))
    assert reports == [None] * len(reports)
    fast = controller.command([80 * step + 0.02, 0.0], 0.8)  # 3 rad/s in this period
    velocity = {v.quantity: v for v in fast.violations}['velocity']
    assert velocity.value == pytest.approx((step + 0.02) / period, rel=0.02)


def test_a_stream_that_starts_with_a_burst_is_not_taken_for_a_fast_one():
    controller = ForwardController('forward_position', np.zeros(2), LimitMonitor(_limits()))
    reports = []
    for k in range(1, 80):  # 0.5 rad/s at 100 Hz; the sender was starved and sent its first 10 at once
        sent = 0.1 + k * 1e-5 if k <= 10 else k * 0.01
        reports.append(controller.command([k * 0.005, 0.0], sent))
    assert reports == [None] * len(reports)
    assert controller.command([80 * 0.005 + 0.02, 0.0], 0.8) is not None  # 2.5 rad/s is still seen


def test_forward_position_outside_the_limits_is_reported_and_still_applied():
    controller = ForwardController('forward_position', np.zeros(2), LimitMonitor(_limits()))
    report = controller.command([1.5, 0.0], 0.0)
    assert [(v.joint, v.quantity, v.limit) for v in report.violations] == [('j0', 'position', 1.0)]
    q, v, _, _ = controller.update(0.001, 1e-3)
    assert q.tolist() == [1.5, 0.0] and not v.any()  # applied directly, as the real controller does


def test_forward_commands_take_effect_at_their_arrival_not_before():
    """A physics thread running behind the clock applies a command at the instant it arrived, as a real loop."""
    controller = ForwardController('forward_position', np.zeros(2), LimitMonitor(_limits()))
    controller.command([0.1, 0.0], 0.0, arrival=0.5)
    controller.command([0.2, 0.0], 0.01, arrival=0.51)
    assert controller.update(0.499, 1e-3)[0].tolist() == [0.0, 0.0]
    assert controller.update(0.5, 1e-3)[0].tolist() == [0.1, 0.0]
    assert controller.update(0.51, 1e-3)[0].tolist() == [0.2, 0.0]


def test_a_command_placed_before_the_physics_skipped_ahead_does_not_hold_up_later_ones():
    """After a skip the clocks' relation changes: a command placed earlier lies in the physics' future."""
    controller = ForwardController('forward_position', np.zeros(2), LimitMonitor(_limits()))
    controller.command([0.1, 0.0], 0.0, arrival=1.5)   # placed before a skip of 1 s
    controller.command([0.2, 0.0], 0.01, arrival=0.51)
    assert controller.update(0.51, 1e-3)[0].tolist() == [0.2, 0.0]
    trajectories = TrajectoryController(np.zeros(2), LimitMonitor(_limits()))
    trajectories.load(_cubic_to([0.5, 0.0], 0.1), None, 'before the skip', arrival=1.5)
    trajectories.load(_cubic_to([0.0, 0.5], 0.1), None, 'after', arrival=0.51)
    trajectories.update(0.51, 1e-3)
    assert np.allclose(trajectories.update(0.7, 1e-3)[0], [0.0, 0.5])


def test_forward_velocity_integrates_and_stops_at_the_limit_with_one_report():
    controller = ForwardController('forward_velocity', np.zeros(2), LimitMonitor(_limits()))
    assert controller.command([0.5, -0.25], 0.0) is None
    reports = []
    for k in range(1000):
        q, v, _, r = controller.update(k * 1e-3, 1e-3)
        reports += r
    assert np.allclose(q, [0.5, -0.25])  # 1 s of integration
    for k in range(2000):  # joint 0 reaches +1 after another second
        q, v, _, r = controller.update(1.0 + k * 1e-3, 1e-3)
        reports += r
    assert q[0] == 1.0 and v[0] == 0.0 and v[1] == -0.25
    assert len(reports) == 1 and [x.joint for x in reports[0].violations] == ['j0']
    report = controller.command([2.0, 0.0], 3.0)  # 2 rad/s: beyond the velocity limit
    assert {x.quantity for x in report.violations} >= {'velocity'}


def test_measured_acceleration_is_the_velocity_change_of_the_physics_step():
    sim = ArmSimulation('urdf/ik7.urdf.xacro', initial_positions=HOME)
    dt = sim.timestep
    for k in range(300):
        t = k * dt
        sim.command(HOME + 0.2 * np.sin(4 * t), 0.8 * np.cos(4 * t) * np.ones(7))
        before = sim.velocities
        sim.step(measure=True)
        assert np.allclose(sim.acceleration, (sim.velocities - before) / dt)
    assert np.abs(sim.acceleration).max() > 0.1


def test_the_arm_touches_world_objects():
    sim = ArmSimulation('urdf/ik7.urdf.xacro', initial_positions=HOME, obstacles=[TABLE])
    for _ in range(200):
        sim.step()
    assert sim.contacts() == []
    for _ in range(1500):
        sim.command(DOWN, np.zeros(7))
        sim.step()
    contacts = sim.contacts()
    assert contacts and {c[1] for c in contacts} == {'table'}
    assert {c[0] for c in contacts} <= {'link5', 'link6', 'link7'}
    assert np.abs(sim.positions - DOWN).max() > 0.01  # the table stopped the arm


def test_overlapping_links_of_the_arm_neither_touch_nor_disturb_each_other():
    import mujoco
    far = make_obstacle('far', 'sphere', [0.05], [5.0, 5.0, 5.0])  # a world object switches contacts on
    sim = ArmSimulation('urdf/ik7.urdf.xacro', initial_positions=HOME, obstacles=[far])
    for _ in range(2000):
        sim.command(OVERLAP, np.zeros(7))
        sim.step()
    link5, link7 = (int(np.flatnonzero(sim.model.geom_bodyid == sim.model.body(n).id)[0]) for n in ('link5', 'link7'))
    assert mujoco.mj_geomDistance(sim.model, sim.data, link5, link7, 0.1, np.zeros(6)) < -0.005  # they overlap
    assert sim.contacts() == [] and np.abs(sim.positions - OVERLAP).max() < 1e-3


def test_a_contact_between_two_polls_is_not_missed():
    sim = ArmSimulation('urdf/ik7.urdf.xacro', initial_positions=HOME, obstacles=[TABLE])
    for target, steps in ((DOWN, 1500), (HOME, 1500)):  # into the table and back out, one poll at the end
        for _ in range(steps):
            sim.command(target, np.zeros(7))
            sim.step()
    contacts = sim.contacts()
    assert {c[1] for c in contacts} == {'table'} and min(c[2] for c in contacts) < 0.0
    assert sim.contacts() == []  # cleared, and none at home


def test_world_objects_need_a_known_fixed_frame():
    with pytest.raises(ValueError, match='moves with the arm'):
        ArmSimulation('urdf/ik7.urdf.xacro', obstacles=[make_obstacle('cup', 'sphere', [0.05], frame='link7')])
    with pytest.raises(ValueError, match="frame 'nowhere'"):
        ArmSimulation('urdf/ik7.urdf.xacro', obstacles=[make_obstacle('cup', 'sphere', [0.05], frame='nowhere')])


def test_controller_state_is_filled_as_the_controller_does():
    rclpy = pytest.importorskip('trajectory_msgs.msg', reason='ROS messages are not installed')  # noqa: F841
    from ik_solver_demos.sim.sim_arm_node import fill_controller_state
    msg = SimpleNamespace(header=SimpleNamespace(stamp=None))  # control_msgs is not on PyPI: a stand-in
    q_ref, v_ref, a_ref = np.array([0.5, 0.1]), np.array([0.2, 0.0]), np.array([1.0, -1.0])
    q, v = np.array([0.45, 0.1]), np.array([0.25, 0.0])
    command = np.array([0.5002, 0.1])   # one period ahead of the reference
    fill_controller_state(msg, 'now', ['a', 'b'], (q_ref, v_ref, a_ref), command, q, v)
    assert msg.header.stamp == 'now' and msg.joint_names == ['a', 'b']
    assert list(msg.reference.positions) == [0.5, 0.1] and list(msg.reference.accelerations) == [1.0, -1.0]
    assert np.allclose(msg.error.positions, q_ref - q) and np.allclose(msg.error.velocities, v_ref - v)
    assert list(msg.output.positions) == [0.5002, 0.1]   # the position interface's command
