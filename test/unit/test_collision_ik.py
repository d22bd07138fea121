"""Collision-aware IK on the bundled 7-DoF arm: hand-built cases whose truth is geometric, checked independently.

Every returned solution is re-checked by a second CollisionModel (padding 0)
and by the chain's own forward kinematics.
"""
import pathlib

from ik_solver import IKSolver
from ik_solver.collision import CollisionModel, make_obstacle
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
IK7 = str(ROOT / 'urdf' / 'ik7.urdf.xacro')
IK7_SRDF = str(ROOT / 'config' / 'ik7.srdf')
#: tool0 (the centre of link7's end face) inside the base column (r 0.08 m, 0.16 m high): every
#: configuration reaching this pose has link7 inside base_link.
INTO_BASE = np.array([0.088, 1.781, 0.071, -2.056, -0.129, 1.562, 0.964])
#: A free configuration whose elbow (link4's origin) is well away from the tool.
ELBOW_OUT = np.array([0.3, 0.6, 0.4, 1.2, 0.2, 0.8, 0.1])
#: Wall-clock budget per solve (s): generous for a shared machine; successful solves return early.
TIMEOUT = 1.0


@pytest.fixture(scope='module')
def model():
    return CollisionModel(IK7, 'base_link', 'tool0', srdf=IK7_SRDF)


@pytest.fixture(scope='module')
def witness():
    """Check independently: a separate model without SRDF (all non-adjacent pairs), padding 0."""
    return CollisionModel(IK7, 'base_link', 'tool0')


def _pose_error(chain, q, T):
    return np.linalg.norm(chain.fk(q)[:3, 3] - T[:3, 3])


def test_target_reachable_only_in_self_collision_fails_as_collision(model, witness):
    chain = model.chain
    T = chain.fk(INTO_BASE)
    assert np.hypot(*T[:2, 3]) < 0.08 and 0.0 < T[2, 3] < 0.16  # tool0 inside the base column
    seed = INTO_BASE + 0.05
    plain = IKSolver(chain, timeout=TIMEOUT).solve(T, seed)
    assert plain.success and witness.check(plain.joints) is not None  # reachable, but only in collision
    result = IKSolver(chain, collision=model, timeout=TIMEOUT).solve(T, seed)
    assert not result.success and result.reason == 'collision'
    assert 'base_link' in result.message


def test_target_reachable_both_ways_returns_the_free_solution(model, witness):
    chain = model.chain
    elbow = chain.fk(ELBOW_OUT, 'link4')[:3, 3]
    T = chain.fk(ELBOW_OUT)
    assert np.linalg.norm(T[:3, 3] - elbow) > 0.35  # the tool is far from the obstacle
    obstacle = [make_obstacle('post', 'sphere', [0.08], elbow)]
    model.set_obstacles(obstacle)
    witness.set_obstacles(obstacle)
    try:
        seed = ELBOW_OUT + 0.02
        plain = IKSolver(chain, timeout=TIMEOUT).solve(T, seed)
        assert plain.success and witness.check(plain.joints) is not None  # the nearby solution hits the post
        result = IKSolver(chain, collision=model, timeout=TIMEOUT).solve(T, seed)
        assert result.success, result.message
        assert witness.check(result.joints) is None and witness.min_distance(result.joints) > 0.0
        assert _pose_error(chain, result.joints, T) < 1e-4
    finally:
        model.set_obstacles([])
        witness.set_obstacles([])


def test_target_under_the_table_top_is_refused(model):
    chain = model.chain
    table = make_obstacle('table', 'box', [0.6, 1.0, 0.6], [0.65, 0.0, -0.1])  # solid, top at z = 0.2
    model.set_obstacles([table])
    try:
        down = np.diag([1.0, -1.0, -1.0])
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = down, [0.6, 0.0, 0.12]
        plain = IKSolver(chain, timeout=TIMEOUT).solve(T)
        assert plain.success and model.check(plain.joints) is not None
        result = IKSolver(chain, collision=model, timeout=TIMEOUT).solve(T)
        assert result.reason == 'collision' and 'table' in result.message
        above = T.copy()
        above[2, 3] = 0.35
        result = IKSolver(chain, collision=model, timeout=TIMEOUT).solve(above)
        assert result.success and model.check(result.joints) is None
    finally:
        model.set_obstacles([])


def test_straight_joint_move_through_an_obstacle_is_caught(model):
    chain = model.chain
    start = np.array([-1.0, 1.0, 0.0, 1.2, 0.0, 0.5, 0.0])
    end = start.copy()
    end[0] = 1.0
    middle = 0.5 * (start + end)
    model.set_obstacles([make_obstacle('pole', 'cylinder', [0.04, 0.3], chain.fk(middle, 'link4')[:3, 3])])
    try:
        assert model.check(start) is None and model.check(end) is None
        index, pair = model.check_path(np.array([start, end]))
        assert index == 1 and pair[1] == 'pole'
        detour = np.array([start, start + [0.0, -0.6, 0.0, 0.0, 0.0, 0.0, 0.0],
                           end + [0.0, -0.6, 0.0, 0.0, 0.0, 0.0, 0.0], end])
        assert model.check_path(detour) is None  # lifted over the pole
    finally:
        model.set_obstacles([])


def test_batch_marks_colliding_solutions(model, witness):
    chain = model.chain
    targets = np.array([chain.fk(INTO_BASE), chain.fk(ELBOW_OUT)])
    seeds = np.array([INTO_BASE + 0.05, ELBOW_OUT + 0.02])
    batch = IKSolver(chain, collision=model, timeout=TIMEOUT).solve_batch(targets, seeds)
    assert batch.reasons[0] == 'collision' and not batch.success[0]
    assert batch.success[1] and witness.check(batch.joints[1]) is None


def test_random_targets_solutions_are_collision_free(model, witness):
    """Targets from random free configurations: whatever succeeds is free by the independent check."""
    chain = model.chain
    rng = np.random.default_rng(11)
    solver = IKSolver(chain, collision=model, timeout=TIMEOUT)
    solved = 0
    for q in chain.random_configuration(rng, 40):
        if witness.check(q) is not None:
            continue
        T = chain.fk(q)
        result = solver.solve(T, chain.mid_configuration())
        if result.success:
            solved += 1
            assert witness.check(result.joints) is None
            assert _pose_error(chain, result.joints, T) < 1e-4
        else:
            assert result.reason in ('collision', 'timeout')
    assert solved >= 20
