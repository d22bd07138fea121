"""ControllerInterface: the reference read from controller_state, topic commands, and FollowJointTrajectory goals.

Three layers:
- stand-ins (a fake node, fake control_msgs types, a fake action client driven by hand): every path, here
  where control_msgs is absent;
- a real DDS check of the topic path;
- where control_msgs is importable, a real action server and controller_state publisher in the style of
  joint_trajectory_controller (accept, succeed, preempt, reject, abort) behind the real rclpy ActionClient.
"""
from dataclasses import dataclass, field
import threading
import time
from types import SimpleNamespace

from builtin_interfaces.msg import Duration, Time
from ik_solver.ros import controller as controller_module
from ik_solver.ros.controller import ControllerError, ControllerInterface, REJECTED_CODE
from ik_solver.ros.joint_states import StateError
from ik_solver.ros.messages import trajectory_message
import numpy as np
import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor
from std_msgs.msg import Header
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

NAMES = ['joint1', 'joint2', 'joint3']


def trajectory(points=2, seconds=0.2, names=NAMES):
    msg = JointTrajectory(joint_names=list(names))
    for k in range(1, points + 1):
        t = seconds * k / points
        msg.points.append(JointTrajectoryPoint(positions=[0.1 * k] * len(names),
                                               time_from_start=Duration(sec=int(t), nanosec=int(t % 1 * 1e9))))
    return msg


# --- stand-ins --------------------------------------------------------------------------------------------

class FakeLogger:
    def __init__(self):
        self.warnings = []

    def warning(self, text, **throttle):
        self.warnings.append(text)


class FakePublisher:
    def __init__(self):
        self.sent = []

    def publish(self, msg):
        self.sent.append(msg)


class FakeClock:
    def __init__(self):
        self.nanoseconds = 1_000_000_000_000

    def now(self):
        return self


class FakeNode:
    def __init__(self):
        self.subscriptions, self.publishers, self.logger, self.clock = {}, {}, FakeLogger(), FakeClock()

    def get_clock(self):
        return self.clock

    def create_subscription(self, msg_type, topic, callback, qos, callback_group=None):
        self.subscriptions[topic] = (msg_type, callback)
        return topic

    def create_publisher(self, msg_type, topic, qos):
        self.publishers[topic] = FakePublisher()
        return self.publishers[topic]

    def get_logger(self):
        return self.logger


@dataclass
class FakeState:
    """The fields of control_msgs/JointTrajectoryControllerState that the interface reads."""

    joint_names: list
    reference: JointTrajectoryPoint = field(default_factory=JointTrajectoryPoint)
    header: Header = field(default_factory=Header)


class FakeFuture:
    def __init__(self):
        self._callbacks, self._done, self._value, self._error = [], False, None, None

    def add_done_callback(self, callback):
        self._callbacks.append(callback)
        if self._done:
            callback(self)

    def result(self):
        if self._error is not None:
            raise self._error
        return self._value

    def resolve(self, value=None, error=None):
        self._done, self._value, self._error = True, value, error
        for callback in self._callbacks:
            callback(self)


class FakeGoalHandle:
    def __init__(self, accepted):
        self.accepted = accepted
        self.result_future = FakeFuture()
        self.cancels = 0

    def get_result_async(self):
        return self.result_future

    def cancel_goal_async(self):
        self.cancels += 1
        return FakeFuture()

    def finish(self, status, error_code=0, error_string=''):
        result = FakeAction.Result(error_code=error_code, error_string=error_string)
        self.result_future.resolve(FakeResponse(status, result))


@dataclass
class FakeResponse:
    status: int
    result: object


class FakeAction:
    """control_msgs/action/FollowJointTrajectory as far as the interface uses it."""

    @dataclass
    class Goal:
        trajectory: object = None

    @dataclass
    class Result:
        error_code: int = 0
        error_string: str = ''


class FakeActionClient:
    def __init__(self, node, action_type, name, callback_group=None):
        self.name, self.ready, self.goals = name, True, []

    def server_is_ready(self):
        return self.ready

    def send_goal_async(self, goal):
        future = FakeFuture()
        self.goals.append((goal, future))
        return future


def make(command_interface='topic', node=None, state_type=FakeState, plausibility=None):
    node = node or FakeNode()
    events = []
    interface = ControllerInterface(node, NAMES, 'jtc/joint_trajectory', 'jtc', command_interface,
                                    on_event=lambda *event: events.append(event), state_type=state_type,
                                    action_type=FakeAction, action_client_class=FakeActionClient,
                                    plausibility=plausibility)
    return interface, node, events


def state_callback(node):
    return node.subscriptions['jtc/controller_state'][1]


def test_reference_is_reordered_to_our_joints_and_expires():
    interface, node, _ = make()
    given = ['joint3', 'gripper', 'joint1', 'joint2']
    point = JointTrajectoryPoint(positions=[3.0, 9.0, 1.0, 2.0], velocities=[0.3, 0.9, 0.1, 0.2],
                                 accelerations=[-3.0, -9.0, -1.0, -2.0])
    state_callback(node)(FakeState(given, point))
    reference = interface.reference(max_age=1.0)
    np.testing.assert_array_equal(reference.position, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(reference.velocity, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(reference.acceleration, [-1.0, -2.0, -3.0])
    reference.position[0] = 42.0   # a copy: callers cannot corrupt the stored state
    assert interface.reference(max_age=1.0).position[0] == 1.0
    time.sleep(0.05)
    assert interface.reference(max_age=0.01) is None


AT_REST = JointTrajectoryPoint(positions=[1.0, 2.0, 3.0], velocities=[0.0] * 3)


def test_empty_accelerations_read_as_zeros_but_velocities_are_required():
    interface, node, _ = make()
    state_callback(node)(FakeState(NAMES, AT_REST))
    assert interface.reference(max_age=1.0).acceleration.tolist() == [0.0] * 3
    # Without velocities a moving setpoint would look at rest: the move would start with a velocity jump.
    state_callback(node)(FakeState(NAMES, JointTrajectoryPoint(positions=[1.0, 2.0, 3.0])))
    assert interface.reference(max_age=1.0) is None
    assert node.logger.warnings == ['jtc/controller_state: reference velocities has 0 values for 3 joints; '
                                    'not used as the start of moves']


def test_stamped_reference_older_than_max_age_is_refused():
    """The stamp counts against the node clock when set; an unstamped state is judged by its arrival alone."""
    interface, node, _ = make()
    now = node.clock.nanoseconds
    for stamp_ns, usable in ((now - 50_000_000, True), (now - 300_000_000, False), (0, True)):
        stamp = Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
        state_callback(node)(FakeState(NAMES, AT_REST, Header(stamp=stamp)))
        reference = interface.reference(max_age=0.2)
        assert (reference is not None) == usable, stamp_ns
        if usable and stamp_ns:  # the monotonic instant it describes: 50 ms ago
            assert time.monotonic() - reference.time == pytest.approx(0.05, abs=0.01)
    assert len(node.logger.warnings) == 1 and 'stamped 0.300 s before now' in node.logger.warnings[0]


def _stamp(ns):
    return Header(stamp=Time(sec=ns // 10**9, nanosec=ns % 10**9))


def test_a_reference_stamped_in_the_future_is_refused():
    """A reference stamped 10 s ahead carrying a 0.05 rad lie was taken for now (age clamped at 0)."""
    interface, node, _ = make()
    callback = state_callback(node)
    callback(FakeState(NAMES, AT_REST, _stamp(node.clock.nanoseconds - 10_000_000)))
    assert interface.reference(max_age=1.0) is not None
    lie = JointTrajectoryPoint(positions=[1.05, 2.0, 3.0], velocities=[0.0] * 3)
    callback(FakeState(NAMES, lie, _stamp(node.clock.nanoseconds + 10 * 10**9)))
    assert interface.reference(max_age=1.0) is None
    assert node.logger.warnings == ['jtc/controller_state: reference stamped 10.000 s in the future (clock '
                                    'tolerance 0.02 s); not used as the start of moves']


def _judged():
    """Return a ControllerInterface whose references a plausibility model judges, its node, and its callback."""
    from ik_solver.motion.plausibility import PlausibilitySettings, StatePlausibility
    settings = PlausibilitySettings(NAMES, np.full(3, -4.0), np.full(3, 4.0), np.full(3, 1.5), np.full(3, 5.0),
                                    tolerance=0.01)
    interface, node, _ = make(plausibility=StatePlausibility(settings))
    return interface, node, state_callback(node)


def _reference_stream(node, callback, q, seconds, rate=100):
    """Feed references at rest at ``q`` for ``seconds`` at ``rate`` Hz, stamped up to the fake clock's now."""
    count = int(seconds * rate)
    for k in range(count, -1, -1):
        point = JointTrajectoryPoint(positions=list(q), velocities=[0.0] * 3)
        callback(FakeState(NAMES, point, _stamp(node.clock.nanoseconds - k * 10**9 // rate)))


def test_a_judged_reference_is_used_once_a_run_of_consistent_ones_arrived():
    interface, node, callback = _judged()
    callback(FakeState(NAMES, AT_REST, _stamp(node.clock.nanoseconds)))
    assert interface.reference(max_age=1.0) is None   # one reference after nothing: the model waits for a run
    _reference_stream(node, callback, [1.0, 2.0, 3.0], 0.15)
    np.testing.assert_array_equal(interface.reference(max_age=1.0).position, [1.0, 2.0, 3.0])


def test_a_reference_lying_between_true_ones_refuses_every_move():
    """A reference 0.095 rad off (within state_tolerance of the measurement) became the start of a move."""
    interface, node, callback = _judged()
    _reference_stream(node, callback, [1.0, 2.0, 3.0], 0.15)
    node.clock.nanoseconds += 10_000_000
    lie = JointTrajectoryPoint(positions=[1.095, 2.0, 3.0], velocities=[0.0] * 3)
    callback(FakeState(NAMES, lie, _stamp(node.clock.nanoseconds)))
    with pytest.raises(StateError, match='jumped joint1 by 0.095') as refused:
        interface.reference(max_age=1.0)
    assert refused.value.reason == 'inconsistent_state'
    node.clock.nanoseconds += 10_000_000
    callback(FakeState(NAMES, AT_REST, _stamp(node.clock.nanoseconds)))   # the truth again: believed
    np.testing.assert_array_equal(interface.reference(max_age=1.0).position, [1.0, 2.0, 3.0])


def test_a_judged_reference_stamped_in_the_future_refuses_every_move():
    interface, node, callback = _judged()
    _reference_stream(node, callback, [1.0, 2.0, 3.0], 0.15)
    lie = JointTrajectoryPoint(positions=[1.05, 2.0, 3.0], velocities=[0.0] * 3)
    callback(FakeState(NAMES, lie, _stamp(node.clock.nanoseconds + 10 * 10**9)))
    with pytest.raises(StateError, match=r'\d\.\d{3} s in the future') as refused:
        interface.reference(max_age=1.0)
    assert refused.value.verdict.name == 'FUTURE_STAMP'


@pytest.mark.parametrize('names,point,reason', [
    (['joint1', 'joint2'], JointTrajectoryPoint(positions=[0.0, 0.0]), 'joints joint3 missing'),
    (NAMES + ['joint1'], JointTrajectoryPoint(positions=[0.0] * 4), 'duplicate joint names'),
    (NAMES, JointTrajectoryPoint(positions=[0.0, 0.0]), 'reference positions has 2 values for 3 joints'),
    (NAMES, JointTrajectoryPoint(positions=[0.0] * 3, velocities=[0.0]), 'reference velocities has 1 values'),
    (NAMES, JointTrajectoryPoint(positions=[0.0] * 3, velocities=[0.0] * 3, accelerations=[0.0] * 2),
     'reference accelerations has 2 values'),
    (NAMES, JointTrajectoryPoint(positions=[0.0, float('nan'), 0.0]), 'reference positions are not finite'),
    (NAMES, JointTrajectoryPoint(), 'reference positions has 0 values'),
])
def test_unusable_states_are_not_used_and_warned_once(names, point, reason):
    interface, node, _ = make()
    callback = state_callback(node)
    callback(FakeState(NAMES, AT_REST))
    assert interface.reference(max_age=1.0) is not None
    callback(FakeState(names, point))
    callback(FakeState(names, point))
    assert interface.reference(max_age=1.0) is None   # a bad state replaces, never falls back to, an older one
    assert len(node.logger.warnings) == 1 and reason in node.logger.warnings[0]


def test_topic_interface_publishes_and_reports_sent():
    interface, node, events = make()
    msg = trajectory(points=4, seconds=1.5)
    interface.send(msg)
    assert node.publishers['jtc/joint_trajectory'].sent == [msg]
    assert events == [('sent', 0, '4 points over 1.500 s on jtc/joint_trajectory')]


@pytest.mark.parametrize('command_interface', ['topic', 'action'])
def test_a_path_is_sent_as_its_trajectory_message(command_interface):
    """On a topic as serialized bytes, as a goal as the message: either way the trajectory_message of the path."""
    from rclpy.serialization import deserialize_message
    interface, node, events = make(command_interface)
    path = SimpleNamespace(times=np.array([0.25, 1.5]), positions=np.array([[0.1] * 3, [0.2] * 3]),
                           velocities=np.ones((2, 3)), accelerations=np.ones((2, 3)))
    stamp = Time(sec=5, nanosec=6)
    assert interface.send_path(NAMES, path, stamp) is None
    if command_interface == 'topic':
        (sent,) = node.publishers['jtc/joint_trajectory'].sent
        sent = deserialize_message(sent, JointTrajectory)
        assert events == [('sent', 0, '2 points over 1.500 s on jtc/joint_trajectory')]
    else:
        sent = interface._client.goals[0][0].trajectory
    assert sent == trajectory_message(NAMES, path, stamp)


def test_without_control_msgs_reference_is_none_and_action_is_refused(monkeypatch):
    monkeypatch.setattr(controller_module, 'JointTrajectoryControllerState', None)
    monkeypatch.setattr(controller_module, 'FollowJointTrajectory', None)
    node = FakeNode()
    interface = ControllerInterface(node, NAMES, 'jtc/joint_trajectory', 'jtc')
    assert not interface.state_available and node.subscriptions == {}
    assert interface.reference() is None
    with pytest.raises(ControllerError, match="'action' needs control_msgs"):
        ControllerInterface(FakeNode(), NAMES, 'jtc/joint_trajectory', 'jtc', 'action')


def test_unknown_command_interface_is_refused():
    with pytest.raises(ControllerError, match="one of topic, action, got 'service'"):
        make('service')


def test_goal_is_sent_accepted_and_succeeds():
    interface, _, events = make('action')
    interface.send(trajectory())
    goal, future = interface._client.goals[0]
    assert goal.trajectory.joint_names == NAMES
    handle = FakeGoalHandle(accepted=True)
    future.resolve(handle)
    handle.finish(4, 0, '')
    assert [e[0] for e in events] == ['sent', 'accepted', 'succeeded']
    assert events[-1][1] == 0


def test_newer_goal_preempts_the_previous_only_once_accepted():
    interface, _, events = make('action')
    first, second = FakeGoalHandle(True), FakeGoalHandle(True)
    interface.send(trajectory())
    interface._client.goals[0][1].resolve(first)
    interface.send(trajectory())
    assert first.cancels == 0          # not before the new goal is accepted: the arm would hold in between
    interface._client.goals[1][1].resolve(second)
    assert first.cancels == 1 and second.cancels == 0
    first.finish(5, -1, 'Current goal cancelled due to new incoming action.')
    second.finish(4)
    assert [e[0] for e in events] == ['sent', 'accepted', 'sent', 'accepted', 'preempted', 'succeeded']
    assert events[4] == ('preempted', -1, 'goal 1: Current goal cancelled due to new incoming action.')


def test_goal_accepted_after_a_newer_one_is_canceled_at_once():
    interface, _, events = make('action')
    first, second = FakeGoalHandle(True), FakeGoalHandle(True)
    interface.send(trajectory())
    interface.send(trajectory())
    interface._client.goals[1][1].resolve(second)
    interface._client.goals[0][1].resolve(first)
    assert first.cancels == 1 and second.cancels == 0
    first.finish(5, -1, '')
    assert events[-1][:2] == ('preempted', -1)


def test_rejected_goal_leaves_the_running_one_alone():
    interface, _, events = make('action')
    running = FakeGoalHandle(True)
    interface.send(trajectory())
    interface._client.goals[0][1].resolve(running)
    interface.send(trajectory(names=['joint1', 'joint2', 'nope']))
    interface._client.goals[1][1].resolve(FakeGoalHandle(accepted=False))
    assert running.cancels == 0
    assert events[-1] == ('rejected', REJECTED_CODE, 'goal 2: rejected by jtc/follow_joint_trajectory')
    running.finish(4)
    assert events[-1][0] == 'succeeded'   # not 'preempted': nothing replaced it


@pytest.mark.parametrize('status,code,text,execution,message', [
    (6, -4, 'path tolerance violated on joint2', 'aborted', 'goal 1: path tolerance violated on joint2'),
    (5, 0, '', 'canceled', 'goal 1: canceled'),
    (0, 0, '', 'aborted', 'goal 1: goal ended with status 0'),   # an unknown final status is never a success
])
def test_result_codes_reach_the_listener(status, code, text, execution, message):
    interface, _, events = make('action')
    handle = FakeGoalHandle(True)
    interface.send(trajectory())
    interface._client.goals[0][1].resolve(handle)
    handle.finish(status, code, text)
    assert events[-1] == (execution, code, message)


def test_absent_server_and_transport_errors_are_rejections():
    interface, _, events = make('action')
    interface._client.ready = False
    assert interface.send(trajectory()) == 'action server jtc/follow_joint_trajectory is not available'
    assert interface._client.goals == [] and events == []  # nothing was sent: the sender answers for it
    interface._client.ready = True
    assert interface.send(trajectory()) is None
    interface._client.goals[0][1].resolve(error=RuntimeError('rmw failure'))
    assert events[-1] == ('rejected', REJECTED_CODE, 'goal 1: sending failed: rmw failure')


# --- real DDS ---------------------------------------------------------------------------------------------

@pytest.fixture
def ros_context():
    """Yield a node factory: an rclpy context of its own on the tests' private domain, an executor in a thread."""
    ros_fixtures = pytest.importorskip('ros_fixtures', reason='ik_solver_interfaces is not built')
    ros_fixtures.isolate_ros_domain()   # the suite's one allocator (10-99), localhost discovery
    context = rclpy.Context()
    rclpy.init(context=context)
    executor = MultiThreadedExecutor(num_threads=4, context=context)
    thread = threading.Thread(target=executor.spin, daemon=True)
    nodes = []

    def add(name):
        node = rclpy.create_node(name, context=context)
        executor.add_node(node)
        nodes.append(node)
        return node
    thread.start()
    yield add
    executor.shutdown()
    for node in nodes:
        node.destroy_node()
    context.try_shutdown()
    thread.join(5)


def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_topic_path_over_dds(ros_context):
    received, events = [], []
    controller = ros_context('fake_controller')
    controller.create_subscription(JointTrajectory, 'jtc/joint_trajectory', received.append, 10)
    interface = ControllerInterface(ros_context('ik_side'), NAMES, 'jtc/joint_trajectory', 'jtc',
                                    on_event=lambda *event: events.append(event))
    msg = trajectory(points=3, seconds=0.6)
    assert wait_for(lambda: controller.count_publishers('jtc/joint_trajectory') == 1)
    for _ in range(50):   # until discovery completes both ways, a send may go nowhere
        interface.send(msg)
        if wait_for(lambda: bool(received), 0.2):
            break
    assert received and received[0].joint_names == NAMES
    assert [list(p.positions) for p in received[0].points] == [list(p.positions) for p in msg.points]
    assert events[0] == ('sent', 0, '3 points over 0.600 s on jtc/joint_trajectory')
    path = SimpleNamespace(times=np.array([0.1, 0.7]), positions=np.array([[0.5, 0.6, 0.7], [0.8, 0.9, 1.0]]),
                           velocities=np.full((2, 3), 0.25), accelerations=np.full((2, 3), -0.5))
    received.clear()
    interface.send_path(NAMES, path, Time(sec=3, nanosec=4))   # serialized bytes, read by a typed subscriber
    assert wait_for(lambda: bool(received))
    assert received == [trajectory_message(NAMES, path, Time(sec=3, nanosec=4))]


# --- real control_msgs, where importable ------------------------------------------------------------------

class FakeTrajectoryController:
    """A joint_trajectory_controller stand-in: FollowJointTrajectory server and controller_state at 50 Hz.

    Accepts goals naming exactly its joints, executes for the trajectory's duration, aborts a goal when a newer
    one is accepted (as JTC preempts), honours cancel requests, and fails a goal asking for 'fail' in its
    first joint name with PATH_TOLERANCE_VIOLATED.
    """

    def __init__(self, node, names):
        from control_msgs.action import FollowJointTrajectory
        from control_msgs.msg import JointTrajectoryControllerState
        from rclpy.action import ActionServer, CancelResponse, GoalResponse
        from rclpy.callback_groups import ReentrantCallbackGroup
        self.action, self.names, self.node, self.newest = FollowJointTrajectory, names, node, None
        self.state_type = JointTrajectoryControllerState
        group = ReentrantCallbackGroup()
        self.server = ActionServer(
            node, FollowJointTrajectory, 'jtc/follow_joint_trajectory', self._execute, callback_group=group,
            goal_callback=lambda goal: (GoalResponse.ACCEPT if sorted(goal.trajectory.joint_names) == sorted(names)
                                        or goal.trajectory.joint_names[:1] == ['fail'] else GoalResponse.REJECT),
            handle_accepted_callback=self._accepted, cancel_callback=lambda handle: CancelResponse.ACCEPT)
        self.state_pub = node.create_publisher(JointTrajectoryControllerState, 'jtc/controller_state', 10)
        self.timer = node.create_timer(0.02, self._publish_state)

    def _accepted(self, handle):
        self.newest = handle
        handle.execute()

    def _execute(self, handle):
        result = self.action.Result()
        end = handle.request.trajectory.points[-1].time_from_start
        deadline = time.monotonic() + end.sec + end.nanosec * 1e-9
        while time.monotonic() < deadline:
            if handle.is_cancel_requested:
                handle.canceled()
                result.error_string = 'canceled'
                return result
            if self.newest is not handle:
                handle.abort()
                result.error_code = result.INVALID_GOAL
                result.error_string = 'Current goal cancelled due to new incoming action.'
                return result
            time.sleep(0.005)
        if handle.request.trajectory.joint_names[0] == 'fail':
            handle.abort()
            result.error_code = result.PATH_TOLERANCE_VIOLATED
            result.error_string = 'path tolerance violated'
            return result
        handle.succeed()
        return result

    def _publish_state(self):
        msg = self.state_type(joint_names=list(reversed(self.names)))
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.reference = JointTrajectoryPoint(positions=[3.0, 2.0, 1.0], velocities=[0.3, 0.2, 0.1],
                                             accelerations=[0.0, 0.0, 0.0])
        self.state_pub.publish(msg)


def test_real_action_and_controller_state(ros_context):
    pytest.importorskip('control_msgs.action', reason='control_msgs is not installed (not on PyPI)')
    fake = FakeTrajectoryController(ros_context('jtc'), NAMES)
    events, lock = [], threading.Lock()

    def record(*event):
        with lock:
            events.append(event)
    interface = ControllerInterface(ros_context('ik_side'), NAMES, 'unused', 'jtc', 'action', on_event=record)
    assert wait_for(lambda: interface._client.server_is_ready())
    assert wait_for(lambda: interface.reference(max_age=0.5) is not None)
    reference = interface.reference(max_age=0.5)
    assert reference.position.tolist() == [1.0, 2.0, 3.0] and reference.velocity.tolist() == [0.1, 0.2, 0.3]

    def executions():
        with lock:
            return [e[0] for e in events]
    interface.send(trajectory(seconds=0.3))
    assert wait_for(lambda: executions()[-1:] == ['succeeded'])
    assert executions() == ['sent', 'accepted', 'succeeded']
    interface.send(trajectory(seconds=5.0))
    assert wait_for(lambda: executions()[-1:] == ['accepted'])
    interface.send(trajectory(seconds=0.3))
    assert wait_for(lambda: executions().count('succeeded') == 2)
    assert executions()[3:] == ['sent', 'accepted', 'sent', 'accepted', 'preempted', 'succeeded'] or \
        executions()[3:] == ['sent', 'accepted', 'sent', 'preempted', 'accepted', 'succeeded']
    interface.send(trajectory(names=['x', 'y', 'z']))
    assert wait_for(lambda: executions()[-1:] == ['rejected'])
    interface.send(trajectory(names=['fail', 'y', 'z'], seconds=0.1))
    assert wait_for(lambda: executions()[-1:] == ['aborted'])
    with lock:
        assert events[-1][1] == fake.action.Result.PATH_TOLERANCE_VIOLATED
    fake.node.destroy_timer(fake.timer)
    assert wait_for(lambda: interface.reference(max_age=0.2) is None)
