"""The node's robot model sources and target frames, in-process.

Model: topic, garbage, a cyclic description, a swap to another arm, a description that does
not fit the parameters.  Frames: robot links at the target's stamp, tf2 at the stamp (an
injected buffer), and the error before any tf has arrived.
"""
import time

from builtin_interfaces.msg import Time as TimeMsg
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')

from conftest import URDF_DIR  # noqa: E402, I100
from geometry_msgs.msg import PoseStamped, TransformStamped  # noqa: E402
from ik_solver.core.transforms import make_pose  # noqa: E402
from ik_solver.core.urdf import load_robot_description  # noqa: E402
from ik_solver.motion.limits import MotionState  # noqa: E402
from ik_solver.ros.ik_node import SolveError  # noqa: E402
from ik_solver.ros.joint_states import StateError  # noqa: E402
from ik_solver.ros.messages import joint_state, matrix_to_pose  # noqa: E402
from ik_solver.ros.target_frames import FrameError  # noqa: E402
from ik_solver_interfaces.srv import SolveIK  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import String  # noqa: E402

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
CYCLIC = ('<robot name="r"><link name="base_link"/><link name="a"/><link name="tool0"/>'
          '<joint name="j1" type="fixed"><parent link="a"/><child link="tool0"/></joint>'
          '<joint name="j2" type="fixed"><parent link="tool0"/><child link="a"/></joint></robot>')


@pytest.fixture
def make_node():
    from ros_fixtures import in_process_ik_nodes
    with in_process_ik_nodes() as make:
        yield make


def _description(arm):
    name = {'ik7': 'ik7.urdf.xacro', 'ik6': 'ik6.urdf.xacro', 'planar3': 'planar3.urdf'}[arm]
    return load_robot_description(str(URDF_DIR / name))


def _publish_description(node, text, expect_name=None, timeout=60.0):
    """Hand a description to the node as the topic would; wait for the worker to load (or refuse) it."""
    node.model_source._on_description(String(data=text))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        loaded = expect_name is None or (node.model is not None and node.model.name == expect_name)
        if node.model_source._pending is None and loaded:
            break
        time.sleep(0.01)
    time.sleep(0.05)


def _solve(node, T, frame='base_link'):
    request = SolveIK.Request()
    request.target.header.frame_id = frame
    request.target.pose = matrix_to_pose(T)
    return node.solve_service_request(request)


def _feed_joints(node, names, q, stamp=None):
    """Hand the node one reading at ``stamp``, or (None) a driver's last 0.15 s at 100 Hz, enough to be believed."""
    now = node.get_clock().now().nanoseconds
    for t in [stamp] if stamp is not None else [now - k * 10_000_000 for k in range(15, -1, -1)]:
        msg = joint_state(names, q, t if stamp is not None else TimeMsg(sec=t // 1_000_000_000,
                                                                        nanosec=t % 1_000_000_000))
        msg.velocity = [0.0] * len(q)
        node.joint_states.on_message(msg)


def test_waits_for_the_topic_survives_garbage_then_loads(make_node, ik7):
    node = make_node()
    assert node.model is None
    assert _solve(node, np.eye(4)).reason == SolveIK.Response.NO_ROBOT_MODEL
    for garbage in ('', '<robot name="x"><link name="a"/>', 'not xml at all'):
        _publish_description(node, garbage)
    assert node.model is None
    _publish_description(node, _description('ik7'), 'ik7')
    assert node.model is not None and node.model.chain.joint_names == ik7.joint_names
    assert _solve(node, ik7.fk(HOME)).success


def test_a_cyclic_description_neither_hangs_nor_replaces_the_model(make_node, ik7):
    node = make_node()
    _publish_description(node, _description('ik7'), 'ik7')
    t0 = time.monotonic()
    _publish_description(node, CYCLIC)
    assert time.monotonic() - t0 < 5.0
    assert node.model.name == 'ik7' and _solve(node, ik7.fk(HOME)).success


def test_a_model_swap_starts_fresh_and_a_misfit_keeps_the_working_model(make_node, ik6, ik7):
    node = make_node(**{'nullspace.preferred_posture': [0.1] * 7, 'timeout': 0.05})  # 50 ms: a loaded machine
    _publish_description(node, _description('ik7'), 'ik7')
    _feed_joints(node, ik7.joint_names, HOME)
    response = node.solve_service_request(_execute_request(ik7.fk(HOME + 0.05)))
    assert response.executed, response.message
    # ik6 parses and has the chain, but the 7-value preferred posture does not fit it: refused, ik7 kept
    _publish_description(node, _description('ik6'))
    assert node.model.name == 'ik7'
    node.set_parameters([Parameter('nullspace.preferred_posture', value=[0.0])])
    _publish_description(node, _description('ik6'), 'ik6')
    assert node.model.name == 'ik6' and node._robot.history.reference() is None  # no state carried over
    q6 = ik6.mid_configuration()
    _feed_joints(node, ik6.joint_names, q6)
    response = node.solve_service_request(_execute_request(ik6.fk(q6 + 0.05)))
    assert response.executed and len(response.solution.position) == 6, response.message


def _execute_request(T):
    request = SolveIK.Request(execute=True)
    request.target.header.frame_id = 'base_link'
    request.target.pose = matrix_to_pose(T)
    return request


def test_broken_urdf_file_parameter_leaves_the_node_running(make_node):
    node = make_node(urdf_file='/no/such/arm.urdf')
    assert node.model is None
    assert _solve(node, np.eye(4)).reason == SolveIK.Response.NO_ROBOT_MODEL


def test_robot_link_targets_resolve_at_their_stamp(make_node, ik7):
    node = make_node(urdf_file=str(URDF_DIR / 'ik7.urdf.xacro'))
    now = node.get_clock().now().nanoseconds
    stamps = [TimeMsg(sec=int(t // 1_000_000_000), nanosec=int(t % 1_000_000_000))
              for t in (now - 200_000_000, now - 100_000_000)]
    q_then, q_now = HOME, HOME + 0.3
    _feed_joints(node, ik7.joint_names, q_then, stamps[0])
    _feed_joints(node, ik7.joint_names, q_now, stamps[1])
    msg = PoseStamped()
    msg.header.frame_id, msg.header.stamp = 'tool0', stamps[0]
    msg.pose = matrix_to_pose(make_pose([0.0, 0.0, 0.1]))  # 10 cm ahead of the tool, where it was then
    resolved = [node.resolve(node._robot, msg) for _ in range(3)]
    expected = ik7.fk(q_then) @ make_pose([0.0, 0.0, 0.1])
    for T in resolved:  # the same target, resolved again later, stays where it was
        np.testing.assert_allclose(T, expected, atol=1e-12)
    msg.header.stamp = TimeMsg()  # zero stamp: the newest joints, fine for an answer that moves nothing
    np.testing.assert_allclose(node.resolve(node._robot, msg), ik7.fk(q_now) @ make_pose([0.0, 0.0, 0.1]),
                               atol=1e-12)
    with pytest.raises(SolveError, match="'tool0', which the arm moves, needs a header.stamp") as refused:
        node.resolve(node._robot, msg, moves=True)   # a move: resolved anew each time, a repeat would walk
    assert refused.value.reason == 'invalid_input'
    msg.header.frame_id = 'base_link'   # a frame the arm does not move: a zero stamp is fine
    np.testing.assert_allclose(node.resolve(node._robot, msg, moves=True), make_pose([0.0, 0.0, 0.1]), atol=1e-12)


class _Buffer:
    """A tf2 Buffer stand-in: one transform base_link <- camera, or nothing at all."""

    def __init__(self, known=True):
        self.known = known
        self.calls = []

    def all_frames_as_string(self):
        return 'Frame camera exists with parent base_link.\n' if self.known else ''

    def lookup_transform(self, target, source, time, timeout=None):
        self.calls.append((target, source, time.nanoseconds, timeout.nanoseconds))
        if not self.known:
            raise RuntimeError('"base_link" passed to lookupTransform argument target_frame does not exist.')
        tf = TransformStamped()
        tf.transform.translation.x, tf.transform.translation.y, tf.transform.translation.z = 1.0, 0.0, 0.2
        tf.transform.rotation.z = tf.transform.rotation.w = 0.7071067811865476
        return tf


def test_tf2_frames_at_the_stamp_with_an_injected_buffer(make_node, ik7):
    node = make_node(urdf_file=str(URDF_DIR / 'ik7.urdf.xacro'), transform_timeout=0.2)
    base_T_camera = make_pose([1.0, 0.0, 0.2], [0.0, 0.0, 0.7071067811865476, 0.7071067811865476])
    node.frames.buffer = buffer = _Buffer()
    target_in_base = ik7.fk(np.array([0.3, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0]))
    msg = PoseStamped()
    msg.header.frame_id = 'camera'
    msg.header.stamp = TimeMsg(sec=12, nanosec=5)
    msg.pose = matrix_to_pose(np.linalg.inv(base_T_camera) @ target_in_base)
    np.testing.assert_allclose(node.resolve(node._robot, msg), target_in_base, atol=1e-12)
    assert buffer.calls[-1] == ('base_link', 'camera', 12_000_000_005, 200_000_000)
    msg.header.stamp = TimeMsg()
    node.resolve(node._robot, msg)
    assert buffer.calls[-1][2] == 0  # zero stamp: the latest transform
    node.frames.buffer = _Buffer(known=False)
    with pytest.raises(FrameError, match="'camera': no tf has been received yet"):
        node.resolve(node._robot, msg)
    node.frames.buffer = None
    with pytest.raises(FrameError, match="'camera' is not a link of the robot and tf2_ros is not available"):
        node.resolve(node._robot, msg)


def test_a_move_starts_from_the_controllers_reference_at_its_stamp_or_not_at_all(make_node, ik7, monkeypatch):
    """With a controller reference (control_msgs): its stamp is the start's instant; far from the arm: refused.

    A reference the measurement is further from than state_tolerance means the arm does not follow its
    commands; a move planned from the measurement would make the controller jump from its reference.
    """
    node = make_node(urdf_file=str(URDF_DIR / 'ik7.urdf.xacro'))
    context = node._robot
    _feed_joints(node, ik7.joint_names, HOME)
    stamped = time.monotonic() - 0.02
    reference = MotionState(HOME + 0.01, np.full(7, 0.2), np.zeros(7), stamped)
    monkeypatch.setattr(context.controller, 'reference', lambda: reference)
    start = context.commander.start_state()
    assert start.time == stamped  # not "now": a moving reference 20 ms old taken for now would be a step
    np.testing.assert_allclose(start.position, HOME + 0.01)
    reference = MotionState(HOME + 0.3, np.zeros(7), np.zeros(7), time.monotonic())
    with pytest.raises(StateError, match="from the controller's reference") as refused:
        context.commander.start_state()
    assert refused.value.reason == 'inconsistent_state'


@pytest.mark.parametrize('slow_checks,sent,reason', [(1, 1, 'success'), (2, 0, 'expired')])
def test_a_move_held_up_past_its_lead_time_is_planned_again_or_refused(make_node, ik7, monkeypatch, slow_checks,
                                                                       sent, reason):
    """A move that leaves later than command_lead_time after its start's instant is planned from the state then.

    The guard's collision check is held up 0.12 s (a loaded executor) for the first ``slow_checks`` attempts:
    once, the move is planned again and sent from a fresh start; twice, it is refused with the reason.
    """
    node = make_node(urdf_file=str(URDF_DIR / 'ik7.urdf.xacro'), command_lead_time=0.05)
    context = node._robot
    _feed_joints(node, ik7.joint_names, HOME)
    published, calls = [], []
    monkeypatch.setattr(context.controller, 'send_path', lambda names, path, stamp: published.append(path))
    check_path = context.guard.check_path

    def slow_check_path(start, path):
        calls.append(start.time)
        if len(calls) <= slow_checks:
            time.sleep(0.12)
        return check_path(start, path)

    monkeypatch.setattr(context.guard, 'check_path', slow_check_path)
    response = node.solve_service_request(_execute_request(ik7.fk(HOME + 0.05)))
    assert len(calls) == 2 and calls[1] > calls[0] + 0.1   # planned again from a later state
    assert len(published) == sent and response.executed == bool(sent)
    assert response.reason == getattr(SolveIK.Response, reason.upper()), response.message
    if not sent:
        assert 'more than command_lead_time 0.05 s' in response.message
