"""Benchmark of the ROS side: readiness, latency, service round trip, memory, flood, simulator real-time factor.

Each node runs as its own process and is reached over DDS, as in use:

    python -m ik_solver_demos.tools.bench_node [--load N]

The node is ready when it answers: the time from its process start to its first successful ~/solve
answer (the service is discovered as soon as the node creates it, which can be before the node spins).
Its resident memory (VmRSS) is read then, and again after every phase.  With the simulated arm
running and nothing else coming in, the node's CPU share is measured over ``IDLE_SECONDS``.

``--load N`` runs the same measurements with N busy-loop processes beside the nodes (a loaded
machine).  Every phase prints its figure, or what failed; the run goes on to the next phase.
The stream phase also reports whether each target was acted on, or superseded by a newer one
acted on, within ``SERVED_WITHIN`` (the delay from a target to the first command for it or a
newer one), and how fast the node acted on the stream.  The echo node (an rclpy node that only
answers each target) runs in the same run, as the floor of what rclpy and DDS cost.

The flood part is an attack: two publisher processes send targets around HOME, where the arm is
brought first, as fast as they can (10 kHz and more each where the machine allows) while the arm is
driven; it reports how old the
targets the node acted on were (SolveStatus.target_age, p50/p99), how many it superseded, and
the ~/solve round trip during the flood (the node stays responsive).

The benchmark's own process (the client that streams, calls and records) runs under SCHED_FIFO at
``--client-priority`` where the system grants it, below the nodes' real-time threads: with ``--load`` it
would otherwise wait for the scheduler itself, drop the statuses it records and time its own delays, not
the node's.  Its middleware threads, which stamp each message's reception, run at ``--receive-priority``,
above the IK node's threads and below the simulated controller's, as a controller's receiving thread: a
trajectory is timed when it arrives, not when the client next gets a core.  ``--client-priority 0``
measures a client with normal scheduling.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import traceback

from ik_solver.core.chain import load_chain
from ik_solver.core.transforms import make_pose
from ik_solver.ros.ik_node import TARGET_QOS
from ik_solver.ros.messages import final_joint_positions, matrix_to_pose
from ik_solver.ros.parameters import BY_NAME
from ik_solver.ros.spin import middleware_threads_real_time, real_time_threads
from ik_solver_interfaces.srv import SolveIK
import numpy as np
import rclpy
from std_msgs.msg import Float64
import yaml

from .demo import circle, DOWN
from .launcher import node_args, NodeProcess
from .observer import ArmObserver, without_gc_pauses
from .resources import arm_files, share_path

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])  # service requests are solved around it
#: A streamed target counts as served when a command for it, or for a newer target, arrived within this [s].
SERVED_WITHIN = 0.010
#: How long the benchmark waits for one ~/solve answer before it counts the call as unanswered [s].
CALL_TIMEOUT = 2.0
#: A ~/solve answer is due within the node's solve timeout plus this margin [s].
ANSWER_MARGIN = 0.050
#: How long the idle node's CPU is measured [s].
IDLE_SECONDS = 3.0
#: SCHED_FIFO priority of the benchmark's own threads: below the IK node's (worker 30, executor 29).
CLIENT_PRIORITY = 20
#: SCHED_FIFO priority of the benchmark's middleware threads, which stamp each message's reception: above the
#: IK node's threads, below the simulated controller's (50), as a controller's receiving thread.  At the
#: client's own priority they waited on two cores behind the node's handling of the next target, and the
#: latency measured when the client got the CPU, not when the trajectory arrived.
RECEIVE_PRIORITY = 45


def solve_timeout():
    """Return the solve timeout [s] of the node the benchmark starts: its config's ``timeout``, else the default.

    The requests leave theirs at 0, so the node's ``timeout`` parameter is what a call is due within.
    """
    with open(arm_files('ik7')[1]) as f:
        configured = next(v['ros__parameters'] for k, v in yaml.safe_load(f).items() if k.endswith('ik_solver'))
    return float(configured.get('timeout', BY_NAME['timeout'].default))


#: The solve timeout of the benchmarked node [s]: a ~/solve answer is due within it plus ANSWER_MARGIN.
SOLVE_TIMEOUT = solve_timeout()


def echo_node():
    """Build the floor: an rclpy node that answers each target with a one-point trajectory, solving nothing.

    It holds the CPU wake-up latency as the IK node does by default (``cpu_wake_latency``): both are
    measured with the CPUs in the same state.
    """
    from geometry_msgs.msg import PoseStamped
    from ik_solver.ros.cpu_latency import hold_cpu_latency
    from rclpy.node import Node
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    node = Node('ik_solver')
    node.cpu_latency = hold_cpu_latency(BY_NAME['cpu_wake_latency'].default, node.get_logger())
    pub = node.create_publisher(JointTrajectory, 'joint_trajectory_controller/joint_trajectory', 10)

    def echo(msg):
        pub.publish(JointTrajectory(joint_names=['x'], points=[JointTrajectoryPoint(
            positions=[msg.pose.position.x, msg.pose.position.y, msg.pose.position.z])]))
    node.create_subscription(PoseStamped, '~/target_pose', echo, TARGET_QOS)
    return node


def flood_publisher(seconds):
    """Publish targets around HOME as fast as possible for ``seconds`` (one flooding process); print the count.

    Also how long this process itself held targets back: from a stamp to the end of its publication (a
    target that old when sent cannot be younger when acted on), and between two publications.
    """
    from geometry_msgs.msg import PoseStamped
    rclpy.init()
    node = rclpy.create_node(f'bench_flood_{os.getpid()}')
    pub = node.create_publisher(PoseStamped, 'ik_solver/target_pose', 10)
    chain = load_chain(arm_files('ik7')[0], 'base_link', 'tool0')
    poses = [matrix_to_pose(chain.fk(HOME + 0.05 * np.sin(np.arange(chain.n) + k))) for k in range(20)]
    msg = PoseStamped()
    msg.header.frame_id = chain.base_link
    count, end = 0, time.monotonic() + seconds
    held, pause, last = [], 0.0, time.monotonic()
    while last < end:
        stamped = time.monotonic()
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.pose = poses[count % len(poses)]
        pub.publish(msg)
        count += 1
        sent = time.monotonic()
        held.append(sent - stamped)
        pause, last = max(pause, sent - last), sent
    late = np.asarray(held) * 1e3
    print(f'published {count} targets in {seconds:g} s; stamp to sent: p99 {np.percentile(late, 99):.2f} ms, '
          f'max {late.max():.1f} ms, {np.sum(late > 10.0)} sent > 10 ms after their stamp; longest pause between '
          f'two sends {pause * 1e3:.1f} ms')
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def echo_latencies(observer, rate, seconds):
    """Target -> reply latency of echo_node in its own process: rclpy's own cost, for comparison."""
    log = tempfile.NamedTemporaryFile(prefix='bench_echo_', suffix='.log', delete=False).name
    echo = NodeProcess('tools.bench_node', [], log, args=['--echo'])
    try:
        deadline = time.monotonic() + 60.0
        while observer.target_pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)  # the echo node has started and subscribed
        time.sleep(0.5)
        t0 = time.monotonic()
        sent = []
        for k in range(int(rate * seconds)):
            delay = t0 + k / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            T = np.eye(4)
            T[0, 3] = k
            sent.append(observer.send_target(T))
        time.sleep(0.5)
        with observer.lock:
            received = [(t, m) for t, m in observer.trajectories if t >= t0]
        return [(t - sent[int(round(m.points[0].positions[0]))]) * 1e3 for t, m in received]
    finally:
        echo.stop()


def rss_mb(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def cpu_seconds(pid):
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def start(module, **params):
    urdf, config = arm_files('ik7')
    log = tempfile.NamedTemporaryFile(prefix=f'bench_{module}_', suffix='.log', delete=False).name
    limits = share_path('config', 'ik7_joint_limits.yaml')
    return NodeProcess(module, node_args(config, {'urdf_file': urdf, 'joint_limits_file': limits, **params}), log)


def percentiles(values_ms):
    v = np.asarray(values_ms)
    if not len(v):
        return 'no samples'
    return f'p50 {np.percentile(v, 50):.3f} ms, p99 {np.percentile(v, 99):.3f} ms (n = {len(v)})'


def phase(name, measure):
    """Run one measurement; print what failed and return None instead of ending the benchmark."""
    try:
        return measure()
    except Exception as exc:  # a benchmark reports every phase it can
        print(f'{name}: failed: {exc!r}')
        traceback.print_exc(limit=3)
        return None


def busy_loops(count):
    """Start ``count`` processes that spin on a core each (the load of ``--load``)."""
    return [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(count)]


def bench_ik_node(chain, observer, rate, seconds):
    """Node ready time; latency of a smooth stream followed by the simulated arm; flood; ~/solve; memory; RTF."""
    if observer.solve_client.wait_for_service(timeout_sec=1.0):
        raise RuntimeError(f"another ik_solver node answers on ROS domain {os.environ.get('ROS_DOMAIN_ID')}: "
                           'set ROS_DOMAIN_ID to a free one')
    started = time.monotonic()
    node = start('ros.ik_node')
    try:
        ready = wait_ready(chain, observer, node, started + 300.0) - started
        print(f'ik_solver_node ready (first ~/solve answered) {ready:.2f} s after start; resident memory then '
              f'{rss_mb(node.pid):.0f} MB; load average {os.getloadavg()[0]:.2f}')
        phase('simulated arm', lambda: bench_with_arm(chain, observer, rate, seconds, node.pid))
        phase('~/solve', lambda: report_calls('~/solve service round trip', service_round_trips(chain, observer, 300)))
        print(f'ik_solver_node resident memory after the phases: {rss_mb(node.pid):.0f} MB')
    finally:
        node.stop()


def wait_ready(chain, observer, node, deadline):
    """Call ~/solve until the node answers one successfully; return when that answer came (monotonic [s]).

    Args:
        chain: the arm's chain (the request is a pose it reaches from HOME).
        observer: the ArmObserver whose client calls.
        node: the node's NodeProcess.
        deadline: monotonic instant to give up at [s].

    Raises:
        RuntimeError: the node ended, or did not answer by ``deadline``.
    """
    request = solve_request(chain, HOME)
    while time.monotonic() < deadline and node.alive():
        if observer.solve_client.service_is_ready():
            response = observer.call(observer.solve_client, request, timeout=max(0.0, deadline - time.monotonic()))
            if response is not None and response.success:
                return time.monotonic()
        time.sleep(0.005)
    raise RuntimeError(f'ik_solver_node answered no ~/solve (log: {node.log_path})')


def bench_with_arm(chain, observer, rate, seconds, node_pid):
    """Measure the idle node's CPU, the stream and the flood with the simulated arm running, and the arm's CPU."""
    sim = start('sim.sim_arm_node', physics_rate=1000.0, publish_rate=200.0)
    factors = []
    observer.create_subscription(Float64, 'sim_arm/real_time_factor', lambda m: factors.append(m.data), 10)
    try:
        deadline = time.monotonic() + 60.0
        while observer.latest_tip() is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f'the simulated arm published no tip pose (log: {sim.log_path})')
            time.sleep(0.01)
        phase('idle', lambda: report_idle(node_pid, IDLE_SECONDS))
        cpu0, wall0 = cpu_seconds(sim.pid), time.monotonic()
        phase('stream', lambda: report_stream(rate, seconds, stream_latencies(chain, observer, rate, seconds)))
        sim_cpu = (cpu_seconds(sim.pid) - cpu0) / (time.monotonic() - wall0)
        phase('flood', lambda: report_flood(seconds, flood(chain, observer, seconds)))
    finally:
        sim.stop()
    if factors:
        print(f'sim_arm_node, 7-DoF, 1 kHz physics, during the stream: real-time factor '
              f'{np.mean(factors):.3f} (min {np.min(factors):.3f}), {100 * sim_cpu:.0f} % of one core')


def report_idle(pid, seconds):
    """Print the share of one core the node uses for ``seconds`` with only the arm's joint_states coming in."""
    cpu0, wall0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    share = (cpu_seconds(pid) - cpu0) / (time.monotonic() - wall0)
    print(f'ik_solver_node idle beside the simulated arm (joint_states at 200 Hz): {100 * share:.0f} % of one core')


def report_stream(rate, seconds, measured):
    latencies, points, served = measured
    print(f'target -> trajectory, a circle streamed at {rate:.0f} Hz to the simulated arm: '
          f'{percentiles(latencies)}, {np.mean(points) if points else float("nan"):.1f} points per trajectory')
    within = np.sum(served <= SERVED_WITHIN * 1e3)
    print(f'  acted on {len(latencies) / seconds:.0f} targets/s; served (acted on, or superseded by a newer one '
          f'acted on) within {SERVED_WITHIN * 1e3:.0f} ms: {within} of {len(served)}; delay to the first command '
          f'for it or a newer one: {percentiles(served[np.isfinite(served)])}, '
          f'max {np.max(served):.1f} ms')


def report_flood(seconds, measured):
    ages, answered, superseded, calls = measured
    print(f'flood, 2 publishers for {seconds:g} s: {answered} targets answered, {superseded} superseded; '
          f'age of the targets acted on: {percentiles(ages)}')
    report_calls('  ~/solve during the flood', calls)


def report_calls(what, calls):
    """Print the round trips of answered calls, and how many were unanswered, failed or late.

    A late answer that would have been in time but for how long this client itself took to send its request is
    counted apart: that time passed before the node could see the call (see ``service_round_trips``).
    """
    budget = (SOLVE_TIMEOUT + ANSWER_MARGIN) * 1e3
    times = [t for t, answer, _ in calls if answer == 'success']
    failed = sum(answer not in ('success', 'unanswered') for _, answer, _ in calls)
    unanswered = sum(answer == 'unanswered' for _, answer, _ in calls)
    late = [(t, send) for t, answer, send in calls if answer != 'unanswered' and t > budget]
    held = sum(t - send <= budget for t, send in late)
    apart = f" ({held} of them only by this client's own send)" if held else ''
    print(f'{what}: {percentiles(times)}, max {max((t for t, _, _ in calls), default=float("nan")):.1f} ms; '
          f'{unanswered} unanswered (> {CALL_TIMEOUT:g} s), {failed} failed, {len(late)} later than the solve '
          f'timeout + {ANSWER_MARGIN * 1e3:.0f} ms{apart}')


def flood(chain, observer, seconds, publishers=2):
    """Flood the node from ``publishers`` processes; (target ages [ms], statuses, superseded, calls).

    The arm is first brought to HOME, around which the flood's targets lie: each run floods the same state.
    From the circle of the stream, its targets would move joints further than ``jump_threshold`` and each
    solve search its whole timeout for the closest solution until the arm got there.
    """
    sent = observer.send_target(chain.fk(HOME))
    status = observer.wait_status(sent)
    if status is not None:
        observer.wait_executed(sent, status)
    floods = [NodeProcess('tools.bench_node', [], tempfile.NamedTemporaryFile(
        prefix='bench_flood_', suffix='.log', delete=False).name, args=['--flood', str(seconds)])
        for _ in range(publishers)]
    t0 = time.monotonic()
    calls = []
    try:
        await_publishers(observer, observer.target_pub.topic_name, publishers + 1, floods)
        while any(f.alive() for f in floods):
            calls += service_round_trips(chain, observer, 1)
            time.sleep(0.1)
    finally:
        for f in floods:
            f.stop()
            lines = f.output().strip().splitlines()
            print(f"  flood publisher: {lines[-1] if lines else 'no output'}")
    time.sleep(0.5)
    with observer.lock:
        statuses = [m for t, m in observer.statuses if t >= t0 and m.source == 'topic']
    ages = [s.target_age * 1e3 for s in statuses]
    return ages, len(statuses), sum(s.superseded for s in statuses), calls


def await_publishers(node, topic, count, processes, timeout=30.0):
    """Wait until ``node`` knows ``count`` publishers of ``topic``, or ``processes`` have ended, or ``timeout`` [s].

    The flood's calls start once its publishers are known, not while their processes start: those calls
    would be made before any flood.
    """
    deadline = time.monotonic() + timeout
    while node.count_publishers(topic) < count and time.monotonic() < deadline \
            and any(p.alive() for p in processes):
        time.sleep(0.01)


def stream_latencies(chain, observer, rate, seconds):
    """Stream a circle at ``rate``; (latencies [ms], points per trajectory, served delays [ms] of each target).

    Latency: trajectory received - its target sent (matched by the goal), received as the observer's
    middleware stamps it (a controller has the message then).  Served delay of target k: the first trajectory
    for target k or a newer one, received - target k sent (inf: none came).
    """
    start_pose = make_pose([0.5, 0.0, 0.5], DOWN)
    deadline = time.monotonic() + 30.0
    while observer.wait_status(observer.send_target(start_pose), timeout=0.5) is None:
        if time.monotonic() > deadline:
            raise RuntimeError('the node answered no target within 30 s')
    observer.wait_settled(time.monotonic() + 0.1)
    _, targets = circle(start_pose[:3, 3], 0.12, seconds, rate, 1, DOWN)  # one loop: every goal unique
    goals = np.array([T[:3, 3] for T in targets])
    sent = []
    with without_gc_pauses():
        t0 = time.monotonic()
        for k, T in enumerate(targets):
            delay = t0 + k / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            sent.append(observer.send_target(T))
    time.sleep(0.5)
    with observer.lock:
        received = [(t, m) for t, m in observer.trajectories if t >= t0]
    latencies, points = [], []
    first = np.full(len(targets), np.inf)  # when the first command for each target arrived
    for t, msg in received:
        p = chain.fk(final_joint_positions(msg, chain.joint_names))[:3, 3]
        k = int(np.argmin(np.linalg.norm(goals - p, axis=1)))
        if np.linalg.norm(goals[k] - p) < 1e-4:
            latencies.append((t - sent[k]) * 1e3)
            points.append(len(msg.points))
            first[k] = min(first[k], t)
    served = (np.minimum.accumulate(first[::-1])[::-1] - np.array(sent)) * 1e3
    print(f'  {len(received)} trajectories for {len(targets)} targets')
    return latencies, points, served


def service_round_trips(chain, observer, count):
    """Call ~/solve ``count`` times; [(round trip [ms], 'success' | 'unanswered' | the failure reason, send [ms])].

    The round trip ends when the client's executor runs the call's done callback, once it has taken the answer.
    The send is how long the client's own ``call_async`` took: Fast DDS's shared-memory transport held it
    for up to 0.3 s while participants joined (the flood's publishers; UDP alone: never).
    """
    rng = np.random.default_rng(1)
    calls = []
    for q in HOME + rng.uniform(-0.3, 0.3, (count, chain.n)):
        request = solve_request(chain, q)
        start_time = time.monotonic()
        future = observer.solve_client.call_async(request)
        sent = time.monotonic()
        response, answered = observer.timed_result(future, CALL_TIMEOUT)
        elapsed = ((time.monotonic() if answered is None else answered) - start_time) * 1e3
        answer = 'unanswered' if response is None else 'success' if response.success else \
            f'reason {response.reason}: {response.message}'
        calls.append((elapsed, answer, (sent - start_time) * 1e3))
    return calls


def solve_request(chain, q):
    """Return a SolveIK request for the pose of joint positions ``q`` (in the base link, not executed)."""
    request = SolveIK.Request()
    request.target.header.frame_id = chain.base_link
    request.target.pose = matrix_to_pose(chain.fk(q))
    return request


def client_real_time(priority, receive_priority=RECEIVE_PRIORITY):
    """Run this process's threads (the observer's included) under SCHED_FIFO at ``priority``; print the outcome.

    Its middleware threads, which stamp each message's reception, run at ``receive_priority`` (0: as the
    others).  The processes it starts (nodes, load, flood publishers) start with normal scheduling
    (``spin._fifo``).
    """
    if priority <= 0:
        print('the benchmark client runs with normal scheduling')
        return
    refused = real_time_threads(priority)
    if refused is not None:
        print(f'the benchmark client keeps normal scheduling: SCHED_FIFO priority {priority} refused ({refused})')
        return
    receive = max(receive_priority, priority)
    refused = middleware_threads_real_time(receive) if receive > priority else None
    print(f'the benchmark client runs under SCHED_FIFO priority {priority}, its middleware threads at '
          + (f'{receive}' if refused is None else f'{priority}: priority {receive} refused ({refused})'))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rate', type=float, default=200.0, help='target stream rate [Hz]')
    parser.add_argument('--seconds', type=float, default=5.0, help='length of the stream, the flood, the echo [s]')
    parser.add_argument('--load', type=int, default=0, help='busy-loop processes running beside the nodes')
    parser.add_argument('--client-priority', type=int, default=CLIENT_PRIORITY,
                        help="SCHED_FIFO priority of the benchmark's own threads (0: normal scheduling)")
    parser.add_argument('--receive-priority', type=int, default=RECEIVE_PRIORITY,
                        help="SCHED_FIFO priority of the benchmark's middleware threads (0: as its own threads)")
    parser.add_argument('--echo', action='store_true', help=argparse.SUPPRESS)  # run echo_node (internal)
    parser.add_argument('--flood', type=float, help=argparse.SUPPRESS)  # run one flood publisher (internal)
    args, _ = parser.parse_known_args(argv)
    if args.flood:
        return flood_publisher(args.flood)
    if args.echo:
        from ik_solver.ros.spin import run_node
        return run_node(echo_node, [a for a in sys.argv if a != '--echo'])
    rclpy.init()
    chain = load_chain(arm_files('ik7')[0], 'base_link', 'tool0')
    observer = ArmObserver(chain.joint_names)
    client_real_time(args.client_priority, args.receive_priority)
    load = busy_loops(args.load)
    print(f'{args.load} busy-loop processes beside the nodes; load average {os.getloadavg()[0]:.2f}')
    try:
        phase('ik_solver_node', lambda: bench_ik_node(chain, observer, args.rate, args.seconds))
        phase('echo node', lambda: print(f'for comparison, an rclpy node that only echoes each target: '
                                         f'{percentiles(echo_latencies(observer, args.rate, args.seconds))}'))
    finally:
        print(f'load average at the end: {os.getloadavg()[0]:.2f}')
        for process in load:
            process.kill()
            process.wait()
        observer.close()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    main()
