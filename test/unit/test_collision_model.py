"""CollisionModel against independent truths: closed-form distances, our own kinematics with Coal, convex hulls."""
import pathlib

from conftest import example_robot, MIXED_URDF
from ik_solver.collision import CollisionError, CollisionModel, make_obstacle
from ik_solver.collision.geometry import MAX_MESH_BYTES
from ik_solver.core.chain import load_chain
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
IK7 = str(ROOT / 'urdf' / 'ik7.urdf.xacro')
PLANAR3 = str(ROOT / 'urdf' / 'planar3.urdf')
#: A folded wrist of ik7: the hand (link7) comes back onto the forearm (link5).
IK7_FOLDED = np.array([0.0, 2.0, 0.0, 2.0, 0.0, 2.0, 0.0])


@pytest.fixture(scope='module')
def ik7_model():
    return CollisionModel(IK7, 'base_link', 'tool0')


@pytest.fixture(scope='module')
def panda_files():
    urdf = example_robot('panda_description/urdf/panda.urdf')
    share = urdf.split('/example-robot-data/')[0]
    return urdf, urdf.replace('urdf/panda.urdf', 'srdf/panda.srdf'), share


def _coal_distance(shape_a, pose_a, shape_b, pose_b):
    import coal
    request, result = coal.DistanceRequest(), coal.DistanceResult()
    return coal.distance(shape_a, coal.Transform3s(pose_a[:3, :3], pose_a[:3, 3]),
                         shape_b, coal.Transform3s(pose_b[:3, :3], pose_b[:3, 3]), request, result)


def test_sphere_obstacle_distance_closed_form():
    """planar3's first link is a cylinder r=0.03 along x from 0 to 0.5; a ball above it has a closed-form gap."""
    model = CollisionModel(PLANAR3, 'base_link', 'tool0')
    model.set_obstacles([make_obstacle('ball', 'sphere', [0.05], [0.25, 0.0, 0.2])])
    assert model.pair_count == (1, 3)  # link1-link3 (adjacent pairs excluded); the ball against each link
    assert model.min_distance(np.zeros(3)) == pytest.approx(0.2 - 0.03 - 0.05, abs=1e-6)
    assert model.nearest(np.zeros(3))[1] == ('link1', 'ball')
    # Joint 1 at +90 degrees: the arm lies along y; the ball's centre is 0.25 m off the arm's line in x.
    q = np.array([np.pi / 2, 0.0, 0.0])
    assert model.min_distance(q) == pytest.approx(np.hypot(0.25, 0.2) - 0.03 - 0.05, abs=1e-6)
    assert model.check(np.zeros(3)) is None
    model.padding = 0.13
    assert model.check(np.zeros(3)) == ('link1', 'ball')
    model.padding = 0.11
    assert model.check(np.zeros(3)) is None


def test_distances_match_our_kinematics_with_coal(ik7_model):
    """Every checked pair's distance, recomputed from the chain's own FK (not Pinocchio's), matches the model."""
    import coal
    chain = load_chain(IK7, 'base_link', 'tool0')
    shapes = {link: coal.Cylinder(r, l) for link, r, l in (
        ('base_link', 0.08, 0.16), ('link1', 0.07, 0.20), ('link2', 0.07, 0.21), ('link3', 0.065, 0.21),
        ('link4', 0.065, 0.20), ('link5', 0.06, 0.20), ('link6', 0.055, 0.08), ('link7', 0.045, 0.046))}
    centre = {link: shape.halfLength for link, shape in shapes.items()}
    pairs = list(ik7_model._world.pairs)
    rng = np.random.default_rng(3)
    colliding = 0
    for q in list(chain.random_configuration(rng, 400)) + [IK7_FOLDED]:
        poses = {}
        for link in shapes:
            pose = chain.fk(q, link).copy()
            pose[:3, 3] += pose[:3, 2] * centre[link]
            poses[link] = pose
        truth = min(_coal_distance(shapes[a], poses[a], shapes[b], poses[b]) for a, b in pairs)
        assert ik7_model.min_distance(q) == pytest.approx(truth, abs=1e-6)
        assert (ik7_model.check(q) is not None) == (truth <= 0.0)
        colliding += truth <= 0.0
    assert colliding >= 2  # the sample does exercise collisions


def test_folded_wrist_collides_and_pairs_are_named(ik7_model):
    assert ik7_model.check(np.zeros(7)) is None
    pair = ik7_model.check(IK7_FOLDED)
    assert pair == ('link5', 'link7')
    assert pair in ik7_model.colliding_pairs(IK7_FOLDED)
    assert ik7_model.min_distance(IK7_FOLDED) < 0.0


def test_adjacent_pairs_are_not_checked(ik7_model):
    checked = {frozenset(p) for p in ik7_model._world.pairs}
    for a, b in (('base_link', 'link1'), ('link3', 'link4'), ('link6', 'link7')):
        assert frozenset((a, b)) in ik7_model.adjacent_pairs
        assert frozenset((a, b)) not in checked
    assert len(checked) == 28 - 7  # 8 links with geometry, 7 adjacent pairs


def test_srdf_disabled_pair_is_honoured(tmp_path):
    srdf = tmp_path / 'ik7.srdf'
    srdf.write_text('<robot name="ik7"><disable_collisions link1="link7" link2="link5" reason="Never"/></robot>')
    model = CollisionModel(IK7, 'base_link', 'tool0', srdf=str(srdf))
    assert model.pair_count == (20, 0)
    assert ('link5', 'link7') not in model.colliding_pairs(IK7_FOLDED)
    default_off = '<robot name="ik7"><disable_default_collisions link="link5"/>' \
                  '<enable_collisions link1="link5" link2="base_link"/></robot>'
    model = CollisionModel(IK7, 'base_link', 'tool0', srdf=default_off)
    checked = {frozenset(p) for p in model._world.pairs}
    assert frozenset(('link5', 'base_link')) in checked
    assert not any('link5' in pair for pair in checked - {frozenset(('link5', 'base_link'))})


@pytest.mark.parametrize('srdf, words', [
    ('<robot name="ik7"><disable_collisions link1="link5" link2="link77"/></robot>', ['link77', 'not in the robot']),
    ('<robot name="ik7"><disable_collisions link1="link5"/></robot>', ['disable_collisions', 'link2']),
    ('<robot name="ik7"><disable_collisions link1="link5" link2="link7"></robot', ['malformed']),
    ('<srdf/>', ['root element']),
])
def test_bad_srdf_is_a_clear_error(srdf, words):
    with pytest.raises(CollisionError) as info:
        CollisionModel(IK7, 'base_link', 'tool0', srdf=srdf)
    for word in words:
        assert word in str(info.value)


def test_missing_srdf_file():
    with pytest.raises(CollisionError, match='not found'):
        CollisionModel(IK7, 'base_link', 'tool0', srdf='/nonexistent/robot.srdf')


MESH_URDF = """<robot name="m">
  <link name="base"><collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
  <link name="arm"><collision><origin xyz="0 0 0.3"/><geometry>
    <mesh filename="package://no_such_package/meshes/arm.stl"/></geometry></collision>
    <collision><geometry><capsule radius="0.05" length="0.2"/></geometry></collision></link>
  <link name="hand"><collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" velocity="1" effort="1"/></joint>
  <joint name="j2" type="revolute"><parent link="arm"/><child link="hand"/><origin xyz="0 0 0.5"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" velocity="1" effort="1"/></joint>
</robot>"""


def test_missing_mesh_names_file_and_link_or_is_skipped():
    with pytest.raises(CollisionError) as info:
        CollisionModel(MESH_URDF, 'base', 'hand')
    assert 'package://no_such_package/meshes/arm.stl' in str(info.value) and "'arm'" in str(info.value)
    model = CollisionModel(MESH_URDF, 'base', 'hand', skip_missing_meshes=True)
    assert len(model.notes) == 1 and 'arm' in model.notes[0]
    assert model.geometry_links == ['base', 'hand']


def test_mesh_found_through_package_dirs(tmp_path, panda_files):
    stl = pathlib.Path(panda_files[2]) / 'example-robot-data/robots/panda_description/meshes/collision/link3.stl'
    (tmp_path / 'no_such_package' / 'meshes').mkdir(parents=True)
    (tmp_path / 'no_such_package' / 'meshes' / 'arm.stl').write_bytes(stl.read_bytes())
    model = CollisionModel(MESH_URDF, 'base', 'hand', package_dirs=[str(tmp_path)])
    assert model.geometry_links == ['base', 'arm', 'hand'] and not model.notes
    # The capsule (radius 0.05, straight part 0.2) of 'arm' starts 0.1 above base: base and hand are 0.5 apart.
    assert model.pair_count == (1, 0)


def test_an_oversized_mesh_is_refused_before_it_is_read(tmp_path):
    mesh = tmp_path / 'no_such_package' / 'meshes' / 'arm.stl'
    mesh.parent.mkdir(parents=True)
    with open(mesh, 'wb') as f:  # sparse: no disk space, and reading it would take long and fail
        f.truncate(MAX_MESH_BYTES + 1)
    with pytest.raises(CollisionError, match='MiB') as info:
        CollisionModel(MESH_URDF, 'base', 'hand', package_dirs=[str(tmp_path)])
    assert "'arm'" in str(info.value)


@pytest.mark.parametrize('element, words', [
    ('<box size="0.1 0.1"/>', ['box', 'size']),
    ('<sphere radius="-1"/>', ['positive']),
    ('<cylinder radius="0.1"/>', ['length']),
    ('<cone radius="0.1"/>', ['unsupported', 'cone']),
])
def test_bad_collision_geometry_is_a_clear_error(element, words):
    urdf = MESH_URDF.replace('<sphere radius="0.05"/>', element)
    with pytest.raises(CollisionError) as info:
        CollisionModel(urdf, 'base', 'hand', skip_missing_meshes=True)
    for word in words + ["'hand'"]:
        assert word in str(info.value)


def test_mimic_and_continuous_joints_follow_the_chain():
    """Pinocchio's placement of every chain link equals the chain's own FK (mimic, continuous, prismatic)."""
    import pinocchio
    chain = load_chain(MIXED_URDF, 'base', 'tip')
    model = CollisionModel(MIXED_URDF, 'base', 'tip')
    data = model.model.createData()
    rng = np.random.default_rng(0)
    for q in chain.random_configuration(rng, 20):
        pinocchio.framesForwardKinematics(model.model, data, model._config.full(q))
        for link in ('l2', 'l4', 'l5', 'tip'):
            placement = data.oMf[model.model.getFrameId(link)]
            np.testing.assert_allclose(placement.homogeneous, chain.fk(q, link), atol=1e-9)


def test_obstacles_in_a_link_frame_and_errors():
    model = CollisionModel(IK7, 'base_link', 'tool0')
    # A ball fixed to link7 moves with the hand: no pair with link7 itself, but it meets the forearm when folded.
    model.set_obstacles([make_obstacle('held', 'sphere', [0.03], [0, 0, 0.1], frame='link7')])
    assert ('link7', 'held') not in model._world.pairs
    assert model.check(np.zeros(7)) is None
    with pytest.raises(CollisionError, match="frame 'map'"):
        model.set_obstacles([make_obstacle('a', 'box', [1, 1, 1], frame='map')])
    with pytest.raises(CollisionError, match='robot links'):
        model.set_obstacles([make_obstacle('link3', 'box', [1, 1, 1])])
    with pytest.raises(CollisionError, match='same name'):
        model.set_obstacles([make_obstacle('a', 'box', [1, 1, 1])] * 2)
    assert len(model.obstacles) == 1  # a refused update keeps the previous world
    with pytest.raises(ValueError, match='7 finite'):
        model.check([0.0] * 6)
    with pytest.raises(ValueError, match='7 finite'):
        model.check([np.nan] * 7)


def test_check_path_catches_a_thin_obstacle_between_waypoints():
    """Both ends are clear, the straight joint move sweeps the arm through a thin wall."""
    model = CollisionModel(PLANAR3, 'base_link', 'tool0')
    wall = make_obstacle('wall', 'box', [0.4, 0.01, 0.2], [0.6, 0.0, 0.0], [0, 0, 0.3826834, 0.9238795])
    model.set_obstacles([wall])
    start, end = np.array([-1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0])
    assert model.check(start) is None and model.check(end) is None
    index, pair = model.check_path(np.array([start, end]))
    assert index == 1 and pair[1] == 'wall'
    assert model.check_path(np.array([start, start])) is None
    # Checked only at the ends (a step as long as the move), the wall is missed: the step matters.
    assert model.check_path(np.array([start, end]), max_step=3.0) is None
    # A dense trajectory through the wall: caught within max_step of its first colliding sample, with one check
    # per max_step of joint travel rather than one per sample.
    dense = np.linspace(start, end, 2001)
    checked = []
    original = model.check
    model.check = lambda q: checked.append(q) or original(q)
    index, pair = model.check_path(dense)
    del model.check
    hit = next(k for k, q in enumerate(dense) if model.check(q) is not None)
    assert pair[1] == 'wall' and hit <= index <= hit + 10  # 10 samples = 0.01 rad
    assert len(checked) <= (2.0 * index / 2000) / (0.01 - 0.001) + 2  # travel / (max_step - sample step)
    travel = np.abs(np.diff(np.array(checked), axis=0)).max()
    assert travel <= 0.01 + 1e-12


def test_panda_meshes_srdf_and_convex_hulls_are_conservative(panda_files):
    urdf, srdf, share = panda_files
    exact = CollisionModel(urdf, 'panda_link0', 'panda_hand_tcp', srdf=srdf, package_dirs=[share])
    hull = CollisionModel(urdf, 'panda_link0', 'panda_hand_tcp', srdf=srdf, package_dirs=[share], convex=True)
    assert exact.held_joints == ['panda_finger_joint1']  # finger 2 mimics finger 1
    assert exact.pair_count == hull.pair_count
    rng = np.random.default_rng(1)
    both = 0
    for q in exact.chain.random_configuration(rng, 300):
        if exact.check(q) is not None:
            assert hull.check(q) is not None  # a hull contains its mesh
            both += 1
        assert hull.min_distance(q) <= exact.min_distance(q) + 1e-6
    assert both > 0


@pytest.mark.parametrize('padding', [0.0, 0.02])
def test_check_names_the_first_colliding_pair_in_pair_order(panda_files, padding):
    """The broad phase that check runs first changes nothing: check's answer is the first of every colliding pair.

    colliding_pairs runs Coal on every pair in order (no broad phase); on the Panda's meshes with world boxes and a
    padding that grows the broad phase's boxes, both agree on all of 600 random configurations, colliding or not.
    """
    urdf, srdf, share = panda_files
    model = CollisionModel(urdf, 'panda_link0', 'panda_hand_tcp', srdf=srdf, package_dirs=[share], padding=padding)
    model.set_obstacles([make_obstacle('table', 'box', [1.6, 1.6, 0.04], [0.3, 0.0, -0.02], frame='panda_link0'),
                         make_obstacle('post', 'box', [0.12, 0.12, 0.3], [0.55, 0.25, 0.15], frame='panda_link0')])
    rng = np.random.default_rng(2)
    colliding = 0
    for q in model.chain.random_configuration(rng, 600):
        first = model.check(q)  # before colliding_pairs, which leaves every pair's result behind
        pairs = model.colliding_pairs(q)
        assert first == (pairs[0] if pairs else None)
        colliding += bool(pairs)
    assert 50 < colliding < 550  # both kinds of configuration were compared
