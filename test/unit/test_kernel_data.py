"""The kernels' named data: the packed plan of the single-solve kernel gives every field back, with its type."""
from ik_solver.core import kernel_data
from ik_solver.core.kernel_data import FLOAT_FIELDS, INT_FIELDS, pack, unpack, with_float
from ik_solver.core.options import node_range, OPTION_RANGES, SolverOptions
from ik_solver.core.plan import chain_model, chain_reach, make_plan
from ik_solver.core.solver import IKSolver
import numpy as np
import pytest


def leaves(value, path=''):
    """Yield (path, value) of every scalar or array in nested namedtuples."""
    if isinstance(value, tuple):
        for name, item in zip(value._fields, value):
            yield from leaves(item, f'{path}.{name}' if path else name)
    else:
        yield path, value


def distinct(model, params, rng):
    """Return the plan with every scalar and array replaced by distinct random values (ints as well)."""
    def fill(value):
        if isinstance(value, tuple):
            return type(value)(*(fill(v) for v in value))
        if isinstance(value, np.ndarray):
            return rng.uniform(-9, 9, value.shape).astype(value.dtype) if value.dtype.kind == 'f' \
                else rng.integers(0, 1000, value.shape)
        return int(rng.integers(0, 10 ** 6)) if isinstance(value, int) else float(rng.uniform(-9, 9))
    return fill(model), fill(params)


def test_unpack_gives_back_every_packed_field(ik7, rng):
    plan = IKSolver(ik7)._plan
    model, params = distinct(plan.model, plan.params, rng)
    got_model, got_params = unpack(*pack(model, params), ik7.n)
    for want_tuple, got_tuple in ((model, got_model), (params, got_params)):
        for (name, want), (other, got) in zip(leaves(want_tuple), leaves(got_tuple)):
            assert name == other
            np.testing.assert_array_equal(got, want, err_msg=name)


def replaced(params, path, value):
    """Return nested namedtuples ``params`` with the leaf at dotted ``path`` set to ``value``."""
    name, _, rest = path.partition('.')
    return params._replace(**{name: replaced(getattr(params, name), rest, value) if rest else value})


@pytest.mark.parametrize('field', FLOAT_FIELDS)
def test_one_float_set_in_a_packed_plan_is_the_plan_packed_with_it(mixed, rng, field):
    plan = IKSolver(mixed)._plan   # a mimic and a fixed joint: fewer variables than joints
    assert len(plan.model.lower) < len(plan.model.kind)
    model, params = distinct(plan.model, plan.params, rng)
    packed = pack(model, params)
    before = packed[0].copy()
    got = with_float(packed, model, field, 0.125)
    for got_array, want in zip(got, pack(model, replaced(params, field, 0.125))):
        np.testing.assert_array_equal(got_array, want)
    np.testing.assert_array_equal(packed[0], before)   # the plan it came from keeps its own value


def test_every_params_field_is_packed(ik7):
    plan = IKSolver(ik7)._plan
    packed = set(INT_FIELDS) | set(kernel_data.FLOAT_FIELDS) | {name for name, _ in kernel_data.ARRAY_FIELDS}
    assert {name for name, _ in leaves(plan.params)} == packed


@pytest.mark.parametrize('name', sorted(OPTION_RANGES))
def test_option_ranges_are_what_validate_enforces(name, ik7):
    spec = OPTION_RANGES[name]
    assert spec.description and spec.low < spec.high
    low, high = node_range(name)
    assert spec.low <= low < high <= spec.high   # a node may offer less than the solver handles, never more
    step = 1 if spec.integer else 1e-9 * max(1.0, abs(spec.low))
    ok = spec.low + (step if spec.open_low else 0)
    make_plan(ik7, chain_model(ik7), chain_reach(ik7), SolverOptions(**{name: ok}))
    with pytest.raises(ValueError, match=name):
        SolverOptions(**{name: spec.low - step if not spec.open_low else spec.low}).validate()
    if np.isfinite(spec.high):
        SolverOptions(**{name: spec.high}).validate()
        with pytest.raises(ValueError, match=name):
            SolverOptions(**{name: spec.high + (1 if spec.integer else spec.high * 1e-9 + 1e-9)}).validate()
