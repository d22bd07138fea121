"""Load, or compile into the kernel cache, every kernel a node runs beyond the solver's.

    python -m ik_solver.motion.warmup    # compiles what the cache lacks (IK_SOLVER_KERNELS=inline)

The guard's, the trajectory's and the controller's spline kernels (``guard.warm_up``), the servo's own
(``servo.warm_up_kernels``) and the collision checks' box kernels (``collision.proximity.warm_up``).
``python -m ik_solver.core.warmup`` does the solver's; ``scripts/setup.sh`` runs both, so a node's first
start compiles nothing.
"""
import os

from . import guard, servo
from ..collision import proximity
from ..core import kernel_cache


def warm_up():
    """Load (from the cache) or compile every motion and collision kernel type a node passes."""
    guard.warm_up()
    servo.warm_up_kernels()
    proximity.warm_up()


if __name__ == '__main__':
    os.environ.setdefault(kernel_cache.MODE_ENV, 'inline')
    warm_up()
