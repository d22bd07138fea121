"""Forward kinematics and the geometric Jacobian of a serial chain, as numba kernels.

The chain is flattened into arrays (see ``chain.Chain``): for every movable
joint i, a constant transform ``origin_R[i], origin_p[i]`` from the previous
joint's frame (fixed joints folded in), its unit ``axis`` in its own frame and
its ``kind`` (REVOLUTE or PRISMATIC).  ``origin_*[n]`` is the constant offset
from the last joint to the tip link.  Mimic joints map to a variable through
``var``, ``mult`` and ``offset``: joint value = mult * q[var] + offset.

Jacobian rows are (vx, vy, vz, wx, wy, wz): the linear velocity of the tip
origin and the angular velocity, both in the base frame (Pinocchio's
LOCAL_WORLD_ALIGNED; KDL's ChainJntToJacSolver reference point at the tip).
Explicit loops over 3-vectors beat numpy's per-call overhead at this size.
"""
from numba import njit
import numpy as np

REVOLUTE = 0
PRISMATIC = 1


@njit(cache=True)
def _rotate_about(axis, angle, out):
    """Rodrigues: out = rotation by angle about the unit axis."""
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    x, y, z = axis[0], axis[1], axis[2]
    out[0, 0] = t * x * x + c
    out[0, 1] = t * x * y - s * z
    out[0, 2] = t * x * z + s * y
    out[1, 0] = t * x * y + s * z
    out[1, 1] = t * y * y + c
    out[1, 2] = t * y * z - s * x
    out[2, 0] = t * x * z - s * y
    out[2, 1] = t * y * z + s * x
    out[2, 2] = t * z * z + c


@njit(cache=True)
def _matmul3(A, B, out):
    for r in range(3):
        for c in range(3):
            out[r, c] = A[r, 0] * B[0, c] + A[r, 1] * B[1, c] + A[r, 2] * B[2, c]


@njit(cache=True)
def frames(q, origin_R, origin_p, axis, kind, var, mult, offset, R_out, p_out, a_out):
    """Base-frame poses of every joint's child frame and of the tip.

    R_out[i], p_out[i] (i < n): frame after joint i's motion; index n: the tip.
    a_out[i]: joint i's axis in the base frame, p_out[i] lies on it.
    """
    n = axis.shape[0]
    R = np.eye(3)
    p = np.zeros(3)
    Rb = np.empty((3, 3))
    Rj = np.empty((3, 3))
    for i in range(n):
        _matmul3(R, origin_R[i], Rb)
        for r in range(3):
            p[r] = p[r] + R[r, 0] * origin_p[i, 0] + R[r, 1] * origin_p[i, 1] + R[r, 2] * origin_p[i, 2]
        for r in range(3):
            a_out[i, r] = Rb[r, 0] * axis[i, 0] + Rb[r, 1] * axis[i, 1] + Rb[r, 2] * axis[i, 2]
        value = mult[i] * q[var[i]] + offset[i]
        if kind[i] == REVOLUTE:
            _rotate_about(axis[i], value, Rj)
            _matmul3(Rb, Rj, R)
        else:
            R[:, :] = Rb
            for r in range(3):
                p[r] += a_out[i, r] * value
        R_out[i] = R
        p_out[i] = p
    _matmul3(R, origin_R[n], R_out[n])
    for r in range(3):
        p_out[n, r] = p[r] + R[r, 0] * origin_p[n, 0] + R[r, 1] * origin_p[n, 1] + R[r, 2] * origin_p[n, 2]


@njit(cache=True)
def point_jacobian(p_out, a_out, kind, var, mult, point, last, J):
    """Geometric Jacobian (6 x n_var) of ``point`` moved by joints 0..last, from ``frames``' output."""
    J[:, :] = 0.0
    for i in range(last + 1):
        col = var[i]
        m = mult[i]
        ax, ay, az = a_out[i, 0], a_out[i, 1], a_out[i, 2]
        if kind[i] == REVOLUTE:
            dx = point[0] - p_out[i, 0]
            dy = point[1] - p_out[i, 1]
            dz = point[2] - p_out[i, 2]
            J[0, col] += m * (ay * dz - az * dy)
            J[1, col] += m * (az * dx - ax * dz)
            J[2, col] += m * (ax * dy - ay * dx)
            J[3, col] += m * ax
            J[4, col] += m * ay
            J[5, col] += m * az
        else:
            J[0, col] += m * ax
            J[1, col] += m * ay
            J[2, col] += m * az


@njit(cache=True)
def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@njit(cache=True)
def jacobian_derivatives(p_out, a_out, kind, var, mult, n_var):
    """Kinematic Hessian of the tip: H[k] = d J / d q_k (n_var x 6 x n_var), from ``frames``' output.

    For joint columns J_i = (a_i x (p_e - p_i), a_i) (revolute) or (a_i, 0)
    (prismatic), joint k moves an axis a_i (i > k) by a_k x a_i and the tip
    relative to p_i by a_k x (p_e - p_i) (k < i) or a_k x (p_e - p_k) (k >= i);
    a prismatic k moves the tip by a_k.  Mimic joints add up through var/mult.
    """
    n = a_out.shape[0]
    pe = p_out[n]
    H = np.zeros((n_var, 6, n_var))
    for i in range(n):
        ai = a_out[i]
        for k in range(n):
            ak = a_out[k]
            if kind[k] == PRISMATIC:
                if kind[i] == PRISMATIC or k < i:
                    continue
                dlin = _cross(ai, ak)
                dang = np.zeros(3)
            elif kind[i] == PRISMATIC:
                if k >= i:
                    continue
                dlin = _cross(ak, ai)
                dang = np.zeros(3)
            elif k < i:
                dang = _cross(ak, ai)
                dlin = _cross(dang, pe - p_out[i]) + _cross(ai, _cross(ak, pe - p_out[i]))
            else:
                dang = np.zeros(3)
                dlin = _cross(ai, _cross(ak, pe - p_out[k]))
            m = mult[i] * mult[k]
            for r in range(3):
                H[var[k], r, var[i]] += m * dlin[r]
                H[var[k], r + 3, var[i]] += m * dang[r]
    return H


@njit(cache=True)
def goal_rows(J, Rt, sw, target_frame):
    """Rows of a 6-row Jacobian (or its derivative) as the task sees them: in the target frame if asked, weighted.

    ``sw`` are the square roots of the task weights, so masked rows become zero.
    """
    out = np.empty_like(J)
    for c in range(J.shape[1]):
        for block in (0, 3):
            for r in range(3):
                if target_frame:
                    v = Rt[0, r] * J[block, c] + Rt[1, r] * J[block + 1, c] + Rt[2, r] * J[block + 2, c]
                else:
                    v = J[block + r, c]
                out[block + r, c] = sw[block + r] * v
    return out


@njit(cache=True)
def fk_batch(Q, origin_R, origin_p, axis, kind, var, mult, offset, link, link_R, link_p):
    """Poses (B x 4 x 4) of one chain link for a batch of configurations Q (B x n_var).

    ``link`` indexes ``frames``' output (-1: the base, n: the tip) and
    ``link_R, link_p`` is the constant offset from that frame to the link.
    """
    n = axis.shape[0]
    B = Q.shape[0]
    out = np.zeros((B, 4, 4))
    R_out = np.empty((n + 1, 3, 3))
    p_out = np.empty((n + 1, 3))
    a_out = np.empty((n, 3))
    for b in range(B):
        frames(Q[b], origin_R, origin_p, axis, kind, var, mult, offset, R_out, p_out, a_out)
        if link < 0:
            R = np.eye(3)
            p = np.zeros(3)
        else:
            R = R_out[link]
            p = p_out[link]
        for r in range(3):
            for c in range(3):
                out[b, r, c] = R[r, 0] * link_R[0, c] + R[r, 1] * link_R[1, c] + R[r, 2] * link_R[2, c]
            out[b, r, 3] = p[r] + R[r, 0] * link_p[0] + R[r, 1] * link_p[1] + R[r, 2] * link_p[2]
        out[b, 3, 3] = 1.0
    return out


@njit(cache=True)
def jacobian_batch(Q, origin_R, origin_p, axis, kind, var, mult, offset, n_var):
    """Tip Jacobians (B x 6 x n_var) for a batch of configurations."""
    n = axis.shape[0]
    B = Q.shape[0]
    out = np.zeros((B, 6, n_var))
    R_out = np.empty((n + 1, 3, 3))
    p_out = np.empty((n + 1, 3))
    a_out = np.empty((n, 3))
    J = np.empty((6, n_var))
    for b in range(B):
        frames(Q[b], origin_R, origin_p, axis, kind, var, mult, offset, R_out, p_out, a_out)
        point_jacobian(p_out, a_out, kind, var, mult, p_out[n], n - 1, J)
        out[b] = J
    return out
