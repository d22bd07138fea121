"""IKSolver: inverse kinematics of one chain, the search in compiled code.

The whole search runs in numba kernels: attempts (``attempt``) from the seed
and then from random starts, the choice among solutions (``search``), and the
wall clock, read inside the iteration loop (``clock.monotonic``), so a solve
returns within its timeout plus one iteration whatever the options.  Python
only validates input, picks a cached plan (``plan``: the options turned into
the kernels' named data, ``kernel_data``) and builds the result (``results``);
``solve_batch`` runs the same kernels over a batch with ``prange`` (``batch``).
The kernels Python calls release the GIL (``nogil``; every call has its own
work arrays), so a node's other callbacks run while a long solve is under way.

Goals: weights (0 frees an axis) and per-axis ``bounds`` may be given in the
base frame or the target (tool) frame; convergence uses the weighted, masked
error (``task_error``), while results always report the true position and
orientation error of the returned joints.

Compilation is per kernel variant (``kernel_data.kernel_variant``): a solver
compiles, on construction, only the step method and goals its options use.
The compiled kernels are cached by source content (``kernel_cache``), so a
change in any kernel file recompiles every kernel that could inline it.
"""
from dataclasses import replace
import time

import numpy as np

from .attempt import workspace
from .batch import batch_arrays, solve_batch
from .kernel_data import kernel_variant, REPORT  # noqa: F401  (kernel_variant: part of this module's API)
from .methods import METHOD_NAMES
from .nullspace import NullspaceGoals
from .options import _OPTION_NAMES, SolverOptions
from .plan import chain_model, chain_reach, make_plan, retimed
from .reasons import Reason
from .results import BatchResult, IKResult, POLE_SIDE_UNREACHABLE, REASON_OK, REASONS
from .search import (CANDIDATE, conclude, new_search, offer, POSE_INVALID, R_SUCCESS, R_UNREACHABLE, rank, search,
                     SEED_NOT_FINITE, SEED_OK, SEED_SLACK, solve_fast, solve_one, summary)
from .transforms import check_pose, rotation_error

_FLOAT64 = np.dtype(np.float64)

#: Plans kept per solver for per-call overrides (least recently built dropped first).
PLAN_CACHE_SIZE = 64
#: An override list without a timeout (None is a timeout, and refused as one).
_NO_TIMEOUT = object()


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
        self._reach = chain_reach(chain)
        self._model = chain_model(chain)
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
        if seed is None:
            seed = self._mid
        # The fast kernel takes writeable C-contiguous float64 arrays, 2-D and 1-D, as they are (checked inline:
        # a function call here costs as much as a kernel iteration); any other type would compile a new kernel.
        if self.collision is None and type(target) is np.ndarray and type(seed) is np.ndarray \
                and target.dtype is _FLOAT64 and seed.dtype is _FLOAT64 and target.ndim == 2 and seed.ndim == 1 \
                and (f := target.flags).c_contiguous and f.writeable and (g := seed.flags).c_contiguous \
                and g.writeable:
            plan = self._plan_for(overrides) if overrides else self._plan
            q = np.empty(self._n_var)
            code, report = solve_fast(plan.variant, target, seed, *plan.packed, start, q)
            if code == SEED_OK:
                reason, position, rotation, task, iterations, restarts, pole_missed, _, _ = report
                if reason == R_SUCCESS and not pole_missed:   # the common case, without _result's call
                    return IKResult(True, q, position, rotation, iterations, restarts, time.perf_counter() - start,
                                    REASON_OK, '', task, (target, plan.kernel_args))
                return self._result(report, q, target, plan, start)
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
        targets, seeds, position_only = batch_arrays(self.chain, targets, seeds)
        if position_only:
            overrides['position_only'] = True
        plan = self._plan_for(overrides) if overrides else self._plan
        return solve_batch(plan, self.chain, targets, seeds, self.collision, start)

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
            code, report = solve_fast(plan.variant, T, seed, *plan.packed, start, q_out)
            self._raise_for(code, T, seed)
            return self._result(report, q_out, T, plan, start)
        s = new_search(self._n_var, start + plan.options.timeout)
        report = np.zeros(1, dtype=REPORT)[0]
        code = solve_one(plan.variant, T, seed, plan.model, plan.params, s, report, q_out)
        self._raise_for(code, T, seed)
        if code < 0:
            return self._collision_search(T, plan, s, report, q_out, start)
        return self._result(summary(plan.params, report), q_out, T, plan, start)

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
        """Return the plan of the solver's options with ``overrides``; cached, the timeout apart (``retimed``)."""
        overrides = dict(overrides)
        timeout = overrides.pop('timeout', _NO_TIMEOUT)
        try:
            key = tuple(overrides.items())   # keyword order matters for the key only, not the plan
            plan = self._plans.get(key)
        except TypeError:   # an unhashable value (a NullspaceGoals, a list): no caching
            key, plan = None, None
        if plan is None:
            collision_yield = overrides.pop('_yield', False)
            plan = self._prepare(self._replace(self.options, overrides), collision_yield)
            if key is not None:
                if len(self._plans) >= PLAN_CACHE_SIZE:
                    self._plans.pop(next(iter(self._plans)))
                self._plans[key] = plan
        return plan if timeout is _NO_TIMEOUT else retimed(plan, timeout)

    def _prepare(self, opts, collision_yield=False):
        """Validate options and turn them into a plan (``plan.make_plan``)."""
        return make_plan(self.chain, self._model, self._reach, opts, collision_yield)

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

    # ----------------------------------------------------------------- results
    def _collision_search(self, T, plan, s, report, q_out, start):
        """Run the search ``s`` (started by ``solve_one``) with a Python collision check of every candidate."""
        model, params = plan.kernel_args
        ws = workspace(len(model.axis), self._n_var)
        collided, best_pair, best_score = 0, None, np.inf
        status = CANDIDATE
        while status == CANDIDATE:
            q = s.work.candidate.copy()
            pair = self.collision.check(q.copy())
            if pair is None:
                if offer(plan.variant, q, model, params, s, ws, report):
                    break
            else:
                collided += 1
                score = rank(plan.variant, q, model, params, s, ws)[0]
                if score < best_score:
                    best_pair, best_score = tuple(pair), score
            if time.perf_counter() >= s.deadline:
                break
            status = search(plan.variant, model, params, s, report)
        if not report['chosen'] and collided:
            s.work.best[:] = s.seed
            report['best_error'] = np.inf
        conclude(model, params, s, report, q_out)
        result = self._result(summary(params, report), q_out, T, plan, start)
        if not result.success and collided:
            result.reason = Reason.COLLISION.label
            result.message = (f'{collided} solution(s) found, all in collision; the best one collides '
                              f'{best_pair[0]} with {best_pair[1]}; returning the seed')
        return result

    def _result(self, report, q, T, plan, start):
        """Build the IKResult of a kernel's ``_summary``."""
        reason, position, rotation, task, iterations, restarts, pole_missed, distance, best = report
        if reason == R_SUCCESS and not pole_missed:
            return IKResult(True, q, position, rotation, iterations, restarts, time.perf_counter() - start,
                            REASON_OK, '', task, (T, plan.kernel_args))
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
                        time.perf_counter() - start, Reason(reason).label, message, task, (T, plan.kernel_args))


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
        # A reachable target (the seed's own pose): the first solution collides, a later one is taken, so every
        # kernel of the Python-side collision search runs here and none compiles within a caller's timeout.
        IKSolver(solver.chain, solver.options, collision=_FirstCollides()).solve(solver.chain.fk(q), q,
                                                                                 max_attempts=10, timeout=10.0)
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
