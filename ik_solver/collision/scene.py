"""World obstacles (boxes, spheres, cylinders) from a YAML scene file.

The IK node, the collision model and the MuJoCo simulator all read the same
scene file, so this module depends on numpy and core (transforms, yaml_files) only:
the simulator must be able to import it without Pinocchio.  Sizes follow the URDF / MoveIt
conventions: a box is given by its full edge lengths, a sphere by its radius,
a cylinder by its radius and its full length along its local z axis.

    frame: base_link            # default frame of every object
    objects:
      - name: table
        type: box
        size: [1.2, 0.8, 0.04]
        position: [0.5, 0.0, -0.02]
        orientation: [0, 0, 0, 1]   # x y z w, optional
        frame: base_link            # optional, overrides the default
"""
from dataclasses import dataclass
import math
import os

import numpy as np

from ..core.transforms import quaternion_to_matrix
from ..core.yaml_files import read_yaml

#: Number of size values per shape, and what they mean.
SHAPE_SIZES = {'box': ('x', 'y', 'z'), 'sphere': ('radius',), 'cylinder': ('radius', 'length')}
DEFAULT_FRAME = 'base_link'
OBJECT_KEYS = {'name', 'type', 'size', 'position', 'orientation', 'frame'}
#: A quaternion whose norm differs from 1 by more than this is refused (smaller errors are normalised).
QUATERNION_TOLERANCE = 1e-2
#: Largest coordinate of an object's centre and largest size [m].  An arm reaches a few metres; far beyond,
#: coordinates only cost the collision library its precision (a box 1e300 m away was reported touching a link).
MAX_COORDINATE = 1e3
MAX_SIZE = 1e3
#: Objects a scene may hold: each is checked against every link at every collision-aware IK iteration.
MAX_OBJECTS = 1000
#: Largest scene file read [bytes] (1000 objects take about 150 kB).
MAX_SCENE_BYTES = 1_000_000


class SceneError(ValueError):
    """A scene file or object description is invalid; the message names the object and the field."""


@dataclass(frozen=True)
class Obstacle:
    """A primitive world object: ``pose`` is the 4x4 transform of its centre in ``frame``."""

    name: str
    shape: str
    size: tuple
    pose: np.ndarray
    frame: str = DEFAULT_FRAME


def make_obstacle(name, shape, size, position=(0.0, 0.0, 0.0), orientation=(0.0, 0.0, 0.0, 1.0),
                  frame=DEFAULT_FRAME):
    """Build a validated Obstacle; raise SceneError naming the object and the field at fault."""
    label = f'scene object {name!r}'
    if not isinstance(name, str) or not name:
        raise SceneError(f'{label}: name must be a non-empty string')
    if shape not in SHAPE_SIZES:
        raise SceneError(f'{label}: unknown type {shape!r}; expected one of {", ".join(SHAPE_SIZES)}')
    if not isinstance(frame, str) or not frame:
        raise SceneError(f'{label}: frame must be a non-empty string')
    expected = SHAPE_SIZES[shape]
    size = _vector(label, 'size', size, len(expected), f'{shape} size is [{", ".join(expected)}]')
    if np.any(size <= 0.0) or np.any(size > MAX_SIZE):
        raise SceneError(f'{label}: size values must be positive and at most {MAX_SIZE:g} m, got {size.tolist()}')
    position = _vector(label, 'position', position, 3, 'position is [x, y, z]')
    check_placement(label, position)
    quaternion = _vector(label, 'orientation', orientation, 4, 'orientation is [x, y, z, w]')
    norm = float(np.linalg.norm(quaternion))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise SceneError(f'{label}: orientation {quaternion.tolist()} is not a unit quaternion (norm {norm:.4g})')
    pose = np.eye(4)
    pose[:3, :3] = quaternion_to_matrix(quaternion)   # normalises
    pose[:3, 3] = position
    return Obstacle(name, shape, tuple(float(v) for v in size), pose, frame)


def check_placement(label, position):
    """Raise SceneError unless every coordinate of ``position`` [m] is within MAX_COORDINATE."""
    if np.max(np.abs(position)) > MAX_COORDINATE:
        raise SceneError(f'{label}: position {np.asarray(position).tolist()} lies more than {MAX_COORDINATE:g} m '
                         'from the origin of its frame')


def parse_scene(data, source='scene'):
    """Obstacles of a scene given as a mapping (the parsed YAML); raise SceneError on any defect."""
    if data is None:
        return []
    if not isinstance(data, dict):
        raise SceneError(f'{source}: top level must be a mapping with "objects", got {type(data).__name__}')
    unknown = set(data) - {'frame', 'objects'}
    if unknown:
        raise SceneError(f'{source}: unknown keys {sorted(unknown)}; expected "frame" and "objects"')
    frame = data.get('frame', DEFAULT_FRAME)
    objects = data.get('objects') or []
    if not isinstance(objects, list):
        raise SceneError(f'{source}: "objects" must be a list')
    if len(objects) > MAX_OBJECTS:
        raise SceneError(f'{source}: {len(objects)} objects, more than the {MAX_OBJECTS} a scene may hold')
    obstacles = [_parse_object(entry, index, frame, source) for index, entry in enumerate(objects)]
    duplicates = duplicate_names([o.name for o in obstacles])
    if duplicates:
        raise SceneError(f'{source}: duplicate object names {duplicates}')
    return obstacles


def duplicate_names(names):
    """Sorted names that occur more than once in ``names``."""
    seen, repeated = set(), set()
    for name in names:
        (repeated if name in seen else seen).add(name)
    return sorted(repeated)


def load_scene(path):
    """Obstacles of the YAML scene file ``path``; raise SceneError if it is missing, too large or invalid."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0   # read_yaml names the problem
    if size > MAX_SCENE_BYTES:
        raise SceneError(f'scene file {path} has {size} bytes, more than the {MAX_SCENE_BYTES} a scene may have')
    data = read_yaml(path, SceneError, 'cannot read scene file {path}: {exc.strerror}',
                     'scene file {path} is not valid YAML: {exc}')
    return parse_scene(data, source=f'scene file {path}')


def _parse_object(entry, index, frame, source):
    if not isinstance(entry, dict):
        raise SceneError(f'{source}: object #{index} must be a mapping')
    name = entry.get('name', f'#{index}')
    unknown = set(entry) - OBJECT_KEYS
    if unknown:
        raise SceneError(f'{source}: object {name!r}: unknown keys {sorted(unknown)}')
    for key in ('name', 'type', 'size', 'position'):
        if key not in entry:
            raise SceneError(f'{source}: object {name!r}: missing "{key}"')
    try:
        return make_obstacle(entry['name'], entry['type'], entry['size'], entry['position'],
                             entry.get('orientation', (0.0, 0.0, 0.0, 1.0)), entry.get('frame', frame))
    except SceneError as exc:
        raise SceneError(f'{source}: {exc}') from None


def _vector(label, field, value, length, meaning):
    if isinstance(value, (str, bytes)) or not hasattr(value, '__len__'):
        raise SceneError(f'{label}: {field} must be a list of {length} numbers ({meaning}), got {value!r}')
    if len(value) != length:
        raise SceneError(f'{label}: {field} has {len(value)} values, expected {length} ({meaning})')
    try:
        if any(isinstance(v, (bool, np.bool_)) for v in value):
            raise TypeError('a boolean is not a number')
        vector = np.array([float(v) for v in value])
    except (TypeError, ValueError):
        raise SceneError(f'{label}: {field} must contain numbers, got {list(value)!r}') from None
    if not all(math.isfinite(v) for v in vector):
        raise SceneError(f'{label}: {field} must be finite, got {vector.tolist()}')
    return vector
