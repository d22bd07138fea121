"""The command guard, for the ROS layer: it lives in ``motion.command_guard`` (no ROS).

The servo node imports it from here; new code imports ``ik_solver.motion.command_guard``.
"""
from ..motion.command_guard import CommandGuard

__all__ = ['CommandGuard']
