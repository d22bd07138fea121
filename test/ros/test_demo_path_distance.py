"""The demo's circle error is the distance to the path, not to the nearest of its samples."""
from ik_solver_demos.tools.demo import circle, distance_to_path
import numpy as np


def _circle_points(rate=100.0):
    _, poses = circle(np.zeros(3), 0.12, 4.0, rate, 1, [1.0, 0.0, 0.0, 0.0])
    return np.array([T[:3, 3] for T in poses])


def test_a_point_on_the_circle_between_two_samples_is_on_the_path():
    path = _circle_points()
    angle = 2 * np.pi * 100.5 / 400  # halfway between samples 100 and 101
    on_circle = 0.12 * np.array([[0.0, np.sin(angle), np.cos(angle) - 1]])
    # The chord's sagitta r (1 - cos(pi / 400)), closed form, is all that separates the two.
    np.testing.assert_allclose(distance_to_path(on_circle, path), [0.12 * (1 - np.cos(np.pi / 400))], rtol=1e-6)
    assert np.linalg.norm(path - on_circle, axis=1).min() > 0.9e-3  # what the samples alone would say


def test_distances_off_the_path_are_closed_form():
    path = _circle_points()
    centre = np.array([[0.0, 0.0, -0.12]])
    np.testing.assert_allclose(distance_to_path(centre, path), [0.12], rtol=1e-4)
    beside = np.array([[0.005, 0.0, 0.0], [0.0, 0.0, 0.003]])  # off the plane; outside the top of the circle
    np.testing.assert_allclose(distance_to_path(beside, path), [0.005, 0.003], atol=1e-6)
