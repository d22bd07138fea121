"""The whole loop with real processes and real physics: ik_solver_node drives the MuJoCo arm."""
import time

from conftest import URDF_DIR
from ik_solver.core.transforms import make_pose, pose_error  # noqa: E402
from ik_solver.motion import jtc  # noqa: E402
from ik_solver.tools.demo import circle, DOWN  # noqa: E402
import numpy as np
import pytest
from ros_fixtures import Session, start, trajectory_points  # noqa: I100

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])


@pytest.fixture(scope='module')
def arm(ik7):
    s = Session(ik7.joint_names)
    try:
        limits = str(URDF_DIR.parent / 'config' / 'ik7_joint_limits.yaml')
        s.sim = s.add(start('sim.sim_arm_node', joint_limits_file=limits))
        # 0.8: commanded peaks at 80 % of the limits leave room for the servos' tracking overshoot
        s.node = s.add(start('ros.ik_node', velocity_scaling=0.8, acceleration_scaling=0.8, joint_limits_file=limits))
        assert s.observer.wait_ready(60.0), s.node.output() + s.sim.output()
        yield s
    finally:
        s.close()


def _reach(arm, T):
    sent = arm.observer.send_target(T)
    status = arm.observer.wait_status(sent)
    assert status is not None
    arm.observer.wait_settled(sent + 0.05, timeout=10.0)
    return status


def test_reachable_targets_are_reached_in_the_simulator(arm, ik7, rng):
    for _ in range(5):
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


def test_streamed_path_is_tracked_with_bounded_error(arm):
    start_pose = make_pose([0.5, 0.0, 0.5], DOWN)
    _reach(arm, start_pose)
    times, poses = circle(start_pose[:3, 3], 0.1, 3.0, 100.0, 1, DOWN)
    path = np.array([T[:3, 3] for T in poses])
    t0 = time.monotonic()
    distances = []
    for t, T in zip(times, poses):
        delay = t0 + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        arm.observer.send_target(T)
        tip = arm.observer.latest_tip()
        if t > 0.3:
            distances.append(np.linalg.norm(path - tip[:3, 3], axis=1).min())
    assert np.max(distances) < 0.01
    arm.observer.wait_settled(time.monotonic(), timeout=5.0)
    pe, _ = pose_error(poses[-1], arm.observer.latest_tip())
    assert pe < 2e-3


def test_every_published_trajectory_passes_the_controller_checks(arm, ik7):
    with arm.observer.lock:
        trajectories = [m for _, m in arm.observer.trajectories]
    assert len(trajectories) > 100
    for msg in trajectories:
        points = trajectory_points(msg)
        assert jtc.validate(list(msg.joint_names), points, ik7.joint_names, ik7.lower, ik7.upper) == []
    assert 'rejected' not in arm.sim.output()


def test_simulated_joints_stay_within_position_and_velocity_limits(arm, ik7):
    with arm.observer.lock:
        log = list(arm.observer.joint_log)
    Q = np.array([s[1] for s in log])
    V = np.array([s[2] for s in log])
    assert len(Q) > 500
    assert np.all(Q >= ik7.lower - 1e-3) and np.all(Q <= ik7.upper + 1e-3)
    assert np.all(np.abs(V) <= ik7.velocity_limits * 1.05)
