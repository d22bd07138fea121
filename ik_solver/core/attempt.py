"""One attempt of the solve loop: error -> Jacobian -> step -> clamp -> converged?, in compiled code.

An attempt iterates from one start until it converges, stalls, runs out of
iterations or reaches the deadline (``clock.monotonic``, read every iteration,
so a solve returns within its timeout plus one iteration).  Convergence uses
the weighted, masked error (``goal_error``); the attempt also returns the true
position and orientation error of its final joints.  The kernels read their
data by name (``kernel_data``).
"""
from numba import njit
from numba.extending import overload
import numpy as np

from . import kinematics as kin
from .clock import monotonic
from .kernel_data import Attempt, Frames, Scratch, variant_of
from .methods import lm_step_into, smallest_singular_value, step_into
from .nullspace import goal_step, NS_SETTLED, pole_side
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
def next_uniform(rng):
    """Splitmix64: a uniform float in [0, 1) from the state rng[0]."""
    rng[0] += np.uint64(0x9E3779B97F4A7C15)
    z = rng[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def seed_rng(rng, seed, index):
    """Set the generator state of batch item ``index`` for ``random_seed`` (item 0 is a single solve)."""
    rng[0] = np.uint64(seed)
    next_uniform(rng)
    rng[0] ^= np.uint64(index) * np.uint64(0xD1B54A32D192ED03)
    next_uniform(rng)


@njit(cache=True, inline='always')
def place(q, model, frames):
    """Write the ``kinematics.frames`` of joints q into ``frames`` (a ``Frames``)."""
    kin.frames(q, model.origin_R, model.origin_p, model.axis, model.kind, model.var, model.mult, model.offset,
               frames.R, frames.p, frames.a)


@njit(cache=True, inline='always')
def goal_error(target, R, p, task, e):
    """Task error e (weighted, in the weights' frame, bounds applied) of the tip pose (R, p).

    Returns (masked pos, masked rot, task error, true pos, true rot): the true
    errors are the norms of the base-frame error on all axes.
    """
    return tip_error(target.R, target.p, R, p, task.sw, task.bounds, task.target_frame, task.has_bounds, e)


@njit(cache=True, inline='always')
def tip_error(Rt, pt, R, p, sw, bounds, target_frame, has_bounds, e):
    """``goal_error`` with the ``Target`` and ``Task`` fields given one by one, for the iteration loop.

    Args:
        Rt: the target rotation (3 x 3).
        pt: the target position (3,) [m].
        R: the tip rotation (3 x 3).
        p: the tip position (3,) [m].
        sw: the ``Task`` field of that name.
        bounds: the ``Task`` field of that name.
        target_frame: the ``Task`` field of that name.
        has_bounds: the ``Task`` field of that name.
        e: the 6-vector the error is written into.
    """
    for r in range(3):
        e[r] = pt[r] - p[r]
    w = rotation_error(Rt, R)
    e[3], e[4], e[5] = w[0], w[1], w[2]
    true_pos = np.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
    true_rot = np.sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5])
    if target_frame or has_bounds:
        for block in (0, 3):
            x = Rt[0, 0] * e[block] + Rt[1, 0] * e[block + 1] + Rt[2, 0] * e[block + 2]
            y = Rt[0, 1] * e[block] + Rt[1, 1] * e[block + 1] + Rt[2, 1] * e[block + 2]
            z = Rt[0, 2] * e[block] + Rt[1, 2] * e[block + 1] + Rt[2, 2] * e[block + 2]
            e[block], e[block + 1], e[block + 2] = x, y, z
        if has_bounds:
            for r in range(6):
                if abs(e[r]) <= bounds[r]:
                    e[r] = 0.0
        if not target_frame:
            for block in (0, 3):
                x = Rt[0, 0] * e[block] + Rt[0, 1] * e[block + 1] + Rt[0, 2] * e[block + 2]
                y = Rt[1, 0] * e[block] + Rt[1, 1] * e[block + 1] + Rt[1, 2] * e[block + 2]
                z = Rt[2, 0] * e[block] + Rt[2, 1] * e[block + 1] + Rt[2, 2] * e[block + 2]
                e[block], e[block + 1], e[block + 2] = x, y, z
    pe = 0.0
    re = 0.0
    total = 0.0
    for r in range(6):
        w_r = sw[r]
        if w_r > 0.0:
            if r < 3:
                pe += e[r] * e[r]
            else:
                re += e[r] * e[r]
        e[r] *= w_r
        total += e[r] * e[r]
    return np.sqrt(pe), np.sqrt(re), np.sqrt(total), true_pos, true_rot


@njit(cache=True, inline='always')
def workspace(n, n_var):
    """Return the ``Scratch`` of an iteration for n joints and n_var variables.

    Arrays share allocations where their shapes allow, as each allocation costs
    about as much as a dozen field reads: e and dq, the frames' positions and
    axes, J and A (a slice is free, while numba's reshape costs more than an allocation).
    """
    b = np.empty(6 + n_var)
    points = np.empty((2 * n + 1, 3))
    matrices = np.empty((6 + n_var, n_var))
    frames = Frames(np.empty((n + 1, 3, 3)), points[:n + 1], points[n + 1:])
    return Scratch(frames, matrices[:6], b[:6], matrices[6:], b[6:])


@njit(cache=True, inline='always')
def task_jacobian(model, Rt, task, ws):
    """Weighted task Jacobian (rows in the weights' frame) at the frames in ``ws``, in place of its J."""
    f = ws.frames
    return weighted_jacobian(f.p, f.a, model.kind, model.var, model.mult, Rt, task.sw, task.target_frame,
                             task.weigh_rows, ws.J)


@njit(cache=True, inline='always')
def weighted_jacobian(p, a, kind, var, mult, Rt, sw, target_frame, weigh_rows, J):
    """``task_jacobian`` with the fields given one by one, for the iteration loop: J from the frames' p and a."""
    n = a.shape[0]
    kin.point_jacobian(p, a, kind, var, mult, p[n], n - 1, J)
    if weigh_rows:   # (unit weights in the base frame leave J as it is)
        kin.goal_rows_into(J, Rt, sw, target_frame, J)
    return J


@njit(cache=True, inline='always')
def largest(dq):
    """Largest |dq_i| (NaN if any is NaN, as np.abs(dq).max())."""
    top = 0.0
    for v in dq:
        a = abs(v)
        if a > top or a != a:
            top = a
    return top


@njit(cache=True)
def task_rows(Jw, task):
    """Copy the task rows of Jw, leaving out the rows whose weight is 0 (masked axes)."""
    m = 0
    for r in range(6):
        m += task.sw[r] > 0.0
    A = np.empty((m, Jw.shape[1]))
    k = 0
    for r in range(6):
        if task.sw[r] > 0.0:
            A[k] = Jw[r]
            k += 1
    return A


@njit(cache=True)
def _sigma_min(Jw, task):
    """Smallest singular value of the task rows of Jw (masked rows left out)."""
    return smallest_singular_value(task_rows(Jw, task))


@njit(cache=True)
def exact_sigma(q, model, T, params):
    """Smallest singular value (LAPACK SVD) of the task rows of the Jacobian at q, for a result."""
    ws = workspace(model.axis.shape[0], q.shape[0])
    place(q, model, ws.frames)
    Jw = task_jacobian(model, np.ascontiguousarray(T[:3, :3]), params.task, ws)
    return np.linalg.svd(task_rows(Jw, params.task))[1][-1]


@njit(cache=True)
def attempt(variant, q, model, params, target, deadline, ws):
    """Iterate from q (modified in place) until converged, stalled, max_iter or the deadline.

    After convergence, bounded nullspace steps alternate with re-convergence;
    the last pose that met the tolerance is returned.

    Args:
        variant: the plan's kernel variant (``kernel_data.kernel_variant``).
        q: the start, overwritten with the attempt's end.
        model, params: ``kernel_data.Model`` and ``Params``.
        target: the ``Target``.
        deadline: ``clock.monotonic`` time (s) after which the attempt stops.
        ws: the ``Scratch`` of ``workspace``.

    Returns:
        An ``Attempt``: its errors are evaluated at the final q when ``evaluated``.
    """
    # The loop reads its arrays from locals taken here, once: in compiled code every read of an array field of
    # a namedtuple, and every namedtuple handed to an inlined helper, counts a reference per array.
    origin_R, origin_p, axis, kind, var, mult, offset, lower, upper = model
    R, p, a = ws.frames
    e, A, dq, J = ws.e, ws.A, ws.dq, ws.J
    Rt, pt = target.R, target.p
    goals, task = params.goals, params.task
    sw, bounds = task.sw, task.bounds
    target_frame, has_bounds, weigh_rows = task.target_frame, task.has_bounds, task.weigh_rows
    tol_pos, tol_rot, max_step, patience = params.tol_pos, params.tol_rot, params.max_step, params.patience
    method, gains = params.method, params.gains
    n = axis.shape[0]
    n_var = q.shape[0]
    ns_iters = goals.iterations
    ns_active = goals.weights.sum() > 0.0 and ns_iters > 0
    q_conv = q.copy() if ns_active else q   # the last pose within tolerance, kept only with nullspace goals
    have_conv = False
    ns_done = 0
    best = np.inf
    stall = 0
    limit = params.max_iter + 3 * ns_iters if ns_active else params.max_iter
    status = MAX_ITER
    pe, re, total, true_pos, true_rot, sigma = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    iterations = 0
    for it in range(limit + 1):
        kin.frames(q, origin_R, origin_p, axis, kind, var, mult, offset, R, p, a)
        pe, re, total, true_pos, true_rot = tip_error(Rt, pt, R[n], p[n], sw, bounds, target_frame, has_bounds, e)
        iterations = it
        if not (np.isfinite(pe) and np.isfinite(re)):
            return Attempt(NOT_FINITE, pe, re, iterations, sigma, total, true_pos, true_rot, True)
        within = pe < tol_pos and re < tol_rot
        if within:
            if not ns_active or ns_done >= ns_iters:
                return Attempt(CONVERGED, pe, re, iterations, sigma, total, true_pos, true_rot, True)
            if ns_done == 0 and goals.elbow >= 0 and pole_side(ws.frames, goals, p[n]) <= 0.0:
                # The wrong side: the nullspace steps would not cross over, a restart may.
                return Attempt(CONVERGED, pe, re, iterations, sigma, total, true_pos, true_rot, True)
            q_conv[:] = q
            have_conv = True
        if it == limit:
            break
        if it > 0 and monotonic() >= deadline:   # (the first step is the one iteration a solve may overrun)
            status = TIMED_OUT
            break
        Jw = weighted_jacobian(p, a, kind, var, mult, Rt, sw, target_frame, weigh_rows, J)
        if within:
            _secondary(variant, q, model, params, Jw, Rt, ws)
            ns_done += 1
            if largest(dq) < NS_SETTLED:
                return Attempt(CONVERGED, pe, re, iterations, sigma, total, true_pos, true_rot, True)
        else:
            _step(variant, method, gains, Jw, e, A, dq)
            top = largest(dq)
            if top > max_step:
                dq *= max_step / top
        for i in range(n_var):
            q[i] = min(upper[i], max(lower[i], q[i] + dq[i]))
        if have_conv:
            continue
        err = pe + re
        if err < (NEAR_PROGRESS if err < NEAR_ERROR else PROGRESS) * best:
            best = err
            stall = 0
        else:
            stall += 1
            if stall >= patience:
                sigma = _sigma_min(Jw, task)
                return Attempt(STALLED, pe, re, iterations, sigma, total, true_pos, true_rot, False)
    if have_conv:   # (every way out of the loop above evaluated the joints it left q at)
        q[:] = q_conv
        kin.frames(q, origin_R, origin_p, axis, kind, var, mult, offset, R, p, a)
        pe, re, total, true_pos, true_rot = tip_error(Rt, pt, R[n], p[n], sw, bounds, target_frame, has_bounds, e)
        return Attempt(CONVERGED, pe, re, iterations, sigma, total, true_pos, true_rot, True)
    sigma = _sigma_min(weighted_jacobian(p, a, kind, var, mult, Rt, sw, target_frame, weigh_rows, J), task)
    return Attempt(status, pe, re, iterations, sigma, total, true_pos, true_rot, True)


def _step(variant, method, gains, J, e, A, dq):
    """Write the step of the plan's method into dq (compiled: lm's code only in an lm variant)."""
    step_into(method, J, e, gains, A, dq)


@overload(_step)
def _step_variant(variant, method, gains, J, e, A, dq):
    if variant_of(variant.count)[0]:
        return lambda variant, method, gains, J, e, A, dq: lm_step_into(J, e, gains.lm_bias, A, dq)
    return _step


def _secondary(variant, q, model, params, Jw, Rt, ws):
    """One nullspace step of the goals into ws.dq (compiled only into variants with goals)."""
    ws.dq[:] = goal_step(q, model, params.goals, params.task, Jw, Rt, ws.frames)


@overload(_secondary)
def _secondary_variant(variant, q, model, params, Jw, Rt, ws):
    if variant_of(variant.count)[1]:
        return _secondary

    def none(variant, q, model, params, Jw, Rt, ws):
        ws.dq[:] = 0.0   # (unreachable: without goals an attempt ends at convergence)
    return none
