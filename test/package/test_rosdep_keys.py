"""Every rosdep key of the three package.xml files is one this list knows: where rosdep finds it, and why.

Each key below was looked up in rosdistro: ``rosdep/base.yaml`` and ``rosdep/python.yaml`` for system
packages (Ubuntu rule without a release exception), ``jazzy/distribution.yaml`` and
``kilted/distribution.yaml`` for ROS packages (released on both).  The test needs no network: a key that
is added to a package.xml fails here until it has been looked up the same way and written down with the
reason the package needs it, so the README's ``rosdep install`` line cannot break unnoticed.
"""
import pathlib

import pytest

parse_package = pytest.importorskip('catkin_pkg.package', reason='catkin_pkg is not installed').parse_package

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE_XMLS = ('package.xml', 'ik_solver_interfaces/package.xml', 'ik_solver_demos/package.xml')

ROS = 'released for jazzy and kilted'
PYTHON = 'rosdep/python.yaml'
HERE = 'this repository'

#: key -> (where rosdep resolves it, role, why a package needs it).  Roles: run (the nodes, the library and
#: the demos), build (the interface package's build), test (only the test suite).
KEYS = {
    'rclpy': (ROS, 'run', 'the nodes'),
    'rosidl_generator_py': (ROS, 'run', 'message type support; the nodes import it without its code generator'),
    'ament_index_python': (ROS, 'run', 'finds the bundled URDFs and configs in the install space'),
    'builtin_interfaces': (ROS, 'run', 'Time and Duration fields of the messages'),
    'rcl_interfaces': (ROS, 'run', 'parameter descriptors (ranges) of the nodes'),
    'std_msgs': (ROS, 'run', 'headers and status messages'),
    'std_srvs': (ROS, 'run', 'Trigger services (pause, resume, stop)'),
    'geometry_msgs': (ROS, 'run', 'target poses and twists'),
    'sensor_msgs': (ROS, 'run', 'joint states'),
    'trajectory_msgs': (ROS, 'run', 'joint_trajectory_controller commands'),
    'visualization_msgs': (ROS, 'run', 'RViz markers'),
    'diagnostic_msgs': (ROS, 'run', '/diagnostics'),
    'control_msgs': (ROS, 'run', 'the controller action and controller state (guarded where absent)'),
    'moveit_msgs': (ROS, 'run', "MoveIt's GetPositionIK service (skipped where absent)"),
    'tf2_ros_py': (ROS, 'run', 'target frames other than the robot links (the Python tf2_ros)'),
    'ik_solver_interfaces': (HERE, 'run', 'SolveIK, PlanPath, ComputeFK, SolveStatus, ServoStatus'),
    'ik_solver': (HERE, 'run', 'the library and nodes the demos, simulator and benchmarks of ik_solver_demos run'),
    'python3-numpy': (PYTHON, 'run', 'all the maths'),
    'python3-numba': (PYTHON, 'run', 'the compiled solver kernels'),
    'python3-scipy': (PYTHON, 'run', "numba's np.dot and np.linalg call BLAS and LAPACK through scipy"),
    'python3-yaml': (PYTHON, 'run', 'parameter, joint-limit and scene files'),
    'urdfdom_py': (ROS, 'run', 'urdf_parser_py, the URDF reader'),
    'xacro': (ROS, 'run', 'xacro models, run by the model loader and the launch files'),
    'pinocchio': (ROS, 'run', 'collision checking: the geometry model'),
    'coal': (ROS, 'run', 'collision checking: distances and contacts under Pinocchio'),
    'launch': (ROS, 'run', 'the launch files'),
    'launch_ros': (ROS, 'run', 'the launch files'),
    'robot_state_publisher': (ROS, 'run', 'started by the launch files where installed'),
    'ament_cmake': (ROS, 'build', 'the interface package is an ament_cmake package'),
    'rosidl_default_generators': (ROS, 'build', 'generates the interface code'),
    'rosidl_default_runtime': (ROS, 'run', 'loads the generated interface code'),
    'ament_flake8': (ROS, 'test', 'the flake8 linter test'),
    'ament_pep257': (ROS, 'test', 'the pep257 linter test'),
    'python3-pytest': (PYTHON, 'test', 'the test runner'),
    'python3-hypothesis': (PYTHON, 'test', 'property tests of the solver, loader and motion timing'),
    'python3-catkin-pkg': (PYTHON, 'test', 'the packaging tests read package.xml as rosdep does'),
    'python3-matplotlib': (PYTHON, 'run', "ik_solver_demos' figures (a test_depend of ik_solver: the figure tests)"),
    'launch_testing': (ROS, 'test', 'the launch-file integration tests'),
}

#: Keys that must not come back, and why.
REFUSED = {
    'python3-pytest-rerunfailures': 'no such rosdep key in rosdistro: rosdep install stops with an error',
    'python3-mujoco-pip': 'only the simulator needs MuJoCo; a -pip key makes rosdep run pip, which refuses '
                          'to install into the system Python of Ubuntu 24.04 (PEP 668)',
    'ruckig': "ROS's ruckig package is the C++ library only: it does not provide the Python module",
}

KINDS = {
    'run': {'exec_depends', 'build_export_depends', 'build_depends'},
    'build': {'buildtool_depends', 'build_depends', 'buildtool_export_depends'},
    'test': {'test_depends'},
}
ALL_KINDS = ('build_depends', 'buildtool_depends', 'build_export_depends', 'buildtool_export_depends',
             'exec_depends', 'test_depends', 'doc_depends')


def declared():
    """Return {(package.xml path, dependency kind, key)} of every package.xml."""
    found = set()
    for relative in PACKAGE_XMLS:
        package = parse_package(str(ROOT / relative))
        for kind in ALL_KINDS:
            found |= {(relative, kind, dep.name) for dep in getattr(package, kind)}
    return found


def test_every_key_is_listed_with_where_it_resolves_and_why():
    unknown = sorted({key for _, _, key in declared()} - set(KEYS))
    assert not unknown, f'new rosdep keys: look them up in rosdistro for jazzy and kilted, then list them: {unknown}'


def test_every_listed_key_is_declared():
    stale = sorted(set(KEYS) - {key for _, _, key in declared()})
    assert not stale, f'listed here but in no package.xml: {stale}'


def test_refused_keys_stay_out():
    back = sorted({key for _, _, key in declared()} & set(REFUSED))
    assert not back, [f'{key}: {REFUSED[key]}' for key in back]
    assert not [key for _, _, key in declared() if key.endswith('-pip')], 'a -pip key makes rosdep run pip'


def test_each_key_is_declared_as_its_role():
    wrong = sorted(f'{path}: {kind} {key} (role {KEYS[key][1]})' for path, kind, key in declared()
                   if key in KEYS and KEYS[key][1] != 'run' and kind not in KINDS[KEYS[key][1]])
    assert not wrong, f'test-only and build-only keys must not be run dependencies: {wrong}'
