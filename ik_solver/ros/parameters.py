"""The node's parameters: names, defaults, descriptions, ranges, and what they configure.

Kept free of rclpy so the table and its checks are testable alone; the node
turns each ``Param`` into a declared parameter with a descriptor.
"""
from dataclasses import dataclass

import numpy as np

from ..core.methods import METHOD_NAMES
from ..core.nullspace import NullspaceGoals
from ..core.solver import SolverOptions


@dataclass(frozen=True)
class Param:
    name: str
    default: object
    description: str
    low: float = None
    high: float = None
    read_only: bool = False
    choices: tuple = None


PARAMETERS = (
    # Robot model (read at start).
    Param('robot_description', '', 'URDF XML of the robot; empty: urdf_file, else the robot_description topic',
          read_only=True),
    Param('urdf_file', '', 'Path of a URDF or xacro file, used when robot_description is empty', read_only=True),
    Param('base_link', 'base_link', 'Root link of the IK chain; targets are expressed in it by default',
          read_only=True),
    Param('tip_link', 'tool0', 'Link whose pose is solved for', read_only=True),
    # Topics.
    Param('trajectory_topic', '/joint_trajectory_controller/joint_trajectory',
          'Topic of the joint_trajectory_controller that executes solutions', read_only=True),
    Param('joint_states_topic', '/joint_states', 'sensor_msgs/JointState input', read_only=True),
    # Solver.
    Param('method', 'lm', 'IK step method: ' + ', '.join(METHOD_NAMES), choices=METHOD_NAMES),
    Param('timeout', 0.005, 'Wall-clock budget of one solve, restarts included [s]', 1e-4, 1.0),
    Param('position_tolerance', 1e-5, 'Converged below this tip position error [m]', 1e-9, 0.1),
    Param('orientation_tolerance', 1e-5, 'Converged below this tip orientation error [rad]', 1e-9, 0.5),
    Param('max_iterations', 100, 'Iterations of one attempt before a random restart', 1, 10000),
    Param('max_step', 1.0, 'Largest joint change of one iteration [rad or m]', 1e-3, 3.2),
    Param('damping', 0.05, 'dls: damping lambda', 0.0, 10.0),
    Param('damping_max', 0.05, 'adaptive_dls: largest damping lambda_max', 0.0, 10.0),
    Param('epsilon', 0.05, 'adaptive_dls: damping starts below this smallest singular value', 1e-6, 10.0),
    Param('alpha', 0.0, "transpose: gain; 0 selects Buss's optimal step", 0.0, 100.0),
    Param('lm_bias', 1e-5, 'lm: damping floor added to the error-dependent damping', 0.0, 1.0),
    Param('mode', 'first', "'first': the first solution; 'closest': search until timeout for the one "
          'with the smallest largest-joint move from the seed', choices=('first', 'closest')),
    Param('position_only', False, 'Ignore target orientations'),
    Param('random_seed', 0, 'Seed of the random restarts (deterministic solves)', 0, 2 ** 31 - 1),
    # Nullspace goals.
    Param('nullspace.posture_weight', 0.0, 'Weight of the preferred-posture goal', 0.0, 100.0),
    Param('nullspace.preferred_posture', [0.0], 'Preferred joint positions; [0.0] alone: the middle of the limits'),
    Param('nullspace.limits_weight', 0.0, 'Weight of the joint-limit avoidance goal', 0.0, 100.0),
    Param('nullspace.manipulability_weight', 0.0, 'Weight of the manipulability goal', 0.0, 100.0),
    Param('nullspace.pole_weight', 0.0, 'Weight of the pole-target (elbow side) goal', 0.0, 100.0),
    Param('nullspace.pole_link', '', 'Chain link (the elbow) drawn toward the pole target'),
    Param('nullspace.pole_target', [0.0, 0.0, 0.0], 'Pole point in the base link frame [m]'),
    Param('nullspace.iterations', 30, 'Nullspace steps after the tip has converged', 0, 10000),
    # Trajectory.
    Param('velocity_scaling', 0.5, 'Fraction of each joint velocity limit a move may use', 0.01, 1.0),
    Param('min_duration', 0.1, 'Shortest trajectory duration [s]', 0.001, 60.0),
    Param('sample_period', 0.05, 'Time between trajectory points [s]', 0.001, 1.0),
    # Failures.
    Param('publish_approximation', False, 'On a failed solve, publish the best approximation if within the '
          'limits below; otherwise publish nothing'),
    Param('approximation.max_position_error', 0.01, 'Largest position error of a published approximation [m]',
          0.0, 1.0),
    Param('approximation.max_orientation_error', 0.05, 'Largest orientation error of a published approximation '
          '[rad]', 0.0, 3.2),
    Param('approximation.max_joint_jump', 0.5, 'Largest joint move of a published approximation [rad or m]',
          0.0, 6.3),
)

BY_NAME = {p.name: p for p in PARAMETERS}


def check(name, value, n_joints=None):
    """Reason a value is refused, or None.  Ranges of numbers are also enforced by the descriptors."""
    param = BY_NAME.get(name)
    if param is None:
        return None
    if param.choices is not None and value not in param.choices:
        return f"{name} must be one of {', '.join(param.choices)}, got '{value}'"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not np.isfinite(value):
            return f'{name} must be finite'
        if param.low is not None and not param.low <= value <= param.high:
            return f'{name} must be in [{param.low}, {param.high}], got {value}'
    if name == 'nullspace.pole_target' and (len(value) != 3 or not np.isfinite(value).all()):
        return 'nullspace.pole_target must be 3 finite coordinates'
    if name == 'nullspace.preferred_posture' and n_joints is not None and len(value) not in (1, n_joints):
        return f'nullspace.preferred_posture must have {n_joints} values (or [0.0] for mid-limits)'
    return None


def solver_options(values, chain=None):
    """Build SolverOptions from a {name: value} map of the parameters above."""
    posture = list(values['nullspace.preferred_posture'])
    pole_weight = values['nullspace.pole_weight']
    goals = NullspaceGoals(
        posture=values['nullspace.posture_weight'], limits=values['nullspace.limits_weight'],
        manipulability=values['nullspace.manipulability_weight'], pole=pole_weight,
        q_pref=np.array(posture) if chain is not None and len(posture) == chain.n else None,
        pole_link=values['nullspace.pole_link'] or None,
        pole_target=np.array(values['nullspace.pole_target'], float),
        iterations=values['nullspace.iterations'])
    weights = (1.0, 1.0, 1.0, 0.0, 0.0, 0.0) if values['position_only'] else (1.0,) * 6
    return SolverOptions(
        method=values['method'], position_tolerance=values['position_tolerance'],
        orientation_tolerance=values['orientation_tolerance'], timeout=values['timeout'],
        max_iterations=values['max_iterations'], max_step=values['max_step'], alpha=values['alpha'],
        damping=values['damping'], damping_max=values['damping_max'], epsilon=values['epsilon'],
        lm_bias=values['lm_bias'], weights=weights, mode=values['mode'], random_seed=values['random_seed'],
        nullspace=goals)


def defaults():
    return {p.name: p.default for p in PARAMETERS}
