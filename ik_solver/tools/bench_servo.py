"""Benchmark of ik_servo_node: loop period, command latency, CPU, and how close its commands come to the limits.

For each publish rate the simulated ik7 (kinematic: joints follow commands
exactly) and the servo run as processes; this script streams random twists to
the servo as a teleop would and measures, at the receiver:

- the cycle period: intervals of the commands' publication stamps (DDS source
  timestamps, so the receiver's delays do not count);
- command-in -> command-out latency: from publishing a twist to an idle servo
  to receiving its first command, next to an rclpy echo node's round trip;
- the servo process's CPU use;
- the largest commanded joint velocity, acceleration and jerk (differences of
  the position stream at its nominal period) as fractions of the servo's limits.

    python -m ik_solver.tools.bench_servo [--seconds 60] [--rates 100 500]
"""
import argparse
import sys
import tempfile
import time

import numpy as np
import rclpy
from std_msgs.msg import Float64MultiArray

from .bench_node import cpu_seconds, echo_node, percentiles
from .launcher import NodeProcess
from .observer import ArmObserver
from .resources import arm_files
from .servo_demo import ServoClient, start_servo
from ..core.chain import load_chain
from ..motion.limits import load_joint_limits

#: The servo's acceleration_ramp_time (servo_ik7.yaml): jerk limit = acceleration / this, as the servo uses it.
RAMP_TIME = 0.05
#: Command intervals longer than this many periods are pauses of the stream (halted), not cycle periods.
GAP = 5


class StampedCommands:
    """Publication stamps and positions of the servo's commands, from the DDS message info."""

    def __init__(self, node, topic):
        self.samples = []   # (source timestamp [s], receipt monotonic [s], positions)
        node.create_subscription(Float64MultiArray, topic, self._on_command, 1000)

    def _on_command(self, msg, info):
        self.samples.append((info['source_timestamp'] * 1e-9, time.monotonic(), np.array(msg.data)))

    def since(self, t):
        return [s for s in list(self.samples) if s[1] >= t]


def random_twists(client, seconds, rng):
    """Stream random twists at 100 Hz: new ones every 0.2-1 s, with hands-off pauses now and then."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hold = rng.uniform(0.2, 1.0)
        if rng.random() < 0.15:
            time.sleep(hold)   # the watchdog brings the arm to rest
            continue
        linear = rng.normal(size=3) * 0.1
        angular = rng.normal(size=3) * 0.4
        frame = 'tool0' if rng.random() < 0.5 else 'base_link'
        client.stream(lambda t: client.twist(linear, angular, frame), min(hold, end - time.monotonic()))


def periods_ms(samples, period):
    stamps = np.array([s[0] for s in samples])
    intervals = np.diff(stamps)
    return intervals[intervals < GAP * period] * 1e3


def limit_fractions(samples, period, limits):
    """Largest |v|, |a|, |jerk| of the command stream over the limits, within runs of consecutive commands."""
    stamps = np.array([s[0] for s in samples])
    Q = np.array([s[2] for s in samples])
    breaks = np.flatnonzero(np.diff(stamps) >= GAP * period) + 1
    worst = np.zeros(3)
    jerk = limits.acceleration / RAMP_TIME
    for run in np.split(np.arange(len(Q)), breaks):
        if len(run) < 4:
            continue
        V = np.diff(Q[run], axis=0) / period
        A = np.diff(V, axis=0) / period
        J = np.diff(A, axis=0) / period
        worst = np.maximum(worst, [np.max(np.abs(V) / limits.velocity), np.max(np.abs(A) / limits.acceleration),
                                   np.max(np.abs(J) / jerk)])
    return worst


def first_command_latencies(client, commands, trials):
    """Milliseconds from a twist sent to an idle servo to its first command received."""
    latencies = []
    for _ in range(trials):
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:   # idle: no command for a while
            last = commands.samples[-1][1] if commands.samples else 0.0
            if time.monotonic() - last > 0.3:
                break
            time.sleep(0.02)
        sent = time.monotonic()
        client.twist((0.0, 0.0, 0.01), (0, 0, 0))
        while time.monotonic() - sent < 1.0 and not commands.since(sent):
            time.sleep(0.0002)
        received = commands.since(sent)
        if received:
            latencies.append((received[0][1] - sent) * 1e3)
    return latencies


def echo_baseline(chain, trials):
    """Milliseconds from a message sent to bench_node's echo node (its own process) to its reply received."""
    log = tempfile.NamedTemporaryFile(prefix='bench_servo_echo_', suffix='.log', delete=False).name
    echo = NodeProcess('tools.bench_servo', [], log, args=['--echo'])
    observer = ArmObserver(chain.joint_names)
    try:
        time.sleep(3.0)
        latencies = []
        for _ in range(trials):
            sent = observer.send_target(np.eye(4))
            while time.monotonic() - sent < 1.0:
                with observer.lock:
                    replies = [t for t, _ in observer.trajectories if t >= sent]
                if replies:
                    latencies.append((replies[0] - sent) * 1e3)
                    break
                time.sleep(0.0002)
            time.sleep(0.05)
        return latencies
    finally:
        observer.close()
        echo.stop()


def bench_rate(chain, limits, rate, seconds, rng, loop='thread'):
    period = 1.0 / rate
    sim, servo = start_servo({'command_in_type': 'speed_units', 'publish_period': period, 'loop': loop},
                             {'kinematic': True, 'publish_rate': 50.0}, prefix=f'bench_servo_{rate:g}')
    client = ServoClient(chain.joint_names, record=('tips', 'statuses'))   # a light client: no command lost
    commands = StampedCommands(client, 'forward_position_controller/commands')
    try:
        if not client.wait_ready(120.0):
            raise SystemExit('the servo did not come up:\n' + servo.output()[-2000:])
        latencies = first_command_latencies(client, commands, 100)
        t0, cpu0 = time.monotonic(), cpu_seconds(servo.pid)
        random_twists(client, seconds, rng)
        cpu = (cpu_seconds(servo.pid) - cpu0) / (time.monotonic() - t0)
        time.sleep(0.5)
        samples = commands.since(t0)
        if len(samples) < 10:
            raise SystemExit(f'only {len(samples)} commands received:\n' + servo.output()[-3000:])
        return periods_ms(samples, period), latencies, cpu, limit_fractions(samples, period, limits)
    finally:
        client.close()
        servo.stop()
        sim.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seconds', type=float, default=60.0, help='length of the random twist stream per rate')
    parser.add_argument('--rates', type=float, nargs='+', default=[100.0, 500.0], help='publish rates [Hz]')
    parser.add_argument('--loop', default='thread', choices=('thread', 'timer'), help="the servo's loop parameter")
    parser.add_argument('--echo', action='store_true', help=argparse.SUPPRESS)  # run the echo node (internal)
    args, _ = parser.parse_known_args(argv)
    if args.echo:
        from ..ros.spin import run_node
        return run_node(echo_node, [a for a in sys.argv if a != '--echo'])
    chain = load_chain(arm_files('ik7')[0], 'base_link', 'tool0')
    limits = load_joint_limits(chain).limits
    rng = np.random.default_rng(11)
    rclpy.init()
    try:
        for rate in args.rates:
            print(f'ik_servo_node at {rate:g} Hz ({args.loop} loop), {args.seconds:g} s of random twists:')
            periods, latencies, cpu, fractions = bench_rate(chain, limits, rate, args.seconds, rng, args.loop)
            print(f'  cycle period: p50 {np.percentile(periods, 50):.3f} ms, p99 {np.percentile(periods, 99):.3f} '
                  f'ms, max {np.max(periods):.3f} ms (nominal {1e3 / rate:.3f} ms, n = {len(periods)})')
            print(f'  twist -> first command (idle servo): {percentiles(latencies)}')
            print(f'  CPU: {100 * cpu:.0f} % of one core')
            print(f'  largest commanded velocity {fractions[0]:.3f}, acceleration {fractions[1]:.3f}, '
                  f'jerk {fractions[2]:.3f} of the limits')
        floor = echo_baseline(chain, 100)
        print(f'for comparison, message -> reply of an rclpy echo node (bench_node.echo_node): {percentiles(floor)}')
    finally:
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
