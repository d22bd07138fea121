"""Layers: the core and motion import no ROS (they run without a ROS install), and imports only go downward."""
import ast
import pathlib
import subprocess
import sys

import pytest

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


#: What each runtime layer may not import: layers only import downward, and the runtime nothing of the
#: simulator, demos and benchmarks (sim/, tools/), so a node loads neither MuJoCo nor matplotlib.
FORBIDDEN = {
    'core': {'motion', 'collision', 'ros', 'sim', 'tools'},
    'motion': {'ros', 'sim', 'tools'},
    'collision': {'ros', 'sim', 'tools'},
    'ros': {'sim', 'tools'},
}


def _imported_layers(path):
    """Return the ik_solver subpackages a module imports, at the top or inside functions."""
    layers = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 2 and node.module:
                layers.add(node.module.split('.')[0])
            elif node.level == 0 and (node.module or '').startswith('ik_solver.'):
                layers.add(node.module.split('.')[1])
        elif isinstance(node, ast.Import):
            layers.update(a.name.split('.')[1] for a in node.names if a.name.startswith('ik_solver.'))
    return layers


def test_layers_import_only_downward():
    wrong = {f'{layer}/{path.name}': sorted(_imported_layers(path) & forbidden)
             for layer, forbidden in FORBIDDEN.items() for path in sorted((ROOT / 'ik_solver' / layer).glob('*.py'))}
    wrong = {module: layers for module, layers in wrong.items() if layers}
    assert not wrong, f'modules importing a layer above them or the tools: {wrong}'


def test_the_nodes_load_neither_mujoco_nor_matplotlib():
    probe = ('import sys\n'
             'import ik_solver.ros.ik_node, ik_solver.ros.servo_node\n'
             "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('mujoco', 'matplotlib'))))\n")
    done = subprocess.run([sys.executable, '-c', probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    if 'No module named' in done.stderr and 'rclpy' in done.stderr:
        pytest.skip('rclpy is not installed')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '', f'the nodes loaded {done.stdout.strip()}'
