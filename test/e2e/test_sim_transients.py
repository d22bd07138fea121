"""Where the simulated arm's acceleration transients come from: the physics against the commands (no ROS).

The MuJoCo arm runs the simulated joint_trajectory_controller at 1 kHz, as sim_arm_node does, and
measures its accelerations (velocity change of each physics step).  A command the controller joins
continuously is measured within the limits; a command that truly exceeds them, or a re-targeting
stream joined later than its stamp without a lead-in (the reference steps at each switch), is measured
beyond them and reported by the controller's witness too.  A lead-in without a point at its stamp is
started from the controller's previous command, the motion under way one period after the update that
command is placed at: a small lead, within the bound on measured peaks.
"""
from dataclasses import replace

from conftest import URDF_DIR
from ik_solver.motion import jtc
from ik_solver.motion.limits import load_joint_limits, MotionState
from ik_solver.motion.timing import plan_move
from ik_solver_demos.sim.controllers import LimitMonitor, TrajectoryController
import numpy as np
import pytest

pytest.importorskip('mujoco', reason='mujoco is not installed')
from ik_solver_demos.sim.physics import ArmSimulation  # noqa: E402, I100

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
LIMITS_FILE = str(URDF_DIR.parent / 'config' / 'ik7_joint_limits.yaml')
#: The end-to-end tests' bound on measured peaks: limit x FACTOR + MARGIN (servo tracking).
FACTOR, MARGIN = 1.5, 2.0
#: Re-targeting stream: period [s], targets, lead-in [s] (the node holds moves from rest this way; see ik_node).
PERIOD, TARGETS, LEAD = 0.01, 100, 0.02


@pytest.fixture(scope='module')
def limits(ik7):
    return load_joint_limits(ik7, LIMITS_FILE).limits


class Arm:
    """The physics and the controller stepped together; loads happen at chosen physics instants."""

    def __init__(self, limits):
        self.sim = ArmSimulation(str(URDF_DIR / 'ik7.urdf.xacro'), list(limits.names), initial_positions=HOME)
        self.controller = TrajectoryController(self.sim.positions, LimitMonitor(limits))
        self.measured, self.reports = [], []

    @property
    def now(self):
        return self.sim.time

    def run_until(self, t):
        while self.sim.time < t - 1e-9:
            q, v, a, reports = self.controller.update(self.sim.time, self.sim.timestep)
            self.reports += reports
            self.sim.command(q, v, a)
            self.sim.step(measure=True)
            self.measured.append(self.sim.acceleration)

    def load(self, start, times, q, v, a):
        self.controller.load(jtc.Trajectory(times, q, v, a), start, 'command', arrival=self.now)

    def peaks(self):
        return np.abs(np.array(self.measured)).max(axis=0)


def _move(arm, goal, limits):
    """Run a Ruckig move from rest to ``goal``, stamped and taken over at once, until it has settled."""
    path = plan_move(MotionState.at_rest(arm.controller.output[0]), goal, limits)
    arm.load(arm.now, path.times, path.positions, path.velocities, path.accelerations)
    arm.run_until(arm.now + path.duration + 0.3)


def test_moves_within_the_limits_are_measured_within_them(limits, rng):
    arm = Arm(limits)
    for _ in range(3):
        _move(arm, np.clip(HOME + rng.uniform(-0.8, 0.8, 7), limits.lower, limits.upper), limits.scaled(0.8, 0.8))
    assert np.all(arm.peaks() <= limits.acceleration), (arm.peaks(), limits.acceleration)
    assert arm.reports == []


def test_moves_beyond_the_limits_are_measured_and_reported_beyond_them(limits, rng):
    """The witness can fail: moves planned with 4 x the acceleration limits are seen by both."""
    arm = Arm(limits)
    fast = replace(limits, acceleration=4.0 * limits.acceleration)
    for _ in range(3):
        _move(arm, np.clip(HOME + rng.uniform(-0.8, 0.8, 7), limits.lower, limits.upper), fast)
    assert np.any(arm.peaks() > limits.acceleration * FACTOR + MARGIN), arm.peaks()
    reported = {v.joint for r in arm.reports for v in r.violations if v.quantity == 'acceleration'}
    assert len(reported) >= 4, arm.reports


class Replay:
    """The last command as the controller interpolates it, from the instant it is stamped with (the node's)."""

    def __init__(self, stamp, start, times, q, v, a):
        self.stamp, self.times = stamp, times
        self.sampler = jtc.SplineSampler(start.position, start.velocity, jtc.Trajectory(times, q, v, a),
                                         start.acceleration)

    def state(self, t):
        q, v, a, _ = self.sampler.evaluate(np.atleast_1d(np.asarray(t, float)) - self.stamp)
        return q, v, a

    def lead_in(self, now, lead, at_stamp=True):
        """Return the command's own points in (now, now + lead) and its state at now + lead, times after ``now``.

        ``at_stamp``: its state at ``now`` (the stamp) comes first, as a point at time 0.
        """
        knots = self.times + self.stamp - now
        times = np.concatenate([[0.0] if at_stamp else [], knots[(knots > 0.0) & (knots < lead)], [lead]])
        return (times,) + self.state(times + now)


def _stream(limits, delay, lead, at_stamp=True):
    """Run a 100 Hz re-targeting stream along a joint-space circle, each command planned from the last one.

    Each is stamped with its start instant and taken over ``delay(k, first)`` s later (``first``: its first
    point's time after its stamp [s]); with ``lead`` > 0 it keeps to the last command for ``lead`` s first
    (exactly, on its own points, ``Replay.lead_in``) and departs from there.
    """
    arm = Arm(limits)
    arm.run_until(0.2)
    scaled = limits.scaled(0.8, 0.8)
    replay = None
    for k in range(TARGETS):
        stamp = 0.2 + k * PERIOD
        arm.run_until(stamp)
        phase = 2 * np.pi * k * PERIOD / 2.0
        goal = HOME + 0.3 * np.array([np.sin(phase), 1 - np.cos(phase), 0.5 * np.sin(phase), 0.0, np.sin(phase), 0.0,
                                      np.cos(phase) - 1.0])
        start = MotionState.at_rest(HOME) if replay is None else MotionState(*(x[0] for x in replay.state(stamp)))
        head = ((np.zeros(0),) + tuple(np.zeros((0, 7)) for _ in range(3)) if replay is None or lead == 0.0
                else replay.lead_in(stamp, lead, at_stamp))
        departure = MotionState(head[1][-1], head[2][-1], head[3][-1]) if len(head[0]) else start
        path = plan_move(departure, goal, scaled)
        shift = head[0][-1] if len(head[0]) else 0.0
        command = (np.concatenate([head[0], path.times + shift]), np.vstack([head[1], path.positions]),
                   np.vstack([head[2], path.velocities]), np.vstack([head[3], path.accelerations]))
        replay = Replay(stamp, start, *command)
        arm.run_until(stamp + delay(k, command[0][0]))
        arm.load(stamp, *command)
    arm.run_until(arm.now + 2.0)
    return arm


def test_a_stream_joined_within_its_lead_in_has_no_transients(limits, rng):
    """Taken over 2-15 ms after their stamps, within the 20 ms lead-in: every switch is continuous.

    Its first point, at the stamp, is the motion under way: the controller, sampling at its update after
    that point, runs the segment between the trajectory's own points, whatever state it starts from.
    """
    delays = rng.uniform(0.002, 0.015, TARGETS)
    arm = _stream(limits, lambda k, first: delays[k], LEAD)
    assert np.all(arm.peaks() <= limits.acceleration), (arm.peaks(), limits.acceleration)
    assert arm.reports == []


def test_a_lead_in_without_a_point_at_its_stamp_taken_just_before_its_first_point_jolts(limits):
    """Taken over 1.5-2.5 ms before its first point, a lead-in without a point at its stamp is measured and reported.

    Before its first point the controller splines from its previous update's command at that update's time
    (open loop, joint_trajectory_controller 4.21 and later), and that command is the motion under way one
    period later (``command_next_``): the spline from there to the point takes one period more than the
    motion under way does, 2.5-3.5 ms, braking by v dt and catching up, far beyond the acceleration limits.
    (Taken over within one period of its first point, the controller commands the point itself and nothing
    steps; with a point at the stamp, see above.)
    """
    arm = _stream(limits, lambda k, first: first - 0.0025, LEAD, at_stamp=False)
    assert np.any(arm.peaks() > limits.acceleration * FACTOR + MARGIN), arm.peaks()
    assert len(arm.reports) > TARGETS // 4


def test_a_stream_joined_late_without_a_lead_in_is_measured_and_reported(limits, rng):
    """Without a lead-in the same delays make the reference step at each switch: both witnesses see it."""
    delays = rng.uniform(0.002, 0.015, TARGETS)
    arm = _stream(limits, lambda k, first: delays[k], 0.0)
    assert np.any(arm.peaks() > limits.acceleration * FACTOR + MARGIN), arm.peaks()
    assert len(arm.reports) > TARGETS // 4
