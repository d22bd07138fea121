"""Diagnostics of the IK node: content and levels with a stand-in node, then one real /diagnostics message."""
import time
from types import SimpleNamespace

from ik_solver.core.chain import load_chain
from ik_solver.ros.outcome import Outcome
from ik_solver_demos.tools.resources import arm_files
import numpy as np
import pytest

pytest.importorskip('diagnostic_msgs.msg', reason='diagnostic_msgs is not installed')
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402, I100
from ik_solver.ros import graph_features  # noqa: E402
from ik_solver.ros.diagnostics import DiagnosticsPublisher, ERROR, make_status, OK, WARN  # noqa: E402
from ik_solver.ros.graph_features import IKHealth  # noqa: E402


class FakeTracker:
    """JointStateTracker's age/rate/timeout."""

    def __init__(self, age=0.01, rate=100.0, timeout=0.5):
        self._age, self._rate, self.timeout = age, rate, timeout

    def age(self):
        return self._age

    def rate(self):
        return self._rate


class Clock:

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture(scope='module')
def model():
    return SimpleNamespace(name='ik7', chain=load_chain(arm_files('ik7')[0], 'base_link', 'tool0'))


def health_of(model, tracker=None):
    node = SimpleNamespace(model=model, joint_states=tracker or FakeTracker())
    clock = Clock()
    return IKHealth(node, clock), node, clock


def solved(success, latency, source='topic', reason=None):
    reason = reason or ('success' if success else 'unreachable')
    return Outcome(source, reason, '' if success else 'too far', result=SimpleNamespace(), latency=latency)


def test_ready_node_reports_model_rates_success_and_latency_percentiles(model):
    health, _, clock = health_of(model)
    latencies = np.arange(1, 101) * 1e-3  # 1 .. 100 ms
    for i, latency in enumerate(latencies):
        clock.now += 0.05
        health.on_outcome(solved(i % 4 != 0, latency))  # 75 of 100 succeed
    health.on_outcome(Outcome('service', 'stale_state', 'joint_states 2 s old', latency=0.0))  # refused, no solve
    health.on_outcome(Outcome('controller', 'success', execution='succeeded'))  # not an input
    level, message, values = health.status()
    assert level == OK, message
    assert values['robot'] == 'ik7' and values['chain'] == 'base_link -> tool0' and values['joints'] == 7
    assert values['joint_states age [s]'] == 0.01 and values['joint_states rate [Hz]'] == 100.0
    assert values['solves (last 10 s)'] == 100  # all within the last 5 s
    assert values['solve success rate'] == pytest.approx(0.75)
    assert values['target rate [Hz]'] == pytest.approx(100 / 10.0)
    ordered = np.sort(np.r_[latencies, 0.0])  # 101 latencies, the refusal's included
    assert values['latency p50 [ms]'] == pytest.approx(ordered[50] * 1e3)  # the middle one of 101
    assert ordered[99] * 1e3 <= values['latency p99 [ms]'] <= ordered[100] * 1e3
    assert values['last failure'] == 'stale_state' and values['last failure message'] == 'joint_states 2 s old'


def test_old_outcomes_leave_the_window(model):
    health, _, clock = health_of(model)
    for _ in range(10):
        health.on_outcome(solved(False, 0.001))
    assert health.status()[0] == WARN
    clock.now += 10.5
    level, message, values = health.status()
    assert level == OK and values['solves (last 10 s)'] == 0 and values['solve success rate'] is None
    assert values['last failure'] == 'unreachable' and values['last failure age [s]'] == pytest.approx(10.5)


@pytest.mark.parametrize('tracker, words', [
    (FakeTracker(age=None, rate=0.0), 'no joint_states'),
    (FakeTracker(age=2.0, rate=100.0, timeout=0.5), 'stale'),
])
def test_joint_states_missing_or_stale_warn(model, tracker, words):
    level, message, _ = health_of(model, tracker)[0].status()
    assert level == WARN and words in message


def test_low_success_rate_and_slow_latency_warn_only_with_enough_solves(model):
    health, _, clock = health_of(model)
    for _ in range(4):
        health.on_outcome(solved(False, 0.001))
    assert health.status()[0] == OK  # 4 < MIN_SOLVES: too few to judge
    health.on_outcome(solved(False, 0.001))
    level, message = health.status()[:2]
    assert level == WARN and '0% of 5 solves' in message and 'unreachable' in message
    slow, _, _ = health_of(model)
    for _ in range(10):
        slow.on_outcome(solved(True, 0.3))
    level, message = slow.status()[:2]
    assert level == WARN and 'latency p99 300 ms' in message


def test_no_model_is_an_error(model):
    health, node, _ = health_of(None)
    level, message, values = health.status()
    assert level == ERROR and 'no robot model' in message and values['robot'] == 'none'


def test_status_has_the_conventions_the_aggregator_reads():
    status = make_status('ik_solver: /left/ik_solver', 'ik7', WARN, 'stale', {'age [s]': 1.23456, 'n': 3,
                                                                              'none': None, 'flag': True})
    assert status.level == DiagnosticStatus.WARN and status.name == 'ik_solver: /left/ik_solver'
    assert [(kv.key, kv.value) for kv in status.values] == [('age [s]', '1.235'), ('n', '3'), ('none', 'n/a'),
                                                            ('flag', 'true')]


class FakeNode:
    """What DiagnosticsPublisher needs of a node."""

    def __init__(self):
        self.published = []

    def create_publisher(self, msg_type, topic, depth):
        self.topic = topic
        return SimpleNamespace(publish=self.published.append)

    def create_timer(self, period, callback, callback_group=None):
        self.period = period


def test_a_failing_status_function_is_an_error_not_a_crash():
    def broken():
        raise KeyError('joints')
    node = FakeNode()
    publisher = DiagnosticsPublisher(node, 'ik_solver: /ik_solver', lambda: 'ik7', broken)
    status = publisher.status()
    assert node.topic == '/diagnostics' and node.period == 1.0
    assert status.level == DiagnosticStatus.ERROR and 'KeyError' in status.message and status.hardware_id == 'ik7'


def test_real_diagnostics_message_over_dds(model):
    """attach() on a real rclpy node stand-in: one DiagnosticArray arrives on /diagnostics with the status."""
    ros_fixtures = pytest.importorskip('ros_fixtures', reason='rclpy or ik_solver_interfaces missing')
    rclpy = ros_fixtures.rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    class StandIn(Node):
        """The IK node's public interface, nothing else."""

        def __init__(self):
            super().__init__('ik_solver', namespace='left')
            self.model = model
            self.joint_states = FakeTracker()
            self.listeners = []

        def add_outcome_listener(self, callback):
            self.listeners.append(callback)

    ros_fixtures.isolate_ros_domain()
    rclpy.init()
    try:
        node, listener = StandIn(), rclpy.create_node('diagnostics_listener')
        features = graph_features.attach(node)
        received = []
        listener.create_subscription(DiagnosticArray, '/diagnostics', received.append, 10)
        for callback in node.listeners:
            callback(solved(True, 0.002))
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.add_node(listener)
        deadline = time.monotonic() + 10.0
        while not received and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert received, 'no /diagnostics message within 10 s'
        status = received[0].status[0]
        values = {kv.key: kv.value for kv in status.values}
        assert status.name == 'ik_solver: /left/ik_solver' and status.hardware_id == 'ik7'
        assert status.level == DiagnosticStatus.OK, status.message
        assert values['chain'] == 'base_link -> tool0' and values['solve success rate'] == '1'
        assert len(features) >= 3
        executor.shutdown()
        node.destroy_node()
        listener.destroy_node()
    finally:
        rclpy.try_shutdown()
