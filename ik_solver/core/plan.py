"""A plan: solver options turned, once per option set, into the kernels' named data (``kernel_data``)."""
from dataclasses import dataclass, replace

import numpy as np

from . import kinematics as kin
from .kernel_data import GoalData, kernel_variant, Model, pack, Params, StepGains, Task, with_float
from .methods import method_id
from .options import check_number, MODE_MANIPULABILITY, MODES, SolverOptions


@dataclass(frozen=True)
class Plan:
    """Options turned into kernel arguments."""

    options: SolverOptions
    model: Model
    params: Params
    kernel_args: tuple   # (model, params), as results keep them
    packed: tuple        # ``kernel_data.pack(model, params)``, for the single-solve and batch kernels
    variant: tuple       # the kernel variant (``kernel_variant``): the code this plan runs


def chain_model(chain):
    """Return the ``Model`` of a chain: its kinematic arrays and joint limits, contiguous."""
    arrays = (np.ascontiguousarray(a) for a in chain.kin_args)
    return Model(*arrays, np.ascontiguousarray(chain.lower, dtype=float),
                 np.ascontiguousarray(chain.upper, dtype=float))


def chain_reach(chain):
    """Upper bound on the tip's distance from the first joint (m): link lengths plus prismatic travel."""
    reach = np.linalg.norm(chain.origin_p[1:], axis=1).sum()
    for i in np.flatnonzero(chain.kind == kin.PRISMATIC):
        j = chain.var[i]
        travel = max(abs(chain.lower[j]), abs(chain.upper[j])) if np.isfinite(chain.lower[j]) else np.inf
        reach += abs(chain.mult[i]) * travel + abs(chain.offset[i])
    return reach


def make_plan(chain, model, reach, opts, collision_yield=False):
    """Validate options and turn them into a ``Plan``.

    Args:
        chain: the ``Chain`` (for the nullspace goals' links and the first joint).
        model: its ``chain_model``.
        reach: its ``chain_reach`` (m).
        opts: the ``SolverOptions``.
        collision_yield: hand converged candidates back for a collision check.
    """
    opts.validate()
    weights, q_pref, pole, elbow, elbow_offset = opts.nullspace.validate(chain)
    w = opts.task_weights()
    bounds = opts.task_bounds()
    iterations = opts.nullspace.iterations
    goal_weights = weights if iterations > 0 else np.zeros(4)
    elbow = int(elbow) if weights[3] > 0 else -1
    gains = StepGains(float(opts.alpha), float(opts.damping), float(opts.damping_max), float(opts.epsilon),
                      float(opts.svd_cutoff), float(opts.lm_bias))
    goals = GoalData(np.ascontiguousarray(goal_weights, dtype=float), float(opts.nullspace.gain), int(iterations),
                     np.ascontiguousarray(q_pref, dtype=float), np.ascontiguousarray(pole, dtype=float), elbow,
                     np.ascontiguousarray(elbow_offset, dtype=float), float(opts.svd_cutoff))
    target_frame = opts.weights_frame == 'target'
    task = Task(np.sqrt(w), np.ascontiguousarray(bounds, dtype=float), int(target_frame), int(opts.bounds is not None),
                int(target_frame or np.any(w != 1.0)))
    mode = MODES.index(opts.mode)
    plain = (opts.mode == 'first' and opts.jump_threshold == np.inf and elbow < 0 and not np.any(goal_weights > 0)
             and not collision_yield)
    params = Params(gains, goals, task, float(opts.position_tolerance), float(opts.orientation_tolerance),
                    float(opts.max_step), int(opts.max_iterations), int(opts.patience), mode,
                    float(opts.jump_threshold), _reach_limit(reach, w, bounds, opts),
                    np.ascontiguousarray(chain.origin_p[0], dtype=float), int(opts.max_attempts), float(opts.timeout),
                    int(opts.random_seed), method_id(opts.method), int(collision_yield), int(plain))
    goal_driven = elbow >= 0 or mode == MODE_MANIPULABILITY or np.any(goal_weights > 0)
    return Plan(opts, model, params, (model, params), pack(model, params), kernel_variant(params.method, goal_driven))


def retimed(plan, timeout):
    """Return ``plan`` with another timeout [s], checked as an option, without planning again.

    A service call's timeout is what is left of its budget, different on every call: a plan per call
    would validate every option and derive the goals and task again for one number.
    """
    check_number('timeout', timeout)
    if timeout == plan.options.timeout:
        return plan
    params = plan.params._replace(timeout=float(timeout))
    return Plan(replace(plan.options, timeout=timeout), plan.model, params, (plan.model, params),
                with_float(plan.packed, plan.model, 'timeout', params.timeout), plan.variant)


def _reach_limit(reach, w, bounds, opts):
    """Distance from the first joint beyond which the target is certainly out of reach (inf: no check).

    Only when every position axis is constrained: a free axis (weight 0 or
    infinite bound) can make a far target reachable.
    """
    if np.any(w[:3] == 0) or not np.all(np.isfinite(bounds[:3])):
        return np.inf
    return float(reach + opts.position_tolerance + float(np.linalg.norm(bounds[:3])))
