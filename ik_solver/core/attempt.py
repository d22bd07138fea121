"""One attempt of the solve loop: error -> Jacobian -> step -> clamp -> converged?, in compiled code."""
from numba import njit
from numba.extending import overload
import numpy as np

from . import kinematics as kin
from .clock import monotonic
from .methods import lm_step_into, smallest_singular_value, step_into
from .nullspace import NS_SETTLED, pole_side, secondary_step
from .plan import (
    _variant_of, FP_BOUNDS, FP_CUTOFF, FP_ELBOW_OFFSET, FP_LM_BIAS, FP_MAX_STEP, FP_NS_GAIN, FP_NS_W, FP_POLE, FP_SW,
    FP_TOL_POS, FP_TOL_ROT, IP_BOUNDS, IP_ELBOW, IP_MAX_ITER, IP_METHOD, IP_NS_ITERS, IP_PATIENCE, IP_ROWS,
    IP_TARGET_FRAME, OUT_EVALUATED, OUT_ITERS, OUT_POS, OUT_ROT, OUT_SIGMA, OUT_SIZE, OUT_TASK, OUT_TRUE_POS,
    OUT_TRUE_ROT)
from .transforms import rotation_error

# Attempt outcomes.
CONVERGED, STALLED, MAX_ITER, NOT_FINITE, TIMED_OUT = 0, 1, 2, 3, 4
#: Stall test: an attempt restarts after ``patience`` iterations without the error
#: dropping below PROGRESS x its best; close to the goal (error < NEAR_ERROR) slow
#: but steady progress (NEAR_PROGRESS) still counts, so converging attempts finish.
PROGRESS = 0.9
NEAR_ERROR = 1e-3
NEAR_PROGRESS = 0.99


@njit(cache=True)
def _next_uniform(rng):
    """Splitmix64: a uniform float in [0, 1) from the state rng[0]."""
    rng[0] += np.uint64(0x9E3779B97F4A7C15)
    z = rng[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _seed_rng(rng, seed, index):
    """Set the generator state of batch item ``index`` for ``random_seed`` (item 0 is a single solve)."""
    rng[0] = np.uint64(seed)
    _next_uniform(rng)
    rng[0] ^= np.uint64(index) * np.uint64(0xD1B54A32D192ED03)
    _next_uniform(rng)


@njit(cache=True, inline='always')
def _goal_error(Rt, pt, R, p, fp, ip, e):
    """Task error e (weighted, in the weights' frame, bounds applied).

    Returns (masked pos, masked rot, task error, true pos, true rot): the true
    errors are the norms of the base-frame error on all axes.
    """
    for r in range(3):
        e[r] = pt[r] - p[r]
    w = rotation_error(Rt, R)
    e[3], e[4], e[5] = w[0], w[1], w[2]
    true_pos = np.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    true_rot = np.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5])
    if ip[IP_TARGET_FRAME] or ip[IP_BOUNDS]:
        for block in (0, 3):
            x = Rt[0, 0] * e[block] + Rt[1, 0] * e[block + 1] + Rt[2, 0] * e[block + 2]
            y = Rt[0, 1] * e[block] + Rt[1, 1] * e[block + 1] + Rt[2, 1] * e[block + 2]
            z = Rt[0, 2] * e[block] + Rt[1, 2] * e[block + 1] + Rt[2, 2] * e[block + 2]
            e[block], e[block + 1], e[block + 2] = x, y, z
        if ip[IP_BOUNDS]:
            for r in range(6):
                if abs(e[r]) <= fp[FP_BOUNDS + r]:
                    e[r] = 0.0
        if not ip[IP_TARGET_FRAME]:
            for block in (0, 3):
                x = Rt[0, 0] * e[block] + Rt[0, 1] * e[block + 1] + Rt[0, 2] * e[block + 2]
                y = Rt[1, 0] * e[block] + Rt[1, 1] * e[block + 1] + Rt[1, 2] * e[block + 2]
                z = Rt[2, 0] * e[block] + Rt[2, 1] * e[block + 1] + Rt[2, 2] * e[block + 2]
                e[block], e[block + 1], e[block + 2] = x, y, z
    pe = 0.0
    re = 0.0
    task = 0.0
    for r in range(6):
        sw = fp[FP_SW + r]
        if sw > 0.0:
            if r < 3:
                pe += e[r] * e[r]
            else:
                re += e[r] * e[r]
        e[r] *= sw
        task += e[r] * e[r]
    return np.sqrt(pe), np.sqrt(re), np.sqrt(task), true_pos, true_rot


@njit(cache=True, inline='always')
def _workspace(n, n_var):
    """Work arrays of the iteration.

    (R_out, p_out, a_out: ``frames`` output; J: 6 x n_var; e: 6; A: n_var x n_var and dq: n_var for the step;
    out: an attempt's OUT_* fields, zeroed).  The vectors share one allocation (a slice is free, while
    numba's reshape costs more than an allocation).
    """
    b = np.empty(6 + n_var + OUT_SIZE)
    out = b[6 + n_var:]
    out[:] = 0.0
    return (np.empty((n + 1, 3, 3)), np.empty((n + 1, 3)), np.empty((n, 3)), np.empty((6, n_var)), b[:6],
            np.empty((n_var, n_var)), b[6:6 + n_var], out)


@njit(cache=True, inline='always')
def _task_jacobian(chain, Rt, fp, ip, ws):
    """Weighted task Jacobian (rows in the weights' frame) at the pose in the workspace, in place of its J."""
    p_out, a_out, J = ws[1], ws[2], ws[3]
    n = a_out.shape[0]
    kin.point_jacobian(p_out, a_out, chain[3], chain[4], chain[5], p_out[n], n - 1, J)
    if ip[IP_ROWS]:   # (unit weights in the base frame leave J as it is)
        kin.goal_rows_into(J, Rt, fp[FP_SW:FP_SW + 6], ip[IP_TARGET_FRAME], J)
    return J


@njit(cache=True, inline='always')
def _largest(dq):
    """Largest |dq_i| (NaN if any is NaN, as np.abs(dq).max())."""
    largest = 0.0
    for v in dq:
        a = abs(v)
        if a > largest or a != a:
            largest = a
    return largest


@njit(cache=True)
def _task_rows(Jw, fp):
    """Copy the task rows of Jw, leaving out the rows whose weight is 0 (masked axes)."""
    m = 0
    for r in range(6):
        m += fp[FP_SW + r] > 0.0
    A = np.empty((m, Jw.shape[1]))
    k = 0
    for r in range(6):
        if fp[FP_SW + r] > 0.0:
            A[k] = Jw[r]
            k += 1
    return A


@njit(cache=True)
def _sigma_min(Jw, fp):
    """Smallest singular value of the task rows of Jw (masked rows left out)."""
    return smallest_singular_value(_task_rows(Jw, fp))


@njit(cache=True)
def _exact_sigma(q, chain, T, fp, ip):
    """Smallest singular value (LAPACK SVD) of the task rows of the Jacobian at q, for a result."""
    ws = _workspace(chain[2].shape[0], q.shape[0])
    kin.frames(q, *chain, ws[0], ws[1], ws[2])
    Jw = _task_jacobian(chain, np.ascontiguousarray(T[:3, :3]), fp, ip, ws)
    return np.linalg.svd(_task_rows(Jw, fp))[1][-1]


@njit(cache=True, inline='always')
def _elbow_side(p_out, R_out, a_out, fp, ip, tip):
    """``pole_side`` of the plan's elbow and pole for the frames given, the reference plane through ``tip``."""
    return pole_side(p_out, R_out, a_out, ip[IP_ELBOW], fp[FP_ELBOW_OFFSET:FP_ELBOW_OFFSET + 3],
                     fp[FP_POLE:FP_POLE + 3], tip)


@njit(cache=True)
def _attempt(variant, q, chain, lower, upper, Rt, pt, fp, ip, q_pref, deadline, ws, out):
    """Iterate from q (modified in place) until converged, stalled, max_iter or the deadline.

    out receives the OUT_* fields: masked and true errors, iterations, sigma_min and
    task error, the errors with OUT_EVALUATED set when they belong to the final q.
    After convergence, bounded nullspace steps alternate with re-convergence;
    the last pose that met the tolerance is returned.
    """
    origin_R, origin_p, axis, kind, var, mult, offset = chain
    R_out, p_out, a_out, _, e, A, dq, _ = ws
    n = axis.shape[0]
    n_var = q.shape[0]
    ns_w = fp[FP_NS_W:FP_NS_W + 4]
    ns_iters = ip[IP_NS_ITERS]
    ns_active = ns_w.sum() > 0.0 and ns_iters > 0
    q_conv = q.copy() if ns_active else q   # the last pose within tolerance, kept only with nullspace goals
    have_conv = False
    ns_done = 0
    best = np.inf
    stall = 0
    limit = ip[IP_MAX_ITER] + 3 * ns_iters if ns_active else ip[IP_MAX_ITER]
    status = MAX_ITER
    for it in range(limit + 1):
        kin.frames(q, origin_R, origin_p, axis, kind, var, mult, offset, R_out, p_out, a_out)
        pe, re, task, out[OUT_TRUE_POS], out[OUT_TRUE_ROT] = _goal_error(Rt, pt, R_out[n], p_out[n], fp, ip, e)
        out[OUT_POS], out[OUT_ROT], out[OUT_ITERS], out[OUT_TASK] = pe, re, it, task
        out[OUT_EVALUATED] = 1.0
        if not (np.isfinite(pe) and np.isfinite(re)):
            return NOT_FINITE
        within = pe < fp[FP_TOL_POS] and re < fp[FP_TOL_ROT]
        if within:
            if not ns_active or ns_done >= ns_iters:
                return CONVERGED
            if ns_done == 0 and ip[IP_ELBOW] >= 0 and _elbow_side(p_out, R_out, a_out, fp, ip, p_out[n]) <= 0.0:
                return CONVERGED   # the wrong side: the nullspace steps would not cross over, a restart may
            q_conv[:] = q
            have_conv = True
        if it == limit:
            break
        if it > 0 and monotonic() >= deadline:   # (the first step is the one iteration a solve may overrun)
            status = TIMED_OUT
            break
        Jw = _task_jacobian(chain, Rt, fp, ip, ws)
        if within:
            _secondary(variant, q, chain, lower, upper, fp, ip, q_pref, Jw, Rt, R_out, p_out, a_out, dq)
            ns_done += 1
            if _largest(dq) < NS_SETTLED:
                return CONVERGED
        else:
            _step(variant, Jw, e, fp, ip, A, dq)
            largest = _largest(dq)
            if largest > fp[FP_MAX_STEP]:
                dq *= fp[FP_MAX_STEP] / largest
        for i in range(n_var):
            q[i] = min(upper[i], max(lower[i], q[i] + dq[i]))
        out[OUT_EVALUATED] = 0.0
        if have_conv:
            continue
        err = pe + re
        if err < (NEAR_PROGRESS if err < NEAR_ERROR else PROGRESS) * best:
            best = err
            stall = 0
        else:
            stall += 1
            if stall >= ip[IP_PATIENCE]:
                out[OUT_SIGMA] = _sigma_min(Jw, fp)
                return STALLED
    if have_conv:
        q[:] = q_conv
        kin.frames(q, origin_R, origin_p, axis, kind, var, mult, offset, R_out, p_out, a_out)
        out[OUT_POS], out[OUT_ROT], out[OUT_TASK], out[OUT_TRUE_POS], out[OUT_TRUE_ROT] = _goal_error(
            Rt, pt, R_out[n], p_out[n], fp, ip, e)
        out[OUT_EVALUATED] = 1.0
        return CONVERGED
    out[OUT_SIGMA] = _sigma_min(_task_jacobian(chain, Rt, fp, ip, ws), fp)
    return status


def _step(variant, J, e, fp, ip, A, dq):
    """Write the step of the plan's method into dq (compiled: lm's code only in an lm variant)."""
    step_into(ip[IP_METHOD], J, e, fp, A, dq)


@overload(_step)
def _step_variant(variant, J, e, fp, ip, A, dq):
    if _variant_of(variant.count)[0]:
        return lambda variant, J, e, fp, ip, A, dq: lm_step_into(J, e, fp[FP_LM_BIAS], A, dq)
    return _step


def _secondary(variant, q, chain, lower, upper, fp, ip, q_pref, Jw, Rt, R_out, p_out, a_out, dq):
    """One nullspace step of the goals into dq (compiled only into variants with goals)."""
    dq[:] = secondary_step(q, chain, lower, upper, fp[FP_NS_W:FP_NS_W + 4], fp[FP_NS_GAIN], q_pref,
                           fp[FP_POLE:FP_POLE + 3], ip[IP_ELBOW], fp[FP_ELBOW_OFFSET:FP_ELBOW_OFFSET + 3], Jw, Rt,
                           fp[FP_SW:FP_SW + 6], ip[IP_TARGET_FRAME], fp[FP_CUTOFF], R_out, p_out, a_out)


@overload(_secondary)
def _secondary_variant(variant, q, chain, lower, upper, fp, ip, q_pref, Jw, Rt, R_out, p_out, a_out, dq):
    if _variant_of(variant.count)[1]:
        return _secondary

    def none(variant, q, chain, lower, upper, fp, ip, q_pref, Jw, Rt, R_out, p_out, a_out, dq):
        dq[:] = 0.0   # (unreachable: without goals an attempt ends at convergence)
    return none
