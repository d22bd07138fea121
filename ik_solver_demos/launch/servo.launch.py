"""ik_solver's servo.launch.py with the MuJoCo-simulated arm as its forward_position_controller.

For example ``ros2 launch ik_solver_demos servo.launch.py`` (the bundled ik7 and its servo set-up);
then drive it with ``ros2 run teleop_twist_keyboard teleop_twist_keyboard --ros-args -p stamped:=true
-p frame_id:=base_link -r cmd_vel:=/ik_servo/delta_twist_cmds``.  The arguments are those of
``ros2 launch ik_solver servo.launch.py``, passed on; sim_arm_node takes the same model, parameter file
(its controller_type) and namespace.
"""
from ik_solver.ros.launch_setup import SERVO_LAUNCH_ARGUMENTS, servo_parameters, stop_all_on_exit
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, PushRosNamespace
from launch_ros.substitutions import FindPackageShare


def simulated_arm(context):
    """Return sim_arm_node in the servo's namespace, on the servo's model and parameter file."""
    config, common = servo_parameters(context)
    sim = Node(package='ik_solver_demos', executable='sim_arm_node', name='sim_arm', output='screen',
               parameters=[config, common])
    # the simulator ending stops the servo too; the included file does the same for its own processes
    return [GroupAction([PushRosNamespace(LaunchConfiguration('namespace')), sim]), stop_all_on_exit([sim])]


def generate_launch_description():
    servo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution([FindPackageShare('ik_solver'), 'launch',
                                                            'servo.launch.py'])),
        launch_arguments={name: LaunchConfiguration(name) for name, _, _ in SERVO_LAUNCH_ARGUMENTS}.items())
    return LaunchDescription([DeclareLaunchArgument(name, default_value=default, description=text)
                              for name, default, text in SERVO_LAUNCH_ARGUMENTS]
                             + [OpaqueFunction(function=simulated_arm), servo])
