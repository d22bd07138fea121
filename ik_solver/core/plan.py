"""Kernel data: the layout of the arrays the kernels share, and options packed for one call."""
from numba import njit
import numpy as np

from .methods import LM

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
