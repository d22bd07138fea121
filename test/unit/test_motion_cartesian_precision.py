"""Cartesian paths: the joints between steps stay on the line, and nullspace goals follow the path cheaply.

Truths: the tip at each step's joint-space midpoint is measured here by forward kinematics against the
midpoint of the straight line; the work of a path is the solver's own iteration and restart count; the
elbow's side is measured against the plane through the first joint's axis and the tip.
"""
from ik_solver.core.nullspace import NullspaceGoals
from ik_solver.core.solver import IKSolver
from ik_solver.motion.cartesian import cartesian_path
import numpy as np
import pytest

IK7_HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
#: Generous: the test machine is shared.
TIMEOUT = 0.2


def _line(chain, q, offset):
    T0 = chain.fk(q)
    T1 = T0.copy()
    T1[:3, 3] += offset
    return T0, T1


def _midpoint_deviations(chain, joints, T0, T1):
    """Distance (m) of the tip at each step's joint midpoint from the midpoint of its piece of the line T0-T1."""
    positions = chain.fk_batch(joints)[:, :3, 3]
    s = (positions - T0[:3, 3]) @ (T1[:3, 3] - T0[:3, 3]) / np.sum((T1[:3, 3] - T0[:3, 3]) ** 2)
    on_line = T0[:3, 3] + np.round(s * (len(joints) - 1))[:, None] / (len(joints) - 1) * (T1[:3, 3] - T0[:3, 3])
    middle = chain.fk_batch(0.5 * (joints[1:] + joints[:-1]))[:, :3, 3]
    return np.linalg.norm(middle - 0.5 * (on_line[1:] + on_line[:-1]), axis=1)


class SwingAt:
    """The solver's answers, except that step ``k`` is answered by the same pose with the arm swung far away."""

    def __init__(self, solver, k, rng):
        self.solver, self.chain, self.options = solver, solver.chain, solver.options
        self.k, self.rng, self.calls = k, rng, 0

    def solve(self, T, seed, **overrides):
        self.calls += 1
        result = self.solver.solve(T, seed, **overrides)
        while self.calls == self.k:
            other = self.solver.solve(T, self.chain.random_configuration(self.rng))
            if other.success and np.abs(other.joints - seed).max() > 1.0:
                return other
        return result


def test_a_step_whose_joints_leave_the_line_cuts_the_path(ik7):
    rng = np.random.default_rng(11)
    solver = IKSolver(ik7, timeout=TIMEOUT)
    T0, T1 = _line(ik7, IK7_HOME, [0.0, 0.1, 0.0])
    free = cartesian_path(SwingAt(solver, 4, rng), IK7_HOME, [T1], 0.01, jump_threshold=0.0, precision=None)
    assert free.fraction == 1.0   # no jump check, no precision check: the swing is in the path
    deviation = _midpoint_deviations(ik7, free.joints, T0, T1)
    assert deviation[3] > 0.01 and np.all(np.delete(deviation, 3) < 1e-3)   # step 4 alone leaves the line
    path = cartesian_path(SwingAt(solver, 4, rng), IK7_HOME, [T1], 0.01, jump_threshold=0.0)
    assert path.reason == 'joint_jump' and 'off the line' in path.message and 'step 4 of 10' in path.message
    assert path.fraction == pytest.approx(0.3) and len(path.joints) == 4


def test_the_precision_is_the_largest_midpoint_deviation_allowed(ik7):
    """10 cm steps bend the tip off the line between them by a few millimetres: the tolerance decides."""
    solver = IKSolver(ik7, timeout=TIMEOUT)
    T0, T1 = _line(ik7, IK7_HOME, [0.15, 0.2, -0.1])
    free = cartesian_path(solver, IK7_HOME, [T1], 0.1, precision=None)
    assert free.fraction == 1.0
    deviation = _midpoint_deviations(ik7, free.joints, T0, T1)
    assert deviation.max() > 2e-3
    assert cartesian_path(solver, IK7_HOME, [T1], 0.1, precision=(1.01 * deviation.max(), 1.0)).fraction == 1.0
    limit = 0.8 * deviation.max()
    first = int(np.argmax(deviation > limit))
    assert first > 0
    cut = cartesian_path(solver, IK7_HOME, [T1], 0.1, precision=(limit, 1.0))
    assert cut.reason == 'joint_jump' and cut.fraction == pytest.approx(first / len(deviation))
    np.testing.assert_allclose(cut.joints, free.joints[:first + 1])


@pytest.mark.parametrize('precision', [(0.0, 0.01), (0.001, -1.0), (np.nan, 0.01), 'fine', (1.0,)])
def test_bad_precision(ik7, precision):
    with pytest.raises(ValueError, match='precision'):
        cartesian_path(IKSolver(ik7), IK7_HOME, [ik7.fk(IK7_HOME)], 0.01, precision=precision)


class Spy:
    """Sums the iterations and restarts of every IKSolver solve while installed."""

    def __init__(self, monkeypatch):
        self.iterations = self.restarts = 0
        solve = IKSolver.solve

        def counted(solver, *args, **kwargs):
            result = solve(solver, *args, **kwargs)
            self.iterations += result.iterations
            self.restarts += result.restarts
            return result
        monkeypatch.setattr(IKSolver, 'solve', counted)


def _side(chain, q, elbow, pole):
    """Elbow's signed distance from the plane through the first joint's axis (base z) and the tip, pole side +."""
    s, tip, e = (chain.fk(q, link)[:3, 3] for link in ('link1', None, elbow))
    n = np.cross([0.0, 0.0, 1.0], tip - s)
    n /= np.linalg.norm(n)
    return float((e - s) @ n * np.sign((pole - s) @ n))


@pytest.mark.parametrize('sign', [1.0, -1.0], ids=['start-on-pole-side', 'start-off-pole-side'])
def test_a_pole_follows_the_path_at_the_cost_of_a_plain_one(ik7, monkeypatch, sign):
    """A pole cost 8x a plain path (full nullspace steps and restarts at every step) and flipped the elbow."""
    q0 = IK7_HOME.copy()
    q0[0], q0[2] = 0.3, 0.6   # the elbow off the plane of the base's z axis and the tip
    T0, T1 = _line(ik7, q0, [0.1, 0.0, 0.0])
    e = ik7.fk(q0, 'link4')[:3, 3]
    s = ik7.fk(q0, 'link1')[:3, 3]
    n = np.cross([0.0, 0.0, 1.0], T0[:3, 3] - s)
    pole = e + sign * 0.5 * np.sign((e - s) @ n) * n / np.linalg.norm(n)
    plain, goal = IKSolver(ik7, timeout=TIMEOUT), IKSolver(
        ik7, timeout=TIMEOUT, nullspace=NullspaceGoals(pole=1.0, pole_link='link4', pole_target=pole))
    costs = {}
    for name, solver in (('plain', plain), ('pole', goal)):
        spy = Spy(monkeypatch)
        path = cartesian_path(solver, q0, [T1], 0.001, jump_threshold=0.0)
        costs[name] = spy.iterations
        assert path.fraction == 1.0 and len(path.joints) == 101, path.message
        assert spy.restarts == 0
        assert np.abs(np.diff(path.joints, axis=0)).max() < 0.11   # one bounded goal step at most: no flip
    assert costs['pole'] <= 3 * costs['plain'] + 50, costs   # one goal step and its re-convergence; was ~90x
    sides = [_side(ik7, q, 'link4', pole) for q in path.joints]
    if sign > 0:
        assert min(sides) > 0.0 and path.message == 'all 100 steps solved'
        end = ik7.fk(path.joints[-1], 'link4')[:3, 3]
        assert np.linalg.norm(end - pole) < np.linalg.norm(e - pole) - 0.05   # bent toward the pole
    else:
        assert max(sides) < 0.0 and 'pole_side_unreachable' in path.message and 'from step 1' in path.message
