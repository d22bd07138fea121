"""What the runtime's launch files pass to the nodes, as plain functions (testable without launch).

``ik_node_setup`` is ik_solver.launch.py's choice of parameters: the user's
``config:=`` file first, then only the launch arguments the user actually gave
(an empty value means "not given").  ``launch`` itself is imported only inside
``stop_all_on_exit``: it is not on PyPI, and this module must import without it.
"""
from dataclasses import dataclass, field

#: The arms bundled in the package's share directory: name -> (model file, parameter file), relative to it.
BUNDLED_ARMS = {
    'ik7': ('urdf/ik7.urdf.xacro', 'config/ik7.yaml'),
    'ik6': ('urdf/ik6.urdf.xacro', 'config/ik6.yaml'),
    'planar3': ('urdf/planar3.urdf', 'config/planar3.yaml'),
}

#: Launch arguments of ik_solver.launch.py: (name, description); all default to '' = not given.
IK_LAUNCH_ARGUMENTS = (
    ('robot', 'Bundled arm: ik7, ik6 or planar3 (default ik7 unless urdf_file is given); '
              "'none': no description from launch, the node reads the robot_description topic"),
    ('urdf_file', 'URDF or xacro file of your robot; without config the node keeps its generic defaults'),
    ('xacro_args', "xacro arguments 'name:=value ...', passed to xacro and to the node, e.g. 'prefix:=right_'"),
    ('config', "Parameter file (wins over the bundled robot's; launch arguments below override it)"),
    ('namespace', 'Namespace of the nodes, e.g. left (relative topics then live under it)'),
    ('base_link', 'Root link of the IK chain (default: config, else base_link)'),
    ('tip_link', 'Tip link of the IK chain (default: config, else tool0)'),
    ('use_sim_time', 'true: use /clock (simulators)'),
    ('joint_states_topic', 'sensor_msgs/JointState input (default joint_states)'),
    ('controller_name', 'joint_trajectory_controller that executes moves'),
    ('trajectory_topic', 'JointTrajectory topic (default <controller_name>/joint_trajectory)'),
    ('robot_description_topic', 'Latched URDF topic read when no description is given (robot:=none)'),
    ('target_topic', 'PoseStamped targets (default ~/target_pose), remapped'),
    ('status_topic', 'SolveStatus outcomes (default ~/status), remapped'),
    ('markers_topic', 'RViz MarkerArray (default ~/markers), remapped'),
    ('start_robot_state_publisher', 'auto (default: if installed and a description is given), true or false'),
    ('rviz', 'true: also start rviz2 with config/ik_solver.rviz (skipped with a message if rviz2 is missing)'),
)

#: Launch arguments of servo.launch.py: (name, default, description).  ik_solver_demos' servo.launch.py,
#: which adds the simulated arm, takes the same ones and passes them on.
SERVO_LAUNCH_ARGUMENTS = (
    ('urdf_file', '', 'URDF or xacro file of your robot; empty: the bundled ik7'),
    ('config', '', 'Parameter file; empty: config/servo_ik7.yaml of ik_solver'),
    ('base_link', 'base_link', 'Root link of the servoed chain'),
    ('tip_link', 'tool0', 'Tip link of the servoed chain'),
    ('namespace', '', 'Namespace of the nodes'),
    ('use_sim_time', 'false', 'Use /clock (simulators)'),
    ('start_robot_state_publisher', 'false', 'Also start robot_state_publisher with the same description: '
                                             'true, auto (if installed) or false'),
)

#: Launch arguments that set a node parameter of the same name when given.
PARAMETER_ARGUMENTS = ('base_link', 'tip_link', 'joint_states_topic', 'controller_name', 'trajectory_topic',
                       'robot_description_topic')
#: Launch arguments that remap one of the node's own (private) topics when given.
REMAP_ARGUMENTS = {'target_topic': '~/target_pose', 'status_topic': '~/status', 'markers_topic': '~/markers'}
TRUE, FALSE = ('true', '1', 'yes', 'on'), ('false', '0', 'no', 'off')


@dataclass
class NodeSetup:
    """What ik_solver.launch.py passes to the IK node: the model file, parameters (in order) and remappings."""

    urdf: str = ''                                      # file to expand with xacro ('' : none)
    xacro_args: list = field(default_factory=list)      # ['name:=value', ...]
    parameters: list = field(default_factory=list)      # [config file path?, {given overrides}]
    remappings: list = field(default_factory=list)      # [(from, to)]


def flag(name, value, allowed=TRUE + FALSE):
    """Return a launch argument's boolean text in lower case; ValueError naming the argument otherwise."""
    text = value.strip().lower()
    if text not in allowed:
        raise ValueError(f"launch argument {name}:='{value}' must be one of {', '.join(allowed)}")
    return text


def ik_node_setup(given, share, describe=None):
    """Return the NodeSetup of the IK node for the launch arguments ``given`` ({name: text}, '' = not given).

    ``share``: the package's share directory; ``describe(urdf, xacro_args)``: what
    the launch file passes as the ``robot_description`` parameter when a URDF is
    chosen (the xacro command).  Precedence, lowest first: the node's own defaults,
    the parameter file (the user's ``config``, else the bundled robot's; none
    for a user's ``urdf_file``), then each launch argument the user gave.
    """
    given = {name: given.get(name, '').strip() for name, _ in IK_LAUNCH_ARGUMENTS}
    robot, urdf = given['robot'], given['urdf_file']
    if robot and urdf:
        raise ValueError(f'give robot:= or urdf_file:=, not both (robot:={robot}, urdf_file:={urdf})')
    if not urdf and robot != 'none':
        robot = robot or 'ik7'
        if robot not in BUNDLED_ARMS:
            raise ValueError(f"unknown robot:={robot}; bundled: {', '.join(BUNDLED_ARMS)}, or none")
        bundled_urdf, bundled_config = BUNDLED_ARMS[robot]
        urdf = f'{share}/{bundled_urdf}'
        config = given['config'] or f'{share}/{bundled_config}'
    else:
        config = given['config']
    overrides = {name: given[name] for name in PARAMETER_ARGUMENTS if given[name]}
    if given['use_sim_time']:
        overrides['use_sim_time'] = flag('use_sim_time', given['use_sim_time']) in TRUE
    xacro_args = given['xacro_args'].split()
    if xacro_args:
        overrides['xacro_args'] = xacro_args
    if urdf and describe is not None:
        overrides['robot_description'] = describe(urdf, xacro_args)
    remappings = [(REMAP_ARGUMENTS[name], given[name]) for name in REMAP_ARGUMENTS if given[name]]
    parameters = ([config] if config else []) + ([overrides] if overrides else [])
    return NodeSetup(urdf, xacro_args, parameters, remappings)


def servo_files(urdf_file, config, share):
    """Return (model file, parameter file) of servo.launch.py: the user's, else the bundled ik7's servo set-up.

    Args:
        urdf_file: the ``urdf_file`` launch argument ('' : not given).
        config: the ``config`` launch argument ('' : not given).
        share: the package's share directory.
    """
    return urdf_file or f'{share}/urdf/ik7.urdf.xacro', config or f'{share}/config/servo_ik7.yaml'


def servo_parameters(context):
    """Return (parameter file, parameters) that both servo launch files give their nodes, read from ``context``.

    The parameters are the model (``robot_description``, through xacro), ``base_link``, ``tip_link`` and
    ``use_sim_time``; ``launch`` and ``launch_ros`` are imported here, as in ``stop_all_on_exit``.
    """
    from launch.substitutions import Command, FindExecutable, LaunchConfiguration
    from launch_ros.parameter_descriptions import ParameterValue
    from launch_ros.substitutions import FindPackageShare
    urdf, config = servo_files(LaunchConfiguration('urdf_file').perform(context),
                               LaunchConfiguration('config').perform(context),
                               FindPackageShare('ik_solver').perform(context))
    description = ParameterValue(Command([FindExecutable(name='xacro'), ' ', urdf]), value_type=str)
    return config, {'robot_description': description, 'base_link': LaunchConfiguration('base_link'),
                    'tip_link': LaunchConfiguration('tip_link'), 'use_sim_time': LaunchConfiguration('use_sim_time')}


def stop_all_on_exit(actions):
    """Return a launch event handler that stops the whole launch when one of ``actions`` exits.

    It logs the process and its exit code first (``on_process_exit``).  It runs after the process's other exit
    handlers (launch runs the newest first): a failure it raises ends the event's handling, and the process's
    last output, its own ``on_exit`` actions and launch_testing's record of its exit come before.  (launch is
    imported here: it is not on PyPI, and this module must import without it.)
    """
    from launch.actions import RegisterEventHandler
    from launch.event_handlers import OnProcessExit

    class RegisterLast(RegisterEventHandler):
        def execute(self, context):
            context.register_event_handler(self.event_handler, append=True)

    return RegisterLast(OnProcessExit(target_action=lambda action: action in actions, on_exit=on_process_exit))


class ProcessFailed(RuntimeError):
    """A process of the launch exited with a non-zero code while the launch was running."""


def on_process_exit(event, context):
    """Stop the launch after a process exited; a failure (non-zero code, not in a shutdown) fails the launch.

    launch sets its own exit code only for an error raised in it, so ``ProcessFailed`` is raised: launch logs
    it, stops the other processes and ``ros2 launch`` exits with 1, and a script (a CI job, the demo) sees the
    failure.  A clean exit stops the others with 0.  An exit once the launch is shutting down (Ctrl-C, or
    another process's exit) does nothing more: the others are being stopped already, and launch says so.

    Args:
        event: launch's ProcessExited event.
        context: the LaunchContext.

    Returns:
        launch actions: a log line and a Shutdown, or none while shutting down.
    """
    if context.is_shutdown:
        return []
    from launch.actions import LogInfo, Shutdown
    name, code = event.action.name, event.returncode
    message = f'{name} exited with code {code}: stopping the others'
    if code != 0:
        raise ProcessFailed(message)
    return [LogInfo(msg=message), Shutdown(reason=f'{name} exited')]


def package_available(name):
    """Whether ROS package ``name`` is installed (ament index); False where ament_index_python is missing."""
    try:
        from ament_index_python.packages import get_package_prefix, PackageNotFoundError
    except ImportError:
        return False
    try:
        get_package_prefix(name)
    except PackageNotFoundError:
        return False
    return True
