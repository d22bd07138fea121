"""Start ik_servo_node next to a robot (and robot_state_publisher where asked).

For example ``ros2 launch ik_solver servo.launch.py`` (the bundled ik7's servo set-up), or with your robot
``ros2 launch ik_solver servo.launch.py urdf_file:=/path/arm.urdf.xacro config:=/path/servo.yaml``;
then drive it with ``ros2 run teleop_twist_keyboard teleop_twist_keyboard --ros-args -p stamped:=true
-p frame_id:=base_link -r cmd_vel:=/ik_servo/delta_twist_cmds``.  With the MuJoCo-simulated arm as its
forward_position_controller: ``ros2 launch ik_solver_demos servo.launch.py`` (package ik_solver_demos).
"""
from ik_solver.ros.launch_setup import flag, package_available, SERVO_LAUNCH_ARGUMENTS, servo_parameters, \
    stop_all_on_exit
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace


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
    config, common = servo_parameters(context)
    rsp = wants_robot_state_publisher(LaunchConfiguration('start_robot_state_publisher').perform(context))
    nodes = [
        Node(package='robot_state_publisher', executable='robot_state_publisher', output='screen',
             parameters=[{'robot_description': common['robot_description'],
                          'use_sim_time': LaunchConfiguration('use_sim_time')}])
    ] if rsp else []
    nodes.append(Node(package='ik_solver', executable='ik_servo_node', name='ik_servo', output='screen',
                      parameters=[config, common]))
    # one process ending stops the others, as ik_solver.launch.py does
    return [GroupAction([PushRosNamespace(LaunchConfiguration('namespace')), *nodes]), stop_all_on_exit(nodes)]


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument(name, default_value=default, description=text)
                              for name, default, text in SERVO_LAUNCH_ARGUMENTS]
                             + [OpaqueFunction(function=launch_setup)])
