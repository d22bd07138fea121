"""The IK node's start does each piece of work once: the robot description is expanded by xacro once."""
import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')

from conftest import URDF_DIR  # noqa: E402, I100, I202
from ik_solver.core import urdf  # noqa: E402
from ik_solver.ros.model_source import RobotModel  # noqa: E402


@pytest.fixture
def xacro_runs(monkeypatch):
    """Count the xacro child processes (each is a Python interpreter started, a tenth of a second or more)."""
    runs = []
    real = urdf._xacro_child

    def counted(request, what):
        runs.append(what)
        return real(request, what)
    monkeypatch.setattr(urdf, '_xacro_child', counted)
    return runs


def test_a_robot_model_keeps_the_urdf_it_expanded(xacro_runs):
    """The model carries its URDF after xacro, and its source as given (relative mesh paths resolve from it)."""
    source = str(URDF_DIR / 'ik7.urdf.xacro')
    model = RobotModel.load(source, 'base_link', 'tool0')
    assert len(xacro_runs) == 1
    assert model.description == source
    assert model.urdf == urdf.load_robot_description(source) and '<collision' in model.urdf


def test_the_node_expands_its_xacro_description_once_with_collision_checking(xacro_runs):
    """The collision model is built from the URDF the robot model expanded: one xacro run at start, not two."""
    from ros_fixtures import in_process_ik_nodes
    with in_process_ik_nodes() as make:
        node = make(urdf_file=str(URDF_DIR / 'ik7.urdf.xacro'), base_link='base_link', tip_link='tool0',
                    avoid_collisions=True)
        assert node.collision is not None and node.collision.geometry_links
        assert len(xacro_runs) == 1, xacro_runs


def test_the_servo_expands_its_xacro_description_once_with_collision_checking(xacro_runs):
    """The servo node builds its collision model from the URDF its robot model expanded, as the IK node does."""
    import rclpy
    from rclpy.parameter import Parameter
    from ros_fixtures import isolate_ros_domain
    from ik_solver.ros.servo_node import ServoNode
    isolate_ros_domain()
    rclpy.init()
    try:
        params = {'urdf_file': str(URDF_DIR / 'ik7.urdf.xacro'), 'base_link': 'base_link', 'tip_link': 'tool0',
                  'check_collisions': True}
        node = ServoNode(parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        try:
            assert node._world is not None and node._world.model.geometry_links
            assert len(xacro_runs) == 1, xacro_runs
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown()
