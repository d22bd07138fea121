"""ik_solver_node as a separate process over real DDS: topics, services, parameters, bad input.

One node serves the whole module and the tests run in file order: the first
ones see a node that has not yet received a complete joint state.
"""
import time

from geometry_msgs.msg import PoseStamped  # noqa: E402
from ik_solver.core.transforms import make_pose  # noqa: E402
from ik_solver.motion import jtc  # noqa: E402
from ik_solver.ros.messages import final_joint_positions, joint_state, matrix_to_pose  # noqa: E402
from ik_solver_interfaces.srv import ComputeFK, SolveIK  # noqa: E402
import numpy as np
import pytest
from ros_fixtures import poll, Session, start, trajectory_points  # noqa: I100

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
DOWN = [1.0, 0.0, 0.0, 0.0]


@pytest.fixture(scope='module')
def session(ik7):
    s = Session(ik7.joint_names)
    s.node = s.add(start('ros.ik_node'))
    assert s.wait_service(s.observer.solve_client), s.node.output()
    assert s.wait_service(s.observer.fk_client) and s.wait_service(s.param_client)
    yield s
    s.close()


def solve_request(T, frame='base_link', **fields):
    request = SolveIK.Request()
    request.target.header.frame_id = frame
    request.target.pose = matrix_to_pose(T)
    for k, v in fields.items():
        setattr(request, k, v)
    return request


def check_solution(ik7, response, T):
    assert response.success, response.message
    q = np.array(response.solution.position)
    assert list(response.solution.name) == ik7.joint_names
    assert ik7.within_limits(q)
    np.testing.assert_allclose(ik7.fk(q)[:3, 3], T[:3, 3], atol=1e-5)
    return q


def test_service_before_any_joint_state_seeds_from_mid_limits(session, ik7):
    T = ik7.fk(HOME)
    check_solution(ik7, session.observer.call(session.observer.solve_client, solve_request(T)), T)


def test_joint_states_missing_or_nan_joints_drop_targets(session, ik7):
    # Runs before any complete joint state has been published (tests run in file order).
    session.publish_joints(ik7.joint_names[:-1], HOME[:-1])
    session.publish_joints(['joint7'], [float('nan')])
    time.sleep(0.3)
    t0 = session.observer.send_target(ik7.fk(HOME))
    time.sleep(0.5)
    assert not session.trajectories_since(t0)
    log = session.node.output()
    assert 'waiting for joint_states: no position for joint(s) joint7' in log
    assert 'ignoring non-finite joint_states for joint7' in log
    assert session.node.alive()


def test_service_reachable_with_seed_and_overrides(session, ik7, rng):
    for method in ('lm', 'dls', 'pinv', 'adaptive_dls'):
        T = ik7.fk(HOME + rng.uniform(-0.3, 0.3, 7))
        request = solve_request(T, method=method, timeout=0.05,
                                seed=joint_state(ik7.joint_names[::-1], HOME[::-1]))
        t0 = time.monotonic()
        check_solution(ik7, session.observer.call(session.observer.solve_client, request), T)
        status = poll(lambda: session.statuses_since(t0))[-1]
        assert status.source == 'service' and status.method == method


def test_service_position_only_and_weights(session, ik7):
    T = make_pose(ik7.fk(HOME)[:3, 3], [0.3, 0.2, 0.1, 0.9])
    response = session.observer.call(session.observer.solve_client, solve_request(T, position_only=True))
    check_solution(ik7, response, T)
    response = session.observer.call(session.observer.solve_client, solve_request(T, weights=[1.0, 1.0]))
    assert not response.success and response.reason == SolveIK.Response.INVALID_INPUT
    assert '6 values' in response.message


def test_service_target_in_another_robot_link(session, ik7):
    q = HOME + 0.2
    T_base = ik7.fk(q)
    T_link2 = np.linalg.inv(ik7.fk(HOME, 'link2')) @ T_base  # link2 pose depends on joints 1 and 2
    request = solve_request(T_link2, frame='link2', seed=joint_state(ik7.joint_names, HOME))
    check_solution(ik7, session.observer.call(session.observer.solve_client, request), T_base)


@pytest.mark.parametrize('make,reason,text', [
    (lambda: solve_request(make_pose([3.0, 0.0, 0.5])), SolveIK.Response.UNREACHABLE, 'beyond the chain reach'),
    (lambda: solve_request(np.eye(4), frame='camera_optical_frame'), SolveIK.Response.UNKNOWN_FRAME,
     'camera_optical_frame'),
    (lambda: solve_request(np.eye(4), method='newton'), SolveIK.Response.INVALID_INPUT, 'unknown IK method'),
    (lambda: solve_request(np.eye(4), seed=joint_state(['joint1'], [0.0])), SolveIK.Response.INVALID_INPUT,
     'no position for joint(s) joint7'),
])
def test_service_failures_have_reasons(session, make, reason, text):
    response = session.observer.call(session.observer.solve_client, make())
    assert not response.success
    assert response.reason == reason and text in response.message


@pytest.mark.parametrize('field,value', [('x', float('nan')), ('w', 0.0)])
def test_service_bad_pose(session, field, value):
    request = solve_request(np.eye(4))
    if field == 'x':
        request.target.pose.position.x = value
    else:
        request.target.pose.orientation.w = value
    response = session.observer.call(session.observer.solve_client, request)
    assert not response.success and response.reason == SolveIK.Response.INVALID_INPUT
    assert 'NaN' in response.message or 'zero quaternion' in response.message


def test_compute_fk(session, ik7):
    request = ComputeFK.Request(joint_state=joint_state(ik7.joint_names, HOME), link='link4')
    response = session.observer.call(session.observer.fk_client, request)
    assert response.success and response.pose.header.frame_id == 'base_link'
    p = response.pose.pose.position
    np.testing.assert_allclose([p.x, p.y, p.z], ik7.fk(HOME, 'link4')[:3, 3], atol=1e-9)
    bad = session.observer.call(session.observer.fk_client, ComputeFK.Request(
        joint_state=joint_state(ik7.joint_names, HOME), link='nowhere'))
    assert not bad.success and 'nowhere' in bad.message


def test_target_topic_publishes_a_valid_trajectory(session, ik7):
    session.publish_joints(ik7.joint_names, HOME)
    time.sleep(0.3)
    q_goal = HOME + np.array([0.3, -0.2, 0.2, 0.3, -0.2, 0.2, 0.3])
    T = ik7.fk(q_goal)
    t0 = session.observer.send_target(T)
    msgs = poll(lambda: session.trajectories_since(t0))
    assert msgs, session.node.output()
    msg = msgs[-1]
    points = trajectory_points(msg)
    assert jtc.validate(list(msg.joint_names), points, ik7.joint_names, ik7.lower, ik7.upper) == []
    assert points[0][0] > 0
    np.testing.assert_allclose(ik7.fk(final_joint_positions(msg, ik7.joint_names))[:3, 3], T[:3, 3], atol=1e-5)
    status = poll(lambda: session.statuses_since(t0))[-1]
    assert status.success and status.trajectory_published and status.source == 'topic'
    assert status.sigma_min > 0 and status.manipulability > 0


def _send_and_expect_nothing(session, T=None, msg=None):
    t0 = time.monotonic()
    if msg is None:
        session.observer.send_target(T)
    else:
        session.observer.target_pub.publish(msg)
    status = poll(lambda: session.statuses_since(t0), 2.0)
    time.sleep(0.2)
    assert not session.trajectories_since(t0)
    return status


def test_unreachable_target_publishes_nothing(session, ik7):
    session.publish_joints(ik7.joint_names, HOME)
    status = _send_and_expect_nothing(session, make_pose([2.5, 0.0, 0.3], DOWN))
    assert status and status[-1].reason == 'unreachable' and not status[-1].trajectory_published


def test_nan_and_zero_quaternion_targets_publish_nothing(session):
    for field in ('nan', 'zero'):
        msg = PoseStamped()
        msg.header.frame_id = 'base_link'
        if field == 'nan':
            msg.pose.position.x = float('nan')
        else:
            msg.pose.orientation.w = 0.0
        status = _send_and_expect_nothing(session, msg=msg)
        assert status and status[-1].reason == 'invalid_input'


def test_parameters_change_at_run_time_and_bad_values_are_refused(session, ik7):
    ok = session.set_parameter('method', 'dls')
    assert ok.successful
    refused = session.set_parameter('method', 'newton')
    assert not refused.successful and 'must be one of' in refused.reason
    refused = session.set_parameter('timeout', 5.0)
    assert not refused.successful
    refused = session.set_parameter('nullspace.pole_target', [1.0, 2.0])
    assert not refused.successful and '3 finite' in refused.reason
    read_only = session.set_parameter('base_link', 'link2')
    assert not read_only.successful
    session.publish_joints(ik7.joint_names, HOME)
    time.sleep(0.1)
    t0 = session.observer.send_target(ik7.fk(HOME + 0.1))
    status = poll(lambda: session.statuses_since(t0))[-1]
    assert status.method == 'dls' and status.success
    assert session.set_parameter('method', 'lm').successful


def test_guarded_approximation(session, ik7):
    session.publish_joints(ik7.joint_names, HOME)
    time.sleep(0.1)
    stretched = make_pose([0.955, 0.0, 0.36], [0.0, 0.7071067811865476, 0.0, 0.7071067811865476])
    assert session.set_parameter('publish_approximation', True).successful
    assert session.set_parameter('approximation.max_joint_jump', 3.0).successful
    t0 = session.observer.send_target(stretched)  # ~1 cm beyond the reach
    msgs = poll(lambda: session.trajectories_since(t0))
    status = poll(lambda: session.statuses_since(t0))[-1]
    assert not status.success and status.trajectory_published and msgs
    q = final_joint_positions(msgs[-1], ik7.joint_names)
    assert ik7.within_limits(q)
    assert np.linalg.norm(ik7.fk(q)[:3, 3] - stretched[:3, 3]) < 0.01
    # far beyond the guard: nothing
    status = _send_and_expect_nothing(session, make_pose([1.2, 0.0, 0.36], DOWN))
    assert status and not status[-1].trajectory_published
    assert session.set_parameter('publish_approximation', False).successful


def test_burst_of_targets_is_solved_at_the_newest(session, ik7, rng):
    session.publish_joints(ik7.joint_names, HOME)
    time.sleep(0.1)
    targets = [ik7.fk(HOME + rng.uniform(-0.2, 0.2, 7)) for _ in range(50)]
    t0 = time.monotonic()
    sent = 0
    while time.monotonic() - t0 < 1.0:  # ~10 000 targets/s for one second
        session.observer.send_target(targets[sent % 50])
        sent += 1
    last = targets[(sent - 1) % 50]
    time.sleep(1.0)
    assert session.node.alive()
    msgs = session.trajectories_since(t0)
    assert 0 < len(msgs) < sent
    np.testing.assert_allclose(ik7.fk(final_joint_positions(msgs[-1], ik7.joint_names))[:3, 3], last[:3, 3], atol=1e-5)
    # still answering normally afterwards
    T = ik7.fk(HOME)
    check_solution(ik7, session.observer.call(session.observer.solve_client, solve_request(T)), T)
