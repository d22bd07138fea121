"""FK and Jacobian against independent truths: closed form, finite differences, Pinocchio."""
from ik_solver.core.transforms import rotation_vector
import numpy as np
import pytest


def test_planar_fk_matches_closed_form(planar3, rng):
    lengths = [0.5, 0.4, 0.3]
    for q in planar3.random_configuration(rng, 50):
        angles = np.cumsum(q)
        x = sum(L * np.cos(a) for L, a in zip(lengths, angles))
        y = sum(L * np.sin(a) for L, a in zip(lengths, angles))
        T = planar3.fk(q)
        np.testing.assert_allclose(T[:3, 3], [x, y, 0.0], atol=1e-12)
        assert np.isclose(np.arctan2(T[1, 0], T[0, 0]), np.arctan2(np.sin(angles[-1]), np.cos(angles[-1])))


def _finite_difference_jacobian(chain, q, h=1e-6):
    """Central differences of the tip pose: position columns and rotation-vector columns."""
    J = np.zeros((6, chain.n))
    T0 = chain.fk(q)
    for i in range(chain.n):
        dq = np.zeros(chain.n)
        dq[i] = h
        Tp, Tm = chain.fk(q + dq), chain.fk(q - dq)
        J[:3, i] = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
        J[3:, i] = (rotation_vector(Tp[:3, :3] @ T0[:3, :3].T) - rotation_vector(Tm[:3, :3] @ T0[:3, :3].T)) / (2 * h)
    return J


@pytest.mark.parametrize('name', ['mixed', 'ik7', 'ik6', 'planar3'])
def test_jacobian_matches_finite_differences(name, request, rng):
    chain = request.getfixturevalue(name)
    for q in chain.random_configuration(rng, 20):
        q = np.clip(q, chain.lower + 1e-5, chain.upper - 1e-5)
        np.testing.assert_allclose(chain.jacobian(q), _finite_difference_jacobian(chain, q), atol=1e-6)


def test_mixed_chain_structure(mixed):
    # j1, p1, c1, r2 are variables; m1 mimics j1; f1 is folded away.
    assert mixed.joint_names == ['j1', 'p1', 'c1', 'r2']
    assert mixed.mimic_joints == ['m1']
    assert np.isinf(mixed.lower[2]) and np.isinf(mixed.upper[2])
    # The mimic joint follows j1: moving j1 alone changes the pose below m1 as j1 and m1 together.
    J = mixed.jacobian(np.zeros(4))
    assert np.linalg.norm(J[3:, 0] - np.array([0, 0, 1])) > 0.1


def test_prismatic_column_is_pure_translation(mixed, rng):
    q = mixed.random_configuration(rng)
    J = mixed.jacobian(q)
    np.testing.assert_allclose(J[3:, 1], 0.0, atol=1e-15)
    assert np.isclose(np.linalg.norm(J[:3, 1]), 1.0)


def test_batch_matches_single(ik7, rng):
    Q = ik7.random_configuration(rng, 10)
    poses = ik7.fk_batch(Q)
    jacobians = ik7.jacobian_batch(Q)
    for q, T, J in zip(Q, poses, jacobians):
        np.testing.assert_array_equal(T, ik7.fk(q))
        np.testing.assert_array_equal(J, ik7.jacobian(q))


def test_fk_of_intermediate_link(ik7):
    # joint2's frame sits at the shoulder: 0.16 + 0.20 m above the base, whatever joint1 does.
    for q1 in (-1.0, 0.0, 2.0):
        q = np.zeros(7)
        q[0] = q1
        np.testing.assert_allclose(ik7.fk(q, 'link2')[:3, 3], [0, 0, 0.36], atol=1e-12)
    np.testing.assert_allclose(ik7.fk(np.zeros(7), 'base_link'), np.eye(4))
    np.testing.assert_allclose(ik7.fk(np.zeros(7), 'tool0')[:3, 3], [0, 0, 1.306], atol=1e-12)


@pytest.mark.parametrize('robot,base,tip', [
    ('ur_description/urdf/ur5_robot.urdf', 'base_link', 'tool0'),
    ('panda_description/urdf/panda.urdf', 'panda_link0', 'panda_hand_tcp'),
])
def test_fk_and_jacobian_match_pinocchio(robot, base, tip, rng):
    pin = pytest.importorskip('pinocchio')
    from conftest import example_robot
    from ik_solver.core.chain import load_chain
    path = example_robot(robot)
    chain = load_chain(path, base, tip)
    model = pin.buildModelFromUrdf(path)
    data = model.createData()
    frame = model.getFrameId(tip)
    base_frame = model.getFrameId(base)
    for q in chain.random_configuration(rng, 20):
        full = pin.neutral(model)
        for name, value in zip(chain.joint_names, q):
            full[model.joints[model.getJointId(name)].idx_q] = value
        pin.forwardKinematics(model, data, full)
        pin.updateFramePlacements(model, data)
        base_pose = data.oMf[base_frame]
        tip_pose = base_pose.inverse() * data.oMf[frame]
        np.testing.assert_allclose(chain.fk(q), tip_pose.homogeneous, atol=1e-10)
        J = pin.computeFrameJacobian(model, data, full, frame, pin.LOCAL_WORLD_ALIGNED)
        cols = [model.joints[model.getJointId(n)].idx_v for n in chain.joint_names]
        R0 = base_pose.rotation.T
        J_base = np.vstack([R0 @ J[:3, cols], R0 @ J[3:, cols]])
        np.testing.assert_allclose(chain.jacobian(q), J_base, atol=1e-10)
