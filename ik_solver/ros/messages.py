"""Conversions between ROS messages and the numpy types of the core, with their checks."""
from array import array

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Pose
import numpy as np
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..core.transforms import make_pose, matrix_to_quaternion


def pose_to_matrix(pose):
    """4x4 transform of a geometry_msgs/Pose; ValueError for NaN/inf or a zero quaternion."""
    p, o = pose.position, pose.orientation
    position = np.array([p.x, p.y, p.z])
    if not np.isfinite(position).all():
        raise ValueError(f'target position contains NaN or inf: {position.tolist()}')
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
    """
    msg = JointTrajectory()
    if stamp is not None:
        msg.header.stamp = stamp
    msg.joint_names = list(names)
    # array('d') is taken as is by the message setters; lists are checked element by element.
    msg.points = [JointTrajectoryPoint(positions=array('d', q), velocities=array('d', v),
                                       accelerations=array('d', a), time_from_start=to_duration(t))
                  for t, q, v, a in zip(path.times, path.positions, path.velocities, path.accelerations)]
    zeros = array('d', bytes(8 * len(names)))
    msg.points[-1].velocities = zeros
    msg.points[-1].accelerations = zeros
    return msg


def final_joint_positions(msg, names):
    """Positions of the last point of a JointTrajectory, in the order of ``names``."""
    order = [list(msg.joint_names).index(n) for n in names]
    return np.array([msg.points[-1].positions[i] for i in order])
