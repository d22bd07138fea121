"""Secondary goals spent in a redundant arm's nullspace: dq += (I - J^+ J) z.

z = -sum_k w_k grad H_k descends a weighted sum of costs H_k, and the
projector removes any part of it that would move the hand.  The goals:

* posture: H = 1/2 |q - q_pref|^2, a comfortable pose (or joint centering
  with q_pref = middle of the limits).
* limits: H = 1/4 sum ((q - mid) / half_range)^4, nearly flat in the middle
  and steep near a limit, so it only acts where a limit is close.
* manipulability: H = -sqrt(det(J J^T)) (Yoshikawa), pushes away from
  singularities; its gradient is taken by central differences.
* pole: H = 1/2 |p_elbow - p_pole|^2 pulls a chosen middle link toward a
  point, which picks the side the elbow bends to (a rigger's pole vector).
"""
from dataclasses import dataclass

from numba import njit
import numpy as np

from . import kinematics as kin


@dataclass
class NullspaceGoals:
    """Weights of the secondary goals (0 disables one) and their data.

    posture: q_pref defaults to the middle of the limits.  pole_link names the
    elbow link; pole_target is a point in the base frame.
    """

    posture: float = 0.0
    limits: float = 0.0
    manipulability: float = 0.0
    pole: float = 0.0
    q_pref: object = None
    pole_link: str = None
    pole_target: object = None
    gain: float = 1.0
    iterations: int = 30

    @property
    def active(self):
        return any(w > 0 for w in (self.posture, self.limits, self.manipulability, self.pole))

    def validate(self, chain):
        """Raise ValueError for inconsistent goals; return (weights, q_pref, pole, elbow index, offset)."""
        weights = np.array([self.posture, self.limits, self.manipulability, self.pole], dtype=float)
        if not np.all(np.isfinite(weights)) or np.any(weights < 0):
            raise ValueError(f'nullspace weights must be finite and >= 0, got {weights.tolist()}')
        q_pref = chain.mid_configuration() if self.q_pref is None else np.asarray(self.q_pref, dtype=float)
        if q_pref.shape != (chain.n,) or not np.all(np.isfinite(q_pref)):
            raise ValueError(f'q_pref must be {chain.n} finite values')
        pole = np.zeros(3)
        index, offset = -1, np.zeros(3)
        if self.pole > 0:
            if self.pole_link is None or self.pole_target is None:
                raise ValueError('a pole weight needs pole_link and pole_target')
            pole = np.asarray(self.pole_target, dtype=float)
            if pole.shape != (3,) or not np.all(np.isfinite(pole)):
                raise ValueError('pole_target must be 3 finite coordinates')
            index, _, offset = chain.link_frames.get(self.pole_link, (None, None, None))
            if index is None:
                raise ValueError(f"pole_link '{self.pole_link}' is not a link of the chain")
        return weights, q_pref, pole, index, offset


@njit(cache=True)
def manipulability(J):
    """Yoshikawa's measure sqrt(det(J J^T)); zero at a singularity.  Pass only the task's rows."""
    d = np.linalg.det(J @ J.T)
    return np.sqrt(d) if d > 0.0 else 0.0


@njit(cache=True)
def _manipulability_at(q, chain, sw, n_var):
    origin_R, origin_p, axis, kind, var, mult, offset = chain
    n = axis.shape[0]
    R_out = np.empty((n + 1, 3, 3))
    p_out = np.empty((n + 1, 3))
    a_out = np.empty((n, 3))
    J = np.empty((6, n_var))
    kin.frames(q, origin_R, origin_p, axis, kind, var, mult, offset, R_out, p_out, a_out)
    kin.point_jacobian(p_out, a_out, kind, var, mult, p_out[n], n - 1, J)
    A = np.empty((6, 6))
    for r in range(6):
        for c in range(6):
            A[r, c] = sw[r] * sw[c] * (J[r] @ J[c])
        if sw[r] == 0.0:
            A[r, r] = 1.0  # masked task rows: det over the active block only
    d = np.linalg.det(A)
    return np.sqrt(d) if d > 0.0 else 0.0


@njit(cache=True)
def gradient(q, chain, lower, upper, sw, weights, q_pref, pole, elbow, elbow_offset, R_out, p_out, a_out):
    """Weighted gradient of the secondary cost at q (``frames`` output for q given)."""
    kind, var, mult = chain[3], chain[4], chain[5]
    n_var = q.shape[0]
    g = np.zeros(n_var)
    for i in range(n_var):
        if weights[0] > 0.0:
            g[i] += weights[0] * (q[i] - q_pref[i])
        if weights[1] > 0.0 and np.isfinite(lower[i]) and upper[i] > lower[i]:
            half = 0.5 * (upper[i] - lower[i])
            x = (q[i] - 0.5 * (upper[i] + lower[i])) / half
            g[i] += weights[1] * x * x * x / half
    if weights[2] > 0.0:
        h = 1e-6
        for i in range(n_var):
            qp = q.copy()
            qm = q.copy()
            qp[i] += h
            qm[i] -= h
            dm = (_manipulability_at(qp, chain, sw, n_var) - _manipulability_at(qm, chain, sw, n_var)) / (2 * h)
            g[i] -= weights[2] * dm
    if weights[3] > 0.0 and elbow >= 0:
        point = p_out[elbow] + R_out[elbow] @ elbow_offset
        Je = np.empty((6, n_var))
        kin.point_jacobian(p_out, a_out, kind, var, mult, point, elbow, Je)
        g += weights[3] * (Je[:3].T @ (point - pole))
    return g
