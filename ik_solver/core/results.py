"""What a solve returns: ``IKResult`` for one target, ``BatchResult`` for many (reasons: ``reasons.Reason``)."""
from dataclasses import dataclass, field

import numpy as np

from .attempt import exact_sigma
from .reasons import Reason


#: The reasons a solve can end with, as the strings ``IKResult.reason`` holds.
REASONS = tuple(r.label for r in (Reason.SUCCESS, Reason.UNREACHABLE, Reason.TIMEOUT, Reason.JOINT_LIMITS,
                                  Reason.SINGULAR, Reason.INVALID_INPUT, Reason.COLLISION))
REASON_OK = Reason.SUCCESS.label
#: Message prefix of a success whose elbow is not on the pole's side (no such solution found within the timeout).
POLE_SIDE_UNREACHABLE = 'pole_side_unreachable'


@dataclass(slots=True)
class IKResult:
    """Outcome of one solve.

    ``joints`` is never NaN and always within the limits: on failure it holds
    the best approximation found (for 'collision': the seed).
    ``position_error`` (m) and ``orientation_error`` (rad) are the TRUE errors of
    ``joints`` on all axes, whatever the weights; ``task_error`` is the weighted,
    masked error convergence used (sqrt(sum w_i e_i^2), after bounds).
    ``reason`` is a ``Reason`` label ('success', 'timeout', ...; ``code`` gives the member).
    ``sigma_min``, the smallest singular value of the task Jacobian at ``joints``
    (masked rows left out), is computed exactly (SVD) when first read.
    """

    success: bool
    joints: np.ndarray
    position_error: float
    orientation_error: float
    iterations: int
    restarts: int
    elapsed: float
    reason: str = REASON_OK
    message: str = ''
    task_error: float = float('nan')
    _task: tuple = field(default=None, repr=False, compare=False)   # (target, (model, params))
    _sigma: float = field(default=float('nan'), repr=False, compare=False)

    @property
    def code(self):
        """Return the ``Reason`` member of ``reason``: the service response code."""
        return Reason.of(self.reason)

    @property
    def sigma_min(self):
        """Smallest singular value of the task Jacobian at ``joints``: the distance to a singularity."""
        if self._sigma != self._sigma and self._task is not None:
            T, (model, params) = self._task
            self._sigma = float(exact_sigma(np.ascontiguousarray(self.joints, dtype=float), model, T, params))
        return self._sigma


@dataclass
class BatchResult:
    """Outcome of ``solve_batch``: one row per item (``sigma_min`` computed when first read)."""

    joints: np.ndarray              # (B, n)
    success: np.ndarray             # (B,) bool
    position_error: np.ndarray      # (B,) true, m
    orientation_error: np.ndarray   # (B,) true, rad
    task_error: np.ndarray          # (B,)
    iterations: np.ndarray          # (B,) int
    reasons: list                   # B ``Reason`` labels
    elapsed: float                  # s, whole batch
    pole_side_missed: np.ndarray = None   # (B,) bool: success, but no elbow on the pole's side within the timeout
    _task: tuple = field(default=None, repr=False, compare=False)
    _sigma: np.ndarray = field(default=None, repr=False, compare=False)

    def __len__(self):
        return len(self.reasons)

    @property
    def sigma_min(self):
        """(B,) smallest singular values of the task Jacobians at ``joints``."""
        if self._sigma is None:
            targets, (model, params) = self._task
            self._sigma = np.array([exact_sigma(q, model, T, params) for q, T in zip(self.joints, targets)])
        return self._sigma
