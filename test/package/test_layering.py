"""The numerical core and the motion layer import no ROS, so they run without a ROS install."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROS_FREE = ('core', 'motion')


def ros_free_modules():
    return [f'ik_solver.{sub}.{path.stem}' for sub in ROS_FREE
            for path in sorted((ROOT / 'ik_solver' / sub).glob('*.py')) if path.stem != '__init__']


def test_core_and_motion_import_no_ros():
    modules = ['ik_solver'] + ros_free_modules()
    probe = ('import importlib, sys\n'
             f'for m in {modules!r}: importlib.import_module(m)\n'
             "ros = sorted(m for m in sys.modules if m.split('.')[0] in ('rclpy', 'rosidl_runtime_py', 'rpyutils')\n"
             "             or m.split('.')[0].endswith(('_msgs', '_srvs', '_interfaces')))\n"
             'print(",".join(ros))\n')
    done = subprocess.run([sys.executable, '-c', probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(modules) > 8, modules
    assert done.stdout.strip() == '', f'ROS modules imported by the core: {done.stdout.strip()}'
