"""ros2 launch ik_solver.launch.py with a user's config: the config wins, given arguments override it (launch_testing).

Skipped where launch_testing and launch_ros are missing: they are not on PyPI,
so this runs in a ROS 2 install (colcon test there), not on the PyPI-wheels set-up.
"""
import os
import tempfile
import unittest

import pytest

launch_testing = pytest.importorskip('launch_testing', reason='launch_testing is not installed (not on PyPI)')
pytest.importorskip('launch_ros', reason='launch_ros is not installed (not on PyPI)')

from ik_solver_demos.tools.resources import private_ros_domain  # noqa: E402, I100
from ik_solver_interfaces.srv import SolveIK  # noqa: E402
import launch  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_ros.substitutions import FindPackageShare  # noqa: E402
import launch_testing.actions  # noqa: E402
from rcl_interfaces.srv import GetParameters  # noqa: E402
import rclpy  # noqa: E402

private_ros_domain()  # before launch copies the environment: the launched node and this test's client share it
USER_CONFIG = """
/**/ik_solver:
  ros__parameters:
    tip_link: link6
    timeout: 0.02
    method: dls
"""


@pytest.mark.launch_test
def generate_test_description():
    share = FindPackageShare('ik_solver').find('ik_solver')
    config = os.path.join(tempfile.mkdtemp(prefix='ik_launch_'), 'user.yaml')
    with open(config, 'w') as f:
        f.write(USER_CONFIG)
    include = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(f'{share}/launch/ik_solver.launch.py'),
        launch_arguments={'config': config, 'tip_link': 'tool0', 'start_robot_state_publisher': 'false'}.items())
    return launch.LaunchDescription([include, launch_testing.actions.ReadyToTest()])


class TestLaunchedNode(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node('launch_test_client')

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def call(self, service_type, name, request):
        client = self.node.create_client(service_type, name)
        self.assertTrue(client.wait_for_service(timeout_sec=60.0), name)
        future = client.call_async(request)
        rclpy.spin_until_future_complete(self.node, future, timeout_sec=10.0)
        return future.result()

    def test_config_wins_and_given_arguments_override_it(self):
        names = ['tip_link', 'timeout', 'method', 'base_link']
        response = self.call(GetParameters, '/ik_solver/get_parameters', GetParameters.Request(names=names))
        values = dict(zip(names, response.values))
        self.assertEqual(values['tip_link'].string_value, 'tool0')  # launch argument over the config
        self.assertAlmostEqual(values['timeout'].double_value, 0.02)  # the user's config over ik7.yaml
        self.assertEqual(values['method'].string_value, 'dls')
        self.assertEqual(values['base_link'].string_value, 'base_link')

    def test_solve_service_answers(self):
        request = SolveIK.Request()
        request.target.header.frame_id = 'base_link'
        request.target.pose.position.x = 0.5
        request.target.pose.position.z = 0.5
        request.target.pose.orientation.x = 1.0
        request.target.pose.orientation.w = 0.0
        response = self.call(SolveIK, '/ik_solver/solve', request)
        self.assertTrue(response.success, response.message)
