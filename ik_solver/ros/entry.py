"""Console entry points of the nodes: a stop signal during their imports ends the process quietly.

Importing a node takes about half a second (rclpy, NumPy, numba kernels); a
Ctrl-C, or ``ros2 launch`` stopping everything, in that time printed a
KeyboardInterrupt traceback.  Here the signal ends the process with 0 until the
node's own handlers (``ros.spin.run_node``) take over, before ``rclpy.init``.
"""
import importlib
import os
import signal
import sys

#: The signals that end a node cleanly (``ros.spin`` uses them too; importing it here would import rclpy first).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _exit_quietly(signum, frame):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run(module):
    """Import ``module`` (the stop signals end the process meanwhile) and return its ``main()``."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _exit_quietly)
    return importlib.import_module(module).main()


def ik_solver_node():
    return run('ik_solver.ros.ik_node')


def ik_servo_node():
    return run('ik_solver.ros.servo_node')
