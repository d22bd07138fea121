"""Joint limits a real controller must respect, and the state a move starts from.

Limits come, in increasing priority, from the URDF, a MoveIt ``joint_limits.yaml``
and per-joint parameters; ``JointLimits`` holds the merged result as arrays in
chain order, so the planner and the command guard read one source of truth.
"""
from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class JointLimits:
    """Position, velocity, acceleration and jerk limits per joint, in chain order (inf: unlimited)."""

    names: tuple
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray

    def scaled(self, velocity_scaling=1.0, acceleration_scaling=1.0):
        """Limits a move may use: velocity and acceleration (and jerk with it) scaled down."""
        for name, value in (('velocity_scaling', velocity_scaling), ('acceleration_scaling', acceleration_scaling)):
            if not 0.0 < value <= 1.0:
                raise ValueError(f'{name} must be in (0, 1], got {value}')
        return replace(self, velocity=self.velocity * velocity_scaling,
                       acceleration=self.acceleration * acceleration_scaling,
                       jerk=self.jerk * acceleration_scaling)


@dataclass
class MotionState:
    """Positions, velocities and accelerations of the joints at one instant, in chain order."""

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    @classmethod
    def at_rest(cls, position):
        q = np.asarray(position, dtype=float)
        return cls(q.copy(), np.zeros_like(q), np.zeros_like(q))
