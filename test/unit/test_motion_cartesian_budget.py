"""Cartesian paths are bounded in work: a time budget for the whole path, and huge steps still take a step.

A stand-in solver (every pose solvable, each solve costing 10 ms of an injected clock) makes the truth
countable: a budget of B seconds buys B / 10 ms solves, then the path stops with 'timeout'.  Its answers
do not follow the line, so the paths here go without the precision check.
"""
from types import SimpleNamespace

from ik_solver.motion.cartesian import cartesian_path
import numpy as np
import pytest

IK7_HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class CountingSolver:
    """Solves every pose at once, its answer the seed + 1 mrad, costing ``cost`` s of ``clock`` per solve."""

    def __init__(self, chain, clock, cost=0.01, timeout=0.05):
        self.chain, self.clock, self.cost = chain, clock, cost
        self.options = SimpleNamespace(timeout=timeout)
        self.timeouts = []

    def solve(self, T, seed, jump_threshold=np.inf, **overrides):
        self.timeouts.append(overrides.get('timeout', self.options.timeout))
        self.clock.now += min(self.cost, self.timeouts[-1])
        return SimpleNamespace(success=True, joints=np.asarray(seed) + 1e-3, reason='success', message='')


def _line(ik7, length=0.5):
    T = ik7.fk(IK7_HOME)
    T[:3, 3] += [0.0, length, 0.0]
    return [T]


def test_a_path_stops_when_its_time_budget_is_spent(ik7):
    """2,001 steps in mode closest took 36 s on the node's one worker: a budget stops the path."""
    clock = Clock()
    solver = CountingSolver(ik7, clock)
    path = cartesian_path(solver, IK7_HOME, _line(ik7), 0.5 / 2000, budget=1.0, clock=clock, precision=None)
    assert path.reason == 'timeout' and 'whole time budget of 1 s' in path.message
    assert len(path.joints) - 1 == 100 and path.fraction == pytest.approx(100 / 2000)
    assert clock.now - 100.0 == pytest.approx(1.0)


def test_the_last_solve_gets_only_what_is_left_of_the_budget(ik7):
    clock = Clock()
    solver = CountingSolver(ik7, clock, cost=0.04)
    path = cartesian_path(solver, IK7_HOME, _line(ik7), 0.01, budget=0.1, clock=clock, precision=None)
    assert path.reason == 'timeout' and len(path.joints) - 1 == 3
    np.testing.assert_allclose(solver.timeouts, [0.05, 0.05, 0.02])   # 100 ms: 40 + 40 + the 20 ms left
    assert clock.now - 100.0 == pytest.approx(0.1)


def test_without_a_budget_every_step_is_solved(ik7):
    clock = Clock()
    path = cartesian_path(CountingSolver(ik7, clock), IK7_HOME, _line(ik7), 0.01, clock=clock, precision=None)
    assert path.reason == 'success' and len(path.joints) - 1 == 50


def test_a_step_longer_than_the_path_is_one_step(ik7):
    """max_step 1e300 answered success with no step at all (the start alone, nothing to execute)."""
    path = cartesian_path(CountingSolver(ik7, Clock()), IK7_HOME, _line(ik7), 1e300, precision=None)
    assert path.reason == 'success' and len(path.joints) == 2
    same = cartesian_path(CountingSolver(ik7, Clock()), IK7_HOME, [ik7.fk(IK7_HOME)], 1e300, precision=None)
    assert len(same.joints) == 1   # a waypoint where the tip already is needs no step
