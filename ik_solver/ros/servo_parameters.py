"""The servo node's parameters: MoveIt Servo's names where it has one, and how they make ``ServoSettings``.

The model, limits, collision model and nullspace parameters are the IK node's
own ``Param`` entries (same names, descriptions and ranges), so both nodes
read a robot, its limits and its world the same way; the rest are the servo's.
"""
import numpy as np

from .parameters import BY_NAME, checked_xacro_args, is_set, Param
from ..core.nullspace import NullspaceGoals
from ..motion.servo import COMMAND_IN_TYPES, ServoSettings

FLOAT64_MULTI_ARRAY = 'std_msgs/Float64MultiArray'
JOINT_TRAJECTORY = 'trajectory_msgs/JointTrajectory'
JOINT_JOG = 'control_msgs/JointJog'
JOINT_STATE = 'sensor_msgs/JointState'
#: Names of the twist axes, in ServoSettings.drift_dimensions order.
AXES = ('x', 'y', 'z', 'rx', 'ry', 'rz')

_SHARED = ('robot_description', 'urdf_file', 'xacro_args', 'base_link', 'tip_link', 'joint_limits_file',
           'robot_description_topic', 'nullspace.posture_weight', 'nullspace.preferred_posture',
           'nullspace.limits_weight', 'nullspace.manipulability_weight', 'nullspace.pole_weight',
           'nullspace.pole_link', 'nullspace.pole_target', 'srdf_file', 'scene_file', 'package_dirs',
           'collision_padding', 'skip_missing_meshes', 'collision_convex', 'cpu_wake_latency')

SERVO_PARAMETERS = tuple(BY_NAME[name] for name in _SHARED) + (
    # Topics (relative: they follow the node's namespace).
    Param('joint_states_topic', 'joint_states', 'sensor_msgs/JointState input', read_only=True),
    Param('joint_states_timeout', 0.2, 'joint_states older than this halt the servo (STALE_STATE) [s]', 0.005, 10.0),
    Param('state_tolerance', 0.02, 'joint_states may differ this much from a motion within the limits (sensor '
          'noise) [rad or m]; an idle servo restarts from a measured state only beyond it', 1e-4, 0.5),
    Param('tracking_error', 0.03, 'The arm may lag or overshoot the commanded positions by this much more '
          '[rad or m]; a reading beyond it halts the servo (INVALID: the commands are not executed)', 0.0, 1.0),
    Param('command_out_topic', 'forward_position_controller/commands', 'Topic of the outgoing joint commands',
          read_only=True),
    Param('command_out_type', FLOAT64_MULTI_ARRAY, 'Message of the outgoing commands: Float64MultiArray for a '
          'forward_*_controller (chain order), or one-point JointTrajectory for joint_trajectory_controller',
          read_only=True, choices=(FLOAT64_MULTI_ARRAY, JOINT_TRAJECTORY)),
    Param('command_out_kind', 'position', 'Commanded quantity: positions, or velocities for a '
          'forward_velocity_controller', read_only=True, choices=('position', 'velocity')),
    Param('joint_command_in_type', 'auto', "Message on ~/delta_joint_cmds; 'auto': control_msgs/JointJog where "
          'importable, else sensor_msgs/JointState (names + velocities)', read_only=True,
          choices=('auto', JOINT_JOG, JOINT_STATE)),
    Param('loop', 'thread', "What runs the fixed-rate cycle: 'thread' (own thread, monotonic deadlines, taking the "
          'command and joint_states subscriptions itself) or '
          "'timer' (rclpy timer in its own callback group)", read_only=True, choices=('thread', 'timer')),
    Param('publish_period', 0.01, 'Period of the command loop [s]', 0.0005, 0.1, read_only=True),
    Param('thread_priority', 40, "SCHED_FIFO priority of the loop thread (loop 'thread'), as MoveIt Servo's; "
          'the executor thread gets one less.  0: normal scheduling.  Needs the right to it (root, CAP_SYS_NICE '
          'or an rtprio limit); refused, the threads keep normal scheduling and a warning', 0, 99, read_only=True),
    # Inputs.
    Param('command_in_type', 'unitless', "'unitless': commands in [-1, 1] times scale.*; 'speed_units': m/s, "
          'rad/s', choices=COMMAND_IN_TYPES),
    Param('scale.linear', 0.4, 'unitless: tip speed at a command of 1 [m/s]', 0.0, 10.0),
    Param('scale.rotational', 0.8, 'unitless: tip angular speed at a command of 1 [rad/s]', 0.0, 10.0),
    Param('scale.joint', 0.5, 'unitless: joint speed at a command of 1 [rad/s or m/s]', 0.0, 10.0),
    Param('incoming_command_timeout', 0.1, 'Without a twist or jog for this long, decelerate to rest [s]',
          0.001, 10.0),
    Param('num_outgoing_halt_msgs_to_publish', 4, 'Commands published once at rest with no input (0: keep '
          'publishing)', 0, 100000),
    Param('drift_dimensions', '', "Axes of the command frame left free to drift (not controlled), e.g. 'rz' "
          "or 'rx ry'; any of: " + ' '.join(AXES)),
    # Singularities and limits.
    Param('lower_singularity_threshold', 17.0, 'Jacobian condition number where slowing down begins', 1.0, 1e6),
    Param('hard_stop_singularity_threshold', 30.0, 'Condition number where motion toward a singularity halts',
          1.0, 1e6),
    Param('leaving_singularity_threshold_multiplier', 2.0, 'Hard stop times this for motion away from a '
          'singularity', 1.0, 100.0),
    Param('joint_limit_margin', 0.1, 'Joints brake to a stop this far from their position limits [rad or m]',
          0.0, 1.0),
    # Collisions (the model: robot_description/urdf_file, srdf_file, scene_file, ~/collision_objects).
    Param('check_collisions', True, 'Slow down and halt commands that close on a contact of the arm with itself '
          'or the world, where a collision model is loaded; motions that open the distance are never slowed'),
    Param('collision_check_rate', 100.0, 'Distance queries per second [Hz]; between them each pair is carried '
          'along its gradient.  At or above 1 / publish_period: every cycle', 1.0, 10000.0),
    Param('self_collision_proximity_threshold', 0.03, 'Pairs of links nearer than this are watched [m] (farther '
          'too, when the arm could reach them while stopping)', 0.0, 1.0),
    Param('scene_collision_proximity_threshold', 0.05, 'Links nearer than this to a world object are watched [m] '
          '(farther too, when the arm could reach them while stopping)', 0.0, 1.0),
    Param('damping_max', 0.05, 'Largest damping of the adaptive DLS step', 0.0, 10.0),
    Param('epsilon', 0.05, 'Damping starts below this smallest singular value of the Jacobian', 1e-6, 10.0),
    Param('velocity_scaling', 1.0, 'Fraction of each joint velocity limit the servo may use; 0: the '
          "joint_limits file's default_velocity_scaling_factor", 0.0, 1.0, read_only=True),
    Param('acceleration_scaling', 1.0, 'Fraction of each joint acceleration (and jerk) limit; 0: the '
          "joint_limits file's default_acceleration_scaling_factor", 0.0, 1.0, read_only=True),
    Param('acceleration_ramp_time', 0.05, 'Where no jerk limit is given, jerk = acceleration / this [s]',
          0.001, 1.0, read_only=True),
    # Pose tracking.
    Param('pose_tracking.linear_gain', 10.0, 'Tip speed per metre of position error [1/s]', 0.0, 1000.0),
    Param('pose_tracking.angular_gain', 10.0, 'Tip angular speed per radian of orientation error [1/s]',
          0.0, 1000.0),
    Param('pose_tracking.max_linear_speed', 0.25, 'Largest tip speed while tracking a pose [m/s]', 0.0, 10.0),
    Param('pose_tracking.max_angular_speed', 1.0, 'Largest tip angular speed while tracking [rad/s]', 0.0, 10.0),
    Param('pose_tracking.position_tolerance', 1e-4, 'A pose target is reached within this distance [m]',
          1e-7, 1.0),
    Param('pose_tracking.orientation_tolerance', 1e-3, 'and within this angle [rad]', 1e-7, 3.2),
    Param('nullspace.gain', 1.0, "Nullspace goals: the core's secondary step per second while moving [1/s]",
          0.0, 100.0),
)

TABLE = {p.name: p for p in SERVO_PARAMETERS}
#: Parameters that ServoSettings takes as they are, in the field named by ``_field``.
_SETTINGS = ('publish_period', 'command_in_type', 'scale.linear', 'scale.rotational', 'scale.joint',
             'lower_singularity_threshold', 'hard_stop_singularity_threshold',
             'leaving_singularity_threshold_multiplier', 'joint_limit_margin', 'incoming_command_timeout',
             'num_outgoing_halt_msgs_to_publish', 'damping_max', 'epsilon', 'acceleration_ramp_time',
             'pose_tracking.linear_gain', 'pose_tracking.angular_gain', 'pose_tracking.max_linear_speed',
             'pose_tracking.max_angular_speed', 'pose_tracking.position_tolerance',
             'pose_tracking.orientation_tolerance', 'nullspace.gain', 'check_collisions', 'collision_check_rate',
             'self_collision_proximity_threshold', 'scene_collision_proximity_threshold')


def settings_from(values, chain=None):
    """Build the ServoSettings of a {name: value} map of SERVO_PARAMETERS; ValueError for an inconsistent set."""
    posture = values['nullspace.preferred_posture']
    goals = NullspaceGoals(
        posture=values['nullspace.posture_weight'], limits=values['nullspace.limits_weight'],
        manipulability=values['nullspace.manipulability_weight'], pole=values['nullspace.pole_weight'],
        q_pref=np.array(posture, float) if is_set(posture) else None,
        pole_link=values['nullspace.pole_link'] or None,
        pole_target=np.array(values['nullspace.pole_target'], float))
    settings = ServoSettings(
        **{_field(name): values[name] for name in _SETTINGS}, nullspace=goals,
        drift_dimensions=drift_dimensions(values['drift_dimensions']),
        follow_measured=values['command_out_kind'] == 'velocity')
    settings.check()
    if chain is not None and goals.active:
        goals.validate(chain)
    return settings


def _field(name):
    """Return the ServoSettings field of a parameter: 'pose_tracking.linear_gain' -> 'pose_linear_gain'."""
    return name.replace('pose_tracking.', 'pose_').replace('.', '_')


def drift_dimensions(text):
    """Return the flags (x y z rx ry rz) of a drift_dimensions value like 'rx ry'; ValueError for an unknown axis."""
    names = text.replace(',', ' ').split()
    unknown = [name for name in names if name not in AXES]
    if unknown:
        raise ValueError(f"drift_dimensions: unknown axis {', '.join(unknown)}; use any of {' '.join(AXES)}")
    return tuple(axis in names for axis in AXES)


def model_arguments(values, logger):
    """Keyword arguments of ModelSource for these values (a bad xacro_args entry: logged, none used)."""
    return {'description': values['robot_description'], 'urdf_file': values['urdf_file'],
            'xacro_args': checked_xacro_args(values['xacro_args'], logger),
            'topic': values['robot_description_topic']}


def defaults():
    return {p.name: p.default for p in SERVO_PARAMETERS}
