"""ik_solver_demos: the MuJoCo-simulated arm, the demos, benchmarks, soak and tools around ik_solver.

A separate package so that a user who only wants inverse kinematics installs
no MuJoCo, no matplotlib, no simulator and no benchmarks: ``sim`` (the
simulated arm behind emulated ros2_control controllers) and ``tools`` (the
programs and their process helpers) import ``ik_solver``; ``ik_solver``
imports nothing from here.
"""
