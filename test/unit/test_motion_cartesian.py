"""Cartesian paths: straight lines solved step by step, stopping before unreachable poses and joint jumps."""
import pathlib
import time

from ik_solver import IKSolver
from ik_solver.core.transforms import rotation_vector
from ik_solver.motion.cartesian import cartesian_path, interpolate
from ik_solver.motion.guard import check_trajectory
from ik_solver.motion.jtc import SplineSampler, Trajectory
from ik_solver.motion.limits import load_joint_limits, MotionState
from ik_solver.motion.path_timing import plan_joint_path
import numpy as np
import pytest

IK7_HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])


#: Generous: on a busy machine the default 5 ms could time a reachable step out ('first' mode returns at once).
TIMEOUT = 0.2


@pytest.fixture(scope='module')
def solver7(ik7):
    return IKSolver(ik7, timeout=TIMEOUT)


def distance_to_segment(p, a, b):
    t = np.clip((p - a) @ (b - a) / ((b - a) @ (b - a)), 0.0, 1.0)
    return np.linalg.norm(p - (a + t * (b - a)))


def test_straight_line_on_ik7_is_followed_all_the_way(ik7, solver7):
    T0 = ik7.fk(IK7_HOME)
    T1 = T0.copy()
    T1[:3, 3] += [0.1, 0.1, -0.1]
    path = cartesian_path(solver7, IK7_HOME, [T1], max_step=0.005, jump_threshold=0.2)
    assert path.fraction == 1.0 and path.reason == 'success'
    steps = int(np.ceil(np.linalg.norm([0.1, 0.1, 0.1]) / 0.005))
    assert len(path.joints) == steps + 1
    np.testing.assert_array_equal(path.joints[0], IK7_HOME)
    assert np.abs(np.diff(path.joints, axis=0)).max() < 0.05  # 5 mm steps, no joint moves more than 0.05 rad
    poses = ik7.fk_batch(path.joints)
    for k, T in enumerate(poses):
        assert distance_to_segment(T[:3, 3], T0[:3, 3], T1[:3, 3]) < 1e-4
        assert np.linalg.norm(rotation_vector(T0[:3, :3].T @ T[:3, :3])) < 1e-4
    along = (poses[:, :3, 3] - T0[:3, 3]) @ (T1[:3, 3] - T0[:3, 3])
    assert np.all(np.diff(along) > 0)  # in order along the line
    np.testing.assert_allclose(poses[-1][:3, 3], T1[:3, 3], atol=1e-4)


def test_line_to_beyond_full_stretch_stops_early_without_a_jump(ik7, solver7):
    T0 = ik7.fk(IK7_HOME)
    T1 = T0.copy()
    T1[:3, 3] = [0.0, 0.0, 1.5]  # beyond the arm's reach (about 1.07 m from the shoulder)
    path = cartesian_path(solver7, IK7_HOME, [T1], max_step=0.01, jump_threshold=0.2)
    assert 0.0 < path.fraction < 1.0
    assert path.reason != 'success' and 'step' in path.message
    assert np.abs(np.diff(path.joints, axis=0)).max() <= 0.2
    last = ik7.fk(path.joints[-1])
    assert distance_to_segment(last[:3, 3], T0[:3, 3], T1[:3, 3]) < 1e-4


def test_line_through_the_wrist_singularity_stops_before_the_flip(ik6):
    solver = IKSolver(ik6, timeout=TIMEOUT)
    qa = np.array([0.3, -1.2, 1.5, -1.0, 0.4, 0.2])
    qb = qa.copy()
    qb[4] = -0.4  # wrist_2 through 0: wrist_1 and wrist_3 align
    # The jump threshold alone (no precision check) stops the path before the step that flips the wrist.
    path = cartesian_path(solver, qa, [ik6.fk(qb)], max_step=0.005, jump_threshold=0.3, precision=None)
    assert path.fraction < 1.0
    assert np.abs(np.diff(path.joints, axis=0)).max() <= 0.3  # nothing beyond the threshold is in the path
    assert path.reason == 'joint_jump', (path.reason, path.message)
    assert 'more than the jump_threshold' in path.message
    # Without a jump threshold or a precision check the same line is "achieved" by flipping the wrist.
    free = cartesian_path(solver, qa, [ik6.fk(qb)], max_step=0.005, jump_threshold=0.0, precision=None)
    assert free.fraction > path.fraction
    assert np.abs(np.diff(free.joints, axis=0)).max() > 0.3
    # MoveIt's precision check alone stops it as early: the turning wrist takes the tip off the line.
    cut = cartesian_path(solver, qa, [ik6.fk(qb)], max_step=0.005, jump_threshold=0.0)
    assert cut.reason == 'joint_jump' and 'off the line' in cut.message, cut.message
    assert cut.fraction <= path.fraction and np.abs(np.diff(cut.joints, axis=0)).max() <= 0.3


def test_orientation_is_slerped_at_a_constant_rate_about_one_axis():
    start = np.eye(4)
    end = np.eye(4)
    angle = 1.0
    end[:3, :3] = [[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]]
    end[:3, 3] = [0.2, 0.0, 0.0]
    steps = interpolate(start, [end], max_step=0.1, max_rotation_step=0.1)
    assert len(steps) == 10  # the rotation needs 10 steps of 0.1 rad, the translation only 2 of 0.1 m
    for k, (segment, T) in enumerate(steps, 1):
        assert segment == 0
        np.testing.assert_allclose(rotation_vector(T[:3, :3]), [0, 0, k * angle / 10], atol=1e-12)
        np.testing.assert_allclose(T[:3, 3], [0.02 * k, 0, 0], atol=1e-12)


def test_several_waypoints_and_a_repeated_one(ik7, solver7):
    T0 = ik7.fk(IK7_HOME)
    T1, T2 = T0.copy(), T0.copy()
    T1[:3, 3] += [0.05, 0, 0]
    T2[:3, 3] += [0.05, 0.05, 0]
    path = cartesian_path(solver7, IK7_HOME, [T0, T1, T1, T2], max_step=0.01, jump_threshold=0.2)
    assert path.fraction == 1.0 and len(path.joints) == 1 + 5 + 5
    np.testing.assert_allclose(ik7.fk(path.joints[5])[:3, 3], T1[:3, 3], atol=1e-4)


@pytest.mark.parametrize('kwargs,match', [
    ({'max_step': 0.0}, 'max_step'),
    ({'max_step': np.nan}, 'max_step'),
    ({'max_step': 0.01, 'jump_threshold': -1.0}, 'jump_threshold'),
    ({'max_step': 0.01, 'max_rotation_step': -0.1}, 'max_rotation_step'),
])
def test_bad_input(ik7, solver7, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cartesian_path(solver7, IK7_HOME, [ik7.fk(IK7_HOME)], **kwargs)
    with pytest.raises(ValueError, match='start_q'):
        cartesian_path(solver7, IK7_HOME[:3], [ik7.fk(IK7_HOME)], 0.01)


def test_a_step_so_small_the_path_would_not_fit_is_refused_at_once(ik7, solver7):
    """A 0.2 m line at 1e-9 m steps is 2e8 poses: refused before any is built (it held a node for minutes)."""
    T = ik7.fk(IK7_HOME)
    T1 = T.copy()
    T1[:3, 3] += [0.0, 0.2, 0.0]
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match='more than the 10000'):
        cartesian_path(solver7, IK7_HOME, [T1], max_step=1e-9)
    assert time.perf_counter() - t0 < 1.0
    assert len(interpolate(T, [T1], 0.2 / 10000, 1.0)) == 10000  # the limit itself is allowed


def test_timed_line_keeps_the_tip_on_the_line_as_the_controller_runs_it(ik7, solver7):
    config = pathlib.Path(__file__).resolve().parents[2] / 'config' / 'ik7_joint_limits.yaml'
    limits = load_joint_limits(ik7, str(config)).limits
    T0 = ik7.fk(IK7_HOME)
    T1 = T0.copy()
    T1[:3, 3] += [0.2, 0.1, -0.15]
    path = cartesian_path(solver7, IK7_HOME, [T1], max_step=0.005, jump_threshold=0.2)
    start = MotionState.at_rest(IK7_HOME)
    timed = plan_joint_path(start, path.joints[1:], limits)
    assert check_trajectory(start, timed, limits) == []
    sampler = SplineSampler(start.position, start.velocity,
                            Trajectory(timed.times, timed.positions, timed.velocities, timed.accelerations))
    q = sampler.evaluate(np.arange(0.0, timed.duration, 0.001))[0]
    deviation = max(distance_to_segment(T[:3, 3], T0[:3, 3], T1[:3, 3]) for T in ik7.fk_batch(q))
    assert deviation < 2e-4  # 0.2 mm between 5 mm steps
