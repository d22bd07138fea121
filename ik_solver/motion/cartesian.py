"""Cartesian paths with MoveIt's compute_cartesian_path semantics, without ROS.

The tip follows straight lines between waypoints (orientation by slerp), cut
into steps no longer than ``max_step``; each step is solved from the previous
solution, so the joints move continuously along the line.  The path stops
before the first step that cannot be solved, that would move a joint by more
than ``jump_threshold`` (a flip through a singularity or a branch switch), or
whose joint-space interpolation leaves the line: as MoveIt 2's precision check,
the tip at the joints' midpoint of each step must lie within ``precision`` of
the pose halfway along the line, since a controller interpolates the joints,
not the tip.  Unlike MoveIt, a step that fails is cut, not subdivided: a
smaller ``max_step`` is the caller's choice.  It reports the fraction of the
steps achieved.  Timing is
``path_timing.plan_joint_path``'s job.

With nullspace goals (a pole, a posture ...) each step continues from the
previous one: one attempt from the previous joints and at most
``FOLLOW_NS_STEPS`` nullspace steps, so the goals bend the arm gradually along
the path and a step costs about what it costs without goals.  The full search
(random restarts, all nullspace steps) runs only when that attempt fails.  A
path never flips the elbow over to the pole's side (that is no straight-line
motion of the tip): the message says when the elbow is off the pole's side.
"""
from dataclasses import dataclass, replace
import time

import numpy as np

from .timing import MAX_POINTS
from ..core.solver import IKSolver, POLE_SIDE_UNREACHABLE
from ..core.transforms import check_pose, matrix_to_quaternion, quaternion_to_matrix

REASON_SUCCESS = 'success'
REASON_JUMP = 'joint_jump'
REASON_TIMEOUT = 'timeout'
#: MoveIt 2's default CartesianPrecision: largest deviation of the joint-space midpoint of a step (m, rad).
PRECISION = (1e-3, 1e-2)
#: Nullspace steps per path step when the goals follow the path (each at most ``nullspace.NS_MAX_STEP``).
FOLLOW_NS_STEPS = 1


@dataclass
class CartesianPath:
    """Joint positions (K, n) from the start (row 0) along the path, the fraction achieved and why it stopped."""

    joints: np.ndarray
    fraction: float
    reason: str
    message: str


def cartesian_path(solver, start_q, waypoints, max_step, jump_threshold=np.inf, max_rotation_step=None,
                   budget=np.inf, clock=time.monotonic, precision=PRECISION):
    """Solve the straight-line path from FK(start_q) through ``waypoints`` (4x4 poses, base frame).

    ``max_step``: longest tip translation per step [m]; ``max_rotation_step``:
    largest rotation per step [rad] (default: ``max_step`` read as radians, as
    MoveIt does with one step size).  ``jump_threshold``: largest change of any
    joint between consecutive steps [rad or m]; 0 or inf disables the check
    (MoveIt's convention).  ``budget``: wall-clock time [s] the whole path may take on ``clock``; each solve
    gets at most what is left, and the path stops with 'timeout' when none is.  ``precision``: (m, rad)
    largest distance and rotation of the tip at a step's joint-space midpoint from the pose halfway along
    the line; None disables the check.  Raises ValueError for bad input; a path that stops early is a
    result with fraction < 1 and the reason (the solver's, 'joint_jump' for a jump or a step leaving the
    line, or 'timeout').
    """
    deadline = clock() + budget
    chain = solver.chain
    q = np.asarray(start_q, float)
    if q.shape != (chain.n,) or not np.isfinite(q).all():
        raise ValueError(f'start_q must be {chain.n} finite joint positions, got shape {q.shape}')
    _check_step('max_step', max_step)
    max_rotation_step = max_step if max_rotation_step is None else max_rotation_step
    _check_step('max_rotation_step', max_rotation_step)
    if not (jump_threshold >= 0.0):
        raise ValueError(f'jump_threshold must be >= 0 (0 or inf: no check), got {jump_threshold}')
    threshold = np.inf if jump_threshold == 0.0 else float(jump_threshold)
    precision = _check_precision(precision)
    poses = [chain.fk(q)]
    steps = interpolate(poses[0], [check_pose(T, f'waypoint {k}') for k, T in enumerate(waypoints)],
                        max_step, max_rotation_step)
    follow = _follower(solver)
    joints, off_side = [q], None
    stop = None
    for i, (segment, T) in enumerate(steps):
        where = _where(i, steps)
        left = deadline - clock()
        if left <= 0.0:
            stop = REASON_TIMEOUT, f'{where}: the path took its whole time budget of {budget:g} s'
            break
        limit = {'timeout': left} if left < solver.options.timeout else {}
        result = follow.solve(T, seed=joints[-1], **limit) if follow is not None else None
        if result is None or not result.success or np.abs(result.joints - joints[-1]).max() > threshold:
            result = solver.solve(T, seed=joints[-1], jump_threshold=threshold, **limit)
        if not result.success:
            stop = result.reason, f'{where}: {result.message}'
            break
        jump = np.abs(result.joints - joints[-1])
        if jump.max() > threshold:
            k = int(np.argmax(jump))
            stop = REASON_JUMP, (f'{where}: joint {chain.joint_names[k]} would move {jump[k]:.4g}, more than the '
                                 f'jump_threshold {threshold:g}')
            break
        if off_side is None and result.message.startswith(POLE_SIDE_UNREACHABLE):
            off_side = i + 1
        joints.append(np.asarray(result.joints, float))
        poses.append(T)
    if precision is not None:
        stop = _precision_stop(chain, joints, poses, precision, steps) or stop
    if stop is not None:
        return CartesianPath(np.array(joints), (len(joints) - 1) / len(steps), *stop)
    message = f'all {len(steps)} steps solved'
    if off_side is not None:
        message += (f'; {POLE_SIDE_UNREACHABLE}: the elbow is off the pole side from step {off_side} (a path '
                    f'does not flip it over)')
    return CartesianPath(np.array(joints), 1.0, REASON_SUCCESS, message)


def _where(i, steps):
    return f'step {i + 1} of {len(steps)} (towards waypoint {steps[i][0]})'


def _precision_stop(chain, joints, poses, precision, steps):
    """Cut ``joints`` (in place) before the first step whose joint-space midpoint leaves the line.

    Returns (reason, message) for such a step, else None.  Checked once for all solved steps, in arrays:
    a per-step check would cost more than the solves.
    """
    if len(joints) < 2:
        return None
    Q, P = np.array(joints), np.array(poses)
    middle = chain.fk_batch(0.5 * (Q[1:] + Q[:-1]))
    distance = np.linalg.norm(middle[:, :3, 3] - 0.5 * (P[1:, :3, 3] + P[:-1, :3, 3]), axis=1)
    angle = _midpoint_angles(P[:-1, :3, :3], P[1:, :3, :3], middle[:, :3, :3])
    beyond = np.flatnonzero((distance > precision[0]) | (angle > precision[1]))
    if not beyond.size:
        return None
    i = int(beyond[0])
    del joints[i + 1:]
    return REASON_JUMP, (f'{_where(i, steps)}: the joints between the steps would take the tip {distance[i]:.3g} m '
                         f'and {angle[i]:.3g} rad off the line, more than the precision {precision[0]:g} m, '
                         f'{precision[1]:g} rad')


def _midpoint_angles(R0, R1, R):
    """Return the angles (rad) of the rotations R (K, 3, 3) from the slerp midpoints of R0 and R1.

    Halfway, slerp is the normalised sum of the two unit quaternions (taken in the same hemisphere).
    """
    q0, q1, q = _quaternions(R0), _quaternions(R1), _quaternions(R)
    q1 *= np.where(np.sum(q0 * q1, axis=1) < 0.0, -1.0, 1.0)[:, None]
    half = q0 + q1
    half /= np.linalg.norm(half, axis=1)[:, None]
    return 2.0 * np.arccos(np.clip(np.abs(np.sum(half * q, axis=1)), 0.0, 1.0))


def _quaternions(R):
    """Return the unit quaternions (K, 4), w first, of rotations (K, 3, 3), by the largest diagonal term (Shepperd)."""
    m = R
    trace = m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2]
    diagonal = np.stack([trace, m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]], axis=1)
    largest = np.argmax(diagonal, axis=1)
    s = 2.0 * np.sqrt(np.maximum(1.0 + 2.0 * diagonal[np.arange(len(m)), largest] - trace, 1e-30))
    a, b, c = m[:, 2, 1] - m[:, 1, 2], m[:, 0, 2] - m[:, 2, 0], m[:, 1, 0] - m[:, 0, 1]
    d, e, f = m[:, 0, 1] + m[:, 1, 0], m[:, 0, 2] + m[:, 2, 0], m[:, 1, 2] + m[:, 2, 1]
    candidates = np.stack([np.stack([s / 4, a / s, b / s, c / s], axis=1),
                           np.stack([a / s, s / 4, d / s, e / s], axis=1),
                           np.stack([b / s, d / s, s / 4, f / s], axis=1),
                           np.stack([c / s, e / s, f / s, s / 4], axis=1)], axis=1)
    return candidates[np.arange(len(m)), largest]


def _follower(solver):
    """Return a solver for steps that follow the previous one under nullspace goals: one attempt, few goal steps.

    None without goals (the first attempt from the previous joints is already all a step costs) or for a
    stand-in solver without IKSolver options.  Built per path: it costs a plan (a fraction of a
    millisecond), the kernels are those already loaded.
    """
    goals = getattr(solver.options, 'nullspace', None)
    if not isinstance(solver, IKSolver) or goals is None or not goals.active:
        return None
    options = replace(solver.options, max_attempts=1,
                      nullspace=replace(goals, iterations=min(goals.iterations, FOLLOW_NS_STEPS)))
    return IKSolver(solver.chain, options, collision=solver.collision)


def interpolate(start, waypoints, max_step, max_rotation_step):
    """[(waypoint index, 4x4 pose)] along straight lines start -> waypoints, each step within both step sizes.

    ValueError if that takes more than MAX_POINTS steps (a timed path has at most that many points): a tiny
    step would otherwise hold the caller for minutes and fill the memory.
    """
    segments, previous = [], start
    for T in waypoints:
        q0, q1 = matrix_to_quaternion(previous[:3, :3]), matrix_to_quaternion(T[:3, :3])
        if q0 @ q1 < 0.0:
            q1 = -q1  # the short way round
        angle = 2.0 * np.arccos(np.clip(abs(q0 @ q1), -1.0, 1.0))
        distance = np.linalg.norm(T[:3, 3] - previous[:3, 3])
        count = int(np.ceil(max(distance / max_step, angle / max_rotation_step) - 1e-12))
        moves = distance > 1e-12 or angle > 1e-12
        segments.append((previous[:3, 3], T[:3, 3], q0, q1, max(count, 1) if moves else count))
        previous = T
    total = sum(segment[-1] for segment in segments)
    if total > MAX_POINTS:
        raise ValueError(f'max_step {max_step:g} makes {total:.3g} steps, more than the {MAX_POINTS} a path may have')
    steps = []
    for k, (p0, p1, q0, q1, count) in enumerate(segments):
        for s in np.arange(1, count + 1) / max(count, 1):
            pose = np.eye(4)
            pose[:3, :3] = quaternion_to_matrix(_slerp(q0, q1, s))
            pose[:3, 3] = (1.0 - s) * p0 + s * p1
            steps.append((k, pose))
    return steps


def _slerp(q0, q1, s):
    """Return the unit quaternion a fraction s of the way from q0 to q1 (same hemisphere)."""
    cos = np.clip(q0 @ q1, -1.0, 1.0)
    theta = np.arccos(cos)
    if theta < 1e-9:
        return q1
    return (np.sin((1.0 - s) * theta) * q0 + np.sin(s * theta) * q1) / np.sin(theta)


def _check_precision(precision):
    """Return (m, rad) as floats, or None (no check); ValueError unless both are positive (inf: no limit)."""
    if precision is None:
        return None
    try:
        linear, angular = (float(x) for x in precision)
    except (TypeError, ValueError):
        raise ValueError(f'precision must be (m, rad) or None, got {precision!r}') from None
    if not (linear > 0.0 and angular > 0.0):
        raise ValueError(f'precision must be two positive numbers (m, rad), got {precision!r}')
    return linear, angular


def _check_step(name, value):
    if not (np.isfinite(value) and value > 0.0):
        raise ValueError(f'{name} must be positive and finite, got {value}')
