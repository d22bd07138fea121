"""A lie on joint_states never becomes the servo's command: ik_servo_node drives the simulated arm over DDS.

The attack as it was reproduced: the servo idle (forward_position output, the simulator), another
process publishes the arm's true state with joint1 moved by ``LIE`` at about 1 kHz for 0.5 s, beside
the simulator's own joint_states, then a teleop sends a twist.  A servo that adopted the reading
restarted from it, and its first command lay ``LIE`` from the arm.  The truth is the simulator's own
readings (the liar marks its messages), the arm at rest: the first command after the twist must lie
within one period at the velocity limit of it, and the servo's status names the refusal.
"""
import os
import threading
import time

from ik_solver.motion.servo import Status
from ik_solver_demos.tools.servo_demo import ServoClient, start_servo
import numpy as np
import pytest
from ros_fixtures import isolate_ros_domain  # noqa: I100

import rclpy  # noqa: E402, I100
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

PERIOD = 0.01
NAMESPACE = f'/servo_lies_{os.getpid()}'
LIAR = 'lie'


class Liar:
    """Republishes the simulator's joint_states with joint1 moved by ``offset``, marked by its frame_id."""

    def __init__(self, namespace):
        self.node = rclpy.create_node('state_liar', namespace=namespace)
        self.lock = threading.Lock()
        self.truth = []           # (monotonic, positions) of the simulator's own readings
        self.offset = None
        self.sent = 0
        self.pub = self.node.create_publisher(JointState, 'joint_states', 10)
        self.node.create_subscription(JointState, 'joint_states', self._on_state, 100)
        self.node.create_timer(0.001, self._lie)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _on_state(self, msg):
        if msg.header.frame_id != LIAR:
            with self.lock:
                self.truth.append((time.monotonic(), msg))

    def _lie(self):
        offset = self.offset   # read once: the test clears it while this runs (a raise would end the executor)
        with self.lock:
            if offset is None or not self.truth:
                return
            true = self.truth[-1][1]
        lie = JointState(name=list(true.name), position=list(true.position), velocity=list(true.velocity))
        lie.position[0] += offset
        lie.header.stamp = self.node.get_clock().now().to_msg()
        lie.header.frame_id = LIAR
        self.pub.publish(lie)
        self.sent += 1

    def true_positions(self, names, before):
        """Return the simulator's newest reading received before monotonic ``before``, in ``names`` order."""
        with self.lock:
            msg = [m for t, m in self.truth if t < before][-1]
        return np.array([msg.position[list(msg.name).index(n)] for n in names])

    def close(self):
        self.executor.shutdown(timeout_sec=5.0)
        self.node.destroy_node()


@pytest.fixture(scope='module')
def rig(ik7):
    isolate_ros_domain()
    rclpy.init()
    sim, servo = start_servo({'command_in_type': 'speed_units', 'incoming_command_timeout': 0.2},
                             {'publish_rate': 200.0}, prefix='test_servo_lies', namespace=NAMESPACE)
    client = ServoClient(ik7.joint_names, namespace=NAMESPACE)
    liar = Liar(NAMESPACE)
    try:
        assert client.wait_ready(120.0), servo.output()[-3000:] + sim.output()[-3000:]
        yield client, liar, servo
    finally:
        liar.close()
        client.close()
        servo.stop()
        sim.stop()
        rclpy.try_shutdown()


@pytest.mark.parametrize('lie', [2.0, 0.05])
def test_a_lie_beside_the_true_joint_states_never_becomes_the_first_command(rig, ik7, lie):
    client, liar, servo = rig
    assert client.wait_rest()
    time.sleep(0.5)   # idle: the halt messages of an earlier motion are sent
    lied, liar.sent = time.monotonic(), 0
    liar.offset = lie
    time.sleep(0.5)
    liar.offset = None
    assert liar.sent > 20, liar.sent   # the lie was told (hundreds of readings on a quiet machine)
    twist = time.monotonic()
    client.stream(lambda t: client.twist((0.1, 0.0, 0.0)), 0.3)
    client.stream(lambda t: client.twist((0.0, 0.0, 0.0)), 0.2)
    assert client.wait_rest()
    commands = client.since(client.commands, twist)
    assert commands, servo.output()[-3000:]
    received, first = commands[0]
    true = liar.true_positions(ik7.joint_names, received)
    step = np.abs(np.array(first.data) - true)
    # the arm rests before the twist: its first command moves it by one period at most
    assert np.all(step <= ik7.velocity_limits * PERIOD), (step, ik7.velocity_limits * PERIOD)
    # beyond the servo's tolerance: the lies are refused, and the status says so
    messages = [m.message for _, m in client.since(client.statuses, lied) if m.code == Status.INVALID]
    assert messages and all('joint_states refused' in m for m in messages), messages
