"""Start and stop the package's nodes as child processes (demo, tests, benchmarks).

Where ``ros2 launch`` exists, launch/*.launch.py starts the same set; this
module lets everything run with rclpy alone.
"""
import signal
import subprocess
import sys

from .resources import local_ros_env


class NodeProcess:
    """One node as ``python -m ik_solver.<module> --ros-args ...``; output to a log file."""

    def __init__(self, module, ros_args, log_path, env=None, args=()):
        self.module = module
        self.log_path = log_path
        self._log = open(log_path, 'w')
        cmd = [sys.executable, '-m', f'ik_solver.{module}', *args, '--ros-args', *ros_args]
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
