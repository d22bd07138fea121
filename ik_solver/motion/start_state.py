"""Where the next move starts: the controller's reference, our last command, or the measured state.

joint_trajectory_controller interpolates a new trajectory from its own reference, not from the measured
joints: a move planned from anything else starts with a step.  So the reference wins when the controller
publishes it; else our replay of the last command (``CommandHistory``) stands for it; the measurement is
the start only when neither exists, or when the replay (only our guess) disagrees with it.

A reference that does not follow our commands (another client moved the arm, or none was sent) is believed
only where the arm is: a real controller's setpoint tracks the measured joints within its tracking error, so
one further than ``REFERENCE_TRACKING`` from the measurement is refused, not started from.  The plausibility
model alone cannot unmask a lie of a few hundredths of a radian that replaces the reference stream over a
gap, or one stamped a little ahead of it; the independent measurement can.
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
#: A controller's reference that does not follow our commands must be this close to the measured state at
#: rest, compared at the measurement's instant [rad or m]: a setpoint's tracking error, below state_tolerance.
REFERENCE_TRACKING = 0.02
#: ...plus the distance its velocity covers in this time [s]: a controller's tracking error grows with speed
#: (a simulated joint_trajectory_controller's reference leads the arm by about 0.01 s of its speed).
REFERENCE_LAG = 0.015


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
            controller's reference that follows our commands: the arm does not follow its commands, and a
            move planned from the measurement would make the controller jump from its reference; likewise
            when a reference that does not follow our commands is further than ``REFERENCE_TRACKING`` from
            the measurement (plus its allowance for speed).
    """
    if controller is not None and not history.follows(controller):
        return _unfollowed_reference(measured, controller, tolerance, lower, upper)
    replay = history.reference(now)
    at = now if measured.time is None else measured.time
    compared = None if replay is None else history.reference(at)
    apart = np.inf if compared is None else np.abs(compared.position - measured.position).max()
    if apart > tolerance:
        if controller is not None:
            raise StateError('inconsistent_state', f"the arm is {apart:.3f} rad from the controller's reference "
                             f'(state_tolerance {tolerance:g}): it is not following its commands')
        return _measured_start(measured, now)
    return replace(replay, time=now, position=np.clip(replay.position, lower, upper))


def _unfollowed_reference(measured, reference, tolerance, lower, upper):
    """Return a reference that does not follow our commands as the start, if the arm is where it says.

    The reference is carried to the measurement's instant with its own velocity (a setpoint moves smoothly;
    the two messages describe instants milliseconds apart), then each joint must lie within
    ``REFERENCE_TRACKING`` plus ``REFERENCE_LAG`` times its speed (or ``tolerance``, if tighter) of the
    measurement.

    Args:
        measured: the believed measured MotionState.
        reference: the controller's reference (MotionState at its instant).
        tolerance: state_tolerance [rad or m].
        lower: position limits [rad or m].
        upper: likewise.

    Returns:
        The reference, clipped into the limits, keeping its own instant.

    Raises:
        StateError: 'inconsistent_state' when the reference is further from the measurement: it neither
            follows our commands nor the arm, so it is not believed.
    """
    elapsed = 0.0 if measured.time is None or reference.time is None else measured.time - reference.time
    apart = np.abs(reference.position + reference.velocity * elapsed - measured.position)
    bound = np.minimum(tolerance, REFERENCE_TRACKING + REFERENCE_LAG * np.abs(reference.velocity))
    off = ~(apart <= bound)
    if off.any():
        i = int(np.argmax(off))
        raise StateError('inconsistent_state', f"the arm is {apart[i]:.3f} rad from the controller's reference, "
                         f'which does not follow our commands (a setpoint tracks the arm within {bound[i]:.3f} '
                         'at its speed): no move starts from it')
    return replace(reference, position=np.clip(reference.position, lower, upper))


def _measured_start(measured, now):
    """Return the measurement as a start: at rest it is the state now; moving, it keeps the instant it describes."""
    moving = measured.time is not None and np.abs(measured.velocity).max(initial=0.0) > AT_REST
    return measured if moving else replace(measured, time=now)
