"""Launch files: their structure everywhere, and a real launch where launch_testing exists."""
import ast
import pathlib

import pytest

LAUNCH_DIR = pathlib.Path(__file__).resolve().parents[1] / 'launch'


def declared_arguments(path):
    """Names given to DeclareLaunchArgument (directly or through the ARGUMENTS table)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'DeclareLaunchArgument':
            if node.args and isinstance(node.args[0], ast.Constant):
                names.add(node.args[0].value)
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', '') == 'ARGUMENTS':
            names |= {elt.elts[0].value for elt in node.value.elts}
    return names, {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_ik_solver_launch_declares_its_arguments():
    names, functions = declared_arguments(LAUNCH_DIR / 'ik_solver.launch.py')
    assert {'robot', 'urdf_file', 'config', 'base_link', 'tip_link', 'namespace', 'use_sim_time'} <= names
    assert 'generate_launch_description' in functions


def test_demo_launch_declares_its_arguments():
    names, functions = declared_arguments(LAUNCH_DIR / 'demo.launch.py')
    assert {'kinematic', 'output_dir'} <= names and 'generate_launch_description' in functions


def test_launch_files_describe_without_errors():
    pytest.importorskip('launch_ros', reason='launch_ros is not installed (not on PyPI); needs a ROS 2 install')
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    for name in ('ik_solver.launch.py', 'demo.launch.py'):
        source = PythonLaunchDescriptionSource(str(LAUNCH_DIR / name))
        description = source.get_launch_description(LaunchContext())
        declared = {e.name for e in description.entities if isinstance(e, DeclareLaunchArgument)}
        assert declared == declared_arguments(LAUNCH_DIR / name)[0]
