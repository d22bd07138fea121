"""Transforms between any two links of a URDF tree, for targets given in a robot frame.

A target may be stamped in a link outside the IK chain (a camera on the
torso, a world link above the base).  Its pose in the base link follows
from the robot's own kinematics and the current positions of the joints on
the path, without tf.

The robot is checked on construction (``urdf.check_robot``), so every walk up
the tree ends even for a robot that did not come through ``parse_robot``.
"""
import numpy as np

from .exceptions import LinkNotFoundError, UnsupportedJointError
from .urdf import check_robot, joint_axis, joint_origin


def _axis_angle(axis, angle):
    x, y, z = axis
    c, s = np.cos(angle), np.sin(angle)
    t = 1 - c
    return np.array([[t * x * x + c, t * x * y - s * z, t * x * z + s * y],
                     [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
                     [t * x * z - s * y, t * y * z + s * x, t * z * z + c]])


class RobotFrames:
    """Poses of the links of a parsed URDF relative to one reference link."""

    def __init__(self, robot, reference):
        self._parent = check_robot(robot)
        self._links = {link.name for link in robot.links}
        self.reference = reference
        if not isinstance(reference, str) or reference not in self._links:
            raise LinkNotFoundError(f"link '{reference}' is not in the robot")

    def has_link(self, link):
        return isinstance(link, str) and link in self._links

    def joints_between(self, link):
        """Names of the non-fixed joints whose positions the pose of ``link`` depends on."""
        return sorted({j.name for j in self._path(link) + self._path(self.reference) if j.type != 'fixed'})

    def pose(self, link, positions):
        """4x4 pose of ``link`` in the reference link; positions: {joint name: value}."""
        if not isinstance(link, str) or link not in self._links:
            raise LinkNotFoundError(f"link '{link}' is not in the robot")
        return np.linalg.inv(self._root_pose(self.reference, positions)) @ self._root_pose(link, positions)

    def _path(self, link):
        path = []
        while link in self._parent:
            joint = self._parent[link]
            path.append(joint)
            link = joint.parent
        return path[::-1]

    def _root_pose(self, link, positions):
        T = np.eye(4)
        for joint in self._path(link):
            T = T @ _joint_transform(joint, positions)
        return T


def _joint_transform(joint, positions):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = joint_origin(joint)
    if joint.type == 'fixed':
        return T
    if joint.type not in ('revolute', 'continuous', 'prismatic'):
        raise UnsupportedJointError(f"joint '{joint.name}' is {joint.type}: its pose cannot be computed")
    value = _position(joint.name, positions)
    if joint.mimic is not None and joint.mimic.joint in positions:
        value = ((1.0 if joint.mimic.multiplier is None else joint.mimic.multiplier)
                 * _position(joint.mimic.joint, positions)
                 + (0.0 if joint.mimic.offset is None else joint.mimic.offset))
    axis = joint_axis(joint)
    motion = np.eye(4)
    if joint.type == 'prismatic':
        motion[:3, 3] = axis * value
    else:
        motion[:3, :3] = _axis_angle(axis, value)
    return T @ motion


def _position(name, positions):
    if name not in positions:
        raise KeyError(f"position of joint '{name}' is unknown (not in joint_states)")
    value = positions[name]
    if not isinstance(value, (int, float, np.integer, np.floating)) or not np.isfinite(value):
        raise ValueError(f"position of joint '{name}' is not a finite number: {value!r}")
    return float(value)
