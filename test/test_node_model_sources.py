"""The node's robot model sources and frames, in-process: topic, garbage, tf2 path (with an injected buffer)."""
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')

from conftest import URDF_DIR  # noqa: E402, I100
from geometry_msgs.msg import PoseStamped, TransformStamped  # noqa: E402
from ik_solver.core.transforms import make_pose  # noqa: E402
from ik_solver.ros.ik_node import IKSolverNode, SolveError  # noqa: E402
from ik_solver.ros.messages import matrix_to_pose  # noqa: E402
from ik_solver_interfaces.srv import SolveIK  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import String  # noqa: E402


@pytest.fixture
def node():
    from ros_fixtures import isolate_ros_domain
    isolate_ros_domain()
    rclpy.init()
    n = IKSolverNode()
    yield n
    n.destroy_node()
    rclpy.try_shutdown()


def _solve(node, T, frame='base_link'):
    request = SolveIK.Request()
    request.target.header.frame_id = frame
    request.target.pose = matrix_to_pose(T)
    return node._on_solve(request, SolveIK.Response())


def test_waits_for_the_topic_survives_garbage_then_loads(node, ik7):
    assert node.model is None
    assert _solve(node, np.eye(4)).reason == SolveIK.Response.NO_ROBOT_MODEL
    node._on_robot_description(String(data=''))
    node._on_robot_description(String(data='<robot name="x"><link name="a"/>'))
    node._on_robot_description(String(data='not xml at all'))
    assert node.model is None
    from ik_solver.core.urdf import load_robot_description
    node._on_robot_description(String(data=load_robot_description(str(URDF_DIR / 'ik7.urdf.xacro'))))
    assert node.model is not None and node.model.chain.joint_names == ik7.joint_names
    T = ik7.fk(np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0]))
    assert _solve(node, T).success


def test_tf2_frames_compose_with_the_lookup(node, ik7):
    from ik_solver.core.urdf import load_robot_description
    node._on_robot_description(String(data=load_robot_description(str(URDF_DIR / 'ik7.urdf.xacro'))))
    # base_link <- camera: 1 m ahead, rotated 90 deg about z (quaternion z = w = 1/sqrt(2))
    base_T_camera = make_pose([1.0, 0.0, 0.2], [0.0, 0.0, 0.7071067811865476, 0.7071067811865476])

    class Buffer:
        def lookup_transform(self, target, source, time):
            assert (target, source) == ('base_link', 'camera')
            tf = TransformStamped()
            tf.transform.translation.x, tf.transform.translation.y, tf.transform.translation.z = 1.0, 0.0, 0.2
            tf.transform.rotation.z = tf.transform.rotation.w = 0.7071067811865476
            return tf

    node._tf_buffer = Buffer()
    target_in_base = ik7.fk(np.array([0.3, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0]))
    msg = PoseStamped()
    msg.header.frame_id = 'camera'
    msg.pose = matrix_to_pose(np.linalg.inv(base_T_camera) @ target_in_base)
    np.testing.assert_allclose(node._target_in_base(msg), target_in_base, atol=1e-12)
    node._tf_buffer = None
    with pytest.raises(SolveError, match="'camera' is not a link of the robot and tf2_ros is not available"):
        node._target_in_base(msg)


def test_broken_urdf_file_parameter_leaves_the_node_running():
    from ros_fixtures import isolate_ros_domain
    isolate_ros_domain()
    rclpy.init()
    try:
        n = IKSolverNode(parameter_overrides=[Parameter('urdf_file', value='/no/such/arm.urdf')])
        assert n.model is None
        assert _solve(n, np.eye(4)).reason == SolveIK.Response.NO_ROBOT_MODEL
        n.destroy_node()
    finally:
        rclpy.try_shutdown()
