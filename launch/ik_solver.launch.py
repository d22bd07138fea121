"""Start ik_solver_node (and robot_state_publisher) next to a robot.

Examples (the bundled ik7 arm; another bundled arm; your own robot):
ros2 launch ik_solver ik_solver.launch.py
ros2 launch ik_solver ik_solver.launch.py robot:=ik6
ros2 launch ik_solver ik_solver.launch.py urdf_file:=/path/arm.urdf.xacro config:=/path/params.yaml
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import Command, FindExecutable, LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

ARGUMENTS = (
    ('robot', 'ik7', 'Bundled arm (ik7, ik6, planar3); used when urdf_file is empty'),
    ('urdf_file', '', 'URDF or xacro file of your robot'),
    ('config', '', 'Parameter file; empty: config/<robot>.yaml of this package'),
    ('base_link', 'base_link', 'Root link of the IK chain'),
    ('tip_link', 'tool0', 'Tip link of the IK chain'),
    ('namespace', '', 'Namespace of the nodes'),
    ('use_sim_time', 'false', 'Use /clock (simulators)'),
    ('start_robot_state_publisher', 'true', 'Also start robot_state_publisher with the same description'),
)


def robot_files(context):
    """Return the (URDF/xacro path, parameter file) the arguments choose."""
    share = FindPackageShare('ik_solver').perform(context)
    robot = LaunchConfiguration('robot').perform(context)
    bundled = {'ik7': 'ik7.urdf.xacro', 'ik6': 'ik6.urdf.xacro', 'planar3': 'planar3.urdf'}
    urdf = LaunchConfiguration('urdf_file').perform(context) or f'{share}/urdf/{bundled[robot]}'
    config = LaunchConfiguration('config').perform(context) or f'{share}/config/{robot}.yaml'
    return urdf, config


def robot_description(urdf):
    """Return the expanded URDF as a string parameter (xacro passes plain URDF through)."""
    return ParameterValue(Command([FindExecutable(name='xacro'), ' ', urdf]), value_type=str)


def launch_setup(context):
    urdf, config = robot_files(context)
    description = robot_description(urdf)
    use_sim_time = LaunchConfiguration('use_sim_time')
    return [
        PushRosNamespace(LaunchConfiguration('namespace')),
        Node(package='robot_state_publisher', executable='robot_state_publisher', output='screen',
             parameters=[{'robot_description': description, 'use_sim_time': use_sim_time}],
             condition=IfCondition(LaunchConfiguration('start_robot_state_publisher'))),
        Node(package='ik_solver', executable='ik_solver_node', name='ik_solver', output='screen',
             parameters=[config, {'robot_description': description,
                                  'base_link': LaunchConfiguration('base_link'),
                                  'tip_link': LaunchConfiguration('tip_link'),
                                  'use_sim_time': use_sim_time}]),
    ]


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument(name, default_value=default, description=text)
                              for name, default, text in ARGUMENTS] + [OpaqueFunction(function=launch_setup)])
