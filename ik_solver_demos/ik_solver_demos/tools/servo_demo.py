"""Servo demo: a scripted twist sequence on the simulated ik7, near a singularity and into a joint limit.

Starts the MuJoCo arm (as a forward_position_controller) and ik_servo_node as
processes, streams twists and joint jogs to the servo as a teleop would, prints
the status codes it met and writes a figure: commanded vs measured tip
velocity, the Jacobian's condition number with the two thresholds, and the
joint velocities with their limits.

    python -m ik_solver_demos.tools.servo_demo [--output servo_demo.png]

``ServoClient`` and ``start_servo`` are also what the servo's tests and
benchmark use to drive the node.
"""
import argparse
import json
import logging
import tempfile
import threading
import time

from geometry_msgs.msg import PoseStamped, TwistStamped
from ik_solver.core.chain import load_chain
from ik_solver.core.transforms import rotation_vector
from ik_solver.motion.servo import jerk_limits, Status
from ik_solver.ros.messages import matrix_to_pose, pose_to_matrix
from ik_solver.ros.parameters import load_limits, move_limits
from ik_solver.ros.servo_parameters import defaults, JOINT_STATE
from ik_solver.ros.spin import spin_executor
from ik_solver_interfaces.msg import ServoStatus
import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool
import yaml

from .launcher import flat_parameters, node_args, NodeProcess
from .observer import simulation_failures, simulator_complaints
from .resources import arm_files, share_path

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
#: What a ServoClient records by default (each costs its executor time at the topic's rate).
RECORDED = ('joints', 'tips', 'statuses', 'commands', 'violations')


def servo_config():
    """Path of ik_solver's config/servo_ik7.yaml: installed, else in the source tree."""
    return share_path('config', 'servo_ik7.yaml')


def servo_values():
    """Return the servo's parameter values with servo_ik7.yaml: the declared defaults, then the file's (names flat)."""
    with open(servo_config()) as f:
        configured = next(v['ros__parameters'] for k, v in yaml.safe_load(f).items() if k.endswith('ik_servo'))
    return {**defaults(), **flat_parameters(configured)}


def servo_limits(chain, values):
    """(JointLimits, jerk limits) the servo uses with parameter ``values`` (``servo_values``), by its own code."""
    limits = move_limits(load_limits(values, chain, logging.getLogger('servo')), values)
    return limits, jerk_limits(limits, values['acceleration_ramp_time'])


def start_servo(servo_params=None, sim_params=None, prefix='servo', namespace=''):
    """Start sim_arm_node and ik_servo_node (servo_ik7.yaml plus overrides); return (sim, servo) processes.

    The servo takes joint jogs as sensor_msgs/JointState (``ServoClient.jog``)
    on every install, also where control_msgs would make ``auto`` pick JointJog.
    """
    urdf, _ = arm_files('ik7')
    config = servo_config()
    logs = [tempfile.NamedTemporaryFile(prefix=f'{prefix}_{name}_', suffix='.log', delete=False).name
            for name in ('sim', 'servo')]
    remap = ['-r', f'__ns:={namespace}'] if namespace else []
    sim = NodeProcess('sim.sim_arm_node', node_args(config, {'urdf_file': urdf, **(sim_params or {})}) + remap,
                      logs[0])
    servo_params = {'urdf_file': urdf, 'joint_command_in_type': JOINT_STATE, **(servo_params or {})}
    servo = NodeProcess('ros.servo_node', node_args(config, servo_params) + remap, logs[1])
    return sim, servo


class ServoClient(Node):
    """Talks to ik_servo_node as a teleop does and records what the arm and the servo do (monotonic stamps)."""

    def __init__(self, joint_names, command_topic='forward_position_controller/commands',
                 command_type=Float64MultiArray, namespace='', record=RECORDED):
        super().__init__('servo_client', namespace=namespace or '/')
        servo = 'ik_servo'
        self.joint_names = list(joint_names)
        self.lock = threading.Lock()
        self.joints, self.tips, self.statuses, self.commands, self.violations = [], [], [], [], []
        self.twist_pub = self.create_publisher(TwistStamped, f'{servo}/delta_twist_cmds', 10)
        self.jog_pub = self.create_publisher(JointState, f'{servo}/delta_joint_cmds', 10)
        self.pose_pub = self.create_publisher(PoseStamped, f'{servo}/pose_target', 10)
        self.pause_client = self.create_client(SetBool, f'{servo}/pause')
        self.stamped_tips = []   # (header stamp [s, ROS clock], 4x4): when the simulator measured each
        for name, msg_type, topic, log, convert in (
                ('joints', JointState, 'joint_states', self.joints, self._joint_sample),
                ('tips', PoseStamped, 'sim_arm/tip_pose', self.tips, self._tip_sample),
                ('statuses', ServoStatus, f'{servo}/status', self.statuses, lambda m: m),
                ('commands', command_type, command_topic, self.commands, lambda m: m),
                ('violations', String, 'sim_arm/limit_violations', self.violations, lambda m: json.loads(m.data))):
            if name in record:
                self._record(msg_type, topic, log, convert)
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self)
        self._closing = threading.Event()
        self._thread = threading.Thread(target=spin_executor, args=(self._executor, self._closing), daemon=True)
        self._thread.start()

    def _record(self, msg_type, topic, log, convert):
        def callback(msg):
            value = convert(msg)
            if value is not None:
                with self.lock:
                    log.append((time.monotonic(), value))
        self.create_subscription(msg_type, topic, callback, 100)

    def _tip_sample(self, msg):
        T = pose_to_matrix(msg.pose)
        with self.lock:
            self.stamped_tips.append((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9, T))
        return T

    def now(self):
        """Return the ROS clock [s], the one the simulator stamps its measurements with."""
        return self.get_clock().now().nanoseconds * 1e-9

    def _joint_sample(self, msg):
        index = {n: i for i, n in enumerate(msg.name)}
        if not all(n in index for n in self.joint_names):
            return None
        return (np.array([msg.position[index[n]] for n in self.joint_names]),
                np.array([msg.velocity[index[n]] if msg.velocity else 0.0 for n in self.joint_names]))

    def close(self):
        self._closing.set()   # a spin that races the shutdown ends quietly (``spin_executor``)
        self._executor.shutdown(timeout_sec=10.0)
        self._thread.join(timeout=10.0)
        self.destroy_node()

    # -- commands ------------------------------------------------------------------------------

    def twist(self, linear=(0, 0, 0), angular=(0, 0, 0), frame='base_link'):
        msg = TwistStamped()
        msg.header.frame_id = frame
        msg.header.stamp = self.get_clock().now().to_msg()
        t, w = msg.twist.linear, msg.twist.angular
        t.x, t.y, t.z = (float(v) for v in linear)
        w.x, w.y, w.z = (float(v) for v in angular)
        self.twist_pub.publish(msg)

    def jog(self, names, velocities):
        msg = JointState(name=list(names), velocity=[float(v) for v in velocities])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.jog_pub.publish(msg)

    def pose(self, T, frame='base_link'):
        msg = PoseStamped(pose=matrix_to_pose(T))
        msg.header.frame_id = frame
        self.pose_pub.publish(msg)

    def pause(self, paused, timeout=5.0):
        """Call ~/pause; return the response (None on timeout)."""
        if not self.pause_client.wait_for_service(timeout_sec=timeout):
            return None
        future = self.pause_client.call_async(SetBool.Request(data=bool(paused)))
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        return future.result() if future.done() else None

    def stream(self, send, seconds, rate=100.0, until=None):
        """Call ``send(t)`` at ``rate`` for ``seconds`` (t from 0), as a teleop publishes; return the start time.

        ``until()``, when given, ends the stream early once it holds: an operator holds the key until the arm
        gets there, however long a loaded machine makes that take.
        """
        t0 = time.monotonic()
        k = 0
        while True:
            t = time.monotonic() - t0
            if t >= seconds or (until is not None and until()):
                return t0
            send(t)
            k += 1
            delay = t0 + k / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    # -- what happened -------------------------------------------------------------------------

    def wait_ready(self, timeout=60.0):
        """Wait until the arm publishes and the servo reports a status (it has the model and a state)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.tips and self.statuses and self.statuses[-1][1].code != Status.STALE_STATE:
                    return self.pause_client.wait_for_service(timeout_sec=1.0)
            time.sleep(0.05)
        return False

    def since(self, log, t):
        with self.lock:
            return [(s, v) for s, v in log if s >= t]

    def latest(self, log):
        with self.lock:
            return log[-1][1] if log else None

    def wait_rest(self, speed=1e-3, hold=0.2, timeout=10.0):
        """Wait until every measured joint speed stays below ``speed`` for ``hold`` seconds; return success."""
        deadline = time.monotonic() + timeout
        still_since = None
        while time.monotonic() < deadline:
            sample = self.latest(self.joints)
            moving = sample is None or np.abs(sample[1]).max() > speed
            now = time.monotonic()
            still_since = None if moving else (still_since or now)
            if still_since is not None and now - still_since >= hold:
                return True
            time.sleep(0.01)
        return False

    def jog_to(self, q_goal, gain=2.0, tolerance=2e-3, timeout=20.0):
        """Jog every joint toward ``q_goal`` (a P controller over ~/delta_joint_cmds, speed units); return success."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            q = self.latest(self.joints)[0]
            error = np.asarray(q_goal) - q
            if np.abs(error).max() < tolerance:
                self.jog(self.joint_names, np.zeros(len(q)))
                return self.wait_rest()
            self.jog(self.joint_names, np.clip(gain * error, -0.5, 0.5))
            time.sleep(0.01)
        return False


def tip_velocities(tips, window=0.05):
    """Return (times, base-frame tip twists [v, w]) by differences of the simulator's tip poses ``window`` apart."""
    times = np.array([t for t, _ in tips])
    poses = [T for _, T in tips]
    out_t, out_v = [], []
    for i, t in enumerate(times):
        j = np.searchsorted(times, t + window)
        if j < len(times):
            dt = times[j] - t
            turn = rotation_vector(poses[j][:3, :3] @ poses[i][:3, :3].T)
            out_t.append(0.5 * (t + times[j]))
            out_v.append(np.concatenate([(poses[j][:3, 3] - poses[i][:3, 3]) / dt, turn / dt]))
    return np.array(out_t), np.array(out_v).reshape(-1, 6)


def commanded_joint_velocities(commands, period):
    """Return (times, joint velocities) of Float64MultiArray position commands: differences over ``period``."""
    times = np.array([t for t, _ in commands])
    positions = np.array([list(m.data) for _, m in commands])
    if len(times) < 2:
        return times, np.zeros((len(times), positions.shape[1] if positions.ndim == 2 else 0))
    return times[1:], np.diff(positions, axis=0) / period


# -- the demo ------------------------------------------------------------------------------------

#: (label, seconds, what is streamed): base-frame twists in m/s, rad/s (speed units), or a joint jog.
SCRIPT = (
    ('reach out along +x into the stretched singularity', 6.0, ('twist', (0.12, 0.0, 0.0), (0, 0, 0))),
    ('back along -x, away from it', 2.0, ('twist', (-0.12, 0.0, 0.0), (0, 0, 0))),
    ('sideways along +y', 1.5, ('twist', (0.0, 0.1, 0.0), (0, 0, 0))),
    ("spin the tool about its z axis into joint7's limit", 6.0, ('tool', (0, 0, 0), (0.0, 0.0, 1.2))),
    ('hands off: the watchdog stops the arm', 1.0, None),
)


def run_script(client, chain, rate=100.0):
    """Stream SCRIPT; return (segments [(label, t0, t1)], commanded [(t, twist in base)])."""
    segments, commanded = [], []
    for label, seconds, what in SCRIPT:
        print(f'  {label} ({seconds:g} s)')

        def send(t, what=what):
            if what is None:
                return
            kind, linear, angular = what
            frame = 'tool0' if kind == 'tool' else 'base_link'
            client.twist(linear, angular, frame)
            tip = client.latest(client.tips)
            R = tip[:3, :3] if kind == 'tool' and tip is not None else np.eye(3)
            commanded.append((time.monotonic(), np.concatenate([R @ linear, R @ angular])))
        t0 = client.stream(send, seconds, rate) if what is not None else time.monotonic()
        if what is None:
            time.sleep(seconds)
        segments.append((label, t0, time.monotonic()))
    return segments, commanded


def condition_numbers(chain, joints):
    times = np.array([t for t, _ in joints])
    return times, np.array([np.linalg.cond(chain.jacobian(q)) for _, (q, _) in joints])


def plot(path, chain, client, segments, commanded, limits_velocity, thresholds, period):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    t_start = segments[0][1]
    fig, axes = plt.subplots(4, 1, figsize=(11, 12), sharex=True)
    t_tip, v_tip = tip_velocities(client.since(client.tips, t_start), window=0.1)
    t_cmd = np.array([t for t, _ in commanded]) - t_start
    v_cmd = np.array([v for _, v in commanded]).reshape(-1, 6)
    linear, angular, conditioning, joint_speeds = axes
    for ax, offset, symbol, unit in ((linear, 0, 'v', 'm/s'), (angular, 3, 'ω', 'rad/s')):
        for k, axis in enumerate('xyz'):
            ax.plot(t_cmd, v_cmd[:, offset + k], '--', color=f'C{k}', lw=1, label=f'commanded {symbol}{axis}')
            ax.plot(t_tip - t_start, v_tip[:, offset + k], color=f'C{k}', lw=1.2, label=f'measured {symbol}{axis}')
        ax.set_ylabel(f'tip {"linear" if offset == 0 else "angular"} velocity\n[{unit}], base frame')
        ax.legend(ncol=3, fontsize=8, loc='upper right')
    joints = client.since(client.joints, t_start)
    t_q, cond = condition_numbers(chain, joints)
    conditioning.semilogy(t_q - t_start, cond, color='k', lw=1.2, label='condition number (measured joints)')
    names = ('lower_singularity_threshold', 'hard_stop_singularity_threshold')
    for value, style, name in zip(thresholds, (':', '--'), names):
        conditioning.axhline(value, ls=style, color='r', label=f'{name} {value:g}')
    conditioning.set_ylabel('cond(J)')
    conditioning.legend(fontsize=8, loc='upper right')
    t_c, v_c = commanded_joint_velocities(client.since(client.commands, t_start), period)
    for i, name in enumerate(chain.joint_names):
        line, = joint_speeds.plot(t_c - t_start, v_c[:, i], lw=1.2, label=name)
        joint_speeds.axhline(limits_velocity[i], color=line.get_color(), ls=':', lw=0.8)
        joint_speeds.axhline(-limits_velocity[i], color=line.get_color(), ls=':', lw=0.8)
    joint_speeds.set_ylabel('commanded joint velocity\n[rad/s] (dotted: limits)')
    joint_speeds.set_xlabel('time [s]')
    joint_speeds.legend(ncol=4, fontsize=8, loc='upper right')
    for label, t0, t1 in segments:
        for ax in axes:
            ax.axvspan(t0 - t_start, t1 - t_start, alpha=0.04 if segments.index((label, t0, t1)) % 2 else 0.0)
        linear.text(t0 - t_start, linear.get_ylim()[1], label.split(' ')[0] + '…', fontsize=7, va='top')
    fig.suptitle('ik_servo_node on the simulated ik7: twists toward a singularity and into a joint limit')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--output', default='servo_demo.png', help='PNG to write')
    args = parser.parse_args(argv)
    chain = load_chain(arm_files('ik7')[0], 'base_link', 'tool0')
    sim, servo = start_servo({'command_in_type': 'speed_units'}, prefix='servo_demo')
    rclpy.init()
    client = ServoClient(chain.joint_names)
    try:
        print('starting the simulated arm and ik_servo_node ...')
        if not client.wait_ready(120.0):
            raise SystemExit('the servo did not come up:\n' + servo.output()[-2000:] + sim.output()[-2000:])
        segments, commanded = run_script(client, chain)
        statuses = client.since(client.statuses, segments[0][1])
        met = []
        for _, msg in statuses:
            if not met or met[-1] != msg.code:
                met.append(msg.code)
        print('status codes met, in order: ' + ' -> '.join(Status(c).name for c in met))
        violations = [report for _, report in client.since(client.violations, segments[0][1])]
        print(f'limit violations reported by the simulator: {len(violations)}')
        values = servo_values()
        thresholds = values['lower_singularity_threshold'], values['hard_stop_singularity_threshold']
        plot(args.output, chain, client, segments, commanded, servo_limits(chain, values)[0].velocity, thresholds,
             values['publish_period'])
        print(f'wrote {args.output}')
    finally:
        client.close()
        rclpy.try_shutdown()
        servo.stop()
        sim.stop()
    report(violations, sim.output())


def report(violations, sim_log, limit=20):
    """Print the simulator's complaints and the verdict; exit non-zero when the run cannot be trusted.

    SystemExit rather than a return code, so that every way of starting the demo (console script,
    ``python -m ik_solver_demos.servo_demo``, ``python -m ik_solver_demos.tools.servo_demo``) exits with it.
    """
    complaints = simulator_complaints(sim_log)
    if complaints:
        print(f'the simulator complained ({len(complaints)} distinct lines):')
        for line in complaints[:limit]:
            print('  ' + line)
    failures = simulation_failures(violations, sim_log)
    if failures:
        raise SystemExit('servo demo FAILED: ' + '; '.join(failures))
    print('servo demo passed: no command beyond the limits, physics on time')


if __name__ == '__main__':
    main()
