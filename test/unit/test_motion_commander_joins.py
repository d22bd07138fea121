"""Where the IK node's trajectories join the motion under way, as joint_trajectory_controller executes them.

A stream of targets goes through the commander on a simulated clock, and every trajectory it sends is
replayed by the soak's checker (``tools.soak_checks.TrajectoryCheck``, written from ros2_controllers'
trajectory.cpp and joint_trajectory_controller.cpp, independent of the guard and of ``motion/jtc.py``): from
an arrival a few milliseconds after it was sent, its header.stamp a few microseconds off the instant the
commander meant (the node reads its clock again to stamp a message), and the controller's state before it
placed as jazzy places it (its last command, one period early).  The truth is the checker's limits: at no
join may velocity, acceleration or jerk leave them.
"""
from ik_solver.motion.command_history import CommandHistory
from ik_solver.motion.commander import Commander, CommanderSettings, StateSources
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver_demos.tools.soak_checks import Limits, TrajectoryCheck
import numpy as np
import pytest

NAMES = ('a', 'b', 'c')
LOWER, UPPER = np.full(3, -2.0), np.full(3, 2.0)
#: The arm's limits, which the checker holds the commands to; the node plans within half of them (its defaults).
VELOCITY, ACCELERATION, JERK = np.full(3, 1.5), np.full(3, 3.0), np.full(3, 120.0)
SCALING = 0.5
HOME = np.array([0.1, -0.2, 0.3])
LEAD, SAMPLE_PERIOD = 0.05, 0.05


class Clock:
    """A simulated monotonic clock [s]: time passes only when told."""

    def __init__(self, t=100.0):
        """Start at ``t`` [s]."""
        self.t = t

    def __call__(self):
        """Return the time now [s]."""
        return self.t


def _stream(rng, seconds=1.5, stamp_error=20e-6):
    """Stream targets through a commander; return its sends as (arrival, stamp, points) and the moves continued.

    A target every 10-30 ms along a wandering joint-space curve; each trajectory arrives 1-30 ms after it was
    sent (within the lead time) and is stamped up to ``stamp_error`` s later than the commander meant.  The
    arm follows its commands: the measurement is the command's replay (at rest, as a tracker that drops
    velocities reports it).
    """
    clock = Clock()
    history = CommandHistory(clock)
    planning = JointLimits(NAMES, LOWER, UPPER, VELOCITY * SCALING, ACCELERATION * SCALING, JERK * SCALING)
    settings = CommanderSettings(NAMES, planning, lead_time=LEAD, sample_period=SAMPLE_PERIOD, state_tolerance=0.05)

    def measured():
        replay = history.reference(clock())
        return MotionState.at_rest(HOME if replay is None else replay.position)

    sends = []

    def transport(names, path, t0):
        stamp = t0 + rng.uniform(0.0, stamp_error)
        times = np.rint(path.times * 1e9) / 1e9   # the message carries whole nanoseconds
        velocities, accelerations = path.velocities.copy(), path.accelerations.copy()
        velocities[-1] = accelerations[-1] = 0.0
        points = [(t, list(p), list(v), list(a))
                  for t, p, v, a in zip(times, path.positions, velocities, accelerations)]
        sends.append((clock() + rng.uniform(0.001, 0.03), stamp, points))

    commander = Commander(settings, StateSources(measured), transport, history, clock)
    continued = 0
    while clock.t < 100.0 + seconds:
        s = clock.t - 100.0
        goal = HOME + 0.6 * np.array([np.sin(2.1 * s), np.sin(1.3 * s + 1.0) - np.sin(1.0), 0.5 * np.sin(3.0 * s)])
        result = commander.move(goal)
        assert result.sent, result.message
        continued += result.start.time < clock.t
        clock.t += rng.uniform(0.01, 0.03)
    return sends, continued


def _violations(sends):
    """Return the checker's violations of the sends, taken by the controller in the order they arrive."""
    checker = TrajectoryCheck(Limits(NAMES, LOWER, UPPER, VELOCITY, ACCELERATION, JERK))
    checker.rest = (HOME, np.zeros(3), np.zeros(3))
    found = []
    for arrival, stamp, points in sorted(sends, key=lambda send: send[0]):
        found += [dict(v, arrival=arrival) for v in checker.check(arrival, stamp, list(NAMES), points)[0]]
    return found


@pytest.mark.parametrize('seed', [1, 2])
def test_a_stream_joins_the_motion_under_way_within_the_limits(seed):
    """Each trajectory starts at a point of the last one the controller has passed: no spline from its state.

    A first point still ahead of the arrival makes the controller spline from its last command, placed one
    period early, to that point: a position error of velocity x 1 ms made up within milliseconds, peaks of
    acceleration and jerk far beyond the limits at the join.
    """
    sends, continued = _stream(np.random.default_rng(seed))
    assert continued > 0.8 * len(sends)   # most moves join a motion under way
    found = _violations(sends)
    assert found == [], found[:3]


def test_a_first_point_ahead_of_the_arrival_is_joined_with_a_peak():
    """The check above can fail: the same stream without its passed first points peaks at the joins."""
    sends, _ = _stream(np.random.default_rng(1))
    ahead = []
    for arrival, stamp, points in sends:
        kept = [p for p in points if stamp + p[0] > arrival]   # only the points still ahead of the arrival
        ahead.append((arrival, stamp, kept or points[-1:]))
    quantities = {v['quantity'] for v in _violations(ahead)}
    assert {'acceleration', 'jerk over one period'} <= quantities, quantities


def test_a_re_target_delivered_after_the_held_move_departed_joins_it_within_the_limits():
    """A target read 40 ms into a 50 ms hold and delivered 15 ms later: the controller has departed by then.

    Held from rest afresh up to the old departure, it started at rest where the controller was already
    accelerating: a step of acceleration (the soak saw 2500 rad/s^3 of jerk).  It goes on with the held
    move for the lead time instead, so wherever the controller is on that move, the new trajectory is too.
    """
    rng = np.random.default_rng(3)
    clock = Clock()
    history = CommandHistory(clock)
    planning = JointLimits(NAMES, LOWER, UPPER, VELOCITY * SCALING, ACCELERATION * SCALING, JERK * SCALING)
    settings = CommanderSettings(NAMES, planning, lead_time=LEAD, sample_period=SAMPLE_PERIOD, state_tolerance=0.05)
    sends = []

    def transport(names, path, t0):
        points = [(t, list(p), list(v), list(a)) for t, p, v, a in zip(
            np.rint(path.times * 1e9) / 1e9, path.positions, path.velocities, path.accelerations)]
        sends.append((clock() + (0.001 if not sends else 0.015), t0 + rng.uniform(0.0, 20e-6), points))

    def measured():
        replay = history.reference(clock())
        return MotionState.at_rest(HOME if replay is None else replay.position)

    commander = Commander(settings, StateSources(measured), transport, history, clock)
    assert commander.move(HOME + [0.4, -0.3, 0.2]).sent
    clock.t += 0.04
    assert commander.move(HOME + [-0.3, 0.2, 0.4]).sent
    assert sends[1][0] > sends[0][1] + LEAD   # arrives after the held move departed
    found = _violations(sends)
    assert found == [], found[:3]
