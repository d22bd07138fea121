"""The search: attempts from the seed and random starts, the choice among solutions, the conclusion."""
from numba import njit
from numba.extending import overload
import numpy as np

from . import kinematics as kin
from .attempt import (
    _attempt, _elbow_side, _goal_error, _next_uniform, _seed_rng, _task_jacobian, _workspace, CONVERGED, MAX_ITER,
    NOT_FINITE, STALLED)
from .clock import monotonic
from .nullspace import weighted_manipulability
from .options import MODE_FIRST, MODE_MANIPULABILITY
from .plan import (
    _unpack, _variant_of, FP_CENTER, FP_JUMP, FP_REACH, FP_TIMEOUT, IP_ELBOW, IP_MAX_ATTEMPTS, IP_MODE, IP_PLAIN,
    IP_SEED, IP_YIELD, OUT_EVALUATED, OUT_ITERS, OUT_SIGMA, OUT_TASK, OUT_TRUE_POS, OUT_TRUE_ROT, RP_ATTEMPTS,
    RP_BEST_ERR, RP_BEST_SIGMA, RP_BEST_STATUS, RP_CHOSEN, RP_DISTANCE, RP_EVAL_POS, RP_EVAL_ROT, RP_EVAL_TASK,
    RP_EVALUATED, RP_ITERS, RP_JUMP, RP_POLE_SIDE, RP_POS, RP_REASON, RP_ROT, RP_SCORE, RP_SIZE, RP_TASK, W_BEST,
    W_CAND, W_CHOSEN, W_EVAL, W_Q, W_SIZE)
from .results import R_JOINT_LIMITS, R_SINGULAR, R_SUCCESS, R_TIMEOUT, R_UNREACHABLE
from .transforms import pose_defect

# Search kernel outcomes: finished, or (with a collision checker) a candidate to check in Python.
FINISHED, CANDIDATE = 0, 1
#: A target certainly out of reach gets this many attempts, for the best approximation.
UNREACHABLE_ATTEMPTS = 4
#: Mode 'manipulability': the measure is multiplied by prod(1 - exp(-LIMIT_SHARPNESS d_i)),
#: d_i the distance to the nearer limit as a fraction of the range.
LIMIT_SHARPNESS = 20.0
#: Solutions with the elbow on the wrong side of the pole rank after every right one.
WRONG_SIDE = 1e9
#: With a pole, random starts drawn per restart to find one with the elbow on the pole's side.
START_DRAWS = 8
SINGULAR_SIGMA = 1e-3


@njit(cache=True, inline='always')
def _wrap_near(q, seed, lower):
    """Continuous joints (infinite limits) moved by whole turns to lie within pi of the seed (others untouched)."""
    for i in range(q.shape[0]):
        if not np.isfinite(lower[i]) and abs(q[i] - seed[i]) > np.pi:
            q[i] = seed[i] + (np.remainder(q[i] - seed[i] + np.pi, 2 * np.pi) - np.pi)


@njit(cache=True)
def _limit_factor(q, lower, upper):
    f = 1.0
    for i in range(q.shape[0]):
        if np.isfinite(lower[i]) and upper[i] > lower[i]:
            d = min(q[i] - lower[i], upper[i] - q[i]) / (upper[i] - lower[i])
            f *= 1.0 - np.exp(-LIMIT_SHARPNESS * d)
    return f


@njit(cache=True)
def _goal_score(q, chain, lower, upper, Rt, fp, ip, ws, score):
    """(score, pole side) of a converged solution under the ranking goals: manipulability mode, pole side."""
    side = 1.0
    if ip[IP_MODE] == MODE_MANIPULABILITY or ip[IP_ELBOW] >= 0:
        R_out, p_out, a_out = ws[0], ws[1], ws[2]
        kin.frames(q, *chain, R_out, p_out, a_out)
        if ip[IP_ELBOW] >= 0:
            side = _elbow_side(p_out, R_out, a_out, fp, ip, p_out[p_out.shape[0] - 1])
        if ip[IP_MODE] == MODE_MANIPULABILITY:
            Jw = _task_jacobian(chain, Rt, fp, ip, ws)
            score = -weighted_manipulability(Jw) * _limit_factor(q, lower, upper)
    return score, side


def _ranking(variant, q, chain, lower, upper, Rt, fp, ip, ws, score):
    """``_goal_score`` for a variant with goals; without, the score as it is (compiled: nothing else)."""
    return _goal_score(q, chain, lower, upper, Rt, fp, ip, ws, score)


@overload(_ranking)
def _ranking_variant(variant, q, chain, lower, upper, Rt, fp, ip, ws, score):
    if _variant_of(variant.count)[1]:
        return lambda variant, q, chain, lower, upper, Rt, fp, ip, ws, score: _goal_score(
            q, chain, lower, upper, Rt, fp, ip, ws, score)
    return lambda variant, q, chain, lower, upper, Rt, fp, ip, ws, score: (score, 1.0)


@njit(cache=True)
def _score(variant, q, seed, chain, lower, upper, Rt, fp, ip, ws):
    """Rank of a converged solution, lower is better; sets RP_POLE_SIDE and RP_JUMP for it."""
    linf = 0.0
    for i in range(q.shape[0]):
        linf = max(linf, abs(q[i] - seed[i]))
    score, side = _ranking(variant, q, chain, lower, upper, Rt, fp, ip, ws, linf)
    if side <= 0.0:
        score += WRONG_SIDE
    return score, linf, side > 0.0


@njit(cache=True)
def _offer(variant, q, seed, chain, lower, upper, Rt, fp, ip, ws, work, report):
    """Keep q if it ranks best so far; True when the search may stop (mode 'first', no jump, pole side)."""
    score, linf, side_ok = _score(variant, q, seed, chain, lower, upper, Rt, fp, ip, ws)
    if report[RP_CHOSEN] == 0.0 or score < report[RP_SCORE]:
        work[W_CHOSEN] = q
        report[RP_CHOSEN] = 1.0
        report[RP_SCORE] = score
        report[RP_POLE_SIDE] = 1.0 if side_ok else 0.0
        report[RP_JUMP] = linf
    return ip[IP_MODE] == MODE_FIRST and side_ok and linf <= fp[FP_JUMP]


@njit(cache=True, nogil=True)
def _search(variant, seed, chain, lower, upper, slo, sup, Rt, pt, fp, ip, q_pref, deadline, rng, work, report):
    """Run attempts from the seed, then from random starts in [slo, sup], until done, the deadline or max attempts.

    Converged solutions go to ``_offer`` (or, with ip[IP_YIELD], back to the
    caller as CANDIDATE in work[W_CAND]; calling again resumes the search).
    """
    n_var = seed.shape[0]
    ws = _workspace(chain[2].shape[0], n_var)
    out = ws[7]
    max_attempts = ip[IP_MAX_ATTEMPTS]
    if report[RP_DISTANCE] > fp[FP_REACH] and (max_attempts == 0 or max_attempts > UNREACHABLE_ATTEMPTS):
        max_attempts = UNREACHABLE_ATTEMPTS
    q = work[W_Q]
    while max_attempts == 0 or report[RP_ATTEMPTS] < max_attempts:
        if report[RP_ATTEMPTS] == 0:
            q[:] = seed
        else:
            _random_start(q, chain, slo, sup, pt, fp, ip, rng, ws)
        status = _attempt(variant, q, chain, lower, upper, Rt, pt, fp, ip, q_pref, deadline, ws, out)
        _record(status, q, out, work, report)
        if status == CONVERGED:
            _wrap_near(q, seed, lower)
            if ip[IP_YIELD]:
                work[W_CAND] = q
                return CANDIDATE
            if _offer(variant, q, seed, chain, lower, upper, Rt, fp, ip, ws, work, report):
                return FINISHED
        if monotonic() >= deadline:
            break
    return FINISHED


@njit(cache=True)
def _random_start(q, chain, slo, sup, pt, fp, ip, rng, ws):
    """Draw a restart's q in [slo, sup]; with a pole, up to START_DRAWS draws for one with the elbow on its side.

    A start's elbow side (toward the target's reference plane) carries over to
    the solution about twice as often as not, so fewer attempts end on the wrong side.
    """
    draws = START_DRAWS if ip[IP_ELBOW] >= 0 else 1
    for _ in range(draws):
        for i in range(q.shape[0]):
            q[i] = slo[i] + (sup[i] - slo[i]) * _next_uniform(rng)
        if draws > 1:
            kin.frames(q, *chain, ws[0], ws[1], ws[2])
            if _elbow_side(ws[1], ws[0], ws[2], fp, ip, pt) > 0.0:
                return


@njit(cache=True, inline='always')
def _record(status, q, out, work, report):
    """Book an attempt: its iterations, the errors of the joints it evaluated last, and the best failed one."""
    report[RP_ATTEMPTS] += 1
    report[RP_ITERS] += out[OUT_ITERS]
    if out[OUT_EVALUATED]:
        work[W_EVAL] = q
        report[RP_EVALUATED] = 1.0
        report[RP_EVAL_POS], report[RP_EVAL_ROT] = out[OUT_TRUE_POS], out[OUT_TRUE_ROT]
        report[RP_EVAL_TASK] = out[OUT_TASK]
    if status != CONVERGED and status != NOT_FINITE and out[OUT_TASK] < report[RP_BEST_ERR]:
        work[W_BEST] = q
        report[RP_BEST_ERR], report[RP_BEST_SIGMA], report[RP_BEST_STATUS] = out[OUT_TASK], out[OUT_SIGMA], status


@njit(cache=True, inline='always')
def _plain_first_attempt(variant, seed, chain, lower, upper, Rt, pt, fp, ip, q_pref, deadline, work, report,
                         q_out):
    """Attempt 0 of a plain plan (ip[IP_PLAIN]), concluded in place if it converged: True then.

    For these plans (mode 'first' without a jump threshold, pole, nullspace
    goals or collision check) the search takes the seed's solution as it is
    (no ranking): so this is ``_search`` and ``_conclude``'s result without
    their code.  Otherwise the attempt is booked and ``_search`` goes on from attempt 1.
    """
    ws = _workspace(chain[2].shape[0], seed.shape[0])
    out = ws[7]
    q = work[W_Q]
    q[:] = seed
    status = _attempt(variant, q, chain, lower, upper, Rt, pt, fp, ip, q_pref, deadline, ws, out)
    _record(status, q, out, work, report)
    if status != CONVERGED:
        return False
    _wrap_near(q, seed, lower)
    linf = 0.0
    for i in range(q.shape[0]):
        q_out[i] = q[i]
        linf = max(linf, abs(q[i] - seed[i]))
    report[RP_CHOSEN], report[RP_SCORE], report[RP_POLE_SIDE], report[RP_JUMP] = 1.0, linf, 1.0, linf
    _result_errors(q_out, chain, Rt, pt, fp, ip, work, report)
    report[RP_REASON] = R_SUCCESS
    return True


@njit(cache=True)
def _conclude(seed, chain, lower, upper, Rt, pt, fp, ip, work, report, q_out):
    """Fill q_out and the report's result fields (true errors, task error, reason code).

    The errors are those evaluated by the search when q_out is exactly the
    joints it evaluated last (work[W_EVAL]), else from a fresh forward kinematics pass.
    """
    if report[RP_CHOSEN] > 0.0:
        q_out[:] = work[W_CHOSEN]
        reason = R_SUCCESS
    else:
        q_out[:] = work[W_BEST]
        _wrap_near(q_out, seed, lower)
        reason = _failure_reason(q_out, lower, upper, report)
    for i in range(q_out.shape[0]):
        q_out[i] = min(upper[i], max(lower[i], q_out[i]))
    _result_errors(q_out, chain, Rt, pt, fp, ip, work, report)
    report[RP_REASON] = reason


@njit(cache=True, inline='always')
def _result_errors(q, chain, Rt, pt, fp, ip, work, report):
    """Set the report's true and task errors of the returned joints q.

    The search's own evaluation when q is exactly the joints it evaluated last
    (work[W_EVAL]), else a kinematics pass of its own (e.g. a continuous joint
    moved by whole turns, or a best failed attempt clamped into the limits).
    """
    same = report[RP_EVALUATED] > 0.0
    for i in range(q.shape[0]):
        same = same and q[i] == work[W_EVAL, i]
    if same:
        report[RP_POS], report[RP_ROT], report[RP_TASK] = report[RP_EVAL_POS], report[RP_EVAL_ROT], \
            report[RP_EVAL_TASK]
    else:
        _fresh_errors(q, chain, Rt, pt, fp, ip, report)


@njit(cache=True)
def _fresh_errors(q, chain, Rt, pt, fp, ip, report):
    """Set the report's true and task errors of q from a kinematics pass of its own."""
    n = chain[2].shape[0]
    R_out, p_out, a_out, _, e, _, _, _ = _workspace(n, q.shape[0])
    kin.frames(q, *chain, R_out, p_out, a_out)
    _, _, report[RP_TASK], report[RP_POS], report[RP_ROT] = _goal_error(Rt, pt, R_out[n], p_out[n], fp, ip, e)


@njit(cache=True)
def _failure_reason(q, lower, upper, report):
    if report[RP_DISTANCE] > 0.0:
        return R_UNREACHABLE
    if not np.isfinite(report[RP_BEST_ERR]):
        return R_TIMEOUT
    if report[RP_BEST_STATUS] == STALLED:
        if report[RP_BEST_SIGMA] < SINGULAR_SIGMA:
            return R_SINGULAR
        for i in range(q.shape[0]):
            if abs(q[i] - lower[i]) < 1e-9 or abs(q[i] - upper[i]) < 1e-9:
                return R_JOINT_LIMITS
    return R_TIMEOUT


SEED_OK, SEED_NOT_FINITE, SEED_OUTSIDE, POSE_INVALID, SHAPE_MISMATCH = 0, 1, 2, 3, 4
SEED_SLACK = 1e-6


@njit(cache=True, inline='always')
def _prepare_seed(seed, lower, upper, clamped, search_lower, search_upper):
    """Check a seed, clamp it into the limits, and set the search bounds (continuous joints: seed +- pi)."""
    code = SEED_OK
    for i in range(seed.shape[0]):
        if not np.isfinite(seed[i]):
            return SEED_NOT_FINITE
        if seed[i] < lower[i] - SEED_SLACK or seed[i] > upper[i] + SEED_SLACK:
            code = SEED_OUTSIDE
        clamped[i] = min(upper[i], max(lower[i], seed[i]))
        if np.isfinite(lower[i]):
            search_lower[i], search_upper[i] = lower[i], upper[i]
        else:
            search_lower[i], search_upper[i] = seed[i] - np.pi, seed[i] + np.pi
    return code


@njit(cache=True, inline='always')
def _start(seed, chain, lower, upper, Rt, pt, fp, ip, index, bounds, rng, work, report):
    """Per-solve set-up shared by solve and solve_batch: seed check, generator, report, reach distance."""
    code = _prepare_seed(seed, lower, upper, work[W_Q], bounds[0], bounds[1])
    if code != SEED_OK:
        return code
    work[W_BEST] = work[W_Q]
    _seed_rng(rng, ip[IP_SEED], index)
    report[:] = 0.0
    report[RP_BEST_ERR] = np.inf
    report[RP_BEST_STATUS] = MAX_ITER
    distance = 0.0
    for r in range(3):
        distance += (pt[r] - fp[FP_CENTER + r]) ** 2
    distance = np.sqrt(distance)
    if distance > fp[FP_REACH]:
        report[RP_DISTANCE] = distance
    return SEED_OK


@njit(cache=True, inline='always')
def _solve_arrays(T, n_var):
    """One solve's target rotation and position (contiguous copies of T's), search bounds and clamped seed.

    The bounds and seed are left for ``_start`` to fill.
    """
    Rt = np.empty((3, 3))
    b = np.empty(3 + n_var)
    pt = b[:3]
    for r in range(3):
        for c in range(3):
            Rt[r, c] = T[r, c]
        pt[r] = T[r, 3]
    return Rt, pt, np.empty((2, n_var)), b[3:]


@njit(cache=True, nogil=True, inline='always')
def _solve_one(variant, T, seed, chain, lower, upper, fp, ip, q_pref, deadline, rng, work, report, q_out):
    """Validate the target and seed and solve: the single-solve kernel.

    Returns SEED_OK, a seed code, POSE_INVALID (the caller raises) or -1 (a candidate for the collision check).
    """
    if pose_defect(T) != 0:
        return POSE_INVALID
    Rt, pt, bounds, clamped = _solve_arrays(T, seed.shape[0])
    code = _start(seed, chain, lower, upper, Rt, pt, fp, ip, 0, bounds, rng, work, report)
    if code != SEED_OK:
        return code
    clamped[:] = work[W_Q]
    return _solve_started(variant, clamped, chain, lower, upper, bounds, Rt, pt, fp, ip, q_pref, deadline, rng, work,
                          report, q_out)


@njit(cache=True, inline='always')
def _solve_started(variant, clamped, chain, lower, upper, bounds, Rt, pt, fp, ip, q_pref, deadline, rng, work, report,
                   q_out):
    """Search from a started solve (``_start``) and conclude it; -1: a candidate for the collision check."""
    if ip[IP_PLAIN]:
        if _plain_first_attempt(variant, clamped, chain, lower, upper, Rt, pt, fp, ip, q_pref, deadline, work,
                                report, q_out):
            return SEED_OK
        if monotonic() < deadline:
            _search(variant, clamped, chain, lower, upper, bounds[0], bounds[1], Rt, pt, fp, ip, q_pref, deadline, rng,
                    work, report)
    elif _search(variant, clamped, chain, lower, upper, bounds[0], bounds[1], Rt, pt, fp, ip, q_pref, deadline, rng,
                 work, report) == CANDIDATE:
        return -1
    _conclude(clamped, chain, lower, upper, Rt, pt, fp, ip, work, report, q_out)
    return SEED_OK


@njit(cache=True, inline='always')
def _summary(ip, report):
    """Return a report's result fields as one tuple (see ``IKSolver._result``).

    (reason code, position, rotation and task error, iterations, restarts,
    elbow off the pole side, distance beyond reach, best failed task error).
    """
    reason = int(report[RP_REASON])
    pole_missed = reason == R_SUCCESS and ip[IP_ELBOW] >= 0 and report[RP_POLE_SIDE] == 0.0
    return (reason, report[RP_POS], report[RP_ROT], report[RP_TASK], int(report[RP_ITERS]),
            max(int(report[RP_ATTEMPTS]) - 1, 0), pole_missed, report[RP_DISTANCE], report[RP_BEST_ERR])


@njit(cache=True, nogil=True)
def _solve_fast(variant, T, seed, vector, origin_R, rows, start, q_out):
    """Solve once, work arrays included: one call from Python (``_pack``'s arrays) returns (code, summary).

    ``IKSolver.solve`` calls it only with the types it was first compiled for
    (compilation is then disabled: other types raise TypeError and take the
    normalising path); a wrong shape returns SHAPE_MISMATCH, as a bad seed or
    pose returns its code, for the checking path to raise.
    """
    n_var = q_out.shape[0]
    chain, lower, upper, fp, ip, q_pref = _unpack(vector, origin_R, rows, n_var)
    work = np.empty((W_SIZE, n_var))
    report = np.zeros(RP_SIZE)
    if T.shape[0] != 4 or T.shape[1] != 4 or seed.shape[0] != n_var:
        return SHAPE_MISMATCH, _summary(ip, report)
    code = _solve_one(variant, T, seed, chain, lower, upper, fp, ip, q_pref, start + fp[FP_TIMEOUT],
                      np.zeros(1, dtype=np.uint64), work, report, q_out)
    return code, _summary(ip, report)
