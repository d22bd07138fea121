"""ros2 launch ik_solver.launch.py brings up a node that answers ~/solve (launch_testing).

Skipped where launch_testing and launch_ros are missing: they are not on PyPI,
so this runs in a ROS 2 install (colcon test there), not on the PyPI-wheels set-up.
"""
import unittest

import pytest

launch_testing = pytest.importorskip('launch_testing', reason='launch_testing is not installed (not on PyPI)')
pytest.importorskip('launch_ros', reason='launch_ros is not installed (not on PyPI)')

from ik_solver_interfaces.srv import SolveIK  # noqa: E402, I100
import launch  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_ros.substitutions import FindPackageShare  # noqa: E402
import launch_testing.actions  # noqa: E402
import rclpy  # noqa: E402


@pytest.mark.launch_test
def generate_test_description():
    share = FindPackageShare('ik_solver').find('ik_solver')
    include = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(f'{share}/launch/ik_solver.launch.py'),
        launch_arguments={'robot': 'ik7', 'start_robot_state_publisher': 'false'}.items())
    return launch.LaunchDescription([include, launch_testing.actions.ReadyToTest()])


class TestSolveService(unittest.TestCase):

    def test_solve_service_answers(self):
        rclpy.init()
        try:
            node = rclpy.create_node('launch_test_client')
            client = node.create_client(SolveIK, '/ik_solver/solve')
            self.assertTrue(client.wait_for_service(timeout_sec=30.0))
            request = SolveIK.Request()
            request.target.header.frame_id = 'base_link'
            request.target.pose.position.x = 0.5
            request.target.pose.position.z = 0.5
            request.target.pose.orientation.x = 1.0
            request.target.pose.orientation.w = 0.0
            future = client.call_async(request)
            rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
            self.assertTrue(future.result().success, future.result().message)
        finally:
            rclpy.shutdown()
