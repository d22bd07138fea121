"""Jacobian step methods: each solves J dq = e for one iteration.

Every method is a small function of (J, e, parameters) -> dq, compiled by
numba so the solve loop can call it without leaving machine code; each is also
callable from Python with numpy arrays.  J and e arrive already multiplied by
the square root of the task weights, so masks need no special case.

With the SVD J = sum_i sigma_i u_i v_i^T, the methods differ only in the gain
they give each singular direction:

=============  ==========================  ===================================
method         gain on u_i^T e             behaviour
=============  ==========================  ===================================
transpose      alpha * sigma_i             gradient descent; bounded, slow
pinv           1 / sigma_i                 exact for full rank; explodes as
                                           sigma -> 0 (0.1 / 0.05 = 2 rad)
dls            sigma / (sigma^2 + l^2)     bounded by 1 / (2 l)
adaptive_dls   as dls, l = 0 far from      exact away from singularities,
               singularities               damped near them
lm (default)   sigma / (sigma^2 + E + wb)  damping shrinks with the error
=============  ==========================  ===================================
"""
from numba import njit
import numpy as np

TRANSPOSE = 0
PINV = 1
DLS = 2
ADAPTIVE_DLS = 3
LM = 4

#: Method names accepted by the solver, in the order of their ids.
METHOD_NAMES = ('transpose', 'pinv', 'dls', 'adaptive_dls', 'lm')


def method_id(name):
    """Id of a method name; ValueError lists the valid names."""
    try:
        return METHOD_NAMES.index(name)
    except ValueError:
        raise ValueError(f"unknown IK method '{name}'; choose one of {', '.join(METHOD_NAMES)}") from None


@njit(cache=True)
def factor_in_place(A, floor=1e-300):
    """Overwrite the lower triangle of a symmetric positive (semi)definite A with its Cholesky factor L.

    Pivots below ``floor`` (> 0) are raised to it; the strict upper triangle is not touched.

    Returns:
        The smallest pivot before that floor.  Every pivot bounds the smallest
        eigenvalue from above, so one at or below ``floor`` means A is singular
        to that precision (and the factor past it is meaningless).
    """
    n = A.shape[0]
    smallest = np.inf
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            if i == j:
                smallest = min(smallest, s)
                A[i, i] = np.sqrt(max(s, floor))
            else:
                A[i, j] = s / A[j, j]
    return smallest


@njit(cache=True)
def substitute_in_place(L, b):
    """Overwrite b with x solving L L^T x = b (forward, then back substitution; L's lower triangle)."""
    n = L.shape[0]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s / L[i, i]


@njit(cache=True)
def cholesky(A, floor=1e-300):
    """Lower Cholesky factor of a symmetric positive (semi)definite A; pivots below ``floor`` are raised to it."""
    L = A.copy()
    factor_in_place(L, floor)
    for i in range(L.shape[0]):
        L[i, i + 1:] = 0.0
    return L


@njit(cache=True)
def cholesky_solve(L, b):
    """Solve L L^T x = b by forward and back substitution."""
    x = b.copy()
    substitute_in_place(L, x)
    return x


@njit(cache=True)
def solve_spd(A, b):
    """Solve A x = b for a symmetric positive definite A by Cholesky (small n, no LAPACK call)."""
    return cholesky_solve(cholesky(A), b)


@njit(cache=True)
def transpose_step(J, e, alpha):
    """Transpose: dq = alpha J^T e, gradient descent on 1/2 |e|^2.

    alpha <= 0 selects Buss's step alpha = <e, J J^T e> / <J J^T e, J J^T e>,
    the exact line minimum along J^T e for a linear model.
    """
    g = J.T @ e
    if alpha <= 0.0:
        JJte = J @ g
        denom = JJte @ JJte
        alpha = (e @ JJte) / denom if denom > 1e-300 else 0.0
    return alpha * g


@njit(cache=True)
def pinv_step(J, e, cutoff):
    """Pseudo-inverse: dq = J^+ e by SVD; singular values below ``cutoff`` are treated as zero."""
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    dq = np.zeros(J.shape[1])
    for i in range(s.shape[0]):
        if s[i] > cutoff:
            dq += (U[:, i] @ e) / s[i] * Vt[i]
    return dq


@njit(cache=True)
def dls_step(J, e, damping):
    """Damped least squares: dq = J^T (J J^T + lambda^2 I)^-1 e (Levenberg-Marquardt, fixed lambda)."""
    A = J @ J.T
    for i in range(A.shape[0]):
        A[i, i] += damping * damping
    return J.T @ solve_spd(A, e)


@njit(cache=True)
def adaptive_damping(sigma_min, damping_max, epsilon):
    """Damping by KDL's rule (ChainIkSolverVel_wdls).

    lambda^2 = lambda_max^2 (1 - (sigma_min/eps)^2) below eps, else 0.
    """
    if not sigma_min < epsilon:   # (also epsilon 0, where the ratio below would divide by zero)
        return 0.0
    r = sigma_min / epsilon
    return damping_max * np.sqrt(1.0 - r * r)


@njit(cache=True)
def adaptive_dls_step(J, e, damping_max, epsilon):
    """DLS whose lambda grows only as the smallest singular value drops below epsilon."""
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    lam = adaptive_damping(s[-1], damping_max, epsilon)
    dq = np.zeros(J.shape[1])
    for i in range(s.shape[0]):
        d = s[i] * s[i] + lam * lam
        if d > 1e-24:
            dq += s[i] / d * (U[:, i] @ e) * Vt[i]
    return dq


@njit(cache=True)
def lm_step(J, e, w_bias):
    """Sugihara's Levenberg-Marquardt: dq = (J^T J + (E + w_bias) I)^-1 J^T e, E = 1/2 |e|^2.

    The damping is large far from the goal (robust, gradient-like steps) and
    falls to ``w_bias`` near it (Gauss-Newton convergence), with no tuning per robot.
    """
    n = J.shape[1]
    g = np.empty(n)
    lm_step_into(J, e, w_bias, np.empty((n, n)), g)
    return g


@njit(cache=True)
def lm_step_into(J, e, w_bias, A, g):
    """``lm_step`` with its work matrix A (n x n, overwritten) given, the step written into g."""
    m, n = J.shape
    E = 0.0
    for r in range(m):
        E += 0.5 * e[r] * e[r]
    for i in range(n):   # A: lower triangle only, factored and solved in place
        for j in range(i + 1):
            s = 0.0
            for r in range(m):
                s += J[r, i] * J[r, j]
            A[i, j] = s
        A[i, i] += E + w_bias
        s = 0.0
        for r in range(m):
            s += J[r, i] * e[r]
        g[i] = s
    factor_in_place(A)
    substitute_in_place(A, g)


@njit(cache=True)
def step(method, J, e, gains):
    """Dispatch to a method; ``gains`` holds their parameters by name (``kernel_data.StepGains``)."""
    if method == TRANSPOSE:
        return transpose_step(J, e, gains.alpha)
    if method == PINV:
        return pinv_step(J, e, gains.cutoff)
    if method == DLS:
        return dls_step(J, e, gains.damping)
    if method == ADAPTIVE_DLS:
        return adaptive_dls_step(J, e, gains.damping_max, gains.epsilon)
    return lm_step(J, e, gains.lm_bias)


@njit(cache=True)
def step_into(method, J, e, gains, A, dq):
    """``step`` written into dq; lm, the default, uses the work matrix A (n x n) and allocates nothing."""
    if method == LM:
        lm_step_into(J, e, gains.lm_bias, A, dq)
    else:
        dq[:] = step(method, J, e, gains)


@njit(cache=True)
def symmetric_eigen(A, vectors=True, sweeps=12):
    """Eigenvalues and eigenvectors (columns) of a small symmetric matrix by cyclic Jacobi rotations.

    For the 6 x 6 Gram matrices of a Jacobian this is cheaper than a LAPACK
    SVD call from numba, and accurate to rounding (Numerical Recipes' update).
    """
    k = A.shape[0]
    A = A.copy()
    V = np.eye(k)
    for _ in range(sweeps):
        off = 0.0
        scale = 0.0
        for i in range(k):
            scale += A[i, i] * A[i, i]
            for j in range(i + 1, k):
                off += A[i, j] * A[i, j]
        if off <= 1e-26 * scale or off < 1e-300:
            break
        for p in range(k - 1):
            for q in range(p + 1, k):
                apq = A[p, q]
                if abs(apq) < 1e-300:
                    continue
                theta = 0.5 * (A[q, q] - A[p, p]) / apq
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + np.sqrt(theta * theta + 1.0))
                c = 1.0 / np.sqrt(t * t + 1.0)
                s = t * c
                A[p, p] -= t * apq
                A[q, q] += t * apq
                A[p, q] = 0.0
                A[q, p] = 0.0
                for r in range(k):
                    if r != p and r != q:
                        arp = A[r, p]
                        arq = A[r, q]
                        A[r, p] = c * arp - s * arq
                        A[p, r] = A[r, p]
                        A[r, q] = s * arp + c * arq
                        A[q, r] = A[r, q]
                if vectors:
                    for r in range(k):
                        vrp = V[r, p]
                        vrq = V[r, q]
                        V[r, p] = c * vrp - s * vrq
                        V[r, q] = s * vrp + c * vrq
    w = np.empty(k)
    for i in range(k):
        w[i] = A[i, i]
    return w, V


#: Smallest Cholesky pivot of a unit-trace Gram matrix that counts as non-singular (sigma ratio 1e-16).
RELATIVE_PIVOT_FLOOR = 1e-32


@njit(cache=True)
def _gram(J):
    """J J^T if J is wide, else J^T J: the smaller Gram matrix (explicit loops: no BLAS call overhead)."""
    m, n = J.shape
    wide = m <= n
    k, inner = (m, n) if wide else (n, m)
    G = np.empty((k, k))
    for i in range(k):
        for j in range(i + 1):
            s = 0.0
            for r in range(inner):
                s += J[i, r] * J[j, r] if wide else J[r, i] * J[r, j]
            G[i, j] = s
            G[j, i] = s
    return G


@njit(cache=True)
def smallest_singular_value(J, iterations=8):
    """Estimate of the smallest of the min(m, n) singular values of J, for the solver's stall diagnosis.

    Inverse iteration on the smaller Gram matrix G, scaled to unit trace: the
    Rayleigh quotient is never below lambda_min(G) and its excess shrinks with
    the eigenvalue ratios (about 2 % at worst after 8 iterations), far cheaper
    than an SVD.  A Cholesky pivot below 1e-32 (relative) bounds lambda_min
    below it too, so such a G (coinciding joint axes, a stretched arm) is
    singular: 0 then, as inverse iteration on a floored factor overflows.
    """
    G = _gram(J)
    k = G.shape[0]
    trace = 0.0
    for i in range(k):
        trace += G[i, i]
    if not 0.0 < trace < np.inf:
        return 0.0
    G /= trace
    L = G.copy()
    if factor_in_place(L, RELATIVE_PIVOT_FLOOR) <= RELATIVE_PIVOT_FLOOR:
        return 0.0
    x = np.empty(k)
    for i in range(k):
        x[i] = 1.0 + 0.37 * i
    for _ in range(iterations):   # x <- G^-1 x, normalised by its largest entry (cannot overflow: see above)
        substitute_in_place(L, x)
        largest = 0.0
        for i in range(k):
            largest = max(largest, abs(x[i]))
        for i in range(k):
            x[i] /= largest
    norm2 = 0.0
    quotient = 0.0
    for i in range(k):
        norm2 += x[i] * x[i]
        for j in range(k):
            quotient += x[i] * G[i, j] * x[j]
    return np.sqrt(max(quotient / norm2 * trace, 0.0))


@njit(cache=True)
def nullspace_projector(J, cutoff):
    """N = I - J^+ J: joint motions that leave the task unchanged (to first order).

    J^+ J = sum v_i v_i^T over the right singular vectors with sigma_i > cutoff,
    v_i = J^T u_i / sigma_i from the eigenvectors u_i of J J^T.
    """
    n = J.shape[1]
    w, U = symmetric_eigen(J @ J.T)
    N = np.eye(n)
    for i in range(w.shape[0]):
        if w[i] > cutoff * cutoff:
            v = np.zeros(n)
            for r in range(J.shape[0]):
                v += U[r, i] * J[r]
            v /= np.sqrt(w[i])
            for r in range(n):
                for c in range(n):
                    N[r, c] -= v[r] * v[c]
    return N
