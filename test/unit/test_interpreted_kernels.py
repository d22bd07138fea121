"""The kernels run interpreted (their source as plain Python, ``core.interpreted``) solve as the compiled ones."""
import time

from ik_solver.core import interpreted, kernel_cache
from ik_solver.core.chain import load_chain
from ik_solver.core.nullspace import NullspaceGoals
from ik_solver.core.solver import IKSolver
from ik_solver_demos.tools.resources import arm_files
import numpy as np
import pytest

# the interpreted uint64 generator wraps around, as the compiled one does, with NumPy's warning
pytestmark = pytest.mark.filterwarnings('ignore:overflow encountered:RuntimeWarning')
#: Options that make a solve reproducible whatever the speed: a fixed number of attempts, no timeout.
FIXED = {'timeout': 60.0, 'max_attempts': 3, 'random_seed': 7}


@pytest.fixture(scope='module')
def chain():
    """Return the bundled 7-joint arm."""
    return load_chain(arm_files('ik7')[0], 'base_link', 'tool0')


@pytest.fixture
def compiled(monkeypatch):
    """Have numba compile here a kernel missing from the cache, so the reference really is compiled."""
    monkeypatch.setenv(kernel_cache.MODE_ENV, 'inline')


@pytest.mark.parametrize('options, goals', [({'method': 'lm'}, False), ({'method': 'dls'}, False),
                                            ({'method': 'lm', 'position_only': True}, True)],
                         ids=['lm', 'dls', 'lm-position-nullspace'])
def test_interpreted_solutions_are_the_compiled_ones(chain, compiled, options, goals):
    """Same seeds and options: the same joints (to rounding) and the same outcome; FK of them meets the target."""
    twin = interpreted.twin_module(IKSolver.__module__).IKSolver
    if goals:   # each solver validates the goals against its own module's class
        fast = IKSolver(chain, **FIXED, **options, nullspace=NullspaceGoals(posture=1.0, limits=1.0, iterations=2))
        slow = twin(chain, **FIXED, **options, nullspace=interpreted.twin_module(
            NullspaceGoals.__module__).NullspaceGoals(posture=1.0, limits=1.0, iterations=2))
    else:
        fast, slow = IKSolver(chain, **FIXED, **options), twin(chain, **FIXED, **options)
    rng = np.random.default_rng(3)
    for _ in range(4):
        target = chain.fk(rng.uniform(chain.lower, chain.upper))
        seed = rng.uniform(chain.lower, chain.upper)
        a, b = fast.solve(target, seed), slow.solve(target, seed)
        assert a.success and b.success
        assert (a.iterations, a.restarts, a.reason) == (b.iterations, b.restarts, b.reason)
        np.testing.assert_allclose(b.joints, a.joints, atol=1e-9)
        reached = chain.fk(b.joints)
        assert np.linalg.norm(reached[:3, 3] - target[:3, 3]) < 1e-4
        if not options.get('position_only'):
            np.testing.assert_allclose(reached[:3, :3], target[:3, :3], atol=1e-4)


def test_an_unreachable_target_fails_alike(chain, compiled):
    """Failures agree too: the same reason and best approximation."""
    twin = interpreted.twin_module(IKSolver.__module__).IKSolver
    target = chain.fk(chain.mid_configuration())
    target[0, 3] += 10.0
    a, b = IKSolver(chain, **FIXED).solve(target), twin(chain, **FIXED).solve(target)
    assert not a.success and a.reason == b.reason
    np.testing.assert_allclose(b.joints, a.joints, atol=1e-9)


def test_the_interpreted_clock_runs_slow_only_inside_an_interpreted_call():
    """Inside a call the kernels' clock advances SLOWDOWN times slower than the wall clock; outside, with it."""
    clock = interpreted.twin_module('ik_solver.core.clock').monotonic
    outside = clock() - time.monotonic()
    assert abs(outside) < 1e-3

    def span():
        t0, c0 = time.monotonic(), clock()
        time.sleep(0.2)
        return time.monotonic() - t0, clock() - c0
    wall, seen = interpreted.dilated(span, time.monotonic())()
    assert wall >= 0.2 and seen == pytest.approx(wall / interpreted.SLOWDOWN, rel=0.2)
