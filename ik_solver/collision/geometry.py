"""Collision shapes of a URDF's links, read from its <collision> elements into Coal geometries.

We read <collision> ourselves rather than through urdfdom, which silently drops
what it does not know (capsules) and reports missing meshes without the link.
Each shape keeps its link and its placement in the link frame.  A link whose
mesh is missing is an error, or, with ``skip_missing_meshes``, loses all its
collision geometry (and says so).

URDFs name meshes as ``package://pkg/path``, ``file:///abs/path`` or a path
relative to the URDF file.  ``package://`` is resolved like ROS does (ament
index, when importable), then through explicit package directories, so robots
installed without ROS (e.g. PyPI's example-robot-data) load too.  Meshes are
loaded once per (file, scale) and shared between links.  World objects use the
same primitives (``coal_primitive``).
"""
from dataclasses import dataclass
import logging
import os

import numpy as np

from ..core.exceptions import CollisionError
from ..core.transforms import rpy_to_matrix

LOGGER = logging.getLogger('ik_solver.collision')
#: URDF geometry element -> its attributes, in the order Coal's constructor takes them.
PRIMITIVES = {'box': ('size',), 'sphere': ('radius',), 'cylinder': ('radius', 'length'),
              'capsule': ('radius', 'length')}
#: Largest mesh file loaded [bytes].  Collision meshes of real robots are a few MB (the largest shipped by
#: example-robot-data, visual meshes included, is 29 MB); a larger file is refused before it is read, since
#: loading and checking against millions of triangles would hold the node for minutes.
MAX_MESH_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class LinkShape:
    """One collision element: a Coal geometry fixed to ``link`` at ``placement`` (4x4, link frame)."""

    link: str
    geometry: object
    placement: np.ndarray
    description: str


def link_shapes(root, package_dirs=(), base_dir=None, skip_missing_meshes=False, convex=False):
    """Return (shapes, notes): the collision shapes of every link of the URDF element ``root``.

    ``notes`` lists what was skipped (links whose meshes are missing, with ``skip_missing_meshes``).
    """
    meshes = MeshCache(convex)
    shapes, notes = [], []
    for link in root.findall('link'):
        name = link.get('name')
        try:
            shapes += [_shape(name, element, meshes, package_dirs, base_dir)
                       for element in link.findall('collision')]
        except _MissingMesh as missing:
            if not skip_missing_meshes:
                raise CollisionError(f'{missing}; give its package directory in package_dirs, or set '
                                     'skip_missing_meshes to check without this link') from None
            note = f'{missing}: link {name!r} has no collision geometry'
            LOGGER.warning(note)
            notes.append(note)
    return shapes, notes


class _MissingMesh(Exception):
    pass


def _shape(link, element, meshes, package_dirs, base_dir):
    geometry = element.find('geometry')
    kinds = [] if geometry is None else list(geometry)
    if len(kinds) != 1:
        raise CollisionError(f"link '{link}': a <collision> needs one <geometry> with one shape")
    kind = kinds[0]
    placement = _origin(link, element.find('origin'))
    if kind.tag == 'mesh':
        return _mesh(link, kind, placement, meshes, package_dirs, base_dir)
    if kind.tag not in PRIMITIVES:
        raise CollisionError(f"link '{link}': unsupported collision geometry <{kind.tag}>; "
                             f'expected mesh, {", ".join(PRIMITIVES)}')
    values = [v for attribute in PRIMITIVES[kind.tag]
              for v in _numbers(link, kind, attribute, length=3 if attribute == 'size' else 1)]
    if any(v <= 0 for v in values):
        raise CollisionError(f"link '{link}': <{kind.tag}> dimensions must be positive, got {values}")
    return LinkShape(link, coal_primitive(kind.tag, values), placement, f'{kind.tag} {values}')


def coal_primitive(kind, values):
    """Coal geometry of a primitive: ``kind`` a key of PRIMITIVES, ``values`` its attributes in that order."""
    import coal
    constructor = {'box': coal.Box, 'sphere': coal.Sphere, 'cylinder': coal.Cylinder, 'capsule': coal.Capsule}
    return constructor[kind](*values)


def _mesh(link, element, placement, meshes, package_dirs, base_dir):
    uri = element.get('filename')
    if not uri:
        raise CollisionError(f"link '{link}': <mesh> has no filename")
    scale = _numbers(link, element, 'scale', default='1 1 1')
    if len(scale) == 1:
        scale = scale * 3
    if len(scale) != 3 or any(s == 0 for s in scale):
        raise CollisionError(f"link '{link}': mesh scale must be 3 non-zero numbers, got {scale}")
    path = resolve_mesh_path(uri, package_dirs, base_dir)
    if path is None:
        raise _MissingMesh(f"collision mesh {uri} of link '{link}' not found")
    return LinkShape(link, meshes.load(path, scale, link), placement, f'mesh {path}')


def _origin(link, element):
    placement = np.eye(4)
    if element is not None:
        placement[:3, :3] = rpy_to_matrix(_numbers(link, element, 'rpy', default='0 0 0', length=3))
        placement[:3, 3] = _numbers(link, element, 'xyz', default='0 0 0', length=3)
    return placement


def _numbers(link, element, attribute, default=None, length=None):
    text = element.get(attribute, default)
    if text is None:
        raise CollisionError(f"link '{link}': <{element.tag}> has no {attribute}")
    try:
        values = [float(v) for v in text.split()]
    except ValueError:
        raise CollisionError(f"link '{link}': <{element.tag} {attribute}=\"{text}\"> is not numeric") from None
    if not all(np.isfinite(values)) or (length is not None and len(values) != length):
        raise CollisionError(f"link '{link}': <{element.tag} {attribute}=\"{text}\"> is invalid")
    return values


def resolve_mesh_path(uri, package_dirs=(), base_dir=None):
    """Absolute path of the mesh ``uri``, or None when it cannot be found."""
    if uri.startswith('package://'):
        package, _, relative = uri[len('package://'):].partition('/')
        candidates = [os.path.join(root, relative) for root in _package_roots(package, package_dirs)]
    elif uri.startswith('file://'):
        candidates = [uri[len('file://'):]]
    elif os.path.isabs(uri):
        candidates = [uri]
    else:
        candidates = [os.path.join(base_dir or os.getcwd(), uri)]
    return next((os.path.abspath(c) for c in candidates if os.path.isfile(c)), None)


def _package_roots(package, package_dirs):
    """Directories that may be the share directory of ``package``: the ament index first, then package_dirs."""
    roots = []
    try:
        from ament_index_python.packages import get_package_share_directory, PackageNotFoundError
        try:
            roots.append(get_package_share_directory(package))
        except (PackageNotFoundError, ValueError):
            pass
    except ImportError:
        pass
    for directory in package_dirs:
        directory = os.path.expanduser(str(directory))
        roots.append(os.path.join(directory, package))
        if os.path.basename(os.path.normpath(directory)) == package:
            roots.append(directory)
    return roots


class MeshCache:
    """Loads each mesh file once with Coal (assimp), as a BVH or as its convex hull."""

    def __init__(self, convex=False):
        self.convex = convex
        self._meshes = {}

    def load(self, path, scale, link):
        """Coal geometry of the mesh file ``path`` scaled by ``scale``; CollisionError names file and link."""
        key = (path, tuple(scale))
        if key not in self._meshes:
            self._meshes[key] = self._load(path, scale, link)
        return self._meshes[key]

    def _load(self, path, scale, link):
        import coal
        size = os.path.getsize(path)
        if size > MAX_MESH_BYTES:
            raise CollisionError(f"collision mesh {path} of link '{link}' has {size / 2 ** 20:.0f} MiB, more than "
                                 f'the {MAX_MESH_BYTES // 2 ** 20} MiB a collision mesh may have: use a simplified '
                                 'collision mesh')
        try:
            mesh = coal.MeshLoader().load(path, np.asarray(scale, dtype=float))
        except ValueError as exc:
            reason = str(exc).split('message:')[-1].split('Hint:')[0].strip().replace('\n', ' ')
            raise CollisionError(f"cannot load collision mesh {path} of link '{link}': {reason}") from None
        if mesh.num_tris == 0:
            raise CollisionError(f"collision mesh {path} of link '{link}' has no triangles")
        if not self.convex:
            return mesh
        mesh.buildConvexHull(True, 'Qt')
        return mesh.convex
