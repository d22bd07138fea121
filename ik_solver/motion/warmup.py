"""Load, or compile into the kernel cache, the motion kernels a node runs: ``python -m ik_solver.motion.warmup``.

The guard's, the trajectory's and the controller's spline kernels (``guard.warm_up``) and the servo's own
(``servo.warm_up_kernels``).  ``python -m ik_solver.core.warmup`` and ``python -m ik_solver.collision.warmup`` do
the solver's and the collision kernels; ``scripts/setup.sh`` runs all three, so a node's first start compiles
nothing.
"""
import os

from . import guard, servo
from ..core import kernel_cache


def warm_up():
    """Load (from the cache) or compile every motion kernel type a node passes."""
    guard.warm_up()
    servo.warm_up_kernels()


if __name__ == '__main__':
    os.environ.setdefault(kernel_cache.MODE_ENV, 'inline')
    warm_up()
