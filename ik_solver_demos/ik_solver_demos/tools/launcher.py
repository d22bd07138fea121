"""Start and stop the nodes as child processes (demos, tests, benchmarks).

Where ``ros2 launch`` exists, the launch files start the same set; this module
lets everything run with rclpy alone.  (What the runtime's launch files pass to
the IK node is ``ik_solver.ros.launch_setup``.)
"""
import signal
import subprocess
import sys

from .resources import local_ros_env

#: The package of a node module named by its folder: the runtime's nodes (``ros.ik_node``) and this
#: package's (``sim.sim_arm_node``, ``tools.bench_node``).
PACKAGES = {'ros': 'ik_solver', 'sim': 'ik_solver_demos', 'tools': 'ik_solver_demos'}


def module_name(module):
    """Return the importable name of a node module: 'ros.ik_node' -> 'ik_solver.ros.ik_node'.

    Args:
        module: the module under its package ('ros.servo_node', 'sim.sim_arm_node'), or its full name.
    """
    package = PACKAGES.get(module.split('.')[0])
    return f'{package}.{module}' if package else module


class NodeProcess:
    """One node as ``python -m <package>.<module> --ros-args ...`` (see ``module_name``); output to a log file."""

    def __init__(self, module, ros_args, log_path, env=None, args=()):
        self.module = module
        self.log_path = log_path
        self._log = open(log_path, 'w')
        cmd = [sys.executable, '-m', module_name(module), *args, '--ros-args', *ros_args]
        self.process = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=local_ros_env(env),
                                        start_new_session=True)

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process.poll() is None

    def stop(self, timeout=5.0):
        """SIGINT (a clean rclpy shutdown), then SIGKILL if it does not exit."""
        if self.alive():
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode

    def output(self):
        with open(self.log_path) as f:
            return f.read()


def node_args(config, params):
    """--ros-args list: a params file and -p name:=value overrides."""
    args = ['--params-file', config] if config else []
    for name, value in params.items():
        if isinstance(value, bool):
            value = 'true' if value else 'false'
        args += ['-p', f'{name}:={value}']
    return args


def flat_parameters(tree, prefix=''):
    """Return a params file's nested ``ros__parameters`` as the node declares them: {'scale.linear': 0.2, ...}."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(flat_parameters(value, f'{prefix}{key}.'))
        else:
            out[f'{prefix}{key}'] = value
    return out
