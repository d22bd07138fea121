"""More clearance for a solution of a redundant arm: move in the task's nullspace, away from the nearest contact.

A solution in the clear may still graze an obstacle.  ``improve_clearance``
follows the gradient of the nearest pair's distance (CollisionModel.distance_gradient:
witness points and point Jacobians) in the nullspace of the tip Jacobian and pulls the tip back onto
the target after each step, so the pose is kept while the arm moves away from
the obstacle or from itself.  It runs in Python after the solver (the
solver's own nullspace goals are compiled kernels).  This is the
optional clearance goal for redundant arms; use it on a solution::

    model = CollisionModel(urdf, 'base_link', 'tool0', srdf=srdf)
    result = IKSolver(model.chain, collision=model).solve(target, seed)
    if result.success:
        q = improve_clearance(model, result.joints, goal=0.05)   # same tip pose, >= 5 cm if reachable

Not wired into the solver or the node yet: a caller opts in as above.
"""
import numpy as np

from ..core.transforms import rotation_vector

#: Largest joint change (rad or m) of one clearance step; pose corrections per step; pose tolerance kept (m, rad).
MAX_STEP = 0.05
CORRECTIONS = 10
POSE_TOLERANCE = 1e-6


def improve_clearance(model, q, steps=20, goal=np.inf, max_step=MAX_STEP):
    """Return a configuration with the same tip pose as ``q`` and a larger distance to the nearest contact.

    Up to ``steps`` nullspace steps (each moving a joint by at most ``max_step``), stopping once the distance
    reaches ``goal`` (m) or stops growing.  Joint limits and the tip pose (to 1e-6) are kept; ``q`` itself is
    returned when nothing better is found.  For redundant chains (a 6-DoF arm has no nullspace for a full pose).
    """
    chain = model.chain
    q = np.array(q, dtype=float)
    target = chain.fk(q)
    distance, gradient, _ = model.distance_gradient(q)
    for _ in range(steps):
        if distance >= goal:
            break
        J = chain.jacobian(q)
        step = (np.eye(len(q)) - np.linalg.pinv(J) @ J) @ gradient
        if np.max(np.abs(step)) < 1e-9:
            break
        candidate = _on_target(chain, np.clip(q + step * (max_step / np.max(np.abs(step))), chain.lower, chain.upper),
                               target)
        if candidate is None:
            break
        new_distance, new_gradient, _ = model.distance_gradient(candidate)
        if new_distance <= distance:
            break
        q, distance, gradient = candidate, new_distance, new_gradient
    return q


def _on_target(chain, q, target):
    """Pull the tip of ``q`` back onto ``target`` by Newton steps; None if it does not get within tolerance."""
    for _ in range(CORRECTIONS):
        T = chain.fk(q)
        error = np.concatenate([target[:3, 3] - T[:3, 3], rotation_vector(target[:3, :3] @ T[:3, :3].T)])
        if np.max(np.abs(error)) < POSE_TOLERANCE:
            return q
        q = np.clip(q + np.linalg.pinv(chain.jacobian(q)) @ error, chain.lower, chain.upper)
    return None
