"""Scene files: valid objects load with the right poses, every defect is refused with a message naming it."""
import subprocess
import sys

from ik_solver.collision.scene import load_scene, make_obstacle, parse_scene, SceneError
import numpy as np
import pytest


def _scene(tmp_path, text):
    path = tmp_path / 'scene.yaml'
    path.write_text(text)
    return str(path)


def test_load_scene_table_and_box(tmp_path):
    path = _scene(tmp_path, """
frame: world
objects:
  - {name: table, type: box, size: [1.2, 0.8, 0.04], position: [0.5, 0, -0.02]}
  - {name: post, type: cylinder, size: [0.05, 0.4], position: [0.4, 0.3, 0.2],
     orientation: [0.7071068, 0, 0, 0.7071068], frame: base_link}
  - {name: ball, type: sphere, size: [0.1], position: [0.3, -0.3, 0.5]}
""")
    table, post, ball = load_scene(path)
    assert (table.name, table.shape, table.size, table.frame) == ('table', 'box', (1.2, 0.8, 0.04), 'world')
    np.testing.assert_allclose(table.pose, [[1, 0, 0, 0.5], [0, 1, 0, 0], [0, 0, 1, -0.02], [0, 0, 0, 1]])
    assert post.frame == 'base_link' and post.size == (0.05, 0.4)
    # 90 degrees about x: the cylinder's axis (local z) points along -y in the frame.
    np.testing.assert_allclose(post.pose[:3, 2], [0, -1, 0], atol=1e-6)
    np.testing.assert_allclose(post.pose[:3, :3] @ post.pose[:3, :3].T, np.eye(3), atol=1e-12)
    assert ball.shape == 'sphere' and ball.frame == 'world'


def test_default_frame_and_empty_scene(tmp_path):
    (obstacle,) = load_scene(_scene(tmp_path, 'objects: [{name: a, type: sphere, size: [0.1], position: [0, 0, 1]}]'))
    assert obstacle.frame == 'base_link'
    assert load_scene(_scene(tmp_path, '')) == []
    assert parse_scene({'objects': []}) == []


def test_small_quaternion_error_is_normalised():
    obstacle = make_obstacle('a', 'box', [1, 1, 1], orientation=[0, 0, 0.001, 1.001])
    np.testing.assert_allclose(np.linalg.det(obstacle.pose[:3, :3]), 1.0, atol=1e-12)


@pytest.mark.parametrize('entry, words', [
    ({'name': 'a', 'type': 'cone', 'size': [1], 'position': [0, 0, 0]}, ["'a'", 'unknown type', 'cone']),
    ({'name': 'a', 'type': 'box', 'size': [1, 1], 'position': [0, 0, 0]}, ["'a'", 'size', '2 values', 'expected 3']),
    ({'name': 'a', 'type': 'cylinder', 'size': [0.1], 'position': [0, 0, 0]}, ['radius, length']),
    ({'name': 'a', 'type': 'sphere', 'size': [0], 'position': [0, 0, 0]}, ['positive']),
    ({'name': 'a', 'type': 'box', 'size': [1, -1, 1], 'position': [0, 0, 0]}, ['positive']),
    ({'name': 'a', 'type': 'box', 'size': [1, 1, 1], 'position': [0, float('nan'), 0]}, ['position', 'finite']),
    ({'name': 'a', 'type': 'box', 'size': [1, 1, 1], 'position': [0, 0, 0], 'orientation': [0, 0, 0, 0]},
     ['unit quaternion']),
    ({'name': 'a', 'type': 'box', 'size': [1, 1, 1], 'position': [0, 0, 0], 'orientation': [0, 0, 1, 1]},
     ['unit quaternion']),
    ({'name': 'a', 'type': 'box', 'size': [1, 1, 1], 'position': [0, 0, 0], 'orientation': [0, 0, 1]},
     ['orientation', 'x, y, z, w']),
    ({'name': 'a', 'type': 'box', 'size': [1, 1, 1], 'position': 'origin'}, ['position', 'list of 3']),
    ({'name': 'a', 'type': 'box', 'size': [1, 'x', 1], 'position': [0, 0, 0]}, ['size', 'numbers']),
    ({'name': 'a', 'type': 'box', 'size': [1, 1, 1]}, ['missing "position"']),
    ({'name': 'a', 'type': 'box', 'size': [1, 1, 1], 'position': [0, 0, 0], 'positon': 1}, ['unknown keys']),
    ({'name': '', 'type': 'box', 'size': [1, 1, 1], 'position': [0, 0, 0]}, ['name']),
    ({'name': 'a', 'type': 'sphere', 'size': [True], 'position': [0, 0, 0]}, ['size', 'numbers', 'True']),
    ({'name': 'a', 'type': 'box', 'size': [1, 1, 1], 'position': [1e300, 0, 0]}, ['more than 1000 m']),
    ({'name': 'a', 'type': 'box', 'size': [1, 1e300, 1], 'position': [0, 0, 0]}, ['at most 1000 m']),
])
def test_invalid_objects_are_refused(entry, words):
    with pytest.raises(SceneError) as info:
        parse_scene({'objects': [entry]}, source='test scene')
    for word in words:
        assert word in str(info.value)
    assert 'test scene' in str(info.value)


def test_invalid_files(tmp_path):
    with pytest.raises(SceneError, match='cannot read'):
        load_scene(str(tmp_path / 'absent.yaml'))
    with pytest.raises(SceneError, match='not valid YAML'):
        load_scene(_scene(tmp_path, 'objects: [unclosed'))
    with pytest.raises(SceneError, match='top level must be a mapping'):
        load_scene(_scene(tmp_path, '- a\n- b\n'))
    with pytest.raises(SceneError, match='duplicate object names'):
        parse_scene({'objects': [{'name': 'a', 'type': 'sphere', 'size': [1], 'position': [0, 0, 0]}] * 2})
    with pytest.raises(SceneError, match='unknown keys'):
        parse_scene({'object': []})


def test_scenes_are_bounded_in_size_before_they_are_parsed(tmp_path):
    """A 5,000-sphere scene did not load in 120 s: the count and the file size are refused first."""
    sphere = {'type': 'sphere', 'size': [0.01], 'position': [0, 0, 0]}
    with pytest.raises(SceneError, match='1001 objects, more than the 1000'):
        parse_scene({'objects': [dict(sphere, name=f's{k}') for k in range(1001)]})
    assert len(parse_scene({'objects': [dict(sphere, name=f's{k}') for k in range(1000)]})) == 1000
    big = _scene(tmp_path, '# ' + 'x' * 1_000_000 + '\nobjects: []\n')
    with pytest.raises(SceneError, match='more than the 1000000 a scene may have'):
        load_scene(big)


def test_scene_import_does_not_load_pinocchio():
    code = ('import sys; import ik_solver.collision; from ik_solver.collision import load_scene; '
            'assert "pinocchio" not in sys.modules, "pinocchio imported"')
    subprocess.run([sys.executable, '-c', code], check=True)
