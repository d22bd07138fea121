"""Start ik_servo_node next to a robot (and, with sim:=true, the MuJoCo arm as its forward_position_controller).

For example ``ros2 launch ik_solver servo.launch.py sim:=true``, or with your robot
``ros2 launch ik_solver servo.launch.py urdf_file:=/path/arm.urdf.xacro config:=/path/servo.yaml``;
then drive it with ``ros2 run teleop_twist_keyboard teleop_twist_keyboard --ros-args -p stamped:=true
-p frame_id:=base_link -r cmd_vel:=/ik_servo/delta_twist_cmds``.
"""
from ik_solver.tools.launcher import flag, stop_all_on_exit
from ik_solver.tools.resources import package_available
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import Command, FindExecutable, LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

ARGUMENTS = (
    ('urdf_file', '', 'URDF or xacro file of your robot; empty: the bundled ik7'),
    ('config', '', 'Parameter file; empty: config/servo_ik7.yaml of this package'),
    ('base_link', 'base_link', 'Root link of the servoed chain'),
    ('tip_link', 'tool0', 'Tip link of the servoed chain'),
    ('namespace', '', 'Namespace of the nodes'),
    ('use_sim_time', 'false', 'Use /clock (simulators)'),
    ('sim', 'false', "Also start the MuJoCo arm (sim_arm_node) with the config's controller_type"),
    ('start_robot_state_publisher', 'false', 'Also start robot_state_publisher with the same description: '
                                             'true, auto (if installed) or false'),
)


def wants_robot_state_publisher(value):
    """Return whether to start robot_state_publisher for the launch argument ``value`` (true, auto or false).

    As in ik_solver.launch.py: 'auto' starts it where it is installed; 'true' where it is not is
    an error raised before any process starts, so that nothing is left running.
    """
    wanted = flag('start_robot_state_publisher', value, ('auto', 'true', 'false'))
    if wanted == 'false':
        return False
    if package_available('robot_state_publisher'):
        return True
    if wanted == 'true':
        raise RuntimeError('start_robot_state_publisher:=true, but robot_state_publisher is not installed '
                           '(use start_robot_state_publisher:=auto or false)')
    return False


def launch_setup(context):
    share = FindPackageShare('ik_solver').perform(context)
    urdf = LaunchConfiguration('urdf_file').perform(context) or f'{share}/urdf/ik7.urdf.xacro'
    config = LaunchConfiguration('config').perform(context) or f'{share}/config/servo_ik7.yaml'
    description = ParameterValue(Command([FindExecutable(name='xacro'), ' ', urdf]), value_type=str)
    common = {'robot_description': description, 'base_link': LaunchConfiguration('base_link'),
              'tip_link': LaunchConfiguration('tip_link'), 'use_sim_time': LaunchConfiguration('use_sim_time')}
    rsp = wants_robot_state_publisher(LaunchConfiguration('start_robot_state_publisher').perform(context))
    nodes = [
        Node(package='robot_state_publisher', executable='robot_state_publisher', output='screen',
             parameters=[{'robot_description': description,
                          'use_sim_time': LaunchConfiguration('use_sim_time')}])
    ] if rsp else []
    nodes += [
        Node(package='ik_solver', executable='sim_arm_node', name='sim_arm', output='screen',
             parameters=[config, common], condition=IfCondition(LaunchConfiguration('sim'))),
        Node(package='ik_solver', executable='ik_servo_node', name='ik_servo', output='screen',
             parameters=[config, common]),
    ]
    # one process ending (the simulator, the servo) stops the others, as ik_solver.launch.py does
    return [GroupAction([PushRosNamespace(LaunchConfiguration('namespace')), *nodes]), stop_all_on_exit(nodes)]


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument(name, default_value=default, description=text)
                              for name, default, text in ARGUMENTS] + [OpaqueFunction(function=launch_setup)])
