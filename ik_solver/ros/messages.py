"""Conversions between ROS messages and the numpy types of the core, with their checks."""
from array import array
import functools
import math
import struct

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Pose
from numba import njit
import numpy as np
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..core.transforms import make_pose, matrix_to_quaternion
from ..motion.timing import TimedPath

_new = object.__new__
#: Whether the generated setters check values (ROS_PYTHON_CHECK_FIELDS), as a constructed message has it.
_CHECK_FIELDS = JointTrajectoryPoint()._check_fields


def pose_to_matrix(pose):
    """4x4 transform of a geometry_msgs/Pose; ValueError for NaN/inf or a zero quaternion."""
    p, o = pose.position, pose.orientation
    position = [p.x, p.y, p.z]
    if not all(math.isfinite(v) for v in position):
        raise ValueError(f'target position contains NaN or inf: {position}')
    return make_pose(position, np.array([o.x, o.y, o.z, o.w]))


def matrix_to_pose(T):
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in T[:3, 3])
    q = matrix_to_quaternion(T[:3, :3])
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = (float(v) for v in q)
    return pose


def joint_positions(msg):
    """({name: position} of the finite entries, [names with NaN/inf or no position]).

    ValueError for a name given twice: which of its positions is meant cannot be told.
    """
    names = list(msg.name)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f'duplicate joint names {", ".join(repeated)}')
    good, bad = {}, []
    for i, name in enumerate(msg.name):
        value = msg.position[i] if i < len(msg.position) else float('nan')
        if np.isfinite(value):
            good[name] = float(value)
        else:
            bad.append(name)
    return good, bad


def vector_from(positions, names):
    """Positions of ``names`` in order; KeyError naming every missing joint."""
    missing = [n for n in names if n not in positions]
    if missing:
        raise KeyError(f'no position for joint(s) {", ".join(missing)}')
    return np.array([positions[n] for n in names])


def joint_state(names, q, stamp=None):
    msg = JointState()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = [float(v) for v in q]
    return msg


def to_duration(seconds):
    sec, nanosec = divmod(int(round(seconds * 1e9)), 1_000_000_000)
    return Duration(sec=sec, nanosec=nanosec)


def trajectory_message(names, path, stamp=None):
    """Build the JointTrajectory of a TimedPath.

    ``stamp`` (builtin_interfaces/Time): when the path's time 0 is; joint_trajectory_controller then
    joins it in step, however late it arrives.  None leaves it zero: 'start on arrival'.
    The last point is at rest (zero velocities and accelerations).  Points are built by ``_points``.
    """
    msg = JointTrajectory()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.joint_names = list(names)
    msg.points = _points(path.times, *_rows_at_rest(path))
    return msg


def _rows_at_rest(path):
    """Return the path's positions, velocities and accelerations ((K, n) float arrays), its last point at rest."""
    velocities = np.array(path.velocities, float)
    accelerations = np.array(path.accelerations, float)
    velocities[-1] = accelerations[-1] = 0.0
    return np.asarray(path.positions, float), velocities, accelerations


def _whole_seconds(times):
    """Return (K,) times [s] as whole seconds and nanoseconds (int64 arrays), as a Duration carries them."""
    return np.divmod(np.rint(np.asarray(times, float) * 1e9).astype(np.int64), 1_000_000_000)


def _points(times, positions, velocities, accelerations):
    """Return the JointTrajectoryPoints of (K,) times [s] and (K, n) arrays, with the least Python per point.

    The generated constructors cost about 10 us a point (keyword parsing, an import, four array copies and
    a Duration each), most of a millisecond for a streamed move.  Here the whole arrays are converted
    once (array('d'), nanoseconds split into sec/nanosec by NumPy) and each point gets slices of them in
    its slots, the values the setters would store.  test/ros/test_messages.py compares the result with
    the constructors' so a change of the generated classes is caught.
    """
    n = np.shape(positions)[1]
    flat = [array('d', np.ascontiguousarray(values, float).tobytes())
            for values in (positions, velocities, accelerations)]
    seconds, nanoseconds = _whole_seconds(times)
    points = []
    for i, sec, nanosec in zip(range(0, len(flat[0]), n), seconds.tolist(), nanoseconds.tolist()):
        point = _new(JointTrajectoryPoint)
        point._check_fields = _CHECK_FIELDS
        point._positions, point._velocities, point._accelerations = (values[i:i + n] for values in flat)
        point._effort = array('d')
        duration = point._time_from_start = _new(Duration)
        duration._check_fields, duration._sec, duration._nanosec = _CHECK_FIELDS, sec, nanosec
        points.append(point)
    return points


def serialized_trajectory(names, path, stamp=None):
    """Return the JointTrajectory of ``trajectory_message(names, path, stamp)`` as CDR bytes, for ``publish``.

    rclpy converts a message into its C form field by field, and building the message costs as much
    again: for a streamed move of 70 points about 0.4 ms of the worker's time per target.  This writes
    the little-endian CDR (XCDR1) that the middleware sends straight from the path's arrays: the header
    and joint names once per joint list, the points by one compiled loop (``_cdr_points``).
    test/ros/test_trajectory_message.py checks that rclpy deserializes it into the message the generated
    constructors build.
    """
    stamp = struct.pack('<iI', *((stamp.sec, stamp.nanosec) if stamp is not None else (0, 0)))
    head = _cdr_head(tuple(names))
    body = _cdr_points(len(stamp) + len(head), np.ascontiguousarray(path.times, float),
                       np.ascontiguousarray(path.positions, float), np.ascontiguousarray(path.velocities, float),
                       np.ascontiguousarray(path.accelerations, float))
    return b''.join((_CDR_LE, stamp, head, body.tobytes()))


#: The encapsulation header of little-endian plain CDR; alignment counts from the end of it.
_CDR_LE = b'\x00\x01\x00\x00'


@functools.lru_cache(maxsize=16)
def _cdr_head(names):
    """Return the CDR of a trajectory's header after its stamp (an empty frame_id) and its joint names.

    It starts 8 bytes into the payload, after the stamp, which its alignment counts.
    """
    out = bytearray(8)
    _cdr_string(out, '')   # header.frame_id
    _cdr_uint32(out, len(names))
    for name in names:
        _cdr_string(out, name)
    return bytes(out[8:])


@njit(cache=True)
def _cdr_points(offset, times, positions, velocities, accelerations):
    """Return the CDR of the points sequence (its count first) that starts ``offset`` bytes into the payload.

    A point: positions, velocities and accelerations (each a uint32 count, 4-aligned, then n doubles,
    8-aligned), an empty effort sequence and time_from_start (int32 sec, uint32 nanosec; times [s] rounded
    to whole nanoseconds).  The last point is written at rest (zero velocities and accelerations).
    """
    k, n = positions.shape
    buffer = np.zeros((offset + 8 + k * (3 * (8 + 8 * n) + 16)) // 8 + 1, np.float64)  # doubles: 8-aligned
    words = buffer.view(np.uint32)
    at = offset + (-offset) % 4
    words[at // 4] = k
    at += 4
    for i in range(k):
        for field in range(3):
            at += (-at) % 4
            words[at // 4] = n
            at += 4
            at += (-at) % 8
            for j in range(n):
                if field == 0:
                    buffer[at // 8 + j] = positions[i, j]
                elif i < k - 1:
                    buffer[at // 8 + j] = velocities[i, j] if field == 1 else accelerations[i, j]
            at += 8 * n
        at += (-at) % 4 + 4   # effort: count 0
        nanoseconds = np.int64(np.rint(times[i] * 1e9))
        words[at // 4] = np.uint32(nanoseconds // 1_000_000_000)
        words[at // 4 + 1] = np.uint32(nanoseconds % 1_000_000_000)
        at += 8
    return buffer.view(np.uint8)[offset:at]


def warm_up():
    """Load the compiled serializer (numba, from its on-disk cache) so the first command is sent on time."""
    one = np.ones((1, 1))
    serialized_trajectory(('j',), TimedPath(np.ones(1), one, one, one))


def _cdr_uint32(out, value):
    out += bytes(-len(out) % 4)
    out += struct.pack('<I', value)


def _cdr_string(out, text):
    data = text.encode() + b'\0'
    _cdr_uint32(out, len(data))
    out += data


def final_joint_positions(msg, names):
    """Positions of the last point of a JointTrajectory, in the order of ``names``."""
    order = [list(msg.joint_names).index(n) for n in names]
    return np.array([msg.points[-1].positions[i] for i in order])
