"""Joint-space motion for real controllers: limits, timing, the joint_trajectory_controller contract.

Imports no ROS: what a controller will execute is decided and checked here.
"""
