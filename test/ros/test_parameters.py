"""Parameter tables and ParameterSet: every parameter described, ranges, types and choices enforced.

The ParameterSet tests declare a small table of their own on a plain rclpy node,
as another node of the package (the servo) would.
"""
import re

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from ik_solver.core.solver import IKSolver  # noqa: E402, I100
from ik_solver.ros import parameters  # noqa: E402
from ik_solver.ros.parameters import Param, ParameterSet, UNSET  # noqa: E402
from rclpy.exceptions import InvalidParameterValueException  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

TABLE = (
    Param('gain', 0.5, 'A double with a range, for the tests', 0.0, 2.0),
    Param('count', 3, 'An integer with a range, for the tests', 1, 10),
    Param('mode', 'a', 'A string with choices, for the tests', choices=('a', 'b')),
    Param('corner', UNSET, 'A 3-vector that may be unset, for the tests', lengths=(3,)),
)


def test_every_parameter_is_described_and_defaults_are_valid():
    for p in parameters.PARAMETERS:
        assert len(p.description) > 10, p.name
        assert parameters.check(p.name, p.default) is None, p.name
        if p.low is not None:
            assert p.low <= p.default <= p.high, p.name
    assert parameters.check_all(parameters.defaults()) is None


@pytest.mark.parametrize('name,value,match', [
    ('method', 'newton', 'must be one of'),
    ('timeout', 5.0, r'\[0.0001, 1.0\]'),
    ('timeout', '5', 'must be a number'),
    ('random_seed', 2 ** 64, r'\[0, 2147483647\]'),
    ('damping', float('nan'), 'finite'),
    ('velocity_scaling', 1.5, 'velocity_scaling'),
    ('nullspace.pole_target', [1.0, 2.0], '3 values'),
    ('nullspace.pole_target', [1.0, 2.0, float('inf')], '3 finite'),
    ('weights', [1.0] * 5, '6 values'),
    ('workspace.min', [0.0, float('nan'), 0.0], 'NaN'),
    ('mode', 'best', 'first, closest, manipulability'),
    ('position_only', 1, 'true or false'),
])
def test_bad_values_are_refused_with_a_reason(name, value, match):
    assert re.search(match, parameters.check(name, value))


def test_combinations_are_checked():
    values = parameters.defaults()
    values.update({'position_only': True, 'orientation_only': True})
    assert 'cannot both' in parameters.check_all(values)
    values = parameters.defaults()
    values['workspace.min'] = [0.0, 0.0, 0.0]
    assert parameters.check_all(values) is None   # one corner: a half-bounded box
    values['workspace.max'] = [1.0, -1.0, 1.0]
    assert 'below workspace.max' in parameters.check_all(values)


def test_the_workspace_box_is_set_a_corner_at_a_time_and_only_shrinks():
    """Set one corner at a time (as ros2 param set does); a box set cannot be widened or removed at run time."""
    none = parameters.defaults()
    low = dict(none, **{'workspace.min': [0.0, -1.0, 0.0]})
    box = dict(low, **{'workspace.max': [1.0, 1.0, 1.0]})
    np.testing.assert_array_equal(parameters.workspace_box(low)[1], np.inf)
    assert parameters.check_workspace_change(none, low) is None and parameters.check_workspace_change(low, box) is None
    tighter = dict(box, **{'workspace.max': [0.8, 1.0, 1.0]})
    assert parameters.check_workspace_change(box, tighter) is None
    for looser in (none, low, dict(box, **{'workspace.min': [-0.1, -1.0, 0.0]})):
        assert 'may only shrink at run time' in parameters.check_workspace_change(box, looser)


def test_preferred_posture_length_checked_against_the_chain():
    assert parameters.check('nullspace.preferred_posture', [0.0] * 7, 7) is None
    assert 'must have 7' in parameters.check('nullspace.preferred_posture', [0.1] * 3, 7)


def test_xacro_args():
    assert parameters.xacro_args(['prefix:=right_', 'arm:=a:=b', '']) == {'prefix': 'right_', 'arm': 'a:=b'}
    with pytest.raises(ValueError, match="'prefix=right_'"):
        parameters.xacro_args(['prefix=right_'])


def test_a_bad_xacro_argument_is_logged_and_none_are_used():
    class Logger:
        def __init__(self):
            self.errors = []

        def error(self, message):
            self.errors.append(message)

    logger = Logger()
    assert parameters.checked_xacro_args(['prefix:=right_'], logger) == {'prefix': 'right_'} and not logger.errors
    assert parameters.checked_xacro_args(['prefix:=right_', 'oops'], logger) == {}
    assert len(logger.errors) == 1 and "'oops'" in logger.errors[0]


def test_solver_options_from_defaults_build_a_solver(ik7):
    values = parameters.defaults()
    values.update({'position_only': True, 'nullspace.pole_weight': 1.0, 'nullspace.pole_link': 'link4',
                   'nullspace.preferred_posture': [0.1] * 7, 'bounds': [0.01, 0.01, 0.01, 0.1, 0.1, np.inf],
                   'weights_in_target_frame': True})
    options = parameters.solver_options(values, ik7)
    assert options.position_only and options.weights_frame == 'target' and options.bounds[5] == np.inf
    np.testing.assert_array_equal(options.nullspace.q_pref, [0.1] * 7)
    IKSolver(ik7, options)


def test_the_parameter_page_documents_every_parameter():
    import pathlib
    page = (pathlib.Path(__file__).resolve().parents[2] / 'docs' / 'parameters.md').read_text()
    missing = [p.name for p in parameters.PARAMETERS if f'| `{p.name}` |' not in page]
    assert not missing, f'docs/parameters.md lacks {missing}'


@pytest.fixture
def ros():
    from ros_fixtures import isolate_ros_domain
    isolate_ros_domain()
    rclpy.init()
    nodes = []

    def make(overrides=(), validate=None, on_change=None):
        node = rclpy.create_node(f'parameter_test_{len(nodes)}', parameter_overrides=list(overrides))
        nodes.append(node)
        return node, ParameterSet(node, TABLE, validate=validate, on_change=on_change)
    yield make
    for node in nodes:
        node.destroy_node()
    rclpy.try_shutdown()


def test_parameter_set_accepts_integers_for_doubles_and_refuses_with_reasons(ros):
    changes = []
    node, params = ros(on_change=changes.append)
    assert params['gain'] == 0.5 and params.get('corner') == UNSET
    result, = node.set_parameters([Parameter('gain', value=1)])  # `ros2 param set /node gain 1` sends an integer
    assert result.successful and params['gain'] == 1.0 and isinstance(params['gain'], float)
    assert node.get_parameter('gain').type_ == Parameter.Type.DOUBLE and changes == [['gain']]
    for name, value, reason in (('gain', 'fast', 'gain must be a number'), ('gain', 3.0, 'out of range'),
                                ('count', 2.5, 'count must be an integer'), ('mode', 'c', 'one of a, b'),
                                ('corner', [1.0, 2.0], '3 values')):
        result, = node.set_parameters([Parameter(name, value=value)])
        assert not result.successful and reason in result.reason, (name, result.reason)
    assert params['gain'] == 1.0 and changes == [['gain']]


def test_parameter_set_start_values(ros):
    node, params = ros([Parameter('gain', value=2), Parameter('corner', value=[1, 2, 3])])
    assert params['gain'] == 2.0 and params['corner'] == [1.0, 2.0, 3.0]
    with pytest.raises(InvalidParameterValueException, match='gain must be a number'):
        ros([Parameter('gain', value='x')])


def test_parameter_set_asks_validate_about_the_whole_set(ros):
    node, params = ros(validate=lambda v: 'count must exceed gain' if v['count'] <= v['gain'] else None)
    assert node.set_parameters([Parameter('count', value=2)])[0].successful
    result = node.set_parameters_atomically([Parameter('gain', value=1.5), Parameter('count', value=1)])
    assert not result.successful and result.reason == 'count must exceed gain'
    assert params['gain'] == 0.5 and params['count'] == 2
