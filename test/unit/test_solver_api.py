"""The solver's API contract: honest errors, one spelling for masks, modes, collision hook, reasons, bad input."""
import time

from ik_solver.core.clock import monotonic
from ik_solver.core.nullspace import manipulability, NullspaceGoals
from ik_solver.core.solver import IKSolver, REASONS
from ik_solver.core.transforms import make_pose, pose_error
import numpy as np
import pytest


def _linf(a, b):
    return float(np.abs(a - b).max())


def test_kernel_clock_is_pythons_perf_counter():
    before = time.perf_counter()
    inside = monotonic()
    after = time.perf_counter()
    assert before <= inside <= after


def test_masked_axes_report_true_errors(ik7, rng):
    q = ik7.random_configuration(rng)
    position = ik7.fk(q)[:3, 3]
    target = make_pose(position, [1.0, 0.0, 0.0, 0.0])   # an orientation far from most solutions
    result = IKSolver(ik7, timeout=0.5).solve(target, weights=(1, 1, 1, 0, 0, 0))
    assert result.success
    true_position, true_rotation = pose_error(target, ik7.fk(result.joints))
    assert result.position_error == pytest.approx(true_position, abs=1e-12)
    assert result.orientation_error == pytest.approx(true_rotation, abs=1e-9)
    assert result.task_error < 1e-5 * np.sqrt(3)
    # Orientation only: the position error is the true distance, far from zero.
    far = make_pose(position + [0.3, 0.0, 0.0], ik7.fk(q)[:3, :3])
    result = IKSolver(ik7, timeout=0.5, orientation_only=True).solve(far, q)
    assert result.success and result.orientation_error < 1e-5
    assert result.position_error == pytest.approx(pose_error(far, ik7.fk(result.joints))[0], abs=1e-12)
    assert result.position_error > 0.1


def test_position_only_spellings_agree(ik7, rng):
    q = ik7.random_configuration(rng)
    p = ik7.fk(q)[:3, 3]
    solver = IKSolver(ik7, timeout=0.5)
    a = solver.solve(p)                                   # a 3-vector target means position only
    b = solver.solve(make_pose(p), position_only=True)
    c = solver.solve(make_pose(p), weights=(1, 1, 1, 0, 0, 0))
    assert a.success and b.success and c.success
    np.testing.assert_array_equal(a.joints, b.joints)
    np.testing.assert_array_equal(b.joints, c.joints)
    assert np.linalg.norm(ik7.fk(a.joints)[:3, 3] - p) < 1e-5
    with pytest.raises(ValueError, match='exclude each other'):
        solver.solve(p, orientation_only=True)


def test_sigma_min_on_every_result(ik7, rng):
    solver = IKSolver(ik7, timeout=0.01)
    q = ik7.random_configuration(rng)
    ok = solver.solve(ik7.fk(q))
    assert ok.success
    assert ok.sigma_min == pytest.approx(np.linalg.svd(ik7.jacobian(ok.joints), compute_uv=False)[-1], rel=1e-9)
    failed = solver.solve(make_pose([3.0, 0.0, 0.5]))
    assert not failed.success and np.isfinite(failed.sigma_min) and failed.sigma_min >= 0


def test_success_and_reason_agree_over_random_solves(ik7, rng):
    solver = IKSolver(ik7, timeout=0.002)
    Q = ik7.random_configuration(rng, 100)
    targets = ik7.fk_batch(Q)
    targets[::3, :3, 3] *= 1.6   # some far beyond reach, some just beyond
    for target in targets:
        result = solver.solve(target)
        assert result.success == (result.reason == 'success')
        assert result.reason in REASONS and result.success == (result.message == '')


def test_reach_check_respects_the_mask(planar3):
    # The planar arm cannot leave z = 0, but with z free a target 10 m above the plane is reachable.
    result = IKSolver(planar3, timeout=0.5, weights=(1, 1, 0, 0, 0, 0)).solve(make_pose([0.6, 0.5, 10.0]))
    assert result.success, result.message
    assert result.position_error == pytest.approx(10.0, abs=1e-4)


def test_manipulability_mode_searches_the_timeout_for_the_best_measure(ik7, rng):
    q = ik7.random_configuration(rng) * 0.5
    target = ik7.fk(q)
    first = IKSolver(ik7, timeout=0.05).solve(target, q)
    best = IKSolver(ik7, mode='manipulability', timeout=0.05).solve(target, q)
    assert best.success and best.restarts > 3
    assert best.elapsed >= 0.05
    m = [manipulability(ik7.jacobian(r.joints)) for r in (first, best)]
    assert m[1] >= m[0]


def test_jump_threshold_searches_on_for_the_closest(ik7, rng):
    seed = ik7.random_configuration(rng) * 0.5
    target = ik7.fk(ik7.random_configuration(rng))
    first = IKSolver(ik7, timeout=0.05).solve(target, seed)
    loose = IKSolver(ik7, timeout=0.05, jump_threshold=10.0).solve(target, seed)
    strict = IKSolver(ik7, timeout=0.05, jump_threshold=1e-3).solve(target, seed)
    np.testing.assert_array_equal(first.joints, loose.joints)
    assert strict.success and strict.restarts > first.restarts
    assert _linf(strict.joints, seed) <= _linf(first.joints, seed) + 1e-12


class _Checker:
    """A collision checker stand-in: collides while joint3 > 0 (or always), and records its calls."""

    def __init__(self, always=False):
        self.always = always
        self.calls = []

    def check(self, q):
        self.calls.append(q.copy())
        return ('link2', 'link6') if self.always or q[2] > 0 else None


def test_collision_hook_rejects_colliding_solutions(ik7, rng):
    checker = _Checker()
    solver = IKSolver(ik7, collision=checker, timeout=0.1)
    for _ in range(5):
        q = ik7.random_configuration(rng)
        q[2] = abs(q[2]) + 0.3    # the seed's own solution collides
        result = solver.solve(ik7.fk(q), q)
        assert result.success, result.message
        assert result.joints[2] <= 0
        assert any(np.array_equal(result.joints, c) for c in checker.calls)
    assert any(c[2] > 0 for c in checker.calls)


def test_collision_everywhere_names_the_pair_and_returns_the_seed(ik7, rng):
    q = ik7.random_configuration(rng)
    result = IKSolver(ik7, collision=_Checker(always=True), timeout=0.01).solve(ik7.fk(q), q)
    assert not result.success and result.reason == 'collision'
    assert 'link2' in result.message and 'link6' in result.message
    np.testing.assert_array_equal(result.joints, q)
    assert result.elapsed < 0.5


def test_bad_collision_object_is_refused(ik7):
    with pytest.raises(ValueError, match='check'):
        IKSolver(ik7, collision=object())


@pytest.mark.parametrize('options,match', [
    ({'timeout': '5'}, 'timeout must be a number, got str'),
    ({'random_seed': 2 ** 64}, 'random_seed'),
    ({'random_seed': -1}, 'random_seed'),
    ({'nullspace': None}, 'nullspace must be a NullspaceGoals'),
    ({'max_iterations': 1.5}, 'max_iterations must be an integer'),
    ({'position_only': 'yes'}, 'position_only'),
    ({'weights_frame': 'tool'}, 'weights_frame'),
    ({'bounds': (0, 0, 0)}, 'bounds'),
    ({'bounds': (0, 0, 0, 0, 0, -1)}, 'bounds'),
    ({'jump_threshold': 0.0}, 'jump_threshold'),
    ({'no_such_option': 1}, 'unknown solver option'),
    ({'nullspace': NullspaceGoals(pole=1.0, pole_link='link4', pole_target=[1e300, 0, 0])}, 'pole_target'),
    ({'nullspace': NullspaceGoals(posture=float('inf'))}, 'posture'),
    ({'nullspace': NullspaceGoals(iterations=-1)}, 'iterations'),
])
def test_wrong_types_and_values_raise_value_error(ik7, options, match):
    with pytest.raises(ValueError, match=match):
        IKSolver(ik7, **options)
    with pytest.raises(ValueError, match=match):
        IKSolver(ik7).solve(ik7.fk(np.zeros(7)), **options)


def test_huge_quaternion_is_normalised_not_identity():
    T = make_pose([0, 0, 0], [0.0, 0.0, 1e200, 1e200])   # 90 degrees about z, scaled past float range squared
    np.testing.assert_allclose(T[:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)


def test_strided_and_read_only_arrays_are_accepted(ik7, rng):
    q = ik7.random_configuration(rng)
    T = np.asfortranarray(ik7.fk(q))
    seed = np.repeat(q, 2)[::2]
    seed_ro = q.copy()
    seed_ro.flags.writeable = False
    solver = IKSolver(ik7, timeout=0.5)
    for target, s in ((T, seed), (T, seed_ro)):
        result = solver.solve(target, s)
        assert result.success and result.elapsed < 0.05


def test_timeout_holds_with_heavy_legal_options(ik7, rng):
    goals = NullspaceGoals(manipulability=1.0, iterations=10000)
    heavy = IKSolver(ik7, nullspace=goals, max_iterations=10000, timeout=0.005)
    stubborn = IKSolver(ik7, max_iterations=10 ** 6, patience=10 ** 9, timeout=0.005)
    q = ik7.random_configuration(rng)
    for solver, target in ((heavy, ik7.fk(q)), (stubborn, make_pose([0.0, 0.0, 0.05], [1.0, 0, 0, 0]))):
        result = solver.solve(target, q)
        assert result.elapsed < 0.005 + 0.05   # generous: the machine is shared; the benchmark measures 1 ms
