"""Declared node parameters: a table of ``Param`` and a ``ParameterSet`` that enforces it.

Every node of the package declares its parameters from a table, so each one has a
description, a range or choices, and the same checks whether it comes from a
params file, ``-p name:=value`` or ``ros2 param set``.  Integers are accepted for
double parameters (``ros2 param set /ik_solver timeout 1`` sends an integer);
non-numbers and out-of-range values are refused with a reason.  The IK node's own
table, ``PARAMETERS``, and its translation into ``SolverOptions`` live here too.
"""
from dataclasses import dataclass
import os
import threading

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.parameter import Parameter

from .share import share_path
from ..core.exceptions import ModelError
from ..core.methods import METHOD_NAMES
from ..core.nullspace import NullspaceGoals
from ..core.options import node_range, OPTION_RANGES
from ..core.solver import SolverOptions
from ..motion.limits import load_joint_limits
from ..motion.timing import SAMPLE_PERIOD

#: Value of a list parameter that means "not set" (ROS parameters cannot be empty lists of a known type).
UNSET = [0.0]
#: Default command_lead_time [s].  Every trajectory is stamped with the instant its start state describes and a
#: controller that honours header.stamp (joint_trajectory_controller does) joins it at its arrival: the part
#: before that is skipped with a step.  A move from rest holds still this long first, so any arrival within it
#: is seamless; on a loaded 2-core computer trajectories reached a simulated controller 4-23 ms after
#: their stamp at load 3.5, and 50 ms more than covers a controller on the same host.
COMMAND_LEAD_TIME = 0.05


@dataclass(frozen=True)
class Param:
    """One declared parameter: default (its type), description, range or choices, allowed list lengths."""

    name: str
    default: object
    description: str
    low: float = None
    high: float = None
    read_only: bool = False
    choices: tuple = None
    lengths: tuple = None           # allowed lengths of a list value (UNSET is always allowed)

    def descriptor(self):
        # dynamic typing: the type is checked here, with a reason a user can read
        descriptor = ParameterDescriptor(description=self.description, read_only=self.read_only,
                                         dynamic_typing=True)
        if self.choices:
            descriptor.additional_constraints = 'one of: ' + ', '.join(self.choices)
        if self.lengths:
            descriptor.additional_constraints = (f'{" or ".join(map(str, self.lengths))} values, '
                                                 f'or {UNSET} for not set')
        if self.low is not None and isinstance(self.default, float):
            descriptor.floating_point_range = [FloatingPointRange(from_value=float(self.low),
                                                                  to_value=float(self.high), step=0.0)]
        elif self.low is not None and isinstance(self.default, int) and not isinstance(self.default, bool):
            descriptor.integer_range = [IntegerRange(from_value=int(self.low), to_value=int(self.high), step=1)]
        return descriptor

    def check(self, value):
        """Reason ``value`` is refused, or None."""
        wrong = self._type_error(value)
        if wrong is not None:
            return wrong
        if self.choices is not None and value not in self.choices:
            return f"{self.name} must be one of {', '.join(self.choices)}, got '{value}'"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(self.default, float) and not np.isfinite(value) and self.high != np.inf:
                return f'{self.name} must be finite'
            if self.low is not None and not self.low <= value <= self.high:
                return f'{self.name} must be in [{self.low}, {self.high}], got {value}'
        if self.lengths and list(value) != UNSET:
            if len(value) not in self.lengths:
                return f'{self.name} must have {" or ".join(map(str, self.lengths))} values, got {len(value)}'
            if np.isnan(np.asarray(value, float)).any():
                return f'{self.name} must not contain NaN'
        return None

    def _type_error(self, value):
        kind = type(self.default)
        if kind is list:
            item = type(self.default[0])
            if isinstance(value, (list, tuple)) or type(value).__name__ == 'array':
                if all(isinstance(v, item) and not isinstance(v, bool) for v in value):
                    return None
            return f'{self.name} must be a list of {_TYPE_NAMES[item]}, got {value!r}'
        if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
            return None
        return f'{self.name} must be {_TYPE_NAMES[kind]}, got {type(value).__name__} {value!r}'


_TYPE_NAMES = {bool: 'true or false', int: 'an integer', float: 'a number', str: 'a string'}


def is_set(value):
    """Whether a list parameter was given (anything but ``UNSET``)."""
    return list(value) != UNSET


class ParameterSet:
    """Declares a table of ``Param`` on a node and keeps their checked values in ``.values``.

    ``validate(values) -> reason | None`` is asked about the whole set a change
    would give (e.g. "do these build a solver?"); ``on_change(names)`` runs after a
    change was accepted.
    """

    def __init__(self, node, table, validate=None, on_change=None):
        self.node = node
        self.table = {p.name: p for p in table}
        self._validate = validate
        self._on_change = on_change
        self._lock = threading.Lock()
        self._declared = False
        self.values = {}
        overrides = getattr(node, '_parameter_overrides', {})
        for p in table:  # an integer given for a double at start (-p timeout:=1) is that double
            if p.name in overrides:
                overrides[p.name] = self._coerce(overrides[p.name])
        node.add_pre_set_parameters_callback(lambda params: [self._coerce(p) for p in params])
        node.add_on_set_parameters_callback(self._on_set)
        node.add_post_set_parameters_callback(self._after_set)
        for p in table:  # a refused start-up value raises InvalidParameterValueException with the reason
            node.declare_parameter(p.name, p.default, p.descriptor())
        self.values = {p.name: node.get_parameter(p.name).value for p in table}
        self._declared = True

    def get(self, name):
        return self.values[name]

    def __getitem__(self, name):
        return self.values[name]

    def _coerce(self, param):
        spec = self.table.get(param.name)
        if spec is None:
            return param
        if isinstance(spec.default, float) and param.type_ == Parameter.Type.INTEGER:
            return Parameter(param.name, Parameter.Type.DOUBLE, float(param.value))
        if isinstance(spec.default, list) and param.type_ == Parameter.Type.INTEGER_ARRAY:
            return Parameter(param.name, Parameter.Type.DOUBLE_ARRAY, [float(v) for v in param.value])
        return param

    def _on_set(self, params):
        for param in params:
            spec = self.table.get(param.name)
            reason = spec.check(param.value) if spec is not None else None
            if reason is not None:
                return SetParametersResult(successful=False, reason=reason)
        if self._validate is not None and self._declared:
            values = dict(self.values)
            values.update({p.name: p.value for p in params if p.name in self.table})
            reason = self._validate(values)
            if reason is not None:
                return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def _after_set(self, params):
        changed = [p.name for p in params if p.name in self.table]
        with self._lock:
            values = dict(self.values)
            values.update({p.name: p.value for p in params if p.name in self.table})
            self.values = values  # one assignment: readers on other threads see old or new, never half
        if changed and self._declared and self._on_change is not None:
            self._on_change(changed)


def _solver_param(name, default):
    """Declare SolverOptions field ``name`` as its table says (``core.options.OPTION_RANGES``): one home per knob."""
    option = OPTION_RANGES[name]
    unit = f' [{option.unit}]' if option.unit else ''
    return Param(name, default, option.description + unit, *node_range(name))


PARAMETERS = (
    # Robot model (read at start).
    Param('robot_description', '', 'URDF XML of the robot; empty: urdf_file, else the robot_description topic',
          read_only=True),
    Param('urdf_file', '', 'Path of a URDF or xacro file, used when robot_description is empty', read_only=True),
    Param('xacro_args', [''], 'xacro arguments as name:=value strings, e.g. ["prefix:=right_"]', read_only=True),
    Param('base_link', 'base_link', 'Root link of the IK chain; targets are expressed in it by default',
          read_only=True),
    Param('tip_link', 'tool0', 'Link whose pose is solved for', read_only=True),
    Param('joint_limits_file', '', 'MoveIt-format joint_limits.yaml: velocity, acceleration and jerk limits '
          "that tighten the URDF (a relative path is in the package's share directory); empty: URDF limits and "
          'the documented default acceleration', read_only=True),
    # Topics and the controller (relative names: they follow the node's namespace).
    Param('controller_name', 'joint_trajectory_controller', 'joint_trajectory_controller that executes moves',
          read_only=True),
    Param('trajectory_topic', '', 'JointTrajectory topic of the controller; empty: <controller_name>/joint_trajectory',
          read_only=True),
    Param('command_interface', 'topic', "'topic': publish JointTrajectory; 'action': FollowJointTrajectory goals "
          '(needs control_msgs)', read_only=True, choices=('topic', 'action')),
    Param('joint_states_topic', 'joint_states', 'sensor_msgs/JointState input', read_only=True),
    Param('robot_description_topic', 'robot_description', 'Latched URDF topic, used when neither robot_description '
          'nor urdf_file is set', read_only=True),
    Param('allow_topic_xacro', False, 'Expand xacro in a description from the topic (it may read files and '
          'environment variables); off: such a description is refused', read_only=True),
    # Freshness of inputs.
    Param('joint_states_timeout', 0.5, 'joint_states older than this give no new move (STALE_STATE) [s]', 0.01, 10.0),
    Param('state_tolerance', 0.1, 'joint_states may differ this much from the commanded motion (tracking error) '
          'before they are INCONSISTENT_STATE [rad or m]', 0.001, 3.2),
    Param('target_timeout', 5.0, 'A target that arrives before the model or a joint state waits this long, newest '
          'wins, then EXPIRED [s]', 0.0, 60.0),
    Param('max_target_age', 0.5, 'Targets whose header.stamp is older than this on arrival are EXPIRED; a zero '
          'stamp means now [s]', 0.001, 60.0),
    Param('transform_timeout', 0.05, "How long a tf2 lookup at a target's stamp may wait [s]", 0.0, 1.0),
    Param('max_request_timeout', 1.0, 'Largest SolveIK/PlanPath timeout a caller may ask for [s]', 1e-4, 10.0),
    Param('max_path_time', 2.0, 'Wall-clock budget of one plan_path: its solves stop there (TIMEOUT, with the '
          'fraction achieved), so a path never holds the node for long [s]', 0.01, 60.0),
    Param('thread_priority', 30, 'SCHED_FIFO priority of the worker thread (solves and commands), below the servo '
          "loop's 40; the inputs thread (targets, joint states) and the executor thread get one less, the "
          "middleware's threads two less.  0: normal scheduling.  "
          'Needs the right to it (root, CAP_SYS_NICE or an rtprio limit); refused, the threads keep normal '
          'scheduling and a warning', 0, 99, read_only=True),
    Param('cpu_wake_latency', 0, 'Largest CPU wake-up latency this node asks the kernel for while it runs (PM QoS, '
          '/dev/cpu_dma_latency) [us]: 0 keeps idle CPUs ready, so work after idle time (a target, a request, a '
          'servo cycle) is not slowed by their wake-up, at the cost of power on every CPU.  -1: no request.  '
          'Needs root; refused, an info line', -1, 10000, read_only=True),
    Param('workspace.min', UNSET, 'Lower corner of the allowed target box in the base frame [m]; [0.0]: unbounded '
          'below; at run time the box may only shrink', lengths=(3,)),
    Param('workspace.max', UNSET, 'Upper corner of the allowed target box in the base frame [m]; [0.0]: unbounded '
          'above; at run time the box may only shrink', lengths=(3,)),
    # Solver.
    Param('method', 'lm', 'IK step method: ' + ', '.join(METHOD_NAMES), choices=METHOD_NAMES),
    _solver_param('timeout', 0.005),
    _solver_param('position_tolerance', 1e-5),
    _solver_param('orientation_tolerance', 1e-5),
    _solver_param('max_iterations', 100),
    _solver_param('max_step', 1.0),
    _solver_param('damping', 0.05),
    _solver_param('damping_max', 0.05),
    _solver_param('epsilon', 0.05),
    _solver_param('alpha', 0.0),
    _solver_param('lm_bias', 1e-5),
    Param('mode', 'first', "'first': the first solution; 'closest': the one with the smallest largest-joint move "
          "from the seed; 'manipulability': the most manipulable, away from limits (both search the whole timeout)",
          choices=('first', 'closest', 'manipulability')),
    _solver_param('jump_threshold', 0.5),
    Param('max_joint_jump', 3.1416, 'A move changing any joint by more than this is refused (JOINT_JUMP); half a '
          'turn: elbow and wrist flips are refused, ordinary moves pass; streams may set their step bound '
          '[rad or m]', 0.001, 100.0),
    Param('position_only', False, 'Ignore target orientations'),
    Param('orientation_only', False, 'Ignore target positions'),
    Param('weights', [1.0] * 6, 'Task weights x y z rx ry rz (0 masks an axis)', lengths=(6,)),
    Param('weights_in_target_frame', False, "weights and bounds refer to the target's axes (tool frame), "
          'not the base frame'),
    Param('bounds', UNSET, 'Per-axis tolerances x y z rx ry rz in the target frame (TRAC-IK bounds; .inf frees an '
          'axis); [0.0]: position/orientation_tolerance', lengths=(6,)),
    _solver_param('random_seed', 0),
    Param('avoid_collisions', True, 'Refuse solutions and moves in collision, where a collision model is loaded'),
    Param('srdf_file', '', 'SRDF whose disable_collisions pairs are not checked; a relative path is looked up in '
          "the package's share directory (e.g. config/ik7.srdf)", read_only=True),
    Param('scene_file', '', 'YAML world objects (format of ik_solver/collision/scene.py) checked against the arm; '
          "a relative path is looked up in the package's share directory (e.g. config/ik7_scene.yaml)",
          read_only=True),
    Param('package_dirs', [''], 'Directories where package:// collision meshes are looked up after the ament index',
          read_only=True),
    Param('collision_padding', 0.0, 'Clearance: links closer than this to each other or to world objects count as '
          'colliding [m]', 0.0, 0.5, read_only=True),
    Param('skip_missing_meshes', False, 'Check without the collision geometry of links whose meshes are missing '
          '(warned), instead of refusing the model', read_only=True),
    Param('collision_convex', False, 'Check convex hulls of collision meshes (faster, conservative)', read_only=True),
    # Nullspace goals.
    Param('nullspace.posture_weight', 0.0, 'Weight of the preferred-posture goal', 0.0, 100.0),
    Param('nullspace.preferred_posture', UNSET, 'Preferred joint positions; [0.0] alone: the middle of the limits'),
    Param('nullspace.limits_weight', 0.0, 'Weight of the joint-limit avoidance goal', 0.0, 100.0),
    Param('nullspace.manipulability_weight', 0.0, 'Weight of the manipulability goal', 0.0, 100.0),
    Param('nullspace.pole_weight', 0.0, 'Weight of the pole-target (elbow side) goal', 0.0, 100.0),
    Param('nullspace.pole_link', '', 'Chain link (the elbow) drawn toward the pole target'),
    Param('nullspace.pole_target', [0.0, 0.0, 0.0], 'Pole point in the base link frame [m]', lengths=(3,)),
    Param('nullspace.iterations', 30, 'Nullspace steps after the tip has converged', 0, 10000),
    # Motion.
    Param('velocity_scaling', 0.5, 'Fraction of each joint velocity limit a move may use; 0: the joint_limits '
          "file's default_velocity_scaling_factor", 0.0, 1.0),
    Param('acceleration_scaling', 0.5, 'Fraction of each joint acceleration (and jerk) limit a move may use; 0: '
          "the joint_limits file's default_acceleration_scaling_factor", 0.0, 1.0),
    Param('sample_period', SAMPLE_PERIOD, 'Longest time between two trajectory points of a Ruckig-timed move; the '
          'points are its phase switches [s]', 0.001, 0.1),
    Param('command_lead_time', COMMAND_LEAD_TIME, 'A move from rest holds still this long before it departs; a '
          'controller that receives the trajectory within this time after its stamp starts it without a step '
          '(later: it skips what it missed, with a step); size it above the delivery delay to the controller; '
          '0: none [s]', 0.0, 1.0),
    # Failures.
    Param('publish_approximation', False, 'On a failed solve, publish the best approximation if within the '
          'limits below; otherwise publish nothing'),
    Param('approximation.max_position_error', 0.01, 'Largest position error of a published approximation [m]',
          0.0, 1.0),
    Param('approximation.max_orientation_error', 0.05, 'Largest orientation error of a published approximation '
          '[rad]', 0.0, 3.2),
)

BY_NAME = {p.name: p for p in PARAMETERS}


def check(name, value, n_joints=None):
    """Reason a value of the IK node's parameter ``name`` is refused, or None."""
    param = BY_NAME.get(name)
    if param is None:
        return None
    reason = param.check(value)
    if reason is None and name == 'nullspace.pole_target' and not np.isfinite(value).all():
        reason = 'nullspace.pole_target must be 3 finite coordinates'
    if reason is None and name in ('workspace.min', 'workspace.max') and is_set(value) \
            and not np.isfinite(value).all():
        reason = f'{name} must be 3 finite coordinates'
    if reason is None and name == 'nullspace.preferred_posture' and n_joints is not None \
            and is_set(value) and len(value) != n_joints:
        reason = f'nullspace.preferred_posture must have {n_joints} values (or [0.0] for mid-limits)'
    return reason


def check_all(values, n_joints=None):
    """First reason any of ``values`` is refused, including combinations; None if all are fine."""
    for name, value in values.items():
        reason = check(name, value, n_joints)
        if reason is not None:
            return reason
    if values['position_only'] and values['orientation_only']:
        return 'position_only and orientation_only cannot both be set'
    low, high = workspace_box(values)
    if not np.all(low < high):
        return 'workspace.min must be below workspace.max on every axis'
    return None


def workspace_box(values):
    """(lower corner, upper corner) of the workspace box [m]; a corner not set is unbounded (-inf or inf)."""
    low, high = values['workspace.min'], values['workspace.max']
    return (np.asarray(low, float) if is_set(low) else np.full(3, -np.inf),
            np.asarray(high, float) if is_set(high) else np.full(3, np.inf))


def check_workspace_change(old, new):
    """Reason a run-time change of the workspace box is refused, or None: a box set may shrink, never grow.

    A bound that any client could lift would bound nothing; one may be added or tightened at run time (e.g.
    with ``ros2 param set``, one corner at a time), and removed or widened only by a restart.
    """
    (old_low, old_high), (new_low, new_high) = workspace_box(old), workspace_box(new)
    if np.all(new_low >= old_low) and np.all(new_high <= old_high):
        return None
    return (f'the workspace box may only shrink at run time (from {old_low.tolist()} .. {old_high.tolist()} to '
            f'{new_low.tolist()} .. {new_high.tolist()}); restart the node to widen or remove it')


def package_file(path):
    """Resolve a file parameter: absolute paths as given, relative ones in the package's share directory."""
    return path if not path or os.path.isabs(path) else share_path(path)


def checked_xacro_args(values, logger):
    """xacro_args as ``xacro_args`` reads them; a bad entry is logged and none are used, so the node still starts."""
    try:
        return xacro_args(values)
    except ValueError as exc:
        logger.error(f'{exc}; loading without xacro arguments')
        return {}


def xacro_args(values):
    """{name: value} of the xacro_args parameter's 'name:=value' strings; ValueError naming a bad one."""
    args = {}
    for item in values:
        if not item:
            continue
        name, sep, value = item.partition(':=')
        if not sep or not name:
            raise ValueError(f"xacro_args entries must be 'name:=value', got '{item}'")
        args[name] = value
    return args


def solver_options(values, chain=None):
    """Build SolverOptions from a {name: value} map of the parameters above."""
    posture = list(values['nullspace.preferred_posture'])
    goals = NullspaceGoals(
        posture=values['nullspace.posture_weight'], limits=values['nullspace.limits_weight'],
        manipulability=values['nullspace.manipulability_weight'], pole=values['nullspace.pole_weight'],
        q_pref=np.array(posture) if chain is not None and is_set(posture) and len(posture) == chain.n else None,
        pole_link=values['nullspace.pole_link'] or None,
        pole_target=np.array(values['nullspace.pole_target'], float),
        iterations=values['nullspace.iterations'])
    return SolverOptions(
        method=values['method'], position_tolerance=values['position_tolerance'],
        orientation_tolerance=values['orientation_tolerance'], timeout=values['timeout'],
        max_iterations=values['max_iterations'], max_step=values['max_step'], alpha=values['alpha'],
        damping=values['damping'], damping_max=values['damping_max'], epsilon=values['epsilon'],
        lm_bias=values['lm_bias'], weights=tuple(values['weights']), mode=values['mode'],
        random_seed=values['random_seed'], nullspace=goals, position_only=values['position_only'],
        orientation_only=values['orientation_only'],
        weights_frame='target' if values['weights_in_target_frame'] else 'base',
        bounds=tuple(values['bounds']) if is_set(values['bounds']) else None, jump_threshold=values['jump_threshold'])


def defaults():
    return {p.name: p.default for p in PARAMETERS}


def load_limits(values, chain, logger):
    """Return the LoadedLimits of ``joint_limits_file`` for ``chain``, notes logged; ValueError if unusable."""
    try:
        loaded = load_joint_limits(chain, package_file(values['joint_limits_file']) or None)
    except (OSError, ModelError) as exc:
        raise ValueError(f"joint_limits_file '{values['joint_limits_file']}': {exc}") from None
    for note in loaded.notes:
        logger.info(f'joint limits: {note}')
    return loaded


def move_limits(loaded, values):
    """Return the limits a command may use: ``loaded`` scaled by velocity/acceleration_scaling (0: the file's)."""
    return loaded.limits.scaled(values['velocity_scaling'] or loaded.default_velocity_scaling,
                                values['acceleration_scaling'] or loaded.default_acceleration_scaling)


def request_overrides(request, max_timeout):
    """Solver overrides of a SolveIK request, each bounded like its parameter; ValueError otherwise."""
    overrides = {}
    if request.method:
        if request.method not in METHOD_NAMES:
            raise ValueError(f"unknown IK method '{request.method}'; choose one of {', '.join(METHOD_NAMES)}")
        overrides['method'] = request.method
    if request.mode:
        reason = BY_NAME['mode'].check(request.mode)
        if reason:
            raise ValueError(reason)
        overrides['mode'] = request.mode
    limit = max_timeout
    if request.timeout != 0.0:
        if not 0.0 < request.timeout <= limit:
            raise ValueError(f'timeout must be in (0, {limit:g}] s (max_request_timeout), got {request.timeout}')
        overrides['timeout'] = request.timeout
    for name in ('position_tolerance', 'orientation_tolerance'):
        value = getattr(request, name)
        if value != 0.0:
            reason = BY_NAME[name].check(value)
            if reason:
                raise ValueError(reason)
            overrides[name] = value
    if request.position_only and request.orientation_only:
        raise ValueError('position_only and orientation_only cannot both be set')
    for name in ('position_only', 'orientation_only'):
        if getattr(request, name):
            overrides[name] = True
    for name in ('weights', 'bounds'):
        values = np.asarray(getattr(request, name), float)
        if len(values):
            if len(values) != 6 or np.isnan(values).any():
                raise ValueError(f'{name} must have 6 values (x y z rx ry rz), not NaN; got {len(values)}')
            overrides[name] = tuple(float(v) for v in values)
    if request.weights_in_target_frame:
        overrides['weights_frame'] = 'target'
    return overrides


def path_budget(timeout, max_path_time):
    """Return the wall-clock budget of one plan_path [s]: the request's ``timeout``, capped by ``max_path_time``.

    A caller may ask for less time than the node allows (a path that must answer within a control cycle), never
    for more: max_path_time bounds how long one path holds the node's worker.

    Args:
        timeout: the request's budget [s]; 0: max_path_time.
        max_path_time: the node's parameter [s].

    Returns:
        The budget [s], in (0, max_path_time].

    Raises:
        ValueError: a negative or non-finite ``timeout``.
    """
    if not (np.isfinite(timeout) and timeout >= 0.0):
        raise ValueError(f'timeout must be finite and >= 0 s (0: max_path_time), got {timeout}')
    return min(timeout, max_path_time) if timeout > 0.0 else max_path_time
