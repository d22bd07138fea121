"""The IK solve loop: error -> Jacobian -> step -> clamp -> converged?, with restarts, in compiled code.

The whole search runs in numba kernels: attempts from the seed and then from
random starts, the choice among solutions (``mode``), and the wall clock,
read inside the iteration loop (``clock.monotonic``), so a solve returns within
its timeout plus one iteration whatever the options.  Python only validates
input, picks a cached plan (the options turned into kernel arrays) and builds
the result; ``solve_batch`` runs the same kernel over a batch with ``prange``.
The kernels Python calls release the GIL (``nogil``; every call has its own
work arrays), so a node's other callbacks run while a long solve is under way.

Random restarts draw from a counter-based generator seeded by (``random_seed``,
item index), so a solve is reproducible for a given seed as long as it
finishes within the same number of attempts (``max_attempts`` bounds that
count for full determinism), and a batch item does not depend on the thread
that ran it.

Goals: weights (0 frees an axis) and per-axis ``bounds`` may be given in the
base frame or the target (tool) frame; convergence uses the weighted, masked
error (``task_error``), while results always report the true position and
orientation error of the returned joints.

Compilation is per kernel variant (``kernel_variant``): a solver compiles, on
construction, only the step method and goals its options use.  The compiled
kernels are cached by source content (``kernel_cache``), so a change in any
kernel file recompiles every kernel that could inline it.
"""
from dataclasses import dataclass, field, fields, replace
import numbers
import time

from numba import njit, prange
from numba.extending import overload
import numpy as np

from . import kinematics as kin
from .clock import monotonic
from .methods import LM, lm_step_into, method_id, METHOD_NAMES, smallest_singular_value, step_into
from .nullspace import NS_SETTLED, NullspaceGoals, pole_side, secondary_step, weighted_manipulability
from .transforms import check_pose, pose_defect, rotation_error

# Attempt outcomes.
CONVERGED, STALLED, MAX_ITER, NOT_FINITE, TIMED_OUT = 0, 1, 2, 3, 4
# Search kernel outcomes: finished, or (with a collision checker) a candidate to check in Python.
FINISHED, CANDIDATE = 0, 1
#: Stall test: an attempt restarts after ``patience`` iterations without the error
#: dropping below PROGRESS x its best; close to the goal (error < NEAR_ERROR) slow
#: but steady progress (NEAR_PROGRESS) still counts, so converging attempts finish.
PROGRESS = 0.9
NEAR_ERROR = 1e-3
NEAR_PROGRESS = 0.99
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
MAX_RANDOM_SEED = 2 ** 63 - 1

# Reasons, stable strings for logs and the ROS service, indexed by the kernels' reason codes.
REASONS = ('success', 'unreachable', 'timeout', 'joint_limits', 'singular', 'invalid_input', 'collision')
(R_SUCCESS, R_UNREACHABLE, R_TIMEOUT, R_JOINT_LIMITS, R_SINGULAR, R_INVALID, R_COLLISION) = range(7)
REASON_OK, REASON_UNREACHABLE, REASON_TIMEOUT, REASON_JOINT_LIMITS, REASON_SINGULAR, REASON_INVALID, \
    REASON_COLLISION = REASONS
#: Message prefix of a success whose elbow is not on the pole's side (no such solution found within the timeout).
POLE_SIDE_UNREACHABLE = 'pole_side_unreachable'
MODES = ('first', 'closest', 'manipulability')
MODE_FIRST, MODE_CLOSEST, MODE_MANIPULABILITY = range(3)

# Layout of the float parameter vector (the methods read indices 0-5, see methods.step).
FP_ALPHA, FP_DAMPING, FP_DAMPING_MAX, FP_EPSILON, FP_CUTOFF, FP_LM_BIAS = range(6)
FP_MAX_STEP, FP_TOL_POS, FP_TOL_ROT, FP_NS_GAIN, FP_JUMP, FP_REACH, FP_TIMEOUT = range(6, 13)
FP_SW, FP_BOUNDS, FP_NS_W, FP_POLE, FP_ELBOW_OFFSET, FP_CENTER = 13, 19, 25, 29, 32, 35
FP_SIZE = 38
# Layout of the int parameter vector.
IP_MAX_ITER, IP_PATIENCE, IP_NS_ITERS, IP_ELBOW, IP_MAX_ATTEMPTS, IP_MODE, IP_TARGET_FRAME, IP_BOUNDS, \
    IP_YIELD, IP_SEED, IP_METHOD, IP_ROWS, IP_PLAIN = range(13)
IP_SIZE = 13
# Layout of the search report.
(RP_ATTEMPTS, RP_ITERS, RP_BEST_ERR, RP_BEST_SIGMA, RP_BEST_STATUS, RP_CHOSEN, RP_SCORE, RP_POS, RP_ROT,
 RP_TASK, RP_REASON, RP_DISTANCE, RP_POLE_SIDE, RP_JUMP, RP_EVALUATED, RP_EVAL_POS, RP_EVAL_ROT,
 RP_EVAL_TASK) = range(18)
RP_SIZE = 18
# Rows of the work array: current q, best failed attempt, candidate, chosen solution, and the last joints
# whose errors were evaluated (report RP_EVAL_*: _conclude reuses them when it returns exactly these joints).
W_Q, W_BEST, W_CAND, W_CHOSEN, W_EVAL = range(5)
W_SIZE = 5
# Layout of an attempt's output: masked position and rotation error, iterations, sigma_min, task error,
# true position and rotation error, and whether they were evaluated at the attempt's final q.
OUT_POS, OUT_ROT, OUT_ITERS, OUT_SIGMA, OUT_TASK, OUT_TRUE_POS, OUT_TRUE_ROT, OUT_EVALUATED = range(8)
OUT_SIZE = 8


# Kernel variants.  numba compiles a kernel once per argument *type*, not per value: a plan hands the
# kernels a tuple of zeros whose length encodes whether its method is lm (else the other four, chosen at
# run time) and whether it has ranking or nullspace goals.  So the default solve compiles neither the
# nullspace goals nor the SVD-based methods (about two thirds of the compile time), while all variants
# together stay four kernels (a node or a warm-up that uses everything compiles little more than before).
def kernel_variant(method, goals):
    """Return the variant tuple of a plan: one zero, one more unless lm, two more with goals."""
    return (0,) * (1 + (method != LM) + 2 * bool(goals))


def _variant_of(length):
    """Return (lm only?, goals?) of a variant tuple's length."""
    return (length - 1) % 2 == 0, length > 2


def _number(name, value, low=-np.inf, high=np.inf, integer=False, open_low=False):
    """Check one option's type and range; ValueError with the option's name otherwise."""
    kinds = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = 'an integer' if integer else 'a number'
        raise ValueError(f'{name} must be {kind}, got {type(value).__name__} {value!r}')
    if not integer and not np.isfinite(value):
        if not (value == np.inf and high == np.inf):
            raise ValueError(f'{name} must be finite, got {value}')
    if value < low or value > high or (open_low and value == low):
        bound = '>' if open_low else '>='
        raise ValueError(f'{name} must be {bound} {low:g} and <= {high:g}, got {value}')


#: Smallest non-zero task weight (weights are relative; 0 frees an axis).
MIN_WEIGHT = 1e-9


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
    weights: tuple = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)  # (x, y, z, rx, ry, rz); 0 frees an axis
    weights_frame: str = 'base'           # 'base' or 'target': the frame of weights' axes
    bounds: tuple = None                  # per-axis tolerances (x y z rx ry rz) in the target frame; inf frees
    position_only: bool = False           # ignore orientation (same as weights (1, 1, 1, 0, 0, 0))
    orientation_only: bool = False        # ignore position
    mode: str = 'first'                   # 'first', 'closest' (L-inf from the seed) or 'manipulability'
    jump_threshold: float = np.inf        # mode 'first': a larger joint move searches on for the closest
    random_seed: int = 0
    nullspace: NullspaceGoals = field(default_factory=NullspaceGoals)

    def validate(self):
        """Raise ValueError, naming the option, for any bad type or value."""
        if not isinstance(self.method, str):
            raise ValueError(f'method must be a string, got {type(self.method).__name__}')
        method_id(self.method)
        for name in ('position_tolerance', 'orientation_tolerance', 'max_step', 'svd_cutoff'):
            _number(name, getattr(self, name), 0.0, 1e6, open_low=True)
        _number('timeout', self.timeout, 0.0, 3600.0, open_low=True)
        _number('alpha', self.alpha, -1e6, 1e6)
        for name in ('damping', 'damping_max', 'epsilon', 'lm_bias'):
            _number(name, getattr(self, name), 0.0, 1e6)
        _number('max_iterations', self.max_iterations, 1, 10 ** 7, integer=True)
        _number('patience', self.patience, 1, 10 ** 9, integer=True)
        _number('max_attempts', self.max_attempts, 0, 10 ** 9, integer=True)
        _number('random_seed', self.random_seed, 0, MAX_RANDOM_SEED, integer=True)
        _number('jump_threshold', self.jump_threshold, 0.0, np.inf, open_low=True)
        for name in ('position_only', 'orientation_only'):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f'{name} must be True or False, got {getattr(self, name)!r}')
        if self.position_only and self.orientation_only:
            raise ValueError('position_only and orientation_only exclude each other')
        self.task_weights()
        self.task_bounds()
        for name, allowed in (('mode', MODES), ('weights_frame', ('base', 'target'))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        if not isinstance(self.nullspace, NullspaceGoals):
            raise ValueError(f'nullspace must be a NullspaceGoals, got {type(self.nullspace).__name__}')

    def task_weights(self):
        """Return the 6 weights with position_only / orientation_only applied; ValueError if unusable."""
        w = _six('weights', self.weights)
        if np.any(w < 0) or not np.all(np.isfinite(w)) or np.any(w > 1e12):
            raise ValueError(f'weights must be 6 finite values >= 0, got {w.tolist()}')
        if np.any((w > 0) & (w < MIN_WEIGHT)):  # a tiny weight is a typo, and its inverse overflows
            raise ValueError(f'weights must be 0 or at least {MIN_WEIGHT:g}, got {w.tolist()}')
        if self.position_only:
            w[3:] = 0.0
        if self.orientation_only:
            w[:3] = 0.0
        if not np.any(w > 0):
            raise ValueError(f'weights leave no axis to solve for (weights {self.weights}, '
                             f'position_only={self.position_only}, orientation_only={self.orientation_only})')
        return w

    def task_bounds(self):
        """Return the 6 bounds (0 where none is given); ValueError for negative or NaN ones."""
        if self.bounds is None:
            return np.zeros(6)
        b = _six('bounds', self.bounds)
        if np.any(np.isnan(b)) or np.any(b < 0):
            raise ValueError(f'bounds must be 6 values >= 0 (inf frees an axis), got {b.tolist()}')
        return b


def _six(name, values):
    try:
        array = np.array(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f'{name} must be 6 numbers (x y z rx ry rz): {exc}') from None
    if array.shape != (6,):
        raise ValueError(f'{name} must be 6 numbers (x y z rx ry rz), got shape {array.shape}')
    return array


_OPTION_NAMES = frozenset(f.name for f in fields(SolverOptions))


@dataclass(slots=True)
class IKResult:
    """Outcome of one solve.

    ``joints`` is never NaN and always within the limits: on failure it holds
    the best approximation found (for 'collision': the seed).
    ``position_error`` (m) and ``orientation_error`` (rad) are the TRUE errors of
    ``joints`` on all axes, whatever the weights; ``task_error`` is the weighted,
    masked error convergence used (sqrt(sum w_i e_i^2), after bounds).
    ``sigma_min``, the smallest singular value of the task Jacobian at ``joints``
    (masked rows left out), is computed exactly (SVD) when first read.
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
    task_error: float = float('nan')
    _task: tuple = field(default=None, repr=False, compare=False)   # (target, plan.args)
    _sigma: float = field(default=float('nan'), repr=False, compare=False)

    @property
    def sigma_min(self):
        """Smallest singular value of the task Jacobian at ``joints``: the distance to a singularity."""
        if self._sigma != self._sigma and self._task is not None:
            T, (chain, _, _, fp, ip, _) = self._task
            self._sigma = float(_exact_sigma(np.ascontiguousarray(self.joints, dtype=float), chain, T, fp, ip))
        return self._sigma


@dataclass
class BatchResult:
    """Outcome of ``solve_batch``: one row per item (``sigma_min`` computed when first read)."""

    joints: np.ndarray              # (B, n)
    success: np.ndarray             # (B,) bool
    position_error: np.ndarray      # (B,) true, m
    orientation_error: np.ndarray   # (B,) true, rad
    task_error: np.ndarray          # (B,)
    iterations: np.ndarray          # (B,) int
    reasons: list                   # B strings
    elapsed: float                  # s, whole batch
    pole_side_missed: np.ndarray = None   # (B,) bool: success, but no elbow on the pole's side within the timeout
    _task: tuple = field(default=None, repr=False, compare=False)
    _sigma: np.ndarray = field(default=None, repr=False, compare=False)

    def __len__(self):
        return len(self.reasons)

    @property
    def sigma_min(self):
        """(B,) smallest singular values of the task Jacobians at ``joints``."""
        if self._sigma is None:
            targets, (chain, _, _, fp, ip, _) = self._task
            self._sigma = np.array([_exact_sigma(q, chain, T, fp, ip) for q, T in zip(self.joints, targets)])
        return self._sigma


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


def _pack(chain, lower, upper, fp, ip, q_pref):
    """Put the kernels' arguments in three arrays (``_unpack`` views them): each array argument costs dispatch time.

    A float64 vector (the joint count n, the int arrays kind, var and ip as
    int64 bit patterns, then the float vectors), origin_R, and the rows of
    origin_p and axis: slices of these are free in numba, reshapes are not.
    """
    origin_R, origin_p, axis, kind, var, mult, offset = chain
    ints = np.concatenate([kind, var, ip]).astype(np.int64)
    vector = np.concatenate([[float(len(kind))], ints.view(np.float64), mult, offset, lower, upper, fp, q_pref])
    return vector, np.ascontiguousarray(origin_R), np.concatenate([origin_p, axis])


@njit(cache=True, inline='always')
def _unpack(vector, origin_R, rows, n_var):
    """Return views of ``_pack``'s arrays: (chain, lower, upper, fp, ip, q_pref)."""
    n = int(vector[0])
    ints = vector[1:1 + 2 * n + IP_SIZE].view(np.int64)
    f = vector[1 + 2 * n + IP_SIZE:]
    e0 = n
    e1 = e0 + n
    e2 = e1 + n_var
    e3 = e2 + n_var
    e4 = e3 + FP_SIZE
    chain = (origin_R, rows[:n + 1], rows[n + 1:], ints[:n], ints[n:2 * n], f[:e0], f[e0:e1])
    return chain, f[e1:e2], f[e2:e3], f[e3:e4], ints[2 * n:], f[e4:]


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


@njit(cache=True, parallel=True, nogil=True)
def _solve_batch(variant, targets, seeds, chain, lower, upper, fp, ip, q_pref, Q_out, reports):
    """Solve every item in parallel; each item has its own deadline and generator (index = item)."""
    B = targets.shape[0]
    n_var = seeds.shape[1]
    for b in prange(B):
        report = reports[b]
        T = targets[b]
        if pose_defect(T) != 0:
            Q_out[b] = seeds[b]
            report[RP_REASON] = R_INVALID
            continue
        work = np.empty((W_SIZE, n_var))
        rng = np.zeros(1, dtype=np.uint64)
        Rt, pt, bounds, clamped = _solve_arrays(T, n_var)
        deadline = monotonic() + fp[FP_TIMEOUT]
        if _start(seeds[b], chain, lower, upper, Rt, pt, fp, ip, b, bounds, rng, work, report) != SEED_OK:
            for i in range(n_var):
                Q_out[b, i] = seeds[b, i] if np.isfinite(seeds[b, i]) else 0.0
            report[RP_REASON] = R_INVALID
            continue
        clamped[:] = work[W_Q]
        _solve_started(variant, clamped, chain, lower, upper, bounds, Rt, pt, fp, ip, q_pref, deadline, rng, work,
                       report, Q_out[b])


_FLOAT64 = np.dtype(np.float64)


@dataclass(frozen=True)
class _Plan:
    """Options turned into kernel arguments, once per option set."""

    options: SolverOptions
    fp: np.ndarray
    ip: np.ndarray
    q_pref: np.ndarray
    args: tuple     # the kernels' (chain, lower, upper, fp, ip, q_pref)
    packed: tuple   # the same, packed for _solve_fast
    variant: tuple  # the kernel variant (``kernel_variant``): the code this plan runs


#: Plans kept per solver for per-call overrides (least recently built dropped first).
PLAN_CACHE_SIZE = 64


class IKSolver:
    """Inverse kinematics of one chain: ``IKSolver(chain).solve(target_4x4, seed)``.

    Options are fixed per solver (``SolverOptions``) and may be overridden per
    call by keyword, e.g. ``solve(T, q0, method='dls', timeout=0.01)``; plans
    for override sets are cached, so an override costs about a dictionary look-up.
    ``collision``: any object with ``check(q) -> None | (link_a, link_b)``;
    converged solutions in collision are rejected and the search goes on.
    Construction compiles or loads the single-solve kernels (``warm_up``).
    """

    def __init__(self, chain, options=None, collision=None, **overrides):
        if options is not None and not isinstance(options, SolverOptions):
            raise ValueError(f'options must be a SolverOptions, got {type(options).__name__}')
        if collision is not None and not callable(getattr(collision, 'check', None)):
            raise ValueError('collision must have a check(q) method returning None or (link_a, link_b)')
        self.chain = chain
        self.collision = collision
        self._reach = self._reach_bound()
        self._limits = (np.ascontiguousarray(chain.lower, dtype=float), np.ascontiguousarray(chain.upper, dtype=float))
        self._kin = tuple(np.ascontiguousarray(a) for a in chain.kin_args)
        self._n_var = chain.n
        self._mid = np.ascontiguousarray(chain.mid_configuration(), dtype=float)   # the default seed, never written
        self.options = self._replace(options or SolverOptions(), overrides)
        self._plan = self._prepare(self.options)
        self._plans = {}
        _warm(self, batch=False)

    # ----------------------------------------------------------------- public API
    def solve(self, target, seed=None, **overrides):
        """Joint positions that put the tip at ``target`` (4x4 pose, or a 3-vector: position only; base frame).

        ``seed`` defaults to the middle of the limits.  Raises ValueError on
        invalid input; every other failure is an IKResult with success False.
        """
        start = time.perf_counter()
        plan = self._plan_for(overrides) if overrides else self._plan
        if seed is None:
            seed = self._mid
        # The fast kernel takes writeable C-contiguous float64 arrays, 2-D and 1-D, as they are (checked inline:
        # a function call here costs as much as a kernel iteration); any other type would compile a new kernel.
        if self.collision is None and type(target) is np.ndarray and type(seed) is np.ndarray \
                and target.dtype is _FLOAT64 and seed.dtype is _FLOAT64 and target.ndim == 2 and seed.ndim == 1 \
                and (f := target.flags).c_contiguous and f.writeable and (g := seed.flags).c_contiguous \
                and g.writeable:
            q = np.empty(self._n_var)
            code, summary = _solve_fast(plan.variant, target, seed, *plan.packed, start, q)
            if code == SEED_OK:
                reason, position, rotation, task, iterations, restarts, pole_missed, _, _ = summary
                if reason == R_SUCCESS and not pole_missed:   # the common case, without _result's call
                    return IKResult(True, q, position, rotation, iterations, restarts, time.perf_counter() - start,
                                    REASON_OK, '', task, (target, plan.args))
                return self._result(summary, q, target, plan, start)
        return self._solve_checked(target, seed, overrides, start)

    def solve_batch(self, targets, seeds=None, **overrides):
        """Solve many targets (B x 4 x 4, or B x 3 position-only), or one target from many seeds (seeds B x n).

        Runs in compiled code across all cores; each item has the solver's
        timeout and its own random generator, so results do not depend on the
        thread count.  An invalid item (bad pose, NaN seed, seed outside the
        limits) gets reason 'invalid_input' and the rest go on.  With a
        collision checker, successful items in collision become 'collision'
        (no further search per item).
        """
        start = time.perf_counter()
        targets, seeds, position_only = self._batch_arrays(targets, seeds)
        if position_only:
            overrides['position_only'] = True
        plan = self._plan_for(overrides) if overrides else self._plan
        B, n = seeds.shape
        Q = np.empty((B, n))
        reports = np.zeros((B, RP_SIZE))
        _solve_batch(plan.variant, targets, seeds, *plan.args, Q, reports)
        codes = reports[:, RP_REASON].astype(np.int64)
        if self.collision is not None:
            for b in np.flatnonzero(codes == R_SUCCESS):
                if self.collision.check(Q[b].copy()) is not None:
                    codes[b] = R_COLLISION
                    Q[b] = np.clip(seeds[b], self.chain.lower, self.chain.upper)
        return BatchResult(Q, codes == R_SUCCESS, reports[:, RP_POS], reports[:, RP_ROT], reports[:, RP_TASK],
                           reports[:, RP_ITERS].astype(np.int64), [REASONS[c] for c in codes],
                           time.perf_counter() - start, self._pole_missed(plan, codes, reports), (targets, plan.args))

    @staticmethod
    def _pole_missed(plan, codes, reports):
        """(B,) True where an item succeeded with its elbow off the pole's side (``pole_side_unreachable``)."""
        return (plan.ip[IP_ELBOW] >= 0) & (codes == R_SUCCESS) & (reports[:, RP_POLE_SIDE] == 0.0)

    def _solve_checked(self, target, seed, overrides, start):
        """Solve with the input normalised and checked: ValueError on bad input; the collision-checked search."""
        T, position_only = self._target(target)
        if position_only:
            overrides['position_only'] = True
        if self.collision is not None:
            overrides['_yield'] = True
        plan = self._plan_for(overrides) if overrides else self._plan
        seed = self._seed_array(seed)
        q_out = np.empty(self._n_var)
        if self.collision is None:   # the input is normalised to the one type the fast kernel was compiled for
            code, summary = _solve_fast(plan.variant, T, seed, *plan.packed, start, q_out)
            self._raise_for(code, T, seed)
            return self._result(summary, q_out, T, plan, start)
        work = np.empty((W_SIZE, self._n_var))
        report = np.empty(RP_SIZE)
        rng = np.zeros(1, dtype=np.uint64)
        deadline = start + plan.options.timeout
        code = _solve_one(plan.variant, T, seed, *plan.args, deadline, rng, work, report, q_out)
        self._raise_for(code, T, seed)
        if code < 0:
            return self._collision_search(T, seed, plan, deadline, rng, work, report, q_out, start)
        return self._result(_summary(plan.ip, report), q_out, T, plan, start)

    def _raise_for(self, code, T, seed):
        """Raise the ValueError a kernel's input code stands for (none for SEED_OK or a collision candidate)."""
        if code == POSE_INVALID:
            check_pose(T)
        if code > 0:
            self._raise_seed(seed, code)

    def warm_up(self):
        """Load every kernel, the parallel batch one included (construction loads the single-solve ones)."""
        _warm(self, batch=True)

    # ----------------------------------------------------------------- plans
    @staticmethod
    def _replace(options, overrides):
        unknown = set(overrides) - _OPTION_NAMES
        if unknown:
            raise ValueError(f"unknown solver option(s): {', '.join(sorted(unknown))}")
        return replace(options, **overrides)

    def _plan_for(self, overrides):
        try:
            key = tuple(overrides.items())   # keyword order matters for the key only, not the plan
            plan = self._plans.get(key)
        except TypeError:   # an unhashable value (a NullspaceGoals, a list): no caching
            key, plan = None, None
        if plan is None:
            overrides = dict(overrides)
            collision_yield = overrides.pop('_yield', False)
            plan = self._prepare(self._replace(self.options, overrides), collision_yield)
            if key is not None:
                if len(self._plans) >= PLAN_CACHE_SIZE:
                    self._plans.pop(next(iter(self._plans)))
                self._plans[key] = plan
        return plan

    def _prepare(self, opts, collision_yield=False):
        """Validate options and turn them into the kernel's arguments."""
        opts.validate()
        weights, q_pref, pole, elbow, elbow_offset = opts.nullspace.validate(self.chain)
        w = opts.task_weights()
        bounds = opts.task_bounds()
        fp = np.zeros(FP_SIZE)
        fp[:FP_TIMEOUT + 1] = [opts.alpha, opts.damping, opts.damping_max, opts.epsilon, opts.svd_cutoff,
                               opts.lm_bias, opts.max_step, opts.position_tolerance, opts.orientation_tolerance,
                               opts.nullspace.gain, opts.jump_threshold, self._reach_limit(w, bounds, opts),
                               opts.timeout]
        fp[FP_SW:FP_SW + 6] = np.sqrt(w)
        fp[FP_BOUNDS:FP_BOUNDS + 6] = bounds
        fp[FP_NS_W:FP_NS_W + 4] = weights if opts.nullspace.iterations > 0 else 0.0
        fp[FP_POLE:FP_POLE + 3] = pole
        fp[FP_ELBOW_OFFSET:FP_ELBOW_OFFSET + 3] = elbow_offset
        fp[FP_CENTER:FP_CENTER + 3] = self.chain.origin_p[0]
        ip = np.zeros(IP_SIZE, dtype=np.int64)
        ip[IP_MAX_ITER], ip[IP_PATIENCE], ip[IP_NS_ITERS] = opts.max_iterations, opts.patience, \
            opts.nullspace.iterations
        ip[IP_ELBOW] = elbow if weights[3] > 0 else -1
        ip[IP_MAX_ATTEMPTS], ip[IP_MODE] = opts.max_attempts, MODES.index(opts.mode)
        ip[IP_TARGET_FRAME], ip[IP_BOUNDS] = opts.weights_frame == 'target', opts.bounds is not None
        ip[IP_YIELD], ip[IP_SEED], ip[IP_METHOD] = collision_yield, opts.random_seed, method_id(opts.method)
        ip[IP_ROWS] = opts.weights_frame == 'target' or np.any(w != 1.0)
        q_pref = np.ascontiguousarray(q_pref, dtype=float)
        args = (self._kin, *self._limits, fp, ip, q_pref)
        ip[IP_PLAIN] = (opts.mode == 'first' and opts.jump_threshold == np.inf and ip[IP_ELBOW] < 0
                        and not np.any(fp[FP_NS_W:FP_NS_W + 4] > 0) and not collision_yield)
        goals = ip[IP_ELBOW] >= 0 or ip[IP_MODE] == MODE_MANIPULABILITY or np.any(fp[FP_NS_W:FP_NS_W + 4] > 0)
        return _Plan(opts, fp, ip, q_pref, args, _pack(*args), kernel_variant(ip[IP_METHOD], goals))

    def _reach_limit(self, w, bounds, opts):
        """Distance from the first joint beyond which the target is certainly out of reach (inf: no check).

        Only when every position axis is constrained: a free axis (weight 0 or
        infinite bound) can make a far target reachable.
        """
        if np.any(w[:3] == 0) or not np.all(np.isfinite(bounds[:3])):
            return np.inf
        return self._reach + opts.position_tolerance + float(np.linalg.norm(bounds[:3]))

    # ----------------------------------------------------------------- input checks
    def _target(self, target):
        """(4x4 contiguous float pose, position only?) from a 4x4 or a 3-vector; ValueError otherwise."""
        try:
            T = np.array(target, dtype=float, order='C')
        except (TypeError, ValueError) as exc:
            raise ValueError(f'target must be a 4x4 pose or a 3-vector position: {exc}') from None
        if T.shape == (3,):
            if not np.all(np.isfinite(T)):
                raise ValueError(f'target position contains NaN or inf: {T.tolist()}')
            pose = np.eye(4)
            pose[:3, 3] = T
            check_pose(pose, 'target')
            return pose, True
        if T.shape != (4, 4):
            raise ValueError(f'target must be a 4x4 pose or a 3-vector position, got shape {T.shape}')
        return T, False

    def _seed_array(self, seed):
        n = self.chain.n
        if type(seed) is np.ndarray and seed.shape == (n,) and seed.dtype == np.float64 \
                and seed.flags.c_contiguous and seed.flags.writeable:
            return seed
        try:
            array = np.array(seed, dtype=float, order='C')
        except (TypeError, ValueError) as exc:
            raise ValueError(f'seed must be {n} joint positions: {exc}') from None
        if array.shape != (n,):
            raise ValueError(f'seed must be a vector of {n} joint positions ({", ".join(self.chain.joint_names)}), '
                             f'got shape {array.shape}')
        return array

    def _raise_seed(self, seed, code):
        c = self.chain
        if code == SEED_NOT_FINITE:
            bad = [name for name, v in zip(c.joint_names, seed) if not np.isfinite(v)]
            raise ValueError(f'seed contains NaN or inf for {", ".join(bad)}')
        outside = (seed < c.lower - SEED_SLACK) | (seed > c.upper + SEED_SLACK)
        names = [name for name, o in zip(c.joint_names, outside) if o]
        raise ValueError(f'seed is outside the joint limits for {", ".join(names)}')

    def _batch_arrays(self, targets, seeds):
        n = self.chain.n
        try:
            T = np.array(targets, dtype=float)
            S = None if seeds is None else np.array(seeds, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f'solve_batch needs numeric arrays: {exc}') from None
        position_only = T.ndim in (1, 2) and T.shape[-1] == 3
        if position_only:
            P = T.reshape(-1, 3)
            T = np.broadcast_to(np.eye(4), (len(P), 4, 4)).copy()
            T[:, :3, 3] = P
            if targets is not None and np.ndim(targets) == 1:
                T = T[0]
        if T.shape == (4, 4):
            if S is None or S.ndim != 2:
                raise ValueError('solve_batch with one target needs a batch of seeds (B x n)')
            T = np.broadcast_to(T, (len(S), 4, 4))
        if T.ndim != 3 or T.shape[1:] != (4, 4):
            raise ValueError(f'targets must be B x 4 x 4 poses or B x 3 positions, got shape {T.shape}')
        if S is None:
            S = np.broadcast_to(self.chain.mid_configuration(), (len(T), n))
        elif S.shape == (n,):
            S = np.broadcast_to(S, (len(T), n))
        if S.shape != (len(T), n):
            raise ValueError(f'seeds must be {len(T)} x {n} (one per target), got shape {S.shape}')
        return np.ascontiguousarray(T), np.ascontiguousarray(S), position_only

    # ----------------------------------------------------------------- results
    def _collision_search(self, T, seed, plan, deadline, rng, work, report, q_out, start):
        """Run the search with a Python collision check on every converged candidate."""
        Rt, pt = np.ascontiguousarray(T[:3, :3]), np.ascontiguousarray(T[:3, 3])
        clamped = np.minimum(np.maximum(seed, self.chain.lower), self.chain.upper)
        search_bounds = np.empty((2, len(seed)))
        _prepare_seed(seed, *self._limits, np.empty(len(seed)), search_bounds[0], search_bounds[1])
        ws = _workspace(len(self._kin[2]), len(seed))
        collided, best_pair, best_score = 0, None, np.inf
        status = CANDIDATE
        while status == CANDIDATE:
            q = work[W_CAND].copy()
            pair = self.collision.check(q.copy())
            if pair is None:
                if _offer(plan.variant, q, clamped, self._kin, *self._limits, Rt, plan.fp, plan.ip, ws, work, report):
                    break
            else:
                collided += 1
                score = _score(plan.variant, q, clamped, self._kin, *self._limits, Rt, plan.fp, plan.ip, ws)[0]
                if score < best_score:
                    best_pair, best_score = tuple(pair), score
            if time.perf_counter() >= deadline:
                break
            status = _search(plan.variant, clamped, self._kin, *self._limits, search_bounds[0], search_bounds[1], Rt,
                             pt, plan.fp, plan.ip, plan.q_pref, deadline, rng, work, report)
        if report[RP_CHOSEN] == 0.0 and collided:
            work[W_BEST] = clamped
            report[RP_BEST_ERR] = np.inf
        _conclude(clamped, self._kin, *self._limits, Rt, pt, plan.fp, plan.ip, work, report, q_out)
        result = self._result(_summary(plan.ip, report), q_out, T, plan, start)
        if not result.success and collided:
            result.reason = REASON_COLLISION
            result.message = (f'{collided} solution(s) found, all in collision; the best one collides '
                              f'{best_pair[0]} with {best_pair[1]}; returning the seed')
        return result

    def _result(self, summary, q, T, plan, start):
        """Build the IKResult of a kernel's ``_summary``."""
        reason, position, rotation, task, iterations, restarts, pole_missed, distance, best = summary
        if reason == R_SUCCESS and not pole_missed:
            return IKResult(True, q, position, rotation, iterations, restarts, time.perf_counter() - start,
                            REASON_OK, '', task, (T, plan.args))
        if pole_missed:
            message = (f'{POLE_SIDE_UNREACHABLE}: no solution with the elbow on the pole side was found in '
                       f'{restarts + 1} attempts within the timeout; returning the best one on the other side')
        elif reason == R_UNREACHABLE:
            message = (f'target is {distance:.3f} m from the first joint, beyond the chain reach of '
                       f'{self._reach:.3f} m; best approximation error {position:.3f} m')
        elif not np.isfinite(best):
            message = f'every one of {restarts + 1} attempts diverged to non-finite values'
        else:
            message = (f'no solution within tolerance after {restarts + 1} attempts in '
                       f'{plan.options.timeout * 1e3:.1f} ms; best error {position:.2e} m, {rotation:.2e} rad '
                       f'(task error {task:.2e})')
        return IKResult(reason == R_SUCCESS, q, position, rotation, iterations, restarts,
                        time.perf_counter() - start, REASONS[reason], message, task, (T, plan.args))

    def _reach_bound(self):
        """Upper bound on the tip's distance from the first joint: link lengths plus prismatic travel."""
        c = self.chain
        reach = np.linalg.norm(c.origin_p[1:], axis=1).sum()
        for i in np.flatnonzero(c.kind == kin.PRISMATIC):
            j = c.var[i]
            travel = max(abs(c.lower[j]), abs(c.upper[j])) if np.isfinite(c.lower[j]) else np.inf
            reach += abs(c.mult[i]) * travel + abs(c.offset[i])
        return reach


_WARM = set()


class _FirstCollides:
    """A collision checker stand-in that rejects the first solution only: runs every collision-path kernel."""

    def __init__(self):
        self.calls = 0

    def check(self, q):
        self.calls += 1
        return ('warm', 'up') if self.calls == 1 else None


def _warm(solver, batch):
    """Load (or compile) the kernels of the solver's plan once per process; kernel types do not depend on the robot.

    Only what the plan runs: its variant (method, goals), the collision-checked search if the solver has a
    checker, the parallel batch kernel if asked.  Per-call overrides that change the variant compile theirs
    on first use.
    """
    q = np.ascontiguousarray(solver.chain.mid_configuration(), dtype=float)
    T = np.eye(4)   # any valid pose runs the same code (and the chain's own FK kernel need not compile here)
    variant = solver._plan.variant
    if ('solve', variant) not in _WARM:
        _WARM.add(('solve', variant))
        plain = solver if solver.collision is None else IKSolver(solver.chain, solver.options)
        plain.solve(T, q, max_attempts=1, timeout=10.0)   # float64 C arrays: the one type _solve_fast serves
    if solver.collision is not None and ('collision', variant) not in _WARM:
        _WARM.add(('collision', variant))
        IKSolver(solver.chain, solver.options, collision=_FirstCollides()).solve(T, q, max_attempts=3, timeout=10.0)
    if batch and ('batch', variant) not in _WARM:
        solver.solve_batch(T[None], q[None], max_attempts=1, timeout=10.0)
        _WARM.add(('batch', variant))


def wrap_near(q, reference, continuous):
    """Continuous joints moved by whole turns to lie within pi of the reference."""
    d = np.where(continuous, np.remainder(q - reference + np.pi, 2 * np.pi) - np.pi, q - reference)
    return np.where(continuous, reference + d, q)


def sigma_min(J):
    """Smallest singular value of J, the distance to a singularity."""
    return float(np.linalg.svd(J, compute_uv=False)[-1])


__all__ = ['IKSolver', 'IKResult', 'BatchResult', 'SolverOptions', 'NullspaceGoals', 'METHOD_NAMES', 'REASONS',
           'rotation_error', 'sigma_min', 'wrap_near']
