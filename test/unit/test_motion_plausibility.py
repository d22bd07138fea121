"""motion.plausibility on an injected clock: which joint readings a motion may start from.

The truths are independent of the model: the reach bound against a numerical integration of the
fastest motion the limits allow, and the attacks as they were reproduced on the nodes (a driver
restart publishing zeros after a pause, lies interleaved with the truth, future and replayed stamps).
"""
from ik_solver.motion.limits import JointLimits
from ik_solver.motion.plausibility import Expectation, PlausibilitySettings, Reading, REASONS, StatePlausibility, \
    Verdict
import numpy as np
import pytest

NAMES = ('a', 'b', 'c')
VELOCITY = np.array([1.0, 2.0, 0.5])
ACCELERATION = np.array([4.0, 10.0, 2.0])
LIMITS = JointLimits(NAMES, np.full(3, -2.0), np.full(3, 2.0), VELOCITY, ACCELERATION, np.full(3, np.inf))
HOME = np.array([0.3, -0.2, 0.5])


def _model(**thresholds):
    return StatePlausibility(PlausibilitySettings.from_limits(LIMITS, **thresholds))


def _reading(q, t, v=None, names=NAMES):
    return Reading(names, tuple(q), None if v is None else tuple(v), t)


def _settled(model, q, t0=0.0, period=0.01):
    """Feed ``q`` at rest until believed; return the time of the last reading."""
    t = t0
    while not model.update(_reading(q, t, np.zeros(3)), t).believed:
        t += period
        assert t < t0 + 1.0, 'never believed'
    return t


def test_the_reach_is_the_fastest_motion_the_limits_allow():
    """Closed form against a numerical integration of full acceleration up to the velocity limit."""
    settings = PlausibilitySettings.from_limits(LIMITS, pause=10.0)
    dt = 1e-5
    for speed in (np.zeros(3), np.array([0.5, 1.0, 0.5])):
        v, x = speed.copy(), np.zeros(3)
        for k in range(1, 40001):
            v = np.minimum(v + ACCELERATION * dt, VELOCITY)
            x += v * dt
            if k % 5000 == 0:
                np.testing.assert_allclose(settings.reach(speed, k * dt), x, atol=5e-4)


def test_the_reach_stops_growing_after_the_pause():
    settings = PlausibilitySettings.from_limits(LIMITS, pause=0.25)
    np.testing.assert_array_equal(settings.reach(VELOCITY, 1.2), settings.reach(VELOCITY, 0.25))
    np.testing.assert_allclose(settings.reach(VELOCITY, 0.25), VELOCITY * 0.25)
    np.testing.assert_allclose(PlausibilitySettings(NAMES, LIMITS.lower, LIMITS.upper, VELOCITY).reach(0.0, 0.1),
                               VELOCITY * 0.1)   # without acceleration limits: velocity alone


def test_a_steady_stream_within_the_limits_is_believed_in_chain_order():
    model = _model()
    t = _settled(model, HOME)
    velocity = 0.9 * VELOCITY
    for k in range(1, 101):   # 100 Hz, at 90 % of the velocity limits, names shuffled with an unknown joint
        q = HOME + velocity * 0.01 * k
        order = [2, 0, 1]
        reading = Reading(('x',) + tuple(NAMES[i] for i in order), (9.0,) + tuple(q[order]),
                          (0.0,) + tuple(velocity[order]), t + 0.01 * k)
        result = model.update(reading, t + 0.01 * k)
        assert result.believed, result.message
    np.testing.assert_allclose(result.state.position, np.clip(q, -2.0, 2.0))
    np.testing.assert_allclose(result.state.velocity, velocity)
    assert result.state.time == pytest.approx(t + 1.0)
    assert model.assess(t + 1.0).believed and model.believed.time == pytest.approx(t + 1.0)


def test_a_driver_restart_publishing_zeros_after_a_pause_is_refused_until_they_persist():
    """The reproduced attack: 1.2 s without readings, then zeros (the old bound: 1.2 x velocity took them).

    The zeros lie beyond what the arm can have done in the pause (its reach stops growing at ``pause``), so
    they need ``resettle_time``: a driver's start-up zeros for 0.2 s at 200 Hz are never believed; zeros that
    persist for a second are the arm's state.
    """
    model = _model()
    t = _settled(model, HOME) + 1.2
    reach = PlausibilitySettings.from_limits(LIMITS).reach(np.zeros(3), 1.2) + 0.1
    assert np.any(np.abs(HOME) > reach) and np.all(np.abs(HOME) < VELOCITY * 1.2)
    zeros = model.update(_reading(np.zeros(3), t), t)
    assert zeros.verdict == Verdict.SETTLING and zeros.reason == 'stale_state' and zeros.state is None
    assert model.assess(t).verdict == Verdict.SETTLING and '1 s needed' in zeros.message
    times = t + 0.005 * np.arange(1, 41)   # 0.2 s at 200 Hz
    assert not any(model.update(_reading(np.zeros(3), s), s).believed for s in times)
    times = times[-1] + 0.02 * np.arange(1, 41)   # the zeros persist: believed once they span 1 s
    verdicts = [model.update(_reading(np.zeros(3), s), s).verdict for s in times]
    first = verdicts.index(Verdict.BELIEVED)
    assert times[first] - t == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_array_equal(model.assess(times[first]).state.position, 0.0)


def test_a_restart_where_the_arm_was_left_settles_quickly():
    """After a pause, readings within the pause's reach of the believed state need only ``settle_time``."""
    model = _model()
    t = _settled(model, HOME) + 1.2
    near = HOME + [0.1, -0.1, 0.05]
    verdicts = [model.update(_reading(near, t + 0.02 * k), t + 0.02 * k).verdict for k in range(6)]
    assert verdicts == [Verdict.SETTLING] * 5 + [Verdict.BELIEVED]   # 6 readings over 0.1 s


def test_the_truth_after_the_zeros_restarts_the_run():
    model = _model()
    t = _settled(model, HOME) + 1.2
    assert model.update(_reading(np.zeros(3), t), t).verdict == Verdict.SETTLING
    results = [model.update(_reading(HOME, t + 0.01 * k, np.zeros(3)), t + 0.01 * k) for k in range(1, 12)]
    first = next(k for k, r in enumerate(results) if r.believed)
    assert first == 10   # the run of the truth restarted after the zeros: it needs 0.1 s, 11 readings at 100 Hz
    np.testing.assert_array_equal(results[first].state.position, HOME)


def test_a_jump_within_a_stream_is_refused_and_lies_interleaved_with_the_truth_are_never_believed():
    """Lies of +2.0, +0.5 and +0.05 rad on joint a at 1 kHz for 0.5 s beside the true driver at 200 Hz.

    A lie is detectable beyond the tolerance: 0.05 rad is checked with a tolerance of 0.02 rad.
    """
    for lie, tolerance in ((2.0, 0.1), (0.5, 0.1), (0.05, 0.02)):
        model = _model(tolerance=tolerance)
        t0 = _settled(model, HOME)
        believed_lies = 0
        for k in range(1, 501):
            t = t0 + k * 1e-3
            if k % 5 == 0:
                assert model.update(_reading(HOME, t, np.zeros(3)), t).believed
            lied = np.clip(HOME + [lie, 0.0, 0.0], -2.0, 2.0)
            result = model.update(_reading(lied, t + 1e-4, np.zeros(3)), t + 1e-4)
            believed_lies += result.believed
            assert result.verdict == Verdict.JUMPED and 'jumped a by' in result.message
        assert believed_lies == 0


def test_a_persistent_lie_alone_is_believed_only_after_the_resettle_time():
    model = _model()
    t0 = _settled(model, HOME)
    lied = HOME + [0.5, 0.0, 0.0]
    results = [model.update(_reading(lied, t0 + 0.01 * k, np.zeros(3)), t0 + 0.01 * k) for k in range(1, 110)]
    assert not any(r.believed for r in results[:100]) and results[0].verdict == Verdict.JUMPED
    assert {r.verdict for r in results[25:100]} == {Verdict.SETTLING}   # 0.25 s without a belief: a pause
    assert results[100].believed   # 101 readings spanning 1 s


def test_the_last_command_is_overruled_only_by_a_settled_run_and_for_that_command_only():
    """Off the command: refused; a settled run of such readings (something else moved the arm) is believed.

    It overrules that command only: the next one counts again, and an expectation without origin always.
    """
    model = _model()
    t0 = _settled(model, HOME)
    expected = Expectation(HOME - 0.01, HOME + 0.01, origin=1.0)
    assert model.update(_reading(HOME + 0.1, t0 + 0.01, np.zeros(3)), t0 + 0.01, expected).believed
    off = HOME + [0.0, 0.0, 0.12]
    results = [model.update(_reading(off, t0 + 0.01 * k, np.zeros(3)), t0 + 0.01 * k, expected) for k in range(2, 105)]
    assert [r.verdict for r in results[:100]] == [Verdict.OFF_COMMAND] * 100   # 1 s: resettle_time
    assert 'outside where our commands' in results[0].message and results[100].believed
    assert model.update(_reading(off, t0 + 1.05, np.zeros(3)), t0 + 1.05, expected).believed   # waived
    after = Expectation(HOME - 0.01, HOME + 0.01, origin=2.0)   # a new command: it counts again
    assert model.update(_reading(off, t0 + 1.06, np.zeros(3)), t0 + 1.06, after).verdict == Verdict.OFF_COMMAND
    unnamed = Expectation(HOME - 0.01, HOME + 0.01)   # no origin: never waived
    model = _model()
    t0 = _settled(model, HOME)
    for k in range(1, 40):
        result = model.update(_reading(off, t0 + 0.01 * k, np.zeros(3)), t0 + 0.01 * k, unnamed)
        assert result.verdict == Verdict.OFF_COMMAND


@pytest.mark.parametrize('reading,verdict,text', [
    (Reading(NAMES + ('a',), (0.1, 0.2, 0.3, 0.4), None, 1.0), Verdict.MALFORMED, 'duplicate joint names a'),
    (Reading(NAMES, (0.1, 0.2), None, 1.0), Verdict.MALFORMED, '3 names but 2 positions'),
    (Reading(NAMES, (0.1, 0.2, 0.3), (0.0,), 1.0), Verdict.MALFORMED, '3 names but 1 velocities'),
    (Reading(('a', 'b'), (0.1, 0.2), None, 1.0), Verdict.MALFORMED, 'lack c'),
    (Reading(NAMES, (0.1, np.nan, 0.3), None, 1.0), Verdict.NOT_FINITE, 'NaN or inf for b'),
    (Reading(NAMES, (0.1, 0.2, 0.3), (0.0, np.inf, 0.0), 1.0), Verdict.NOT_FINITE, 'NaN or inf for b'),
    (Reading(NAMES, (0.1, 2.5, 0.3), None, 1.0), Verdict.OUTSIDE_LIMITS, 'b at 2.5000, outside the joint limits'),
    (Reading(NAMES, tuple(HOME), (0.0, 1e6, 0.0), 1.0), Verdict.VELOCITY_BEYOND_LIMIT, 'velocity of 1e+06'),
    (Reading(NAMES, tuple(HOME), None, 1.03), Verdict.FUTURE_STAMP, '0.030 s in the future'),
    (Reading(NAMES, tuple(HOME), None, 11.0), Verdict.FUTURE_STAMP, '10.000 s in the future'),
    (Reading(NAMES, tuple(HOME), None, 0.5), Verdict.OUT_OF_ORDER, 'before the last believed reading'),
])
def test_every_refusal_has_a_verdict_a_reason_and_a_message(reading, verdict, text):
    model = _model()
    _settled(model, HOME, t0=0.8, period=0.02)
    result = model.update(reading, 1.0)
    assert result.verdict == verdict and text in result.message and result.state is None
    assert result.reason in ('invalid_input', 'inconsistent_state')
    assert model.assess(1.0).verdict == verdict   # the newest reading decides


def test_every_verdict_has_a_status_reason():
    assert set(REASONS) == set(Verdict)


def test_encoder_noise_at_a_limit_is_clamped():
    model = _model()
    t = _settled(model, [1.995, 0.0, -1.995])
    result = model.update(_reading([2.005, 0.0, -2.005], t + 0.01, np.zeros(3)), t + 0.01)
    np.testing.assert_array_equal(result.state.position, [2.0, 0.0, -2.0])


def test_stale_and_nothing_yet():
    model = _model(timeout=0.2)
    assert model.assess(0.0).verdict == Verdict.NO_READING and model.believed is None
    t = _settled(model, HOME)
    assert model.assess(t + 0.2).believed
    stale = model.assess(t + 0.25)
    assert stale.verdict == Verdict.STALE and stale.reason == 'stale_state' and 'joint_states_timeout' in stale.message


def test_staleness_counts_from_reception_and_continuity_from_the_stamps():
    """A sender whose clock lags (stamps 1 s old) stays fresh while its readings arrive."""
    model = _model(timeout=0.2, clock_tolerance=0.02)
    for k in range(12):
        reading = Reading(NAMES, tuple(HOME), (0.0, 0.0, 0.0), 10.0 + 0.01 * k - 1.0, 10.0 + 0.01 * k)
        result = model.update(reading, 10.0 + 0.01 * k)
    assert result.believed and model.assess(10.15).believed and not model.assess(10.35).believed


def test_unknown_velocities_allow_the_velocity_limit_from_the_start():
    """Without reported velocities the arm may already move at its limit: the reach is velocity x time."""
    model = _model(tolerance=0.0)
    t = 0.0
    while not model.update(_reading(HOME, t), t).believed:
        t += 0.01
    step = VELOCITY * 0.1
    assert model.update(_reading(HOME + 0.99 * step, t + 0.1), t + 0.1).believed
    assert model.update(_reading(HOME + 0.99 * step + 1.01 * step, t + 0.2), t + 0.2).verdict == Verdict.JUMPED


def test_new_thresholds_keep_the_belief_new_joints_do_not():
    model = _model()
    t = _settled(model, HOME)
    model.settings = PlausibilitySettings.from_limits(LIMITS, tolerance=0.05)
    assert model.assess(t).believed and model.settings.tolerance == 0.05
    model.settings = PlausibilitySettings(('a', 'b'), [-1, -1], [1, 1], [1, 1])
    assert model.assess(t).verdict == Verdict.NO_READING


@pytest.mark.parametrize('change', [{'velocity': [1.0, 0.0, 1.0]}, {'tolerance': -1.0}, {'settle_count': 0},
                                    {'names': ('a', 'a', 'b')}, {'lower': [0.0, 0.0]}])
def test_bad_settings_are_refused(change):
    values = {'names': NAMES, 'lower': LIMITS.lower, 'upper': LIMITS.upper, 'velocity': VELOCITY}
    values.update(change)
    with pytest.raises(ValueError):
        PlausibilitySettings(**values)


def test_a_jump_while_settling_is_reported_as_a_jump():
    model = _model()
    t = _settled(model, HOME) + 1.0
    assert model.update(_reading(HOME, t, np.zeros(3)), t).verdict == Verdict.SETTLING
    jumped = model.update(_reading(HOME + [1.0, 0.0, 0.0], t + 0.01, np.zeros(3)), t + 0.01)
    assert jumped.verdict == Verdict.JUMPED and 'jumped a by 1.000' in jumped.message
