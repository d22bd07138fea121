"""choose_start with a controller reference that does not follow our commands: it must be where the arm is.

The truth is the measured state (joint_states, an independent source): a real controller's setpoint tracks
it within a tracking error of hundredths of a radian.  A reference that neither follows our commands nor
the arm (a lie of 0.095 rad that slipped through the plausibility model across a gap, or one of 0.03 rad
stamped ahead of the true stream) is refused, never started from.
"""
from ik_solver.motion.command_history import CommandHistory
from ik_solver.motion.limits import MotionState
from ik_solver.motion.start_state import choose_start, REFERENCE_LAG, REFERENCE_TRACKING, StateError
import numpy as np
import pytest

LOWER, UPPER = np.full(2, -3.0), np.full(2, 3.0)
STATE_TOLERANCE = 0.1
NOW = 10.0


def _state(q, v=(0.0, 0.0), t=NOW):
    return MotionState(np.asarray(q, dtype=float), np.asarray(v, dtype=float), np.zeros(2), t)


def _start(measured, reference):
    return choose_start(measured, reference, CommandHistory(clock=lambda: NOW), NOW, STATE_TOLERANCE, LOWER, UPPER)


@pytest.mark.parametrize('lie', [0.095, 0.04, -0.03])
def test_a_reference_off_the_arm_at_rest_is_refused(lie):
    """Within state_tolerance (0.1) of the measurement, a 0.095 rad lie was the start of the move."""
    with pytest.raises(StateError, match="rad from the controller's reference, which does not follow") as refused:
        _start(_state([0.5, 0.2], t=NOW - 0.004), _state([0.5 + lie, 0.2], t=NOW - 0.002))
    assert refused.value.reason == 'inconsistent_state'


def test_a_lie_on_a_moving_arm_is_refused_and_the_true_reference_is_the_start():
    """At 1 rad/s, the measurement 8 ms older than the reference: compared at one instant.

    Moving, a setpoint leads the arm by a tracking error that grows with speed (here 0.025 rad): believed.  A
    lie beyond that allowance, on the joint that moves or on one at rest, is refused.
    """
    v = (1.0, 0.0)
    measured = _state([0.5, 0.2], v, t=NOW - 0.010)
    true = _state([0.508 + 0.025, 0.2], v, t=NOW - 0.002)     # where the arm is 8 ms later, plus the lag
    start = _start(measured, true)
    np.testing.assert_allclose(start.position, true.position)
    assert start.time == true.time
    allowance = REFERENCE_TRACKING + REFERENCE_LAG * 1.0
    for lie in ([allowance + 0.01, 0.0], [0.0, 0.03]):
        with pytest.raises(StateError):
            _start(measured, _state(np.array([0.508, 0.2]) + lie, v, t=NOW - 0.002))
    # The attack reproduced on the graph: a 0.04 rad lie while the arm moves at 0.74 rad/s.
    with pytest.raises(StateError):
        _start(_state([0.5, 0.2], (0.74, 0.0), t=NOW - 0.01), _state([0.5 + 0.04, 0.2], (0.74, 0.0), t=NOW - 0.01))


def test_a_reference_within_its_tracking_error_is_the_start():
    """A setpoint leads the measured joints by its tracking error: that reference is believed."""
    measured = _state([0.5, 0.2])
    reference = _state([0.5 + 0.9 * REFERENCE_TRACKING, 0.2 - 0.5 * REFERENCE_TRACKING])
    np.testing.assert_allclose(_start(measured, reference).position, reference.position)
