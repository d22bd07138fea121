"""Goals in the target (tool) frame: weights, masks and TRAC-IK-like bounds about the tool's own axes."""
from ik_solver.core.solver import IKSolver
from ik_solver.core.transforms import make_pose, pose_error
import numpy as np
import pytest


def _rotz(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def _drill_target(chain, q, spin):
    """FK of q, turned about its own z axis by ``spin``: same tool axis, other spin."""
    T = chain.fk(q)
    T[:3, :3] = T[:3, :3] @ _rotz(spin)
    return T


def _axis_angle(a, b):
    return float(np.arccos(np.clip(a @ b, -1.0, 1.0)))


@pytest.mark.parametrize('goal', [{'weights': (1, 1, 1, 1, 1, 0), 'weights_frame': 'target'},
                                  {'bounds': (0, 0, 0, 0, 0, np.inf)}])
def test_drill_keeps_tool_axis_with_free_spin(panda, rng, goal):
    spins = []
    for _ in range(10):
        q = panda.random_configuration(rng)
        target = _drill_target(panda, q, 1.0)
        result = IKSolver(panda, timeout=0.05, **goal).solve(target, q)
        assert result.success, result.message
        T = panda.fk(result.joints)
        assert _axis_angle(T[:3, 2], target[:3, 2]) < 1e-5
        assert np.linalg.norm(T[:3, 3] - target[:3, 3]) < 1e-5
        assert result.task_error < 2e-5
        assert result.orientation_error == pytest.approx(pose_error(target, T)[1], abs=1e-9)
        spins.append(result.orientation_error)
    # Seeded at q, the spin stays where it was: the true error is the spin the goal left free.
    assert np.median(spins) > 0.5


def test_base_frame_weights_cannot_free_the_tool_spin(panda, rng):
    # The same weights in the base frame free rotation about the base z axis instead: the tool axis tilts.
    q = panda.random_configuration(rng)
    q[5] = 2.0   # tool axis well away from the base z axis
    target = _drill_target(panda, q, 1.0)
    result = IKSolver(panda, weights=(1, 1, 1, 1, 1, 0), timeout=0.05).solve(target, q)
    assert result.success
    assert _axis_angle(panda.fk(result.joints)[:3, 2], target[:3, 2]) > 1e-3


def test_position_only_in_target_frame_matches_base_frame(ik7, rng):
    for q in ik7.random_configuration(rng, 10):
        target = make_pose(ik7.fk(q)[:3, 3], [0.3, -0.2, 0.5, 0.6])
        base = IKSolver(ik7, timeout=0.5, position_only=True).solve(target)
        tool = IKSolver(ik7, timeout=0.5, position_only=True, weights_frame='target').solve(target)
        assert base.success and tool.success
        np.testing.assert_allclose(tool.joints, base.joints, atol=1e-6)


def test_position_bounds_hold_in_the_target_frame(ik7, rng):
    bounds = (0.02, 0.0, 0.0, 0.0, 0.0, 0.0)   # 2 cm of play along the tool's x axis only
    for q in ik7.random_configuration(rng, 5):
        T = ik7.fk(q)
        target = T.copy()
        target[:3, 3] += 0.015 * T[:3, 0] + 0.001 * T[:3, 1]   # 1.5 cm along tool x, 1 mm along tool y
        result = IKSolver(ik7, timeout=0.5, bounds=bounds).solve(target, q)
        assert result.success, result.message
        offset = target[:3, :3].T @ (ik7.fk(result.joints)[:3, 3] - target[:3, 3])
        assert abs(offset[0]) <= 0.02 + 1e-9
        assert np.abs(offset[1:]).max() < 1e-5
        # Seeded where it is, the arm keeps the 1.5 cm the bound allows rather than moving to the centre.
        assert result.position_error > 0.005
