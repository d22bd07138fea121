"""``pip install <checkout>`` in a fresh venv without ROS gives a library that runs the documented example.

The package is installed from a copy of the checkout (pip builds in the source folder, which must stay
clean for colcon) into a new venv that sees none of the ROS venv's packages, so an undeclared
dependency fails the import, and the example of docs/python_api.md is run as written.  The runtime
holds nothing of the simulator, demos and tools: they are ``pip install ./ik_solver_demos``.
"""
import os
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

    Without PYTHONPATH: a sourced ROS workspace puts its install space there, ahead of the fresh venv's
    packages, and the venv would import that copy instead of what pip installed.  pip's warnings about
    index folders that do not exist are left out of the failure message.
    """
    env = {name: value for name, value in os.environ.items() if name != 'PYTHONPATH'}
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env)
    output = '\n'.join(line for line in (done.stdout + done.stderr).splitlines() if PIP_NOISE not in line)
    assert done.returncode == 0, f'{" ".join(map(str, command))} failed:\n{output[-4000:]}'
    return done.stdout


def python_blocks(path):
    return re.findall(r'^```python\n(.*?)^```', path.read_text(), re.S | re.M)


def pip(python, *arguments):
    """Return the command that runs this interpreter's pip on the environment of ``python`` (``pip --python``).

    The fresh venv is made without pip of its own: ensurepip would install and byte-compile pip and
    setuptools there first, and what is proven is what pip puts into that venv, whichever pip runs.
    ``--no-compile``: the venv's Python compiles what it imports, not every module of numpy, scipy,
    numba and llvmlite up front (most of the install's time).
    """
    return [sys.executable, '-m', 'pip', '--python', python, 'install', '--quiet', '--no-compile', *arguments]


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    """(python of a fresh venv with the checkout pip-installed, copy of the checkout), built once per module."""
    base = tmp_path_factory.mktemp('pip_install')
    checkout = base / 'ik_solver'
    shutil.copytree(ROOT, checkout, ignore=NOT_COPIED)
    run([sys.executable, '-m', 'venv', '--without-pip', base / 'venv'], base, 120)
    python = base / 'venv' / 'bin' / 'python'
    run(pip(python, 'setuptools>=61', 'wheel'), base, 600)
    run(pip(python, '--no-build-isolation', checkout), base, 900)
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
    for extra, package in (('motion', 'ruckig'), ('collision', 'pin')):
        assert f'extra == "{extra}"' in names[package], names[package]
    assert not {'mujoco', 'matplotlib'} & set(names), "the demos' dependencies are not the runtime's"


def test_runtime_wheel_holds_no_simulator_demos_or_tools(installed):
    python, checkout = installed
    probe = ('import importlib.metadata as m, importlib.util as u\n'
             'for name in ("ik_solver.sim", "ik_solver.tools", "ik_solver.servo_demo", "ik_solver_demos"):\n'
             '    print(name, u.find_spec(name) is not None)\n'
             'files = [str(f) for f in m.files("ik_solver")]\n'
             'print("files", len(files), sum(f.startswith(("ik_solver/sim/", "ik_solver/tools/")) for f in files))\n'
             'print("scripts", *sorted(e.name for e in m.entry_points(group="console_scripts")))\n')
    lines = run([python, '-c', probe], checkout.parent, 60).splitlines()  # not a source tree: the wheel
    assert lines[:4] == [f'{name} False' for name in ('ik_solver.sim', 'ik_solver.tools', 'ik_solver.servo_demo',
                                                      'ik_solver_demos')], lines
    _, count, demos = lines[4].split()
    assert int(count) > 50 and demos == '0', lines[4]
    scripts = set(lines[5].split()[1:])
    assert {'ik_solver_node', 'ik_servo_node'} <= scripts and not {'sim_arm_node', 'ik_demo', 'ik_bench'} & scripts


def test_demos_package_installs_on_the_runtime(installed):
    """``pip install ./ik_solver_demos`` (no dependencies fetched here): its modules, scripts and requirements."""
    python, checkout = installed
    run(pip(python, '--no-deps', '--no-build-isolation', checkout / 'ik_solver_demos'), checkout, 600)
    probe = ('import importlib.metadata as m, importlib.util as u\n'
             'modules = ("ik_solver_demos.sim.physics", "ik_solver_demos.tools.demo")\n'
             'print(*(u.find_spec(n) is not None for n in modules))\n'
             'names = (r.split(";")[0].split("[")[0].strip() for r in m.requires("ik_solver_demos"))\n'
             'print(*sorted(name.replace("-", "_") for name in names))\n'
             'scripts = m.entry_points(group="console_scripts")\n'
             'print(*sorted(e.name for e in scripts if e.value.startswith("ik_solver_demos")))\n')
    found, requires, scripts = run([python, '-c', probe], checkout.parent, 60).splitlines()
    assert found == 'True True', found
    assert {'ik_solver', 'mujoco', 'matplotlib'} <= set(requires.split()), requires
    assert {'sim_arm_node', 'ik_demo', 'ik_servo_demo', 'ik_bench'} <= set(scripts.split()), scripts


def test_documented_python_example_runs_as_written(installed):
    python, checkout = installed
    example = python_blocks(EXAMPLE)[0]
    out = run([python, '-c', example], checkout, 900)  # relative paths in the example: the checkout's root
    # Its first line is the first solve's result: success, reason, position error [m], orientation error [rad].
    success, reason, position_error, _ = out.splitlines()[0].split()
    assert success in ('True', 'False') and reason in REASONS, out
    assert (success == 'True') == (reason == 'success'), out
    assert success == 'False' or float(position_error) < 1e-4, out
