"""Solver options: the tuning of the solve loop, and each numeric option's range in one table (``OPTION_RANGES``).

The table gives, per option, the range ``SolverOptions.validate`` accepts (what
the solver handles) and the narrower range a node offers as a parameter (a
policy: a node's parameters are set by hand, over a network, and a typo such as
a timeout of 3600 s there would hold a request for an hour).  So both checks,
the unit and the description come from one place.
"""
from collections import namedtuple
from dataclasses import dataclass, field, fields
import numbers

import numpy as np

from .methods import method_id
from .nullspace import NullspaceGoals

MAX_RANDOM_SEED = 2 ** 63 - 1
MODES = ('first', 'closest', 'manipulability')
MODE_FIRST, MODE_CLOSEST, MODE_MANIPULABILITY = range(3)

OptionRange = namedtuple('OptionRange', ['low', 'high', 'open_low', 'integer', 'unit', 'description', 'node_low',
                                         'node_high'])
OptionRange.__doc__ = ('One numeric option: the range SolverOptions accepts, [low, high] ((low, high] if open_low), '
                       'its unit and meaning, and the range a node offers for it as a parameter (None: the same).')

#: Every numeric SolverOptions field: its range, unit, description and the node's parameter range.
OPTION_RANGES = {
    'position_tolerance': OptionRange(0.0, 1e6, True, False, 'm', 'Converged below this tip position error',
                                      1e-9, 0.1),
    'orientation_tolerance': OptionRange(0.0, 1e6, True, False, 'rad',
                                         'Converged below this tip orientation error', 1e-9, 0.5),
    'max_step': OptionRange(0.0, 1e6, True, False, 'rad or m', 'Largest joint change of one iteration', 1e-3, 3.2),
    'svd_cutoff': OptionRange(0.0, 1e6, True, False, '', 'pinv and nullspace: smaller singular values count as zero',
                              None, None),
    'timeout': OptionRange(0.0, 3600.0, True, False, 's', 'Wall-clock budget of one solve, restarts included',
                           1e-4, 1.0),
    'alpha': OptionRange(-1e6, 1e6, False, False, '', "transpose: gain; <= 0 selects Buss's optimal step", 0.0, 100.0),
    'damping': OptionRange(0.0, 1e6, False, False, '', 'dls: damping lambda', 0.0, 10.0),
    'damping_max': OptionRange(0.0, 1e6, False, False, '', 'adaptive_dls: largest damping lambda_max', 0.0, 10.0),
    'epsilon': OptionRange(0.0, 1e6, False, False, '', 'adaptive_dls: damping starts below this smallest singular '
                           'value', 1e-6, 10.0),
    'lm_bias': OptionRange(0.0, 1e6, False, False, '', 'lm: damping floor added to the error-dependent damping',
                           0.0, 1.0),
    'max_iterations': OptionRange(1, 10 ** 7, False, True, '', 'Iterations of one attempt before a random restart',
                                  1, 10000),
    'patience': OptionRange(1, 10 ** 9, False, True, '', 'Iterations without 10 % progress before a restart',
                            None, None),
    'max_attempts': OptionRange(0, 10 ** 9, False, True, '', 'Attempts of one solve; 0: as many as the timeout allows',
                                None, None),
    'random_seed': OptionRange(0, MAX_RANDOM_SEED, False, True, '', 'Seed of the random restarts (deterministic '
                               'solves)', 0, 2 ** 31 - 1),
    'jump_threshold': OptionRange(0.0, np.inf, True, False, 'rad or m', "mode 'first': a solution moving a joint "
                                  'further than this from the seed makes the search go on for the closest one',
                                  0.001, 100.0),
}


def node_range(name):
    """Return (low, high): the range a node declares for option ``name`` (the solver's own where none is set)."""
    r = OPTION_RANGES[name]
    return (r.low, r.high) if r.node_low is None else (r.node_low, r.node_high)


def check_number(name, value):
    """Check one option's type and range (``OPTION_RANGES``); ValueError with the option's name otherwise."""
    low, high, open_low, integer = OPTION_RANGES[name][:4]
    kinds = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = 'an integer' if integer else 'a number'
        raise ValueError(f'{name} must be {kind}, got {type(value).__name__} {value!r}')
    if not integer and not np.isfinite(value):
        if not (value == np.inf and high == np.inf):
            raise ValueError(f'{name} must be finite, got {value}')
    if value < low or value > high or (open_low and value == low):
        bound = '>' if open_low else '>='
        raise ValueError(f'{name} must be {bound} {low:g} and <= {high:g}, got {value}')


#: Smallest non-zero task weight (weights are relative; 0 frees an axis).
MIN_WEIGHT = 1e-9


@dataclass
class SolverOptions:
    """Tuning of the solve loop; the defaults suit arms of human to industrial size (metres)."""

    method: str = 'lm'
    position_tolerance: float = 1e-5      # m
    orientation_tolerance: float = 1e-5   # rad
    timeout: float = 0.005                # s, wall clock for all attempts
    max_iterations: int = 100             # per attempt
    max_attempts: int = 0                 # 0: as many as the timeout allows
    max_step: float = 1.0                 # rad or m, largest joint change per iteration
    alpha: float = 0.0                    # transpose gain; <= 0 selects Buss's step
    damping: float = 0.05                 # dls lambda
    damping_max: float = 0.05             # adaptive_dls lambda_max
    epsilon: float = 0.05                 # adaptive_dls: damp below this sigma_min
    svd_cutoff: float = 1e-6              # pinv and nullspace: smaller sigma count as zero
    lm_bias: float = 1e-5                 # lm: damping floor w_bias
    patience: int = 5                     # iterations without 10 % progress -> restart
    weights: tuple = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)  # (x, y, z, rx, ry, rz); 0 frees an axis
    weights_frame: str = 'base'           # 'base' or 'target': the frame of weights' axes
    bounds: tuple = None                  # per-axis tolerances (x y z rx ry rz) in the target frame; inf frees
    position_only: bool = False           # ignore orientation (same as weights (1, 1, 1, 0, 0, 0))
    orientation_only: bool = False        # ignore position
    mode: str = 'first'                   # 'first', 'closest' (L-inf from the seed) or 'manipulability'
    jump_threshold: float = np.inf        # mode 'first': a larger joint move searches on for the closest
    random_seed: int = 0
    nullspace: NullspaceGoals = field(default_factory=NullspaceGoals)

    def validate(self):
        """Raise ValueError, naming the option, for any bad type or value."""
        if not isinstance(self.method, str):
            raise ValueError(f'method must be a string, got {type(self.method).__name__}')
        method_id(self.method)
        for name in OPTION_RANGES:
            check_number(name, getattr(self, name))
        for name in ('position_only', 'orientation_only'):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f'{name} must be True or False, got {getattr(self, name)!r}')
        if self.position_only and self.orientation_only:
            raise ValueError('position_only and orientation_only exclude each other')
        self.task_weights()
        self.task_bounds()
        for name, allowed in (('mode', MODES), ('weights_frame', ('base', 'target'))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")
        if not isinstance(self.nullspace, NullspaceGoals):
            raise ValueError(f'nullspace must be a NullspaceGoals, got {type(self.nullspace).__name__}')

    def task_weights(self):
        """Return the 6 weights with position_only / orientation_only applied; ValueError if unusable."""
        w = _six('weights', self.weights)
        if np.any(w < 0) or not np.all(np.isfinite(w)) or np.any(w > 1e12):
            raise ValueError(f'weights must be 6 finite values >= 0, got {w.tolist()}')
        if np.any((w > 0) & (w < MIN_WEIGHT)):  # a tiny weight is a typo, and its inverse overflows
            raise ValueError(f'weights must be 0 or at least {MIN_WEIGHT:g}, got {w.tolist()}')
        if self.position_only:
            w[3:] = 0.0
        if self.orientation_only:
            w[:3] = 0.0
        if not np.any(w > 0):
            raise ValueError(f'weights leave no axis to solve for (weights {self.weights}, '
                             f'position_only={self.position_only}, orientation_only={self.orientation_only})')
        return w

    def task_bounds(self):
        """Return the 6 bounds (0 where none is given); ValueError for negative or NaN ones."""
        if self.bounds is None:
            return np.zeros(6)
        b = _six('bounds', self.bounds)
        if np.any(np.isnan(b)) or np.any(b < 0):
            raise ValueError(f'bounds must be 6 values >= 0 (inf frees an axis), got {b.tolist()}')
        return b


def _six(name, values):
    try:
        array = np.array(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f'{name} must be 6 numbers (x y z rx ry rz): {exc}') from None
    if array.shape != (6,):
        raise ValueError(f'{name} must be 6 numbers (x y z rx ry rz), got shape {array.shape}')
    return array


_OPTION_NAMES = frozenset(f.name for f in fields(SolverOptions))
