"""PathCertificate against dense sampling: never 'free' where sampling finds a contact, and no query for small moves."""
import pathlib

from conftest import MIXED_URDF
from ik_solver.collision import CollisionModel, make_obstacle
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
IK7 = str(ROOT / 'urdf' / 'ik7.urdf.xacro')
#: The truth: the straight joint path sampled so that no joint moves more than this between samples [rad or m].
FINE_STEP = 0.002
#: Moves of the random paths [rad or m]: a streamed target's few mm up to a re-target across the workspace.
MOVES = (0.005, 0.02, 0.1, 0.4)
#: ik7 among world objects: a table under it, a post and a shelf within its reach.
IK7_SCENE = (make_obstacle('table', 'box', [1.2, 1.2, 0.05], [0.0, 0.0, -0.03]),
             make_obstacle('post', 'cylinder', [0.05, 0.8], [0.35, 0.25, 0.4]),
             make_obstacle('shelf', 'box', [0.3, 0.4, 0.02], [0.45, -0.2, 0.55]))
#: MIXED_URDF (revolute, continuous, prismatic and mimic joints, a fixed joint) with collision geometry.
MIXED_GEOMETRY = {'base': '<box size="0.3 0.3 0.1"/>', 'l1': '<cylinder radius="0.04" length="0.2"/>',
                  'l3': '<box size="0.2 0.05 0.05"/>', 'l4': '<sphere radius="0.05"/>',
                  'l5': '<cylinder radius="0.03" length="0.15"/>', 'tip': '<box size="0.1 0.04 0.02"/>'}


@pytest.fixture(scope='module')
def ik7_scene():
    model = CollisionModel(IK7, 'base_link', 'tool0', padding=0.01)
    model.set_obstacles(IK7_SCENE)
    return model


@pytest.fixture(scope='module')
def mixed_model():
    text = MIXED_URDF
    for link, geometry in MIXED_GEOMETRY.items():
        text = text.replace(f'<link name="{link}"/>', f'<link name="{link}"><collision><origin xyz="0.02 0 0.03"/>'
                                                      f'<geometry>{geometry}</geometry></collision></link>')
    model = CollisionModel(text, 'base', 'tip')
    model.set_obstacles([make_obstacle('wall', 'box', [0.05, 1.0, 1.0], [0.45, 0.0, 0.4], frame='base')])
    return model


def _collides_on(model, start, end):
    """Tell whether the straight path from ``start`` to ``end`` collides, sampled every FINE_STEP."""
    count = max(2, int(np.ceil(np.max(np.abs(end - start)) / FINE_STEP)) + 1)
    return any(model.check(q) is not None for q in np.linspace(start, end, count))


def _near_paths(model, rng, count):
    """Yield (start, end) of random straight paths from collision-free starts near a contact (within 10 cm)."""
    low, high = model.joint_ranges.T
    made = 0
    while made < count:
        start = rng.uniform(low, high)
        if model.check(start) is not None or model.min_distance(start) > model.padding + 0.1:
            continue
        direction = rng.normal(size=len(start))
        end = np.clip(start + direction / np.abs(direction).max() * MOVES[made % len(MOVES)], low, high)
        made += 1
        yield start, end


@pytest.mark.parametrize('which', ['ik7_scene', 'mixed_model'])
def test_a_certified_box_holds_no_contact_that_dense_sampling_finds(which, request):
    """Every certified path is clear at a fine step, and so is every configuration drawn in its box."""
    model = request.getfixturevalue(which)
    rng = np.random.default_rng(7)
    certified = collided = 0
    for start, end in _near_paths(model, rng, 160):
        low, high = np.minimum(start, end), np.maximum(start, end)
        clear = model.certificate.clear(low, high)
        hit = _collides_on(model, start, end)
        assert not (clear and hit), f'certified a colliding path {start.tolist()} -> {end.tolist()}'
        if clear:
            certified += 1
            assert all(model.check(q) is None for q in rng.uniform(low, high, (20, len(low))))
        collided += hit
    assert certified >= 20 and collided >= 5   # both answers were exercised near the objects


def test_a_path_through_a_thin_wall_is_not_certified_and_still_refused():
    """Both ends are clear, the straight move sweeps the arm through the wall: sampling finds it."""
    model = CollisionModel(str(ROOT / 'urdf' / 'planar3.urdf'), 'base_link', 'tool0')
    model.set_obstacles([make_obstacle('wall', 'box', [0.4, 0.01, 0.2], [0.6, 0.0, 0.0],
                                       [0, 0, 0.3826834, 0.9238795])])
    start, end = np.array([-1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0])
    assert not model.certificate.clear(np.minimum(start, end), np.maximum(start, end))
    index, pair = model.check_path(np.array([start, end]))
    assert pair[1] == 'wall'


def test_a_stream_of_small_moves_costs_one_distance_query_and_no_sampled_check():
    """Paths of a few mm each along a slow move: the first reference certifies the next ones without a query."""
    model = CollisionModel(IK7, 'base_link', 'tool0', padding=0.01)
    model.set_obstacles(IK7_SCENE[:1])
    q = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
    assert model.check(q) is None and model.min_distance(q) > 0.03
    checked = []
    original = model.check
    model.check = lambda x: checked.append(x) or original(x)
    for k in range(50):   # each path: 20 samples of a 1 mrad-per-target drift of every joint
        path = q + 0.001 * k + np.linspace(0.0, 0.001, 20)[:, None]
        assert model.check_path(path) is None
    del model.check
    print(model.certificate.queries)
    assert checked == [] and model.certificate.queries == 1


def test_a_new_world_object_in_the_way_is_seen_after_a_certificate():
    """A certificate belongs to its world: an object added across the next path is found."""
    model = CollisionModel(IK7, 'base_link', 'tool0')
    q = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
    path = q + np.linspace(0.0, 0.002, 5)[:, None]
    assert model.check_path(path) is None
    tool = model.chain.fk(q)[:3, 3]
    model.set_obstacles([make_obstacle('box', 'box', [0.1, 0.1, 0.1], tool.tolist())])
    index, pair = model.check_path(path)
    assert pair[1] == 'box'


def test_far_moves_fall_back_to_sampling_with_its_answer(ik7_scene):
    """A move too long to certify from one query is sampled: the same first contact as sampling alone."""
    rng = np.random.default_rng(3)
    for start, end in _near_paths(ik7_scene, rng, 30):
        path = np.linspace(start, end, 7)
        dense = _sampled(ik7_scene, path)
        assert ik7_scene.check_path(path) == dense


def _sampled(model, path):
    """Return check_path's answer without the certificate: the sampled check alone."""
    model.certificate.clear = lambda low, high: False
    try:
        return model.check_path(path)
    finally:
        del model.certificate.clear
