"""``pip install <checkout>`` in a fresh venv without ROS gives a library that runs the documented example.

The package is installed from a copy of the checkout (pip builds in the source folder, which must stay
clean for colcon) into a new venv that sees none of the ROS venv's packages, so an undeclared
dependency fails the import, and the example of docs/python_api.md is run as written.
"""
import pathlib
import re
import shutil
import subprocess
import sys

from ik_solver.core.solver import REASONS
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / 'docs' / 'python_api.md'
NOT_COPIED = shutil.ignore_patterns('.git', '.venv*', 'build', 'install', 'log', '__pycache__', '*.egg-info',
                                    'demo_output', '.pytest_cache')
PIP_NOISE = 'is ignored: it is neither a file nor a directory'


def run(command, cwd, timeout):
    """Run ``command`` and return its standard output; fail with its output when it fails.

    pip's warnings about index folders that do not exist are left out of the failure message.
    """
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    output = '\n'.join(line for line in (done.stdout + done.stderr).splitlines() if PIP_NOISE not in line)
    assert done.returncode == 0, f'{" ".join(map(str, command))} failed:\n{output[-4000:]}'
    return done.stdout


def python_blocks(path):
    return re.findall(r'^```python\n(.*?)^```', path.read_text(), re.S | re.M)


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    """(python of a fresh venv with the checkout pip-installed, copy of the checkout)."""
    base = tmp_path_factory.mktemp('pip_install')
    checkout = base / 'ik_solver'
    shutil.copytree(ROOT, checkout, ignore=NOT_COPIED)
    run([sys.executable, '-m', 'venv', base / 'venv'], base, 120)
    python = base / 'venv' / 'bin' / 'python'
    run([python, '-m', 'pip', 'install', '--quiet', 'setuptools>=61', 'wheel'], base, 600)
    run([python, '-m', 'pip', 'install', '--quiet', '--no-build-isolation', checkout], base, 900)
    return python, checkout


def test_installs_the_core_dependencies_and_declares_the_extras(installed):
    python, _ = installed
    out = run([python, '-c', 'import importlib.metadata as m, importlib.util as u; '
               'print(u.find_spec("rclpy") is None); print(*m.requires("ik_solver"), sep="\\n")'], ROOT, 60)
    no_ros, *requires = out.splitlines()
    assert no_ros == 'True', 'the fresh venv must not see ROS'
    names = {re.split(r'[<>=!~;\[ ]', r, maxsplit=1)[0].lower(): r for r in requires}
    core = {name for name, requirement in names.items() if 'extra ==' not in requirement}
    assert {'numpy', 'numba', 'scipy', 'urdfdom-py', 'xacro', 'pyyaml'} <= core
    for extra, package in (('motion', 'ruckig'), ('collision', 'pin'), ('sim', 'mujoco'), ('sim', 'matplotlib')):
        assert f'extra == "{extra}"' in names[package], names[package]


def test_documented_python_example_runs_as_written(installed):
    python, checkout = installed
    example = python_blocks(EXAMPLE)[0]
    out = run([python, '-c', example], checkout, 900)  # relative paths in the example: the checkout's root
    # Its first line is the first solve's result: success, reason, position error [m], orientation error [rad].
    success, reason, position_error, _ = out.splitlines()[0].split()
    assert success in ('True', 'False') and reason in REASONS, out
    assert (success == 'True') == (reason == 'success'), out
    assert success == 'False' or float(position_error) < 1e-4, out
