"""The compiled batch: arrays out, invalid items isolated, deterministic whatever the thread count."""
from ik_solver.core.solver import IKSolver
from ik_solver.core.transforms import pose_error
import numba
import numpy as np
import pytest


def test_batch_matches_fk_and_reports_true_errors(ik7, rng):
    targets = ik7.fk_batch(ik7.random_configuration(rng, 64))
    result = IKSolver(ik7, timeout=0.05).solve_batch(targets)
    assert result.joints.shape == (64, 7) and result.success.all()
    for q, t, pe, re in zip(result.joints, targets, result.position_error, result.orientation_error):
        assert ik7.within_limits(q)
        true_pe, true_re = pose_error(t, ik7.fk(q))
        assert pe == pytest.approx(true_pe, abs=1e-12) and re == pytest.approx(true_re, abs=1e-9)
        assert true_pe < 1e-5 and true_re < 1e-5
    assert np.all(result.iterations >= 0) and np.all(result.sigma_min > 0)


def test_invalid_items_do_not_abort_the_batch(ik7, rng):
    Q = ik7.random_configuration(rng, 6)
    targets = ik7.fk_batch(Q)
    seeds = ik7.random_configuration(rng, 6)
    seeds[1, 6] = ik7.upper[6] + 0.01          # 0.01 rad outside a limit
    seeds[2, 0] = np.nan
    targets[3, 0, 0] = 2.0                      # not a rotation
    targets[4, 0, 3] = np.inf
    result = IKSolver(ik7, timeout=0.05).solve_batch(targets, seeds)
    assert result.reasons[1:5] == ['invalid_input'] * 4
    assert list(result.success) == [True, False, False, False, False, True]
    assert np.all(np.isfinite(result.joints))


def test_position_only_batch_from_positions(ik7, rng):
    P = ik7.fk_batch(ik7.random_configuration(rng, 16))[:, :3, 3]
    result = IKSolver(ik7, timeout=0.05).solve_batch(P)
    assert result.success.all()
    np.testing.assert_allclose(result.position_error, np.linalg.norm(
        ik7.fk_batch(result.joints)[:, :3, 3] - P, axis=1), atol=1e-12)
    assert result.position_error.max() < 1e-5


def test_deterministic_whatever_the_thread_count(panda, rng):
    targets = panda.fk_batch(panda.random_configuration(rng, 40))
    solver = IKSolver(panda, max_attempts=20, timeout=10.0, random_seed=3)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = solver.solve_batch(targets)
        numba.set_num_threads(threads)
        many = solver.solve_batch(targets)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(one.joints, many.joints)
    np.testing.assert_array_equal(one.iterations, many.iterations)


def test_batch_item_equals_a_single_solve_for_item_zero(ik7, rng):
    target = ik7.fk(ik7.random_configuration(rng))
    solver = IKSolver(ik7, max_attempts=30, timeout=10.0)
    batch = solver.solve_batch(target[None])
    single = solver.solve(target)
    np.testing.assert_array_equal(batch.joints[0], single.joints)


def test_shape_errors_raise(ik7):
    solver = IKSolver(ik7)
    with pytest.raises(ValueError, match='seeds must be'):
        solver.solve_batch(np.broadcast_to(np.eye(4), (3, 4, 4)), np.zeros((2, 7)))
    with pytest.raises(ValueError, match='targets must be'):
        solver.solve_batch(np.zeros((3, 4, 5)))


@pytest.mark.parametrize('targets, seeds', [('one pose', None), ('one pose', 'one seed'), ('one pose', 'two seeds'),
                                            ('two positions', None)])
def test_batch_arrays_are_writeable_whatever_was_broadcast(ik7, rng, targets, seeds):
    """A broadcast row is contiguous but read-only: numba would compile a read-only kernel variant for it."""
    from ik_solver.core.batch import batch_arrays
    q = ik7.random_configuration(rng)
    T = {'one pose': ik7.fk(q)[None], 'two positions': np.stack([ik7.fk(q)[:3, 3]] * 2)}[targets]
    S = {None: None, 'one seed': q, 'two seeds': np.stack([q, q])}[seeds]
    if seeds == 'two seeds':
        T = T[0]
    T_out, S_out, _ = batch_arrays(ik7, T, S)
    for array in (T_out, S_out):
        assert array.flags.c_contiguous and array.flags.writeable
    assert S_out.shape == (len(T_out), ik7.n)
