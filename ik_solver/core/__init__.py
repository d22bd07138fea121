"""The numerical core: URDF chain model, kinematics, step methods, nullspace goals, the solver.

Imports no ROS (a test proves it), so it serves scripts, notebooks and both nodes alike.  The compiled
kernels are cached by content in a user cache folder (``kernel_cache``), set up here, before any kernel
module is imported.
"""
from . import kernel_cache

kernel_cache.install()
