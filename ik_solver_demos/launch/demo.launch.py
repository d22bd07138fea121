"""The demo with ROS 2 installed: simulated ik7 arm, ik_solver_node, targets (and robot_state_publisher, RViz).

Example: ros2 launch ik_solver_demos demo.launch.py kinematic:=false rviz:=true
Or beside another arm: ros2 launch ik_solver_demos demo.launch.py namespace:=right

- It runs on a private ROS domain (printed at start) unless you set ROS_DOMAIN_ID:
  a real robot on domain 0 never sees the demo's targets or trajectories.
- robot_state_publisher starts only where it is installed (start_robot_state_publisher:=auto,
  the default); it is not on PyPI, so a PyPI-wheel set-up runs without it.
- When any process exits (the demo finished, or a node failed) all the others are stopped; when it failed
  (a failed demo, a crashed node) ros2 launch exits with 1.
"""
import os

from ik_solver.ros.launch_setup import stop_all_on_exit
from ik_solver_demos.tools.resources import private_ros_domain
from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, LogInfo,
                            SetEnvironmentVariable)
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, FindExecutable, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, PushRosNamespace
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def private_domain_actions():
    """Use a private ROS domain for every process below, unless the user set ROS_DOMAIN_ID."""
    environment = dict(os.environ)
    domain, picked = private_ros_domain(environment)
    if not picked:
        return [LogInfo(msg=f'demo on ROS_DOMAIN_ID={domain} (yours)')]
    return [SetEnvironmentVariable('ROS_DOMAIN_ID', domain),
            SetEnvironmentVariable('ROS_AUTOMATIC_DISCOVERY_RANGE', environment['ROS_AUTOMATIC_DISCOVERY_RANGE']),
            LogInfo(msg=f'demo on a private ROS_DOMAIN_ID={domain}; export ROS_DOMAIN_ID={domain} to watch it, '
                        'or set ROS_DOMAIN_ID yourself to choose')]


def generate_launch_description():
    share = FindPackageShare('ik_solver')
    urdf = PathJoinSubstitution([share, 'urdf', 'ik7.urdf.xacro'])
    config = PathJoinSubstitution([share, 'config', 'ik7.yaml'])
    description = ParameterValue(Command([FindExecutable(name='xacro'), ' ', urdf]), value_type=str)
    sim = Node(package='ik_solver_demos', executable='sim_arm_node', name='sim_arm', output='screen',
               parameters=[config, {'robot_description': description,
                                    'kinematic': LaunchConfiguration('kinematic')}])
    demo = Node(package='ik_solver_demos', executable='ik_demo', name='ik_demo', output='screen',
                arguments=['--attach', '--output-dir', LaunchConfiguration('output_dir')])
    return LaunchDescription(private_domain_actions() + [
        DeclareLaunchArgument('kinematic', default_value='false', description='No physics: perfect tracking'),
        DeclareLaunchArgument('output_dir', default_value='/tmp/ik_demo', description='Where the figure goes'),
        DeclareLaunchArgument('start_robot_state_publisher', default_value='auto',
                              description='auto (if installed), true or false'),
        DeclareLaunchArgument('rviz', default_value='false', description='true: also start rviz2 (if installed)'),
        DeclareLaunchArgument('namespace', default_value='', description='Namespace of every node, e.g. right'),
        # First: if it refuses its arguments (e.g. start_robot_state_publisher:=true without the package)
        # launch stops before any process has started, so none is left behind.
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution([share, 'launch', 'ik_solver.launch.py'])),
            launch_arguments={'robot': 'ik7',
                              'start_robot_state_publisher': LaunchConfiguration('start_robot_state_publisher'),
                              'rviz': LaunchConfiguration('rviz'),
                              'namespace': LaunchConfiguration('namespace')}.items()),
        # the demo's client finds the arm and the IK node by relative names: all three share the namespace
        GroupAction([PushRosNamespace(LaunchConfiguration('namespace')), sim, demo]),
        stop_all_on_exit([sim, demo]),  # the included file does the same for its own processes
    ])
