"""The servo bends the elbow toward the pole's side while it holds the hand (a zero twist).

Truths from forward kinematics: the hand's pose against where it started, and the elbow's side of the
plane through the first joint's axis (the base's z for ik7) and the tip, signed by the pole's side.
"""
from ik_solver.core.chain import load_chain
from ik_solver.core.nullspace import NullspaceGoals
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.servo import Servo, ServoSettings, TwistCommand
from ik_solver_demos.tools.resources import arm_files
import numpy as np
import pytest

START = np.array([0.3, 0.5, 0.6, -1.4, 0.0, 0.9, 0.0])   # the elbow 9 cm off the reference plane
PERIOD = 0.01


@pytest.fixture(scope='module')
def chain():
    return load_chain(arm_files('ik7')[0], 'base_link', 'tool0')


def _normal(chain, q):
    s, tip = chain.fk(q, 'link1')[:3, 3], chain.fk(q)[:3, 3]
    n = np.cross([0.0, 0.0, 1.0], tip - s)
    return s, n / np.linalg.norm(n)


def _side(chain, q, pole):
    s, n = _normal(chain, q)
    return float((chain.fk(q, 'link4')[:3, 3] - s) @ n * np.sign((pole - s) @ n))


def _hold_the_hand(chain, pole, seconds):
    """Run the servo on a zero twist for ``seconds``; return the commanded joint positions, one row a cycle."""
    n = chain.n
    limits = JointLimits(tuple(chain.joint_names), chain.lower, chain.upper, chain.velocity_limits,
                         np.full(n, 4.0), np.full(n, np.inf))
    settings = ServoSettings(command_in_type='speed_units',
                             nullspace=NullspaceGoals(pole=1.0, pole_link='link4', pole_target=pole))
    servo = Servo(chain, limits, settings)
    measured, path = MotionState.at_rest(START), []
    for k in range(int(seconds / PERIOD)):
        servo.set_command(TwistCommand(np.zeros(6)), k * PERIOD)
        out = servo.step(k * PERIOD, measured)
        measured = MotionState.at_rest(out.state.position)   # a perfect position controller
        path.append(out.state.position)
    return np.array(path)


@pytest.mark.parametrize('across', [False, True], ids=['pole-on-the-elbow-side', 'pole-across'])
def test_the_elbow_moves_to_the_pole_side_and_the_hand_stays(chain, across):
    s, n = _normal(chain, START)
    elbow = chain.fk(START, 'link4')[:3, 3]
    away = np.sign((elbow - s) @ n) * (-1.0 if across else 1.0)
    pole = elbow - ((elbow - s) @ n) * n + 0.5 * away * n   # 0.5 m off the plane
    path = _hold_the_hand(chain, pole, 10.0)
    sides = np.array([_side(chain, q, pole) for q in path])
    assert (sides[0] < 0.0) == across
    assert sides[-1] > 0.02   # on the pole's side at the end, whichever side it started on
    assert np.all(np.diff(sides) > -1e-6)   # never back toward the other side
    distance = np.linalg.norm(chain.fk_batch(path, 'link4')[:, :3, 3] - pole, axis=1)
    assert distance[-1] < distance[0] - 0.05
    T0, poses = chain.fk(START), chain.fk_batch(path)
    assert np.linalg.norm(poses[:, :3, 3] - T0[:3, 3], axis=1).max() < 5e-4
    angles = [np.arccos(np.clip((np.trace(T0[:3, :3].T @ T[:3, :3]) - 1) / 2, -1, 1)) for T in poses]
    assert max(angles) < 2e-3
