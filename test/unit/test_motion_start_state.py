"""Where a move starts (motion.start_state.choose_start), against the command's own samples.

The truth is the trajectory as sent (``CommandHistory.reference`` replays it exactly, see
test_motion_command_history.py): a measurement taken while the arm follows a command lies on that
command at the measurement's instant, not at the instant the next move is planned.
"""
from dataclasses import replace

from ik_solver.motion.command_history import CommandHistory
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.start_state import choose_start
from ik_solver.motion.timing import plan_move
import numpy as np

NAMES = ('a', 'b', 'c')
LIMITS = JointLimits(NAMES, np.full(3, -3.0), np.full(3, 3.0), np.full(3, 1.0), np.full(3, 3.0), np.full(3, 60.0))
TOLERANCE = 0.02


def _moving():
    """Return a history whose command moves the arm at 0.4 to 0.6 s (about 1 rad/s on joint a)."""
    history = CommandHistory(clock=lambda: 0.0)
    rest = MotionState(np.zeros(3), np.zeros(3), np.zeros(3), 0.0)
    history.sent(rest, plan_move(rest, np.array([2.0, -1.5, 1.0]), LIMITS, 0.05), 0.0)
    assert np.abs(history.reference(0.6).velocity).max() > 0.5
    return history


def _start(measured, history, now):
    return choose_start(measured, None, history, now, TOLERANCE, LIMITS.lower, LIMITS.upper)


def test_an_old_measurement_on_the_command_gives_the_replay_now():
    """A reading 0.13 s old, exactly where the command was then, is on the command: the move continues it.

    Compared with the replay now it looked 0.1 rad off, and the old reading was sent as the state now: a step.
    """
    history, now = _moving(), 0.6
    measured = replace(history.reference(now - 0.13), time=now - 0.13)
    assert np.abs(measured.position - history.reference(now).position).max() > 5 * TOLERANCE
    start = _start(measured, history, now)
    np.testing.assert_allclose(start.position, history.reference(now).position)
    assert start.time == now


def test_a_moving_measurement_off_the_command_keeps_its_instant():
    """The arm does not follow the command: the move starts from the measurement, at the instant it describes.

    The commander then sees its age and re-plans or refuses it as late, instead of sending an old moving
    state as the state now.
    """
    history, now = _moving(), 0.6
    off = history.reference(now - 0.13)
    measured = MotionState(off.position + 0.3, off.velocity, np.zeros(3), now - 0.13)
    start = _start(measured, history, now)
    np.testing.assert_allclose(start.position, measured.position)
    assert start.time == now - 0.13


def test_a_measurement_at_rest_is_the_state_now():
    """At rest (nothing commanded, or the arm held off the command) an old reading is still the arm's state."""
    history, now = _moving(), 0.6
    measured = MotionState(np.array([0.5, 0.5, 0.5]), np.zeros(3), np.zeros(3), now - 0.13)
    assert _start(measured, history, now).time == now
    assert _start(measured, CommandHistory(clock=lambda: 0.0), now).time == now
