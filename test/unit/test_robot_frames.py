"""Transforms between arbitrary robot links, against the chain's own FK."""
from conftest import MIXED_URDF, URDF_DIR
from ik_solver.core.exceptions import LinkNotFoundError
from ik_solver.core.frames import RobotFrames
from ik_solver.core.urdf import parse_robot
import numpy as np
import pytest


@pytest.fixture(scope='module')
def robot():
    return parse_robot(str(URDF_DIR / 'ik7.urdf.xacro'))


def test_link_pose_matches_chain_fk(robot, ik7, rng):
    frames = RobotFrames(robot, 'base_link')
    for q in ik7.random_configuration(rng, 10):
        positions = dict(zip(ik7.joint_names, q))
        for link in ('link3', 'tool0'):
            np.testing.assert_allclose(frames.pose(link, positions), ik7.fk(q, link), atol=1e-12)


def test_pose_relative_to_another_link(robot, ik7, rng):
    frames = RobotFrames(robot, 'link2')
    q = ik7.random_configuration(rng)
    expected = np.linalg.inv(ik7.fk(q, 'link2')) @ ik7.fk(q, 'tool0')
    np.testing.assert_allclose(frames.pose('tool0', dict(zip(ik7.joint_names, q))), expected, atol=1e-12)
    assert frames.joints_between('link3') == ['joint1', 'joint2', 'joint3']


def test_missing_joint_and_unknown_link(robot):
    frames = RobotFrames(robot, 'base_link')
    with pytest.raises(KeyError, match='joint2'):
        frames.pose('link2', {'joint1': 0.0})
    with pytest.raises(LinkNotFoundError):
        frames.pose('nowhere', {})


def test_non_finite_position_is_refused(robot):
    frames = RobotFrames(robot, 'base_link')
    positions = {f'joint{i}': 0.0 for i in range(1, 8)}
    positions['joint2'] = float('nan')
    with pytest.raises(ValueError, match="joint 'joint2' is not a finite number"):
        frames.pose('tool0', positions)


def test_mimic_joint_follows_its_master_without_its_own_position(mixed, rng):
    """MIXED_URDF's m1 mimics j1 (multiplier -0.5, offset 0.1); joint_states need not carry m1."""
    frames = RobotFrames(parse_robot(MIXED_URDF), 'base')
    assert frames.joints_between('tip') == ['c1', 'j1', 'p1', 'r2']   # the master j1, not m1
    for q in mixed.random_configuration(rng, 5):
        positions = dict(zip(mixed.joint_names, q))
        np.testing.assert_allclose(frames.pose('tip', positions), mixed.fk(q), atol=1e-12)
        # A stale m1 in joint_states does not override the master's relation.
        np.testing.assert_allclose(frames.pose('tip', {**positions, 'm1': 2.5}), mixed.fk(q), atol=1e-12)
    with pytest.raises(KeyError, match="'j1'"):
        frames.pose('l5', {'p1': 0.0, 'c1': 0.0})
