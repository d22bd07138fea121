"""Soak: both nodes under random streams, lying state topics and CPU load, every command checked as executed.

    python -m ik_solver_demos.tools.soak --minutes 10 --load 2 [--seed 1] [--json result.json]

Two lanes run side by side, each a process of its own on a private ROS domain of its own (two domains, so
neither lane's lies reach the other's node):

- ``ik``: sim_arm_node (joint_trajectory_controller) and ik_solver_node (JointTrajectory output) with
  ik7.yaml; random reachable targets (PoseStamped) at random rates of 10-200 Hz, held or moving;
- ``servo``: sim_arm_node (forward_position_controller) and ik_servo_node (Float64MultiArray output) with
  servo_ik7.yaml; random twists (TwistStamped, m/s and rad/s) at 10-200 Hz, pulled back toward the start.

We run the lanes at once rather than in alternating phases: the nodes then share the CPU with each other and
with ``--load`` busy loops for the whole run, the harder case.  The servo drives forward_position only: its
JointTrajectory output is one point per cycle, which the IK lane's trajectory checks already cover.

The simulators publish their physics state on ``soak_truth/...`` (remapped); the lane relays it to the topics
the nodes read and lies beside it there: offsets of 0.05-2 rad on random joints at about 1 kHz for
0.1-0.5 s, a driver restart (the relay silent for 0.3-1.5 s, then zeros), future and replayed (out-of-order)
stamps, NaN, and on the IK lane's ``controller_state`` references offset by 0.01-0.1 rad, stamped as the truth
or in the future.  So the truth stays known however the nodes are lied to.

Every command a node sends is checked by ``TrajectoryCheck`` / ``StreamCheck`` below, written from
ros2_controllers' joint_trajectory_controller (trajectory.cpp, joint_trajectory_controller.cpp) and independent
of the nodes' guard and of ``motion/jtc.py``: a trajectory is sampled at the controller's 1 kHz from its
publication as the controller joins it (its header.stamp; the segment under way; before its first point, a
spline from the state before it: the controller's last command, placed one period early as
joint_trajectory_controller.cpp places it), positions within the limits, velocities and accelerations within
them x 1.01 (analytically and as differences over one period), jerk as the change of acceleration per period; a
forward_position stream by its differences over the servo's period.  Each command is also compared with the
simulator's true state when it was sent.
"""
import argparse
from collections import Counter, deque
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import yaml

#: Topic namespace the simulators' true state is remapped to; the lane relays it to the nodes' topics.
TRUTH = 'soak_truth'
CONTROLLER = 'joint_trajectory_controller'
#: The controller's update period [s]: commands are sampled at this rate, as a 1 kHz controller runs them.
CONTROL_PERIOD = 0.001
#: Relative tolerance of velocity, acceleration and jerk limits (the guard's 1 %); positions: POSITION_EPS.
TOLERANCE = 0.01
POSITION_EPS = 1e-6
#: The period a command may move the arm by at the velocity limit [s]: the IK node's sample period and the
#: servo's publish period.  A trajectory's next point may lie as much further as the velocity limit allows in
#: the time until it.
COMMAND_PERIOD = 0.01
#: How far the physics may trail a command it tracks [rad]: a trajectory's reference is followed with
#: velocity feed-forward, a forward_position target without (the servo lags by kv / kp x velocity).
TRACKING = {'ik': 0.02, 'servo': 0.06}
#: The most periods one late stream command may stand for (a longer pause: the stream stopped), and the speed
#: [rad/s] below which a stream is at rest.
MAX_PERIODS, REST = 100, 1e-6
#: Truth samples further apart than this [s] (the simulator's physics skipped ahead) judge no command between.
TRUTH_GAP = 0.05
#: A command sent after this long without one [s] is the first of a motion.
IDLE = 0.5
#: Violating commands whose messages (and the command before) go into the result, for the investigation.
DUMPS = 8
#: Private domains of the soak's lanes: clear of the tests' 10-59 and of demos' pid-derived picks in 1-101 where
#: possible.
FIRST_DOMAIN, DOMAIN_PAIRS = 60, 20
STARTUP_TIMEOUT = 900.0
LIE_KINDS = {'ik': ('offset_burst', 'driver_restart', 'future_stamp', 'out_of_order', 'nan',
                    'controller_state_offset', 'controller_state_future'),
             'servo': ('offset_burst', 'driver_restart', 'future_stamp', 'out_of_order', 'nan')}


# -- limits -------------------------------------------------------------------------------------------------------

class Limits:
    """Joint limits in chain order: positions and velocities of the URDF, the MoveIt yaml's (tighter) rest."""

    def __init__(self, names, lower, upper, velocity, acceleration, jerk):
        self.names = list(names)
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.velocity, self.acceleration = np.asarray(velocity, float), np.asarray(acceleration, float)
        self.jerk = np.asarray(jerk, float)

    @classmethod
    def from_files(cls, chain, limits_file):
        """Read ``limits_file`` (MoveIt joint_limits.yaml) over ``chain``'s URDF limits; absent: unlimited."""
        with open(limits_file) as f:
            entries = yaml.safe_load(f)['joint_limits']
        n = len(chain.joint_names)
        lower, upper = np.array(chain.lower, float), np.array(chain.upper, float)
        velocity = np.array(chain.velocity_limits, float)
        acceleration, jerk = np.full(n, np.inf), np.full(n, np.inf)
        for i, name in enumerate(chain.joint_names):
            e = entries.get(name, {})
            if e.get('has_position_limits'):
                lower[i], upper[i] = max(lower[i], e['min_position']), min(upper[i], e['max_position'])
            if e.get('has_velocity_limits'):
                velocity[i] = min(velocity[i], e['max_velocity'])
            if e.get('has_acceleration_limits'):
                acceleration[i] = e['max_acceleration']
            if e.get('has_jerk_limits'):
                jerk[i] = e['max_jerk']
        return cls(chain.joint_names, lower, upper, velocity, acceleration, jerk)


# -- joint_trajectory_controller, from trajectory.cpp ----------------------------------------------------------

def segment_coefficients(p0, v0, a0, p1, v1, a1, h):
    """Coefficients c0..c5 (6, n) of joint_trajectory_controller's polynomial from point a to point b, ``h`` s apart.

    ``v0``/``v1`` None: linear; ``a0``/``a1`` None: cubic; all given: quintic (``interpolate_between_points``).
    """
    c = np.zeros((6, len(p0)))
    c[0] = p0
    if v0 is None or v1 is None:
        c[1] = (p1 - p0) / h if h != 0.0 else 0.0
        return c
    c[1] = v0
    if h == 0.0:
        return c
    if a0 is None or a1 is None:
        c[2] = (-3.0 * p0 + 3.0 * p1 - 2.0 * v0 * h - v1 * h) / h ** 2
        c[3] = (2.0 * p0 - 2.0 * p1 + v0 * h + v1 * h) / h ** 3
        return c
    c[2] = 0.5 * a0
    c[3] = (-20.0 * p0 + 20.0 * p1 - 3.0 * a0 * h ** 2 + a1 * h ** 2 - 12.0 * v0 * h - 8.0 * v1 * h) / (2.0 * h ** 3)
    c[4] = (30.0 * p0 - 30.0 * p1 + 3.0 * a0 * h ** 2 - 2.0 * a1 * h ** 2 + 16.0 * v0 * h + 14.0 * v1 * h) / (
        2.0 * h ** 4)
    c[5] = (-12.0 * p0 + 12.0 * p1 - a0 * h ** 2 + a1 * h ** 2 - 6.0 * v0 * h - 6.0 * v1 * h) / (2.0 * h ** 5)
    return c


def polynomial(c, s):
    """Positions, velocities, accelerations (each (T, n)) of coefficients ``c`` (6, n) at local times ``s`` (T,)."""
    s = s[:, None]
    q = c[0] + s * (c[1] + s * (c[2] + s * (c[3] + s * (c[4] + s * c[5]))))
    v = c[1] + s * (2 * c[2] + s * (3 * c[3] + s * (4 * c[4] + s * 5 * c[5])))
    a = 2 * c[2] + s * (6 * c[3] + s * (12 * c[4] + s * 20 * c[5]))
    return q, v, a


class ControllerTrajectory:
    """One trajectory as joint_trajectory_controller samples it (``Trajectory::sample``), on absolute times.

    ``start``: its header.stamp [s] (the caller puts the update that took it for a zero stamp); ``times`` (K,),
    ``positions`` (K, n), ``velocities``/``accelerations`` (K, n) or None; ``before``: the state (q, v, a) the
    controller set before it (``state_before_traj_msg_``), placed at ``before_time`` (``time_before_traj_msg_``).
    Before the first point the controller splines from that state to the point; from the first point on it
    runs the message's own segments, and the state before plays no part.
    """

    def __init__(self, start, times, positions, velocities, accelerations, before, before_time):
        self.start = float(start)
        self.times = np.asarray(times, float)
        self.positions = np.asarray(positions, float)
        self.velocities = None if velocities is None else np.asarray(velocities, float)
        self.accelerations = None if accelerations is None else np.asarray(accelerations, float)
        self.before = tuple(np.asarray(x, float) for x in before)
        self.before_time = float(before_time)
        self.points_at = self.start + self.times
        self._lead_in = self._first_segment()
        self._segments = [self._segment(i) for i in range(len(self.times) - 1)]

    @property
    def end(self):
        return float(self.points_at[-1])

    def _point(self, k):
        v = None if self.velocities is None else self.velocities[k]
        a = None if self.accelerations is None else self.accelerations[k]
        return self.positions[k], v, a

    def _first_segment(self):
        """From the state before to the first point (velocities and accelerations as JTC resizes), or None.

        None when the first point is not after the state before: the controller never samples that segment.
        """
        p1, v1, a1 = self._point(0)
        q, v, a = self.before
        h = self.points_at[0] - self.before_time
        if not h > 0.0:
            return None
        return segment_coefficients(q, None if v1 is None else v, None if a1 is None else a, p1, v1, a1, h), h

    def _segment(self, i):
        p0, v0, a0 = self._point(i)
        p1, v1, a1 = self._point(i + 1)
        h = self.times[i + 1] - self.times[i]
        return segment_coefficients(p0, v0, a0, p1, v1, a1, h), h

    def sample(self, t):
        """(q, v, a), each (T, n), the controller's output at absolute times ``t`` (T,).

        Before the state before: that state; before the first point: the spline from the state before; between
        two points: their polynomial, the elapsed time clamped to the segment (past its end JTC takes it
        linear: the end point); from the last point on: the last point held (velocities and accelerations of
        the point, zero where absent).
        """
        t = np.asarray(t, float)
        n = self.positions.shape[1]
        q, v, a = np.zeros((len(t), n)), np.zeros((len(t), n)), np.zeros((len(t), n))
        seg = np.searchsorted(self.points_at, t, side='right') - 1   # -1: before the first point
        early = (seg < 0) & (t < self.before_time)
        q[early], v[early], a[early] = self.before
        lead_in = (seg < 0) & ~early
        if lead_in.any():
            c, h = self._lead_in
            q[lead_in], v[lead_in], a[lead_in] = polynomial(c, np.clip(t[lead_in] - self.before_time, 0.0, h))
        late = seg >= len(self.times) - 1
        last_q, last_v, last_a = self._point(len(self.times) - 1)
        q[late] = last_q
        v[late] = 0.0 if last_v is None else last_v
        a[late] = 0.0 if last_a is None else last_a
        for k in np.unique(seg[(seg >= 0) & ~late]):
            rows = seg == k
            c, h = self._segments[k]
            q[rows], v[rows], a[rows] = polynomial(c, np.clip(t[rows] - self.points_at[k], 0.0, h))
        return q, v, a


def controller_refusal(names, msg_points, joint_names):
    """Why joint_trajectory_controller refuses a trajectory (its validation), or None.

    ``msg_points``: [(time_from_start, positions, velocities, accelerations)].
    """
    if sorted(names) != sorted(joint_names) or len(set(names)) != len(names):
        return f"joints {names} are not the controller's {joint_names}"
    if not msg_points:
        return 'no points'
    previous = -np.inf
    for i, (t, p, v, a) in enumerate(msg_points):
        if not t > previous:
            return f'time_from_start of point {i} not increasing'
        previous = t
        if len(p) != len(names) or len(v) not in (0, len(names)) or len(a) not in (0, len(names)):
            return f'point {i} has sizes {len(p)}/{len(v)}/{len(a)} for {len(names)} joints'
        if not np.isfinite(np.concatenate([p, v, a])).all():
            return f'point {i} has NaN or inf'
    if len(msg_points[-1][2]) and np.any(np.asarray(msg_points[-1][2]) != 0.0):
        return 'the last point moves'
    return None


class TrajectoryCheck:
    """Checks a node's JointTrajectory stream as a 1 kHz joint_trajectory_controller executes it."""

    def __init__(self, limits, period=CONTROL_PERIOD, tolerance=TOLERANCE):
        self.limits = limits
        self.dt = period
        self.factor = 1.0 + tolerance
        self.previous = None   # the ControllerTrajectory under way
        self.rest = None       # (q, v, a) the controller holds before the first trajectory

    def output_before(self, t):
        """Return the controller's output at ``t`` [s]: the trajectory under way sampled, or the state held."""
        if self.previous is None:
            return self.rest
        q, v, a = self.previous.sample(np.array([t]))
        return q[0], v[0], a[0]

    def check(self, arrival, stamp, names, points):
        """Violations (list of dicts) of a trajectory whose first command is for ``arrival`` [s], and its first output.

        ``stamp``: header.stamp [s] (0: start at the update that takes it); ``points``: [(time_from_start, p, v,
        a)] in the message's joint order.  Times are best counted from a recent epoch: seconds since 1970 in a
        float are a quarter of a microsecond apart, enough to put a spline through a point in the wrong place.
        Returns (violations, (positions, seconds after arrival) of the first point the controller has still to
        reach, or None when the controller refuses the trajectory).

        As joint_trajectory_controller's ``update`` takes a new trajectory (jazzy 4.21 and later, with
        interpolate_from_desired_state or open_loop_control): at the update ``arrival - dt`` it sets the state
        before to its last command (``last_commanded_state_``), which it sampled one period ahead
        (``command_next_``), so the command for ``arrival - dt``, yet places it at the time of the update before
        (``last_commanded_time_``, ``arrival - 2 dt``); from then on it commands the trajectory one period ahead,
        for ``arrival`` first.  A trajectory whose first point lies ahead of its arrival is therefore joined
        with the motion under way shifted by one period; one that starts at a point already passed is not.
        """
        refusal = controller_refusal(list(names), points, self.limits.names)
        if refusal is not None:
            return [{'quantity': 'malformed', 'detail': refusal}], None
        order = [list(names).index(n) for n in self.limits.names]
        times = np.array([p[0] for p in points])
        pos = np.array([p[1] for p in points], float)[:, order]
        vel = np.array([p[2] for p in points], float)[:, order] if all(len(p[2]) for p in points) else None
        acc = np.array([p[3] for p in points], float)[:, order] if vel is not None and all(
            len(p[3]) for p in points) else None
        update = arrival - self.dt
        before = self.output_before(update)
        start = stamp if stamp != 0.0 else update
        trajectory = ControllerTrajectory(start, times, pos, vel, acc, before, update - self.dt)
        ticks = arrival + self.dt * np.arange(int(math.ceil(max(0.0, trajectory.end - arrival) / self.dt)) + 2)
        q, v, a = trajectory.sample(ticks)
        violations = self.violations(np.vstack([before[0], q]), np.vstack([before[1], v]),
                                     np.vstack([before[2], a]), ticks - arrival)
        self.previous = trajectory
        k = min(int(np.searchsorted(trajectory.points_at, arrival)), len(times) - 1)
        return violations, (pos[k], max(0.0, trajectory.points_at[k] - arrival))

    def violations(self, q, v, a, times):
        """Violations of sampled outputs (rows: the state before, then one per tick at ``times`` after arrival)."""
        lim, dt, f = self.limits, self.dt, self.factor
        found = []

        def record(quantity, values, bound, rows_times):
            excess = np.abs(values) - bound
            if (excess > 0).any():
                row, j = np.unravel_index(np.argmax(excess), excess.shape)
                found.append({'quantity': quantity, 'joint': lim.names[j], 'value': float(values[row, j]),
                              'limit': float(bound[j]), 'time': float(rows_times[row])})
        outside = np.maximum(lim.lower - POSITION_EPS - q[1:], q[1:] - lim.upper - POSITION_EPS)
        if (outside > 0).any():
            row, j = np.unravel_index(np.argmax(outside), outside.shape)
            found.append({'quantity': 'position', 'joint': lim.names[j], 'value': float(q[1 + row, j]),
                          'limit': float(lim.upper[j] if q[1 + row, j] > lim.upper[j] else lim.lower[j]),
                          'time': float(times[row])})
        record('velocity', v[1:], lim.velocity * f, times)
        record('acceleration', a[1:], lim.acceleration * f, times)
        record('velocity over one period', np.diff(q, axis=0) / dt, lim.velocity * f, times)
        record('acceleration over one period', np.diff(v, axis=0) / dt, lim.acceleration * f, times)
        record('jerk over one period', np.diff(a, axis=0) / dt, lim.jerk * f, times)
        return found


class StreamCheck:
    """Checks a forward_position command stream: positions, and its differences as the controller takes them.

    A command's step from the one before is judged over one period (the controller jumps to it, however
    late it came).  Accelerations and jerks are judged on the sender's schedule: a command stands for one
    period of motion (its send times jitter, its motion does not), or, sent late by a sender starved of CPU,
    for up to the periods that elapsed (it may have caught up, or sent the missed cycle late): the number
    that changes the velocity least.  After a pause the controller held the last command, so the first
    command after it is a step from that.
    """

    def __init__(self, limits, period, tolerance=TOLERANCE):
        self.limits = limits
        self.period = period
        self.factor = 1.0 + tolerance
        self.history = deque(maxlen=2)   # (sent, q) of the last two commands, newest last
        self.last_sent = None
        self.velocity = self.acceleration = None   # of the stream, at the last command

    def _pace(self, step, elapsed):
        """Return (velocity, interval) of a command ``step`` after ``elapsed`` s.

        The interval is the number of periods, from one to those elapsed (at most ``MAX_PERIODS``), that
        changes the stream's velocity least; one period for a stream at rest (a move starts with it).
        """
        T = self.period
        if self.velocity is None or np.abs(self.velocity).max() < REST:   # a stream at rest starts now
            return step / T, T
        candidates = [n * T for n in range(1, min(MAX_PERIODS, max(1, int(round(elapsed / T)))) + 1)]
        interval = min(candidates, key=lambda h: np.abs(step / h - self.velocity).max())
        return step / interval, interval

    def check(self, sent, q, held=None):
        """Violations of command ``q`` sent at ``sent`` [s]; ``held``: the target before the first command."""
        lim, T, f = self.limits, self.period, self.factor
        q = np.asarray(q, float)
        if len(q) != len(lim.names) or not np.isfinite(q).all():
            self.last_sent = sent
            return [{'quantity': 'malformed', 'detail': f'{len(q)} values, finite: {bool(np.isfinite(q).all())}'}]
        if not self.history:   # the controller holds its target: the arm rests there
            self.history.append((sent - T, np.asarray(held, float)))
        self.last_sent = sent
        self.history.append((sent, q))
        found = []
        outside = np.maximum(lim.lower - POSITION_EPS - q, q - lim.upper - POSITION_EPS)
        if (outside > 0).any():
            j = int(np.argmax(outside))
            found.append({'quantity': 'position', 'joint': lim.names[j], 'value': float(q[j]),
                          'limit': float(lim.upper[j] if q[j] > lim.upper[j] else lim.lower[j]), 'time': sent})
        (t0, q0), (t1, q1) = self.history[-2], self.history[-1]
        step = q1 - q0
        velocity, interval = self._pace(step, t1 - t0)
        checks = [('velocity over one period', step / T, lim.velocity)]  # a jump is a jump however late
        if self.velocity is not None:
            acceleration = (velocity - self.velocity) / interval
            checks.append(('acceleration over one period', acceleration, lim.acceleration))
            if self.acceleration is not None:
                checks.append(('jerk over one period', (acceleration - self.acceleration) / interval, lim.jerk))
            self.acceleration = acceleration
        self.velocity = velocity
        for quantity, value, bound in checks:
            excess = np.abs(value) - bound * f
            if (excess > 0).any():
                j = int(np.argmax(excess))
                found.append({'quantity': quantity, 'joint': lim.names[j], 'value': float(value[j]),
                              'limit': float(bound[j]), 'time': sent})
        return found


class Truth:
    """The simulator's physics state over time (stamps on the ROS clock), interpolated."""

    def __init__(self):
        self.stamps, self.positions = [], []

    def add(self, stamp, q):
        self.stamps.append(stamp)
        self.positions.append(q)

    def freeze(self):
        order = np.argsort(self.stamps, kind='stable')
        self._t = np.asarray(self.stamps, float)[order]
        self._q = np.asarray(self.positions, float)[order]

    def at(self, t):
        """Positions at ``t`` [s] (linear between samples; None outside the recorded span or in a gap)."""
        k = int(np.searchsorted(self._t, t))
        if k == 0 or k >= len(self._t) or self._t[k] - self._t[k - 1] > TRUTH_GAP:
            return None
        w = (t - self._t[k - 1]) / max(self._t[k] - self._t[k - 1], 1e-9)
        return (1 - w) * self._q[k - 1] + w * self._q[k]


# -- a lane: one simulator, one node, streams and lies --------------------------------------------------------------

def stamp_seconds(stamp, epoch=0):
    """Return a builtin_interfaces Time or Duration in seconds after ``epoch`` [whole s]; a zero stamp stays 0."""
    if stamp.sec == 0 and stamp.nanosec == 0:
        return 0.0
    return (stamp.sec - epoch) + stamp.nanosec * 1e-9


def to_stamp(seconds):
    from builtin_interfaces.msg import Time
    sec = int(math.floor(seconds))
    return Time(sec=sec, nanosec=min(int((seconds - sec) * 1e9), 999_999_999))


class Lane:
    """One private domain: starts the simulator and the node, streams inputs, lies, records, then checks."""

    def __init__(self, kind, seed, log_dir):
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
                                            100)
            self.client.create_subscription(SolveStatus, 'ik_solver/status', self._on_ik_status, 100)
        else:
            from geometry_msgs.msg import PoseStamped, TwistStamped
            from ik_solver_interfaces.msg import ServoStatus
            self.servo_codes = {getattr(ServoStatus, k): k for k in dir(ServoStatus)
                                if k.isupper() and isinstance(getattr(ServoStatus, k), int)}
            self.input_pub = self.client.create_publisher(TwistStamped, 'ik_servo/delta_twist_cmds', 10)
            self.client.create_subscription(Float64MultiArray, 'forward_position_controller/commands',
                                            self._on_command, 100)
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
        """Tell a random lie every 0.5-2.5 s."""
        end = time.monotonic() + seconds
        kinds = [k for k in LIE_KINDS[self.kind] if self.reference_available or not k.startswith('controller')]
        while self.running and time.monotonic() < end:
            time.sleep(self.rng.uniform(0.5, 2.5))
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
            checker = TrajectoryCheck(self.limits)
        else:
            checker = StreamCheck(self.limits, period)
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
                bound = allowed + self.limits.velocity * max(0.0, horizon - period)
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


def run_lane(kind, seconds, seed, result_path, startup=STARTUP_TIMEOUT):
    """Run one lane in this process (its domain: ROS_DOMAIN_ID) and write its result as JSON.

    ``startup`` [s]: how long the node may take to answer (a first start after an install compiles its
    kernels for minutes).
    """
    log_dir = tempfile.mkdtemp(prefix=f'soak_{kind}_')
    lane = Lane(kind, seed, log_dir)
    seconds_run, ready, error = 0.0, False, None
    try:
        lane.connect()
        others = lane.strangers()
        if others:
            raise RuntimeError(f"ROS domain {os.environ.get('ROS_DOMAIN_ID')} is in use by {', '.join(others)}: "
                               "its joint_states and commands would mix with the soak's (choose --domain)")
        lane.start_processes()
        ready = lane.wait_ready(startup)
        if ready:
            seconds_run = lane.run(seconds)
        else:
            error = f'the node did not answer within {startup:g} s'
    except RuntimeError as exc:
        error = str(exc)
    finally:
        lane.running = False
        lane.exited = [p.module for p in lane.processes if not p.alive()]
        lane.stop_processes()
        lane.close()
    result = lane.result(seconds_run, ready)
    result['error'] = error
    with open(result_path, 'w') as f:
        json.dump(result, f)


# -- the whole soak ------------------------------------------------------------------------------------------------

def start_load(n):
    """Start ``n`` busy-loop processes (one core each)."""
    return [subprocess.Popen([sys.executable, '-c', 'while True: pass'], start_new_session=True)
            for _ in range(n)]


def soak(minutes, load, seed, lanes=('ik', 'servo'), domain=None, startup=STARTUP_TIMEOUT):
    """Run the lanes for ``minutes`` beside ``load`` busy loops; return (results of the lanes, load averages).

    ``domain``: the first lane's ROS domain (the next lane takes the next one); ``startup`` [s]: how long a
    node may take to answer.
    """
    first = int(domain) if domain is not None else FIRST_DOMAIN + 2 * (os.getpid() % DOMAIN_PAIRS)
    seconds = minutes * 60.0
    hogs = start_load(load)
    workers, results = [], []
    out_dir = tempfile.mkdtemp(prefix='soak_')
    try:
        for i, kind in enumerate(lanes):
            env = dict(os.environ, ROS_DOMAIN_ID=str(first + i), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
                       PYTHONUNBUFFERED='1')
            path = os.path.join(out_dir, f'{kind}.json')
            cmd = [sys.executable, '-m', 'ik_solver_demos.tools.soak', '--lane', kind, '--seconds', str(seconds),
                   '--seed', str(seed + i), '--result', path, '--startup', str(startup)]
            workers.append((kind, path, subprocess.Popen(cmd, env=env, start_new_session=True)))
        loads = []
        deadline = time.monotonic() + seconds + startup + 120.0
        while any(p.poll() is None for _, _, p in workers) and time.monotonic() < deadline:
            loads.append(os.getloadavg()[0])
            time.sleep(min(5.0, max(0.5, seconds / 20)))
        for kind, path, p in workers:
            if p.poll() is None:
                p.terminate()
                p.wait(30)
            if os.path.exists(path):
                with open(path) as f:
                    results.append(json.load(f))
            else:
                results.append({'lane': kind, 'ready': False, 'violations': [], 'error': f'exit code {p.returncode}'})
    finally:
        for _, _, p in workers:
            if p.poll() is None:
                p.terminate()
                p.wait(30)
        for hog in hogs:
            hog.kill()
            hog.wait()
    return results, loads


def violation_causes(violations):
    """Group violations by cause: away from the true state, at a trajectory's join (first two ticks), the rest."""
    groups = {}
    for v in violations:
        if v['quantity'] == 'distance from the true state':
            cause = 'away from the true state'
        elif v.get('time', 1.0) <= 2.5 * CONTROL_PERIOD and v['quantity'] != 'malformed':
            cause = 'at the join (first two ticks)'
        else:
            cause = v['quantity']
        groups.setdefault(cause, []).append(v)
    return groups


def report(results, loads, minutes, load):
    """Return the text to print and the number of violations; a lane never ready counts as one."""
    lines = [f'soak: {minutes:g} min planned, load {load} busy loop(s); '
             f'load average mean {np.mean(loads) if loads else float("nan"):.2f}, max {max(loads, default=0):.2f}']
    bad = 0
    for r in results:
        lane = r['lane']
        if not r.get('ready'):
            lines.append(f'[{lane}] NEVER READY: {r.get("error", "")} logs {r.get("logs")}')
            bad += 1
            continue
        inputs = 'targets' if lane == 'ik' else 'twists'
        lines.append(f'[{lane}] ran {r["seconds"] / 60:.2f} min; {inputs} sent {r["inputs"]}; commands sent '
                     f'{r["commands"]} (checked {r["checked"]})')
        if lane == 'ik' and not r.get('controller_state'):
            lines.append('[ik] control_msgs is not installed: no controller_state (the simulator publishes none, the '
                         'node reads none), so no lies on it')
        lines.append(f'[{lane}] lies (episodes): ' + ', '.join(f'{k} {v}' for k, v in sorted(r['lies'].items()))
                     + f'; messages {sum(r["lie_messages"].values())}')
        lines.append(f'[{lane}] statuses: ' + ', '.join(f'{k} {v}' for k, v in sorted(r['statuses'].items(),
                                                                                      key=lambda kv: -kv[1])))
        flagged = {v['command'] for v in r['violations']}
        lines.append(f'[{lane}] commands outside the limits as the controller would execute them: {len(flagged)}')
        for cause, found in violation_causes(r['violations']).items():
            worst = max(found, key=lambda v: abs(v.get('value', 0.0)) / max(v.get('limit', 1.0), 1e-9))
            lines.append(f'    {cause}: {len({v["command"] for v in found})} command(s); worst: ' + ', '.join(
                f'{k} {worst[k]:.6g}' if isinstance(worst[k], float) else f'{k} {worst[k]}'
                for k in ('command', 'quantity', 'joint', 'value', 'limit', 'time') if k in worst))
        md, mf = r.get('max_distance'), r.get('max_first_distance')
        lines.append(f'[{lane}] max distance from the true state: any command {md if md is None else f"{md:.4f}"} '
                     f'rad, a first command {mf if mf is None else f"{mf:.4f}"} rad ({r["first_commands"]} first '
                     f'commands; allowed v_max x {COMMAND_PERIOD} s + {TRACKING[lane]} rad)')
        lines.append(f'[{lane}] simulator limit reports (its own witness): {r["simulator_reports"]}; its physics '
                     f'skipped ahead {r.get("physics_skips", 0)} time(s) (commands within 1 s not judged against it)'
                     + (f'; tracebacks in {r["tracebacks"]}' if r['tracebacks'] else ''))
        if r.get('first_solve'):
            fs = r['first_solve']
            lines.append(f'[{lane}] first ~/solve: service {fs.get("service_after_start", float("nan")):.2f} s '
                         f'after the node started; first call {fs.get("first_call", float("nan")):.3f} s, '
                         f'second {fs.get("second_call", float("nan")):.3f} s')
        bad += len(flagged) + len(r['tracebacks'])
    lines.append(f'VIOLATIONS: {bad}')
    return '\n'.join(lines), bad


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--minutes', type=float, default=10.0)
    parser.add_argument('--load', type=int, default=2, help='busy-loop processes beside the soak')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--lanes', default='ik,servo')
    parser.add_argument('--domain', type=int, help="first of the lanes' ROS domains (default: from the pid)")
    parser.add_argument('--json', help="also write the lanes' results here")
    parser.add_argument('--lane', help=argparse.SUPPRESS)
    parser.add_argument('--seconds', type=float, help=argparse.SUPPRESS)
    parser.add_argument('--result', help=argparse.SUPPRESS)
    parser.add_argument('--startup', type=float, default=STARTUP_TIMEOUT,
                        help='seconds a node may take to answer (default %(default)s: kernels may compile)')
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))   # stop the children on the way out
    if args.lane:
        run_lane(args.lane, args.seconds, args.seed, args.result, args.startup)
        return 0
    results, loads = soak(args.minutes, args.load, args.seed, tuple(args.lanes.split(',')), args.domain,
                          args.startup)
    text, bad = report(results, loads, args.minutes, args.load)
    print(text, flush=True)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'results': results, 'loads': loads}, f, indent=1)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
