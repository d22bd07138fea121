"""The node's collision world: scene file + MarkerArray objects (ADD, DELETE, DELETEALL, frames) on the model."""
import pathlib
from types import SimpleNamespace as NS

from ik_solver.collision.backlog import MarkerBacklog, MAX_MARKER_OBJECTS
from ik_solver.collision.markers import (ADD, CUBE, CYLINDER, DELETE, DELETEALL, marker_shape, obstacle_from_marker,
                                         SPHERE)
from ik_solver.collision.scene import SceneError
from ik_solver.collision.world import collision_from_parameters
from ik_solver.core.chain import load_chain
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLANAR3 = str(ROOT / 'urdf' / 'planar3.urdf')


def _marker(id_, type_=CUBE, action=ADD, scale=(0.1, 0.1, 0.1), position=(0.0, 0.0, 0.0),
            orientation=(0.0, 0.0, 0.0, 1.0), frame='base_link', ns='test'):
    return NS(ns=ns, id=id_, type=type_, action=action, header=NS(frame_id=frame),
              scale=NS(x=scale[0], y=scale[1], z=scale[2]),
              pose=NS(position=NS(x=position[0], y=position[1], z=position[2]),
                      orientation=NS(x=orientation[0], y=orientation[1], z=orientation[2], w=orientation[3])))


@pytest.fixture
def world(tmp_path):
    scene = tmp_path / 'scene.yaml'
    scene.write_text('objects: [{name: far, type: sphere, size: [0.05], position: [0, 0, 1.0]}]')
    chain = load_chain(PLANAR3, 'base_link', 'tool0')
    return collision_from_parameters(open(PLANAR3).read(), chain, srdf_file=str(ROOT / 'config' / 'planar3.srdf'),
                                     scene_file=str(scene))


def test_marker_sizes_follow_rviz():
    sphere = obstacle_from_marker(_marker(1, SPHERE, scale=(0.2, 0.2, 0.3)))
    assert sphere.shape == 'sphere' and sphere.size == (0.15,)  # the larger diameter, halved
    cylinder = obstacle_from_marker(_marker(2, CYLINDER, scale=(0.1, 0.1, 0.5), orientation=(0, 0, 0, 0)))
    assert cylinder.size == (0.05, 0.5)
    np.testing.assert_allclose(cylinder.pose, np.eye(4))  # zero quaternion = identity, as RViz
    assert obstacle_from_marker(_marker(3)).name == 'test/3'
    with pytest.raises(SceneError, match='type 4'):
        obstacle_from_marker(_marker(4, type_=4))
    with pytest.raises(SceneError, match='positive'):
        obstacle_from_marker(_marker(5, scale=(0.1, 0.0, 0.1)))


@pytest.mark.parametrize('type_, scale', [(CUBE, (0.1, 0.2, 0.3)), (SPHERE, (0.4, 0.4, 0.4)),
                                          (CYLINDER, (0.1, 0.1, 0.6))])
def test_marker_shape_round_trip(type_, scale):
    obstacle = obstacle_from_marker(_marker(1, type_, scale=scale, position=(1, 2, 3), orientation=(0, 0.6, 0, 0.8)))
    assert marker_shape(obstacle) == (type_, pytest.approx(scale))
    np.testing.assert_allclose(obstacle.pose[:3, 3], [1, 2, 3])


def test_add_replace_delete_and_deleteall(world):
    model = world.model
    q = np.zeros(3)
    assert [o.name for o in world.obstacles] == ['far'] and model.check(q) is None
    # A box on link1 (along x from 0 to 0.5): collision, then moved away by the same ns/id, then deleted.
    assert world.apply_markers([_marker(1, position=(0.25, 0.0, 0.0))]) == []
    assert model.check(q) == ('link1', 'test/1')
    world.apply_markers([_marker(1, position=(0.25, 0.5, 0.0))])
    assert model.check(q) is None and len(world.obstacles) == 2
    world.apply_markers([_marker(1, action=DELETE)])
    assert [o.name for o in world.obstacles] == ['far']
    world.apply_markers([_marker(1, position=(0.25, 0.0, 0.0)), _marker(2, SPHERE, position=(0.7, 0.0, 0.0))])
    assert set(model.colliding_pairs(q)) == {('link1', 'test/1'), ('link2', 'test/2')}
    world.apply_markers([_marker(0, action=DELETEALL)])
    assert [o.name for o in world.obstacles] == ['far'] and model.check(q) is None  # the scene stays


def test_frames_are_links_or_looked_up(world):
    model = world.model
    q = np.zeros(3)
    # In link3's frame (which starts 0.9 m out along x): a box at its origin collides with link3.
    world.apply_markers([_marker(1, frame='link3')])
    assert model.check(q)[1] == 'test/1'
    lift = np.eye(4)
    lift[2, 3] = 0.5
    problems = world.apply_markers([_marker(1, action=DELETE), _marker(2, frame='map'),
                                    _marker(3, frame='odom', position=(0.25, 0.0, -0.5))],
                                   lookup=lambda frame: lift if frame == 'odom' else None)
    assert len(problems) == 1 and "frame 'map'" in problems[0]
    assert model.check(q) == ('link1', 'test/3')  # odom z = -0.5 lifted by 0.5: on link1
    problems = world.apply_markers([_marker(4, frame='map')], lookup=lambda frame: 1 / 0)
    assert 'division by zero' in problems[0]


def test_bad_marker_is_refused_and_others_apply(world):
    problems = world.apply_markers([_marker(1, action=7), _marker(2, scale=(0.1, float('nan'), 0.1)), _marker(3)])
    assert len(problems) == 2 and 'action 7' in problems[0] and 'finite' in problems[1]
    assert [o.name for o in world.obstacles] == ['far', 'test/3']
    problems = world.apply_markers([_marker(5, ns='', frame='')])
    assert problems == [] and '5' in [o.name for o in world.obstacles]  # no ns: named by id; no frame: base
    problems = world.apply_markers([_marker(1, ns='link1', frame='base_link')])
    assert problems == []  # 'link1/1' is not the link's name


def test_no_geometry_means_no_world():
    urdf = open(PLANAR3).read()
    stripped = urdf.replace('<collision>', '<!--').replace('</collision>', '-->')
    chain = load_chain(PLANAR3, 'base_link', 'tool0')
    assert collision_from_parameters(stripped, chain) is None


def test_marker_without_frame_is_in_the_chain_base_whatever_its_name():
    """A base not named base_link (as Panda's panda_link0), and a sub-chain whose base is link1."""
    renamed = open(PLANAR3).read().replace('base_link', 'panda_link0')
    world = collision_from_parameters(renamed, load_chain(renamed, 'panda_link0', 'tool0'))
    assert world.apply_markers([_marker(1, position=(0.25, 0.0, 0.0), frame='')]) == []
    assert world.obstacles[0].frame == 'panda_link0' and world.model.check(np.zeros(3)) == ('link1', 'test/1')
    # Sub-chain link1 -> tool0 with joint1 held at 1 rad: (0.7, 0, 0) in link1 is on link2; in base_link it
    # would be 0.7 sin(1) = 0.59 m off the arm.
    world = collision_from_parameters(open(PLANAR3).read(), load_chain(PLANAR3, 'link1', 'tool0'))
    world.model.set_joint_values({'joint1': 1.0})
    assert world.apply_markers([_marker(1, SPHERE, scale=(0.1,) * 3, position=(0.7, 0.0, 0.0), frame='')]) == []
    assert world.obstacles[0].frame == 'link1' and world.model.check(np.zeros(2)) == ('link2', 'test/1')


def test_a_box_a_long_way_off_is_refused_not_reported_colliding(world):
    """A box 1e300 m away was reported as colliding with link1: coordinates are bounded in magnitude."""
    problems = world.apply_markers([_marker(1, position=(1e300, 0.0, 0.0))])
    assert len(problems) == 1 and 'more than 1000 m' in problems[0]
    lift = np.eye(4)
    lift[0, 3] = 1e300
    problems = world.apply_markers([_marker(2, frame='odom')], lookup=lambda frame: lift)
    assert len(problems) == 1 and 'more than 1000 m' in problems[0] and 'in base_link' in problems[0]
    assert [o.name for o in world.obstacles] == ['far'] and world.model.check(np.zeros(3)) is None


def test_marker_objects_are_bounded_in_number(world):
    markers = [_marker(k, position=(5.0 + 0.01 * k, 5.0, 5.0)) for k in range(MAX_MARKER_OBJECTS + 1)]
    problems = world.apply_markers(markers)
    assert len(problems) == 1 and f'holds {MAX_MARKER_OBJECTS} marker objects already' in problems[0]
    assert len(world.obstacles) == MAX_MARKER_OBJECTS + 1   # with the scene's
    assert world.apply_markers([_marker(0, position=(6.0, 5.0, 5.0))]) == []   # a replacement is not a new one


def _names(markers):
    return [(m.action, m.id) for m in markers]


def test_the_backlog_merges_waiting_arrays_as_applying_them_in_order_would():
    """821 arrays of 50 cubes queued without bound: waiting arrays merge, the newest action per object wins."""
    backlog = MarkerBacklog(limit=100)
    assert backlog.add([_marker(1), _marker(2)]) is True
    assert backlog.add([_marker(1, action=DELETE), _marker(3)]) is False
    markers, dropped = backlog.take()
    assert _names(markers) == [(ADD, 2), (DELETE, 1), (ADD, 3)] and dropped == 0
    assert backlog.take() == ([], 0) and backlog.add([_marker(4)]) is True
    backlog.add([_marker(5), _marker(0, action=DELETEALL), _marker(6)])
    markers, dropped = backlog.take()
    assert _names(markers) == [(DELETEALL, 0), (ADD, 6)] and dropped == 2
    for k in range(821):
        backlog.add([_marker(50 * k + i) for i in range(50)])
    markers, dropped = backlog.take()
    assert _names(markers) == [(ADD, 50 * 821 - 100 + i) for i in range(100)] and dropped == 50 * 821 - 100


def test_a_merged_backlog_builds_the_world_applying_every_array_would(world):
    rng = np.random.default_rng(3)
    arrays = [[_marker(int(rng.integers(6)), action=int(rng.choice([ADD, ADD, DELETE, DELETEALL])),
                       position=tuple(rng.uniform(-1, 1, 3))) for _ in range(4)] for _ in range(30)]
    backlog = MarkerBacklog()
    for array in arrays:
        world.apply_markers(array)
        backlog.add(array)
    one_by_one = {o.name: o.pose.copy() for o in world.obstacles}
    other = collision_from_parameters(open(PLANAR3).read(), load_chain(PLANAR3, 'base_link', 'tool0'),
                                      srdf_file=str(ROOT / 'config' / 'planar3.srdf'))
    other.apply_markers(backlog.take()[0])
    merged = {o.name: o.pose for o in other.obstacles}
    assert set(merged) == set(one_by_one) - {'far'}
    for name, pose in merged.items():
        np.testing.assert_array_equal(pose, one_by_one[name])


def test_an_srdf_for_another_robot_is_refused(tmp_path):
    """Another robot's disabled pairs would hide real collisions: an SRDF naming another robot loaded silently."""
    chain = load_chain(PLANAR3, 'base_link', 'tool0')
    srdf = str(ROOT / 'config' / 'planar3.srdf')
    other = tmp_path / 'other.srdf'
    other.write_text(open(srdf).read().replace('<robot name="planar3">', '<robot name="panda">'))
    with pytest.raises(SceneError, match="describes robot 'panda', not the URDF's 'planar3'"):
        collision_from_parameters(open(PLANAR3).read(), chain, srdf_file=str(other), robot_name='planar3')
    assert collision_from_parameters(open(PLANAR3).read(), chain, srdf_file=srdf, robot_name='planar3') is not None
