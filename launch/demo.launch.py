"""The demo with ROS 2 installed: simulated ik7 arm, ik_solver_node, robot_state_publisher, targets.

Example: ros2 launch ik_solver demo.launch.py kinematic:=false
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import Command, FindExecutable, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def generate_launch_description():
    share = FindPackageShare('ik_solver')
    urdf = PathJoinSubstitution([share, 'urdf', 'ik7.urdf.xacro'])
    config = PathJoinSubstitution([share, 'config', 'ik7.yaml'])
    description = ParameterValue(Command([FindExecutable(name='xacro'), ' ', urdf]), value_type=str)
    return LaunchDescription([
        DeclareLaunchArgument('kinematic', default_value='false', description='No physics: perfect tracking'),
        DeclareLaunchArgument('output_dir', default_value='/tmp/ik_demo', description='Where the figure goes'),
        DeclareLaunchArgument('start_robot_state_publisher', default_value='true',
                              description='Also start robot_state_publisher (for RViz)'),
        Node(package='ik_solver', executable='sim_arm_node', name='sim_arm', output='screen',
             parameters=[config, {'robot_description': description,
                                  'kinematic': LaunchConfiguration('kinematic')}]),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution([share, 'launch', 'ik_solver.launch.py'])),
            launch_arguments={'robot': 'ik7', 'start_robot_state_publisher':
                              LaunchConfiguration('start_robot_state_publisher')}.items()),
        Node(package='ik_solver', executable='ik_demo', name='ik_demo', output='screen',
             arguments=['--attach', '--output-dir', LaunchConfiguration('output_dir')]),
    ])
