"""Stamps before 1970 on the IK node's streams, in-process: refused with a reason, and the node goes on.

``Time.from_msg`` raises on a negative stamp.  Raised on the inputs thread (a joint state) it ended the thread
that takes every stream, and on the worker (a target's age) the thread that acts on them: the node then
looked alive and acted on nothing.  The truth here is what the node answers to inputs published afterwards.
"""
import math
import threading
import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')

from conftest import URDF_DIR  # noqa: E402, I100
from geometry_msgs.msg import PoseStamped  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402


@pytest.fixture
def node():
    from ros_fixtures import in_process_ik_nodes
    with in_process_ik_nodes(urdf_file=str(URDF_DIR / 'ik7.urdf.xacro')) as make:
        yield make()


class Outcomes:
    """The node's outcomes, as they are reported (on the worker thread)."""

    def __init__(self, node):
        self.items, self._condition = [], threading.Condition()
        node.add_outcome_listener(self._add)

    def _add(self, outcome):
        with self._condition:
            self.items.append(outcome)
            self._condition.notify_all()

    def wait(self, after, timeout=10.0):
        """Return the first outcome after the first ``after`` ones, or None within ``timeout`` [s]."""
        with self._condition:
            self._condition.wait_for(lambda: len(self.items) > after, timeout)
            return self.items[after] if len(self.items) > after else None


def _target(x=0.5, sec=None):
    msg = PoseStamped()
    msg.header.frame_id = 'base_link'
    if sec is not None:
        msg.header.stamp.sec = sec
    msg.pose.position.x = x
    msg.pose.orientation.w = 1.0
    return msg


def _publisher(node, msg_type, topic):
    publisher = node.create_publisher(msg_type, topic, 10)
    deadline = time.monotonic() + 10.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return publisher


def test_a_target_stamped_before_1970_is_invalid_and_the_worker_acts_on_the_next(node):
    outcomes = Outcomes(node)
    node._on_target(_target(sec=-1), None)
    first = outcomes.wait(0)
    assert first is not None and first.reason == 'invalid_input' and 'before 1970' in first.message
    node._on_target(_target(x=math.nan), None)   # the worker is still there to refuse it
    second = outcomes.wait(1)
    assert second is not None and second.reason == 'invalid_input' and 'NaN' in second.message


def test_a_joint_state_stamped_before_1970_leaves_the_inputs_thread_taking_targets(node):
    outcomes = Outcomes(node)
    states = _publisher(node, JointState, node.params['joint_states_topic'])
    targets = _publisher(node, PoseStamped, '~/target_pose')
    bad = JointState(name=[f'joint{i}' for i in range(1, 8)], position=[0.0] * 7)
    bad.header.stamp.sec = -1
    states.publish(bad)
    time.sleep(0.2)   # taken (and refused) by the inputs thread
    deadline = time.monotonic() + 10.0
    while not outcomes.items and time.monotonic() < deadline:   # best effort: the first may be lost
        targets.publish(_target(x=math.nan))
        outcomes.wait(0, timeout=0.2)
    assert outcomes.items and outcomes.items[0].reason == 'invalid_input'
