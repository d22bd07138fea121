"""Batch solves: every item solved in parallel in compiled code, each with its own deadline and generator."""
import time

from numba import njit, prange
import numpy as np

from .clock import monotonic
from .kernel_data import REPORT, unpack
from .reasons import Reason
from .results import BatchResult
from .search import new_search, R_INVALID, R_SUCCESS, SEED_OK, solve_started, start
from .transforms import pose_defect

R_COLLISION = int(Reason.COLLISION)


@njit(cache=True, parallel=True, nogil=True)
def _solve_batch(variant, targets, seeds, vector, origin_R, rows, Q_out, reports):
    """Solve every item in parallel; the plan comes packed by ``kernel_data.pack`` (one cheap call from Python)."""
    for b in prange(targets.shape[0]):
        _solve_item(variant, targets[b], seeds[b], b, (vector, origin_R, rows), Q_out[b], reports[b])


@njit(cache=True, nogil=True)
def _solve_item(variant, T, seed, index, packed, q_out, report):
    """Solve batch item ``index`` into q_out and its report, with a deadline of its own.

    A kernel of its own, which unpacks the plan itself: numba's parallel loops can neither follow the views
    ``unpack`` returns nor take nested namedtuples across into their threads.
    """
    model, params = unpack(packed[0], packed[1], packed[2], seed.shape[0])
    if pose_defect(T) != 0:
        q_out[:] = seed
        report.reason = R_INVALID
        return
    s = new_search(seed.shape[0], monotonic() + params.timeout)
    if start(T, seed, model, params, s, index, report) != SEED_OK:
        for i in range(seed.shape[0]):
            q_out[i] = seed[i] if np.isfinite(seed[i]) else 0.0
        report.reason = R_INVALID
        return
    solve_started(variant, model, params, s, report, q_out)


def solve_batch(plan, chain, targets, seeds, collision, start_time):
    """Run the batch kernel on checked arrays (``batch_arrays``) and build the ``BatchResult``.

    Args:
        plan: the ``plan.Plan``.
        chain: its ``Chain``.
        targets: (B, 4, 4) poses.
        seeds: (B, n) joints.
        collision: a checker (``check(q) -> None | pair``) or None; items in collision become 'collision'.
        start_time: ``time.perf_counter()`` at the call, for ``elapsed``.
    """
    B, n = seeds.shape
    Q = np.empty((B, n))
    reports = np.zeros(B, dtype=REPORT)
    _solve_batch(plan.variant, targets, seeds, *plan.packed, Q, reports)
    codes = reports['reason'].copy()
    if collision is not None:
        for b in np.flatnonzero(codes == R_SUCCESS):
            if collision.check(Q[b].copy()) is not None:
                codes[b] = R_COLLISION
                Q[b] = np.clip(seeds[b], chain.lower, chain.upper)
    pole_missed = (plan.params.goals.elbow >= 0) & (codes == R_SUCCESS) & ~reports['pole_side']
    return BatchResult(Q, codes == R_SUCCESS, reports['position'], reports['rotation'], reports['task'],
                       reports['iterations'].astype(np.int64), [Reason(c).label for c in codes],
                       time.perf_counter() - start_time, pole_missed, (targets, plan.kernel_args))


def batch_arrays(chain, targets, seeds):
    """Return (targets B x 4 x 4, seeds B x n, position only?) as contiguous floats; ValueError for bad shapes.

    Targets may be B x 4 x 4 poses or B x 3 positions (position only), or one target for a batch of seeds.
    The arrays are writeable: a broadcast view of one row is contiguous but read-only, and numba compiles
    a kernel of its own for read-only arrays, one the warm-up never built.
    """
    n = chain.n
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
        S = np.broadcast_to(chain.mid_configuration(), (len(T), n))
    elif S.shape == (n,):
        S = np.broadcast_to(S, (len(T), n))
    if S.shape != (len(T), n):
        raise ValueError(f'seeds must be {len(T)} x {n} (one per target), got shape {S.shape}')
    return np.require(T, requirements='CW'), np.require(S, requirements='CW'), position_only
