"""The numerical core: URDF chain model, kinematics, step methods, nullspace goals, the solver.

Imports no ROS (a test proves it), so it serves scripts, notebooks and both nodes alike.
"""
