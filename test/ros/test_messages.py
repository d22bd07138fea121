"""Message conversions: round trips and bad input (needs the ROS message packages)."""
import numpy as np
import pytest

pytest.importorskip('geometry_msgs', reason='ROS 2 message packages are not installed')

from geometry_msgs.msg import Pose  # noqa: E402, I100
from ik_solver.core.transforms import make_pose  # noqa: E402
from ik_solver.motion.limits import JointLimits, MotionState  # noqa: E402
from ik_solver.motion.timing import plan_move  # noqa: E402
from ik_solver.ros.messages import (joint_positions, matrix_to_pose, pose_to_matrix, to_duration,  # noqa: E402
                                    trajectory_message, vector_from)
from sensor_msgs.msg import JointState  # noqa: E402


def test_pose_round_trip(rng):
    for _ in range(20):
        q = rng.normal(size=4)
        T = make_pose(rng.normal(size=3), q)
        np.testing.assert_allclose(pose_to_matrix(matrix_to_pose(T)), T, atol=1e-12)


@pytest.mark.parametrize('field,value,match', [
    ('position.x', float('nan'), 'NaN'),
    ('orientation.w', float('inf'), 'NaN'),
])
def test_bad_poses(field, value, match):
    pose = Pose()
    obj, attr = field.split('.')
    setattr(getattr(pose, obj), attr, value)
    with pytest.raises(ValueError, match=match):
        pose_to_matrix(pose)


def test_zero_quaternion_pose():
    pose = Pose()
    pose.orientation.w = 0.0
    with pytest.raises(ValueError, match='zero quaternion'):
        pose_to_matrix(pose)


def test_joint_positions_split_good_and_bad():
    msg = JointState(name=['a', 'b', 'c'], position=[1.0, float('nan'), 2.0])
    good, bad = joint_positions(msg)
    assert good == {'a': 1.0, 'c': 2.0} and bad == ['b']
    with pytest.raises(KeyError, match='b, d'):
        vector_from(good, ['a', 'b', 'c', 'd'])


def test_trajectory_message_contract():
    limits = JointLimits(('a', 'b'), -np.ones(2), np.ones(2), np.ones(2), np.full(2, 2.0), np.full(2, np.inf))
    path = plan_move(MotionState.at_rest(np.zeros(2)), np.array([0.5, -0.5]), limits, 0.1)
    msg = trajectory_message(['a', 'b'], path)
    assert msg.header.stamp.sec == 0 and msg.joint_names == ['a', 'b']
    first = msg.points[0].time_from_start
    assert first.sec + first.nanosec > 0
    assert list(msg.points[-1].velocities) == [0.0, 0.0]
    assert (to_duration(1.9999999999).sec, to_duration(1.9999999999).nanosec) == (2, 0)
    assert to_duration(0.25).nanosec == 250_000_000
