"""The data the solve kernels share, by name: a constant model and parameters, and per-solve scratch.

In the manner of Pinocchio's Model and Data, what stays constant is apart from
what a solve writes:

* ``Model``: the chain's arrays (``kinematics``) and joint limits; one per solver.
* ``Params``: the options of a plan as the kernels read them, grouped as
  ``StepGains`` (the step methods), ``GoalData`` (the nullspace goals) and
  ``Task`` (weights, bounds and their frame); one per option set.
* ``Target``, ``Frames``, ``Scratch``, ``Work``: one solve's goal pose and work arrays.
* ``Attempt``: what one attempt returns; ``REPORT``: the record a search fills.

All are numba namedtuples or records, so a field is read by name in compiled
code at the cost of an index, with one catch: a read of an array field, and a
namedtuple handed to a function (inlined or not), count a reference per array
(an atomic increment now, a decrement later).  So the iteration loop
(``attempt.attempt``) reads its arrays into locals once, before it starts, and
hands its helpers arrays, not namedtuples.  One exception, for speed: every
array handed from Python to a kernel costs dispatch time (a nested namedtuple
of twenty arrays costs about ten times a whole warm solve), so the single-solve kernel
takes a plan packed into three arrays, ``pack`` here, unpacked in compiled code
by ``unpack`` next to it; the order of the packed fields is written in this
file only, and a test checks that ``unpack(pack(model, params))`` gives every
field back.
"""
from collections import namedtuple

from numba import njit
import numpy as np

from .methods import LM

Model = namedtuple('Model', ['origin_R', 'origin_p', 'axis', 'kind', 'var', 'mult', 'offset', 'lower', 'upper'])
Model.__doc__ = 'The chain (see ``kinematics``) and its joint limits (rad or m; -inf/+inf: continuous).'

StepGains = namedtuple('StepGains', ['alpha', 'damping', 'damping_max', 'epsilon', 'cutoff', 'lm_bias'])
StepGains.__doc__ = "The step methods' parameters (see ``methods``): SolverOptions' of the same names."

GoalData = namedtuple('GoalData', ['weights', 'gain', 'iterations', 'q_pref', 'pole', 'elbow', 'elbow_offset',
                                   'cutoff'])
GoalData.__doc__ = ('The nullspace goals (see ``nullspace``): weights (posture, limits, manipulability, pole; all 0 '
                    'without iterations), step gain, steps per solution, preferred joints, pole point (base frame, m), '
                    'elbow joint index (-1: no pole), elbow point in its frame (m), SVD cutoff of the projector.')

Task = namedtuple('Task', ['sw', 'bounds', 'target_frame', 'has_bounds', 'weigh_rows'])
Task.__doc__ = ('What the error measures: square roots of the 6 weights, 6 bounds (0: none), whether weights and '
                'bounds are in the target frame, whether bounds apply, and whether Jacobian rows need weighting.')

Params = namedtuple('Params', [
    'gains', 'goals', 'task',
    'tol_pos', 'tol_rot', 'max_step', 'max_iter', 'patience',          # one attempt
    'mode', 'jump', 'reach', 'center', 'max_attempts', 'timeout',       # the search
    'seed', 'method', 'collision_yield', 'plain'])
Params.__doc__ = ("A plan's options for the kernels: the groups above, tolerances (m, rad), largest step, iterations "
                  'and patience of an attempt; mode id, jump threshold, reach limit (m) from ``center`` (the first '
                  'joint), attempts (0: unbounded), timeout (s), random seed, method id, whether to hand converged '
                  'candidates back for a collision check, and whether the plan is plain (``search``).')

Target = namedtuple('Target', ['R', 'p'])
Target.__doc__ = "One solve's target rotation (3 x 3) and position (3), contiguous."

Frames = namedtuple('Frames', ['R', 'p', 'a'])
Frames.__doc__ = '``kinematics.frames`` output: rotations and positions of the joint frames and tip, joint axes.'

Scratch = namedtuple('Scratch', ['frames', 'J', 'e', 'A', 'dq'])
Scratch.__doc__ = 'Work arrays of an iteration: frames, task Jacobian (6 x n_var), error (6), step matrix and step.'

Search = namedtuple('Search', ['seed', 'low', 'high', 'target', 'deadline', 'rng', 'work'])
Search.__doc__ = ("One solve's search: the seed clamped into the limits, the bounds random starts are drawn in, the "
                  '``Target``, the deadline (``clock.monotonic`` s), the generator state and the ``Work`` rows.')

Work = namedtuple('Work', ['q', 'best', 'candidate', 'chosen', 'evaluated'])
Work.__doc__ = ('Joint vectors of a search: current q, best failed attempt, candidate for the collision check, chosen '
                "solution, and the last joints whose errors were evaluated (the report's eval_* fields).")

Attempt = namedtuple('Attempt', ['status', 'position', 'rotation', 'iterations', 'sigma', 'task', 'true_position',
                                 'true_rotation', 'evaluated'])
Attempt.__doc__ = ('What one attempt ended with: status, masked position and rotation error, iterations, sigma_min '
                   '(when stalled), task error, true errors, and whether the errors belong to its final q.')

#: The search's report, one record per solve (a batch has one per item).
REPORT = np.dtype([
    ('attempts', np.int64), ('iterations', np.int64),
    ('best_error', np.float64), ('best_sigma', np.float64), ('best_status', np.int64),   # best failed attempt
    ('chosen', np.bool_), ('score', np.float64), ('pole_side', np.bool_), ('jump', np.float64),   # chosen solution
    ('position', np.float64), ('rotation', np.float64), ('task', np.float64), ('reason', np.int64),   # the result
    ('distance', np.float64),   # of the target from the first joint, when beyond the reach limit (else 0)
    ('evaluated', np.bool_), ('eval_position', np.float64), ('eval_rotation', np.float64), ('eval_task', np.float64),
], align=True)


# Kernel variants.  numba compiles a kernel once per argument *type*, not per value: a plan hands the
# kernels a tuple of zeros whose length encodes whether its method is lm (else the other four, chosen at
# run time) and whether it has ranking or nullspace goals.  So the default solve compiles neither the
# nullspace goals nor the SVD-based methods (about two thirds of the compile time), while all variants
# together stay four kernels (a node or a warm-up that uses everything compiles little more than before).
def kernel_variant(method, goals):
    """Return the variant tuple of a plan: one zero, one more unless lm, two more with goals."""
    return (0,) * (1 + (method != LM) + 2 * bool(goals))


def variant_of(length):
    """Return (lm only?, goals?) of a variant tuple's length."""
    return (length - 1) % 2 == 0, length > 2


# The packed plan: integers first (as int64 bit patterns in the float vector), then floats, in these orders.
INT_FIELDS = ('max_iter', 'patience', 'goals.iterations', 'goals.elbow', 'task.target_frame', 'task.has_bounds',
              'task.weigh_rows', 'mode', 'max_attempts', 'seed', 'method', 'collision_yield', 'plain')
FLOAT_FIELDS = ('gains.alpha', 'gains.damping', 'gains.damping_max', 'gains.epsilon', 'gains.cutoff', 'gains.lm_bias',
                'goals.gain', 'goals.cutoff', 'tol_pos', 'tol_rot', 'max_step', 'jump', 'reach', 'timeout')
#: Arrays after the scalars: (field, length; 0 for the joint count n_var).
ARRAY_FIELDS = (('task.sw', 6), ('task.bounds', 6), ('goals.weights', 4), ('goals.pole', 3),
                ('goals.elbow_offset', 3), ('center', 3), ('goals.q_pref', 0))
N_INTS = len(INT_FIELDS)


def _array_starts():
    starts = [len(FLOAT_FIELDS)]
    for _, length in ARRAY_FIELDS[:-1]:
        starts.append(starts[-1] + length)
    return starts


_SW, _BOUNDS, _WEIGHTS, _POLE, _ELBOW_OFFSET, _CENTER, _Q_PREF = _array_starts()


def _field(params, path):
    value = params
    for name in path.split('.'):
        value = getattr(value, name)
    return value


def pack(model, params):
    """Return (vector, origin_R, rows): ``unpack``'s three arrays for the single-solve kernel.

    vector: the joint count n, the int arrays kind and var, then INT_FIELDS (int64 bit patterns), mult,
    offset, lower, upper, FLOAT_FIELDS and ARRAY_FIELDS; rows: origin_p's rows, then axis's.  Slices of
    these are free in numba, reshapes are not.
    """
    ints = np.array([*model.kind, *model.var, *(_field(params, f) for f in INT_FIELDS)], dtype=np.int64)
    floats = [model.mult, model.offset, model.lower, model.upper, [_field(params, f) for f in FLOAT_FIELDS]]
    floats += [_field(params, f) for f, _ in ARRAY_FIELDS]
    vector = np.concatenate([[float(len(model.kind))], ints.view(np.float64), *floats]).astype(np.float64)
    return vector, np.ascontiguousarray(model.origin_R), np.concatenate([model.origin_p, model.axis])


def with_float(packed, model, field, value):
    """Return ``pack``'s arrays with one of FLOAT_FIELDS set to ``value``: the vector copied, the rest shared.

    A service call's timeout differs on every call; packing every field again for one number took tens of
    microseconds of Python.

    Args:
        packed: ``pack(model, params)``.
        model: the Model it was packed from (its joint counts place the field).
        field: a name in FLOAT_FIELDS.
        value: the new value.

    Returns:
        (vector, origin_R, rows) as ``pack`` returns them.
    """
    vector, origin_R, rows = packed
    n, n_var = len(model.kind), len(model.lower)
    vector = vector.copy()
    vector[1 + 2 * n + N_INTS + 2 * n + 2 * n_var + FLOAT_FIELDS.index(field)] = value
    return vector, origin_R, rows


@njit(cache=True, inline='always')
def unpack(vector, origin_R, rows, n_var):
    """Return (Model, Params) viewing ``pack``'s arrays (n_var: the number of joint variables)."""
    n = int(vector[0])
    k = 1 + 2 * n + N_INTS
    i = vector[1:k].view(np.int64)
    f = vector[k:]
    model = Model(origin_R, rows[:n + 1], rows[n + 1:], i[:n], i[n:2 * n], f[:n], f[n:2 * n],
                  f[2 * n:2 * n + n_var], f[2 * n + n_var:2 * n + 2 * n_var])
    i = i[2 * n:]
    s = f[2 * n + 2 * n_var:]   # FLOAT_FIELDS, then ARRAY_FIELDS
    gains = StepGains(s[0], s[1], s[2], s[3], s[4], s[5])
    goals = GoalData(s[_WEIGHTS:_WEIGHTS + 4], s[6], i[2], s[_Q_PREF:_Q_PREF + n_var], s[_POLE:_POLE + 3], i[3],
                     s[_ELBOW_OFFSET:_ELBOW_OFFSET + 3], s[7])
    task = Task(s[_SW:_SW + 6], s[_BOUNDS:_BOUNDS + 6], i[4], i[5], i[6])
    params = Params(gains, goals, task, s[8], s[9], s[10], i[0], i[1], i[7], s[11], s[12], s[_CENTER:_CENTER + 3],
                    i[8], s[13], i[9], i[10], i[11], i[12])
    return model, params
