"""Each package.xml declares what its code imports, rosdep finds the three packages, versions are written once.

rosdep finds packages as catkin_pkg's ``find_packages`` does: it walks each
``--from-paths`` folder and stops descending at the first package.xml, so the
interface and demos packages nested in this repository are only found when
their folders are named too.  The test lays out a workspace as the README's own
commands do and asks catkin_pkg which packages rosdep would see.
"""
import ast
import pathlib
import re
import shlex
import subprocess
import sys
import tomllib

import pytest

catkin_packages = pytest.importorskip('catkin_pkg.packages', reason='catkin_pkg is not installed')
from catkin_pkg.package import parse_package  # noqa: E402, I100

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: Imported top-level module -> rosdep key that provides it.
MODULE_KEYS = {
    'rclpy': 'rclpy', 'rosidl_generator_py': 'rosidl_generator_py',
    'ament_index_python': 'ament_index_python', 'builtin_interfaces': 'builtin_interfaces',
    'rcl_interfaces': 'rcl_interfaces', 'std_msgs': 'std_msgs', 'std_srvs': 'std_srvs',
    'geometry_msgs': 'geometry_msgs', 'sensor_msgs': 'sensor_msgs', 'trajectory_msgs': 'trajectory_msgs',
    'visualization_msgs': 'visualization_msgs', 'diagnostic_msgs': 'diagnostic_msgs',
    'control_msgs': 'control_msgs', 'moveit_msgs': 'moveit_msgs', 'ik_solver_interfaces': 'ik_solver_interfaces',
    'tf2_ros': 'tf2_ros_py',  # the Python module; the key tf2_ros is the C++ package
    'numpy': 'python3-numpy', 'scipy': 'python3-scipy', 'numba': 'python3-numba',
    'llvmlite': 'python3-numba',  # numba's own dependency
    'yaml': 'python3-yaml', 'urdf_parser_py': 'urdfdom_py', 'pinocchio': 'pinocchio',
    'coal': 'coal', 'launch': 'launch', 'launch_ros': 'launch_ros', 'matplotlib': 'python3-matplotlib',
    # tests
    'pytest': 'python3-pytest', 'hypothesis': 'python3-hypothesis', 'catkin_pkg': 'python3-catkin-pkg',
    'launch_testing': 'launch_testing', 'launch_testing_ros': 'launch_testing_ros', 'ament_flake8': 'ament_flake8',
    'ament_pep257': 'ament_pep257', 'cmeel': 'pinocchio',  # the pip wheels' prefix finder, guarded in conftest
}
#: Imported but declared by no rosdep key: rosdep cannot provide them (the README says to pip install them).
UNDECLARED = {
    'ruckig': "motion/timing.py; ROS's ruckig package is the C++ library, without the Python module",
    'mujoco': "ik_solver_demos' simulated arm only; its -pip key would make rosdep run pip (refused on Ubuntu)",
    'pytest_rerunfailures': 'reruns process-graph tests once; no rosdep key exists (conftest runs without it)',
    'roboticstoolbox': 'ik_solver_demos/tools/bench.py compares with it where installed (guarded)',
}
#: Declared but used without an import statement.
USED_WITHOUT_IMPORT = {
    'xacro': 'core/urdf.py runs it in a child process; the launch files call the xacro executable',
    'robot_state_publisher': 'started by the launch files where installed',
    'python3-scipy': "numba's np.dot and np.linalg in the kernels call BLAS and LAPACK through scipy",
}
#: This repository's own modules.  ik_solver_demos is imported by the tests from the same workspace: it cannot
#: be a test_depend of ik_solver, since it depends on ik_solver and colcon refuses a dependency cycle.
LOCAL = {'ik_solver', 'ik_solver_demos', 'ros_fixtures', 'servo_fixtures', 'conftest'}
DEMOS = 'ik_solver_demos'


def imported_modules(*folders):
    """Top-level third-party modules imported (or importorskip'ed) in the .py files under ``folders``."""
    modules = set()
    for folder in folders:
        for path in (ROOT / folder).rglob('*.py'):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module]
                elif isinstance(node, ast.Call) and getattr(node.func, 'attr', '') == 'importorskip' \
                        and node.args and isinstance(node.args[0], ast.Constant):
                    names = [node.args[0].value]
                else:
                    continue
                modules |= {n.split('.')[0] for n in names}
    return {m for m in modules if m not in sys.stdlib_module_names and m not in LOCAL}


def declared(*kinds, package_xml='package.xml'):
    package = parse_package(str(ROOT / package_xml))
    return {d.name for kind in kinds for d in getattr(package, kind)}


RUN_KINDS = ('exec_depends', 'build_export_depends', 'build_depends')


def test_every_import_is_declared():
    code = imported_modules('ik_solver', 'launch')
    unknown = sorted(code - set(MODULE_KEYS) - set(UNDECLARED))
    assert not unknown, f'imported but not mapped to a rosdep key here (and declared in package.xml): {unknown}'
    missing = sorted({MODULE_KEYS[m] for m in code if m in MODULE_KEYS} - declared(*RUN_KINDS))
    assert not missing, f'imported but not an exec_depend: {missing}'
    tests = imported_modules('test')
    unknown = sorted(tests - set(MODULE_KEYS) - set(UNDECLARED))
    assert not unknown, f'tests import modules mapped to no rosdep key: {unknown}'
    missing = sorted({MODULE_KEYS[m] for m in tests if m in MODULE_KEYS} - declared(*RUN_KINDS, 'test_depends'))
    assert not missing, f'tests import, package.xml does not declare: {missing}'


def test_every_declaration_is_used():
    used = {MODULE_KEYS[m] for m in imported_modules('ik_solver', 'launch') if m in MODULE_KEYS}
    unused = sorted(declared(*RUN_KINDS) - used - set(USED_WITHOUT_IMPORT))
    assert not unused, f'declared in package.xml but never imported: {unused}'
    test_used = {MODULE_KEYS[m] for m in imported_modules('test') if m in MODULE_KEYS}
    unused = sorted(declared('test_depends') - test_used - set(USED_WITHOUT_IMPORT))
    assert not unused, f'test_depend never imported by a test: {unused}'


def test_tf2_is_declared_as_the_python_package():
    assert 'tf2_ros_py' in declared(*RUN_KINDS) and 'tf2_ros' not in declared(*RUN_KINDS)


def test_demos_package_declares_what_it_imports_and_nothing_else():
    """ik_solver_demos/package.xml: each import of its code a run dependency (ik_solver too), each one used."""
    code = imported_modules(f'{DEMOS}/{DEMOS}', f'{DEMOS}/launch')  # the code, not its setup.py
    unknown = sorted(code - set(MODULE_KEYS) - set(UNDECLARED))
    assert not unknown, f'ik_solver_demos imports modules mapped to no rosdep key: {unknown}'
    demos = declared(*RUN_KINDS, package_xml=f'{DEMOS}/package.xml')
    needed = {MODULE_KEYS[m] for m in code if m in MODULE_KEYS} | {'ik_solver'}
    assert needed - demos == set(), f'ik_solver_demos imports, its package.xml does not declare: {needed - demos}'
    unused = sorted(demos - needed - set(USED_WITHOUT_IMPORT))
    assert not unused, f'declared in ik_solver_demos/package.xml but never imported: {unused}'
    assert not declared('test_depends', package_xml=f'{DEMOS}/package.xml'), 'its tests are in test/ of ik_solver'


def test_runtime_depends_on_nothing_of_the_demos():
    """A user who only wants IK installs neither the demos package nor MuJoCo nor matplotlib."""
    everything = declared(*RUN_KINDS, 'test_depends')
    assert DEMOS not in everything, 'a dependency of ik_solver on ik_solver_demos is a cycle colcon refuses'
    assert not {'python3-matplotlib', 'mujoco'} & declared(*RUN_KINDS), "the demos' dependencies, not the node's"
    assert not (ROOT / 'ik_solver' / 'sim').exists() and not (ROOT / 'ik_solver' / 'tools').exists()


def readme_rosdep_paths():
    """Return the --from-paths folders of the README's rosdep command, and the folder it runs in."""
    text = (ROOT / 'README.md').read_text()
    line = next(line for line in text.splitlines() if 'rosdep install' in line)
    cwd = re.match(r'\s*cd\s+(\S+)\s*&&', line)
    words = shlex.split(line[line.index('rosdep install'):])
    start = words.index('--from-paths') + 1
    paths = []
    for word in words[start:]:
        if word.startswith('-'):
            break
        paths.append(word)
    return (cwd.group(1) if cwd else '.'), paths


def workspace(tmp_path):
    """Lay out a workspace as the README says (clone into src/ik_solver): package.xml files only."""
    clone = tmp_path / 'ws' / 'src' / 'ik_solver'
    for relative in ('package.xml', 'ik_solver_interfaces/package.xml', f'{DEMOS}/package.xml'):
        (clone / relative).parent.mkdir(parents=True, exist_ok=True)
        (clone / relative).write_text((ROOT / relative).read_text())
    return tmp_path / 'ws'


def found_packages(ws, paths):
    names = set()
    for path in paths:
        names |= {p.name for p in catkin_packages.find_packages(str(ws / path)).values()}
    return names


def test_catkin_pkg_stops_at_the_first_package_xml(tmp_path):
    ws = workspace(tmp_path)
    assert found_packages(ws, ['src']) == {'ik_solver'}  # why the nested package must be named


def test_readme_rosdep_command_finds_both_packages(tmp_path):
    ws = workspace(tmp_path)
    cwd, paths = readme_rosdep_paths()
    assert cwd in ('~/ws', '.'), cwd
    found = found_packages(ws, paths)
    # With --ignore-src the packages found there are sources, so ik_solver's dependency on
    # ik_solver_interfaces (and the demos' on ik_solver) is not looked up as a rosdep key
    # ("Cannot locate rosdep definition").
    assert found == {'ik_solver', 'ik_solver_interfaces', DEMOS}, f'rosdep --from-paths {" ".join(paths)} finds {found}'


def package_version(relative):
    return parse_package(str(ROOT / relative)).version


def test_version_is_written_once_in_package_xml():
    """setup.py reads package.xml; pyproject.toml leaves the version to it; the packages and changelog agree."""
    version = package_version('package.xml')
    assert package_version('ik_solver_interfaces/package.xml') == package_version(f'{DEMOS}/package.xml') == version
    for folder in (ROOT, ROOT / DEMOS):
        project = tomllib.loads((folder / 'pyproject.toml').read_text())['project']
        assert 'version' not in project and 'version' in project['dynamic']
        out = subprocess.run([sys.executable, 'setup.py', '--version'], cwd=folder, capture_output=True, text=True,
                             check=True).stdout.split()
        assert out[-1] == version, (folder, out)
    assert re.search(rf'^{re.escape(version)} \(', (ROOT / 'CHANGELOG.rst').read_text(), re.M)


def requirement_names(lines):
    return {re.split(r'[<>=!~;\[ #]', line.strip(), maxsplit=1)[0].lower() for line in lines
            if line.strip() and not line.lstrip().startswith('#')}


def test_set_up_installs_what_pyproject_declares():
    """The set-up's run-time list is both pyprojects' dependencies and extras; its test list is the test extra."""
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    extras = project['optional-dependencies']
    demos = tomllib.loads((ROOT / DEMOS / 'pyproject.toml').read_text())['project']['dependencies']
    run_time = project['dependencies'] + [r for name in ('motion', 'collision') for r in extras[name]]
    run_time += [r for r in demos if not r.startswith('ik_solver')]  # ik_solver itself: the colcon build
    scripts = ROOT / 'scripts'
    assert requirement_names((scripts / 'requirements.txt').read_text().splitlines()) == requirement_names(run_time)
    test_list = (scripts / 'requirements-test.txt').read_text().splitlines()
    assert requirement_names(test_list) == requirement_names(extras['test'])
    # colcon test runs pytest only for a package whose test extra (or tests_require) names it.
    assert 'pytest' in requirement_names(extras['test'])
