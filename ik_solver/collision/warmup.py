"""Load, or compile into the kernel cache, the collision checks' kernels: ``python -m ik_solver.collision.warmup``.

The box kernels of ``proximity`` (what the IK node's path checks and the servo's distances run).
``python -m ik_solver.core.warmup`` and ``python -m ik_solver.motion.warmup`` do the solver's and the motion
kernels; ``scripts/setup.sh`` runs all three, so a node's first start compiles nothing.
"""
import os

from . import proximity
from ..core import kernel_cache


def warm_up():
    """Load (from the cache) or compile every collision kernel type a node passes."""
    proximity.warm_up()


if __name__ == '__main__':
    os.environ.setdefault(kernel_cache.MODE_ENV, 'inline')
    warm_up()
