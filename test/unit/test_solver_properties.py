"""Property-based tests of the solver: every input gets one clear answer, on time.

Invariant: for any target, seed and per-call options, ``IKSolver.solve`` either raises ValueError (bad
input) or returns an IKResult whose joints are finite and within the limits, whose reason is one of the
documented ones and agrees with ``success``, and which arrives within its timeout plus one iteration.
The timing margin is generous (a hang guard on a shared CI machine); the kernel's own clock check is
measured by ``python -m ik_solver_demos.tools.bench --overrun``.
"""
import time

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
from ik_solver import IKSolver
from ik_solver.core.transforms import make_pose
import numpy as np
import pytest

REASONS = {'success', 'unreachable', 'timeout', 'joint_limits', 'singular', 'invalid_input', 'collision'}
#: Slack over the requested timeout: one iteration is microseconds; the rest is a loaded machine's scheduling.
SLACK = 0.05

finite = st.floats(-3.0, 3.0, allow_nan=False)
any_float = st.one_of(finite, st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300, 0.0]))


@st.composite
def targets(draw):
    kind = draw(st.sampled_from(['pose', 'position', 'garbage']))
    position = [draw(any_float) for _ in range(3)]
    if kind == 'position':
        return np.array(position)
    if kind == 'garbage':
        return draw(st.sampled_from([None, 'pose', np.zeros((3, 3)), np.full((4, 4), np.nan), [[1, 2], [3, 4]]]))
    quaternion = [draw(any_float) for _ in range(4)]
    try:
        return make_pose(position, quaternion)
    except ValueError:  # a non-finite position or a zero quaternion: hand the solver a broken matrix instead
        T = np.eye(4)
        T[:3, 3] = np.nan_to_num(position, nan=np.nan)
        return T


@st.composite
def options(draw):
    chosen = {'timeout': draw(st.floats(1e-4, 0.01))}
    if draw(st.booleans()):
        chosen['method'] = draw(st.sampled_from(['lm', 'dls', 'adaptive_dls', 'pinv', 'transpose']))
    if draw(st.booleans()):
        chosen['mode'] = draw(st.sampled_from(['first', 'closest', 'manipulability']))
    if draw(st.booleans()):
        chosen['weights'] = tuple(draw(st.floats(0.0, 5.0)) for _ in range(6))
    if draw(st.booleans()):
        chosen['position_only'] = True
    if draw(st.booleans()):
        chosen['max_iterations'] = draw(st.integers(1, 10_000))
    return chosen


@pytest.fixture(scope='module')
def solver(ik7):
    return IKSolver(ik7)


SUPPRESSED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=300, deadline=None, suppress_health_check=SUPPRESSED)
@given(target=targets(), seed_offset=st.lists(any_float, min_size=7, max_size=7), chosen=options(),
       seed_kind=st.sampled_from(['none', 'inside', 'raw']))
def test_any_input_gets_a_value_error_or_a_finite_in_limits_result_on_time(
        solver, ik7, target, seed_offset, chosen, seed_kind):
    seed = {'none': None, 'inside': np.clip(np.nan_to_num(np.array(seed_offset)), ik7.lower, ik7.upper),
            'raw': np.array(seed_offset)}[seed_kind]
    start = time.perf_counter()
    try:
        result = solver.solve(target, seed, **chosen)
    except ValueError as exc:
        assert str(exc), 'a refusal must say why'
        return
    elapsed = time.perf_counter() - start
    assert result.reason in REASONS and (result.reason == 'success') == result.success, result.reason
    assert np.isfinite(result.joints).all() and ik7.within_limits(result.joints), result.joints
    assert result.success or result.message
    assert np.isfinite(result.position_error) and np.isfinite(result.orientation_error)
    assert elapsed <= chosen['timeout'] + SLACK, (elapsed, chosen)
