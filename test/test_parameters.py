"""The node's parameter table: every parameter described, ranges and choices enforced."""
from ik_solver.core.solver import IKSolver
from ik_solver.ros import parameters
import numpy as np
import pytest


def test_every_parameter_is_described_and_defaults_are_valid():
    for p in parameters.PARAMETERS:
        assert len(p.description) > 10, p.name
        assert parameters.check(p.name, p.default) is None, p.name
        if p.low is not None:
            assert p.low <= p.default <= p.high, p.name


@pytest.mark.parametrize('name,value,match', [
    ('method', 'newton', 'must be one of'),
    ('timeout', 5.0, r'\[0.0001, 1.0\]'),
    ('damping', float('nan'), 'finite'),
    ('velocity_scaling', 0.0, 'velocity_scaling'),
    ('nullspace.pole_target', [1.0, 2.0], '3 finite'),
    ('mode', 'best', 'first, closest'),
])
def test_bad_values_are_refused_with_a_reason(name, value, match):
    import re
    assert re.search(match, parameters.check(name, value))


def test_preferred_posture_length_checked_against_the_chain():
    assert parameters.check('nullspace.preferred_posture', [0.0] * 7, 7) is None
    assert 'must have 7' in parameters.check('nullspace.preferred_posture', [0.0] * 3, 7)


def test_solver_options_from_defaults_build_a_solver(ik7):
    values = parameters.defaults()
    values.update({'position_only': True, 'nullspace.pole_weight': 1.0, 'nullspace.pole_link': 'link4',
                   'nullspace.preferred_posture': [0.1] * 7})
    options = parameters.solver_options(values, ik7)
    assert options.weights == (1.0, 1.0, 1.0, 0.0, 0.0, 0.0)
    np.testing.assert_array_equal(options.nullspace.q_pref, [0.1] * 7)
    IKSolver(ik7, options)


def test_readme_documents_every_parameter():
    import pathlib
    readme = (pathlib.Path(__file__).resolve().parents[1] / 'README.md').read_text()
    missing = [p.name for p in parameters.PARAMETERS if f'| `{p.name}` |' not in readme]
    assert not missing, f'README parameter table lacks {missing}'
