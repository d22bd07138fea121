"""motion.plausibility as it judges a controller's reference (tolerance 0.01 rad) on a simulated clock.

The truths: a true stream is believed whatever its delivery delay and jitter; a lie a few hundredths off
the truth, stamped a little ahead of it (within the clock tolerance) and mixed into it, is never believed,
because a stamp ahead of now buys no travel time; and every message names its source.
"""
from ik_solver.motion.plausibility import PlausibilitySettings, Reading, StatePlausibility, Verdict
import numpy as np
import pytest

NAMES = ('joint1', 'joint2')
SETTINGS = PlausibilitySettings(NAMES, np.full(2, -3.0), np.full(2, 3.0), np.full(2, 2.0), np.full(2, 3.0),
                                tolerance=0.01, source='controller_state')
PERIOD = 0.005   # 200 Hz
SPEED = np.array([1.0, 0.0])   # rad/s


def _truth(t):
    """Return the reference of an arm moving joint1 at 1 rad/s from 0 at t = 0 [rad]."""
    return SPEED * t


def _settled_moving(model, delay):
    """Feed the true stream for 0.3 s (stamps ``delay`` s before their judging); return the next index."""
    for k in range(60):
        t = k * PERIOD
        model.update(Reading(NAMES, tuple(_truth(t)), tuple(SPEED), t), t + delay)
    assert model.believed is not None and model.believed.time == pytest.approx(59 * PERIOD)
    return 60


@pytest.mark.parametrize('lie', [0.03, 0.015])
def test_a_lie_stamped_ahead_and_mixed_into_the_true_stream_is_never_believed(lie):
    """At 1 rad/s, 200 Hz, truth delivered 5 ms late, a lie stamped 20 ms ahead in every gap of the stream.

    Granted reach over its stamp minus the last believed one (the delivery delay and the 20 ms with it),
    every lie was believed, and then the true messages, stamped before it, were refused as out of order.
    """
    model = StatePlausibility(SETTINGS)
    delay = 0.005
    first = _settled_moving(model, delay)
    lies, truths = [], []
    for k in range(first, first + 200):
        t = k * PERIOD
        lied_at = t + delay - PERIOD / 2   # judged between two true messages
        lying = Reading(NAMES, tuple(_truth(lied_at) + [lie, 0.0]), tuple(SPEED), lied_at + 0.02)
        lies.append(model.update(lying, lied_at).believed)
        truths.append(model.update(Reading(NAMES, tuple(_truth(t)), tuple(SPEED), t), t + delay).verdict)
    assert not any(lies)
    assert truths == [Verdict.BELIEVED] * 200


def test_a_true_stream_stamped_ahead_within_the_clock_tolerance_is_believed_under_jitter():
    """A sender whose clock runs 15 ms ahead, delivered in bursts (two messages at once) at 1 rad/s."""
    model = StatePlausibility(SETTINGS)
    verdicts = []
    for k in range(200):
        t = k * PERIOD
        arrival = (k + 1 - k % 2) * PERIOD   # pairs arrive together
        verdicts.append(model.update(Reading(NAMES, tuple(_truth(t)), tuple(SPEED), t + 0.015), arrival).verdict)
    assert verdicts[-150:] == [Verdict.BELIEVED] * 150
    assert model.believed.time <= 199 * PERIOD + PERIOD + 1e-12   # never ahead of the instant it was judged


def test_a_stamp_ahead_within_the_tolerance_counts_as_now():
    """The believed state describes the instant it was judged at, not 15 ms later."""
    model = StatePlausibility(SETTINGS)
    for k in range(30):
        model.update(Reading(NAMES, (0.5, 0.5), (0.0, 0.0), k * 0.01 + 0.015), k * 0.01)
    assert model.believed.time == pytest.approx(0.29)


def test_the_messages_name_the_source():
    """A refused reference read 'controller_state: joint_states jumped joint1 ...'."""
    model = StatePlausibility(SETTINGS)
    for k in range(30):
        model.update(Reading(NAMES, (0.5, 0.5), (0.0, 0.0), k * 0.01), k * 0.01)
    messages = [model.update(Reading(NAMES, (0.6, 0.5), (0.0, 0.0), 0.30), 0.30).message,
                model.update(Reading(NAMES, (0.5, 0.5), (0.0, 0.0), 0.50), 0.40).message,
                model.update(Reading(NAMES, (0.5, 0.5), (0.0, 0.0), 0.28), 0.40).message,
                model.update(Reading(NAMES, (9.0, 0.5), (0.0, 0.0), 0.40), 0.40).message,
                model.update(Reading(('joint1',), (0.5,), (0.0,), 0.40), 0.40).message,
                model.assess(2.0).message]
    for message in messages:
        assert message.startswith('controller_state ') and 'joint_states' not in message, message
    assert 'jumped joint1 by 0.100' in messages[0]
