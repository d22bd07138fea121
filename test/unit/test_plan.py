"""Plans: a service call's timeout changes a cached plan without planning again, and is checked as an option."""
from dataclasses import replace

from ik_solver.core.plan import chain_model, chain_reach, make_plan, retimed
from ik_solver.core.solver import IKSolver
import numpy as np
import pytest


def test_a_retimed_plan_is_the_plan_made_with_that_timeout(ik7):
    solver = IKSolver(ik7, mode='closest', jump_threshold=0.4)
    retimed_plan = retimed(solver._plan, 0.0123)
    made = make_plan(ik7, chain_model(ik7), chain_reach(ik7), replace(solver.options, timeout=0.0123))
    assert retimed_plan.options == made.options
    assert retimed_plan.params.timeout == made.params.timeout == 0.0123
    assert retimed_plan.variant == made.variant
    for got, want in zip(retimed_plan.packed, made.packed):   # every field of the params, packed
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize('timeout', [0.0, -1.0, float('nan'), 1e9, '0.01', None, True])
def test_a_bad_timeout_is_refused_as_the_option_is(ik7, timeout):
    solver = IKSolver(ik7, timeout=1.0)   # True == 1.0: refused all the same
    with pytest.raises(ValueError, match='timeout'):
        retimed(solver._plan, timeout)
    with pytest.raises(ValueError, match='timeout'):
        solver.solve(ik7.fk(ik7.mid_configuration()), timeout=timeout)


def test_calls_that_differ_in_their_timeout_share_one_cached_plan(ik7, rng):
    solver = IKSolver(ik7)
    q = ik7.random_configuration(rng)
    for timeout in np.linspace(0.01, 0.02, 20):
        result = solver.solve(ik7.fk(q), q, timeout=float(timeout), mode='closest')
        assert result.success
    assert len(solver._plans) == 1
