"""ControllerInterface's reference on a simulated clock: stamps, gaps and the names in its refusals.

Stand-ins: a fake node whose ROS clock is the simulated monotonic clock plus an offset, and the fields of
control_msgs/JointTrajectoryControllerState the interface reads.  The truths: a true reference stream is
believed even when a read of the clocks is preempted; a lie replacing the stream over a gap is never the
start; a refusal names controller_state.
"""
from dataclasses import dataclass, field
from types import SimpleNamespace

from builtin_interfaces.msg import Time
from ik_solver.motion.plausibility import PlausibilitySettings, StatePlausibility
from ik_solver.ros import controller as controller_module
from ik_solver.ros.controller import ControllerInterface
from ik_solver.ros.joint_states import StateError
import numpy as np
import pytest
from std_msgs.msg import Header
from trajectory_msgs.msg import JointTrajectoryPoint

NAMES = ['joint1', 'joint2', 'joint3']
TRUTH = [1.0, 2.0, 3.0]
#: The ROS clock runs this far from the monotonic one [ns].
OFFSET = 1_000_000_000_000
#: Delivery delay of every reference [ns].
DELAY = 2_000_000
PERIOD = 10_000_000   # 100 Hz


class SimClock:
    """The simulated monotonic clock and the node's ROS clock; a read of the latter may be preempted."""

    def __init__(self):
        self.ns = 5_000_000_000
        self.preempt = 0   # ns the next ROS clock read is preempted for

    def monotonic_ns(self):
        return self.ns

    def monotonic(self):
        return self.ns * 1e-9

    def now(self):
        self.ns += self.preempt
        self.preempt = 0
        return SimpleNamespace(nanoseconds=self.ns + OFFSET)


class FakeNode:
    def __init__(self, clock):
        self.clock, self.callback, self.warnings = clock, None, []

    def get_clock(self):
        return self.clock

    def create_subscription(self, msg_type, topic, callback, qos, callback_group=None):
        self.callback = callback

    def create_publisher(self, msg_type, topic, qos):
        return None

    def get_logger(self):
        return SimpleNamespace(warning=lambda text, **throttle: self.warnings.append(text))


@dataclass
class FakeState:
    joint_names: list
    reference: JointTrajectoryPoint = field(default_factory=JointTrajectoryPoint)
    header: Header = field(default_factory=Header)


@pytest.fixture
def judged(monkeypatch):
    """Return (interface, simulated clock, send(q)): references judged as the IK node judges them."""
    clock = SimClock()
    monkeypatch.setattr(controller_module, 'time', SimpleNamespace(monotonic=clock.monotonic,
                                                                   monotonic_ns=clock.monotonic_ns))
    settings = PlausibilitySettings(NAMES, np.full(3, -4.0), np.full(3, 4.0), np.full(3, 2.0), np.full(3, 3.0),
                                    tolerance=0.01)
    node = FakeNode(clock)
    interface = ControllerInterface(node, NAMES, 'jtc/joint_trajectory', 'jtc', state_type=FakeState,
                                    plausibility=StatePlausibility(settings))

    def send(q):
        """Publish a reference at ``q`` stamped now, deliver it DELAY later, then one period passes."""
        stamp = clock.ns + OFFSET
        clock.ns += DELAY
        point = JointTrajectoryPoint(positions=list(q), velocities=[0.0] * 3)
        node.callback(FakeState(NAMES, point, Header(stamp=Time(sec=stamp // 10**9, nanosec=stamp % 10**9))))
        clock.ns += PERIOD - DELAY

    return interface, clock, send


def test_a_true_stream_is_believed_when_reading_the_clocks_is_preempted(judged):
    """A thread preempted for 30 ms between its reads of the two clocks put the delay into the stamp.

    The reference then looked 30 ms older than the one before it and was refused as out of order.
    """
    interface, clock, send = judged
    for _ in range(20):
        send(TRUTH)
    for k in range(100):
        clock.preempt = 30_000_000 if k % 7 == 3 else 0
        send(TRUTH)
        reference = interface.reference(max_age=0.1)
        assert reference is not None, k
        np.testing.assert_array_equal(reference.position, TRUTH)


def test_a_lie_replacing_the_stream_over_a_gap_is_never_the_start(judged):
    """A 0.095 rad lie replacing the true stream: the reach granted over the gap grew to it within 0.24 s.

    A controller publishes every few milliseconds: a silence longer than a few periods is no continuity,
    so the lie must persist as a run of consistent references for the resettle time (1 s).
    """
    interface, clock, send = judged
    for _ in range(30):
        send(TRUTH)
    lie = [TRUTH[0] + 0.095] + TRUTH[1:]
    send(lie)
    with pytest.raises(StateError, match='controller_state jumped joint1 by 0.095') as refused:
        interface.reference(max_age=0.1)
    assert 'joint_states' not in str(refused.value)
    for k in range(80):   # 0.8 s of the lie
        send(lie)
        try:
            reference = interface.reference(max_age=0.1)
        except StateError:
            continue
        assert reference is None, f'the lie was believed after {(k + 1) * PERIOD * 1e-9:.2f} s'


def test_the_true_stream_resumes_after_a_short_gap_at_once(judged):
    """A delivery gap of three periods is within the controller's pause: the next reference is believed."""
    interface, clock, send = judged
    for _ in range(30):
        send(TRUTH)
    clock.ns += 3 * PERIOD
    send(TRUTH)
    np.testing.assert_array_equal(interface.reference(max_age=0.1).position, TRUTH)
