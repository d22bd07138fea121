"""The batch kernel: every item solved in parallel, each with its own deadline and generator."""
from numba import njit, prange
import numpy as np

from .clock import monotonic
from .plan import FP_TIMEOUT, RP_REASON, W_Q, W_SIZE
from .results import R_INVALID
from .search import _solve_arrays, _solve_started, _start, SEED_OK
from .transforms import pose_defect


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
