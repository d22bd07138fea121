"""Benchmark of ik_servo_node: loop period, command latency, CPU, and how close its commands come to the limits.

For each publish rate, with collision checking on and off, a simulated arm
(kinematic: joints follow commands exactly) and the servo run as processes:
the Panda with its meshes, its SRDF and a table with three boxes (the scene of
bench_collision; Franka's acceleration and jerk limits), or the bundled ik7
with config/ik7_scene.yaml.  This script streams random twists to the servo
as a teleop would and measures, at the receiver:

- the cycle period: intervals of the commands' publication stamps (DDS source
  timestamps, so the receiver's delays do not count);
- command-in -> command-out latency, next to an rclpy echo node's round trip
  measured alike: from publishing a twist to an idle servo to its first
  command, and from changing a jog the servo is following to the first command
  that follows it (a streaming servo takes a command at its next tick); each
  to the command's publication (DDS source stamp) and its reception (DDS
  reception stamp), so this process's own executor adds nothing;
- the servo process's CPU use, and which of its threads run under a real-time
  policy (the loop thread asks for SCHED_FIFO at ``thread_priority``, as MoveIt Servo's does);
- the largest commanded joint velocity, acceleration and jerk (differences of
  the position stream at its nominal period) as fractions of the servo's limits
  (read from servo_ik7.yaml's limit parameters, as the servo reads them);
- how many status messages said DECELERATE_FOR_COLLISION or HALT_FOR_COLLISION.

    python -m ik_solver_demos.tools.bench_servo [--robot panda] [--seconds 60] [--rates 100 500] [--collisions on off]
"""
import argparse
import os
import sys
import tempfile
import threading
import time

from geometry_msgs.msg import PoseStamped
from ik_solver.core.chain import load_chain
from ik_solver.motion.servo import Status
from ik_solver.ros.ik_node import TARGET_QOS
import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory
import yaml

from .bench import robot_sources
from .bench_collision import panda_files, SCENE as PANDA_SCENE
from .bench_node import cpu_seconds, echo_node, percentiles
from .launcher import NodeProcess
from .servo_collision_campaign import PANDA_ACCELERATION, PANDA_JERK
from .servo_demo import servo_limits, servo_values, ServoClient, start_servo

#: Command intervals longer than this many periods are pauses of the stream (halted), not cycle periods.
GAP = 5
#: Panda start: hand over the table, clear of the boxes.
PANDA_START = [0.0, 0.3, 0.0, -2.0, 0.0, 2.3, 0.8]


class Arm:
    """What the benchmark runs: chain, servo and simulator parameters, the tip frame of tool-frame twists."""

    def __init__(self, name):
        self.name = name
        if name == 'ik7':
            urdf, base, tip = robot_sources()['ik7']
            self.chain = load_chain(urdf, base, tip)
            self.servo = {'srdf_file': 'config/ik7.srdf', 'scene_file': 'config/ik7_scene.yaml'}
            self.sim = {}
            values = servo_values()
        else:
            urdf, srdf, share = panda_files()
            _, base, tip = robot_sources()['panda']
            self.chain = load_chain(urdf, base, tip)
            scene, limits = self._panda_files(base)
            self.servo = {'urdf_file': urdf, 'base_link': base, 'tip_link': tip, 'srdf_file': srdf,
                          'scene_file': scene, 'package_dirs': [share], 'joint_limits_file': limits}
            self.sim = {'urdf_file': urdf, 'base_link': base, 'tip_link': tip, 'initial_positions': PANDA_START}
            values = {**servo_values(), 'joint_limits_file': limits}
        self.tip = self.chain.tip_link
        self.limits = servo_limits(self.chain, values)

    def _panda_files(self, base):
        """Write the Panda's scene and joint limits as the servo reads them; return their paths."""
        scene = {'frame': base, 'objects': [{'name': name, 'type': 'box', 'size': size, 'position': position}
                                            for name, size, position in PANDA_SCENE]}
        limits = {'joint_limits': {name: {'has_acceleration_limits': True, 'max_acceleration': float(a),
                                          'has_jerk_limits': True, 'max_jerk': float(j)}
                                   for name, a, j in zip(self.chain.joint_names, PANDA_ACCELERATION, PANDA_JERK)}}
        paths = []
        for prefix, content in (('scene', scene), ('limits', limits)):
            with tempfile.NamedTemporaryFile('w', prefix=f'bench_servo_panda_{prefix}_', suffix='.yaml',
                                             delete=False) as f:
                yaml.safe_dump(content, f)
                paths.append(f.name)
        return paths


class StampedCommands:
    """Publication and reception stamps (DDS, wall clock) and positions of the servo's commands."""

    def __init__(self, node, topic):
        self.samples = []   # (source timestamp [s], receipt monotonic [s], positions)
        self.received = []  # (source timestamp [s], DDS reception timestamp [s], positions)
        node.create_subscription(Float64MultiArray, topic, self._on_command, 1000)

    def _on_command(self, msg, info):
        q = np.array(msg.data)
        self.samples.append((info['source_timestamp'] * 1e-9, time.monotonic(), q))
        self.received.append((info['source_timestamp'] * 1e-9, info['received_timestamp'] * 1e-9, q))

    def since(self, t):
        return [s for s in list(self.samples) if s[1] >= t]


def real_time_threads(pid):
    """'SCHED_FIFO priority p' (or RR) for each thread of process ``pid`` under a real-time policy."""
    policies = {1: 'SCHED_FIFO', 2: 'SCHED_RR'}
    found = []
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:   # the thread ended
            continue
        priority, policy = int(fields[37]), int(fields[38])   # stat fields 40 and 41 (rt_priority, policy)
        if policy in policies:
            found.append(f'{policies[policy]} priority {priority}')
    return found


def random_twists(client, seconds, rng, tip='tool0'):
    """Stream random twists at 100 Hz: new ones every 0.2-1 s, with hands-off pauses now and then."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hold = rng.uniform(0.2, 1.0)
        if rng.random() < 0.15:
            time.sleep(hold)   # the watchdog brings the arm to rest
            continue
        linear = rng.normal(size=3) * 0.1
        angular = rng.normal(size=3) * 0.4
        frame = tip if rng.random() < 0.5 else client.base_link
        client.stream(lambda t: client.twist(linear, angular, frame), min(hold, end - time.monotonic()))


def periods_ms(samples, period):
    stamps = np.array([s[0] for s in samples])
    intervals = np.diff(stamps)
    return intervals[intervals < GAP * period] * 1e3


def limit_fractions(samples, period, limits, jerk):
    """Largest |v|, |a|, |jerk| of the command stream over the limits, within runs of consecutive commands."""
    stamps = np.array([s[0] for s in samples])
    Q = np.array([s[2] for s in samples])
    breaks = np.flatnonzero(np.diff(stamps) >= GAP * period) + 1
    worst = np.zeros(3)
    for run in np.split(np.arange(len(Q)), breaks):
        if len(run) < 4:
            continue
        V = np.diff(Q[run], axis=0) / period
        A = np.diff(V, axis=0) / period
        J = np.diff(A, axis=0) / period
        worst = np.maximum(worst, [np.max(np.abs(V) / limits.velocity), np.max(np.abs(A) / limits.acceleration),
                                   np.max(np.abs(J) / jerk)])
    return worst


def first_reply(replies, start, sent, timeout=1.0, answers=lambda replies, k: True):
    """Return (published, received) [ms after ``sent``] of the first reply (source, reception stamps) after it.

    Both stamps are taken by DDS (the reception one in its receive thread), so the
    polling here and this process's executor add nothing.  ``answers(replies, k)``:
    whether reply k answers the message.  None on timeout.
    """
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        later = [r for k, r in enumerate(replies[start:], start) if r[1] >= sent and answers(replies, k)]
        if later:
            return (later[0][0] - sent) * 1e3, (later[0][1] - sent) * 1e3
        time.sleep(0.002)
    return None


def first_command_latencies(client, commands, trials):
    """Milliseconds from a twist sent to an idle servo to its first command published and received."""
    latencies = []
    for _ in range(trials):
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:   # idle: no command for a while
            last = commands.samples[-1][1] if commands.samples else 0.0
            if time.monotonic() - last > 0.3:
                break
            time.sleep(0.02)
        start, sent = len(commands.received), time.time()
        client.twist((0.0, 0.0, 0.01), (0, 0, 0), client.base_link)
        reply = first_reply(commands.received, start, sent)
        if reply:
            latencies.append(reply)
    return np.array(latencies).reshape(-1, 2)


def streaming_latencies(client, commands, trials, stream_rate=100.0, speed=0.05, seed=0):
    """Milliseconds from a changed jog, sent while the servo streams, to the first command that follows it.

    Joint 1 is jogged at a constant speed until the servo's command holds it
    (zero acceleration: exact second differences of the positions, which the
    servo integrates at its nominal period), then the speed is reversed; the
    first command with a second difference is the first that reflects it.
    It waits for the servo's next tick: on average half a period more than an idle
    servo.  The reversal is sent a random fraction of a stream period after the
    last jog, so that it lands at any phase of the servo's loop (a stream at the
    servo's own rate would otherwise meet it at one phase every time).
    """
    names = client.joint_names[:1]
    rng = np.random.default_rng(seed)   # its own: the random twist stream stays the same
    latencies = []
    velocity = speed
    client.stream(lambda t: client.jog(names, [velocity]), 0.5, stream_rate)
    for _ in range(trials):
        client.stream(lambda t: client.jog(names, [velocity]), 0.25, stream_rate)  # the servo settles on it
        velocity = -velocity
        time.sleep(rng.uniform(0.0, 1.0 / stream_rate))
        start, sent = len(commands.received), time.time()
        client.jog(names, [velocity])
        reply = first_reply(commands.received, start, sent, answers=_changed)
        if reply:
            latencies.append(reply)
    client.stream(lambda t: client.jog(names, [0.0]), 0.3, stream_rate)
    return np.array(latencies).reshape(-1, 2)


def _changed(replies, k):
    """Whether command k is the first to change joint 1's commanded velocity (replies: source, received, q)."""
    if k < 3:
        return False
    q = [replies[i][2][0] for i in range(k - 3, k + 1)]
    return abs(q[1] - 2 * q[2] + q[3]) > 1e-10 and abs(q[0] - 2 * q[1] + q[2]) <= 1e-10


def echo_baseline(trials):
    """Milliseconds from a message sent to bench_node's echo node (its own process) to its reply, as above."""
    log = tempfile.NamedTemporaryFile(prefix='bench_servo_echo_', suffix='.log', delete=False).name
    echo = NodeProcess('tools.bench_servo', [], log, args=['--echo'])
    node = rclpy.create_node('bench_servo_echo_client')
    replies = []
    node.create_subscription(JointTrajectory, 'joint_trajectory_controller/joint_trajectory',
                             lambda msg, info: replies.append((info['source_timestamp'] * 1e-9,
                                                               info['received_timestamp'] * 1e-9)), 100)
    target = node.create_publisher(PoseStamped, 'ik_solver/target_pose', TARGET_QOS)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        deadline = time.monotonic() + 30.0
        while target.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        latencies = []
        for _ in range(trials):
            start, sent = len(replies), time.time()
            target.publish(PoseStamped())
            reply = first_reply(replies, start, sent)
            if reply:
                latencies.append(reply)
            time.sleep(0.05)
        return np.array(latencies).reshape(-1, 2)
    finally:
        executor.shutdown(timeout_sec=5.0)
        node.destroy_node()
        echo.stop()


def bench_rate(arm, rate, seconds, rng, loop='thread', check=True):
    period = 1.0 / rate
    sim, servo = start_servo({'command_in_type': 'speed_units', 'publish_period': period, 'loop': loop,
                              'check_collisions': check, **arm.servo},
                             {'kinematic': True, 'publish_rate': 50.0, **arm.sim}, prefix=f'bench_servo_{rate:g}')
    client = ServoClient(arm.chain.joint_names, record=('tips', 'statuses'))   # a light client: no command lost
    client.base_link = arm.chain.base_link
    commands = StampedCommands(client, 'forward_position_controller/commands')
    try:
        if not client.wait_ready(120.0):
            raise SystemExit('the servo did not come up:\n' + servo.output()[-2000:])
        latencies = first_command_latencies(client, commands, 100)
        streaming = streaming_latencies(client, commands, 40)
        real_time = real_time_threads(servo.pid)
        t0, cpu0 = time.monotonic(), cpu_seconds(servo.pid)
        random_twists(client, seconds, rng, arm.tip)
        cpu = (cpu_seconds(servo.pid) - cpu0) / (time.monotonic() - t0)
        time.sleep(0.5)
        samples = commands.since(t0)
        if len(samples) < 10:
            raise SystemExit(f'only {len(samples)} commands received:\n' + servo.output()[-3000:])
        codes = [m.code for _, m in client.since(client.statuses, t0)]
        braked = (codes.count(Status.DECELERATE_FOR_COLLISION), codes.count(Status.HALT_FOR_COLLISION))
        return (periods_ms(samples, period), (latencies, streaming), (cpu, real_time),
                limit_fractions(samples, period, *arm.limits), braked)
    finally:
        client.close()
        servo.stop()
        sim.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robot', default='panda', choices=('panda', 'ik7'),
                        help='panda: meshes, SRDF, a table and three boxes; ik7: the bundled arm and its scene')
    parser.add_argument('--seconds', type=float, default=60.0, help='length of the random twist stream per rate')
    parser.add_argument('--rates', type=float, nargs='+', default=[100.0, 500.0], help='publish rates [Hz]')
    parser.add_argument('--collisions', nargs='+', default=['on', 'off'], choices=('on', 'off'),
                        help="the servo's check_collisions, one run each")
    parser.add_argument('--loop', default='thread', choices=('thread', 'timer'), help="the servo's loop parameter")
    parser.add_argument('--echo', action='store_true', help=argparse.SUPPRESS)  # run the echo node (internal)
    args, _ = parser.parse_known_args(argv)
    if args.echo:
        from ik_solver.ros.spin import run_node
        return run_node(echo_node, [a for a in sys.argv if a != '--echo'])
    arm = Arm(args.robot)
    rclpy.init()
    try:
        for rate in args.rates:
            for checking in args.collisions:
                print(f'ik_servo_node on {arm.name} at {rate:g} Hz ({args.loop} loop), check_collisions {checking}, '
                      f'{args.seconds:g} s of random twists:')
                report(rate, *bench_rate(arm, rate, args.seconds, np.random.default_rng(11), args.loop,
                                         checking == 'on'))
        floor = echo_baseline(100)
        print('for comparison, message -> reply of an rclpy echo node (bench_node.echo_node), published: '
              f'{percentiles(floor[:, 0])}; received: {percentiles(floor[:, 1])}')
    finally:
        rclpy.try_shutdown()


def report(rate, periods, latencies, cpu, fractions, braked):
    print(f'  cycle period: p50 {np.percentile(periods, 50):.3f} ms, p99 {np.percentile(periods, 99):.3f} '
          f'ms, max {np.max(periods):.3f} ms (nominal {1e3 / rate:.3f} ms, n = {len(periods)})')
    idle, streaming = latencies
    print(f'  twist -> first command (idle servo), published: {percentiles(idle[:, 0])}; '
          f'received: {percentiles(idle[:, 1])}')
    print(f'  jog change -> first command following it (servo streaming), published: '
          f'{percentiles(streaming[:, 0])}; received: {percentiles(streaming[:, 1])}')
    cpu, real_time = cpu
    print(f'  CPU: {100 * cpu:.0f} % of one core; real-time threads: {", ".join(real_time) or "none"}')
    print(f'  largest commanded velocity {fractions[0]:.3f}, acceleration {fractions[1]:.3f}, '
          f'jerk {fractions[2]:.3f} of the limits')
    print(f'  status messages: {braked[0]} DECELERATE_FOR_COLLISION, {braked[1]} HALT_FOR_COLLISION')


if __name__ == '__main__':
    main()
