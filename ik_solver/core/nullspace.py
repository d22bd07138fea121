"""Secondary goals spent in a redundant arm's nullspace, after the primary task has converged.

They act only on a pose that already meets the tolerance, by bounded steps
(at most ``NS_MAX_STEP`` per iteration) in the nullspace of the task
Jacobian; the primary task re-converges between steps and the solver keeps the
last pose that met the tolerance.  So no weight, gain or far pole can stop the
tip from converging: the secondary goals only choose among solutions.

Gradient goals, z = -gain * sum_k w_k grad H_k / sum_k w_k (weights are relative,
``gain`` is the step scale; gain 1 is a Newton step for the posture goal):

* posture: H = 1/2 |q - q_pref|^2, a comfortable pose (q_pref defaults to mid-limits).
* limits: H = 1/4 sum ((q - mid) / half_range)^4, flat in the middle, steep near a limit.
* manipulability: H = -sqrt(det(J J^T)) (Yoshikawa), away from singularities; its
  gradient is analytic, from the kinematic Hessian (``kinematics.jacobian_derivatives``).

The pole goal is a second task of lower priority (task-priority inverse
kinematics): the elbow point moves toward the pole by a damped least-squares
step of (J_elbow N), the elbow's motion that leaves the hand still.  That
step only bends the elbow along its swivel circle and cannot carry it over to
the other half, so the side is chosen by the search: a solution counts only
when its elbow lies on the pole's side of the reference plane (``pole_side``:
the plane through the first joint's axis and the tip), and random restarts go
on until one does or the timeout ends; then the solve succeeds with the best
solution and says ``pole_side_unreachable`` in its message.  Restarts start
on the pole's side, and an attempt that converges on the other side ends
there (its nullspace steps would not bring the elbow across): a solve costs
about half the attempts that it would otherwise.
"""
from dataclasses import dataclass
import numbers

from numba import njit
import numpy as np

from . import kinematics as kin
from .kernel_data import Frames, GoalData, Model, Task
from .methods import nullspace_projector, solve_spd

#: Largest joint change of one nullspace step (rad or m), and the size below which the goals count as settled.
NS_MAX_STEP = 0.1
NS_SETTLED = 1e-5
#: Damping of the pole task's least-squares step (m).
POLE_DAMPING = 0.05
#: A pole closer than this to the reference plane (m) asks for the half toward it, not a side of the plane;
#: sin of the angle below which the first joint's axis and the tip count as aligned (no reference plane).
SIDE_PLANE = 1e-3
SIDE_PARALLEL = 1e-6
#: Input bounds: weights and gain up to this, a pole within this distance of the base (m).
MAX_WEIGHT = 1e6
MAX_POLE_DISTANCE = 1e4
MAX_NS_ITERATIONS = 100000
GOAL_NAMES = ('posture', 'limits', 'manipulability', 'pole')


def _real(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f'nullspace.{name} must be a number, got {type(value).__name__} {value!r}')
    if not np.isfinite(value) or not low <= value <= high:
        raise ValueError(f'nullspace.{name} must be finite and within [{low:g}, {high:g}], got {value}')
    return float(value)


@dataclass
class NullspaceGoals:
    """Weights of the secondary goals (0 disables one) and their data.

    posture: q_pref defaults to the middle of the limits.  pole_link names the
    elbow link; pole_target is a point in the base frame.  ``iterations`` bounds
    the nullspace steps per solution, ``gain`` scales them.
    """

    posture: float = 0.0
    limits: float = 0.0
    manipulability: float = 0.0
    pole: float = 0.0
    q_pref: object = None
    pole_link: str = None
    pole_target: object = None
    gain: float = 1.0
    iterations: int = 30

    @property
    def active(self):
        return any(w > 0 for w in (self.posture, self.limits, self.manipulability, self.pole))

    def validate(self, chain):
        """Raise ValueError for bad goals; return (weights, q_pref, pole, elbow index, elbow offset)."""
        weights = np.array([_real(name, getattr(self, name), 0.0, MAX_WEIGHT) for name in GOAL_NAMES])
        _real('gain', self.gain, 1e-9, MAX_WEIGHT)
        if isinstance(self.iterations, bool) or not isinstance(self.iterations, numbers.Integral) \
                or not 0 <= self.iterations <= MAX_NS_ITERATIONS:
            raise ValueError(f'nullspace.iterations must be an integer in [0, {MAX_NS_ITERATIONS}], '
                             f'got {self.iterations!r}')
        q_pref = chain.mid_configuration() if self.q_pref is None else _vector('q_pref', self.q_pref, chain.n)
        pole = np.zeros(3)
        index, offset = -1, np.zeros(3)
        if self.pole > 0:
            if self.pole_link is None or self.pole_target is None:
                raise ValueError('a pole weight needs pole_link and pole_target')
            pole = _vector('pole_target', self.pole_target, 3)
            if np.abs(pole).max() > MAX_POLE_DISTANCE or np.linalg.norm(pole) > MAX_POLE_DISTANCE:
                raise ValueError(f'pole_target {pole.tolist()} is more than {MAX_POLE_DISTANCE:g} m from the base')
            if not isinstance(self.pole_link, str) or self.pole_link not in chain.link_frames:
                raise ValueError(f"pole_link '{self.pole_link}' is not a link of the chain")
            index, _, offset = chain.link_frames[self.pole_link]
            if index < 0:
                raise ValueError(f"pole_link '{self.pole_link}' does not move with any joint")
        return weights, q_pref, pole, index, np.ascontiguousarray(offset, dtype=float)


def _vector(name, value, size):
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f'{name} must be {size} numbers: {exc}') from None
    if array.shape != (size,):
        raise ValueError(f'{name} must have shape ({size},), got {array.shape}')
    if not np.all(np.isfinite(array)):
        raise ValueError(f'{name} contains NaN or inf: {array.tolist()}')
    return array


@njit(cache=True)
def manipulability(J):
    """Yoshikawa's measure sqrt(det(J J^T)); zero at a singularity.  Pass only the task's rows."""
    d = np.linalg.det(J @ J.T)
    return np.sqrt(d) if d > 0.0 else 0.0


@njit(cache=True)
def _active_gram(Jw):
    """J J^T with 1 on the diagonal of all-zero (masked) rows: the determinant covers the task rows only."""
    A = Jw @ Jw.T
    for r in range(A.shape[0]):
        if A[r, r] == 0.0:
            A[r, r] = 1.0
    return A


@njit(cache=True)
def weighted_manipulability(Jw):
    """Yoshikawa's measure of a weighted task Jacobian whose masked rows are zero."""
    d = np.linalg.det(_active_gram(Jw))
    return np.sqrt(d) if d > 0.0 else 0.0


@njit(cache=True)
def manipulability_gradient(Jw, Hw):
    """Gradient dm/dq of m = sqrt(det(J J^T)), from the Jacobian's derivatives Hw[k] = dJ/dq_k (same rows as Jw).

    d m / d q_k = m tr((J J^T)^-1 dJ_k J^T) (Jacobi's formula; the two halves of
    d(J J^T) have the same trace).
    """
    n = Jw.shape[1]
    A = _active_gram(Jw)
    m = np.sqrt(max(np.linalg.det(A), 0.0))
    g = np.zeros(n)
    if m == 0.0:
        return g
    M = Jw.T @ np.linalg.inv(A)   # n x 6
    for k in range(n):
        s = 0.0
        for r in range(Jw.shape[0]):
            for c in range(n):
                s += Hw[k, r, c] * M[c, r]
        g[k] = m * s
    return g


@njit(cache=True)
def _unit_normal(a, b):
    """Return the unit vector along a x b, or zeros when a and b are (nearly) parallel."""
    n = np.cross(a, b)
    length = np.sqrt(n @ n)
    return n / length if length > SIDE_PARALLEL * np.sqrt((a @ a) * (b @ b)) else np.zeros(3)


@njit(cache=True)
def pole_side(frames, goals, tip):
    """Signed distance (m) of the elbow point from the reference plane, positive on the pole's side.

    The reference plane contains the first joint's axis and ``tip`` (the tip's
    position, or the target's for a start not yet converged): for an
    arm whose shoulder lies on that axis it is the plane through the
    shoulder-wrist line and the base's vertical, where the swivel (arm) angle
    is zero, so the pole picks left or right of it.  A pole within
    ``SIDE_PLANE`` of that plane (above, below or ahead of the arm) picks
    instead the half of the swivel circle toward it: the elbow's and the
    pole's components perpendicular to the line from the first joint to the
    tip must point the same way.  Returns 0 when the side is undefined (tip on
    the first axis, or the elbow on the dividing plane).

    Args:
        frames: ``kernel_data.Frames`` of the configuration.
        goals: ``kernel_data.GoalData`` (elbow, elbow_offset, pole).
        tip: the point (base frame, m) the reference plane passes through.
    """
    s = frames.p[0]
    line = tip - s
    e = frames.p[goals.elbow] + frames.R[goals.elbow] @ goals.elbow_offset - s
    d = goals.pole - s
    normal = _unit_normal(frames.a[0], line)
    if abs(d @ normal) > SIDE_PLANE:
        return (e @ normal) * np.sign(d @ normal)
    length = np.sqrt(line @ line)
    if length < 1e-12:
        return 0.0
    u = line / length
    e = e - (e @ u) * u
    d = d - (d @ u) * u
    length = np.sqrt(d @ d)
    return (e @ d) / length if length > 1e-12 else 0.0


@njit(cache=True)
def _pole_step(q, model, goals, N, frames):
    """Damped least-squares step of the elbow toward the pole, within the nullspace N."""
    n_var = q.shape[0]
    elbow = goals.elbow
    point = frames.p[elbow] + frames.R[elbow] @ goals.elbow_offset
    Je = np.empty((6, n_var))
    kin.point_jacobian(frames.p, frames.a, model.kind, model.var, model.mult, point, elbow, Je)
    M = Je[:3] @ N
    A = M @ M.T
    for i in range(3):
        A[i, i] += POLE_DAMPING * POLE_DAMPING
    return M.T @ solve_spd(A, goals.pole - point)


@njit(cache=True)
def goal_step(q, model, goals, task, Jw, Rt, frames):
    """One bounded nullspace step of all goals at a converged pose.

    Args:
        q: the converged joints.
        model, goals, task: ``kernel_data.Model``, ``GoalData`` and ``Task``.
        Jw: the weighted task Jacobian at q (rows as ``kinematics.goal_rows``).
        Rt: the target rotation (rows in the target frame when ``task.target_frame``).
        frames: ``kernel_data.Frames`` at q.

    Returns:
        The step dq (rad or m), at most NS_MAX_STEP per joint.
    """
    n_var = q.shape[0]
    weights = goals.weights
    total = weights.sum()
    if not total > 0.0:   # no goal: no step (the weights below are relative to their sum)
        return np.zeros(n_var)
    N = nullspace_projector(Jw, goals.cutoff)
    lower, upper, q_pref = model.lower, model.upper, goals.q_pref
    z = np.zeros(n_var)
    for i in range(n_var):
        if weights[0] > 0.0:
            z[i] -= weights[0] * (q[i] - q_pref[i])
        if weights[1] > 0.0 and np.isfinite(lower[i]) and upper[i] > lower[i]:
            half = 0.5 * (upper[i] - lower[i])
            x = (q[i] - 0.5 * (upper[i] + lower[i])) / half
            z[i] -= weights[1] * x * x * x / half
    if weights[2] > 0.0:
        H = kin.jacobian_derivatives(frames.p, frames.a, model.kind, model.var, model.mult, n_var)
        Hw = np.empty_like(H)
        for k in range(n_var):
            Hw[k] = kin.goal_rows(H[k], Rt, task.sw, task.target_frame)
        z += weights[2] * manipulability_gradient(Jw, Hw)
    dq = N @ (goals.gain / total * z)
    if weights[3] > 0.0 and goals.elbow >= 0:
        dq += weights[3] / total * _pole_step(q, model, goals, N, frames)
    largest = np.abs(dq).max()
    if largest > NS_MAX_STEP:
        dq *= NS_MAX_STEP / largest
    return dq


@njit(cache=True)
def secondary_step(q, chain, lower, upper, weights, gain, q_pref, pole, elbow, elbow_offset, Jw, Rt, sw,
                   target_frame, cutoff, R_out, p_out, a_out):
    """``goal_step`` for callers that hold the goals as separate arrays (``Chain.kin_args`` as ``chain``)."""
    model = Model(chain[0], chain[1], chain[2], chain[3], chain[4], chain[5], chain[6], lower, upper)
    goals = GoalData(weights, gain, 1, q_pref, pole, elbow, elbow_offset, cutoff)
    task = Task(sw, sw, target_frame, False, True)
    return goal_step(q, model, goals, task, Jw, Rt, Frames(R_out, p_out, a_out))
