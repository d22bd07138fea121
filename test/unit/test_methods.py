"""The step methods on closed-form cases, including the seed's singular worked example."""
from ik_solver.core.methods import (adaptive_damping, adaptive_dls_step, dls_step, lm_step, method_id,
                                    nullspace_projector, pinv_step, smallest_singular_value, symmetric_eigen,
                                    transpose_step)
import numpy as np
import pytest


def _diag_jacobian(sigmas, n):
    J = np.zeros((len(sigmas), n))
    J[np.arange(len(sigmas)), np.arange(len(sigmas))] = sigmas
    return J


def test_worked_example_near_singularity():
    # sigma = 0.05, e = 0.1, lambda = 0.1: pinv steps 0.1 / 0.05 = 2 rad,
    # DLS steps 0.05 * 0.1 / (0.05^2 + 0.1^2) = 0.4 rad.
    J = _diag_jacobian([1.0, 0.05], 2)
    e = np.array([0.0, 0.1])
    assert np.isclose(np.abs(pinv_step(J, e, 1e-9)).max(), 2.0)
    assert np.isclose(np.abs(dls_step(J, e, 0.1)).max(), 0.4)


def test_dls_equals_svd_filter_formula(rng):
    J = rng.normal(size=(6, 7))
    e = rng.normal(size=6)
    lam = 0.3
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    expected = Vt.T @ (s / (s ** 2 + lam ** 2) * (U.T @ e))
    np.testing.assert_allclose(dls_step(J, e, lam), expected, atol=1e-12)


def test_pinv_equals_numpy_pinv(rng):
    J = rng.normal(size=(6, 7))
    e = rng.normal(size=6)
    np.testing.assert_allclose(pinv_step(J, e, 1e-9), np.linalg.pinv(J) @ e, atol=1e-12)


def test_pinv_cutoff_drops_small_sigma():
    J = _diag_jacobian([1.0, 1e-8], 2)
    np.testing.assert_allclose(pinv_step(J, np.array([0.2, 0.1]), 1e-6), [0.2, 0.0])


def test_transpose_fixed_gain_and_buss_step(rng):
    J = rng.normal(size=(6, 6))
    e = rng.normal(size=6)
    np.testing.assert_allclose(transpose_step(J, e, 0.5), 0.5 * J.T @ e)
    # Buss's alpha minimises |e - J dq| along J^T e: the residual is orthogonal to J J^T e.
    dq = transpose_step(J, e, 0.0)
    jjte = J @ J.T @ e
    assert abs((e - J @ dq) @ jjte) < 1e-9 * np.linalg.norm(jjte) * np.linalg.norm(e)


def test_adaptive_damping_rule():
    assert adaptive_damping(0.5, 0.1, 0.1) == 0.0
    assert adaptive_damping(0.0, 0.1, 0.1) == pytest.approx(0.1)
    assert adaptive_damping(0.05, 0.1, 0.1) == pytest.approx(0.1 * np.sqrt(0.75))


def test_adaptive_dls_is_exact_far_from_singularity_and_bounded_near(rng):
    J = rng.normal(size=(6, 6)) + 3 * np.eye(6)
    e = rng.normal(size=6)
    assert np.linalg.svd(J, compute_uv=False)[-1] > 0.1
    np.testing.assert_allclose(adaptive_dls_step(J, e, 0.1, 0.1), np.linalg.solve(J, e), atol=1e-10)
    Js = _diag_jacobian([1.0, 1e-4], 2)
    step = adaptive_dls_step(Js, np.array([0.0, 0.1]), 0.1, 0.1)
    assert np.abs(step).max() <= 0.1 / (2 * 0.1 * np.sqrt(1 - 1e-6)) + 1e-9


def test_lm_damping_shrinks_with_error():
    J = _diag_jacobian([1.0, 1.0], 2)
    small = lm_step(J, np.array([1e-3, 0.0]), 1e-4)
    large = lm_step(J, np.array([2.0, 0.0]), 1e-4)
    assert small[0] == pytest.approx(1e-3 / (1 + 0.5e-6 + 1e-4))
    assert large[0] == pytest.approx(2.0 / (1 + 2.0 + 1e-4))


def test_nullspace_projector_leaves_task_unchanged(rng):
    J = rng.normal(size=(6, 7))
    N = nullspace_projector(J, 1e-9)
    np.testing.assert_allclose(J @ N, 0.0, atol=1e-12)
    np.testing.assert_allclose(N @ N, N, atol=1e-12)
    assert np.linalg.matrix_rank(N, 1e-9) == 1


def test_unknown_method_name():
    with pytest.raises(ValueError, match="unknown IK method 'newton'.*transpose"):
        method_id('newton')


@pytest.mark.parametrize('shape', [(6, 7), (6, 6), (3, 7), (6, 3)])
def test_jacobi_eigen_and_smallest_singular_value_match_lapack(rng, shape):
    J = rng.normal(size=shape)
    w, V = symmetric_eigen(J @ J.T)
    np.testing.assert_allclose(np.sort(w), np.linalg.eigvalsh(J @ J.T), atol=1e-10)
    np.testing.assert_allclose(V @ np.diag(w) @ V.T, J @ J.T, atol=1e-10)
    exact = np.linalg.svd(J, compute_uv=False)[-1]
    assert exact - 1e-12 <= smallest_singular_value(J) <= exact * 1.02   # an estimate, never below


def test_nullspace_projector_matches_pseudo_inverse(rng):
    J = rng.normal(size=(6, 7))
    J[5] = 0.0   # a masked row
    np.testing.assert_allclose(nullspace_projector(J, 1e-6), np.eye(7) - np.linalg.pinv(J) @ J, atol=1e-10)
