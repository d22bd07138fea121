"""Collision wiring of ik_solver_node over DDS: ik7 with its SRDF and the table scene (config/ik7_scene.yaml).

The truths are the collision model's own answers in this process (a second instance of it), and the refusal
reasons the node gives: a target under the table top is refused as ``collision`` (and solved with the per-request
avoid_collisions OFF), a move whose straight joint path crosses the box is refused as ``collision_path`` and
nothing is sent.
"""
import time

from conftest import URDF_DIR
from ik_solver.core.transforms import make_pose  # noqa: E402
from ik_solver.ros.messages import matrix_to_pose  # noqa: E402
from ik_solver_demos.tools.demo import DOWN  # noqa: E402
import numpy as np
import pytest
from ros_fixtures import Session, start  # noqa: I100

pytest.importorskip('pinocchio', reason='Pinocchio (PyPI pin) is not installed: no collision model')
from ik_solver.collision.world import collision_from_parameters  # noqa: E402, I100
from ik_solver_interfaces.srv import SolveIK  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

CONFIG = URDF_DIR.parent / 'config'
SRDF, SCENE = str(CONFIG / 'ik7.srdf'), str(CONFIG / 'ik7_scene.yaml')
#: Tip 8 cm under the table top (z = 0.20), in the middle of the table.
UNDER_TABLE = make_pose([0.6, 0.0, 0.12], DOWN)
#: A collision-free configuration with the tip beside the box at its height; joint1 + 1 rad swings it through.
BESIDE_BOX = np.array([-0.4, 0.905, 0.675, -1.377, -0.597, 1.066, -2.765])


@pytest.fixture(scope='module')
def world(ik7):
    return collision_from_parameters(str(URDF_DIR / 'ik7.urdf.xacro'), ik7, SRDF, SCENE)


@pytest.fixture(scope='module')
def session(ik7):
    s = Session(ik7.joint_names)
    try:
        s.node = s.add(start('ros.ik_node', srdf_file=SRDF, scene_file=SCENE))
        assert s.wait_service(s.observer.solve_client), s.node.output()
        yield s
    finally:
        s.close()


def _request(T, **fields):
    request = SolveIK.Request(timeout=0.5, **fields)
    request.target.header.frame_id = 'base_link'
    request.target.pose = matrix_to_pose(T)
    return request


def _call(session, request):
    response = session.observer.call(session.observer.solve_client, request, timeout=60.0)
    assert response is not None, session.node.output()[-2000:]
    return response


def test_target_under_the_table_top_is_refused_as_collision(session, world, ik7):
    response = _call(session, _request(UNDER_TABLE))
    assert response.reason == SolveIK.Response.COLLISION, response.message
    assert 'table' in response.message
    off = _call(session, _request(UNDER_TABLE, avoid_collisions=SolveIK.Request.COLLISIONS_OFF))
    assert off.success, off.message
    q = np.array(off.solution.position)
    assert world.model.check(q) is not None  # the plain solution does collide, as the model in this process says


def test_move_through_the_box_is_refused_as_collision_path(session, world, ik7):
    goal = BESIDE_BOX + [1.0, 0, 0, 0, 0, 0, 0]
    model = world.model
    assert model.check(BESIDE_BOX) is None and model.check(goal) is None
    assert model.check_path(np.array([BESIDE_BOX, goal])) is not None
    session.hold_joints(ik7.joint_names, BESIDE_BOX)
    try:
        time.sleep(0.3)
        since = time.monotonic()
        response = _call(session, _request(ik7.fk(goal), execute=True, mode='closest'))
        solution = np.array(response.solution.position)
        hit = model.check_path(np.array([BESIDE_BOX, solution]))
        assert hit is not None  # the straight joint move to the node's solution crosses an obstacle
        assert response.reason == SolveIK.Response.COLLISION_PATH, response.message
        assert not response.executed and 'box' in response.message
        time.sleep(0.2)
        assert session.trajectories_since(since) == []
    finally:
        session.hold_joints(None, None)


def test_collision_objects_topic_adds_and_deletes_world_objects(session, ik7):
    """A CUBE marker around a reachable target makes it a collision naming the marker; DELETEALL frees it."""
    target = ik7.fk(BESIDE_BOX)
    assert _call(session, _request(target)).success
    cube = Marker(ns='test', id=1, type=Marker.CUBE, action=Marker.ADD)
    cube.header.frame_id = 'base_link'
    cube.pose = matrix_to_pose(target)
    cube.scale.x = cube.scale.y = cube.scale.z = 0.1
    publisher = session.observer.create_publisher(MarkerArray, 'ik_solver/collision_objects', 10)
    try:
        refused = None
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and refused is None:
            publisher.publish(MarkerArray(markers=[cube]))
            time.sleep(0.2)
            response = _call(session, _request(target))
            refused = response if response.reason == SolveIK.Response.COLLISION else None
        assert refused is not None and 'test/1' in refused.message, response.message
        publisher.publish(MarkerArray(markers=[Marker(action=Marker.DELETEALL)]))
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and not _call(session, _request(target)).success:
            time.sleep(0.2)
        assert _call(session, _request(target)).success
    finally:
        session.observer.destroy_publisher(publisher)
