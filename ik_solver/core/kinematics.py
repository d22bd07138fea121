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
def _rodrigues(x, y, z, angle):
    """Rotation by angle about the unit axis (x, y, z), as 9 scalars in row order."""
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    return (t * x * x + c, t * x * y - s * z, t * x * z + s * y,
            t * x * y + s * z, t * y * y + c, t * y * z - s * x,
            t * x * z - s * y, t * y * z + s * x, t * z * z + c)


@njit(cache=True)
def _rotate_about(axis, angle, out):
    """Rodrigues: out = rotation by angle about the unit axis."""
    r = _rodrigues(axis[0], axis[1], axis[2], angle)
    for k in range(9):
        out[k // 3, k % 3] = r[k]


@njit(cache=True)
def _product(a, b):
    """Product of two 3x3 matrices held as 9 scalars in row order."""
    return (a[0] * b[0] + a[1] * b[3] + a[2] * b[6], a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
            a[0] * b[2] + a[1] * b[5] + a[2] * b[8],
            a[3] * b[0] + a[4] * b[3] + a[5] * b[6], a[3] * b[1] + a[4] * b[4] + a[5] * b[7],
            a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
            a[6] * b[0] + a[7] * b[3] + a[8] * b[6], a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
            a[6] * b[2] + a[7] * b[5] + a[8] * b[8])


@njit(cache=True)
def _rows(M):
    """Return the entries of a 3x3 array as 9 scalars in row order."""
    return M[0, 0], M[0, 1], M[0, 2], M[1, 0], M[1, 1], M[1, 2], M[2, 0], M[2, 1], M[2, 2]


@njit(cache=True)
def frames(q, origin_R, origin_p, axis, kind, var, mult, offset, R_out, p_out, a_out):
    """Base-frame poses of every joint's child frame and of the tip.

    R_out[i], p_out[i] (i < n): frame after joint i's motion; index n: the tip.
    a_out[i]: joint i's axis in the base frame, p_out[i] lies on it.
    The running pose is kept in scalars (no temporary arrays).
    """
    n = axis.shape[0]
    R = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    px, py, pz = 0.0, 0.0, 0.0
    for i in range(n + 1):
        o = origin_p[i]
        px, py, pz = (px + R[0] * o[0] + R[1] * o[1] + R[2] * o[2], py + R[3] * o[0] + R[4] * o[1] + R[5] * o[2],
                      pz + R[6] * o[0] + R[7] * o[1] + R[8] * o[2])
        R = _product(R, _rows(origin_R[i]))
        if i < n:
            x, y, z = axis[i, 0], axis[i, 1], axis[i, 2]
            ax, ay, az = R[0] * x + R[1] * y + R[2] * z, R[3] * x + R[4] * y + R[5] * z, R[6] * x + R[7] * y + R[8] * z
            a_out[i, 0], a_out[i, 1], a_out[i, 2] = ax, ay, az
            value = mult[i] * q[var[i]] + offset[i]
            if kind[i] == REVOLUTE:
                R = _product(R, _rodrigues(x, y, z, value))
            else:
                px, py, pz = px + ax * value, py + ay * value, pz + az * value
        out = R_out[i]
        out[0, 0], out[0, 1], out[0, 2] = R[0], R[1], R[2]
        out[1, 0], out[1, 1], out[1, 2] = R[3], R[4], R[5]
        out[2, 0], out[2, 1], out[2, 2] = R[6], R[7], R[8]
        p_out[i, 0], p_out[i, 1], p_out[i, 2] = px, py, pz


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
    goal_rows_into(J, Rt, sw, target_frame, out)
    return out


@njit(cache=True)
def goal_rows_into(J, Rt, sw, target_frame, out):
    """``goal_rows`` written into ``out`` (which may be J itself)."""
    for c in range(J.shape[1]):
        for block in (0, 3):
            x, y, z = J[block, c], J[block + 1, c], J[block + 2, c]
            if target_frame:
                x, y, z = (Rt[0, 0] * x + Rt[1, 0] * y + Rt[2, 0] * z, Rt[0, 1] * x + Rt[1, 1] * y + Rt[2, 1] * z,
                           Rt[0, 2] * x + Rt[1, 2] * y + Rt[2, 2] * z)
            out[block, c] = sw[block] * x
            out[block + 1, c] = sw[block + 1] * y
            out[block + 2, c] = sw[block + 2] * z


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
