"""sim_arm_node as real processes over DDS: its three controllers, its reports and its namespacing.

Three simulators run at once: a joint_trajectory one in /jtc with a world
table and acceleration limits, and a forward_position (/left) and a
forward_velocity (/right) one that share a controller name, so that only their
namespaces keep their commands apart.
"""
from collections import defaultdict
import json
import os
import tempfile
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('mujoco', reason='mujoco is not installed')

from builtin_interfaces.msg import Duration  # noqa: E402, I100
from ik_solver_demos.tools.launcher import node_args, NodeProcess  # noqa: E402
from ik_solver_demos.tools.resources import arm_files  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from std_srvs.srv import SetBool  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

NAMES = [f'joint{i}' for i in range(1, 8)]
HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
#: Touches the table below with the wrist (tip at about x 0.83, z 0.24).
DOWN = np.array([0.0, 1.2, 0.0, -1.0, 0.0, 0.0, 0.0])
ACCELERATION_LIMIT = 3.0
SCENE = """frame: base_link
objects:
  - {name: table, type: box, size: [0.6, 1.0, 0.04], position: [0.65, 0.0, 0.18]}
"""
LIMITS = 'joint_limits:\n' + ''.join(
    f'  {n}: {{has_acceleration_limits: true, max_acceleration: {ACCELERATION_LIMIT}}}\n' for n in NAMES)
PUBLISH_PERIOD = 0.005  # /jtc: the default publish_rate, 200 Hz
FORWARD_PUBLISH_PERIOD = 0.01  # /left and /right: fewer messages for this test process to keep up with


class Recorder:
    """A test node that records, per topic, every message with its monotonic arrival time."""

    def __init__(self):
        self.node = rclpy.create_node('sim_test_recorder')
        self.lock = threading.Lock()
        self.log = defaultdict(list)
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self.node)
        self._running = True
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        while self._running:
            self._executor.spin_once(timeout_sec=0.05)

    def record(self, msg_type, topic):
        def store(msg, info):
            with self.lock:
                self.log[topic].append((time.monotonic(), msg, info['publication_sequence_number']))
        self.node.create_subscription(msg_type, topic, store, 100)

    def since(self, topic, t=0.0):
        """(arrival time, message) pairs that arrived from monotonic time ``t``."""
        with self.lock:
            return [(s, m) for s, m, _ in self.log[topic] if s >= t]

    def numbered(self, topic, t=0.0):
        """{publication sequence number: message} since ``t``: this process may lose messages when it is slow."""
        with self.lock:
            return {n: m for s, m, n in self.log[topic] if s >= t}

    def joints(self, namespace, t=0.0):
        return np.array([m.position for _, m in self.since(f'{namespace}/joint_states', t)])

    def call(self, client, request, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not client.service_is_ready() and time.monotonic() < deadline:
            time.sleep(0.05)
        future = client.call_async(request)
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        return future.result()

    def close(self):
        self._running = False
        self._thread.join(timeout=2.0)
        self._executor.shutdown()
        self.node.destroy_node()


def _start(namespace, files, **params):
    urdf, _ = arm_files('ik7')
    args = node_args(None, {'urdf_file': urdf, 'initial_positions': '[' + ', '.join(map(str, HOME)) + ']',
                            **params}) + ['-r', f'__ns:={namespace}']
    log = os.path.join(files, namespace.strip('/') + '.log')
    return NodeProcess('sim.sim_arm_node', args, log)


@pytest.fixture(scope='module')
def sims():
    os.environ['ROS_DOMAIN_ID'] = str(130 + os.getpid() % 90)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    files = tempfile.mkdtemp(prefix='test_sim_node_')
    for name, text in (('scene.yaml', SCENE), ('limits.yaml', LIMITS)):
        with open(os.path.join(files, name), 'w') as f:
            f.write(text)
    processes = {
        '/jtc': _start('/jtc', files, scene_file=os.path.join(files, 'scene.yaml'),
                       joint_limits_file=os.path.join(files, 'limits.yaml')),
        '/left': _start('/left', files, controller_type='forward_position', controller_name='arm_controller',
                        publish_rate=1.0 / FORWARD_PUBLISH_PERIOD),
        '/right': _start('/right', files, controller_type='forward_velocity', controller_name='arm_controller',
                         publish_rate=1.0 / FORWARD_PUBLISH_PERIOD),
    }
    rclpy.init()
    recorder = Recorder()
    for ns in processes:
        recorder.record(JointState, f'{ns}/joint_states')
        recorder.record(String, f'{ns}/sim_arm/limit_violations')
    recorder.record(Float64MultiArray, '/jtc/sim_arm/measured_accelerations')
    recorder.record(JointState, '/joint_states')
    recorder.record(String, '/jtc/sim_arm/contacts')
    recorder.trajectory = recorder.node.create_publisher(JointTrajectory, '/jtc/joint_trajectory_controller/'
                                                         'joint_trajectory', 10)
    recorder.commands = {ns: recorder.node.create_publisher(Float64MultiArray, f'{ns}/arm_controller/commands', 10)
                         for ns in ('/left', '/right')}
    recorder.processes = processes
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline and not all(len(recorder.joints(ns)) for ns in processes):
        time.sleep(0.1)
    assert all(len(recorder.joints(ns)) for ns in processes), ''.join(p.output() for p in processes.values())
    yield recorder
    recorder.close()
    for p in processes.values():
        p.stop()
    rclpy.try_shutdown()


def _send_trajectory(sims, q, duration):
    msg = JointTrajectory(joint_names=NAMES)
    msg.points = [JointTrajectoryPoint(positions=[float(v) for v in q], velocities=[0.0] * 7,
                                       time_from_start=Duration(sec=int(duration),
                                                                nanosec=int(duration % 1 * 1e9)))]
    sims.trajectory.publish(msg)
    return time.monotonic()


def _move(sims, q, duration, namespace='/jtc'):
    """Move the /jtc arm to q along the controller's cubic; wait until it is there (the physics may run slow)."""
    sent = _send_trajectory(sims, q, duration)
    assert _wait_at(sims, namespace, q, sent, timeout=10 * duration + 10.0), (_latest(sims, namespace), q)
    return sent


def _wait_at(sims, namespace, q, since, timeout=10.0, tolerance=2e-3):
    """Wait until the arm rests at q (a joint_states message after ``since``); return whether it did."""
    def there():
        states = sims.since(f'{namespace}/joint_states', since)
        return states and np.abs(np.array(states[-1][1].position) - q).max() < tolerance \
            and np.abs(states[-1][1].velocity).max() < 1e-2
    return _poll(there, timeout)


def _poll(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


def _stream(sims, namespace, values, period=0.02):
    """Publish commands at a fixed period; return the send times."""
    times = []
    for v in values:
        sims.commands[namespace].publish(Float64MultiArray(data=[float(x) for x in v]))
        times.append(time.monotonic())
        time.sleep(max(0.0, times[0] + len(times) * period - time.monotonic()))
    return times


def _positions_since(sims, namespace, t, count=20):
    """Joint positions published since ``t``, once at least ``count`` have arrived (this process may lag)."""
    assert _poll(lambda: len(sims.joints(namespace, t)) >= count, 10.0)
    return sims.joints(namespace, t)


def _latest(sims, namespace):
    return sims.joints(namespace)[-1]


def _violations(sims, namespace, t):
    return [json.loads(m.data) for _, m in sims.since(f'{namespace}/sim_arm/limit_violations', t)]


def test_each_sim_publishes_in_its_namespace_from_its_initial_positions(sims):
    assert sims.since('/joint_states') == []
    for ns in sims.processes:
        assert np.abs(_latest(sims, ns) - HOME).max() < 1e-3


def test_forward_position_commands_move_only_their_arm_and_a_wrong_length_is_rejected(sims):
    goal = HOME + np.array([0.3, 0.0, 0.0, 0.0, 0.0, 0.0, -0.3])
    t0 = time.monotonic()
    _stream(sims, '/left', [HOME + (goal - HOME) * s for s in np.linspace(0.0, 1.0, 51)])  # 0.3 rad/s
    assert _wait_at(sims, '/left', goal, t0)
    assert np.abs(_positions_since(sims, '/right', t0) - HOME).max() < 1e-3  # same topic, other namespace
    assert _violations(sims, '/left', t0) == []

    t1 = time.monotonic()
    sims.commands['/left'].publish(Float64MultiArray(data=[0.0, 0.0, 0.0]))
    assert _poll(lambda: 'command rejected: 3 values for 7 joints' in sims.processes['/left'].output(), 5.0)
    assert np.abs(_positions_since(sims, '/left', t1) - goal).max() < 2e-3


def test_forward_position_beyond_a_limit_is_reported_and_applied(sims):
    t0 = time.monotonic()
    beyond = _latest(sims, '/left').copy()
    beyond[6] = 3.1  # joint7: soft limit 173 deg = 3.02 rad
    _stream(sims, '/left', [beyond])
    assert _poll(lambda: _latest(sims, '/left')[6] > 3.0, 10.0)  # applied: the arm went (up to the hard limit)
    reports = _violations(sims, '/left', t0)
    assert [(v['joint'], v['quantity']) for r in reports for v in r['violations']] == [('joint7', 'position')]
    t1 = time.monotonic()
    _stream(sims, '/left', [HOME])
    assert _wait_at(sims, '/left', HOME, t1)


def test_forward_velocity_commands_are_integrated(sims):
    velocity = np.zeros(7)
    velocity[0] = 0.4
    start = _latest(sims, '/right').copy()
    t0 = time.monotonic()
    _stream(sims, '/right', [velocity] * 50 + [np.zeros(7)])
    assert _poll(lambda: np.abs(sims.since('/right/joint_states', t0)[-1][1].velocity).max() < 1e-3, 10.0)
    time.sleep(0.2)
    states = sims.numbered('/right/joint_states', t0)
    moving = sorted(k for k, m in states.items() if m.velocity[0] > 0.2)  # commanded 0.4: in motion
    assert np.median([states[k].velocity[0] for k in moving]) == pytest.approx(0.4, rel=0.03)
    moved = _latest(sims, '/right') - start
    # in physics time (the physics may run slower than the wall clock): one publish period per message
    assert moved[0] == pytest.approx(0.4 * (moving[-1] - moving[0] + 1) * FORWARD_PUBLISH_PERIOD, rel=0.05)
    assert np.abs(moved[1:]).max() < 1e-3
    assert np.abs(_positions_since(sims, '/left', t0) - HOME).max() < 2e-3  # same topic, other namespace


def test_measured_accelerations_agree_with_differences_of_the_published_velocities(sims):
    goal = HOME + np.array([0.8, 0.0, 0.5, 0.0, -0.6, 0.0, 0.0])
    t0 = _move(sims, goal, 1.5)
    _move(sims, HOME, 1.5)
    # Both topics are published at each publish step, one message each: their sequence numbers match.
    states = sims.numbered('/jtc/joint_states', t0)
    measured = sims.numbered('/jtc/sim_arm/measured_accelerations', t0)
    errors, differences = [], []
    for k, msg in measured.items():
        if k - 1 in states and k + 1 in states:
            difference = (np.array(states[k + 1].velocity) - states[k - 1].velocity) / (2 * PUBLISH_PERIOD)
            errors.append(np.abs(np.array(msg.data) - difference).max())
            differences.append(np.abs(difference).max())
    peak = max(differences)
    assert len(errors) > 300 and peak > 1.0
    assert np.percentile(errors, 95) < 0.05 * peak + 0.05, (np.percentile(errors, 95), peak)


def test_a_too_fast_trajectory_is_reported_and_a_normal_one_is_not(sims):
    normal = HOME + np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # cubic: v 0.5, a 1.33 rad/s^2
    t0 = _move(sims, normal, 1.5)
    assert _violations(sims, '/jtc', t0) == []
    t1 = _move(sims, HOME, 0.2)  # v 3.75 rad/s (limit 1.48), a 75 rad/s^2 (limit 3)
    assert _poll(lambda: _violations(sims, '/jtc', t1), 5.0)
    reports = _violations(sims, '/jtc', t1)
    assert len(reports) == 1 and reports[0]['controller'] == 'joint_trajectory'
    found = {(v['joint'], v['quantity']): v for v in reports[0]['violations']}
    assert set(found) == {('joint1', 'velocity'), ('joint1', 'acceleration')}
    assert found['joint1', 'velocity']['value'] == pytest.approx(-1.5 * 0.5 / 0.2, rel=0.02)
    assert 'executed beyond the limits' in sims.processes['/jtc'].output()


def test_enable_joint_states_stops_and_restarts_the_stream(sims):
    client = sims.node.create_client(SetBool, '/jtc/sim_arm/enable_joint_states')
    try:
        assert sims.call(client, SetBool.Request(data=False)).success
        stopped = _stamp(sims.node.get_clock().now().to_msg())
        t0 = time.monotonic()
        time.sleep(1.5)
        # Stamps, not arrival times: this process may still be draining messages sent before the stop.
        assert [m for _, m in sims.since('/jtc/joint_states', t0) if _stamp(m.header.stamp) > stopped + 0.05] == []
        assert len(sims.joints('/left', t0)) > 20  # the other sims go on
    finally:
        assert sims.call(client, SetBool.Request(data=True)).success
    t1 = time.monotonic()
    assert _poll(lambda: len(sims.joints('/jtc', t1)) > 20, 10.0)


def _stamp(stamp):
    return stamp.sec + stamp.nanosec * 1e-9


def test_controller_state_reports_the_reference(sims):
    control_msgs = pytest.importorskip('control_msgs.msg', reason='control_msgs is not installed (not on PyPI)')
    states = []
    sims.node.create_subscription(control_msgs.JointTrajectoryControllerState,
                                  '/jtc/joint_trajectory_controller/controller_state', states.append, 10)
    goal = HOME + np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.4])
    _move(sims, goal, 1.0)
    assert len(states) > 100
    assert list(states[-1].joint_names) == NAMES
    assert np.abs(np.array(states[-1].reference.positions) - goal).max() < 1e-9
    assert max(abs(s.reference.velocities[6]) for s in states) == pytest.approx(1.5 * 0.4, rel=0.02)


def test_a_table_in_the_path_is_reported_as_a_contact(sims):
    t0 = _move(sims, HOME, 0.5)
    assert sims.since('/jtc/sim_arm/contacts', t0) == []
    t1 = _send_trajectory(sims, DOWN, 2.0)
    assert _poll(lambda: sims.since('/jtc/sim_arm/contacts', t1), 30.0)
    touched = sims.since('/jtc/sim_arm/contacts', t1)[0][0]
    # the table holds the arm back: it comes to rest after the contact, away from DOWN (where a cubic comes to rest)
    rest = _rest_after(sims, '/jtc', touched)
    assert rest is not None and np.abs(rest - DOWN).max() > 2e-3, rest
    # the contacts of the first half second: the wrist on the table (the arm may press on while the cubic goes on)
    contacts = [json.loads(m.data) for s, m in sims.since('/jtc/sim_arm/contacts', t1) if s <= touched + 0.5]
    assert {c['object'] for batch in contacts for c in batch} == {'table'}
    assert {c['link'] for batch in contacts for c in batch} <= {'link5', 'link6', 'link7'}
    _move(sims, HOME, 2.0)
    t2 = time.monotonic()
    time.sleep(0.3)
    assert sims.since('/jtc/sim_arm/contacts', t2) == []


def _rest_after(sims, namespace, since, hold=60, timeout=30.0):
    """Wait until the arm rests: its last ``hold`` joint_states after ``since`` all under 1e-2 rad/s.

    Args:
        sims: the module's recorder.
        namespace: the simulator's namespace.
        since: monotonic time [s] from which readings count.
        hold: consecutive readings at rest (60: 0.3 s at 200 Hz, in physics time).
        timeout: how long to wait [s].

    Returns:
        The joint positions [rad] at rest, or None if the arm did not come to rest.
    """
    def resting():
        states = [m for _, m in sims.since(f'{namespace}/joint_states', since)][-hold:]
        return len(states) == hold and max(np.abs(m.velocity).max() for m in states) < 1e-2
    if not _poll(resting, timeout):
        return None
    return _latest(sims, namespace)


def test_the_simulator_takes_commands_under_real_time_scheduling(sims):
    """Every thread of a simulator (physics, executor, middleware) runs under SCHED_FIFO, as a real controller.

    Left to normal scheduling, a loaded host delivered trajectories to it up to 0.2 s late, and it joined
    them mid-way with steps a real-time controller would not make.  Where the host refuses real-time
    scheduling, the simulator says so in its log and the test has nothing to check.
    """
    process = sims.processes['/jtc']
    assert _poll(lambda: 'SCHED_FIFO' in process.output() or _policies(process.pid) == {os.SCHED_FIFO}, 10.0)
    if 'refused' in process.output():
        pytest.skip('this host refuses SCHED_FIFO: ' + process.output().split('refused', 1)[1][:80])
    assert _policies(process.pid) == {os.SCHED_FIFO}


def _policies(pid):
    """Return the set of scheduling policies of the threads of process ``pid`` (without the reset-on-fork flag)."""
    policies = set()
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            policies.add(os.sched_getscheduler(int(tid)) & ~os.SCHED_RESET_ON_FORK)
        except ProcessLookupError:
            pass
    return policies
