"""Where the next move starts: the controller's reference, our last command, or the measured state.

joint_trajectory_controller interpolates a new trajectory from its own reference, not from the measured
joints: a move planned from anything else starts with a step.  So the reference wins when the controller
publishes it; else our replay of the last command (``CommandHistory``) stands for it; the measurement is
the start only when neither exists, or when the replay (only our guess) disagrees with it.
"""
from dataclasses import replace

import numpy as np


class StateError(Exception):
    """No state to start a move from: ``reason`` is 'stale_state', 'inconsistent_state' or 'invalid_input'.

    ``verdict``: the plausibility model's Verdict, when it refused the state.
    """

    def __init__(self, reason, message, verdict=None):
        super().__init__(message)
        self.reason = reason
        self.verdict = verdict


#: Below this speed on every joint a measurement is at rest: its old reading is the arm's state now [rad/s or m/s].
AT_REST = 1e-3


def choose_start(measured, controller, history, now, tolerance, lower, upper):
    """Return the MotionState a move starts from, stamped with the instant it describes.

    A controller reference that follows our last command stands for the replay read ``now`` (exact, and a
    moving start can then continue the command, see ``CommandHistory.next_move``).  The reference keeps its
    own stamp: a moving reference 10 ms old taken for now would be a step.  The measurement is compared with
    the replay at the measurement's own instant (a moving arm read 0.1 s ago is not where the command is
    now), and a moving measurement keeps its stamp, so that a late one is re-planned or refused, never sent
    as if it were the state now.

    Args:
        measured: the believed measured MotionState (a plausibility model's, never a raw reading).
        controller: the controller's reference (MotionState stamped on the history's clock), or None.
        history: the CommandHistory of our commands.
        now: the current instant on the history's clock [s].
        tolerance: state_tolerance, how far the measurement may be from the reference [rad or m].
        lower: position limits [rad or m]: a reference within noise of a limit is clipped to it.
        upper: likewise.

    Returns:
        The controller's reference, else our replay, else the measurement (stamped ``now`` when at rest).

    Raises:
        StateError: 'inconsistent_state' when the measurement is further than ``tolerance`` from the
            controller's reference: the arm does not follow its commands, and a move planned from the
            measurement would make the controller jump from its reference.
    """
    reference, compared = controller, controller
    if reference is None or history.follows(reference):
        replay = history.reference(now)
        reference = None if replay is None else replace(replay, time=now)
        at = now if measured.time is None else measured.time
        compared = None if replay is None else history.reference(at)
    apart = np.inf if compared is None else np.abs(compared.position - measured.position).max()
    if apart > tolerance:
        if controller is not None:
            raise StateError('inconsistent_state', f"the arm is {apart:.3f} rad from the controller's reference "
                             f'(state_tolerance {tolerance:g}): it is not following its commands')
        return _measured_start(measured, now)
    return replace(reference, position=np.clip(reference.position, lower, upper))


def _measured_start(measured, now):
    """Return the measurement as a start: at rest it is the state now; moving, it keeps the instant it describes."""
    moving = measured.time is not None and np.abs(measured.velocity).max(initial=0.0) > AT_REST
    return measured if moving else replace(measured, time=now)
