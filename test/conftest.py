"""Shared fixtures: the bundled arms, robots from example-robot-data, small test URDFs, a fresh kernel process."""
import os
import pathlib
import subprocess
import sys

from ik_solver.core.chain import load_chain
import numpy as np
import pytest

try:
    import pytest_rerunfailures  # honours the flaky marker below
except ImportError:  # a workspace without the plugin runs each test once
    pytest_rerunfailures = None

ROOT = pathlib.Path(__file__).resolve().parents[1]
URDF_DIR = ROOT / 'urdf'
#: The folder holding the ik_solver_demos package in this checkout (its tests are here, in test/).
DEMOS_SOURCE = str(ROOT / 'ik_solver_demos')


def use_demos_source():
    """Import ik_solver_demos from this checkout, here and in the node processes the tests start.

    ik_solver comes from the checkout because the tests run in its root; ik_solver_demos sits one folder
    down, where only the install space would otherwise provide it (an older build, perhaps).
    """
    if DEMOS_SOURCE not in sys.path:
        sys.path.insert(0, DEMOS_SOURCE)
    paths = os.environ.get('PYTHONPATH', '').split(os.pathsep)
    if DEMOS_SOURCE not in paths:
        os.environ['PYTHONPATH'] = os.pathsep.join([DEMOS_SOURCE] + [p for p in paths if p])


use_demos_source()


def example_robot(relative):
    """Path of a URDF shipped by the PyPI package example-robot-data; skip if absent."""
    try:
        import cmeel
        prefix = pathlib.Path(cmeel.__file__).parent
    except ImportError:
        prefix = None
    candidates = [pathlib.Path(p) for p in os.environ.get('CMEEL_PREFIX', '').split(':') if p]
    import site
    candidates += [pathlib.Path(p) / 'cmeel.prefix' for p in site.getsitepackages()]
    if prefix is not None:
        candidates.append(prefix.parent / 'cmeel.prefix')
    for base in candidates:
        path = base / 'share' / 'example-robot-data' / 'robots' / relative
        if path.is_file():
            return str(path)
    pytest.skip(f'example-robot-data not installed ({relative})')


@pytest.fixture(scope='session')
def ik7():
    return load_chain(str(URDF_DIR / 'ik7.urdf.xacro'), 'base_link', 'tool0')


@pytest.fixture(scope='session')
def ik6():
    return load_chain(str(URDF_DIR / 'ik6.urdf.xacro'), 'base_link', 'tool0')


@pytest.fixture(scope='session')
def planar3():
    return load_chain(str(URDF_DIR / 'planar3.urdf'), 'base_link', 'tool0')


@pytest.fixture(scope='session')
def panda():
    return load_chain(example_robot('panda_description/urdf/panda.urdf'), 'panda_link0', 'panda_hand_tcp')


@pytest.fixture(scope='session')
def ur5():
    return load_chain(example_robot('ur_description/urdf/ur5_robot.urdf'), 'base_link', 'tool0')


def printed_by_kernel_process(code):
    """Run Python ``code`` in a fresh process that compiles what the kernel cache lacks; return its printed words.

    ``IK_SOLVER_KERNELS=inline``, from the source tree: what the warm-up tests compare (kernel types loaded or
    compiled) does not depend on what the cache holds.
    """
    out = subprocess.run([sys.executable, '-c', code], env=dict(os.environ, IK_SOLVER_KERNELS='inline'),
                         capture_output=True, text=True, timeout=900, cwd=pathlib.Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


#: A chain with every joint kind: revolute, fixed, prismatic, continuous and a mimic joint.
MIXED_URDF = """<?xml version="1.0"?>
<robot name="mixed">
  <link name="base"/><link name="l1"/><link name="l2"/><link name="l3"/><link name="l4"/>
  <link name="l5"/><link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.3" rpy="0 0 0.2"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" velocity="1.5" effort="10"/></joint>
  <joint name="f1" type="fixed"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.1 0.02 0.1" rpy="0.3 -0.2 0.1"/></joint>
  <joint name="p1" type="prismatic"><parent link="l2"/><child link="l3"/>
    <origin xyz="0 0 0.05"/><axis xyz="1 0 0"/>
    <limit lower="-0.1" upper="0.3" velocity="0.5" effort="10"/></joint>
  <joint name="c1" type="continuous"><parent link="l3"/><child link="l4"/>
    <origin xyz="0.2 0 0" rpy="0 0.4 0"/><axis xyz="0 1 0"/>
    <limit velocity="2" effort="10"/></joint>
  <joint name="m1" type="revolute"><parent link="l4"/><child link="l5"/>
    <origin xyz="0.15 0 0.05"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-3" upper="3" velocity="2" effort="10"/>
    <mimic joint="j1" multiplier="-0.5" offset="0.1"/></joint>
  <joint name="r2" type="revolute"><parent link="l5"/><child link="tip"/>
    <origin xyz="0.1 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-1.5" upper="1.5" velocity="2" effort="10"/></joint>
</robot>
"""


@pytest.fixture(scope='session')
def mixed():
    return load_chain(MIXED_URDF, 'base', 'tip')


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


#: Layers whose tests drive node processes over DDS, with timeouts, on a possibly loaded host.
PROCESS_LAYERS = ('graph', 'e2e')
#: Layers that run ROS nodes, in process or as processes, and time what they do.
ROS_LAYERS = ('ros',) + PROCESS_LAYERS


def layer_of(path):
    """Return the test layer of a test file: its folder under ``test/`` (unit, ros, graph, e2e, package)."""
    return pathlib.Path(path).resolve().parent.name


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Group the tests for pytest-xdist, and rerun a failed process test once (pytest-rerunfailures).

    Groups (``--dist loadgroup``, as scripts/test.sh runs the suite): the layers that run ROS nodes are one
    group, so one worker runs them one after another, in their order, as without xdist: two of them at once
    would compete for the cores their timing needs.  Every module of the layers without ROS (unit, package)
    is a group of its own (its module fixtures are set up once), run by the other worker meanwhile.

    Reruns: the scheduler of a loaded CI host can stall a process past a timeout; a behaviour that is wrong
    fails both runs and fails the suite.  Every rerun is listed in the summary (``R``), never hidden.
    """
    for item in items:
        layer = layer_of(item.path)
        item.add_marker(pytest.mark.xdist_group('ros' if layer in ROS_LAYERS else str(item.path)))
        if layer in PROCESS_LAYERS and pytest_rerunfailures is not None:
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=1.0))
