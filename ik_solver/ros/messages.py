"""Conversions between ROS messages and the numpy types of the core, with their checks."""
from array import array
import math

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Pose
import numpy as np
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..core.transforms import make_pose, matrix_to_quaternion
from ..motion.trajectory_cdr import trajectory_cdr

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
    """Return ``trajectory_message(names, path, stamp)`` as CDR bytes for ``publish`` (``trajectory_cdr``).

    ``stamp``: builtin_interfaces/Time, or None: zero, 'start on arrival'.
    """
    return trajectory_cdr(names, path, (0, 0) if stamp is None else (stamp.sec, stamp.nanosec))


def final_joint_positions(msg, names):
    """Positions of the last point of a JointTrajectory, in the order of ``names``."""
    order = [list(msg.joint_names).index(n) for n in names]
    return np.array([msg.points[-1].positions[i] for i in order])
