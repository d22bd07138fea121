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
from dataclasses import dataclass, replace
import time

import numpy as np

from . import kinematics as kin
from .attempt import _workspace
from .batch import _solve_batch
from .clock import monotonic  # noqa: F401  (tests reach the kernels through this module)
from .methods import method_id, METHOD_NAMES
from .nullspace import NullspaceGoals
from .options import _OPTION_NAMES, MODE_MANIPULABILITY, MODES, SolverOptions
from .plan import (  # noqa: F401
    _pack, FP_BOUNDS, FP_CENTER, FP_ELBOW_OFFSET, FP_NS_W, FP_POLE, FP_SIZE, FP_SW, FP_TIMEOUT, IP_BOUNDS, IP_ELBOW,
    IP_MAX_ATTEMPTS, IP_MAX_ITER, IP_METHOD, IP_MODE, IP_NS_ITERS, IP_PATIENCE, IP_PLAIN, IP_ROWS, IP_SEED, IP_SIZE,
    IP_TARGET_FRAME, IP_YIELD, kernel_variant, RP_ATTEMPTS, RP_BEST_ERR, RP_CHOSEN, RP_DISTANCE, RP_EVALUATED,
    RP_ITERS, RP_JUMP, RP_POLE_SIDE, RP_POS, RP_REASON, RP_ROT, RP_SIZE, RP_TASK, W_BEST, W_CAND, W_EVAL, W_SIZE)
from .results import (
    BatchResult, IKResult, POLE_SIDE_UNREACHABLE, R_COLLISION, R_SUCCESS, R_UNREACHABLE, REASON_COLLISION, REASON_OK,
    REASONS)
from .search import (
    _conclude, _offer, _prepare_seed, _score, _search, _solve_fast, _solve_one, _summary, CANDIDATE, POSE_INVALID,
    SEED_NOT_FINITE, SEED_OK, SEED_SLACK)
from .transforms import check_pose, rotation_error
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
