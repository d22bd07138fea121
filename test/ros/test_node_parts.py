"""The IK node's JointStateTracker in-process, with the envelope of the commands sent (CommandHistory).

Messages are handed to the tracker directly (no DDS), stamped on the node's clock as a driver stamps
them (a pause is a gap between stamps).  The command history and guard themselves are tested without
ROS in test/unit (test_motion_command_history.py, test_motion_command_guard.py, test_motion_commander.py).
"""
from functools import partial
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from ik_solver.motion.command_history import CommandHistory  # noqa: E402, I100
from ik_solver.motion.limits import JointLimits, MotionState  # noqa: E402
from ik_solver.motion.timing import plan_move  # noqa: E402
from ik_solver.ros.joint_states import JointStateTracker, StateError  # noqa: E402
from ik_solver.ros.messages import joint_state  # noqa: E402
from rclpy.duration import Duration  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

NAMES = ('a', 'b', 'c')
LIMITS = JointLimits(NAMES, np.full(3, -2.0), np.full(3, 2.0), np.full(3, 1.0), np.full(3, 4.0), np.full(3, np.inf))
HOME = np.array([0.1, -0.2, 0.3])


@pytest.fixture
def node():
    from ros_fixtures import isolate_ros_domain
    isolate_ros_domain()
    rclpy.init()
    n = rclpy.create_node('parts_test')
    yield n
    n.destroy_node()
    rclpy.try_shutdown()


def _feed(tracker, node, names, q, velocity=None, ago=0.0):
    """Hand the tracker a reading stamped ``ago`` s before now (it arrives now)."""
    msg = joint_state(names, q, (node.get_clock().now() - Duration(nanoseconds=int(ago * 1e9))).to_msg())
    msg.velocity = [0.0] * len(q) if velocity is None else list(velocity)
    tracker.on_message(msg)


def _settle(tracker, node, names, q, velocity=None, ago=0.0):
    """Feed ``q`` at 100 Hz for 0.15 s, the newest reading stamped ``ago`` s before now."""
    for k in range(15, -1, -1):
        _feed(tracker, node, names, q, velocity, ago + 0.01 * k)


def _tracker(node, history=None, **kwargs):
    tracker = JointStateTracker(node, **kwargs)
    expect = None if history is None else partial(history.expectation, velocity_limits=LIMITS.velocity, pause=0.25)
    tracker.configure(LIMITS, expect=expect)
    return tracker


def _state(tracker):
    return tracker.state(list(NAMES))


def test_a_good_state_and_its_age(node):
    tracker = _tracker(node, timeout=0.2)
    assert tracker.age() is None and not tracker.has(NAMES)
    with pytest.raises(StateError, match='no joint state received yet') as error:
        _state(tracker)
    assert error.value.reason == 'stale_state'
    _settle(tracker, node, ['x'] + list(NAMES)[::-1], [9.0] + list(HOME[::-1]), [0.0, 0.3, 0.2, 0.1])
    state = _state(tracker)
    np.testing.assert_array_equal(state.position, HOME)
    np.testing.assert_array_equal(state.velocity, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(state.acceleration, 0.0)
    time.sleep(0.3)
    with pytest.raises(StateError, match='joint_states_timeout') as error:
        _state(tracker)
    assert error.value.reason == 'stale_state' and tracker.age() > 0.2


def test_readings_queued_behind_a_busy_executor_are_aged_from_their_reception(node):
    """Over DDS: a reading whose callback runs 0.4 s after it arrived is 0.4 s old, not fresh."""
    tracker = _tracker(node, timeout=0.2)
    publisher = node.create_publisher(JointState, 'joint_states', 10)
    deadline = time.monotonic() + 10.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    publisher.publish(joint_state(NAMES, HOME, node.get_clock().now().to_msg()))
    time.sleep(0.4)   # the executor is busy elsewhere: the message waits in the queue
    rclpy.spin_once(node, timeout_sec=2.0)
    assert tracker.has(NAMES)
    with pytest.raises(StateError, match='joint_states_timeout') as error:
        _state(tracker)
    assert error.value.reason == 'stale_state'
    assert tracker.age() > 0.35


def test_a_reading_judged_after_a_preemption_keeps_its_stamped_instant(node, monkeypatch):
    """A thread preempted between reading the monotonic and the ROS clock must not age a reading.

    Converting each stamp by reading both clocks anew placed such a reading 30 ms early, before the one
    believed before it, and refused it as out of order; one offset places it where it was stamped.
    """
    tracker = _tracker(node)
    _settle(tracker, node, NAMES, HOME, ago=0.002)
    msg = joint_state(NAMES, HOME, node.get_clock().now().to_msg())
    msg.velocity = [0.0] * 3
    clock, now = node.get_clock(), node.get_clock().now

    def preempted():
        time.sleep(0.03)
        return now()
    monkeypatch.setattr(clock, 'now', preempted)
    tracker.on_message(msg)
    monkeypatch.setattr(clock, 'now', now)
    state = _state(tracker)
    np.testing.assert_array_equal(state.position, HOME)
    assert abs(state.time - time.monotonic()) < 0.05


@pytest.mark.parametrize('names,q,reason,text', [
    (['a', 'b', 'c', 'a'], [0.1, 0.2, 0.3, 0.4], 'invalid_input', 'duplicate joint names a'),
    (['a', 'b', 'c'], [0.1, 0.2], 'invalid_input', '3 names but 2 positions'),
    (['a', 'b', 'c'], [0.1, float('nan'), 0.3], 'invalid_input', 'NaN or inf for b'),
    (['a', 'b', 'c'], [0.1, 3.0, 0.3], 'inconsistent_state', 'b at 3.0000, outside the joint limits'),
])
def test_bad_states_are_refused_not_repaired(node, names, q, reason, text):
    tracker = _tracker(node)
    _settle(tracker, node, NAMES, HOME, ago=0.01)
    msg = joint_state(names, [0.0] * len(names), node.get_clock().now().to_msg())
    msg.position = q
    tracker.on_message(msg)
    with pytest.raises(StateError, match=text) as error:
        _state(tracker)
    assert error.value.reason == reason


def test_encoder_noise_at_a_limit_is_clamped(node):
    tracker = _tracker(node)
    _settle(tracker, node, NAMES, [2.005, 0.0, -2.005])
    np.testing.assert_array_equal(_state(tracker).position, [2.0, 0.0, -2.0])


def test_a_state_moving_faster_than_the_limits_is_inconsistent(node):
    tracker = _tracker(node, tolerance=0.05)
    _settle(tracker, node, NAMES, HOME, ago=0.01)
    _feed(tracker, node, NAMES, HOME + [0.5, 0.0, 0.0])  # 0.5 rad in 0.01 s on a 1 rad/s joint
    with pytest.raises(StateError, match='jumped a by 0.500') as error:
        _state(tracker)
    assert error.value.reason == 'inconsistent_state'


def test_the_command_envelope(node):
    history = CommandHistory()
    tracker = _tracker(node, history, tolerance=0.05)
    start = MotionState.at_rest(HOME)
    path = plan_move(start, HOME + [0.6, 0.0, -0.6], LIMITS)  # c from 0.3 down to -0.3, in about 0.85 s
    history.sent(start, path, time.monotonic())
    _settle(tracker, node, NAMES, HOME + [0.1, 0.0, -0.1], ago=0.02)  # on the way: consistent
    _state(tracker)
    _feed(tracker, node, NAMES, HOME + [0.1, 0.0, 0.35])  # c at 0.65: the wrong way, beyond a pause after the end
    with pytest.raises(StateError, match='outside where our commands can have taken it'):
        _state(tracker)


def test_after_a_pause_zeros_are_believed_only_once_they_persist(node):
    """A driver restart: readings stop for 1.2 s, then all zeros (the bound grew with the pause).

    The zeros lie 0.3 rad from the last reading, within 1.2 s x 1 rad/s: a bound growing with the pause takes
    them.  They lie beyond what the arm can have done in the capped pause, so they are refused until a run of
    them spans the resettle time (1 s): a driver's start-up zeros never move the arm.
    """
    tracker = _tracker(node)
    _settle(tracker, node, NAMES, HOME, ago=2.4)
    _state(tracker)
    _feed(tracker, node, NAMES, np.zeros(3), ago=1.2)
    with pytest.raises(StateError, match='joint_states resumed') as error:
        _state(tracker)
    assert error.value.reason == 'stale_state' and tracker.settling(NAMES)
    for k in range(1, 102):   # zeros at 100 Hz; after half a second still refused, after 1.01 s believed
        _feed(tracker, node, NAMES, np.zeros(3), ago=1.2 - 0.01 * k)
        if k == 50:
            with pytest.raises(StateError, match='joint_states resumed'):
                _state(tracker)
    np.testing.assert_array_equal(_state(tracker).position, 0.0)


def test_the_command_envelope_stops_growing_after_a_pause(node):
    """A command that ended 10 s ago explains the arm only a pause's travel from where it left it."""
    history = CommandHistory()
    tracker = _tracker(node, history)
    start = MotionState.at_rest(HOME)
    history.sent(start, plan_move(start, HOME + 0.2, LIMITS), time.monotonic() - 12.0)
    for ago in (0.02, 0.01, 0.0):   # 10 s at rest, 0.45 rad from the end: fewer than a settled run
        _feed(tracker, node, NAMES, HOME + 0.2 + [0.45, 0.0, 0.0], ago=ago)
    with pytest.raises(StateError, match='outside where our commands can have taken it') as error:
        _state(tracker)
    assert error.value.reason == 'inconsistent_state'


def test_a_settled_run_off_the_command_is_believed_the_arm_was_moved_by_another_client(node):
    history = CommandHistory()
    tracker = _tracker(node, history)
    start = MotionState.at_rest(HOME)
    history.sent(start, plan_move(start, HOME + 0.2, LIMITS), time.monotonic() - 12.0)
    for k in range(105, -1, -1):   # 1.05 s of consistent readings: a run off the command needs 1 s
        _feed(tracker, node, NAMES, HOME + 0.2 + [0.45, 0.0, 0.0], ago=0.01 * k)
    np.testing.assert_allclose(_state(tracker).position, HOME + 0.2 + [0.45, 0.0, 0.0])


def test_future_stamped_readings_are_refused(node):
    tracker = _tracker(node)
    _settle(tracker, node, NAMES, HOME, ago=0.02)
    _feed(tracker, node, NAMES, HOME + 0.05, ago=-10.0)
    with pytest.raises(StateError, match='in the future') as error:
        _state(tracker)
    assert error.value.reason == 'inconsistent_state'


def test_a_reading_stamped_before_1970_is_refused_and_the_believed_state_stays(node):
    """Time.from_msg raises on a negative stamp: on the inputs thread that ended the thread that takes the streams."""
    tracker = _tracker(node)
    _settle(tracker, node, NAMES, HOME)
    msg = joint_state(NAMES, HOME + 0.3)
    msg.header.stamp.sec, msg.header.stamp.nanosec = -1, 500
    tracker.on_message(msg)
    np.testing.assert_array_equal(_state(tracker).position, HOME)


def test_a_model_loaded_while_readings_flow_believes_them_at_once(node):
    tracker = JointStateTracker(node)
    _settle(tracker, node, NAMES, HOME)
    tracker.configure(LIMITS)
    np.testing.assert_array_equal(_state(tracker).position, HOME)


def test_a_joint_named_twice_in_a_request_is_refused():
    """Seeds and ComputeFK took one of two positions of a joint named twice, silently."""
    from ik_solver.ros.messages import joint_positions
    with pytest.raises(ValueError, match='duplicate joint names a'):
        joint_positions(joint_state(['a', 'b', 'a'], [0.1, 0.2, 0.3]))
    assert joint_positions(joint_state(['a', 'b'], [0.1, float('nan')])) == ({'a': 0.1}, ['b'])
