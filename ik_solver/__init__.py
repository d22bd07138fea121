"""ik_solver: Jacobian inverse kinematics for serial arms described in URDF.

    from ik_solver import load_chain, IKSolver
    chain = load_chain('arm.urdf', 'base_link', 'tool0')
    result = IKSolver(chain).solve(target_4x4, seed)

The numerical core (``core``: chain, kinematics, methods, nullspace, solver)
imports no ROS; ``ros`` adds rclpy on top.  The simulated arm, demos and
benchmarks are the separate package ``ik_solver_demos``.  The names below are
loaded on first use (PEP 562): importing a node's entry point must not spend
half a second in numba before it can answer a stop signal (``ros.entry``).
"""
import importlib

_EXPORTS = {'Chain': 'core.chain', 'load_chain': 'core.chain', 'ModelError': 'core.exceptions',
            'METHOD_NAMES': 'core.methods', 'NullspaceGoals': 'core.nullspace', 'BatchResult': 'core.solver',
            'IKResult': 'core.solver', 'IKSolver': 'core.solver', 'SolverOptions': 'core.solver'}

__all__ = ['Chain', 'load_chain', 'ModelError', 'NullspaceGoals', 'IKResult', 'BatchResult', 'IKSolver',
           'SolverOptions', 'METHOD_NAMES']


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(importlib.import_module(f'.{_EXPORTS[name]}', __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
