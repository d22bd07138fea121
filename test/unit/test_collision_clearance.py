"""Distance gradient against finite differences, and nullspace clearance that keeps the tip pose."""
import pathlib

from ik_solver.collision import CollisionModel, make_obstacle
from ik_solver.collision.clearance import improve_clearance
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
IK7 = str(ROOT / 'urdf' / 'ik7.urdf.xacro')
ELBOW_OUT = np.array([0.3, 0.6, 0.4, 1.2, 0.2, 0.8, 0.1])


@pytest.fixture(scope='module')
def model():
    return CollisionModel(IK7, 'base_link', 'tool0')


def _near_elbow(model, gap):
    """Place a ball ``gap`` metres from link4's cylinder (radius 0.065), off the arm's plane (the elbow swivels)."""
    T = model.chain.fk(ELBOW_OUT, 'link4')
    centre = T[:3, 3] + T[:3, 2] * 0.1 + T[:3, 1] * (0.065 + 0.05 + gap)
    return [make_obstacle('ball', 'sphere', [0.05], centre)]


@pytest.mark.parametrize('case', ['world', 'self'])
def test_gradient_matches_finite_differences(model, case):
    if case == 'world':
        model.set_obstacles(_near_elbow(model, 0.03))
        q = ELBOW_OUT
    else:
        model.set_obstacles([])
        q = np.array([0.0, 1.9, 0.0, 1.9, 0.0, 1.6, 0.0])  # wrist folded near the forearm, not touching
    distance, gradient, pair = model.distance_gradient(q)
    assert 0.0 < distance < 0.05 and pair == (('link4', 'ball') if case == 'world' else ('link5', 'link7'))
    rng = np.random.default_rng(0)
    h = 1e-6
    for v in rng.normal(size=(5, 7)):
        v /= np.linalg.norm(v)
        numeric = (model.min_distance(q + h * v) - model.min_distance(q - h * v)) / (2 * h)
        assert gradient @ v == pytest.approx(numeric, abs=1e-5)
    model.set_obstacles([])


def test_improve_clearance_keeps_the_pose_and_gains_distance(model):
    model.set_obstacles(_near_elbow(model, 0.01))
    try:
        before = model.min_distance(ELBOW_OUT)
        q = improve_clearance(model, ELBOW_OUT, steps=30)
        after = model.min_distance(q)
        assert after > before + 0.03  # 1 cm -> over 4 cm, until another part of the arm is nearest
        chain = model.chain
        T0, T = chain.fk(ELBOW_OUT), chain.fk(q)
        assert np.linalg.norm(T[:3, 3] - T0[:3, 3]) < 1e-6
        assert np.allclose(T[:3, :3], T0[:3, :3], atol=1e-6)
        assert chain.within_limits(q)
    finally:
        model.set_obstacles([])


def test_no_pairs_and_no_gain():
    planar = CollisionModel(str(ROOT / 'urdf' / 'planar3.urdf'), 'base_link', 'tool0', srdf='<robot name="p">'
                            '<disable_collisions link1="link1" link2="link3" reason="Never"/></robot>')
    distance, gradient, pair = planar.distance_gradient(np.zeros(3))
    assert distance == np.inf and pair is None and not gradient.any()
    np.testing.assert_array_equal(improve_clearance(planar, np.zeros(3)), np.zeros(3))
