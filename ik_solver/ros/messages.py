"""Conversions between ROS messages and the numpy types of the core, with their checks."""
from array import array
import math
import struct

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Pose
import numpy as np
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..core.transforms import make_pose, matrix_to_quaternion

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
    the little-endian CDR (XCDR1) that the middleware sends from the path's arrays, the points' numbers
    placed by NumPy at offsets computed once per layout.  test/ros/test_trajectory_message.py checks that
    rclpy deserializes it into the message the generated constructors build.
    """
    n, k = len(names), len(path.times)
    head = bytearray(struct.pack('<iI', *((stamp.sec, stamp.nanosec) if stamp is not None else (0, 0))))
    _cdr_string(head, '')   # header.frame_id
    _cdr_uint32(head, n)
    for name in names:
        _cdr_string(head, name)
    _cdr_uint32(head, k)
    starts, end = _point_starts(len(head), n, k)
    body = np.zeros(end + (-end % 8), np.uint8)   # whole doubles: viewed as float64
    words, doubles = body.view('<u4'), body.view('<f8')   # little-endian, as the CDR header says
    counts, values, times = _offsets(starts, n)
    words[counts // 4] = n
    rows = np.stack(_rows_at_rest(path), axis=1)   # (k, 3, n)
    doubles[(values // 8)[:, None] + np.arange(n)] = rows.reshape(3 * k, n)
    seconds, nanoseconds = _whole_seconds(path.times)
    words[times // 4] = seconds.astype('<i4').view('<u4')
    words[times // 4 + 1] = nanoseconds.astype(np.uint32)
    return _CDR_LE + bytes(head) + body[len(head):end].tobytes()


#: The encapsulation header of little-endian plain CDR; alignment counts from the end of it.
_CDR_LE = b'\x00\x01\x00\x00'


def _point_starts(offset, n, k):
    """Return the payload offsets of ``k`` JointTrajectoryPoints of ``n`` joints from ``offset``, and their end.

    A point's layout depends only on its start modulo 8 (``_point_layout``).
    """
    starts = []
    for _ in range(k):
        starts.append(offset)
        offset += _point_layout(offset % 8, n)[3]
    return starts, offset


def _offsets(starts, n):
    """Return the absolute offsets of the points' counts (3k,), first doubles (3k,) and time_from_start (k,)."""
    starts = np.asarray(starts)
    phase = (starts % 8) // 4   # 0 or 4 bytes past an 8-byte boundary
    layouts = [_point_layout(0, n), _point_layout(4, n)]
    counts, values, times = (np.array([layout[i] for layout in layouts]) for i in range(3))
    return ((starts[:, None] + counts[phase]).ravel(), (starts[:, None] + values[phase]).ravel(),
            starts + times[phase])


_LAYOUTS = {}


def _point_layout(phase, n):
    """Offsets within a point starting at ``phase`` (mod 8) of n joints: counts, doubles, time, size [bytes].

    Each of positions, velocities, accelerations: a uint32 count (4-aligned), then n doubles (8-aligned);
    effort: an empty sequence (its count); time_from_start: int32 sec, uint32 nanosec.
    """
    key = (phase, n)
    if key not in _LAYOUTS:
        offset, counts, values = phase, [], []
        for _ in range(3):
            offset += -offset % 4
            counts.append(offset)
            offset += 4
            offset += -offset % 8
            values.append(offset)
            offset += 8 * n
        offset += -offset % 4 + 4   # effort: count 0
        _LAYOUTS[key] = (np.array(counts) - phase, np.array(values) - phase, offset - phase, offset + 8 - phase)
    return _LAYOUTS[key]


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
