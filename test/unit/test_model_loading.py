"""URDF/xacro loading: robots as they ship, each bad model's specific error, xacro arguments, argument checks.

The regression tests reproduce the texts of an attack campaign verbatim.
"""
import multiprocessing
import time

from conftest import example_robot, URDF_DIR
from ik_solver.core.chain import load_chain
from ik_solver.core.exceptions import (ChainError, JointLimitError, LinkNotFoundError, ModelError, ModelValueError,
                                       TreeError, UnsupportedJointError, URDFParseError)
from ik_solver.core.frames import RobotFrames
from ik_solver.core.urdf import load_robot_description, MAX_MAGNITUDE, parse_robot
import numpy as np
import pytest


def _robot(joints, links=('a', 'b', 'c')):
    body = ''.join(f'<link name="{n}"/>' for n in links)
    return f'<robot name="t">{body}{joints}</robot>'


REV_AB = ('<joint name="j1" type="revolute"><parent link="a"/><child link="b"/>'
          '<axis xyz="0 0 1"/><limit lower="-1" upper="1" velocity="1" effort="1"/></joint>')


def test_bundled_xacro_and_full_tags_load():
    chain = load_chain(str(URDF_DIR / 'ik7.urdf.xacro'), 'base_link', 'tool0')
    assert chain.n == 7
    # safety_controller soft limits are 2 deg inside the hard ones, and win.
    assert chain.upper[0] == pytest.approx(np.radians(168))


def test_xacro_text_is_expanded():
    text = ('<robot name="t" xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:property name="L" value="0.5"/>'
            '<link name="a"/><link name="b"/><joint name="j1" type="revolute"><parent link="a"/><child link="b"/>'
            '<origin xyz="${L} 0 0"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" velocity="1" effort="1"/>'
            '</joint></robot>')
    chain = load_chain(text, 'a', 'b')
    assert chain.fk(np.zeros(1))[0, 3] == 0.5


def test_robot_with_meshes_transmissions_gazebo_loads():
    urdf = _robot(REV_AB + """
      <joint name="j2" type="fixed"><parent link="b"/><child link="c"/></joint>
      <transmission name="t1"><type>weird</type><joint name="j1"/></transmission>
      <gazebo reference="b"><material>Gazebo/Orange</material></gazebo>
      <ros2_control name="x" type="system"><hardware><plugin>p</plugin></hardware></ros2_control>
    """).replace('<link name="b"/>', '<link name="b"><visual><geometry><mesh filename="package://nowhere/m.dae"/>'
                 '</geometry><material name="m"><texture/></material></visual></link>')
    chain = load_chain(urdf, 'a', 'c')
    assert chain.joint_names == ['j1']


@pytest.mark.parametrize('robot,base,tip,n', [
    ('ur_description/urdf/ur5_robot.urdf', 'base_link', 'tool0', 6),
    ('panda_description/urdf/panda.urdf', 'panda_link0', 'panda_hand_tcp', 7),
])
def test_shipped_robots_load(robot, base, tip, n):
    assert load_chain(example_robot(robot), base, tip).n == n


def test_safety_controller_takes_tighter_limits():
    joint = ('<joint name="j1" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
             '<limit lower="-2" upper="2" velocity="1" effort="1"/>'
             '<safety_controller soft_lower_limit="-1.5" soft_upper_limit="3" k_velocity="1"/></joint>')
    chain = load_chain(_robot(joint), 'a', 'b')
    assert chain.lower[0] == -1.5 and chain.upper[0] == 2


@pytest.mark.parametrize('source,base,tip,error,match', [
    ('<robot name="x"><link name="a"/>', 'a', 'a', URDFParseError, 'malformed XML'),
    ('', 'a', 'b', URDFParseError, 'empty'),
    (None, 'a', 'b', URDFParseError, 'must be URDF/xacro text or a file path, got NoneType'),
    ('/no/such/file.urdf', 'a', 'b', URDFParseError, 'not found'),
    ('<notrobot/>', 'a', 'b', URDFParseError, '<notrobot>'),
    (_robot(REV_AB), 'a', 'ghost', LinkNotFoundError, "'ghost'"),
    (_robot(REV_AB), 'b', 'a', ChainError, "'a' is not below base link 'b'"),
    (_robot('<joint name="f" type="fixed"><parent link="a"/><child link="b"/></joint>'), 'a', 'b',
     ChainError, 'no movable joint'),
    (_robot('<joint name="jr" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
            '<limit velocity="1" effort="1"/></joint>'), 'a', 'b', JointLimitError, "'jr'"),
    (_robot('<joint name="jf" type="floating"><parent link="a"/><child link="b"/></joint>'), 'a', 'b',
     UnsupportedJointError, "'jf' is floating"),
    (_robot('<joint name="jp" type="planar"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint>'),
     'a', 'b', UnsupportedJointError, "'jp' is planar"),
    (_robot(REV_AB + '<joint name="jm" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" velocity="1" effort="1"/><mimic joint="j1"/></joint>'),
     'b', 'c', UnsupportedJointError, "'jm' follows 'j1', which is not a movable joint of the chain"),
    (_robot('<joint name="jm" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" velocity="1" effort="1"/><mimic joint="outside"/></joint>'),
     'b', 'c', UnsupportedJointError, "'jm' follows 'outside'"),
    (_robot(REV_AB.replace('/></joint>', '/><mimic joint="jm"/></joint>') + '<joint name="jm" type="revolute">'
            '<parent link="b"/><child link="c"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" velocity="1" '
            'effort="1"/><mimic joint="j1"/></joint>'), 'a', 'c', UnsupportedJointError, 'itself a mimic joint'),
    (_robot('<joint name="jz" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 0"/>'
            '<limit lower="-1" upper="1" velocity="1" effort="1"/></joint>'), 'a', 'b',
     ModelValueError, "'jz' has a zero <axis xyz>"),
])
def test_bad_models_raise_specific_errors(source, base, tip, error, match):
    with pytest.raises(error, match=match):
        load_chain(source, base, tip)


def _mimic_pair(multiplier, offset, mimic_limits='lower="-1" upper="3" velocity="1.5"', master_type='revolute'):
    master = ('<limit velocity="1" effort="1"/>' if master_type == 'continuous'
              else '<limit lower="-2" upper="2" velocity="1" effort="1"/>')
    return _robot(f'<joint name="j1" type="{master_type}"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
                  f'{master}</joint><joint name="m1" type="revolute"><parent link="b"/><child link="c"/>'
                  f'<axis xyz="0 0 1"/><limit {mimic_limits} effort="1"/>'
                  f'<mimic joint="j1" multiplier="{multiplier}" offset="{offset}"/></joint>')


@pytest.mark.parametrize('multiplier', [2.0, -2.0])
def test_mimic_limits_bind_the_master(multiplier, rng):
    """m1 = multiplier * j1 + 0.5 within [-1, 3] at <= 1.5 rad/s: j1 (own [-2, 2], 1 rad/s) is bound by both."""
    chain = load_chain(_mimic_pair(multiplier, 0.5), 'a', 'c')
    assert chain.joint_names == ['j1'] and chain.velocity_limits[0] == pytest.approx(1.5 / 2)
    mimic = multiplier * np.array([chain.lower[0], chain.upper[0]]) + 0.5
    assert sorted(mimic) == pytest.approx([-1.0, 3.0])   # the range ends exactly where m1 meets its limits
    # Independent check: every master position in the chain's range keeps m1 in [-1, 3]; just outside, not.
    q = chain.random_configuration(rng, 1000)[:, 0]
    assert np.all((multiplier * q + 0.5 >= -1.0 - 1e-12) & (multiplier * q + 0.5 <= 3.0 + 1e-12))
    for beyond in (chain.lower[0] - 1e-3, chain.upper[0] + 1e-3):
        assert not -1.0 <= multiplier * beyond + 0.5 <= 3.0


def test_mimic_limits_fold_into_a_continuous_master_and_can_be_impossible():
    chain = load_chain(_mimic_pair(2.0, 0.5, master_type='continuous'), 'a', 'c')
    assert (chain.lower[0], chain.upper[0]) == (-0.75, 1.25) and not chain.continuous[0]
    with pytest.raises(JointLimitError, match="'m1'.*cannot stay within"):
        load_chain(_mimic_pair(2.0, 10.0), 'a', 'c')
    with pytest.raises(JointLimitError, match="'m1' stays at its offset 5.0"):
        load_chain(_mimic_pair(0.0, 5.0), 'a', 'c')


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        load_chain('<robot', 'a', 'b')


def test_unknown_link_in_fk_names_chain_links(ik7):
    with pytest.raises(LinkNotFoundError, match="'nope'.*link4"):
        ik7.fk(np.zeros(7), 'nope')


# --- a model that is not a tree is refused at once, never walked forever -------------------------

ISSUE_7_CYCLE = ('<robot name="r"><link name="base"/><link name="a"/><link name="b"/><joint name="j1" type="fixed">'
                 '<parent link="a"/><child link="b"/></joint><joint name="j2" type="fixed"><parent link="b"/>'
                 '<child link="a"/></joint></robot>')


def _load_in_child(queue, source, base, tip):
    start = time.process_time()   # the child's CPU time: a loaded machine cannot stretch it, a loop would
    try:
        load_chain(source, base, tip)
        queue.put(('loaded', '', time.process_time() - start))
    except Exception as exc:
        queue.put((type(exc).__name__, str(exc), time.process_time() - start))


def test_cyclic_urdf_is_refused_within_a_second():
    # In a child process, so that a regression fails this test instead of hanging the suite and eating memory.
    ctx = multiprocessing.get_context('fork')
    queue = ctx.Queue()
    child = ctx.Process(target=_load_in_child, args=(queue, ISSUE_7_CYCLE, 'base', 'b'))
    child.start()
    child.join(30)   # wall clock only as a hang guard
    if child.is_alive():
        child.kill()
        pytest.fail('load_chain hangs on a cyclic URDF')
    kind, message, elapsed = queue.get(timeout=5)
    assert kind == 'TreeError'
    assert "'j1'" in message and "'j2'" in message and 'cycle' in message
    assert elapsed < 1.0


J = '<joint name="{}" type="fixed"><parent link="{}"/><child link="{}"/></joint>'


@pytest.mark.parametrize('body,error,match', [
    ('<link name="a"/>' + J.format('j', 'a', 'a'), TreeError, "'j' form a cycle through links 'a'"),
    ('<link name="a"/><link name="b"/><link name="c"/>' + J.format('j1', 'a', 'c') + J.format('j2', 'b', 'c'),
     TreeError, "link 'c' has two parent joints: 'j1' and 'j2'"),
    ('<link name="a"/>' + J.format('j', 'a', 'ghost'), TreeError, "'j' has child link 'ghost', which is not declared"),
    ('<link name="b"/>' + J.format('j', 'ghost', 'b'), TreeError, "'j' has parent link 'ghost'"),
    ('<link name="a"/><link name="b"/><link name="c"/>' + J.format('j', 'a', 'b') + J.format('j', 'b', 'c'),
     TreeError, "joint name 'j' is declared more than once"),
    ('<link name="a"/><link name="a"/><link name="b"/>' + J.format('j', 'a', 'b'),
     TreeError, "link name 'a' is declared more than once"),
    ('<link name=" "/>', TreeError, 'a link has an empty name'),
    ('<link name="a"/><link name="b"/><joint name="j" type="fixed"><child link="b"/></joint>',
     URDFParseError, 'parent'),
    ('<link name="a"/><link name="b"/><joint name="j" type="fixed"><parent/><child link="b"/></joint>',
     URDFParseError, "'j' has a <parent> without a link name"),
    ('<link name="a"/><link name="b"/><joint name="j" type="fixed"><origin xyz="1 0 0"/><origin xyz="2 0 0"/>'
     '<parent link="a"/><child link="b"/></joint>', URDFParseError, "'j' has 2 <origin> elements"),
])
def test_models_that_are_not_trees_are_refused(body, error, match):
    with pytest.raises(error, match=match):
        parse_robot(f'<robot name="t">{body}</robot>')


def test_cycle_in_a_robot_object_is_refused_by_chain_and_frames():
    # A robot that did not come through parse_robot (rewired in memory): the walkers must not loop.
    robot = parse_robot(_robot(REV_AB + J.format('j2', 'b', 'c')))
    robot.joints[0].parent = 'c'
    for build in (lambda: RobotFrames(robot, 'a'), lambda: load_chain_from(robot)):
        with pytest.raises(TreeError, match='cycle'):
            build()


def load_chain_from(robot):
    from ik_solver.core.chain import chain_from_robot
    return chain_from_robot(robot, 'a', 'c')


# --- every number the model gives is checked, and the element is named ----------------------------

def _revolute(limit='lower="-1" upper="1" velocity="1" effort="1"', origin='', axis='0 0 1', extra=''):
    return _robot(f'<joint name="j1" type="revolute"><parent link="a"/><child link="b"/>{origin}'
                  f'<axis xyz="{axis}"/><limit {limit}/>{extra}</joint>')


@pytest.mark.parametrize('velocity', ['nan', 'inf', '-inf', '0', '-1', '1e300', '10001'])
def test_velocity_limit_cannot_be_switched_off(velocity):
    with pytest.raises(JointLimitError, match=r"joint 'j1' has <limit velocity> .*finite, positive"):
        load_chain(_revolute(f'lower="-1" upper="1" velocity="{velocity}" effort="1"'), 'a', 'b')


def test_missing_velocity_is_refused_as_urdf_requires_and_unlimited_only_without_limit():
    with pytest.raises(URDFParseError, match='velocity'):
        load_chain(_revolute('lower="-1" upper="1" effort="1"'), 'a', 'b')
    continuous = _robot('<joint name="c" type="continuous"><parent link="a"/><child link="b"/>'
                        '<axis xyz="0 0 1"/></joint>')
    assert load_chain(continuous, 'a', 'b').velocity_limits[0] == np.inf


@pytest.mark.parametrize('source,error,match', [
    (_revolute(origin='<origin xyz="nan 0 0"/>'), ModelValueError, r"'j1' <origin xyz> is not finite"),
    (_revolute(origin='<origin xyz="0 0 0" rpy="0 inf 0"/>'), ModelValueError, r"'j1' <origin rpy> is not finite"),
    (_revolute(origin='<origin xyz="1e300 0 0"/>'), ModelValueError, r"'j1' <origin xyz> is .*outside"),
    (_revolute(axis='0 nan 1'), ModelValueError, r"'j1' <axis xyz> is not finite"),
    (_robot(REV_AB + '<joint name="m" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" velocity="1" effort="1"/><mimic joint="j1" multiplier="nan"/></joint>'),
     ModelValueError, r"'m' <mimic multiplier> is not finite"),
    (_robot(REV_AB + '<joint name="m" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" velocity="1" effort="1"/><mimic joint="j1" offset="-inf"/></joint>'),
     ModelValueError, r"'m' <mimic offset> is not finite"),
    (_revolute(extra='<safety_controller soft_lower_limit="nan" soft_upper_limit="0.5" k_velocity="1"/>'),
     JointLimitError, r"'j1' <safety_controller soft_lower_limit> is not finite"),
    (_revolute(extra='<safety_controller soft_lower_limit="-0.5" soft_upper_limit="nan" k_velocity="1"/>'),
     JointLimitError, r"'j1' <safety_controller soft_upper_limit> is not finite"),
    (_revolute('lower="nan" upper="1" velocity="1" effort="1"'), JointLimitError, r"'j1' <limit lower> is not"),
    (_revolute('lower="-1" upper="2" velocity="1" effort="1"', extra='<safety_controller soft_lower_limit="1.5" '
               'soft_upper_limit="1.2" k_velocity="1"/>'), JointLimitError, r"'j1' has invalid limits \[1.5, 1.2\]"),
    (_robot('<joint name="p" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>'
            '<limit lower="-1e300" upper="1e300" velocity="1" effort="1"/></joint>'),
     JointLimitError, r"'p' <limit lower> is -1e\+300, outside \[-10000, 10000\]"),
])
def test_bad_numbers_are_refused_naming_the_element(source, error, match):
    with pytest.raises(error, match=match):
        load_chain(source, 'a', 'c' if '"m"' in source else 'b')


def test_sloppy_limits_outside_the_chain_do_not_block_it():
    # A gripper joint beyond the tip with velocity 0, and a fixed joint with a zero <limit> in the chain:
    # IK never reads these limits, so the arm still loads (the loader stays tolerant of what IK never reads).
    source = _robot(REV_AB + '<joint name="g" type="prismatic"><parent link="b"/><child link="c"/>'
                    '<axis xyz="1 0 0"/><limit lower="0" upper="0.04" velocity="0" effort="0"/></joint>')
    assert load_chain(source, 'a', 'b').joint_names == ['j1']
    fixed = _robot(REV_AB + '<joint name="f" type="fixed"><parent link="b"/><child link="c"/>'
                   '<axis xyz="0 0 0"/><limit lower="0" upper="0" velocity="0" effort="0"/></joint>')
    assert load_chain(fixed, 'a', 'c').velocity_limits.tolist() == [1.0]


def test_largest_accepted_magnitude_loads():
    source = _robot('<joint name="p" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>'
                    f'<limit lower="{-MAX_MAGNITUDE}" upper="{MAX_MAGNITUDE}" velocity="{MAX_MAGNITUDE}" '
                    'effort="1"/></joint>')
    chain = load_chain(source, 'a', 'b')
    assert chain.fk([MAX_MAGNITUDE])[0, 3] == MAX_MAGNITUDE


def test_oversized_description_is_refused():
    with pytest.raises(URDFParseError, match='longer than'):
        load_robot_description('<robot name="r">' + ' ' * (17 * 2 ** 20) + '</robot>')


# --- bad joint positions give a ValueError naming the real cause ---------------------

@pytest.mark.parametrize('q,match', [
    (None, r'q is missing \(None\)'),
    ([0.0] * 6 + [None], r'q has missing values \(None\)'),
    (np.zeros((1, 7)), r'q has shape \(1, 7\), expected \(7,\)'),
    (np.zeros(6), r'q has shape \(6,\), expected \(7,\)'),
    (0.0, r'q has shape \(\), expected \(7,\)'),
    ('0000000', 'q must hold numbers, got str'),
    (['0'] * 7, 'q must hold numbers, got str'),
    ({'joint1': 0.0}, 'q must hold numbers'),
    ([1j] * 7, 'q must hold numbers, got complex'),
    ([0.0] * 6 + [10 ** 400], 'q must hold numbers'),
    ([[0.0] * 7, [0.0]], 'q is not an array of shape'),
    ([0.0, np.nan, 0.0, 0.0, 0.0, np.inf, 0.0], r'q is not finite \(nan or inf\) for joint2, joint6'),
])
def test_bad_joint_positions_name_the_cause(ik7, q, match):
    for function in (ik7.fk, ik7.jacobian):
        with pytest.raises(ValueError, match=match):
            function(q)


def test_bad_batches_and_link_names(ik7):
    with pytest.raises(ValueError, match=r'Q has shape \(7,\), expected \(B, 7\)'):
        ik7.fk_batch(np.zeros(7))
    with pytest.raises(ValueError, match=r'Q is not finite \(nan or inf\) for joint3'):
        ik7.jacobian_batch(np.array([[0.0] * 7, [0, 0, np.nan, 0, 0, 0, 0]]))
    with pytest.raises(LinkNotFoundError, match='link name'):
        ik7.fk(np.zeros(7), ['tool0'])
    with pytest.raises(LinkNotFoundError, match='base link must be a link name'):
        load_chain(str(URDF_DIR / 'ik7.urdf.xacro'), None, 'tool0')


def test_good_inputs_of_any_numeric_type_agree(ik7):
    q = np.linspace(-0.5, 0.5, 7)
    expected = ik7.fk(q)
    for variant in (q.tolist(), [np.float64(v) for v in q], tuple(q), np.tile(q, (2, 1)).T[:, 0]):
        np.testing.assert_array_equal(ik7.fk(variant), expected)
    np.testing.assert_array_equal(ik7.fk([0] * 7), ik7.fk(np.zeros(7)))  # integers are numbers


# --- xacro arguments ------------------------------------------------------------------------------

PREFIXED_XACRO = """<?xml version="1.0"?>
<robot name="p" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:arg name="prefix" default=""/>
  <xacro:arg name="reach" default="0.5"/>
  <link name="$(arg prefix)base"/><link name="$(arg prefix)tip"/>
  <joint name="$(arg prefix)j1" type="revolute"><parent link="$(arg prefix)base"/><child link="$(arg prefix)tip"/>
    <origin xyz="$(arg reach) 0 0"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" velocity="1" effort="1"/>
  </joint>
</robot>
"""


def test_xacro_arguments_for_text_and_file(tmp_path):
    path = tmp_path / 'arm.urdf.xacro'
    path.write_text(PREFIXED_XACRO)
    for source in (PREFIXED_XACRO, str(path), path):
        chain = load_chain(source, 'right_base', 'right_tip', xacro_args={'prefix': 'right_', 'reach': 0.25})
        assert chain.joint_names == ['right_j1']
        assert chain.fk([0.0])[0, 3] == 0.25
        default = load_chain(source, 'base', 'tip')
        assert default.joint_names == ['j1'] and default.fk([0.0])[0, 3] == 0.5


def test_xacro_arguments_reach_the_bundled_arm():
    mock = load_robot_description(str(URDF_DIR / 'ik7.urdf.xacro'))
    gazebo = load_robot_description(str(URDF_DIR / 'ik7.urdf.xacro'), xacro_args={'sim_gazebo': 'true'})
    assert 'mock_components/GenericSystem' in mock and 'GazeboSimSystem' not in mock
    assert 'GazeboSimSystem' in gazebo and 'mock_components/GenericSystem' not in gazebo
    assert parse_robot(str(URDF_DIR / 'ik7.urdf.xacro'), xacro_args={'sim_gazebo': 'true'}).name == 'ik7'


@pytest.mark.parametrize('xacro_args,match', [
    (['prefix:=right_'], 'xacro_args must be a dict'),
    ({'prefix': None}, "xacro argument 'prefix'"),
    ({'': 'x'}, "xacro argument ''"),
])
def test_bad_xacro_arguments(xacro_args, match):
    with pytest.raises(ModelError, match=match):
        load_chain(PREFIXED_XACRO, 'base', 'tip', xacro_args=xacro_args)


def test_undefined_xacro_argument_is_a_parse_error():
    text = PREFIXED_XACRO.replace('<xacro:arg name="prefix" default=""/>', '')
    with pytest.raises(URDFParseError, match='prefix'):
        load_chain(text, 'base', 'tip')


def test_urdf_that_only_declares_the_xacro_namespace_is_not_run_through_xacro(monkeypatch):
    # Many shipped .urdf files declare xmlns:xacro and use none of it: they need no child process.
    from ik_solver.core import urdf
    monkeypatch.setattr(urdf, '_xacro_child', lambda *args: pytest.fail('xacro was run'))
    text = _robot(REV_AB).replace('<robot name="t">', '<robot name="t" xmlns:xacro="http://www.ros.org/wiki/xacro">')
    assert load_chain(text, 'a', 'b').joint_names == ['j1']
