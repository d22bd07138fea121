"""Secondary goals: analytic manipulability gradient, goals that cannot break the tip, the pole by default."""
import os

from ik_solver.core import kinematics as kin
from ik_solver.core.chain import load_chain
from ik_solver.core.nullspace import manipulability, manipulability_gradient, NullspaceGoals
from ik_solver.core.solver import IKSolver
from ik_solver_demos.tools.bench import robot_sources
import numpy as np
import pytest


def _frames(chain, q):
    n = chain.axis.shape[0]
    R_out, p_out, a_out = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3)), np.empty((n, 3))
    kin.frames(np.asarray(q, float), *chain.kin_args, R_out, p_out, a_out)
    return R_out, p_out, a_out


@pytest.mark.parametrize('robot', ['ik7', 'panda', 'mixed', 'ik6'])
def test_jacobian_derivatives_match_finite_differences(robot, request, rng):
    chain = request.getfixturevalue(robot)
    h = 1e-6
    for q in chain.random_configuration(rng, 3):
        _, p_out, a_out = _frames(chain, q)
        H = kin.jacobian_derivatives(p_out, a_out, chain.kind, chain.var, chain.mult, chain.n)
        for k in range(chain.n):
            dq = np.zeros(chain.n)
            dq[k] = h
            fd = (chain.jacobian(q + dq) - chain.jacobian(q - dq)) / (2 * h)
            np.testing.assert_allclose(H[k], fd, atol=1e-7)


@pytest.mark.parametrize('rows', [slice(0, 6), slice(0, 3)])
def test_manipulability_gradient_matches_finite_differences(ik7, rng, rows):
    sw = np.zeros(6)
    sw[rows] = 1.0
    h = 1e-6
    for q in ik7.random_configuration(rng, 5):
        _, p_out, a_out = _frames(ik7, q)
        J = kin.goal_rows(ik7.jacobian(q), np.eye(3), sw, False)
        H = kin.jacobian_derivatives(p_out, a_out, ik7.kind, ik7.var, ik7.mult, ik7.n)
        g = manipulability_gradient(J, np.array([kin.goal_rows(Hk, np.eye(3), sw, False) for Hk in H]))
        fd = np.array([(manipulability(ik7.jacobian(q + h * e)[rows]) - manipulability(ik7.jacobian(q - h * e)[rows]))
                       / (2 * h) for e in np.eye(ik7.n)])
        np.testing.assert_allclose(g, fd, atol=1e-7)


def _reachable_targets(chain, rng, count):
    return chain.fk_batch(chain.random_configuration(rng, count))


@pytest.mark.parametrize('goals', [
    NullspaceGoals(posture=100.0),
    NullspaceGoals(limits=1e5, manipulability=1e3, iterations=1000),
    NullspaceGoals(pole=100.0, pole_link='link4', pole_target=[0.3, 1.0, 0.6]),
    NullspaceGoals(pole=1.0, pole_link='link4', pole_target=[1000.0, 0.0, 0.0]),   # a pole 1 km away
], ids=['posture100', 'limits-manipulability', 'pole100', 'far-pole'])
def test_secondary_goals_never_stop_the_tip_converging(ik7, rng, goals):
    # Before the goal steps were bounded: posture=100 gave 0/50, pole=100 16/50, a pole 1 km away 0/50;
    # 50/50 without goals.
    solver = IKSolver(ik7, nullspace=goals, timeout=0.05)   # generous: the test machine is shared
    targets = _reachable_targets(ik7, rng, 50)
    results = [solver.solve(t) for t in targets]
    assert sum(r.success for r in results) == 50
    for r, t in zip(results, targets):
        assert r.position_error < 1e-5 and r.orientation_error < 1e-5


def _iiwa14():
    path = robot_sources()['iiwa14'][0]
    if not path or not os.path.isfile(path):
        pytest.skip('iiwa14 URDF (rtbdata) not installed')
    return load_chain(path, 'base_link', 'tool0')


ELBOWS = {'ik7': ('link4', 'link1'), 'panda': ('panda_link4', 'panda_link1'), 'iiwa14': ('link_4', 'link_1')}


def _side(chain, q, elbow, first, pole):
    """Elbow's distance from the plane through the first joint's axis (z of its link) and the tip, signed by the pole's.

    For these arms the shoulder lies on the first axis, so this is the plane
    through the shoulder-tip line and the vertical: the swivel angle's zero.
    """
    s, tip, e = (chain.fk(q, link)[:3, 3] for link in (first, None, elbow))
    n = np.cross(chain.fk(q, first)[:3, 2], tip - s)
    n /= np.linalg.norm(n)
    return float((e - s) @ n * np.sign((pole - s) @ n))


@pytest.mark.parametrize('robot', ['ik7', 'panda', 'iiwa14'])
@pytest.mark.parametrize('sign', [1.0, -1.0], ids=['same-side', 'other-side'])
def test_pole_puts_the_elbow_on_its_side_from_random_seeds(robot, sign, request):
    chain = _iiwa14() if robot == 'iiwa14' else request.getfixturevalue(robot)
    elbow, first = ELBOWS[robot]
    rng = np.random.default_rng(7)
    q = chain.random_configuration(rng) * 0.6
    q[3] = -1.2 if chain.upper[3] < 1.2 else 1.2   # a bent elbow
    target = chain.fk(q)
    s, tip, e = (chain.fk(q, link)[:3, 3] for link in (first, None, elbow))
    u = (tip - s) / np.linalg.norm(tip - s)
    d = (e - s) - ((e - s) @ u) * u
    pole = e + sign * 0.5 * d / np.linalg.norm(d)   # 0.5 m beside the elbow, on its side or the other
    goals = NullspaceGoals(pole=1.0, pole_link=elbow, pole_target=pole)   # default weight and iterations
    solver = IKSolver(chain, nullspace=goals, timeout=0.05)   # generous: the test machine is shared
    on_side = 0
    for seed in chain.random_configuration(rng, 100):
        r = solver.solve(target, seed)
        assert r.success and r.position_error < 1e-5 and r.orientation_error < 1e-5
        on_side += _side(chain, r.joints, elbow, first, pole) > 0
    assert on_side >= 99
