"""Lying joint states never become a command: ik_solver_node drives the simulated arm over DDS.

The attack as it was reproduced: the driver's joint_states stop for 1.2 s (a restart), one message
with every joint at 0 arrives (what some drivers publish before their encoders are read), then a
target 5 cm away.  A bound that grew with the pause took the zeros for the arm's state and the
first point of the move lay 1.4 rad from the arm.  The truth here is the simulator's own state,
recorded before the pause (the arm rests), with no controller state to compare: every trajectory
the node sends must start within one sample period at the velocity limit of it, and once the
simulator's stream resumes the node moves again.
"""
import time

from conftest import URDF_DIR
from ik_solver.motion.limits import load_joint_limits
from ik_solver_demos.tools.observer import send_answered
import numpy as np
import pytest
from ros_fixtures import poll, Session, start  # noqa: I100
from std_srvs.srv import SetBool

LIMITS_FILE = str(URDF_DIR.parent / 'config' / 'ik7_joint_limits.yaml')
SAMPLE_PERIOD = 0.01
#: The arm rests here before the pause: every joint within 1.4 rad of zero, the zeros within the bound that grew
#: with a 1.2 s pause (velocity limits 1.48-1.75 rad/s).
HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
#: The node reads the controller's state from a controller that publishes none (a driver restart takes the
#: controller's state with it): joint_states are all it knows of the arm.
NO_STATE = 'silent_controller'


@pytest.fixture(scope='module')
def arm(ik7):
    s = Session(ik7.joint_names)
    try:
        s.node = s.add(start('ros.ik_node', joint_limits_file=LIMITS_FILE, target_timeout=5.0, timeout=0.05,
                             sample_period=SAMPLE_PERIOD, max_target_age=2.0, controller_name=NO_STATE,
                             trajectory_topic='joint_trajectory_controller/joint_trajectory'))
        s.sim = s.add(start('sim.sim_arm_node', joint_limits_file=LIMITS_FILE))
        assert s.wait_service(s.observer.solve_client), s.node.output()
        assert s.observer.wait_ready(60.0), s.node.output() + s.sim.output()
        s.enable_client = s.observer.create_client(SetBool, 'sim_arm/enable_joint_states')
        assert s.wait_service(s.enable_client)
        s.limits = load_joint_limits(ik7, LIMITS_FILE).limits
        yield s
    finally:
        s.close()


def _at_rest_at(arm, T):
    sent, status = send_answered(arm.observer, T, timeout=5.0)
    assert status is not None and status.success, (status, arm.node.output()[-2000:])
    assert arm.observer.wait_executed(sent, status)
    return arm.observer.latest_joints()[1]


def _first_points(arm, since, names):
    return [np.array(msg.points[0].positions) for _, msg in arm.observer.trajectories_since(since)
            if list(msg.joint_names) == list(names) and msg.points]


def test_zeros_after_a_pause_never_seed_a_move(arm, ik7):
    start_pose = ik7.fk(HOME)
    near = start_pose.copy()
    near[1, 3] += 0.05
    truth = _at_rest_at(arm, start_pose)
    assert np.abs(truth).max() > 1.0   # the zeros are far from the arm: a step of more than a radian
    step = arm.limits.velocity * SAMPLE_PERIOD
    assert arm.observer.call(arm.enable_client, SetBool.Request(data=False)).success
    try:
        time.sleep(1.2)
        since = time.monotonic()
        arm.publish_joints(ik7.joint_names, np.zeros(7))
        time.sleep(0.05)
        sent = arm.observer.send_target(near)
        time.sleep(0.3)
    finally:
        assert arm.observer.call(arm.enable_client, SetBool.Request(data=True)).success
    status = arm.observer.wait_status(sent, timeout=10.0)
    assert status is not None, arm.node.output()[-2000:]
    assert status.success or status.reason in ('stale_state', 'inconsistent_state'), (status.reason, status.message)
    time.sleep(0.5)
    for first in _first_points(arm, since, ik7.joint_names):
        assert np.all(np.abs(first - truth) <= step + 1e-6), (first - truth, step)
    # once the simulator's readings flow again the node moves, from the truth
    assert poll(lambda: arm.observer.latest_joints()[0] > time.monotonic() - 0.05, 5.0)
    for _ in range(10):
        since = time.monotonic()
        sent, status = send_answered(arm.observer, near, timeout=5.0)
        if status is not None and status.reason not in ('stale_state', 'inconsistent_state'):
            break
        time.sleep(0.3)
    assert status.success, (status.reason, status.message)
    arm.observer.wait_executed(sent, status)
    firsts = _first_points(arm, since, ik7.joint_names)
    assert firsts and np.all(np.abs(firsts[0] - truth) <= step + 1e-6), firsts
