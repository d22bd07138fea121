"""URDF/xacro loading: robots as they ship, and each bad model's specific error."""
from conftest import example_robot, URDF_DIR
from ik_solver.core.chain import load_chain
from ik_solver.core.exceptions import (ChainError, JointLimitError, LinkNotFoundError, UnsupportedJointError,
                                       URDFParseError)
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
    (_robot('<joint name="jm" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" velocity="1" effort="1"/><mimic joint="outside"/></joint>'),
     'b', 'c', UnsupportedJointError, "'jm' follows 'outside'"),
    (_robot('<joint name="jz" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 0"/>'
            '<limit lower="-1" upper="1" velocity="1" effort="1"/></joint>'), 'a', 'b',
     UnsupportedJointError, "'jz' has a zero"),
])
def test_bad_models_raise_specific_errors(source, base, tip, error, match):
    with pytest.raises(error, match=match):
        load_chain(source, base, tip)


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        load_chain('<robot', 'a', 'b')


def test_unknown_link_in_fk_names_chain_links(ik7):
    with pytest.raises(LinkNotFoundError, match="'nope'.*link4"):
        ik7.fk(np.zeros(7), 'nope')
