r"""Start ik_solver_node (and robot_state_publisher, RViz) next to a robot.

Examples (the bundled ik7 arm; another bundled arm; your own robot; the bundled arm in a namespace;
your own arm in a namespace, its links prefixed by its xacro, so both chain ends are named):
ros2 launch ik_solver ik_solver.launch.py
ros2 launch ik_solver ik_solver.launch.py robot:=ik6
ros2 launch ik_solver ik_solver.launch.py urdf_file:=/path/arm.urdf.xacro config:=/path/params.yaml
ros2 launch ik_solver ik_solver.launch.py namespace:=left
ros2 launch ik_solver ik_solver.launch.py urdf_file:=/path/arm.urdf.xacro xacro_args:='prefix:=right_' \
    base_link:=right_base_link tip_link:=right_tool0 namespace:=right

Precedence (ik_solver.ros.launch_setup.ik_node_setup): the node's defaults, then the
parameter file (config:=, else the bundled robot's; none for urdf_file:= alone),
then only the launch arguments you gave.  When one started process exits, the
others are stopped too; when it failed (a non-zero exit code), ros2 launch exits with 1.
"""
from ik_solver.ros.launch_setup import flag, IK_LAUNCH_ARGUMENTS, ik_node_setup, package_available, \
    stop_all_on_exit, TRUE
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, LogInfo, OpaqueFunction
from launch.substitutions import Command, FindExecutable, LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def robot_description(urdf, xacro_args):
    """Return the expanded URDF as a string parameter (xacro passes plain URDF through)."""
    command = [FindExecutable(name='xacro'), ' ', urdf] + [' ' + arg for arg in xacro_args]
    return ParameterValue(Command(command), value_type=str)


def optional_node(argument, wanted, package, make_node, strict=True):
    """Return [node] if ``wanted`` is 'true' or 'auto' and ``package`` is installed; else [] or a log line.

    With ``strict``, 'true' without the package is an error raised before any process
    starts, so that nothing is left running when launch stops on it; without it (a
    viewer the arm does not need) 'true' is a log line naming what the user asked for.
    """
    if wanted == 'false':
        return []
    if package_available(package):
        return [make_node()]
    if wanted == 'true' and strict:
        raise RuntimeError(f'{argument}:=true, but {package} is not installed (use {argument}:=auto or false)')
    return [LogInfo(msg=f'{package} is not installed: not started ({argument}:={wanted})')]


def launch_setup(context):
    given = {name: LaunchConfiguration(name).perform(context) for name, _ in IK_LAUNCH_ARGUMENTS}
    share = FindPackageShare('ik_solver').perform(context)
    setup = ik_node_setup(given, share, robot_description)
    description = setup.parameters[-1].get('robot_description') if setup.urdf else None
    rsp_wanted = flag('start_robot_state_publisher', given['start_robot_state_publisher'] or 'auto',
                      ('auto', 'true', 'false'))
    rviz_wanted = flag('rviz', given['rviz'] or 'false', ('true', 'false'))
    sim_time = [{'use_sim_time': flag('use_sim_time', given['use_sim_time']) in TRUE}] if given['use_sim_time'] else []
    nodes = [Node(package='ik_solver', executable='ik_solver_node', name='ik_solver', output='screen',
                  parameters=setup.parameters, remappings=setup.remappings)]
    if description is not None:
        nodes += optional_node('start_robot_state_publisher', rsp_wanted, 'robot_state_publisher', lambda: Node(
            package='robot_state_publisher', executable='robot_state_publisher', output='screen',
            parameters=[{'robot_description': description}] + sim_time))
    nodes += optional_node('rviz', rviz_wanted, 'rviz2', lambda: Node(
        package='rviz2', executable='rviz2', output='log', arguments=['-d', f'{share}/config/ik_solver.rviz'],
        parameters=sim_time), strict=False)
    processes = [n for n in nodes if isinstance(n, Node)]
    return [GroupAction([PushRosNamespace(given['namespace']), *nodes]), stop_all_on_exit(processes)]


def generate_launch_description():
    return LaunchDescription([DeclareLaunchArgument(name, default_value='', description=text)
                              for name, text in IK_LAUNCH_ARGUMENTS] + [OpaqueFunction(function=launch_setup)])
