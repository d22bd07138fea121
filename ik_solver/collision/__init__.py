"""Collision checking for IK: robot geometry from URDF/SRDF on Pinocchio + Coal, world objects from a scene.

Importing this package does not import Pinocchio: the MuJoCo simulator reads
scene files through ``scene`` alone.  ``CollisionModel`` is loaded on first use.
"""
from .scene import load_scene, make_obstacle, Obstacle, parse_scene, SceneError
from ..core.exceptions import CollisionError

__all__ = ['CollisionModel', 'CollisionError', 'load_scene', 'make_obstacle', 'Obstacle', 'parse_scene',
           'SceneError']


def __getattr__(name):
    """Import the Pinocchio-based model lazily (PEP 562)."""
    if name == 'CollisionModel':
        from .model import CollisionModel
        return CollisionModel
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
