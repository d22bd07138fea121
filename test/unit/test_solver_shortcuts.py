"""The solver's shortcuts give what the long way gives.

The search reports the errors of the joints it returns from its own last
kinematics pass when those joints are exactly the ones it evaluated (no second
pass), and its Levenberg-Marquardt step and task rows are computed in place.
Each is checked here against the long way: a fresh forward kinematics pass of
the returned joints, and the allocating functions.
"""
from ik_solver.core import kinematics as kin
from ik_solver.core.clock import monotonic
from ik_solver.core.kernel_data import REPORT, StepGains
from ik_solver.core.methods import LM, lm_step, lm_step_into, METHOD_NAMES, step, step_into
from ik_solver.core.reasons import Reason
from ik_solver.core.search import new_search, SEED_OK, solve_one
from ik_solver.core.solver import IKSolver
from ik_solver.core.transforms import make_pose, rotation_error
import numpy as np
import pytest


def fresh_errors(chain, q, target, weights=None):
    """(position, orientation, task) error of q from a fresh forward kinematics pass; task for base-frame weights."""
    F = chain.fk(q)
    d = target[:3, 3] - F[:3, 3]
    w = rotation_error(np.ascontiguousarray(target[:3, :3]), np.ascontiguousarray(F[:3, :3]))
    weights = np.ones(6) if weights is None else np.asarray(weights, dtype=float)
    task = np.sqrt(np.sum(weights * np.concatenate([d, w]) ** 2))
    return np.linalg.norm(d), np.linalg.norm(w), task


def assert_honest(chain, result, target, weights=None):
    position, orientation, task = fresh_errors(chain, result.joints, target, weights)
    assert result.position_error == pytest.approx(position, abs=1e-12)
    assert result.orientation_error == pytest.approx(orientation, abs=1e-12)
    assert result.task_error == pytest.approx(task, abs=1e-12)


def tracking_targets(chain, rng, count=40):
    """Return a seed and a line of targets 1 mm apart from its pose, at its orientation."""
    q = chain.mid_configuration() + rng.uniform(-0.3, 0.3, chain.n)
    T0 = chain.fk(q)
    return q, [make_pose(T0[:3, 3] + [0.001 * k, 0.0005 * k, 0.0], T0[:3, :3]) for k in range(1, count + 1)]


@pytest.mark.parametrize('robot', ['ik7', 'ik6'])
def test_tracking_results_equal_a_fresh_pass(robot, request, rng):
    chain = request.getfixturevalue(robot)
    solver = IKSolver(chain)
    q, targets = tracking_targets(chain, rng)
    iterations = []
    for T in targets:
        result = solver.solve(T, q)
        assert result.success
        assert_honest(chain, result, T)
        iterations.append(result.iterations)
        q = result.joints
    assert 0 < np.median(iterations) <= 3   # warm seeds: a step or two per target


@pytest.mark.parametrize('robot', ['ik7', 'ik6'])
def test_protocol_results_equal_a_fresh_pass(robot, request, rng):
    chain = request.getfixturevalue(robot)
    solver = IKSolver(chain, timeout=0.05)
    for q in chain.random_configuration(rng, 30):
        T = chain.fk(q)
        assert_honest(chain, solver.solve(T), T)


def test_converged_at_the_seed_returns_its_exact_errors(ik7, rng):
    q = ik7.random_configuration(rng)
    T = ik7.fk(q)
    result = IKSolver(ik7).solve(T, q)
    assert result.success and result.iterations == 0
    np.testing.assert_array_equal(result.joints, q)
    assert_honest(ik7, result, T)


def test_wrapped_continuous_joint_gets_a_fresh_pass(ik6, rng):
    q = ik6.random_configuration(rng)
    T = ik6.fk(q)
    seed = q.copy()
    seed[5] += 4 * np.pi + 0.1   # the solution is wrapped by whole turns toward the seed after the search
    result = IKSolver(ik6).solve(T, seed)
    assert result.success and abs(result.joints[5] - seed[5]) <= np.pi
    assert_honest(ik6, result, T)


def test_failures_and_masks_equal_a_fresh_pass(ik7, rng):
    q = ik7.random_configuration(rng)
    T = ik7.fk(q)
    far = make_pose(T[:3, 3] * 10.0, T[:3, :3])
    unreachable = IKSolver(ik7, timeout=0.01).solve(far)
    assert not unreachable.success and unreachable.reason == 'unreachable'
    assert_honest(ik7, unreachable, far)
    short = IKSolver(ik7, timeout=1e-6, max_iterations=3).solve(T)
    assert short.iterations >= 1
    assert_honest(ik7, short, T)
    weights = (1, 1, 1, 0, 0, 0)
    masked = IKSolver(ik7, weights=weights, timeout=0.05).solve(make_pose(T[:3, 3], [1.0, 0.0, 0.0, 0.0]))
    assert masked.success and masked.orientation_error > 1e-3
    assert_honest(ik7, masked, make_pose(T[:3, 3], [1.0, 0.0, 0.0, 0.0]), weights)
    for mode in ('closest', 'manipulability'):
        result = IKSolver(ik7, mode=mode, timeout=0.005).solve(T)
        assert result.success
        assert_honest(ik7, result, T)


def test_a_tracking_solve_reuses_its_last_kinematics_pass(ik7, rng):
    """The shortcut is taken: the returned joints are the ones the search evaluated last."""
    solver = IKSolver(ik7)
    q, targets = tracking_targets(ik7, rng, 1)
    T = targets[0]
    plan = solver._plan
    search = new_search(ik7.n, monotonic() + 1.0)
    report = np.zeros(1, dtype=REPORT)[0]
    q_out = np.empty(ik7.n)
    code = solve_one(plan.variant, T, q, plan.model, plan.params, search, report, q_out)
    assert code == SEED_OK and report['reason'] == Reason.SUCCESS
    assert report['evaluated']
    np.testing.assert_array_equal(q_out, search.work.evaluated)
    position, orientation, task = fresh_errors(ik7, q_out, T)
    assert report['position'] == pytest.approx(position, abs=1e-12)
    assert report['rotation'] == pytest.approx(orientation, abs=1e-12)
    assert report['task'] == pytest.approx(task, abs=1e-12)


def test_in_place_steps_equal_the_allocating_ones(rng):
    gains = StepGains(alpha=0.0, damping=0.05, damping_max=0.05, epsilon=0.05, cutoff=1e-6, lm_bias=1e-5)
    for shape in ((6, 7), (6, 6), (3, 7)):
        J = rng.normal(size=shape)
        e = rng.normal(size=shape[0]) * 0.1
        dq = np.empty(shape[1])
        lm_step_into(J, e, 1e-5, np.empty((shape[1], shape[1])), dq)
        np.testing.assert_array_equal(dq, lm_step(J, e, 1e-5))
        # The step solves the damped normal equations (J^T J + (E + w_bias) I) dq = J^T e.
        A = J.T @ J + (0.5 * e @ e + 1e-5) * np.eye(shape[1])
        np.testing.assert_allclose(A @ dq, J.T @ e, atol=1e-12)
        for method in range(len(METHOD_NAMES)):
            into = np.empty(shape[1])
            step_into(method, J, e, gains, np.empty((shape[1], shape[1])), into)
            np.testing.assert_array_equal(into, step(method, J, e, gains))
    assert METHOD_NAMES[LM] == 'lm'


@pytest.mark.parametrize('target_frame', [False, True])
def test_task_rows_in_place_equal_goal_rows(target_frame, rng):
    J = rng.normal(size=(6, 7))
    Rt = make_pose([0, 0, 0], rng.normal(size=4))[:3, :3].copy()
    sw = np.sqrt(np.array([1.0, 0.5, 0.0, 2.0, 1.0, 0.0]))
    expected = kin.goal_rows(J, Rt, sw, target_frame)
    in_place = J.copy()
    kin.goal_rows_into(in_place, Rt, sw, target_frame, in_place)
    np.testing.assert_array_equal(in_place, expected)
    # Independent: rows rotated into the target frame (R^T per 3-block) if asked, then weighted.
    R = Rt if target_frame else np.eye(3)
    np.testing.assert_allclose(expected, sw[:, None] * np.vstack([R.T @ J[:3], R.T @ J[3:]]), atol=1e-14)


def _kernel_solve(solver, T, seed, plain, deadline=1.0):
    """(q_out, report) of the single-solve kernel with the plan's plain-plan shortcut on or off."""
    plan = solver._plan
    assert plan.params.plain == 1   # the default options make a plain plan
    params = plan.params._replace(plain=int(plain))
    report = np.zeros(1, dtype=REPORT)[0]
    q_out = np.empty(solver.chain.n)
    code = solve_one(plan.variant, np.ascontiguousarray(T), np.ascontiguousarray(seed), plan.model, params,
                     new_search(solver.chain.n, monotonic() + deadline), report, q_out)
    assert code == SEED_OK
    return q_out, report


@pytest.mark.parametrize('robot', ['ik7', 'ik6'])
def test_plain_plan_shortcut_gives_the_general_searchs_result(robot, request, rng):
    """Mode 'first' without extras: attempt 0 concluded in place equals search + conclude, restarts included."""
    chain = request.getfixturevalue(robot)
    solver = IKSolver(chain, max_attempts=6, patience=2)   # impatient: far seeds restart
    cases = []
    q, targets = tracking_targets(chain, rng, 10)
    cases += [(T, q) for T in targets]                                               # warm seeds
    far = chain.random_configuration(rng, 40)
    cases += [(chain.fk(p), s) for p, s in zip(far[:20], far[20:])]                 # restarts
    cases.append((make_pose(chain.fk(q)[:3, 3] * 10.0), q))                          # unreachable: fails
    seed = chain.mid_configuration()
    seed[-1] += 4 * np.pi if not np.isfinite(chain.lower[-1]) else 0.0             # ik6: a continuous joint wraps
    cases.append((chain.fk(q), seed))
    outcomes = set()
    for T, seed in cases:
        q_plain, plain = _kernel_solve(solver, T, seed, True)
        q_general, general = _kernel_solve(solver, T, seed, False)
        np.testing.assert_array_equal(q_plain, q_general)
        for field in ('position', 'rotation', 'task', 'iterations', 'attempts', 'reason', 'chosen', 'pole_side', 'jump',
                      'distance'):
            assert plain[field] == general[field], field
        outcomes.add((int(plain['reason']), plain['attempts'] > 1))
    assert (Reason.SUCCESS, False) in outcomes and (Reason.SUCCESS, True) in outcomes
    assert any(reason != Reason.SUCCESS for reason, _ in outcomes)
