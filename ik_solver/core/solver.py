"""The IK solve loop: error -> Jacobian -> step -> clamp -> converged?, with restarts.

One attempt runs entirely in a numba kernel (``_attempt``); Python only
starts attempts, checks the wall-clock budget between them and picks the
answer.  Attempts after the first start from random configurations drawn
from a generator seeded by ``random_seed``, so a solve is reproducible for a
given seed as long as it finishes within the same number of attempts
(``max_attempts`` bounds that count for full determinism).
"""
from dataclasses import dataclass, field, replace
import time

from numba import njit
import numpy as np

from . import kinematics as kin
from .methods import method_id, METHOD_NAMES, nullspace_projector, step
from .nullspace import gradient, manipulability, NullspaceGoals
from .transforms import check_pose

CONVERGED, STALLED, MAX_ITER, NOT_FINITE = 0, 1, 2, 3
#: Largest joint change of one nullspace step after convergence (rad or m), and the
#: size below which the secondary goal counts as settled.
NS_MAX_STEP = 0.1
NS_SETTLED = 1e-5
#: Stall test: an attempt restarts after ``patience`` iterations without the error
#: dropping below PROGRESS x its best; close to the goal (error < NEAR_ERROR) slow
#: but steady progress (NEAR_PROGRESS) still counts, so converging attempts finish.
PROGRESS = 0.9
NEAR_ERROR = 1e-3
NEAR_PROGRESS = 0.99
#: Attempts per kernel call; the wall clock is checked between calls.
ATTEMPTS_PER_CHUNK = 4
_REPORT_START = np.array([np.inf, np.inf, 0.0, np.nan, 0.0, MAX_ITER])

# Failure reasons of an IKResult, stable strings for logs and the ROS service.
REASON_OK = 'success'
REASON_UNREACHABLE = 'unreachable'
REASON_TIMEOUT = 'timeout'
REASON_JOINT_LIMITS = 'joint_limits'
REASON_SINGULAR = 'singular'
REASON_INVALID = 'invalid_input'


@dataclass
class SolverOptions:
    """Tuning of the solve loop; the defaults suit arms of human to industrial size (metres)."""

    method: str = 'lm'
    position_tolerance: float = 1e-5      # m
    orientation_tolerance: float = 1e-5   # rad
    timeout: float = 0.005                # s, wall clock for all attempts
    max_iterations: int = 100             # per attempt
    max_attempts: int = 0                 # 0: as many as the timeout allows
    max_step: float = 1.0                 # rad or m, largest joint change per iteration
    alpha: float = 0.0                    # transpose gain; <= 0 selects Buss's step
    damping: float = 0.05                 # dls lambda
    damping_max: float = 0.05             # adaptive_dls lambda_max
    epsilon: float = 0.05                 # adaptive_dls: damp below this sigma_min
    svd_cutoff: float = 1e-6              # pinv and nullspace: smaller sigma count as zero
    lm_bias: float = 1e-5                 # lm: damping floor w_bias
    patience: int = 5                     # iterations without 10 % progress -> restart
    weights: tuple = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)  # (x, y, z, rx, ry, rz); 0 ignores an axis
    mode: str = 'first'                   # 'first' or 'closest' (L-inf from the seed, until timeout)
    random_seed: int = 0
    nullspace: NullspaceGoals = field(default_factory=NullspaceGoals)

    def validate(self):
        method_id(self.method)
        positive = ('position_tolerance', 'orientation_tolerance', 'timeout', 'max_step', 'svd_cutoff')
        for name in positive:
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f'{name} must be a positive finite number, got {value}')
        for name in ('damping', 'damping_max', 'epsilon', 'lm_bias'):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0:
                raise ValueError(f'{name} must be >= 0, got {value}')
        if self.max_iterations < 1 or self.patience < 1 or self.max_attempts < 0:
            raise ValueError('max_iterations and patience must be >= 1, max_attempts >= 0')
        w = np.asarray(self.weights, dtype=float)
        if w.shape != (6,) or not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
            raise ValueError(f'weights must be 6 finite values >= 0, not all zero; got {self.weights}')
        if self.mode not in ('first', 'closest'):
            raise ValueError(f"mode must be 'first' or 'closest', got '{self.mode}'")


@dataclass(slots=True)
class IKResult:
    """Outcome of one solve.

    ``joints`` is never NaN and always within the limits: on failure it holds
    the best approximation found, for callers that accept one.
    """

    success: bool
    joints: np.ndarray
    position_error: float
    orientation_error: float
    iterations: int
    restarts: int
    elapsed: float
    reason: str = REASON_OK
    message: str = ''
    sigma_min: float = float('nan')   # of the best failed attempt: tells a singular stall


# Layout of the float parameter vector passed to the kernel.
FP_ALPHA, FP_DAMPING, FP_DAMPING_MAX, FP_EPSILON, FP_CUTOFF, FP_LM_BIAS = range(6)
FP_MAX_STEP, FP_TOL_POS, FP_TOL_ROT, FP_NS_GAIN = range(6, 10)


@njit(cache=True)
def rotation_error(R_target, R):
    """Rotation vector of R_target R^T: the base-frame rotation that takes R to R_target."""
    E = np.empty((3, 3))
    for r in range(3):
        for k in range(3):
            E[r, k] = R_target[r, 0] * R[k, 0] + R_target[r, 1] * R[k, 1] + R_target[r, 2] * R[k, 2]
    c = min(1.0, max(-1.0, 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)))
    angle = np.arccos(c)
    w = np.array([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]])
    if angle < 1e-6:
        return 0.5 * w
    if np.pi - angle < 1e-4:
        k = 0
        for i in range(1, 3):
            if E[i, i] > E[k, k]:
                k = i
        axis = E[:, k].copy()
        axis[k] += 1.0
        axis /= np.sqrt(2.0 * (1.0 + E[k, k]))
        if axis @ w < 0.0:
            axis = -axis
        return angle * axis
    return angle / (2.0 * np.sin(angle)) * w


@njit(cache=True)
def _task_error(R_target, p_target, R, p, e):
    e[:3] = p_target - p
    e[3:] = rotation_error(R_target, R)


@njit(cache=True)
def _masked_errors(e, sw):
    pe = 0.0
    re = 0.0
    for i in range(3):
        if sw[i] > 0.0:
            pe += e[i] * e[i]
        if sw[i + 3] > 0.0:
            re += e[i + 3] * e[i + 3]
    return np.sqrt(pe), np.sqrt(re)


@njit(cache=True)
def _attempt(q, chain, lower, upper, R_target, p_target, sw, method, fp, max_iter, patience,
             ns_weights, q_pref, pole, elbow, elbow_offset, ns_iters, out):
    """Iterate from q (modified in place) until converged, stalled or max_iter.

    out receives (position error, orientation error, iterations, sigma_min).
    """
    origin_R, origin_p, axis, kind, var, mult, offset = chain
    n = axis.shape[0]
    n_var = q.shape[0]
    R_out = np.empty((n + 1, 3, 3))
    p_out = np.empty((n + 1, 3))
    a_out = np.empty((n, 3))
    J = np.empty((6, n_var))
    e = np.empty(6)
    ns_active = ns_weights.sum() > 0.0
    q_conv = q.copy()
    have_conv = False
    ns_done = 0
    best = np.inf
    stall = 0
    limit = max_iter + 3 * ns_iters if ns_active else max_iter
    for it in range(limit + 1):
        kin.frames(q, origin_R, origin_p, axis, kind, var, mult, offset, R_out, p_out, a_out)
        _task_error(R_target, p_target, R_out[n], p_out[n], e)
        pe, re = _masked_errors(e, sw)
        out[0], out[1], out[2] = pe, re, it
        if not (np.isfinite(pe) and np.isfinite(re)):
            return NOT_FINITE
        within = pe < fp[FP_TOL_POS] and re < fp[FP_TOL_ROT]
        if within:
            if not ns_active or ns_done >= ns_iters:
                return CONVERGED
            q_conv[:] = q
            have_conv = True
        if it == limit:
            break
        kin.point_jacobian(p_out, a_out, kind, var, mult, p_out[n], n - 1, J)
        for r in range(6):
            J[r] *= sw[r]
            e[r] *= sw[r]
        dq = step(method, J, e, fp)
        # Secondary goals: mixed into every step before convergence; afterwards a
        # bounded nullspace step only from a converged pose, so the primary task
        # re-converges in between and every recorded pose meets the tolerance.
        if ns_active and (within or not have_conv):
            z = -fp[FP_NS_GAIN] * gradient(q, chain, lower, upper, sw, ns_weights, q_pref, pole,
                                           elbow, elbow_offset, R_out, p_out, a_out)
            nz = nullspace_projector(J, fp[FP_CUTOFF]) @ z
            if have_conv:
                ns_done += 1
                largest = np.abs(nz).max()
                if largest < NS_SETTLED:
                    return CONVERGED
                if largest > NS_MAX_STEP:
                    nz *= NS_MAX_STEP / largest
            dq += nz
        largest = np.abs(dq).max()
        if largest > fp[FP_MAX_STEP]:
            dq *= fp[FP_MAX_STEP] / largest
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
                out[3] = np.linalg.svd(J)[1][-1]
                return STALLED
    if have_conv:
        q[:] = q_conv
        kin.frames(q, origin_R, origin_p, axis, kind, var, mult, offset, R_out, p_out, a_out)
        _task_error(R_target, p_target, R_out[n], p_out[n], e)
        out[0], out[1] = _masked_errors(e, sw)
        return CONVERGED
    kin.point_jacobian(p_out, a_out, kind, var, mult, p_out[n], n - 1, J)
    out[3] = np.linalg.svd(J)[1][-1]
    return MAX_ITER


# Layout of the int parameter vector: per-attempt limits and the attempt chunk.
IP_MAX_ITER, IP_PATIENCE, IP_NS_ITERS, IP_ELBOW, IP_ATTEMPTS, IP_RESEED, IP_SEED, IP_FIRST_FROM_SEED = range(8)
# Layout of the search kernel's report.
OUT_POS, OUT_ROT, OUT_ITERS, OUT_SIGMA, OUT_ATTEMPTS, OUT_STATUS = range(6)


@njit(cache=True)
def _search_chunk(q, chain, lower, upper, R_target, p_target, sw, method, fp, ip,
                  ns_weights, q_pref, pole, elbow_offset, best_q, report):
    """Run up to ip[IP_ATTEMPTS] attempts: from q first (if asked), then from random starts.

    Random starts are uniform within lower/upper, which for continuous joints
    the caller sets to seed +- pi.
    Returns CONVERGED with the solution in q, or the status of the best
    attempt so far, whose joints stay in best_q and errors in report.
    Restarts live here, not in Python, because a Python round trip per
    attempt costs more than a whole converging attempt.
    """
    if ip[IP_RESEED]:
        np.random.seed(ip[IP_SEED])
    n_var = q.shape[0]
    out = np.zeros(4)
    status = MAX_ITER
    for k in range(ip[IP_ATTEMPTS]):
        if k > 0 or not ip[IP_FIRST_FROM_SEED]:
            for i in range(n_var):
                q[i] = np.random.uniform(lower[i], upper[i])
        status = _attempt(q, chain, lower, upper, R_target, p_target, sw, method, fp, ip[IP_MAX_ITER],
                          ip[IP_PATIENCE], ns_weights, q_pref, pole, ip[IP_ELBOW], elbow_offset,
                          ip[IP_NS_ITERS], out)
        report[OUT_ATTEMPTS] += 1
        report[OUT_ITERS] += out[2]
        if status == CONVERGED:
            report[OUT_POS], report[OUT_ROT] = out[0], out[1]
            report[OUT_STATUS] = CONVERGED
            return CONVERGED
        if status != NOT_FINITE and out[0] + out[1] < report[OUT_POS] + report[OUT_ROT]:
            best_q[:] = q
            report[OUT_POS], report[OUT_ROT], report[OUT_SIGMA] = out[0], out[1], out[3]
            report[OUT_STATUS] = status
    return status


SEED_OK, SEED_NOT_FINITE, SEED_OUTSIDE = 0, 1, 2
SEED_SLACK = 1e-6


@njit(cache=True)
def _prepare_seed(seed, lower, upper, continuous, clamped, search_lower, search_upper):
    """Check a seed, clamp it into the limits, and set the search bounds (continuous joints: seed +- pi)."""
    code = SEED_OK
    for i in range(seed.shape[0]):
        if not np.isfinite(seed[i]):
            return SEED_NOT_FINITE
        if seed[i] < lower[i] - SEED_SLACK or seed[i] > upper[i] + SEED_SLACK:
            code = SEED_OUTSIDE
        clamped[i] = min(upper[i], max(lower[i], seed[i]))
        if continuous[i]:
            search_lower[i], search_upper[i] = seed[i] - np.pi, seed[i] + np.pi
        else:
            search_lower[i], search_upper[i] = lower[i], upper[i]
    return code


def wrap_near(q, reference, continuous):
    """Continuous joints moved by whole turns to lie within pi of the reference."""
    d = np.where(continuous, np.remainder(q - reference + np.pi, 2 * np.pi) - np.pi, q - reference)
    return np.where(continuous, reference + d, q)


class IKSolver:
    """Inverse kinematics of one chain: ``IKSolver(chain).solve(target_4x4, seed)``.

    Options are fixed per solver (``SolverOptions``) and may be overridden per
    call by keyword, e.g. ``solve(T, q0, method='dls', timeout=0.01)``.
    """

    def __init__(self, chain, options=None, **overrides):
        self.chain = chain
        self._reach = self._reach_bound()
        self._has_continuous = bool(chain.continuous.any())
        self.options = replace(options or SolverOptions(), **overrides)
        self._plan = self._prepare(self.options)

    def solve(self, target, seed=None, **overrides):
        """Joint positions that put the tip at ``target`` (4x4, base frame).

        ``seed`` defaults to the middle of the limits.  Raises ValueError on
        invalid input; every other failure is an IKResult with success False.
        """
        start = time.perf_counter()
        plan = self._prepare(replace(self.options, **overrides)) if overrides else self._plan
        target = check_pose(target)
        seed, bounds = self._check_seed(seed)
        d = target[:3, 3] - self.chain.origin_p[0]
        if plan.reach_check and d @ d > self._reach * self._reach:
            return self._unreachable(target, seed, bounds, plan, start, float(np.sqrt(d @ d)))
        return self._search(target, seed, bounds, plan, start)

    def solve_batch(self, targets, seeds=None, **overrides):
        """Solve many targets (B x 4 x 4), or one target from many seeds (seeds B x n)."""
        targets = np.asarray(targets, dtype=float)
        if targets.ndim == 2:
            if seeds is None:
                raise ValueError('solve_batch with one target needs a batch of seeds')
            targets = np.broadcast_to(targets, (len(seeds), 4, 4))
        if seeds is None:
            seeds = [None] * len(targets)
        elif len(seeds) != len(targets):
            raise ValueError(f'{len(targets)} targets but {len(seeds)} seeds')
        return [self.solve(t, s, **overrides) for t, s in zip(targets, seeds)]

    def _unreachable(self, target, seed, bounds, plan, start, distance):
        """Out of reach for certain: one chunk of attempts only, for the best approximation."""
        result = self._search(target, seed, bounds, plan, start, one_chunk=True)
        result.reason = REASON_UNREACHABLE
        result.message = (f'target is {distance:.3f} m from the first joint, beyond the chain reach of '
                          f'{self._reach:.3f} m; best approximation error {result.position_error:.3f} m')
        return result

    def _prepare(self, opts):
        """Validate options and turn them into the kernel's arguments, once per option set."""
        opts.validate()
        weights, q_pref, pole, elbow, elbow_offset = opts.nullspace.validate(self.chain)
        fp = np.array([opts.alpha, opts.damping, opts.damping_max, opts.epsilon, opts.svd_cutoff,
                       opts.lm_bias, opts.max_step, opts.position_tolerance,
                       opts.orientation_tolerance, opts.nullspace.gain])
        sw = np.sqrt(np.asarray(opts.weights, dtype=float))
        ip = np.zeros(8, dtype=np.int64)
        ip[IP_MAX_ITER], ip[IP_PATIENCE] = opts.max_iterations, opts.patience
        ip[IP_NS_ITERS], ip[IP_ELBOW] = opts.nullspace.iterations, elbow
        ip[IP_ATTEMPTS], ip[IP_SEED] = ATTEMPTS_PER_CHUNK, opts.random_seed
        ns_args = (weights, q_pref, pole, np.ascontiguousarray(elbow_offset, dtype=float))
        return _Plan(opts, method_id(opts.method), fp, sw, ip, ns_args, bool(sw[:3].any()))

    def _search(self, target, seed, bounds, plan, start, one_chunk=False):
        opts = plan.options
        continuous = self.chain.continuous
        lower, upper = bounds
        R_target = np.ascontiguousarray(target[:3, :3])
        p_target = np.ascontiguousarray(target[:3, 3])
        ip = plan.ip.copy()
        ip[IP_RESEED] = ip[IP_FIRST_FROM_SEED] = 1
        report = _REPORT_START.copy()
        best_q = seed.copy()
        chosen = None
        while True:
            if opts.max_attempts:
                ip[IP_ATTEMPTS] = min(ip[IP_ATTEMPTS], opts.max_attempts - int(report[OUT_ATTEMPTS]))
            q = seed.copy()
            status = _search_chunk(q, self.chain.kin_args, lower, upper, R_target, p_target, plan.sw,
                                   plan.method, plan.fp, ip, *plan.ns_args, best_q, report)
            ip[IP_RESEED] = ip[IP_FIRST_FROM_SEED] = 0
            if status == CONVERGED:
                q = wrap_near(q, seed, continuous) if self._has_continuous else q
                if chosen is None or _linf(q, seed) < _linf(chosen[0], seed):
                    chosen = (q, report[:2].copy())
                if opts.mode == 'first':
                    break
                report[OUT_POS] = report[OUT_ROT] = np.inf
            if one_chunk or time.perf_counter() - start >= opts.timeout \
                    or report[OUT_ATTEMPTS] == opts.max_attempts:
                break
        iterations, attempts = int(report[OUT_ITERS]), int(report[OUT_ATTEMPTS])
        if chosen is not None:
            q, o = chosen
            # Every iterate is clamped into the limits inside the kernel: nothing to clip here.
            return IKResult(True, q, float(o[0]), float(o[1]), iterations, attempts - 1,
                            time.perf_counter() - start)
        return self._failure(best_q, report, seed, start, opts)

    def _failure(self, q, report, seed, start, opts):
        pe, re, sigma, status = report[OUT_POS], report[OUT_ROT], report[OUT_SIGMA], report[OUT_STATUS]
        iterations, attempts = int(report[OUT_ITERS]), int(report[OUT_ATTEMPTS])
        q = wrap_near(q, seed, self.chain.continuous)
        at_limit = np.any((np.abs(q - self.chain.lower) < 1e-9) | (np.abs(q - self.chain.upper) < 1e-9))
        if not np.isfinite(pe):
            reason, message = REASON_TIMEOUT, 'every attempt diverged to non-finite values'
        else:
            if status == STALLED and sigma < 1e-3:
                reason = REASON_SINGULAR
            elif status == STALLED and at_limit:
                reason = REASON_JOINT_LIMITS
            else:
                reason = REASON_TIMEOUT
            message = (f'no solution within tolerance after {attempts} attempts in {opts.timeout * 1e3:.1f} ms; '
                       f'best error {pe:.2e} m, {re:.2e} rad')
        return self._result(False, q, pe, re, iterations, attempts - 1, start, reason, message, sigma)

    def _result(self, success, q, pe, re, iterations, restarts, start, reason, message, sigma_min=np.nan):
        q = np.minimum(np.maximum(q, self.chain.lower), self.chain.upper)
        return IKResult(success, q, float(pe), float(re), iterations, max(restarts, 0),
                        time.perf_counter() - start, reason, message, float(sigma_min))

    def _check_seed(self, seed):
        """(seed clamped into the limits, search bounds); ValueError for a bad seed."""
        c = self.chain
        bounds = (np.empty(c.n), np.empty(c.n))
        if seed is None:
            seed = c.mid_configuration()
        seed = np.asarray(seed, dtype=float)
        if seed.shape != (c.n,):
            raise ValueError(f'seed has {seed.size} values, the chain has {c.n} joints ({", ".join(c.joint_names)})')
        clamped = np.empty(c.n)
        code = _prepare_seed(seed, c.lower, c.upper, c.continuous, clamped, *bounds)
        if code == SEED_NOT_FINITE:
            raise ValueError(f'seed contains NaN or inf: {seed.tolist()}')
        if code == SEED_OUTSIDE:
            outside = (seed < c.lower - SEED_SLACK) | (seed > c.upper + SEED_SLACK)
            names = [n for n, o in zip(c.joint_names, outside) if o]
            raise ValueError(f'seed is outside the joint limits for {", ".join(names)}')
        return clamped, bounds

    def _reach_bound(self):
        """Upper bound on the tip's distance from the first joint: link lengths plus prismatic travel."""
        c = self.chain
        reach = np.linalg.norm(c.origin_p[1:], axis=1).sum()
        for i in np.flatnonzero(c.kind == kin.PRISMATIC):
            j = c.var[i]
            travel = max(abs(c.lower[j]), abs(c.upper[j])) if np.isfinite(c.lower[j]) else np.inf
            reach += abs(c.mult[i]) * travel + abs(c.offset[i])
        return reach


@dataclass(frozen=True)
class _Plan:
    """Options turned into kernel arguments."""

    options: SolverOptions
    method: int
    fp: np.ndarray
    sw: np.ndarray
    ip: np.ndarray
    ns_args: tuple
    reach_check: bool   # a position goal exists, so an out-of-reach target fails at once


def _linf(q, seed):
    return float(np.abs(q - seed).max())


def sigma_min(J):
    """Smallest singular value of J, the distance to a singularity."""
    return float(np.linalg.svd(J, compute_uv=False)[-1])


__all__ = ['IKSolver', 'IKResult', 'SolverOptions', 'NullspaceGoals', 'METHOD_NAMES', 'manipulability',
           'sigma_min', 'wrap_near']
