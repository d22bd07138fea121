"""The servo never drives the arm into the table or itself: ik_servo_node drives the MuJoCo arm over DDS.

The servo and the simulator load the same world (config/ik7_scene.yaml: a table and a box on it).  The
witnesses are independent of the servo's distances: the simulator's ``~/contacts`` (every arm-world contact
of any physics step) and a CollisionModel of this process (exact shapes, padding 0) run on every command
the servo published.  Each braking test has a positive control: the same motion with ``check_collisions``
false does reach the contact, so the witnesses see it.  The tests run in file order, each starting where the one
before left the arm: the table's tests first (the reversal from the halt the first one reached), the folded
arm's last, so that the arm crosses from the table to the folded posture once.
"""
import json
import os
import time

from ik_solver.collision.model import CollisionModel
from ik_solver.collision.scene import load_scene
from ik_solver.motion.servo import Status
from ik_solver_demos.tools.resources import arm_files
from ik_solver_demos.tools.servo_demo import ServoClient, start_servo
import numpy as np
import pytest
from ros_fixtures import isolate_ros_domain, poll  # noqa: I100

pytest.importorskip('pinocchio', reason='Pinocchio (PyPI pin) is not installed: no collision model')
pytest.importorskip('mujoco', reason='MuJoCo is not installed: no physics')
from rcl_interfaces.srv import SetParameters  # noqa: E402, I100, I202
import rclpy  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import String  # noqa: E402

CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'config')
SRDF, SCENE = os.path.join(CONFIG, 'ik7.srdf'), os.path.join(CONFIG, 'ik7_scene.yaml')
NAMESPACE = f'/servo_collision_{os.getpid()}'
HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
#: Tool pointing down 12 cm above the table top (tip at 0.6, -0.1, 0.32 in the base; joint7 clear of its margin).
ABOVE_TABLE = np.array([-0.5923, 0.8372, 0.6876, -1.4485, -0.5706, 1.061, 0.2140])
#: Tool pointing down, link7 2 cm above the table top (tip at 0.6, -0.1, 0.22).
NEAR_TABLE = np.array([-0.55, 0.97942, 0.61116, -1.47004, -0.65275, 0.90157, 0.26527])
#: Upper arm leaning back, elbow folded: bending the shoulder (joint2) further back brings the wrist (link7)
#: onto the base (the SRDF checks base_link against link5-link7 only).
TUCKED = np.array([0.0, -1.4, 0.0, 1.9, 0.0, -1.5, 0.0])
#: Within this of TUCKED in every joint [rad] (where a fold test leaves the arm: joint2 back by 0.25-0.5 rad,
#: then forward again), the joint-space jog to TUCKED is short and clear of the table: no detour through HOME.
FOLDED = 0.6
PADDING = 0.01
#: The P gain [1/s] and speed cap [rad/s] of the jogs to a start posture: from jog_to's cap it brakes at
#: 1.5 rad/s^2 (config/ik7_joint_limits.yaml allows 3), and closes the last 2 mm-rad in 60 % of the time of its
#: default gain 2.  No faster: TUCKED lies near the base, and a faster approach makes the servo, braking for the
#: base, halt short of it on a loaded host (where the P controller then pushes into the halt).
HOMING_GAIN, HOMING_SPEED = 3.0, 0.5
#: Tolerance [rad] of every joint at a start posture (jog_to's), and at a posture the arm only passes through.
HOMING_TOLERANCE, WAYPOINT_TOLERANCE = 2e-3, 0.05
SPEED = 0.1        # m/s, tip speed of the twists
#: How long [s] a stream goes on after the servo halts for a collision: the halt must hold while the operator
#: still holds the key, and the commands the halt publishes are in by then.
HOLD = 0.5
#: Longest stream [s] toward a contact: the twist halts after about 1.2 s, the jog after about 1 s (at most
#: 0.5 rad at JOG), or ends at the contact a control waits for; the rest is room for a loaded host.
REACH = 6.0
JOG = 0.5          # rad/s, joint2's speed in the self-collision jog (toward the back)
SERVO = {'command_in_type': 'speed_units', 'srdf_file': SRDF, 'scene_file': SCENE, 'collision_padding': PADDING,
         'incoming_command_timeout': 0.2}


class Rig:
    """The simulator, the servo and a client that also records the simulator's contacts."""

    def __init__(self, chain):
        self.sim, self.servo = start_servo(SERVO, {'scene_file': SCENE, 'publish_rate': 200.0},
                                           prefix='test_servo_collision', namespace=NAMESPACE)
        self.client = ServoClient(chain.joint_names, namespace=NAMESPACE)
        self.contacts = []   # (monotonic, [{"link", "object", "distance"}])
        self.client.create_subscription(String, 'sim_arm/contacts', self._on_contacts, 100)
        self.parameters = self.client.create_client(SetParameters, 'ik_servo/set_parameters')
        self.witness = CollisionModel(arm_files('ik7')[0], 'base_link', 'tool0', srdf=SRDF)
        self.witness.set_obstacles(load_scene(SCENE))
        self.table_halt = None   # joint positions where a twist toward the table last halted, at rest

    def _on_contacts(self, msg):
        with self.client.lock:
            self.contacts.append((time.monotonic(), json.loads(msg.data)))

    def contacts_since(self, t):
        with self.client.lock:
            return [c for s, c in self.contacts if s >= t]

    def check_collisions(self, on):
        assert self.parameters.wait_for_service(timeout_sec=10.0)
        future = self.parameters.call_async(SetParameters.Request(
            parameters=[Parameter('check_collisions', value=on).to_parameter_msg()]))
        deadline = time.monotonic() + 10.0
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert future.done() and future.result().results[0].successful

    def go_to(self, q, through=False, timeout=60.0):
        """Jog every joint to ``q`` (a P controller, HOMING_SPEED at most) and wait for rest there.

        Args:
            q: the goal joint positions [rad].
            through: return, still moving, once within WAYPOINT_TOLERANCE (for a posture on the way).
            timeout: longest wait [s] (a loaded host slows the loop).
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            error = q - self.client.latest(self.client.joints)[0]
            if through and np.abs(error).max() < WAYPOINT_TOLERANCE:
                return
            if np.abs(error).max() < HOMING_TOLERANCE:
                self.client.jog(self.client.joint_names, np.zeros(len(q)))
                assert self.client.wait_rest(), (self.client.latest(self.client.joints), q)
                return
            self.client.jog(self.client.joint_names, np.clip(HOMING_GAIN * error, -HOMING_SPEED, HOMING_SPEED))
            time.sleep(0.01)
        raise AssertionError(f'not at {q} within {timeout} s: {self.client.latest(self.client.joints)}')

    def commanded(self, t):
        """Positions of the commands published since monotonic ``t``."""
        return np.array([m.data for _, m in self.client.since(self.client.commands, t)]).reshape(-1, len(HOME))

    def statuses(self, t):
        return [m for _, m in self.client.since(self.client.statuses, t)]

    def halted_for(self, t0, hold=HOLD):
        """Return a predicate: the servo reported HALT_FOR_COLLISION since ``t0``, ``hold`` [s] ago or more."""
        def held():
            halts = [s for s, m in self.client.since(self.client.statuses, t0) if m.code == Status.HALT_FOR_COLLISION]
            return bool(halts) and time.monotonic() - halts[0] >= hold
        return held

    def wait_idle(self, quiet=0.3, timeout=10.0):
        """Wait until no command has arrived for ``quiet`` [s]: the servo idles, its last commands are all in."""
        def age():
            with self.client.lock:
                return time.monotonic() - self.client.commands[-1][0] if self.client.commands else quiet
        assert poll(lambda: age() >= quiet, timeout), 'the servo goes on commanding'

    def close(self):
        self.client.close()
        self.servo.stop()
        self.sim.stop()


@pytest.fixture(scope='module')
def rig(ik7):
    isolate_ros_domain()
    rclpy.init()
    rig = Rig(ik7)
    try:
        assert rig.client.wait_ready(180.0), rig.servo.output()[-3000:] + rig.sim.output()[-3000:]
        yield rig
    finally:
        rig.close()
        rclpy.try_shutdown()


def lower_onto_table(rig, until=None):
    """Stream a downward twist from above the table until ``until()`` (default: HOLD after a halt); return its start.

    Args:
        rig: the module's Rig.
        until: predicate that ends the stream early; the stream lasts REACH seconds at most.

    Returns:
        The monotonic time [s] the stream started.
    """
    rig.go_to(ABOVE_TABLE)
    t0 = time.monotonic()
    rig.client.stream(lambda t: rig.client.twist((0.0, 0.0, -SPEED)), REACH, until=until or rig.halted_for(t0))
    return t0


def halt_at_table(rig):
    """Leave the arm at rest where a twist toward the table halts: lowered, unless it rests there already."""
    latest = rig.client.latest(rig.client.joints)[0]
    if rig.table_halt is not None and np.abs(latest - rig.table_halt).max() < 1e-3:
        return
    lowered = lower_onto_table(rig)
    assert rig.client.wait_rest()
    assert any(m.code == Status.HALT_FOR_COLLISION for m in rig.statuses(lowered)), 'not halted at the table'
    rig.table_halt = rig.client.latest(rig.client.joints)[0]


def clearances(rig, Q):
    """Distance [m] of each configuration to the nearest contact, by the witness (padding 0)."""
    return np.array([rig.witness.min_distance(q) for q in Q])


def tip_speeds(chain, Q, period=0.01):
    tips = np.array([chain.fk(q)[:3, 3] for q in Q])
    return np.linalg.norm(np.diff(tips, axis=0), axis=1) / period


def test_twist_toward_the_table_decelerates_and_halts_short_of_it(rig):
    """Lowered until the halt has held HOLD seconds of the continued twist: decelerated, halted, no contact."""
    t0 = lower_onto_table(rig)
    assert rig.client.wait_rest()
    rig.table_halt = rig.client.latest(rig.client.joints)[0]
    codes = [m.code for m in rig.statuses(t0)]
    assert Status.DECELERATE_FOR_COLLISION in codes, codes
    halts = [m.message for m in rig.statuses(t0) if m.code == Status.HALT_FOR_COLLISION]
    assert halts and 'table' in halts[-1] and 'link7' in halts[-1], halts
    assert codes.index(Status.DECELERATE_FOR_COLLISION) < codes.index(Status.HALT_FOR_COLLISION)
    Q = rig.commanded(t0)
    assert len(Q) > 100
    assert clearances(rig, Q).min() >= PADDING - 1e-4, 'a command came closer than the padding'
    assert rig.contacts_since(t0) == [], 'the simulator reports a contact'


def test_reversing_from_the_halt_moves_at_full_speed_at_once(rig, ik7):
    """From rest at the table's halt (where the test before left the arm, or lowered there) up at full speed."""
    halt_at_table(rig)
    rig.wait_idle()   # the commands of the halt are in: the reversal's own come after t0
    t0, stamped = time.monotonic(), rig.client.now()
    rig.client.stream(lambda t: rig.client.twist((0.0, 0.0, SPEED)), 1.0)
    # by the servo's stamps: a loaded host may deliver the halt's last statuses after the reversal began
    statuses = [m for m in rig.statuses(t0) if m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 >= stamped]
    assert statuses and all(m.code not in (Status.DECELERATE_FOR_COLLISION, Status.HALT_FOR_COLLISION)
                            for m in statuses), [(m.code, m.message) for m in statuses]
    Q = rig.commanded(t0)
    speeds = tip_speeds(ik7, Q)
    # from rest at the table to the commanded speed within the acceleration limits (about 0.2 s)
    assert speeds[:50].max() >= 0.95 * SPEED, speeds[:50]
    assert ik7.fk(Q[-1])[2, 3] > ik7.fk(Q[0])[2, 3] + 0.03   # up, away from the table (load may cut the stream)


def test_control_twist_toward_the_table_with_checking_off_hits_it(rig, ik7):
    rig.go_to(ABOVE_TABLE)   # with checking on: only the twist below runs unchecked
    rig.check_collisions(False)
    try:
        start = time.monotonic()
        t0 = lower_onto_table(rig, until=lambda: bool(rig.contacts_since(start)))
        assert rig.contacts_since(t0), 'the simulator saw no contact: the braking tests would prove nothing'
        rig.client.wait_rest()   # a loaded host may deliver the contact's report before the commands that made it
        assert clearances(rig, rig.commanded(t0)).min() < 0.0
    finally:
        # back up to ABOVE_TABLE's height however long a loaded host takes (at twice the speed under test: the
        # way up is not): the next test jogs from there
        top = ik7.fk(ABOVE_TABLE)[2, 3]
        rig.client.stream(lambda t: rig.client.twist((0.0, 0.0, 2 * SPEED)), REACH,
                          until=lambda: ik7.fk(rig.client.latest(rig.client.joints)[0])[2, 3] >= top)
        rig.check_collisions(True)


def test_twist_along_the_table_two_centimetres_above_it_is_not_slowed(rig, ik7):
    rig.go_to(NEAR_TABLE)
    t0 = time.monotonic()
    rig.client.stream(lambda t: rig.client.twist((0.0, -SPEED, 0.0)), 1.0)
    assert rig.client.wait_rest()
    statuses = rig.statuses(t0)
    assert all(m.code not in (Status.DECELERATE_FOR_COLLISION, Status.HALT_FOR_COLLISION) for m in statuses), \
        [(m.code, m.message) for m in statuses]
    Q = rig.commanded(t0)
    assert tip_speeds(ik7, Q).max() >= 0.98 * SPEED
    distance = clearances(rig, Q)
    # within the scene threshold all along: a servo slowing by distance alone would have slowed it
    assert PADDING < distance.min() and distance.max() < 0.03, (distance.min(), distance.max())
    assert rig.contacts_since(t0) == []


def fold(rig):
    """Bring the arm to TUCKED: through HOME, unless it is already near TUCKED (a fold test ran before)."""
    if np.abs(rig.client.latest(rig.client.joints)[0] - TUCKED).max() > FOLDED:
        rig.go_to(HOME, through=True)
    rig.go_to(TUCKED)


def test_jog_folding_the_arm_onto_its_base_halts_before_contact(rig):
    fold(rig)
    t0 = time.monotonic()
    rig.client.stream(lambda t: rig.client.jog(['joint2'], [-JOG]), REACH, until=rig.halted_for(t0))
    assert rig.client.wait_rest()
    halts = [m.message for m in rig.statuses(t0) if m.code == Status.HALT_FOR_COLLISION]
    assert halts and 'base_link' in halts[-1], halts
    Q = rig.commanded(t0)
    assert TUCKED[1] - Q[-1][1] > 0.25, 'the jog hardly moved'
    assert clearances(rig, Q).min() >= PADDING - 1e-4


def test_control_jog_onto_the_base_with_checking_off_reaches_contact(rig):
    fold(rig)
    rig.check_collisions(False)
    try:
        t0 = time.monotonic()

        def touching():
            Q = rig.commanded(time.monotonic() - 0.05)
            return len(Q) > 0 and rig.witness.check(Q[-1]) is not None

        rig.client.stream(lambda t: rig.client.jog(['joint2'], [-JOG]), 8.0, until=touching)
        Q = rig.commanded(t0)
        pairs = [rig.witness.check(q) for q in Q]
        assert any(p is not None and 'base_link' in p for p in pairs), (
            'no self contact commanded', Q[-1:], sorted({(m.code, m.message) for m in rig.statuses(t0)}))
    finally:
        rig.client.stream(lambda t: rig.client.jog(['joint2'], [JOG]), 1.0)
        rig.check_collisions(True)
