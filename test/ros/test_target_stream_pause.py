"""A paused target stream, in-process: the worker takes the newest target from the subscription itself.

While the subscription callback awaits the pause, the executor takes no targets; the worker must not wait for
it between two handlings.  Here no executor spins at all: the test hands the first targets to the callback as
the executor would, and the worker must then act on a target published on the topic meanwhile, the newest
one, and end the pause once none waits.  The truth is what was published, and in which order.
"""
import threading
import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')

from conftest import URDF_DIR  # noqa: E402, I100
from geometry_msgs.msg import PoseStamped  # noqa: E402
from ik_solver.ros.outcome import Outcome  # noqa: E402
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy  # noqa: E402


@pytest.fixture
def node():
    from ros_fixtures import in_process_ik_nodes
    with in_process_ik_nodes(urdf_file=str(URDF_DIR / 'ik7.urdf.xacro')) as make:
        yield make()


def _target(name):
    msg = PoseStamped()
    msg.header.frame_id = name
    msg.pose.orientation.w = 1.0
    return msg


def _wait_for_message(node, subscription, timeout=10.0):
    """Block until a message waits in ``subscription``'s queue, without taking it; False after ``timeout`` [s]."""
    wait_set = _rclpy.WaitSet(1, 0, 0, 0, 0, 0, node.context.handle)
    with subscription.handle:
        wait_set.add_subscription(subscription.handle)
    wait_set.wait(int(timeout * 1e9))
    return subscription.handle.pointer in wait_set.get_ready_entities('subscription')


def _deliver(node, msg):
    """Run the subscription callback on ``msg`` as the executor does; return it if it awaits (paused), else None."""
    callback = node._on_target(msg, None)
    try:
        callback.send(None)
    except StopIteration:
        return None
    return callback


def test_during_a_pause_the_worker_acts_on_the_newest_published_target_without_the_executor(node, monkeypatch):
    subscription = next(s for s in node.subscriptions if s.topic_name.endswith('target_pose'))
    source = rclpy.create_node('target_source')
    publisher = source.create_publisher(PoseStamped, subscription.topic_name, 10)
    deadline = time.monotonic() + 10.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert publisher.get_subscription_count() > 0, 'the publisher never matched the node'
    handled, started, published = [], threading.Event(), threading.Event()

    def handling(pending):
        """Record the target; the first handling lasts until a newer target waits in the subscription's queue."""
        handled.append(pending.msg.header.frame_id)
        if len(handled) == 1:
            started.set()
            assert published.wait(10.0) and _wait_for_message(node, subscription)
        return Outcome('topic', 'invalid_input', 'stands for a handling')
    monkeypatch.setattr(node, '_handle_target', handling)
    try:
        assert _deliver(node, _target('first')) is None
        assert started.wait(10.0)   # the worker handles 'first'
        assert _deliver(node, _target('second')) is None
        paused = _deliver(node, _target('third'))   # supersedes 'second' during the handling
        assert paused is not None
        publisher.publish(_target('published'))   # newer than 'third'
        published.set()
        deadline = time.monotonic() + 10.0
        while paused is not None and time.monotonic() < deadline:
            try:   # the executor resumes the callback when woken; nothing else drives it here
                paused.send(None)
            except StopIteration:
                paused = None
            time.sleep(0.005)
        assert paused is None, f'the pause never ended; handled: {handled}'
        assert handled == ['first', 'published']   # 'third' superseded by what the worker took itself
    finally:
        source.destroy_node()
