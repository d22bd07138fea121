"""A soak lane: one simulator and one node on a private ROS domain, random input streams, lies, then the verdict.

The simulator publishes its physics state on ``soak_truth/...`` (remapped); the lane relays it to the topics
the node reads and lies beside it there: offsets of 0.05-2 rad on random joints at about 1 kHz for
0.1-0.5 s, a driver restart (the relay silent for 0.3-1.5 s, then zeros), future and replayed (out-of-order)
stamps, NaN, and on the IK lane's ``controller_state`` references offset by 0.01-0.1 rad, stamped as the truth
or in the future.  So the truth stays known however the node is lied to.  The lane records every command the
node sends and, after the run, judges each as the controller executes it (``soak_checks``) and against the
true state when it was sent.
"""
from collections import Counter, deque
from functools import partial
import json
import math
import os
import re
import threading
import time

import numpy as np

from .soak_checks import Limits, StreamCheck, TrajectoryCheck, Truth

#: Topic namespace the simulators' true state is remapped to; the lane relays it to the nodes' topics.
TRUTH = 'soak_truth'
CONTROLLER = 'joint_trajectory_controller'
#: The period a command may move the arm by at the velocity limit [s]: the IK node's sample period and the
#: servo's publish period.  A trajectory's next point may lie as much further as the velocity limit allows in
#: the time until it.
COMMAND_PERIOD = 0.01
#: Depth of the lane's command subscriptions: a lane starved of CPU takes commands late, and a shallow queue
#: would drop some; the checker would then read the gap as one step of several periods' motion.
COMMAND_QUEUE = 10000
#: How far the physics may trail a command it tracks [rad]: a trajectory's reference is followed with
#: velocity feed-forward, a forward_position target without: its position servo then also trails by
#: kv / kp x the joint's velocity (``servo_lag``), added per command from the true velocity.
TRACKING = {'ik': 0.02, 'servo': 0.06}
#: The span over which the true velocity is taken from the physics' positions [s].
VELOCITY_SPAN = 0.01
#: A command sent after this long without one [s] is the first of a motion.
IDLE = 0.5
#: Violating commands whose messages (and the command before) go into the result, for the investigation.
DUMPS = 8
STARTUP_TIMEOUT = 900.0
#: Quiet time before each lie [s], (shortest, longest): lies far enough apart that the node recovers between them.
LIE_GAP = (0.5, 2.5)
LIE_KINDS = {'ik': ('offset_burst', 'driver_restart', 'future_stamp', 'out_of_order', 'nan',
                    'controller_state_offset', 'controller_state_future'),
             'servo': ('offset_burst', 'driver_restart', 'future_stamp', 'out_of_order', 'nan')}


def stamp_seconds(stamp, epoch=0):
    """Return a builtin_interfaces Time or Duration in seconds after ``epoch`` [whole s]; a zero stamp stays 0."""
    if stamp.sec == 0 and stamp.nanosec == 0:
        return 0.0
    return (stamp.sec - epoch) + stamp.nanosec * 1e-9


def to_stamp(seconds):
    from builtin_interfaces.msg import Time
    sec = int(math.floor(seconds))
    return Time(sec=sec, nanosec=min(int((seconds - sec) * 1e9), 999_999_999))


def servo_lag():
    """Return kv / kp of the simulated arm's defaults [s]: how far its position servo trails a target per rad/s."""
    from ..sim.sim_arm_node import PARAMETERS
    defaults = {p.name: p.default for p in PARAMETERS}
    return defaults['kv'] / defaults['kp']


def trailing(lag, truth, t, true):
    """Return how far [rad] a position servo with ``lag`` [s] trails a moving target at ``t``: lag x |velocity|.

    The velocity is the physics' own, over the ``VELOCITY_SPAN`` before ``t`` (0 where that is not recorded).
    """
    before = truth.at(t - VELOCITY_SPAN)
    return 0.0 if before is None else lag * np.abs(true - before) / VELOCITY_SPAN


class Lane:
    """One private domain: starts the simulator and the node, streams inputs, lies, records, then checks."""

    def __init__(self, kind, seed, log_dir, lie_gap=LIE_GAP):
        """``lie_gap`` [s]: (shortest, longest) quiet time before each lie, drawn uniformly."""
        from ik_solver.core.chain import load_chain
        from .resources import arm_files, share_path
        self.kind = kind
        self.rng = np.random.default_rng(seed)
        self.urdf, self.config = arm_files('ik7')
        self.chain = load_chain(self.urdf, 'base_link', 'tool0')
        self.limits = Limits.from_files(self.chain, share_path('config', 'ik7_joint_limits.yaml'))
        self.log_dir = log_dir
        self.lock = threading.Lock()
        self.truth_log = []          # (stamp, q) of the simulator's joint_states
        self.reference_log = []      # (stamp, q, v, a) of the simulator's controller_state references
        self.commands = []           # (received, sent, message)
        self.statuses = Counter()
        self.sim_reports = []
        self.lies = Counter()        # episodes by kind
        self.lie_messages = Counter()
        self.lie_gap = tuple(float(x) for x in lie_gap)
        self.inputs = 0
        self.paused = False
        self.running = True
        self.recent = deque(maxlen=600)   # recent true JointState messages, for replays
        self.latest_reference = None
        self.tip = None
        self.processes = []
        self.executors = []
        self.refusals = Counter()    # the servo's INVALID statuses by message (numbers dropped)
        self.reference_available = False
        self.lie_times = []          # (kind, start, end) [s, ROS clock] of every lie told

    # -- processes --

    def start_processes(self):
        from .launcher import node_args, NodeProcess
        remap = ['-r', f'joint_states:={TRUTH}/joint_states']
        if self.kind == 'ik':
            config = self.config
            remap += ['-r', f'{CONTROLLER}/controller_state:={TRUTH}/controller_state']
            node_module, node_params = 'ros.ik_node', {'urdf_file': self.urdf}
        else:
            from .servo_demo import servo_config
            config = servo_config()
            node_module, node_params = 'ros.servo_node', {'urdf_file': self.urdf, 'command_in_type': 'speed_units'}
        sim = NodeProcess('sim.sim_arm_node', node_args(config, {'urdf_file': self.urdf}) + remap,
                          os.path.join(self.log_dir, f'{self.kind}_sim.log'))
        self.node_started = time.monotonic()
        node = NodeProcess(node_module, node_args(config, node_params), os.path.join(self.log_dir,
                                                                                     f'{self.kind}_node.log'))
        self.processes = [sim, node]

    def stop_processes(self):
        for p in self.processes:
            p.stop(10.0)

    # -- ROS side --

    def connect(self):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray, String
        from trajectory_msgs.msg import JointTrajectory
        rclpy.init()
        self.client = rclpy.create_node(f'soak_{self.kind}')
        self.relay = rclpy.create_node(f'soak_relay_{self.kind}')
        self.state_pub = self.relay.create_publisher(JointState, 'joint_states', 10)
        self.relay.create_subscription(JointState, f'{TRUTH}/joint_states', self._on_truth, 50)
        if self.kind == 'ik':
            from geometry_msgs.msg import PoseStamped
            from ik_solver_interfaces.msg import SolveStatus
            try:
                from control_msgs.msg import JointTrajectoryControllerState
            except ImportError:   # not on PyPI: then neither the simulator nor the node has a controller_state
                JointTrajectoryControllerState = None
            self.reference_available = JointTrajectoryControllerState is not None
            if self.reference_available:
                self.reference_pub = self.relay.create_publisher(JointTrajectoryControllerState,
                                                                 f'{CONTROLLER}/controller_state', 10)
                self.relay.create_subscription(JointTrajectoryControllerState, f'{TRUTH}/controller_state',
                                               self._on_reference, 50)
            self.input_pub = self.client.create_publisher(PoseStamped, 'ik_solver/target_pose', 10)
            self.client.create_subscription(JointTrajectory, f'{CONTROLLER}/joint_trajectory', self._on_command,
                                            COMMAND_QUEUE)
            self.client.create_subscription(SolveStatus, 'ik_solver/status', self._on_ik_status, 100)
        else:
            from geometry_msgs.msg import PoseStamped, TwistStamped
            from ik_solver_interfaces.msg import ServoStatus
            self.servo_codes = {getattr(ServoStatus, k): k for k in dir(ServoStatus)
                                if k.isupper() and isinstance(getattr(ServoStatus, k), int)}
            self.input_pub = self.client.create_publisher(TwistStamped, 'ik_servo/delta_twist_cmds', 10)
            self.client.create_subscription(Float64MultiArray, 'forward_position_controller/commands',
                                            self._on_command, COMMAND_QUEUE)
            self.client.create_subscription(ServoStatus, 'ik_servo/status', self._on_servo_status, 100)
            self.client.create_subscription(PoseStamped, 'sim_arm/tip_pose', self._on_tip, 10)
        self.client.create_subscription(String, 'sim_arm/limit_violations',
                                        lambda m: self.sim_reports.append(json.loads(m.data)), 50)
        for node in (self.client, self.relay):
            executor = SingleThreadedExecutor()
            executor.add_node(node)
            threading.Thread(target=executor.spin, daemon=True).start()
            self.executors.append(executor)

    def strangers(self, seconds=1.5):
        """Return the other nodes on this lane's domain after ``seconds`` of discovery (none: it is ours)."""
        time.sleep(seconds)
        own = {self.client.get_name(), self.relay.get_name()}
        return sorted({name for name, _ in self.client.get_node_names_and_namespaces()} - own)

    def close(self):
        import rclpy
        for executor in self.executors:
            executor.shutdown(timeout_sec=5.0)
        for node in (getattr(self, 'client', None), getattr(self, 'relay', None)):
            if node is not None:
                node.destroy_node()
        rclpy.try_shutdown()

    def now(self):
        return self.client.get_clock().now().nanoseconds * 1e-9

    def _on_truth(self, msg):
        if not self.paused:
            self.state_pub.publish(msg)
        with self.lock:
            self.truth_log.append((stamp_seconds(msg.header.stamp), np.array(msg.position)))
            self.recent.append(msg)

    def _on_reference(self, msg):
        self.reference_pub.publish(msg)
        r = msg.reference
        with self.lock:
            self.latest_reference = msg
            self.reference_log.append((stamp_seconds(msg.header.stamp), np.array(r.positions),
                                       np.array(r.velocities), np.array(r.accelerations)))

    def _on_command(self, msg, info):
        received = self.now()
        sent = info['source_timestamp'] * 1e-9 or received
        with self.lock:
            self.commands.append((received, sent, msg))

    def _on_ik_status(self, msg):
        with self.lock:
            self.statuses[msg.reason] += 1

    def _on_servo_status(self, msg):
        name = self.servo_codes.get(msg.code, str(msg.code))
        with self.lock:
            self.statuses[name] += 1
            if msg.code < 0:
                self.refusals[re.sub(r'-?[0-9][0-9.e-]*', '#', msg.message)[:100]] += 1

    def _on_tip(self, msg):
        p = msg.pose.position
        self.tip = np.array([p.x, p.y, p.z])

    # -- readiness --

    def wait_ready(self, timeout=STARTUP_TIMEOUT):
        """Wait until the node answers (IK: a first ~/solve, timed; servo: its first status); False on timeout."""
        deadline = time.monotonic() + timeout
        while not self.recent or (self.kind == 'servo' and self.tip is None):
            if not self.alive() or time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        if self.kind == 'ik':
            return self._first_solve(deadline)
        while time.monotonic() < deadline and self.alive():
            with self.lock:
                if sum(self.statuses.values()):
                    return True
            time.sleep(0.05)
        return False

    def alive(self):
        return all(p.alive() for p in self.processes)

    def _first_solve(self, deadline):
        """Time the IK node's first ~/solve: from its process start to the service, and the call itself."""
        from ik_solver_interfaces.srv import SolveIK
        from ik_solver.ros.messages import matrix_to_pose
        client = self.client.create_client(SolveIK, 'ik_solver/solve')
        while time.monotonic() < deadline and not client.service_is_ready():
            if not self.alive():
                return False
            time.sleep(0.01)
        self.first_solve = {'service_after_start': time.monotonic() - self.node_started}
        request = SolveIK.Request()
        request.target.header.frame_id = 'base_link'
        request.target.pose = matrix_to_pose(self.chain.fk(self.recent[-1].position))
        for label in ('first_call', 'second_call'):
            asked = time.monotonic()
            future = client.call_async(request)
            while not future.done() and time.monotonic() < deadline and self.alive():
                time.sleep(0.001)
            if not future.done():
                return False
            self.first_solve[label] = time.monotonic() - asked
            self.first_solve[f'{label}_success'] = bool(future.result().success)
        return True

    # -- inputs --

    def truth_q(self):
        return np.array(self.recent[-1].position)

    def stream(self, seconds):
        """Targets (IK) or twists (servo) in segments of random rate (10-200 Hz), with quiet spells."""
        end = time.monotonic() + seconds
        home_tip = None
        while self.running and time.monotonic() < end:
            duration = self.rng.uniform(0.5, 4.0)
            if self.rng.random() < 0.12:
                time.sleep(min(duration / 2, max(0.0, end - time.monotonic())))
                continue
            rate = self.rng.uniform(10.0, 200.0)
            if self.kind == 'ik':
                publish = self._target_segment(duration)
            else:
                home_tip = self.tip if home_tip is None else home_tip
                publish = self._twist_segment(home_tip)
            t0 = time.monotonic()
            while self.running and (t := time.monotonic()) < min(t0 + duration, end):
                publish((t - t0) / duration)
                self.inputs += 1
                time.sleep(max(0.0, 1.0 / rate - (time.monotonic() - t)))

    def _target_segment(self, duration):
        """Return a publisher of a target held or moving along a joint-space line (FK of configurations: reachable)."""
        from geometry_msgs.msg import PoseStamped
        from ik_solver.ros.messages import matrix_to_pose
        q0 = self.truth_q()
        span = 0.9 * (self.limits.upper - self.limits.lower) / 2
        centre = (self.limits.upper + self.limits.lower) / 2
        q1 = np.clip(q0 + self.rng.uniform(-0.8, 0.8, q0.size), centre - span, centre + span)
        moving = self.rng.random() < 0.5

        def publish(progress):
            q = q0 + (q1 - q0) * progress if moving else q1
            msg = PoseStamped()
            msg.header.frame_id = 'base_link'
            msg.header.stamp = self.client.get_clock().now().to_msg()
            msg.pose = matrix_to_pose(self.chain.fk(q))
            self.input_pub.publish(msg)
        return publish

    def _twist_segment(self, home_tip):
        """Return a publisher of a random twist, or of a pull back when the tip is over 0.25 m from the start."""
        from geometry_msgs.msg import TwistStamped
        linear = self.rng.normal(size=3)
        linear *= self.rng.uniform(0.0, 0.15) / np.linalg.norm(linear)
        angular = self.rng.normal(size=3)
        angular *= self.rng.uniform(0.0, 0.5) / np.linalg.norm(angular)
        if self.tip is not None and home_tip is not None and np.linalg.norm(self.tip - home_tip) > 0.25:
            linear = 0.1 * (home_tip - self.tip) / np.linalg.norm(home_tip - self.tip)

        def publish(progress):
            msg = TwistStamped()
            msg.header.frame_id = 'base_link'
            msg.header.stamp = self.client.get_clock().now().to_msg()
            msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = (float(x) for x in linear)
            msg.twist.angular.x, msg.twist.angular.y, msg.twist.angular.z = (float(x) for x in angular)
            self.input_pub.publish(msg)
        return publish

    # -- lies --

    def lie(self, seconds):
        """Tell a random lie after each quiet gap drawn from ``self.lie_gap`` (default 0.5-2.5 s)."""
        end = time.monotonic() + seconds
        kinds = [k for k in LIE_KINDS[self.kind] if self.reference_available or not k.startswith('controller')]
        while self.running and time.monotonic() < end:
            time.sleep(self.rng.uniform(*self.lie_gap))
            if not self.running or time.monotonic() >= end:
                break
            kind = kinds[self.rng.integers(len(kinds))]
            began = self.now()
            getattr(self, f'_lie_{kind}')()
            self.lies[kind] += 1
            self.lie_times.append((kind, began, self.now()))

    def _state(self, source, positions=None, stamp=None, velocity=None):
        from sensor_msgs.msg import JointState
        msg = JointState(name=list(source.name), position=[float(x) for x in (
            source.position if positions is None else positions)])
        msg.velocity = [float(x) for x in (source.velocity if velocity is None else velocity)]
        msg.header.stamp = source.header.stamp if stamp is None else stamp
        return msg

    def _burst(self, kind, seconds, make, rate=1000.0):
        end = time.monotonic() + seconds
        while self.running and time.monotonic() < end:
            msg = make()
            if msg is not None:
                (self.reference_pub if kind.startswith('controller') else self.state_pub).publish(msg)
                self.lie_messages[kind] += 1
            time.sleep(1.0 / rate)

    def _offset(self, low, high):
        n = len(self.limits.names)
        offset = np.zeros(n)
        joints = self.rng.choice(n, size=self.rng.integers(1, 4), replace=False)
        offset[joints] = self.rng.uniform(low, high, joints.size) * self.rng.choice((-1.0, 1.0), joints.size)
        return offset

    def _lie_offset_burst(self):
        offset, stamped_now = self._offset(0.05, 2.0), self.rng.random() < 0.5

        def make():
            true = self.recent[-1]
            stamp = self.client.get_clock().now().to_msg() if stamped_now else None
            return self._state(true, np.array(true.position) + offset, stamp)
        self._burst('offset_burst', self.rng.uniform(0.1, 0.5), make)

    def _lie_driver_restart(self):
        self.paused = True
        try:
            time.sleep(self.rng.uniform(0.3, 1.5))
            zeros = np.zeros(len(self.limits.names))
            self._burst('driver_restart', self.rng.uniform(0.02, 0.2), lambda: self._state(
                self.recent[-1], zeros, self.client.get_clock().now().to_msg(), zeros), rate=200.0)
        finally:
            self.paused = False

    def _lie_future_stamp(self):
        ahead, offset = self.rng.uniform(0.05, 2.0), self._offset(0.0, 0.05) * (self.rng.random() < 0.5)
        self._burst('future_stamp', self.rng.uniform(0.1, 0.3), lambda: self._state(
            self.recent[-1], np.array(self.recent[-1].position) + offset, to_stamp(self.now() + ahead)),
            rate=self.rng.uniform(200.0, 1000.0))

    def _lie_out_of_order(self):
        back = int(self.rng.integers(40, 400))   # 0.2-2 s of readings ago, with their own stamps

        def make():
            return self._state(self.recent[-min(back, len(self.recent))])
        self._burst('out_of_order', self.rng.uniform(0.1, 0.3), make, rate=self.rng.uniform(200.0, 1000.0))

    def _lie_nan(self):
        joint, field = int(self.rng.integers(len(self.limits.names))), self.rng.random() < 0.7

        def make():
            true = self.recent[-1]
            q, v = np.array(true.position), np.array(true.velocity)
            (q if field else v)[joint] = np.nan
            return self._state(true, q, self.client.get_clock().now().to_msg(), v)
        self._burst('nan', self.rng.uniform(0.05, 0.2), make, rate=200.0)

    def _reference_lie(self, kind, ahead):
        offset = self._offset(0.01, 0.1)

        def make():
            true = self.latest_reference
            if true is None:
                return None
            from copy import deepcopy
            msg = deepcopy(true)
            msg.reference.positions = [float(x) for x in np.array(true.reference.positions) + offset]
            msg.output.positions = list(msg.reference.positions)
            if ahead:
                msg.header.stamp = to_stamp(self.now() + ahead)
            return msg
        self._burst(kind, self.rng.uniform(0.1, 0.5), make)

    def _lie_controller_state_offset(self):
        self._reference_lie('controller_state_offset', 0.0)

    def _lie_controller_state_future(self):
        self._reference_lie('controller_state_future', self.rng.uniform(0.01, 0.5))

    # -- the run --

    def run(self, seconds):
        threads = [threading.Thread(target=self.stream, args=(seconds,), daemon=True),
                   threading.Thread(target=self.lie, args=(seconds,), daemon=True)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ran = time.monotonic() - started
        time.sleep(1.0)   # the last commands and statuses arrive
        return ran

    # -- checks --

    def check(self):
        """Return the lane's findings: violations, distances from the truth, counts."""
        with self.lock:
            truth, commands = Truth(), sorted(self.commands, key=lambda c: c[1])
            for stamp, q in self.truth_log:
                truth.add(stamp, q)
        truth.freeze()
        period = COMMAND_PERIOD
        allowed = self.limits.velocity * period + TRACKING[self.kind]
        skips = self.physics_skips()
        violations, distances, firsts, dumps = [], [], [], []
        if self.kind == 'ik':
            checker, lag = TrajectoryCheck(self.limits), lambda *_: 0.0
        else:
            checker, lag = StreamCheck(self.limits, period), partial(trailing, servo_lag())
        last_sent = None
        epoch = int(commands[0][1]) if commands else 0   # the checker counts from here: exact to the nanosecond
        for index, (received, sent, msg) in enumerate(commands):
            true = None if any(s - 1.0 <= sent <= s + 1.0 for s in skips) else truth.at(sent)
            if self.kind == 'ik':
                if checker.rest is None:
                    checker.rest = (true if true is not None else truth._q[0], np.zeros(len(allowed)),
                                    np.zeros(len(allowed)))
                points = [(stamp_seconds(p.time_from_start), list(p.positions), list(p.velocities),
                           list(p.accelerations)) for p in msg.points]
                found, ahead = checker.check(sent - epoch, stamp_seconds(msg.header.stamp, epoch),
                                             list(msg.joint_names), points)
                commanded, horizon = (None, 0.0) if ahead is None else ahead
            else:
                found = checker.check(sent, msg.data, held=truth._q[0])
                commanded, horizon = np.asarray(msg.data, float), 0.0
            if commanded is not None and true is not None and np.isfinite(commanded).all():
                distance = np.abs(commanded - true)
                bound = allowed + self.limits.velocity * max(0.0, horizon - period) + lag(truth, sent, true)
                if (distance > bound).any():
                    j = int(np.argmax(distance - bound))
                    found.append({'quantity': 'distance from the true state', 'joint': self.limits.names[j],
                                  'value': float(distance[j]), 'limit': float(bound[j]), 'time': sent})
                distances.append(float(distance.max()))
                if last_sent is None or sent - last_sent > IDLE:
                    firsts.append(float(distance.max()))
            last_sent = sent
            for v in found:
                violations.append({'lane': self.kind, 'command': index, 'sent': sent, **v})
            if found and len(dumps) < DUMPS:
                dumps.append(self._dump(commands, index, truth))
        return {'violations': violations, 'max_distance': max(distances, default=None),
                'max_first_distance': max(firsts, default=None), 'first_commands': len(firsts),
                'checked': len(commands), 'allowed_distance': allowed.tolist(), 'dumps': dumps}

    def _dump(self, commands, index, truth):
        """Return a violating command and the one before it, with the true state and the lies around them."""
        out = []
        for k in (index - 1, index):
            if k < 0:
                continue
            received, sent, msg = commands[k]
            true = truth.at(sent)
            entry = {'index': k, 'received': received, 'sent': sent,
                     'true': None if true is None else np.round(true, 5).tolist()}
            if self.kind == 'ik':
                entry['stamp'] = stamp_seconds(msg.header.stamp)
                entry['points'] = [(round(stamp_seconds(p.time_from_start), 6), np.round(p.positions, 5).tolist(),
                                    np.round(p.velocities, 4).tolist(), np.round(p.accelerations, 3).tolist())
                                   for p in msg.points[:6]] + [len(msg.points)]
            else:
                entry['data'] = np.round(msg.data, 5).tolist()
            out.append(entry)
        sent = commands[index][1]
        out.append({'lies': [lie for lie in self.lie_times if lie[1] - 3.0 <= sent <= lie[2] + 3.0]})
        return out

    def physics_skips(self):
        """Return when the simulator's physics fell behind and skipped ahead [s] (from its log).

        Around such a skip (its WARN is throttled to one a second) the physics executed commands late and then
        lost time: its state is no truth for the commands of then.
        """
        sim = next((p for p in self.processes if p.module == 'sim.sim_arm_node'), None)
        text = open(sim.log_path).read() if sim is not None else ''
        return [float(t) for t in re.findall(r'\[(\d+\.\d+)\] \[sim_arm\]: the physics fell', text)]

    def save(self):
        """Write the commands, the truth and the lies told beside the logs (a pickle), for investigations."""
        import pickle
        rows = []
        for received, sent, msg in self.commands:
            if self.kind == 'ik':
                rows.append((received, sent, stamp_seconds(msg.header.stamp), list(msg.joint_names),
                             [(stamp_seconds(p.time_from_start), list(p.positions), list(p.velocities),
                               list(p.accelerations)) for p in msg.points]))
            else:
                rows.append((received, sent, list(msg.data)))
        path = os.path.join(self.log_dir, 'record.pickle')
        with open(path, 'wb') as f:
            pickle.dump({'commands': rows, 'truth': self.truth_log, 'lies': self.lie_times}, f)
        return path

    def result(self, seconds_run, ready):
        findings = self.check() if ready else {'violations': [], 'checked': 0}
        findings['record'] = self.save()
        logs = {p.module: p.log_path for p in self.processes}
        tracebacks = [m for m, path in logs.items() if 'Traceback' in open(path).read()]
        tracebacks += [f'{m} exited' for m in getattr(self, 'exited', [])]
        skips = len(self.physics_skips())
        return {'lane': self.kind, 'ready': ready, 'seconds': seconds_run, 'inputs': self.inputs,
                'lies': dict(self.lies), 'lie_messages': dict(self.lie_messages), 'commands': len(self.commands),
                'statuses': dict(self.statuses), 'refusals': dict(self.refusals),
                'controller_state': self.reference_available, 'physics_skips': skips,
                'simulator_reports': len(self.sim_reports),
                'simulator_report_samples': self.sim_reports[:3], 'first_solve': getattr(self, 'first_solve', None),
                'logs': logs, 'tracebacks': tracebacks, **findings}
