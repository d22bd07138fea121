"""trajectory_message builds, point by point, what the generated message constructors build; its CDR bytes alike."""
from array import array
from types import SimpleNamespace

from builtin_interfaces.msg import Duration, Time
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.timing import plan_move
from ik_solver.ros.messages import serialized_trajectory, trajectory_message
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint


def _constructed(names, path, stamp):
    """Build the message with the generated constructors (the reference)."""
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = stamp
    for k, t in enumerate(path.times):
        sec, nanosec = divmod(int(round(t * 1e9)), 1_000_000_000)
        last = k == len(path.times) - 1
        msg.points.append(JointTrajectoryPoint(
            positions=[float(v) for v in path.positions[k]],
            velocities=[0.0] * len(names) if last else [float(v) for v in path.velocities[k]],
            accelerations=[0.0] * len(names) if last else [float(v) for v in path.accelerations[k]],
            time_from_start=Duration(sec=sec, nanosec=nanosec)))
    return msg


def _path(rng):
    n = 7
    limits = JointLimits(tuple(f'j{i}' for i in range(n)), -np.full(n, 3.0), np.full(n, 3.0), np.full(n, 1.5),
                         np.full(n, 4.0), np.full(n, 40.0))
    start = MotionState(rng.uniform(-1, 1, n), rng.uniform(-0.3, 0.3, n), rng.uniform(-1, 1, n))
    return limits.names, plan_move(start, rng.uniform(-2, 2, n), limits, 0.01)


def test_points_equal_the_constructed_message_and_serialize_alike(rng):
    for _ in range(5):
        names, path = _path(rng)
        path.times[-1] += 1.0  # a point past one second: sec and nanosec both used
        stamp = Time(sec=12, nanosec=345)
        built, reference = trajectory_message(names, path, stamp), _constructed(names, path, stamp)
        assert len(built.points) == len(path.times) > 10
        assert built == reference
        assert deserialize_message(serialize_message(built), JointTrajectory) == reference
        assert all(isinstance(p.positions, array) and p.positions.typecode == 'd' for p in built.points)
        assert list(built.points[-1].velocities) == [0.0] * len(names)


def test_points_do_not_share_storage(rng):
    names, path = _path(rng)
    msg = trajectory_message(names, path)
    msg.points[0].positions[0] = 99.0
    msg.points[1].time_from_start.sec = 7
    assert msg.points[1].positions[0] != 99.0 and msg.points[0].time_from_start.sec == 0
    assert path.positions[0, 0] != 99.0


@pytest.mark.parametrize('joints, stamped', [(1, False), (2, True), (6, False), (7, True)])
def test_serialized_bytes_are_the_constructed_message_as_rclpy_reads_it(rng, joints, stamped):
    """``serialized_trajectory`` writes CDR from arrays; rclpy reads back the message the constructors build."""
    for points in (1, 2, 3, 70):
        times = np.sort(rng.uniform(-1.5, 3.0, points))   # a Duration's negative seconds: two's complement
        path = SimpleNamespace(times=times, positions=rng.normal(size=(points, joints)),
                               velocities=rng.normal(size=(points, joints)),
                               accelerations=rng.normal(size=(points, joints)))
        names = [f'j{"x" * i}' for i in range(joints)]   # names of every length modulo 4: the padding
        stamp = Time(sec=1_700_000_123, nanosec=987_654_321) if stamped else Time()
        reference = _constructed(names, path, stamp)
        data = serialized_trajectory(names, path, stamp if stamped else None)
        assert deserialize_message(data, JointTrajectory) == reference
