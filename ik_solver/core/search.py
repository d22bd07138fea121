"""The search: attempts from the seed and then random starts, the choice among solutions, the conclusion.

Converged solutions are ranked (``mode``: the first, the closest to the seed,
the most manipulable; the elbow on the pole's side first); with a collision
checker they go back to Python as candidates and the search resumes on the
next call.  ``solve_fast`` is the single-solve entry point (one call from
Python: the packed plan of ``kernel_data.pack``); the batch kernel
(``batch``) runs ``start`` and ``solve_started`` per item.

Random restarts draw from a counter-based generator seeded by (``random_seed``,
item index), so a solve is reproducible for a given seed as long as it
finishes within the same number of attempts, and a batch item does not depend
on the thread that ran it.
"""
from numba import njit
from numba.extending import overload
import numpy as np

from .attempt import (attempt, CONVERGED, goal_error, MAX_ITER, next_uniform, NOT_FINITE, place, seed_rng, STALLED,
                      task_jacobian, workspace)
from .clock import monotonic
from .kernel_data import REPORT, Search, Target, unpack, variant_of, Work
from .nullspace import pole_side, weighted_manipulability
from .options import MODE_FIRST, MODE_MANIPULABILITY
from .results import Reason
from .transforms import pose_defect

# Search kernel outcomes: finished, or (with a collision checker) a candidate to check in Python.
FINISHED, CANDIDATE = 0, 1
# Input codes of a solve: fine, or what the caller raises ValueError for.
SEED_OK, SEED_NOT_FINITE, SEED_OUTSIDE, POSE_INVALID, SHAPE_MISMATCH = 0, 1, 2, 3, 4
SEED_SLACK = 1e-6
# The reason codes the kernels set (``results.Reason``).
R_SUCCESS, R_UNREACHABLE, R_TIMEOUT = int(Reason.SUCCESS), int(Reason.UNREACHABLE), int(Reason.TIMEOUT)
R_JOINT_LIMITS, R_SINGULAR, R_INVALID = int(Reason.JOINT_LIMITS), int(Reason.SINGULAR), int(Reason.INVALID_INPUT)
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
def wrap_near(q, seed, lower):
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
def _goal_score(q, model, params, Rt, ws, score):
    """(score, pole side) of a converged solution under the ranking goals: manipulability mode, pole side."""
    side = 1.0
    if params.mode == MODE_MANIPULABILITY or params.goals.elbow >= 0:
        f = ws.frames
        place(q, model, f)
        if params.goals.elbow >= 0:
            side = pole_side(f, params.goals, f.p[f.p.shape[0] - 1])
        if params.mode == MODE_MANIPULABILITY:
            Jw = task_jacobian(model, Rt, params.task, ws)
            score = -weighted_manipulability(Jw) * _limit_factor(q, model.lower, model.upper)
    return score, side


def _ranking(variant, q, model, params, Rt, ws, score):
    """``_goal_score`` for a variant with goals; without, the score as it is (compiled: nothing else)."""
    return _goal_score(q, model, params, Rt, ws, score)


@overload(_ranking)
def _ranking_variant(variant, q, model, params, Rt, ws, score):
    if variant_of(variant.count)[1]:
        return lambda variant, q, model, params, Rt, ws, score: _goal_score(q, model, params, Rt, ws, score)
    return lambda variant, q, model, params, Rt, ws, score: (score, 1.0)


@njit(cache=True)
def rank(variant, q, model, params, s, ws):
    """Return (rank, largest joint move from the seed, elbow on the pole's side?) of a converged q; lower first."""
    linf = 0.0
    for i in range(q.shape[0]):
        linf = max(linf, abs(q[i] - s.seed[i]))
    score, side = _ranking(variant, q, model, params, s.target.R, ws, linf)
    if side <= 0.0:
        score += WRONG_SIDE
    return score, linf, side > 0.0


@njit(cache=True)
def offer(variant, q, model, params, s, ws, report):
    """Keep q if it ranks best so far; True when the search may stop (mode 'first', no jump, pole side)."""
    score, linf, side_ok = rank(variant, q, model, params, s, ws)
    if not report.chosen or score < report.score:
        s.work.chosen[:] = q
        report.chosen = True
        report.score = score
        report.pole_side = side_ok
        report.jump = linf
    return params.mode == MODE_FIRST and side_ok and linf <= params.jump


@njit(cache=True, nogil=True)
def search(variant, model, params, s, report):
    """Run attempts from the seed, then from random starts, until done, the deadline or max attempts.

    Converged solutions go to ``offer`` (or, with params.collision_yield, back
    to the caller as CANDIDATE in s.work.candidate; calling again resumes the search).
    """
    seed, target, deadline, work = s.seed, s.target, s.deadline, s.work   # (once: see ``attempt``)
    ws = workspace(model.axis.shape[0], seed.shape[0])
    max_attempts = params.max_attempts
    if report.distance > params.reach and (max_attempts == 0 or max_attempts > UNREACHABLE_ATTEMPTS):
        max_attempts = UNREACHABLE_ATTEMPTS
    q = work.q
    while max_attempts == 0 or report.attempts < max_attempts:
        if report.attempts == 0:
            q[:] = seed
        else:
            _random_start(q, model, params, s, ws)
        a = attempt(variant, q, model, params, target, deadline, ws)
        _record(a, q, work.evaluated, work.best, report)
        if a.status == CONVERGED:
            wrap_near(q, seed, model.lower)
            if params.collision_yield:
                work.candidate[:] = q
                return CANDIDATE
            if offer(variant, q, model, params, s, ws, report):
                return FINISHED
        if monotonic() >= deadline:
            break
    return FINISHED


@njit(cache=True)
def _random_start(q, model, params, s, ws):
    """Draw a restart's q in [s.low, s.high]; with a pole, up to START_DRAWS draws for one with the elbow on its side.

    A start's elbow side (toward the target's reference plane) carries over to
    the solution about twice as often as not, so fewer attempts end on the wrong side.
    """
    draws = START_DRAWS if params.goals.elbow >= 0 else 1
    for _ in range(draws):
        for i in range(q.shape[0]):
            q[i] = s.low[i] + (s.high[i] - s.low[i]) * next_uniform(s.rng)
        if draws > 1:
            place(q, model, ws.frames)
            if pole_side(ws.frames, params.goals, s.target.p) > 0.0:
                return


@njit(cache=True, inline='always')
def _record(a, q, evaluated, best, report):
    """Book an attempt: its iterations, the errors of the joints it evaluated last, and the best failed one.

    evaluated, best: the ``Work`` rows of those names, given as arrays (a ``Work`` costs a reference count per row).
    """
    report.attempts += 1
    report.iterations += a.iterations
    if a.evaluated:
        evaluated[:] = q
        report.evaluated = True
        report.eval_position = a.true_position
        report.eval_rotation = a.true_rotation
        report.eval_task = a.task
    if a.status != CONVERGED and a.status != NOT_FINITE and a.task < report.best_error:
        best[:] = q
        report.best_error = a.task
        report.best_sigma = a.sigma
        report.best_status = a.status


@njit(cache=True, inline='always')
def _plain_first_attempt(variant, model, params, s, report, q_out):
    """Attempt 0 of a plain plan (params.plain), concluded in place if it converged: True then.

    For these plans (mode 'first' without a jump threshold, pole, nullspace
    goals or collision check) the search takes the seed's solution as it is
    (no ranking): so this is ``search`` and ``conclude``'s result without
    their code.  Otherwise the attempt is booked and ``search`` goes on from attempt 1.
    """
    seed, work = s.seed, s.work
    ws = workspace(model.axis.shape[0], seed.shape[0])
    q = work.q
    q[:] = seed
    a = attempt(variant, q, model, params, s.target, s.deadline, ws)
    _record(a, q, work.evaluated, work.best, report)
    if a.status != CONVERGED:
        return False
    wrap_near(q, seed, model.lower)
    linf = 0.0
    for i in range(q.shape[0]):
        q_out[i] = q[i]
        linf = max(linf, abs(q[i] - seed[i]))
    report.chosen = True
    report.score = linf
    report.pole_side = True
    report.jump = linf
    if not _reuse_errors(q_out, work.evaluated, report):
        _fresh_errors(q_out, model, params, s.target, report)
    report.reason = R_SUCCESS
    return True


@njit(cache=True)
def conclude(model, params, s, report, q_out):
    """Fill q_out and the report's result fields (true errors, task error, reason code).

    The errors are those evaluated by the search when q_out is exactly the
    joints it evaluated last (s.work.evaluated), else from a fresh forward kinematics pass.
    """
    if report.chosen:
        q_out[:] = s.work.chosen
        reason = R_SUCCESS
    else:
        q_out[:] = s.work.best
        wrap_near(q_out, s.seed, model.lower)
        reason = _failure_reason(q_out, model, report)
    for i in range(q_out.shape[0]):
        q_out[i] = min(model.upper[i], max(model.lower[i], q_out[i]))
    if not _reuse_errors(q_out, s.work.evaluated, report):
        _fresh_errors(q_out, model, params, s.target, report)
    report.reason = reason


@njit(cache=True, inline='always')
def _reuse_errors(q, evaluated, report):
    """Set the report's true and task errors of the returned joints q from the search's own evaluation.

    Only when q is exactly the joints it evaluated last (the ``Work`` row
    ``evaluated``); returns False otherwise (e.g. a continuous joint moved by
    whole turns, or a best failed attempt clamped into the limits), for a
    kinematics pass of its own (``_fresh_errors``).
    """
    if not report.evaluated:
        return False
    for i in range(q.shape[0]):
        if q[i] != evaluated[i]:
            return False
    report.position = report.eval_position
    report.rotation = report.eval_rotation
    report.task = report.eval_task
    return True


@njit(cache=True)
def _fresh_errors(q, model, params, target, report):
    """Set the report's true and task errors of q from a kinematics pass of its own."""
    n = model.axis.shape[0]
    ws = workspace(n, q.shape[0])
    place(q, model, ws.frames)
    _, _, task, position, rotation = goal_error(target, ws.frames.R[n], ws.frames.p[n], params.task, ws.e)
    report.task = task
    report.position = position
    report.rotation = rotation


@njit(cache=True)
def _failure_reason(q, model, report):
    if report.distance > 0.0:
        return R_UNREACHABLE
    if not np.isfinite(report.best_error):
        return R_TIMEOUT
    if report.best_status == STALLED:
        if report.best_sigma < SINGULAR_SIGMA:
            return R_SINGULAR
        for i in range(q.shape[0]):
            if abs(q[i] - model.lower[i]) < 1e-9 or abs(q[i] - model.upper[i]) < 1e-9:
                return R_JOINT_LIMITS
    return R_TIMEOUT


@njit(cache=True, inline='always')
def prepare_seed(seed, lower, upper, clamped, search_lower, search_upper):
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
def new_search(n_var, deadline):
    """Return a solve's ``Search`` with its arrays allocated; ``start`` fills them.

    Two allocations, as each costs about as much as a dozen field reads: the
    target's rows (rotation, then position), and one vector holding the seed,
    the search bounds, the ``Work`` rows and the generator state (as uint64).
    """
    pose = np.empty((4, 3))
    b = np.empty(8 * n_var + 1)
    n = n_var
    work = Work(b[3 * n:4 * n], b[4 * n:5 * n], b[5 * n:6 * n], b[6 * n:7 * n], b[7 * n:8 * n])
    return Search(b[:n], b[n:2 * n], b[2 * n:3 * n], Target(pose[:3], pose[3]), deadline, b[8 * n:].view(np.uint64),
                  work)


@njit(cache=True, inline='always')
def start(T, seed, model, params, s, index, report):
    """Per-solve set-up shared by solve and solve_batch: target, seed check, generator, report, reach distance.

    Args:
        T: the target pose (4 x 4, valid); seed: the caller's joints.
        model, params: the plan's ``Model`` and ``Params``.
        s: the ``Search`` of ``new_search``; index: the batch item (0 for one solve).
        report: a zeroed ``REPORT`` record (every caller makes its record array with ``np.zeros``, which
            clears all its fields at once).

    Returns:
        SEED_OK, or the seed's code.
    """
    Rt, pt = s.target.R, s.target.p
    for r in range(3):
        for c in range(3):
            Rt[r, c] = T[r, c]
        pt[r] = T[r, 3]
    code = prepare_seed(seed, model.lower, model.upper, s.seed, s.low, s.high)
    if code != SEED_OK:
        return code
    s.work.best[:] = s.seed
    seed_rng(s.rng, params.seed, index)
    report.best_error = np.inf
    report.best_status = MAX_ITER
    distance = 0.0
    for r in range(3):
        distance += (pt[r] - params.center[r]) ** 2
    distance = np.sqrt(distance)
    if distance > params.reach:
        report.distance = distance
    return SEED_OK


@njit(cache=True, nogil=True, inline='always')
def solve_one(variant, T, seed, model, params, s, report, q_out):
    """Validate the target and seed and solve: the single-solve kernel.

    Returns SEED_OK, a seed code, POSE_INVALID (the caller raises) or -1 (a candidate for the collision check).
    """
    if pose_defect(T) != 0:
        return POSE_INVALID
    code = start(T, seed, model, params, s, 0, report)
    if code != SEED_OK:
        return code
    return solve_started(variant, model, params, s, report, q_out)


@njit(cache=True, inline='always')
def solve_started(variant, model, params, s, report, q_out):
    """Search from a started solve (``start``) and conclude it; -1: a candidate for the collision check."""
    if params.plain:
        if _plain_first_attempt(variant, model, params, s, report, q_out):
            return SEED_OK
        if monotonic() < s.deadline:
            search(variant, model, params, s, report)
    elif search(variant, model, params, s, report) == CANDIDATE:
        return -1
    conclude(model, params, s, report, q_out)
    return SEED_OK


@njit(cache=True, inline='always')
def summary(params, report):
    """Return a report's result fields as one tuple (see ``IKSolver._result``).

    (reason code, position, rotation and task error, iterations, restarts,
    elbow off the pole side, distance beyond reach, best failed task error).
    """
    reason = report.reason
    pole_missed = reason == R_SUCCESS and params.goals.elbow >= 0 and not report.pole_side
    return (reason, report.position, report.rotation, report.task, report.iterations,
            max(report.attempts - 1, 0), pole_missed, report.distance, report.best_error)


@njit(cache=True, nogil=True)
def solve_fast(variant, T, seed, vector, origin_R, rows, start_time, q_out):
    """Solve once, work arrays included: one call from Python (``kernel_data.pack``'s arrays) returns (code, summary).

    ``IKSolver.solve`` calls it only with the types it was first compiled for
    (compilation is then disabled: other types raise TypeError and take the
    normalising path); a wrong shape returns SHAPE_MISMATCH, as a bad seed or
    pose returns its code, for the checking path to raise.
    """
    n_var = q_out.shape[0]
    model, params = unpack(vector, origin_R, rows, n_var)
    # A record refers to its array's memory without holding it: the array stays a variable until the return.
    reports = np.zeros(1, dtype=REPORT)
    if T.shape[0] != 4 or T.shape[1] != 4 or seed.shape[0] != n_var:
        return SHAPE_MISMATCH, summary(params, reports[0])
    s = new_search(n_var, start_time + params.timeout)
    code = solve_one(variant, T, seed, model, params, s, reports[0], q_out)
    return code, summary(params, reports[0])
