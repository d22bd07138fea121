"""Solver options: the tuning of the solve loop, each checked against its range."""
from dataclasses import dataclass, field, fields
import numbers

import numpy as np

from .methods import method_id
from .nullspace import NullspaceGoals

MAX_RANDOM_SEED = 2 ** 63 - 1
MODES = ('first', 'closest', 'manipulability')
MODE_FIRST, MODE_CLOSEST, MODE_MANIPULABILITY = range(3)


def _number(name, value, low=-np.inf, high=np.inf, integer=False, open_low=False):
    """Check one option's type and range; ValueError with the option's name otherwise."""
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
        for name in ('position_tolerance', 'orientation_tolerance', 'max_step', 'svd_cutoff'):
            _number(name, getattr(self, name), 0.0, 1e6, open_low=True)
        _number('timeout', self.timeout, 0.0, 3600.0, open_low=True)
        _number('alpha', self.alpha, -1e6, 1e6)
        for name in ('damping', 'damping_max', 'epsilon', 'lm_bias'):
            _number(name, getattr(self, name), 0.0, 1e6)
        _number('max_iterations', self.max_iterations, 1, 10 ** 7, integer=True)
        _number('patience', self.patience, 1, 10 ** 9, integer=True)
        _number('max_attempts', self.max_attempts, 0, 10 ** 9, integer=True)
        _number('random_seed', self.random_seed, 0, MAX_RANDOM_SEED, integer=True)
        _number('jump_threshold', self.jump_threshold, 0.0, np.inf, open_low=True)
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
