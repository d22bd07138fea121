"""The pole picks the elbow's side from any seed, or the result says that no solution on that side was found.

The side is checked independently of the solver: for ik7 with its tip in the
arm's plane of symmetry (y = 0), the elbow is on a lateral pole's side exactly
when its y coordinate has the pole's sign.
"""
from dataclasses import replace

from ik_solver.core.nullspace import NullspaceGoals
from ik_solver.core.solver import IKSolver
from ik_solver.core.transforms import make_pose
import numpy as np

TARGET = make_pose([0.45, 0.0, 0.35], [1.0, 0.0, 0.0, 0.0])   # tool down, in the plane y = 0


def _pole(side):
    return NullspaceGoals(pole=1.0, pole_link='link4', pole_target=[0.3, side * 1.0, 0.6])


def _elbow_y(chain, q):
    return chain.fk(q, 'link4')[1, 3]


def test_pole_side_from_random_seeds_in_the_plane_of_symmetry(ik7):
    # Both elbow sides are exact solutions here; an elbow pointing up but a little to the wrong side
    # (y = -0.028 for a pole at y = +1) must not count as the pole's side.
    rng = np.random.default_rng(1)
    on_side = 0
    for i in range(40):
        side = 1 if i % 2 else -1
        solver = IKSolver(ik7, nullspace=_pole(side), random_seed=i, timeout=0.05)   # generous: shared machine
        r = solver.solve(TARGET, ik7.random_configuration(rng))
        assert r.success and r.position_error < 1e-5 and r.orientation_error < 1e-5
        assert r.message == ''
        on_side += np.sign(_elbow_y(ik7, r.joints)) == side
    assert on_side >= 0.99 * 40


def _elbow_left_only(chain):
    """ik7 whose joint 1 turns only clockwise and joint 2 leans only forward: the elbow has y < 0.

    The elbow point is the shoulder plus Rz(q1) Ry(q2) (0, 0, 0.42), so y = 0.42 sin(q1) sin(q2) < 0.
    """
    joints = list(chain.joints)
    joints[0] = replace(joints[0], lower=-0.8, upper=-0.02)
    joints[1] = replace(joints[1], lower=0.02, upper=2.0)
    return replace(chain, joints=joints)


def test_unreachable_pole_side_is_reported(ik7):
    chain = _elbow_left_only(ik7)
    rng = np.random.default_rng(3)
    seeds = chain.random_configuration(rng, 4)
    for side, message in ((1, 'pole_side_unreachable'), (-1, '')):
        solver = IKSolver(chain, nullspace=_pole(side), timeout=0.2)   # a loaded machine leaves few attempts in 20 ms
        for seed in seeds:
            r = solver.solve(TARGET, seed)
            assert r.success and r.position_error < 1e-5 and r.orientation_error < 1e-5
            assert r.reason == 'success'
            assert _elbow_y(chain, r.joints) < 0.0
            assert message in r.message and (message or r.message == '')
        batch = solver.solve_batch(TARGET, seeds)
        assert batch.success.all()
        assert batch.pole_side_missed.tolist() == [side == 1] * len(seeds)


def test_no_pole_no_side_flag(ik7):
    rng = np.random.default_rng(4)
    batch = IKSolver(ik7).solve_batch(TARGET, ik7.random_configuration(rng, 3))
    assert batch.success.all() and not batch.pole_side_missed.any()


def test_pole_in_the_reference_plane_picks_the_half_toward_it(ik7):
    # A pole straight above the arm has no left or right: the elbow bends toward it, above the shoulder-tip line.
    pole = np.array([0.3, 0.0, 1.5])
    solver = IKSolver(ik7, nullspace=NullspaceGoals(pole=1.0, pole_link='link4', pole_target=pole), timeout=0.05)
    rng = np.random.default_rng(2)
    for seed in ik7.random_configuration(rng, 20):
        r = solver.solve(TARGET, seed)
        assert r.success and r.message == ''
        shoulder, tip, elbow = (ik7.fk(r.joints, link)[:3, 3] for link in ('link1', None, 'link4'))
        u = (tip - shoulder) / np.linalg.norm(tip - shoulder)
        e, p = elbow - shoulder, pole - shoulder
        assert (e - (e @ u) * u) @ (p - (p @ u) * u) > 0.0
