"""Launch files: the parameter precedence they build, as a plain function and through launch_ros where installed.

The runtime's launch files (launch/) start the nodes next to a robot; ik_solver_demos' (ik_solver_demos/launch/)
add the simulated arm and the demo and include the runtime's.

The node's parameters come from a list: the parameter file first, then a dict
of the launch arguments the user gave; launch_ros (like rcl) lets a later entry
win.  ``merged`` applies that rule to the list independently of the package, so
these tests check what the node would finally see.
"""
import ast
import pathlib
import shlex
from types import SimpleNamespace

from ik_solver.core.urdf import parse_robot
from ik_solver.ros.launch_setup import IK_LAUNCH_ARGUMENTS, ik_node_setup, NodeSetup, on_process_exit, \
    package_available, ProcessFailed, SERVO_LAUNCH_ARGUMENTS, stop_all_on_exit
from ik_solver_demos.tools.launcher import flat_parameters
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAUNCH_DIR = ROOT / 'launch'
DEMOS_LAUNCH_DIR = ROOT / 'ik_solver_demos' / 'launch'
#: Launch files by package: the ``ros2 launch <package> <file>`` a user types.
LAUNCH_FILES = {'ik_solver': (LAUNCH_DIR, ('ik_solver.launch.py', 'servo.launch.py')),
                'ik_solver_demos': (DEMOS_LAUNCH_DIR, ('demo.launch.py', 'servo.launch.py'))}
SHARE = str(ROOT)
NAMES = {name for name, _ in IK_LAUNCH_ARGUMENTS}
PANDA_CONFIG = """
/**/ik_solver:
  ros__parameters:
    base_link: panda_link0
    tip_link: panda_hand
    timeout: 0.02
"""


def describe(urdf, xacro_args):
    return f'xacro {urdf} {" ".join(xacro_args)}'.strip()


def merged(parameters, node='/ik_solver'):
    """Return the parameters the node ends with: files (its wildcard section) then dicts, later entries winning."""
    values = {}
    for entry in parameters:
        if isinstance(entry, dict):
            values.update(entry)
            continue
        document = yaml.safe_load(pathlib.Path(entry).read_text())
        for key in ('/**', '/**/ik_solver', node, node.lstrip('/')):
            values.update(flat_parameters(document.get(key, {}).get('ros__parameters', {})))
    return values


@pytest.fixture
def panda_config(tmp_path):
    path = tmp_path / 'panda.yaml'
    path.write_text(PANDA_CONFIG)
    return str(path)


def test_default_is_the_bundled_ik7_with_its_config_and_nothing_else():
    setup = ik_node_setup({}, SHARE, describe)
    assert setup.urdf == f'{SHARE}/urdf/ik7.urdf.xacro'
    assert setup.parameters == [f'{SHARE}/config/ik7.yaml', {'robot_description': describe(setup.urdf, [])}]
    values = merged(setup.parameters)
    assert values['base_link'] == 'base_link' and values['tip_link'] == 'tool0'  # from ik7.yaml, not launch


def test_user_config_wins_over_every_launch_default(panda_config):
    setup = ik_node_setup({'urdf_file': '/robots/panda.urdf.xacro', 'config': panda_config, 'base_link': '',
                           'tip_link': '', 'namespace': '', 'use_sim_time': ''}, SHARE, describe)
    values = merged(setup.parameters)
    assert (values['base_link'], values['tip_link'], values['timeout']) == ('panda_link0', 'panda_hand', 0.02)
    assert values['robot_description'] == 'xacro /robots/panda.urdf.xacro'
    assert set(setup.parameters[-1]) == {'robot_description'}  # no launch default leaks in


def test_only_given_launch_arguments_override_the_config(panda_config):
    setup = ik_node_setup({'urdf_file': '/robots/panda.urdf', 'config': panda_config, 'tip_link': 'panda_link8',
                           'use_sim_time': 'True', 'joint_states_topic': '/franka/joint_states'}, SHARE, describe)
    values = merged(setup.parameters)
    assert (values['base_link'], values['tip_link']) == ('panda_link0', 'panda_link8')
    assert values['use_sim_time'] is True and values['joint_states_topic'] == '/franka/joint_states'
    assert values['timeout'] == 0.02


def test_urdf_file_without_config_keeps_the_nodes_generic_defaults():
    setup = ik_node_setup({'urdf_file': '/robots/arm.urdf'}, SHARE, describe)
    assert setup.parameters == [{'robot_description': 'xacro /robots/arm.urdf'}]  # no ik7.yaml for a foreign robot
    assert not any(isinstance(p, str) for p in setup.parameters)


def test_xacro_arguments_reach_xacro_and_the_node():
    setup = ik_node_setup({'robot': 'ik6', 'xacro_args': ' prefix:=right_  use_gripper:=false '}, SHARE, describe)
    assert setup.xacro_args == ['prefix:=right_', 'use_gripper:=false']
    values = merged(setup.parameters)
    assert values['xacro_args'] == ['prefix:=right_', 'use_gripper:=false']
    assert values['robot_description'] == f'xacro {SHARE}/urdf/ik6.urdf.xacro prefix:=right_ use_gripper:=false'


def test_every_topic_is_a_launch_argument():
    given = {'joint_states_topic': 'arm/joint_states', 'controller_name': 'arm_controller',
             'trajectory_topic': 'arm_controller/joint_trajectory', 'robot_description_topic': 'arm/robot_description',
             'target_topic': 'goal', 'status_topic': 'ik_status', 'markers_topic': 'ik_markers'}
    setup = ik_node_setup(given, SHARE, describe)
    values = merged(setup.parameters)
    for name in ('joint_states_topic', 'controller_name', 'trajectory_topic', 'robot_description_topic'):
        assert values[name] == given[name]
    assert sorted(setup.remappings) == [('~/markers', 'ik_markers'), ('~/status', 'ik_status'),
                                        ('~/target_pose', 'goal')]


def test_robot_none_reads_the_topic_and_bad_combinations_are_refused():
    setup = ik_node_setup({'robot': 'none'}, SHARE, describe)
    assert setup == NodeSetup('', [], [], [])
    with pytest.raises(ValueError, match='not both'):
        ik_node_setup({'robot': 'ik6', 'urdf_file': '/a.urdf'}, SHARE)
    with pytest.raises(ValueError, match='unknown robot:=panda'):
        ik_node_setup({'robot': 'panda'}, SHARE)
    with pytest.raises(ValueError, match='use_sim_time'):
        ik_node_setup({'use_sim_time': 'maybe'}, SHARE)


def declared(path):
    """Names a launch file declares: DeclareLaunchArgument('name', ...), its ARGUMENTS table, or a shared table."""
    tree = ast.parse(path.read_text())
    names = {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, 'id', '') == 'DeclareLaunchArgument' and node.args
             and isinstance(node.args[0], ast.Constant)}
    for node in tree.body:  # ARGUMENTS = ((name, default, description), ...)
        if isinstance(node, ast.Assign) and [getattr(t, 'id', '') for t in node.targets] == ['ARGUMENTS']:
            names |= {row[0] for row in ast.literal_eval(node.value)}
    tables = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    if 'IK_LAUNCH_ARGUMENTS' in tables:
        names |= NAMES
    if 'SERVO_LAUNCH_ARGUMENTS' in tables:
        names |= {name for name, _, _ in SERVO_LAUNCH_ARGUMENTS}
    return names


def docstring_examples(name, package='ik_solver'):
    """Return the ``ros2 launch <package> <name> ...`` commands of a launch file's docstring as {argument: value}.

    A line ending in a backslash goes on on the next one, and quotes are undone, as a shell does; a command
    ends at a closing double backtick (reST literal).

    Args:
        name: file name in the package's launch folder, e.g. 'ik_solver.launch.py'.
        package: 'ik_solver' (launch/) or 'ik_solver_demos' (ik_solver_demos/launch/).

    Returns:
        One dict per command, e.g. {'robot': 'ik6'}; {} for a command without arguments.
    """
    text = ast.get_docstring(ast.parse((LAUNCH_FILES[package][0] / name).read_text())).replace('\\\n', ' ')
    command = f'ros2 launch {package} {name}'
    examples = []
    for line in text.splitlines():
        if command in line:
            words = shlex.split(line.split(command, 1)[1].split('``')[0])
            examples.append(dict(word.split(':=', 1) for word in words))
    return examples


def test_launch_files_declare_their_arguments():
    assert {'robot', 'urdf_file', 'config', 'xacro_args', 'namespace', 'rviz', 'joint_states_topic'} <= \
        declared(LAUNCH_DIR / 'ik_solver.launch.py')
    assert {'kinematic', 'output_dir', 'start_robot_state_publisher', 'rviz', 'namespace'} <= \
        declared(DEMOS_LAUNCH_DIR / 'demo.launch.py')
    servo = {name for name, _, _ in SERVO_LAUNCH_ARGUMENTS}
    assert declared(LAUNCH_DIR / 'servo.launch.py') == declared(DEMOS_LAUNCH_DIR / 'servo.launch.py') == servo


def test_docstring_examples_give_only_declared_arguments():
    """A misspelt argument in an example is silently ignored by ros2 launch: the user never learns."""
    for package, (folder, names) in LAUNCH_FILES.items():
        for name in names:
            examples = docstring_examples(name, package)
            assert examples, (package, name)
            for example in examples:
                assert set(example) <= declared(folder / name), (package, name, example)


def test_runtime_launch_files_start_no_simulator():
    """The runtime's launch files name no program of ik_solver_demos: a user with only ik_solver can run them."""
    for path in sorted(LAUNCH_DIR.glob('*.launch.py')):
        text = path.read_text()
        tree = ast.parse(text)
        strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}
        assert not strings & {'sim_arm_node', 'ik_demo', 'ik_solver_demos'}, path.name
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not [m for m in imported if m.split('.')[0] == 'ik_solver_demos'], path.name
    assert sorted(p.name for p in DEMOS_LAUNCH_DIR.glob('*.launch.py')) == sorted(LAUNCH_FILES['ik_solver_demos'][1])


def test_docstring_examples_on_a_bundled_arm_name_links_the_arm_has():
    """An example a user copies as is (no /path/ placeholder) must load: the chain's two ends exist.

    The bundled xacros take no ``prefix``: a tip_link of a prefixed arm on one of them names no link, and
    the node comes up without a robot model.
    """
    bundled = [e for e in docstring_examples('ik_solver.launch.py') if 'urdf_file' not in e and 'config' not in e]
    assert len(bundled) >= 3  # ik7, ik6, a namespace
    for example in bundled:
        setup = ik_node_setup(example, SHARE)
        mappings = dict(arg.split(':=', 1) for arg in setup.xacro_args)
        links = {link.name for link in parse_robot(setup.urdf, mappings).links}
        values = merged(setup.parameters)
        assert {values['base_link'], values['tip_link']} <= links, example


# -- with launch and launch_ros (a ROS 2 install; not on PyPI) ----------------------------------------------------

def launch_entities(name, arguments, folder=LAUNCH_DIR):
    """Run a launch file's description in a LaunchContext with ``arguments``; return the actions it makes."""
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    context = LaunchContext()
    context.launch_configurations.update(arguments)
    description = PythonLaunchDescriptionSource(str(folder / name)).get_launch_description(context)
    entities = []
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument):
            context.launch_configurations.setdefault(entity.name, entity.default_value[0].text
                                                     if entity.default_value else '')
        elif isinstance(entity, OpaqueFunction):
            entities += entity.execute(context) or []
        else:
            entities.append(entity)
    return context, entities


def ik_node_parameters(context, entities):
    """Return the IK node's parameter list after launch_ros's substitutions (files and dicts), and the nodes."""
    from launch.actions import GroupAction
    from launch_ros.actions import Node
    from launch_ros.utilities import evaluate_parameters
    nodes = [a for g in entities if isinstance(g, GroupAction) for a in g.get_sub_entities() if isinstance(a, Node)]
    node = next(n for n in nodes if n.node_executable == 'ik_solver_node')
    evaluated = evaluate_parameters(context, node._Node__parameters)
    return [str(p) if isinstance(p, pathlib.PurePath) else p for p in evaluated], nodes


def test_precedence_through_launch_ros(panda_config, tmp_path):
    pytest.importorskip('launch_ros', reason='launch_ros is not installed (not on PyPI); needs a ROS 2 install')
    urdf = tmp_path / 'two.urdf'
    urdf.write_text('<robot name="two"><link name="panda_link0"/><link name="panda_hand"/></robot>')
    context, entities = launch_entities('ik_solver.launch.py', {'urdf_file': str(urdf), 'config': panda_config,
                                                                'tip_link': 'panda_link8', 'namespace': 'left',
                                                                'start_robot_state_publisher': 'false'})
    parameters, nodes = ik_node_parameters(context, entities)
    values = merged(parameters)
    assert (values['base_link'], values['tip_link'], values['timeout']) == ('panda_link0', 'panda_link8', 0.02)
    assert '<robot name="two">' in values['robot_description']  # xacro ran on the user's file
    assert [n.node_executable for n in nodes] == ['ik_solver_node']  # robot_state_publisher off


def test_launch_files_describe_without_errors():
    pytest.importorskip('launch_ros', reason='launch_ros is not installed (not on PyPI); needs a ROS 2 install')
    from launch.actions import RegisterEventHandler
    for folder, names in LAUNCH_FILES.values():
        for name in names:
            _, entities = launch_entities(name, {}, folder)
            assert any(isinstance(e, RegisterEventHandler) for e in entities), name  # one exit stops all
    assert stop_all_on_exit([]) is not None


@pytest.mark.parametrize('code, shutting_down, fails', [
    (0, False, False), (1, False, True), (-9, False, True), (-2, True, False), (1, True, False), (0, True, False)])
def test_a_process_failure_fails_the_launch_and_a_clean_exit_does_not(code, shutting_down, fails):
    """A node's crash or a failed demo makes ``ros2 launch`` exit 1 (launch's code for an error raised in it)."""
    pytest.importorskip('launch.actions', reason='launch is not installed (not on PyPI); needs a ROS 2 install')
    from launch.actions import Shutdown
    event = SimpleNamespace(action=SimpleNamespace(name='ik_demo-3'), returncode=code)
    context = SimpleNamespace(is_shutdown=shutting_down)
    if fails:
        with pytest.raises(ProcessFailed, match=f'ik_demo-3 exited with code {code}'):
            on_process_exit(event, context)
    elif shutting_down:
        assert on_process_exit(event, context) == []   # the others are being stopped already: no second log
    else:
        assert isinstance(on_process_exit(event, context)[-1], Shutdown)


def test_a_failed_process_ends_the_launch_with_1_after_its_own_exit_actions():
    """Run by launch: the failure is raised after the process's own ``on_exit`` (and launch_testing's record)."""
    pytest.importorskip('launch.actions', reason='launch is not installed (not on PyPI); needs a ROS 2 install')
    from launch import LaunchDescription, LaunchService
    from launch.actions import ExecuteProcess, OpaqueFunction
    seen = []
    failing = ExecuteProcess(cmd=['bash', '-c', 'exit 3'], name='failing',
                             on_exit=[OpaqueFunction(function=lambda context: seen.append('on_exit'))])
    service = LaunchService()
    service.include_launch_description(LaunchDescription([failing, stop_all_on_exit([failing])]))
    assert service.run() == 1
    assert seen == ['on_exit']


def test_missing_robot_state_publisher_or_rviz_starts_nothing_unwanted():
    pytest.importorskip('launch_ros', reason='launch_ros is not installed (not on PyPI); needs a ROS 2 install')
    from launch.actions import LogInfo
    if package_available('robot_state_publisher') or package_available('rviz2'):
        pytest.skip('robot_state_publisher or rviz2 is installed here')
    context, entities = launch_entities('ik_solver.launch.py', {'rviz': 'true'})  # auto: skipped with a message
    _, nodes = ik_node_parameters(context, entities)
    assert [n.node_executable for n in nodes] == ['ik_solver_node']
    group = next(e for e in entities if hasattr(e, 'get_sub_entities'))
    messages = [''.join(part.text for part in e.msg) for e in group.get_sub_entities() if isinstance(e, LogInfo)]
    assert len(messages) == 2  # robot_state_publisher (auto) and rviz2, each named
    assert 'rviz2' in messages[1] and 'rviz:=true' in messages[1]  # what the user gave, not an internal 'auto'
    with pytest.raises(RuntimeError, match='start_robot_state_publisher:=true'):
        launch_entities('ik_solver.launch.py', {'start_robot_state_publisher': 'true'})  # before any process


def test_servo_takes_the_same_robot_state_publisher_choices():
    """auto, true and false, as ik_solver.launch.py and demo.launch.py: 'auto' was a launch error here."""
    pytest.importorskip('launch_ros', reason='launch_ros is not installed (not on PyPI); needs a ROS 2 install')
    from launch.actions import GroupAction
    from launch_ros.actions import Node
    if package_available('robot_state_publisher'):
        pytest.skip('robot_state_publisher is installed here')
    for value in ('auto', 'false'):
        _, entities = launch_entities('servo.launch.py', {'start_robot_state_publisher': value})
        nodes = [a for g in entities if isinstance(g, GroupAction) for a in g.get_sub_entities() if isinstance(a, Node)]
        assert [n.node_executable for n in nodes] == ['ik_servo_node'], value
    with pytest.raises(RuntimeError, match='start_robot_state_publisher:=true'):
        launch_entities('servo.launch.py', {'start_robot_state_publisher': 'true'})  # before any process


def test_demos_servo_launch_adds_the_simulator_to_the_runtime_servo():
    """ik_solver_demos' servo.launch.py: ik_solver's servo.launch.py, every argument passed on, and sim_arm_node."""
    pytest.importorskip('launch_ros', reason='launch_ros is not installed (not on PyPI); needs a ROS 2 install')
    from launch.actions import GroupAction, IncludeLaunchDescription
    from launch_ros.actions import Node
    context, entities = launch_entities('servo.launch.py', {'namespace': 'left'}, DEMOS_LAUNCH_DIR)
    nodes = [a for g in entities if isinstance(g, GroupAction) for a in g.get_sub_entities() if isinstance(a, Node)]
    assert [(n.node_package, n.node_executable) for n in nodes] == [('ik_solver_demos', 'sim_arm_node')]
    include = next(e for e in entities if isinstance(e, IncludeLaunchDescription))
    source = include.launch_description_source
    source.get_launch_description(context)  # expands its location: ik_solver's installed servo.launch.py
    assert source.location.endswith('/share/ik_solver/launch/servo.launch.py'), source.location
    passed = {name for name, _ in include.launch_arguments}
    assert passed == {name for name, _, _ in SERVO_LAUNCH_ARGUMENTS}


def test_demo_launch_puts_every_node_in_the_namespace():
    """namespace:=right: the demo's client finds the arm and the IK node by relative names, so all share it."""
    pytest.importorskip('launch_ros', reason='launch_ros is not installed (not on PyPI); needs a ROS 2 install')
    from launch.actions import GroupAction, IncludeLaunchDescription
    from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions
    from launch_ros.actions import Node, PushRosNamespace
    context, entities = launch_entities('demo.launch.py', {'namespace': 'right'}, DEMOS_LAUNCH_DIR)
    group = next(e for e in entities if isinstance(e, GroupAction))
    inside = group.get_sub_entities()
    push = next(a for a in inside if isinstance(a, PushRosNamespace))
    assert perform_substitutions(context, push.namespace) == 'right'
    assert sorted(n.node_executable for n in inside if isinstance(n, Node)) == ['ik_demo', 'sim_arm_node']
    include = next(e for e in entities if isinstance(e, IncludeLaunchDescription))
    passed = {perform_substitutions(context, normalize_to_list_of_substitutions(name)):
              perform_substitutions(context, normalize_to_list_of_substitutions(value))
              for name, value in include.launch_arguments}
    assert passed['namespace'] == 'right'


def test_private_ros_domain_unless_the_user_set_one():
    from ik_solver_demos.tools.resources import private_ros_domain, PRIVATE_DOMAINS
    mine = {'ROS_DOMAIN_ID': '42'}
    assert private_ros_domain(mine) == ('42', False) and mine == {'ROS_DOMAIN_ID': '42'}
    fresh = {}
    domain, picked = private_ros_domain(fresh)
    assert picked and int(domain) in PRIVATE_DOMAINS and int(domain) != 0
    assert fresh == {'ROS_DOMAIN_ID': domain, 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
