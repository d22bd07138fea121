"""World objects from visualization_msgs/Marker messages (CUBE, SPHERE, CYLINDER), as on ``~/collision_objects``.

Markers are read by duck typing (no ROS import), so this module is tested
without rclpy.  Sizes follow RViz: ``scale`` is the full size, so a sphere's
radius is scale/2 and a cylinder's is scale.x/2 with height scale.z; an
ellipsoid or elliptic cylinder becomes the round shape around it (the larger
diameter), which is conservative.  A zero quaternion, which RViz draws as the
identity, means the identity here too.  An empty ``header.frame_id`` means the
frame the caller gives (the node: its chain's base link, whatever its name).
"""
import dataclasses

import numpy as np

from .scene import DEFAULT_FRAME, make_obstacle, SceneError

CUBE, SPHERE, CYLINDER = 1, 2, 3
ADD, DELETE, DELETEALL = 0, 2, 3
SHAPES = {CUBE: 'box', SPHERE: 'sphere', CYLINDER: 'cylinder'}


def marker_shape(obstacle):
    """Return (marker type, (scale x, y, z)) drawing ``obstacle`` in RViz: the inverse of obstacle_from_marker."""
    if obstacle.shape == 'box':
        return CUBE, tuple(obstacle.size)
    if obstacle.shape == 'sphere':
        return SPHERE, (2 * obstacle.size[0],) * 3
    return CYLINDER, (2 * obstacle.size[0], 2 * obstacle.size[0], obstacle.size[1])


def marker_name(marker):
    """Name of the world object a marker adds or deletes: ``<ns>/<id>`` (``<id>`` when ns is empty)."""
    return f'{marker.ns}/{marker.id}' if marker.ns else str(marker.id)


def obstacle_from_marker(marker, default_frame=DEFAULT_FRAME, transform=None, frame=None):
    """Obstacle of an ADD marker; ``transform`` (4x4) maps the marker's frame into ``frame`` when given.

    A marker without ``header.frame_id`` is in ``default_frame``.

    Raises SceneError naming the marker for an unsupported type or an invalid size or pose.
    """
    name = marker_name(marker)
    if marker.type not in SHAPES:
        raise SceneError(f"marker '{name}': type {marker.type} is not CUBE (1), SPHERE (2) or CYLINDER (3)")
    scale = [marker.scale.x, marker.scale.y, marker.scale.z]
    shape = SHAPES[marker.type]
    size = {'box': scale, 'sphere': [max(scale) / 2], 'cylinder': [max(scale[:2]) / 2, scale[2]]}[shape]
    p, o = marker.pose.position, marker.pose.orientation
    quaternion = [o.x, o.y, o.z, o.w]
    if quaternion == [0.0, 0.0, 0.0, 0.0]:
        quaternion = [0.0, 0.0, 0.0, 1.0]
    obstacle = make_obstacle(name, shape, size, [p.x, p.y, p.z], quaternion, marker.header.frame_id or default_frame)
    if transform is None:
        return obstacle
    transform = np.asarray(transform, dtype=float)
    if transform.shape != (4, 4) or not np.all(np.isfinite(transform)):
        raise SceneError(f"marker '{name}': transform of frame '{obstacle.frame}' is not a finite 4x4 matrix")
    return dataclasses.replace(obstacle, pose=transform @ obstacle.pose, frame=frame)
