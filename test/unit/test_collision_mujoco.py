"""The collision model against a second physics engine: MuJoCo's arm-world contacts on ik7 with its table scene."""
import pathlib

from ik_solver.collision import CollisionModel, load_scene
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
IK7 = str(ROOT / 'urdf' / 'ik7.urdf.xacro')
#: Pairs closer to contact than this are not compared (the two engines' narrow phases differ by a little).
BAND = 0.002


def test_world_collisions_agree_with_mujoco_contacts():
    pytest.importorskip('mujoco', reason='mujoco is not installed')
    from ik_solver_demos.sim.physics import ArmSimulation
    obstacles = load_scene(str(ROOT / 'config' / 'ik7_scene.yaml'))
    model = CollisionModel(IK7, 'base_link', 'tool0')
    model.set_obstacles(obstacles)
    sim = ArmSimulation(IK7, model.joint_names, kinematic=True, obstacles=obstacles)
    names = {o.name for o in obstacles}
    rng = np.random.default_rng(4)
    compared = penetrating = 0
    for q in model.chain.random_configuration(rng, 400):
        sim.command(q, np.zeros(len(q)))
        sim.step()
        contacts = {(link, other) for link, other, dist in sim.contacts()}
        for pair, distance in model.pair_distances(q).items():
            if pair[1] not in names or abs(distance) < BAND:
                continue
            compared += 1
            penetrating += distance < 0
            assert (pair in contacts) == (distance < 0), (q, pair, distance)
    assert penetrating >= 20 and compared >= 1000
