"""The solve loop: FK -> IK -> FK round trips, limits, nullspace goals, restarts, bad input."""
from ik_solver.core.nullspace import NullspaceGoals
from ik_solver.core.solver import IKSolver, SolverOptions, wrap_near
from ik_solver.core.transforms import make_pose, pose_error
import numpy as np
import pytest

METHOD_SETTINGS = {
    'lm': {},
    'dls': {},
    'adaptive_dls': {},
    'pinv': {'max_step': 0.3},
    'transpose': {'max_iterations': 3000, 'patience': 200, 'timeout': 0.5,
                  'position_tolerance': 1e-4, 'orientation_tolerance': 1e-3},
}


def well_conditioned(chain, rng, n, sigma=0.05):
    """Random configurations whose Jacobian's smallest singular value is at least sigma.

    Damped methods converge only linearly, at rate lambda^2 / (sigma^2 + lambda^2),
    toward a near-singular solution: exact round trips are asked of them only away from one.
    """
    Q = chain.random_configuration(rng, 20 * n)
    s = np.linalg.svd(chain.jacobian_batch(Q), compute_uv=False)[:, -1]
    return Q[s >= sigma][:n]


def pose_errors(chain, q, target):
    return pose_error(target, chain.fk(q))


def assert_solution(chain, result, target, pos_tol=1e-5, rot_tol=1e-5):
    assert result.success, result.message
    assert np.all(np.isfinite(result.joints))
    assert chain.within_limits(result.joints)
    pe, re = pose_errors(chain, result.joints, target)
    assert pe < pos_tol and re < rot_tol
    assert result.position_error == pytest.approx(pe, abs=1e-9)


@pytest.mark.parametrize('method', list(METHOD_SETTINGS))
@pytest.mark.parametrize('robot', ['ik7', 'ik6', 'panda', 'mixed'])
def test_round_trip_every_method(method, robot, request, rng):
    chain = request.getfixturevalue(robot)
    settings = dict(METHOD_SETTINGS[method])
    settings.setdefault('timeout', 0.1)
    if robot == 'mixed' and method != 'transpose':
        settings['position_tolerance'] = 1e-6
    solver = IKSolver(chain, method=method, **settings)
    n = 3 if method == 'transpose' else 10
    for target in chain.fk_batch(well_conditioned(chain, rng, n)):
        result = solver.solve(target)
        assert_solution(chain, result, target, settings.get('position_tolerance', 1e-5),
                        settings.get('orientation_tolerance', 1e-5))


def test_transpose_converges_from_nearby_seed(ik7, rng):
    q = ik7.random_configuration(rng) * 0.5
    target = ik7.fk(q)
    result = IKSolver(ik7, method='transpose', **METHOD_SETTINGS['transpose']).solve(target, q + 0.05)
    assert_solution(ik7, result, target, 1e-4, 1e-3)


def test_default_solver_success_rate_on_random_targets(panda, rng):
    solver = IKSolver(panda, timeout=0.05)   # generous: the test machine is shared
    targets = panda.fk_batch(panda.random_configuration(rng, 200))
    results = solver.solve_batch(targets)
    assert results.success.sum() >= 198
    for q, ok, t in zip(results.joints, results.success, targets):
        assert panda.within_limits(q)
        if ok:
            assert pose_errors(panda, q, t)[0] < 1e-5


def test_deterministic_for_a_random_seed(panda, rng):
    targets = panda.fk_batch(panda.random_configuration(rng, 20))
    a = IKSolver(panda, random_seed=7, max_attempts=50, timeout=10).solve_batch(targets)
    b = IKSolver(panda, random_seed=7, max_attempts=50, timeout=10).solve_batch(targets)
    np.testing.assert_array_equal(a.joints, b.joints)
    np.testing.assert_array_equal(a.iterations, b.iterations)


def test_position_only_mask(ik7, rng):
    q = ik7.random_configuration(rng)
    target = make_pose(ik7.fk(q)[:3, 3], [0.3, 0.1, 0.7, 0.2])  # an orientation it need not reach
    result = IKSolver(ik7, weights=(1, 1, 1, 0, 0, 0)).solve(target)
    assert result.success
    assert pose_errors(ik7, result.joints, target)[0] < 1e-5


def test_planar_arm_position_only_matches_geometry(planar3):
    target = make_pose([0.6, 0.5, 0.0])
    result = IKSolver(planar3, weights=(1, 1, 0, 0, 0, 0)).solve(target)
    assert result.success
    np.testing.assert_allclose(planar3.fk(result.joints)[:2, 3], [0.6, 0.5], atol=1e-5)


def test_unreachable_target_fails_with_reason_and_best_approximation(ik7):
    target = make_pose([1.3, 0.0, 0.36], [0.0, 0.7071067811865476, 0.0, 0.7071067811865476])
    result = IKSolver(ik7, timeout=1.0).solve(target)
    assert not result.success and result.reason == 'unreachable'
    assert result.restarts < 4  # it does not spend the timeout on a target it cannot reach
    assert ik7.within_limits(result.joints) and np.all(np.isfinite(result.joints))
    # The best approximation stretches toward the target: 1.3 m minus the reach from the shoulder.
    reach_from_shoulder = 1.306 - 0.36
    assert result.position_error == pytest.approx(1.3 - reach_from_shoulder, abs=0.02)


def test_unsolvable_within_reach_times_out_within_limits(ik7):
    # Inside the reach sphere but pointing the flange into the base column: no solution.
    target = make_pose([0.0, 0.0, 0.05], [1.0, 0.0, 0.0, 0.0])
    result = IKSolver(ik7, timeout=0.01).solve(target)
    assert not result.success
    assert result.reason in ('timeout', 'joint_limits', 'singular')
    assert 'best error' in result.message
    assert ik7.within_limits(result.joints) and np.all(np.isfinite(result.joints))
    assert result.elapsed < 0.05


def test_closest_mode_minimises_largest_joint_move(ik7, rng):
    seed = ik7.random_configuration(rng) * 0.5
    target = ik7.fk(ik7.random_configuration(rng) * 0.5)
    first = IKSolver(ik7, timeout=0.05).solve(target, seed)
    closest = IKSolver(ik7, mode='closest', timeout=0.05).solve(target, seed)
    assert closest.success and first.success
    assert np.abs(closest.joints - seed).max() <= np.abs(first.joints - seed).max() + 1e-12
    assert closest.restarts > 0


def test_continuous_joint_stays_near_seed(ik6, rng):
    q = ik6.random_configuration(rng)
    target = ik6.fk(q)
    seed = q.copy()
    seed[5] += 4 * np.pi + 0.1  # the same angle, two turns away
    result = IKSolver(ik6).solve(target, seed)
    assert result.success
    assert abs(result.joints[5] - seed[5]) <= np.pi
    np.testing.assert_allclose(wrap_near(np.array([0.1]), np.array([6.3]), np.array([True])), [0.1 + 2 * np.pi])


def test_nullspace_posture_moves_elbow_not_hand(ik7):
    q = np.array([0.3, 0.6, 0.0, -1.2, 0.2, 0.8, 0.1])
    target = ik7.fk(q)
    q_pref = q + np.array([0, 0, 1.0, 0, 0, 0, 0])
    plain = IKSolver(ik7).solve(target, q)
    goals = NullspaceGoals(posture=1.0, q_pref=q_pref, iterations=200)
    shaped = IKSolver(ik7, nullspace=goals, timeout=0.5).solve(target, q)   # generous: the machine is shared
    assert_solution(ik7, shaped, target)
    # With q as seed the plain solve stays put; the posture goal moves joint 3 toward q_pref.
    assert np.linalg.norm(shaped.joints - q_pref) < np.linalg.norm(plain.joints - q_pref) - 0.2


BENT = np.array([0.0, 0.6, 0.0, -1.4, 0.0, 0.9, 0.0])  # ik7 elbow bent forward, in the xz-plane


@pytest.mark.parametrize('side', [1.0, -1.0])
def test_pole_target_puts_elbow_on_requested_side(ik7, side):
    target = ik7.fk(BENT)
    assert abs(ik7.fk(BENT, 'link4')[1, 3]) < 1e-12
    pole = [0.3, side * 1.0, 0.6]
    goals = NullspaceGoals(pole=1.0, pole_link='link4', pole_target=pole, iterations=300)
    result = IKSolver(ik7, nullspace=goals, timeout=0.05).solve(target, BENT)
    assert_solution(ik7, result, target)
    elbow = ik7.fk(result.joints, 'link4')[:3, 3]
    assert side * elbow[1] > 0.1


def _limit_cost(chain, q):
    x = (q - 0.5 * (chain.lower + chain.upper)) / (0.5 * (chain.upper - chain.lower))
    return np.sum(x ** 4) / 4


def test_limit_avoidance_lowers_limit_cost(ik7, rng):
    lowered = 0
    for q in ik7.random_configuration(rng, 10):
        target = ik7.fk(q)
        result = IKSolver(ik7, nullspace=NullspaceGoals(limits=1.0, iterations=300), timeout=0.5).solve(target, q)
        assert_solution(ik7, result, target)
        assert _limit_cost(ik7, result.joints) <= _limit_cost(ik7, q) + 1e-9
        lowered += _limit_cost(ik7, result.joints) < _limit_cost(ik7, q) - 1e-3
    assert lowered >= 5


def test_manipulability_goal_increases_manipulability(planar3):
    # Position-only in the plane: 3 joints for 2 task coordinates leave one redundant.
    from ik_solver.core.nullspace import manipulability
    weights = (1, 1, 0, 0, 0, 0)
    q = np.array([0.2, 0.3, 2.0])  # folded: the self-motion can open it up
    target = planar3.fk(q)
    goals = NullspaceGoals(manipulability=5.0, iterations=300)
    # A timeout far beyond the 300 goal steps: a loaded CPU, or kernels still running interpreted while they
    # compile, must not cut them short (the seed already solves; the goal steps end the solve, not the timeout).
    result = IKSolver(planar3, weights=weights, nullspace=goals, timeout=30.0).solve(target, q)
    assert result.success
    np.testing.assert_allclose(planar3.fk(result.joints)[:2, 3], target[:2, 3], atol=1e-5)
    m = lambda x: manipulability(planar3.jacobian(x)[:2])  # noqa: E731
    assert m(result.joints) > 1.2 * m(q)


@pytest.mark.parametrize('target,match', [
    (np.full((4, 4), np.nan), 'NaN or inf'),
    (make_pose([np.inf, 0, 0]), 'NaN or inf'),
    (np.diag([1.0, 1.0, 2.0, 1.0]), 'not orthonormal'),
    (np.diag([1.0, 1.0, -1.0, 1.0]), 'reflection'),
    (np.eye(3), '4x4'),
])
def test_bad_target_raises(ik7, target, match):
    with pytest.raises(ValueError, match=match):
        IKSolver(ik7).solve(target)


def test_zero_and_nan_quaternions_raise():
    with pytest.raises(ValueError, match='zero quaternion'):
        make_pose([0, 0, 0], [0, 0, 0, 0])
    with pytest.raises(ValueError, match='NaN'):
        make_pose([0, 0, 0], [0, np.nan, 0, 1])
    np.testing.assert_allclose(make_pose([0, 0, 0], [0, 0, 0, 2.0]), np.eye(4))


@pytest.mark.parametrize('seed,match', [
    (np.zeros(6), r'seed must be a vector of 7 joint positions .* got shape \(6,\)'),
    (np.zeros((1, 7)), r'got shape \(1, 7\)'),
    (np.full(7, np.nan), 'NaN or inf for joint1, joint2'),
    (np.array([0, 0, 0, 0, 0, 0, 4.0]), 'outside the joint limits for joint7'),
])
def test_bad_seed_raises(ik7, seed, match):
    with pytest.raises(ValueError, match=match):
        IKSolver(ik7).solve(np.eye(4), seed)


@pytest.mark.parametrize('options,match', [
    ({'method': 'newton'}, 'unknown IK method'),
    ({'timeout': 0.0}, 'timeout'),
    ({'position_tolerance': float('nan')}, 'position_tolerance'),
    ({'weights': (0, 0, 0, 0, 0, 0)}, 'weights'),
    ({'mode': 'best'}, 'mode'),
    ({'nullspace': NullspaceGoals(pole=1.0)}, 'pole_link'),
    ({'nullspace': NullspaceGoals(pole=1.0, pole_link='nope', pole_target=[0, 0, 0])}, 'nope'),
])
def test_bad_options_raise(ik7, options, match):
    with pytest.raises(ValueError, match=match):
        IKSolver(ik7, **options)
    with pytest.raises(ValueError, match=match):
        IKSolver(ik7).solve(ik7.fk(np.zeros(7)), **options)


def test_batch_many_seeds_one_target(ik7, rng):
    target = ik7.fk(ik7.random_configuration(rng))
    seeds = ik7.random_configuration(rng, 5)
    results = IKSolver(ik7).solve_batch(target, seeds)
    assert len(results) == 5 and results.success.all()


def test_options_are_a_dataclass_with_defaults():
    opts = SolverOptions()
    assert opts.method == 'lm' and opts.timeout == 0.005
    assert opts.position_tolerance == 1e-5 and opts.orientation_tolerance == 1e-5
