"""Rotations and poses in plain numpy, with the input checks IK callers need.

Quaternions are (x, y, z, w), as geometry_msgs/Quaternion orders them.
"""
import math

from numba import njit
import numpy as np

ORTHONORMAL_TOL = 1e-6


def quaternion_to_matrix(q):
    """Return the rotation matrix of a quaternion (x, y, z, w); a non-unit one is normalised.

    A zero or non-finite quaternion has no rotation, so it raises ValueError
    rather than silently meaning identity.
    """
    q = np.asarray(q, dtype=float)
    if q.shape != (4,):
        raise ValueError(f'quaternion must have 4 elements (x, y, z, w), got shape {q.shape}')
    x, y, z, w = q.tolist()   # Python floats: four numbers cost less in scalar arithmetic than in NumPy calls
    if not all(math.isfinite(v) for v in (x, y, z, w)):
        raise ValueError(f'quaternion contains NaN or inf: {[x, y, z, w]}')
    # Scale by the largest component first: squaring components above ~1.3e154 would overflow to inf.
    largest = max(abs(x), abs(y), abs(z), abs(w))
    if largest < 1e-9:
        raise ValueError('zero quaternion: it does not describe a rotation')
    x, y, z, w = x / largest, y / largest, z / largest, w / largest
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def matrix_to_quaternion(R):
    """Return the unit quaternion (x, y, z, w), w >= 0, of a rotation matrix (Shepperd's method)."""
    R = np.asarray(R, dtype=float)
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s]
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = [0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s, (R[2, 1] - R[1, 2]) / s]
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = [(R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s, (R[0, 2] - R[2, 0]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = [(R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s, (R[1, 0] - R[0, 1]) / s]
    q = np.array(q)
    q /= np.linalg.norm(q)
    return q if q[3] >= 0 else -q


def rpy_to_matrix(rpy):
    """Convert URDF's fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def rotation_vector(R):
    """Axis-angle vector of R (the matrix logarithm), accurate near 0 and pi."""
    R = np.asarray(R, dtype=float)
    cos = np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cos)
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if angle < 1e-6:
        return 0.5 * w
    if np.pi - angle < 1e-4:
        # sin(angle) ~ 0: take the axis from the diagonal of R + I.
        k = int(np.argmax(np.diag(R)))
        axis = (R[:, k] + np.eye(3)[:, k]) / np.sqrt(2.0 * (1.0 + R[k, k]))
        if axis @ w < 0:
            axis = -axis
        return angle * axis
    return angle / (2.0 * np.sin(angle)) * w


@njit(cache=True)
def _rotation_defect(R):
    """0 if R is a finite proper rotation, else 1 (non-finite), 2 (not orthonormal), 3 (det -1)."""
    for r in range(3):
        for c in range(3):
            if not np.isfinite(R[r, c]):
                return 1
    for r in range(3):
        for c in range(3):
            dot = R[r, 0] * R[c, 0] + R[r, 1] * R[c, 1] + R[r, 2] * R[c, 2]
            if abs(dot - (1.0 if r == c else 0.0)) > ORTHONORMAL_TOL:
                return 2
    det = (R[0, 0] * (R[1, 1] * R[2, 2] - R[1, 2] * R[2, 1]) - R[0, 1] * (R[1, 0] * R[2, 2] - R[1, 2] * R[2, 0])
           + R[0, 2] * (R[1, 0] * R[2, 1] - R[1, 1] * R[2, 0]))
    return 3 if det < 0 else 0


_ROTATION_DEFECTS = {1: 'contains NaN or inf', 2: 'is not orthonormal', 3: 'is a reflection (det -1)'}


#: Largest target coordinate [m]: far beyond any arm's reach, so a larger one is a unit or frame error (and
#: its square would overflow the distances an answer reports).
MAX_POSITION = 1e6


@njit(cache=True)
def pose_defect(T):
    """0 if T is a valid homogeneous transform, else a code for POSE_DEFECTS."""
    for r in range(3):
        if not np.isfinite(T[r, 3]):
            return 4
        if abs(T[r, 3]) > MAX_POSITION:
            return 6
    if T[3, 0] != 0.0 or T[3, 1] != 0.0 or T[3, 2] != 0.0 or T[3, 3] != 1.0:
        return 5
    return _rotation_defect(T[:3, :3])


POSE_DEFECTS = {4: 'position contains NaN or inf', 5: 'last row must be [0, 0, 0, 1]',
                6: f'position is beyond {MAX_POSITION:g} m (a unit or frame error?)',
                **{k: f'rotation {v}' for k, v in _ROTATION_DEFECTS.items()}}


@njit(cache=True)
def _relative_rotation(R_target, R):
    """Return R_target R^T (3x3), written out for the compiled callers."""
    E = np.empty((3, 3))
    for r in range(3):
        for k in range(3):
            E[r, k] = R_target[r, 0] * R[k, 0] + R_target[r, 1] * R[k, 1] + R_target[r, 2] * R[k, 2]
    return E


@njit(cache=True)
def rotation_error(R_target, R):
    """Rotation vector of R_target R^T: the base-frame rotation that takes R to R_target (compiled)."""
    E = _relative_rotation(R_target, R)
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


def pose_error(T_target, T):
    """(position error [m], orientation error [rad]) of pose T against T_target."""
    return (float(np.linalg.norm(T[:3, 3] - T_target[:3, 3])),
            float(np.linalg.norm(rotation_vector(T_target[:3, :3] @ T[:3, :3].T))))


def pose_errors(T_target, Ts):
    """Return ``pose_error`` of many poses at once, in one compiled pass (a node runs it for every target).

    The angle of R_target R^T comes from the atan2 of its sine and cosine: accurate near 0 and pi alike.

    Args:
        T_target: 4x4 pose the others are measured against.
        Ts: (B, 4, 4) poses, in T_target's frame.

    Returns:
        (B, 2) array: position error [m] and orientation error [rad, 0..pi] of each pose.
    """
    Ts = np.asarray(Ts, float)
    if Ts.ndim != 3 or Ts.shape[1:] != (4, 4):
        raise ValueError(f'poses must be (B, 4, 4), got {Ts.shape}')
    return _pose_errors(np.ascontiguousarray(T_target, float), np.ascontiguousarray(Ts))


@njit(cache=True)
def _pose_errors(T_target, Ts):
    out = np.empty((Ts.shape[0], 2))
    for b in range(Ts.shape[0]):
        T = Ts[b]
        dx, dy, dz = T[0, 3] - T_target[0, 3], T[1, 3] - T_target[1, 3], T[2, 3] - T_target[2, 3]
        E = _relative_rotation(T_target, T)   # reads the rotation block only
        sx, sy, sz = E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]
        out[b, 0] = math.sqrt(dx * dx + dy * dy + dz * dz)
        out[b, 1] = math.atan2(0.5 * math.sqrt(sx * sx + sy * sy + sz * sz), 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0))
    return out


def check_pose(T, what='target pose'):
    """Validate a 4x4 homogeneous transform: finite, orthonormal rotation, last row 0 0 0 1."""
    T = np.asarray(T, dtype=float)
    if T.shape != (4, 4):
        raise ValueError(f'{what} must be a 4x4 transform, got shape {T.shape}')
    defect = pose_defect(np.ascontiguousarray(T))
    if defect:
        raise ValueError(f'{what} {POSE_DEFECTS[defect]}')
    return T


def make_pose(position, rotation=None):
    """4x4 homogeneous transform from a position and a rotation matrix or quaternion (x, y, z, w)."""
    T = np.eye(4)
    T[:3, 3] = position
    if rotation is not None:
        rotation = np.asarray(rotation, dtype=float)
        T[:3, :3] = quaternion_to_matrix(rotation) if rotation.shape == (4,) else rotation
    return T
