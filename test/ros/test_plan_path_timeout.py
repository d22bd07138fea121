"""PlanPath's per-request time budget, in-process: ``timeout`` caps the path's solves, within max_path_time.

The truth is the Cartesian planner's own account: a path stopped by its budget answers TIMEOUT with the
fraction it achieved and the budget it had in its message; the same path with the default budget is
achieved whole.  Requests are answered by the node's handler directly (no DDS, no executor).
"""
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')

from conftest import URDF_DIR  # noqa: E402, I100
from geometry_msgs.msg import PoseStamped  # noqa: E402
from ik_solver.core.transforms import make_pose  # noqa: E402
from ik_solver.ros.messages import joint_state, matrix_to_pose  # noqa: E402
from ik_solver.ros.parameters import path_budget  # noqa: E402
from ik_solver_interfaces.srv import PlanPath, SolveIK  # noqa: E402

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])


@pytest.fixture
def make_node():
    from ros_fixtures import in_process_ik_nodes
    with in_process_ik_nodes(urdf_file=str(URDF_DIR / 'ik7.urdf.xacro')) as make:
        yield make


def _request(ik7, timeout, max_step=0.0):
    """Return a request for a 0.2 m straight line from the tip at HOME, planned from HOME (not executed)."""
    request = PlanPath.Request(timeout=timeout, max_step=max_step)
    request.start_state = joint_state(ik7.joint_names, HOME)
    T = ik7.fk(HOME) @ make_pose([0.0, 0.0, 0.2])
    waypoint = PoseStamped()
    waypoint.header.frame_id = 'base_link'
    waypoint.pose = matrix_to_pose(T)
    request.waypoints = [waypoint]
    return request


def _plan(node, request):
    return node.requests.plan_path(request, PlanPath.Response())


def test_the_budget_is_the_request_capped_by_max_path_time():
    assert path_budget(0.0, 2.0) == 2.0
    assert path_budget(0.5, 2.0) == 0.5
    assert path_budget(100.0, 2.0) == 2.0
    for bad in (-0.1, float('nan'), float('inf')):
        with pytest.raises(ValueError, match='timeout must be finite and >= 0'):
            path_budget(bad, 2.0)


def test_a_tiny_timeout_answers_timeout_with_the_fraction_achieved(make_node, ik7):
    node = make_node(timeout=0.1)   # each solve may take long (a loaded host): only the path's budget cuts it
    whole = _plan(node, _request(ik7, 0.0))
    assert whole.success and whole.fraction == 1.0, whole.message
    cut = _plan(node, _request(ik7, 1e-6))
    assert not cut.success and cut.reason == SolveIK.Response.TIMEOUT
    assert cut.fraction < 1.0 and 'whole time budget of 1e-06 s' in cut.message
    refused = _plan(node, _request(ik7, -1.0))
    assert refused.reason == SolveIK.Response.INVALID_INPUT and 'timeout must be finite' in refused.message


def test_a_timeout_beyond_max_path_time_is_capped(make_node, ik7):
    """max_path_time 0.01 s: 400 solves of 0.5 mm steps take longer, whatever the request asks for."""
    node = make_node(max_path_time=0.01)
    cut = _plan(node, _request(ik7, 100.0, max_step=0.0005))
    assert cut.reason == SolveIK.Response.TIMEOUT and 'whole time budget of 0.01 s' in cut.message, cut.message
    assert cut.fraction < 1.0
