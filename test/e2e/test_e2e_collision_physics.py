"""Collision avoidance witnessed by the physics: ik_solver_node drives the MuJoCo arm over DDS.

The node and the simulator load the same world (config/ik7_scene.yaml: a table and a box on it).  The targets
are the tips of random ik7 configurations above the table that the collision model in this process (padding 0,
independent of the node's instance) finds free: reachable by construction.  The witness is the simulator: its
own tip pose (MuJoCo kinematics) says whether a target was reached, and its ``~/contacts`` report (every
arm-world contact of any physics step) says whether the arm ever touched the table or the box.  A positive
control (collisions checked OFF, a target under the table top) shows the witness does see contacts.
"""
import json
import time

from conftest import URDF_DIR
from ik_solver.core.transforms import make_pose
from ik_solver.ros.messages import matrix_to_pose
from ik_solver_demos.tools.demo import DOWN
from ik_solver_interfaces.srv import SolveIK
import numpy as np
import pytest
from ros_fixtures import poll, Session, start  # noqa: I100
from std_msgs.msg import String

pytest.importorskip('pinocchio', reason='Pinocchio (PyPI pin) is not installed: no collision model')
pytest.importorskip('mujoco', reason='MuJoCo is not installed: no physics')
from ik_solver.collision.world import collision_from_parameters  # noqa: E402, I100

CONFIG = URDF_DIR.parent / 'config'
SRDF, SCENE = str(CONFIG / 'ik7.srdf'), str(CONFIG / 'ik7_scene.yaml')
HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
#: Ten targets from the ``rng`` fixture's seed are enough: the straight joint moves between the configurations
#: that define them pass through the table or the box for four of them (targets 5-8), and the seventh lies
#: within the node's padding: moves a node that does not check would make.  The ten after them in a longer run
#: add only moves whose straight path is clear by 2 cm or more.
TARGETS = 10
#: Targets come from HOME + uniform(-SPREAD, SPREAD) per joint (clipped to the limits): varied moves that stay
#: short (under ~2 s at full URDF velocity).
SPREAD = 1.2
#: The table top (config/ik7_scene.yaml); a target's tip is at least CLEAR above it, over its footprint.
TABLE_TOP, CLEAR = 0.20, 0.03
TABLE_X, TABLE_Y = (0.35, 0.95), (-0.5, 0.5)
#: The node's clearance: the servos track a move within a few millimetres, and the path check samples every
#: 0.01 rad of joint travel (about 1 cm at the tip); a centimetre of padding keeps the physical arm off the
#: objects the node's check passes.
PADDING = 0.01
#: The node's other settings take load and flips out of the answer: a solve budget that CI preemption does not
#: cut, targets that do not expire while queued, no JOINT_JUMP refusal (refusals here are for collisions), and
#: full speed (short moves).
NODE = {'timeout': 0.25, 'max_target_age': 5.0, 'max_joint_jump': 6.5, 'velocity_scaling': 1.0,
        'acceleration_scaling': 1.0}
REACHED = 2e-3  # m, tip position error measured by the simulator
COLLISION_REASONS = ('collision', 'collision_path')
#: Tip 8 cm under the table top, in the middle of the table.
UNDER_TABLE = make_pose([0.6, 0.0, 0.12], DOWN)


@pytest.fixture(scope='module')
def world(ik7):
    return collision_from_parameters(str(URDF_DIR / 'ik7.urdf.xacro'), ik7, SRDF, SCENE)


@pytest.fixture(scope='module')
def arm(ik7):
    with Session(ik7.joint_names) as s:
        s.contacts = []
        s.observer.create_subscription(String, 'sim_arm/contacts', lambda m: s.contacts.append(json.loads(m.data)),
                                       100)
        s.sim = s.add(start('sim.sim_arm_node', scene_file=SCENE, initial_positions=HOME.tolist()))
        s.node = s.add(start('ros.ik_node', srdf_file=SRDF, scene_file=SCENE, collision_padding=PADDING, **NODE))
        assert s.observer.wait_ready(120.0), s.node.output()[-2000:] + s.sim.output()[-2000:]
        yield s


def _targets(chain, model, rng):
    """Return configurations near HOME, collision-free (padding 0), with the tip above the table top."""
    found = []
    while len(found) < TARGETS:
        q = np.clip(HOME + rng.uniform(-SPREAD, SPREAD, chain.n), chain.lower, chain.upper)
        x, y, z = chain.fk(q)[:3, 3]
        over = TABLE_X[0] < x < TABLE_X[1] and TABLE_Y[0] < y < TABLE_Y[1] and z > TABLE_TOP + CLEAR
        if over and model.check(q) is None:
            found.append(q)
    return found


def _arm_contacts(arm, since=0):
    """Return the contacts the simulator reported in its messages from the ``since``-th on."""
    return [c for message in arm.contacts[since:] for c in message]  # appended whole by the executor thread


def test_random_targets_above_the_table_are_reached_or_refused_without_any_contact(arm, world, ik7, rng):
    assert world.model.padding == 0.0
    outcomes, since = [], len(arm.contacts)
    for q in _targets(ik7, world.model, rng):
        target = ik7.fk(q)
        sent = arm.observer.send_target(target)
        status = arm.observer.wait_status(sent, timeout=30.0)
        assert status is not None, arm.node.output()[-2000:]
        assert arm.observer.wait_executed(sent, status, timeout=30.0), (
            'the arm did not settle', arm.observer.latest_joints(), arm.sim.output()[-1500:])
        error = np.linalg.norm(arm.observer.latest_tip()[:3, 3] - target[:3, 3])
        outcomes.append((status.reason, error, status.message))
        if status.success:
            assert status.trajectory_published and error < REACHED, (q, outcomes[-1])
        else:
            assert status.reason in COLLISION_REASONS, (q, outcomes[-1])
    # the arm was never in contact with the table or the box, in any physics step
    time.sleep(0.2)  # the contact report of the last steps is published at the state rate
    assert not _arm_contacts(arm, since), (_arm_contacts(arm, since)[:5], outcomes)
    reached = sum(reason == 'success' for reason, _, _ in outcomes)
    assert reached >= TARGETS // 2, outcomes  # mostly reached: refusals are the exception, not the rule


def test_the_simulator_reports_contacts_when_collisions_are_not_checked(arm):
    """Positive control of the witness: with avoid_collisions OFF the arm is sent into the table top."""
    request = SolveIK.Request(timeout=0.5, execute=True, avoid_collisions=SolveIK.Request.COLLISIONS_OFF)
    request.target.header.frame_id = 'base_link'
    request.target.pose = matrix_to_pose(UNDER_TABLE)
    since = len(arm.contacts)
    response = arm.observer.call(arm.observer.solve_client, request, timeout=60.0)
    assert response is not None and response.success and response.executed, response
    table = poll(lambda: [c for c in _arm_contacts(arm, since) if c['object'] == 'table'], timeout=30.0)
    assert table, arm.sim.output()[-2000:]
    assert min(c['distance'] for c in table) < 0.0  # a penetration the physics resolves, at the table
