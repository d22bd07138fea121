"""Find and load the mesh files of URDF <collision> elements.

URDFs name meshes as ``package://pkg/path``, ``file:///abs/path`` or a path
relative to the URDF file.  ``package://`` is resolved like ROS does (ament
index, when importable), then through explicit package directories, so robots
installed without ROS (e.g. PyPI's example-robot-data) load too.  Meshes are
loaded once per (file, scale) and shared between links.
"""
import os

import numpy as np

from .errors import CollisionError


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
