"""Cartesian paths with MoveIt's compute_cartesian_path semantics, without ROS.

The tip follows straight lines between waypoints (orientation by slerp), cut
into steps no longer than ``max_step``; each step is solved from the previous
solution, so the joints move continuously along the line.  The path stops
before the first step that cannot be solved or that would move a joint by more
than ``jump_threshold`` (a flip through a singularity or a branch switch), and
reports the fraction of the steps achieved.  Timing is ``timing.plan_joint_path``'s job.
"""
from dataclasses import dataclass
import time

import numpy as np

from .timing import MAX_POINTS
from ..core.transforms import check_pose, matrix_to_quaternion, quaternion_to_matrix

REASON_SUCCESS = 'success'
REASON_JUMP = 'joint_jump'
REASON_TIMEOUT = 'timeout'


@dataclass
class CartesianPath:
    """Joint positions (K, n) from the start (row 0) along the path, the fraction achieved and why it stopped."""

    joints: np.ndarray
    fraction: float
    reason: str
    message: str


def cartesian_path(solver, start_q, waypoints, max_step, jump_threshold=np.inf, max_rotation_step=None,
                   budget=np.inf, clock=time.monotonic):
    """Solve the straight-line path from FK(start_q) through ``waypoints`` (4x4 poses, base frame).

    ``max_step``: longest tip translation per step [m]; ``max_rotation_step``:
    largest rotation per step [rad] (default: ``max_step`` read as radians, as
    MoveIt does with one step size).  ``jump_threshold``: largest change of any
    joint between consecutive steps [rad or m]; 0 or inf disables the check
    (MoveIt's convention).  ``budget``: wall-clock time [s] the whole path may take on ``clock``; each solve
    gets at most what is left, and the path stops with 'timeout' when none is.  Raises ValueError for bad
    input; a path that stops early is a result with fraction < 1 and the reason (the solver's, 'joint_jump'
    or 'timeout').
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
    steps = interpolate(chain.fk(q), [check_pose(T, f'waypoint {k}') for k, T in enumerate(waypoints)],
                        max_step, max_rotation_step)
    joints = [q]
    for i, (segment, T) in enumerate(steps):
        where = f'step {i + 1} of {len(steps)} (towards waypoint {segment})'
        left = deadline - clock()
        if left <= 0.0:
            return _stopped(joints, len(steps), REASON_TIMEOUT, f'{where}: the path took its whole time budget '
                                                                f'of {budget:g} s')
        limit = {'timeout': left} if left < solver.options.timeout else {}
        result = solver.solve(T, seed=joints[-1], jump_threshold=threshold, **limit)
        if not result.success:
            return _stopped(joints, len(steps), result.reason, f'{where}: {result.message}')
        jump = np.abs(result.joints - joints[-1])
        if jump.max() > threshold:
            k = int(np.argmax(jump))
            return _stopped(joints, len(steps), REASON_JUMP,
                            f'{where}: joint {chain.joint_names[k]} would move {jump[k]:.4g}, more than the '
                            f'jump_threshold {threshold:g}')
        joints.append(np.asarray(result.joints, float))
    return CartesianPath(np.array(joints), 1.0, REASON_SUCCESS, f'all {len(steps)} steps solved')


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


def _stopped(joints, total, reason, message):
    return CartesianPath(np.array(joints), (len(joints) - 1) / total, reason, message)


def _check_step(name, value):
    if not (np.isfinite(value) and value > 0.0):
        raise ValueError(f'{name} must be positive and finite, got {value}')
