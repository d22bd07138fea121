"""A client node that sends targets to ik_solver and records what the arm does.

Used by the demo, the end-to-end tests and the latency benchmark: it keeps
every joint state, tip pose (from the simulator), status, trajectory and
limit-violation report it sees, stamped with the monotonic clock.
"""
from contextlib import contextmanager
import gc
import json
import re
import threading
import time

from geometry_msgs.msg import PoseStamped
from ik_solver.ros.joint_states import received_monotonic
from ik_solver.ros.messages import matrix_to_pose, pose_to_matrix
from ik_solver.ros.spin import settle_heap, spin_executor
from ik_solver_interfaces.msg import SolveStatus
from ik_solver_interfaces.srv import ComputeFK, SolveIK
import numpy as np
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory


@contextmanager
def without_gc_pauses():
    """Keep Python's cyclic garbage collector out of a timed phase of the client (streaming targets).

    The observer keeps every joint state and trajectory it sees.  A full collection walks all of them: after
    a few streamed circles one took 100-220 ms, during which the client sent no target and the arm, at rest
    at the last one, cut the circle's chord; a figure of the client, not of the node.  Inside the phase
    reference counting still frees what it drops; afterwards one collection runs and what survives is frozen
    (``spin.settle_heap``), so later collections no longer walk it.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        settle_heap()


class ArmObserver(Node):
    """Records one arm (the nodes of namespace ``namespace``) and sends it targets."""

    def __init__(self, joint_names, base_link='base_link',
                 trajectory_topic='joint_trajectory_controller/joint_trajectory', namespace='', name='ik_observer'):
        super().__init__(name, namespace=namespace or '/')
        self.joint_names = list(joint_names)
        self.base_link = base_link
        self.lock = threading.Lock()
        self.joint_log = []      # (t, positions, velocities) in joint_names order
        self.tip_log = []        # (t, 4x4) from the simulator
        self.statuses = []       # (t, SolveStatus)
        self.trajectories = []   # (t received by the middleware, JointTrajectory)
        self.violations = []     # (t, dict): the simulator's reports of commands executed beyond the limits
        # relative names: the observer sits in the namespace of the arm it watches
        self.target_pub = self.create_publisher(PoseStamped, 'ik_solver/target_pose', 10)
        self.create_subscription(JointState, 'joint_states', self._on_joints, 50)
        self.create_subscription(PoseStamped, 'sim_arm/tip_pose', self._on_tip, 50)
        self.create_subscription(SolveStatus, 'ik_solver/status', self._on_status, 50)
        self.create_subscription(JointTrajectory, trajectory_topic, self._on_trajectory, 50)
        self.create_subscription(String, 'sim_arm/limit_violations', self._on_violation, 50)
        self.solve_client = self.create_client(SolveIK, 'ik_solver/solve')
        self.fk_client = self.create_client(ComputeFK, 'ik_solver/compute_fk')
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self)
        self._closing = threading.Event()
        self._thread = threading.Thread(target=spin_executor, args=(self._executor, self._closing), daemon=True)
        self._thread.start()

    def close(self):
        self._closing.set()   # a spin that races the shutdown ends quietly (``spin_executor``)
        self._executor.shutdown()
        self._thread.join(timeout=2.0)
        self.destroy_node()

    # -- recording --------------------------------------------------------------------------

    def _on_joints(self, msg):
        index = {n: i for i, n in enumerate(msg.name)}
        if not all(n in index for n in self.joint_names) or len(msg.position) != len(msg.name):
            return  # not this arm's, or malformed (tests send such messages on purpose)
        q = np.array([msg.position[index[n]] for n in self.joint_names])
        has_velocity = len(msg.velocity) == len(msg.name)
        v = np.array([msg.velocity[index[n]] if has_velocity else 0.0 for n in self.joint_names])
        with self.lock:
            self.joint_log.append((time.monotonic(), q, v))

    def _on_tip(self, msg):
        with self.lock:
            self.tip_log.append((time.monotonic(), pose_to_matrix(msg.pose)))

    def _on_status(self, msg):
        with self.lock:
            self.statuses.append((time.monotonic(), msg))

    def _on_trajectory(self, msg, info):
        # when the middleware received it: a controller has it then; this process's conversion of a long
        # trajectory into Python objects, and its executor's queue, are the observer's cost, not the sender's
        with self.lock:
            self.trajectories.append((received_monotonic(info), msg))

    def _on_violation(self, msg):
        with self.lock:
            self.violations.append((time.monotonic(), json.loads(msg.data)))

    def latest_joints(self):
        with self.lock:
            return self.joint_log[-1] if self.joint_log else None

    def latest_tip(self):
        with self.lock:
            return self.tip_log[-1][1] if self.tip_log else None

    # -- commanding -------------------------------------------------------------------------

    def wait_ready(self, timeout=20.0):
        """Wait for joint states, the simulator's tip pose, a target subscriber and an answer of the solve service.

        An answer, not only a discovered service: a node is discovered before it spins, and
        targets sent in between would be old by the time it reads them.  A target published before
        the node's subscription is matched is lost (best effort).
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.latest_joints() is not None and self.latest_tip() is not None \
                    and self.target_pub.get_subscription_count() > 0 and self.solve_client.service_is_ready():
                probe = SolveIK.Request()  # where the tip is: solvable, so the node logs no refusal
                probe.target.header.frame_id = self.base_link
                probe.target.pose = matrix_to_pose(self.latest_tip())
                asked = time.monotonic()
                if self.call(self.solve_client, probe, max(0.1, deadline - time.monotonic())) is None:
                    return False
                # the probe's status proves the status topic is matched both ways
                return self.wait_status(asked, max(0.1, deadline - time.monotonic())) is not None
            time.sleep(0.05)
        return False

    def send_target(self, T, frame_id=None, stamp=None):
        """Publish a target (stamped now unless ``stamp`` is given); return the monotonic send time."""
        msg = PoseStamped()
        msg.header.frame_id = self.base_link if frame_id is None else frame_id
        msg.header.stamp = self.get_clock().now().to_msg() if stamp is None else stamp
        msg.pose = matrix_to_pose(T)
        sent = time.monotonic()  # before publishing: an answer may arrive before publish() returns
        self.target_pub.publish(msg)
        return sent

    def wait_status(self, since, timeout=2.0):
        """Return the first status published after ``since``, or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for t, status in self.statuses:
                    if t >= since:
                        return status
            time.sleep(0.002)
        return None

    def wait_settled(self, since, timeout=10.0, speed=2e-3, hold=0.25):
        """Wait until every joint moves slower than ``speed`` for ``hold`` seconds; True if it did."""
        deadline = time.monotonic() + timeout
        still_since = None
        while time.monotonic() < deadline:
            sample = self.latest_joints()
            if sample is not None and sample[0] > since:
                if np.abs(sample[2]).max() < speed:
                    still_since = still_since or sample[0]
                    if sample[0] - still_since >= hold:
                        return True
                else:
                    still_since = None
            time.sleep(0.01)
        return False

    def wait_executed(self, sent, status, timeout=15.0):
        """After ``status`` of a target sent at ``sent``: wait for its trajectory's end, then for the arm to settle.

        Settling is judged from the trajectory's end, however late it arrived under load: a move that has not
        started yet (held at rest for command_lead_time, or not delivered yet) also looks settled.  Returns
        wait_settled's answer (True without a trajectory).
        """
        if not status.trajectory_published:
            return True
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and not self.trajectories_since(sent):
            time.sleep(0.01)
        received = self.trajectories_since(sent)
        end = received[-1][0] + _duration(received[-1][1]) if received else time.monotonic()
        time.sleep(max(0.0, end - time.monotonic()))
        return self.wait_settled(end, timeout=timeout)

    def trajectories_since(self, t):
        """(receipt time, JointTrajectory) of the trajectories received at or after monotonic ``t``."""
        with self.lock:
            return [(r, m) for r, m in self.trajectories if r >= t]

    def call(self, client, request, timeout=5.0):
        """Return the response of a call, or None after ``timeout`` [s]."""
        return self.result(client.call_async(request), timeout)

    @staticmethod
    def result(future, timeout):
        """Return the result of a call's ``future``, or None when it is not done within ``timeout`` [s]."""
        return ArmObserver.timed_result(future, timeout)[0]

    @staticmethod
    def timed_result(future, timeout):
        """Return (the result of a call's ``future`` or None, when it was done [s, monotonic] or None).

        Woken by the future's done callback, which the executor runs once it has taken the answer (one of its
        tasks: rclpy sets the executor on the future first); polling would add up to its period, and the
        polling thread's interpreter time, to every call a benchmark times.  None and None when the call is
        not done within ``timeout`` [s].
        """
        done = threading.Event()
        finished = []

        def stamp(_):
            finished.append(time.monotonic())
            done.set()
        future.add_done_callback(stamp)
        if not done.wait(timeout):
            return None, None
        return future.result(), finished[0]


def send_answered(observer, target, attempts=3, timeout=2.0, on_retry=None):
    """Send ``target`` until the node answers other than ``expired``, at most ``attempts`` times: (sent, status).

    A best-effort target can be lost while discovery completes (no answer), and one delivered after
    ``max_target_age`` is rightly answered ``expired`` without a move: a client sends it again, with a fresh
    stamp.  ``on_retry(status)`` is told before each new attempt (None: no answer); the returned status is
    None when the last attempt got no answer either.
    """
    sent = status = None
    for attempt in range(attempts):
        if attempt and on_retry is not None:
            on_retry(status)
        sent = observer.send_target(target)
        status = observer.wait_status(sent, timeout)
        if status is not None and status.reason != 'expired':
            break
    return sent, status


#: sim_arm_node catches up exactly on a lag up to its MAX_LAG; further behind it skips ahead and logs this, and
#: the trajectory under way is joined with a jump: a run with such a line proves nothing.
FELL_BEHIND = re.compile(r'physics fell ([0-9.]+) s behind')
COMPLAINT = re.compile(r'\[(WARN|ERROR|FATAL)\]')


def simulator_complaints(log_text):
    """Return the WARN, ERROR and FATAL lines of a simulator log, each once, in order."""
    return list(dict.fromkeys(line.strip() for line in log_text.splitlines() if COMPLAINT.search(line)))


def simulation_failures(violations, log_text):
    """Return why a simulated run cannot be trusted (empty when it can).

    ``violations``: the simulator's limit-violation reports (dicts of ``sim_arm/limit_violations``);
    ``log_text``: the simulator's log ('' when it is not ours to read, e.g. under launch).
    """
    reasons = []
    if violations:
        worst = [v for report in violations for v in report.get('violations', [])]
        quantities = sorted({f"{v.get('joint')} {v.get('quantity')}" for v in worst})
        reasons.append(f'the simulator executed {len(violations)} command(s) beyond the joint limits '
                       f'({", ".join(quantities[:6])})')
    lags = [float(m.group(1)) for m in FELL_BEHIND.finditer(log_text)]
    if lags:
        from ..sim.sim_arm_node import MAX_LAG
        reasons.append(f'the physics fell up to {max(lags):.2f} s behind real time (bound {MAX_LAG:g} s): the '
                       'machine is too loaded for this run to show anything')
    return reasons


def _duration(msg):
    """Seconds from a JointTrajectory's time 0 to its last point."""
    last = msg.points[-1].time_from_start
    return last.sec + last.nanosec * 1e-9
