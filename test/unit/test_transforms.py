"""Quaternions to rotation matrices against Rodrigues' formula, at any scale, and the refusals; pose errors."""
from ik_solver.core.transforms import make_pose, matrix_to_quaternion, pose_errors, quaternion_to_matrix
import numpy as np
import pytest


def rodrigues(axis, angle):
    """Rotation matrix of ``angle`` [rad] about the unit ``axis``: I + sin K + (1 - cos) K^2."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * k @ k


def test_a_quaternion_is_the_rotation_about_its_axis_by_twice_its_half_angle(rng):
    for _ in range(200):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = rng.uniform(-np.pi, np.pi)
        q = np.append(axis * np.sin(angle / 2), np.cos(angle / 2))
        np.testing.assert_allclose(quaternion_to_matrix(q), rodrigues(axis, angle), atol=1e-14)
        np.testing.assert_allclose(quaternion_to_matrix(-q), rodrigues(axis, angle), atol=1e-14)


@pytest.mark.parametrize('scale', [1e-8, 0.3, 7.0, 1e200])
def test_any_non_zero_scale_gives_the_same_rotation(rng, scale):
    q = rng.normal(size=4)
    unit = q / np.linalg.norm(q)
    R = quaternion_to_matrix(q * scale)
    np.testing.assert_allclose(R, quaternion_to_matrix(unit), atol=1e-14)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-14)
    assert np.linalg.det(R) == pytest.approx(1.0)
    np.testing.assert_allclose(abs(matrix_to_quaternion(R) @ unit), 1.0, atol=1e-12)   # the same up to sign


@pytest.mark.parametrize('q, text', [([0.0, 0.0, 0.0, 0.0], 'zero quaternion'),
                                     ([0.0, 0.0, 0.0, 1e-12], 'zero quaternion'),
                                     ([np.nan, 0.0, 0.0, 1.0], 'NaN or inf'),
                                     ([0.0, np.inf, 0.0, 1.0], 'NaN or inf'),
                                     ([0.0, 0.0, 1.0], 'must have 4 elements')])
def test_quaternions_without_a_rotation_are_refused(q, text):
    with pytest.raises(ValueError, match=text):
        quaternion_to_matrix(q)


@pytest.mark.parametrize('angle', [0.0, 1e-9, 1e-4, 0.7, 2.0, np.pi - 1e-6, np.pi])
def test_pose_errors_are_the_offsets_a_pose_was_built_with(rng, angle):
    """A pose moved by d and turned by ``angle`` about any axis is (|d|, angle) from the target, batched."""
    target = make_pose(rng.normal(size=3), quaternion_to_matrix(matrix_to_quaternion(rodrigues([0, 0, 1], 0.3))))
    poses, truth = [], []
    for _ in range(20):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        offset = rng.normal(size=3) * rng.uniform(0.0, 0.5)
        pose = make_pose(target[:3, 3] + offset, rodrigues(axis, angle) @ target[:3, :3])
        poses.append(pose)
        truth.append((np.linalg.norm(offset), angle))
    np.testing.assert_allclose(pose_errors(target, np.array(poses)), truth, rtol=1e-9, atol=1e-12)
