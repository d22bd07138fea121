"""ik_solver: Jacobian inverse kinematics for serial arms described in URDF.

    from ik_solver import load_chain, IKSolver
    chain = load_chain('arm.urdf', 'base_link', 'tool0')
    result = IKSolver(chain).solve(target_4x4, seed)

The numerical core (``core``: chain, kinematics, methods, nullspace, solver)
imports no ROS; ``ros`` and ``sim`` add rclpy on top.
"""
from .core.chain import Chain, load_chain
from .core.exceptions import ModelError
from .core.methods import METHOD_NAMES
from .core.nullspace import NullspaceGoals
from .core.solver import BatchResult, IKResult, IKSolver, SolverOptions

__all__ = ['Chain', 'load_chain', 'ModelError', 'NullspaceGoals', 'IKResult', 'BatchResult', 'IKSolver',
           'SolverOptions', 'METHOD_NAMES']
