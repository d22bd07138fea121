"""The whole loop with real processes and real physics: ik_solver_node drives the MuJoCo arm."""
import json
import time

from conftest import URDF_DIR
from ik_solver.core.transforms import make_pose, pose_error  # noqa: E402
from ik_solver.motion import jtc  # noqa: E402
from ik_solver.motion.limits import load_joint_limits  # noqa: E402
from ik_solver.ros.messages import final_joint_positions  # noqa: E402
from ik_solver_demos.tools.demo import circle, DOWN  # noqa: E402
from ik_solver_demos.tools.observer import send_answered, without_gc_pauses  # noqa: E402
import numpy as np
import pytest
from ros_fixtures import node_session, trajectory_points  # noqa: I100
from std_msgs.msg import Float64MultiArray, String

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
LIMITS_FILE = str(URDF_DIR.parent / 'config' / 'ik7_joint_limits.yaml')
#: Physical accelerations the PD servos add to the commanded ones: peaks stay below limit x FACTOR + MARGIN
#: (as in test_e2e_robot).  A trajectory switch whose first point is a fraction of a millisecond away measured
#: up to 4e4 rad/s^2 here.
ACCELERATION_FACTOR = 1.5
ACCELERATION_MARGIN = 2.0
#: The tip stays this close to the circle while the node executes every target [m].
TRACKING_BOUND = 0.01


@pytest.fixture(scope='module')
def arm(ik7):
    # 0.8: commanded peaks at 80 % of the limits leave room for the servos' tracking overshoot
    with node_session(ik7.joint_names, sim={'joint_limits_file': LIMITS_FILE}, velocity_scaling=0.8,
                      acceleration_scaling=0.8, joint_limits_file=LIMITS_FILE,
                      max_target_age=2.0, timeout=0.05) as s:  # max_target_age, timeout: a loaded CI
        assert s.observer.wait_ready(60.0), s.node.output() + s.sim.output()
        s.accelerations, s.violations = [], []
        s.observer.create_subscription(Float64MultiArray, 'sim_arm/measured_accelerations',
                                       lambda m: s.accelerations.append(np.array(m.data)), 100)
        s.observer.create_subscription(String, 'sim_arm/limit_violations',
                                       lambda m: s.violations.append(json.loads(m.data)), 100)
        yield s


def _reach(arm, T):
    sent, status = send_answered(arm.observer, T, timeout=5.0)  # lost while discovery completes, or too late
    assert status is not None, arm.node.output()[-2000:]
    arm.observer.wait_executed(sent, status)
    return status


def test_reachable_targets_are_reached_in_the_simulator(arm, ik7, rng):
    """Three random configurations' poses are reached, as the simulator measures the tip.

    Each target is one more check of the same property; the circle below reaches a streamed pose, and
    test_e2e_collision_physics reaches random targets among obstacles.
    """
    for _ in range(3):
        q = np.clip(HOME + rng.uniform(-0.6, 0.6, 7), ik7.lower, ik7.upper)
        T = ik7.fk(q)
        status = _reach(arm, T)
        assert status.success
        pe, re = pose_error(T, arm.observer.latest_tip())
        assert pe < 2e-3 and re < 1e-2, (pe, re)


def test_unreachable_target_does_not_move_the_arm(arm):
    _reach(arm, make_pose([0.5, 0.0, 0.5], DOWN))
    before = arm.observer.latest_joints()[1]
    status = _reach(arm, make_pose([1.8, 0.0, 0.4], DOWN))
    time.sleep(0.5)
    assert not status.success and not status.trajectory_published
    assert np.abs(arm.observer.latest_joints()[1] - before).max() < 1e-3


def _distance_to_circle(p, centre, radius):
    """Distance of point ``p`` from the circle of ``demo.circle`` (y-z plane through ``centre``, below it)."""
    d = p - (centre + [0.0, 0.0, -radius])
    return np.hypot(d[0], np.hypot(d[1], d[2]) - radius)


def _sagitta(radius, angle):
    """How far the chord of ``angle`` rad lies inside its circle."""
    return radius * (1.0 - np.cos(min(angle, np.pi) / 2))


CIRCLE = {'centre': np.array([0.5, 0.0, 0.5]), 'radius': 0.1, 'period': 3.0}


def _stream_circle(arm, request=None):
    """Stream the 100 Hz circle once per session; keep (tip distances, executed status times, t0, accelerations).

    A rerun of a test that passes its ``request`` (its first attempt failed: pytest-rerunfailures counts attempts
    in ``execution_count``) streams the circle again; judging the failed run once more could only fail again.
    """
    rerun = getattr(getattr(request, 'node', None), 'execution_count', 1) > 1
    if rerun or getattr(arm, 'circle', None) is None:
        centre, radius, period = CIRCLE['centre'], CIRCLE['radius'], CIRCLE['period']
        _reach(arm, make_pose(centre, DOWN))
        times, poses = circle(centre, radius, period, 100.0, 1, DOWN)
        arm.accelerations.clear()
        arm.violations.clear()
        distances = []
        with without_gc_pauses():   # a full collection of the records stopped a client 0.1-0.3 s
            t0 = time.monotonic()
            for t, T in zip(times, poses):
                delay = t0 + t - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                arm.observer.send_target(T)
                distances.append(_distance_to_circle(arm.observer.latest_tip()[:3, 3], centre, radius))
        settled = arm.observer.wait_settled(time.monotonic(), timeout=10.0)
        pe, _ = pose_error(poses[-1], arm.observer.latest_tip())
        executed = [t for t, status in arm.observer.statuses if t >= t0 and status.trajectory_published]
        arm.circle = {'distances': distances, 'executed': executed, 't0': t0, 'settled': settled, 'final_error': pe,
                      'accelerations': np.array(arm.accelerations), 'violations': list(arm.violations)}
    return arm.circle


def test_streamed_path_is_tracked_with_bounded_error(arm, request):
    """A 100 Hz target stream: the tip follows the circle and ends on its last target.

    Under load the node may fall behind and skip targets (newest wins); the arm then cuts the chord between
    the targets it executed, so the tracking bound grows by that chord's sagitta (from the largest gap between
    executed statuses), and the final target is reached either way.
    """
    run = _stream_circle(arm, request)
    assert run['settled'] and run['final_error'] < 2e-3, run['final_error']
    assert run['executed']
    gap = np.diff([run['t0']] + run['executed']).max()
    allowance = _sagitta(CIRCLE['radius'], 2 * np.pi * gap / CIRCLE['period'])
    assert np.max(run['distances']) < TRACKING_BOUND + allowance, (np.max(run['distances']), gap)


def test_streamed_goals_follow_the_stream_without_wandering_in_the_nullspace(arm, ik7, request):
    """Each executed goal of the circle differs from the one before by a minimum-norm step, nothing more.

    ik7 is redundant: any motion in the Jacobian's nullspace leaves the tip where it is.  A goal solved from the
    goal under way (``Commander.seed``) moves the joints by J+ J dq from it, the least joint motion that makes
    its tip's move.  Solved from the arm, which runs some 0.2 s behind the stream, one step of this circle moved
    the joints 11.8 times that: a turn in the nullspace, joint travel the arm then ran behind.
    """
    run = _stream_circle(arm, request)
    end = run['executed'][-1]
    with arm.observer.lock:
        received = [(t, m) for t, m in arm.observer.trajectories if run['t0'] <= t <= end]
    goals = [final_joint_positions(m, ik7.joint_names) for _, m in received]
    assert len(goals) > 50
    ratios = []
    for before, after in zip(goals, goals[1:]):
        step = after - before
        J = ik7.jacobian(before)
        least = np.linalg.pinv(J) @ (J @ step)
        if np.linalg.norm(least) > 1e-4:   # the tip moves (a goal sent twice moves nothing)
            ratios.append(np.linalg.norm(step) / np.linalg.norm(least))
    assert max(ratios) < 1.05, (max(ratios), np.percentile(ratios, 90))


@pytest.mark.xfail(strict=False, reason='load-sensitive: re-targets continue the moving command for '
                   'command_lead_time and are seamless when the controller takes them within it (test_next_move); '
                   "under load the Python simulator's executor takes some tens of ms late, past it, and the "
                   'physics measures the step (seen up to ~40 rad/s^2 on the 2-core machine)')
def test_streamed_path_has_no_acceleration_spikes(arm, ik7):
    """Every trajectory switch of the stream takes over smoothly, as the physics measures it.

    Each trajectory is stamped with the instant its start state describes and the (simulated) controller
    joins it in step, so a transport delay does not turn into an acceleration step.
    """
    run = _stream_circle(arm)
    limits = load_joint_limits(ik7, LIMITS_FILE).limits
    peak = np.abs(run['accelerations']).max(axis=0)
    assert np.all(peak <= limits.acceleration * ACCELERATION_FACTOR + ACCELERATION_MARGIN), (peak, limits.acceleration)
    # what the simulated controller executed stayed within the limits x 1.01 (its own report)
    assert not run['violations'], [(v['command'], [(x['joint'], x['quantity'], round(x['value'], 2))
                                                   for x in v['violations']]) for v in run['violations'][:3]]


def test_every_published_trajectory_passes_the_controller_checks(arm, ik7):
    with arm.observer.lock:
        trajectories = [m for _, m in arm.observer.trajectories]
    assert len(trajectories) > 20  # the moves of the tests above (how many depends on the machine's load)
    for msg in trajectories:
        points = trajectory_points(msg)
        assert jtc.validate(list(msg.joint_names), points, ik7.joint_names, ik7.lower, ik7.upper) == []
    assert 'rejected' not in arm.sim.output()


def test_simulated_joints_stay_within_position_and_velocity_limits(arm, ik7):
    """Every joint_states sample is within the position limits and (5 % servo overshoot) the velocity limits."""
    with arm.observer.lock:
        log = list(arm.observer.joint_log)
    Q = np.array([s[1] for s in log])
    V = np.array([s[2] for s in log])
    assert len(Q) > 500
    assert np.all(Q >= ik7.lower - 1e-3) and np.all(Q <= ik7.upper + 1e-3)
    assert np.all(np.abs(V) <= ik7.velocity_limits * 1.05)
