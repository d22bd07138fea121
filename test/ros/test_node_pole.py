"""The IK node's nullspace.pole_* parameters pick the elbow's side of a ~/solve answer, in-process.

Truth independent of the solver: ik7's tip in its plane of symmetry (y = 0) with a lateral pole, where the
elbow is on the pole's side exactly when its y coordinate has the pole's sign.
"""
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')

from conftest import URDF_DIR  # noqa: E402, I100
from ik_solver.core.transforms import make_pose  # noqa: E402
from ik_solver.ros.ik_node import IKSolverNode  # noqa: E402
from ik_solver.ros.messages import matrix_to_pose  # noqa: E402
from ik_solver_interfaces.srv import SolveIK  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

TARGET = make_pose([0.45, 0.0, 0.35], [1.0, 0.0, 0.0, 0.0])   # tool down, in the plane y = 0


@pytest.fixture
def node():
    from ros_fixtures import isolate_ros_domain
    isolate_ros_domain()
    rclpy.init()
    # 50 ms, as the solver's own pole-side test: these solves end within milliseconds, the rest is headroom for a
    # shared machine; no collision check, so that the pole alone picks among the solutions
    params = {'urdf_file': str(URDF_DIR / 'ik7.urdf.xacro'), 'timeout': 0.05, 'avoid_collisions': False,
              'nullspace.pole_weight': 1.0, 'nullspace.pole_link': 'link4', 'nullspace.pole_target': [0.3, 1.0, 0.6]}
    node = IKSolverNode(parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    yield node
    node.model_source.close()
    node.destroy_node()
    rclpy.try_shutdown()


def _request(names, seed):
    request = SolveIK.Request()
    request.target.header.frame_id = 'base_link'
    request.target.pose = matrix_to_pose(TARGET)
    request.seed = JointState(name=list(names), position=[float(x) for x in seed])
    return request


def _elbow_signs(node, chain, seeds):
    """Sign of the elbow's y for the node's answer from each seed (each answer checked at the target)."""
    signs = []
    for seed in seeds:
        response = node.solve_service_request(_request(chain.joint_names, seed))
        assert response.success and response.reason == SolveIK.Response.SUCCESS, response.message
        assert response.message == ''   # no pole_side_unreachable: both sides have solutions here
        q = np.array(response.solution.position)
        np.testing.assert_allclose(chain.fk(q)[:3, 3], TARGET[:3, 3], atol=1e-4)
        signs.append(np.sign(chain.fk(q, 'link4')[1, 3]))
    return np.array(signs)


def test_solve_puts_the_elbow_on_the_pole_side_from_any_seed(node, ik7):
    seeds = ik7.random_configuration(np.random.default_rng(5), 12)
    assert np.all(_elbow_signs(node, ik7, seeds) == 1)
    assert node.set_parameters([Parameter('nullspace.pole_target', value=[0.3, -1.0, 0.6])])[0].successful
    assert np.all(_elbow_signs(node, ik7, seeds) == -1)
    assert node.set_parameters([Parameter('nullspace.pole_weight', value=0.0)])[0].successful
    assert len(set(_elbow_signs(node, ik7, seeds))) == 2   # without the pole these seeds end on both sides
