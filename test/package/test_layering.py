"""Layers: the core and motion import no ROS, imports only go downward, and the runtime nothing of the demos.

The simulator, demos, benchmarks and tools are the package ik_solver_demos, which imports ik_solver; the
runtime (ik_solver and its launch files) imports nothing of it, so a node loads neither MuJoCo nor matplotlib.
"""
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


#: What each runtime layer may not import: layers only import downward.
FORBIDDEN = {
    'core': {'motion', 'collision', 'ros'},
    'motion': {'collision', 'ros'},
    'collision': {'ros'},
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
    assert not wrong, f'modules importing a layer above them: {wrong}'


def _imported_packages(path):
    """Return the top-level packages a module imports (absolute imports, at the top or inside functions)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split('.')[0])
        elif isinstance(node, ast.Import):
            names.update(a.name.split('.')[0] for a in node.names)
    return names


def test_the_runtime_imports_nothing_of_the_demos():
    runtime = sorted((ROOT / 'ik_solver').rglob('*.py')) + sorted((ROOT / 'launch').glob('*.py'))
    wrong = [str(path.relative_to(ROOT)) for path in runtime if 'ik_solver_demos' in _imported_packages(path)]
    assert len(runtime) > 50 and not wrong, f'runtime modules importing ik_solver_demos: {wrong}'
    demos = sorted((ROOT / 'ik_solver_demos' / 'ik_solver_demos').rglob('*.py'))
    assert sum('ik_solver' in _imported_packages(path) for path in demos) > 10  # the demos do import the runtime


def test_the_nodes_load_neither_mujoco_nor_matplotlib():
    probe = ('import sys\n'
             'import ik_solver.ros.ik_node, ik_solver.ros.servo_node\n'
             "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('mujoco', 'matplotlib'))))\n")
    done = subprocess.run([sys.executable, '-c', probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    if 'No module named' in done.stderr and 'rclpy' in done.stderr:
        pytest.skip('rclpy is not installed')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '', f'the nodes loaded {done.stdout.strip()}'
