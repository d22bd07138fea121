"""Transforms between any two links of a URDF tree, for targets given in a robot frame.

A target may be stamped in a link outside the IK chain (a camera on the
torso, a world link above the base).  Its pose in the base link follows
from the robot's own kinematics and the current positions of the joints on
the path, without tf.
"""
import numpy as np

from .exceptions import LinkNotFoundError, UnsupportedJointError
from .transforms import rpy_to_matrix


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
        self._parent = {j.child: j for j in robot.joints}
        self._links = {link.name for link in robot.links}
        self._joints = {j.name: j for j in robot.joints}
        self.reference = reference
        if reference not in self._links:
            raise LinkNotFoundError(f"link '{reference}' is not in the robot")

    def has_link(self, link):
        return link in self._links

    def joints_between(self, link):
        """Names of the non-fixed joints whose positions the pose of ``link`` depends on."""
        return sorted({j.name for j in self._path(link) + self._path(self.reference) if j.type != 'fixed'})

    def pose(self, link, positions):
        """4x4 pose of ``link`` in the reference link; positions: {joint name: value}."""
        if link not in self._links:
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
    if joint.origin is not None:
        T[:3, :3] = rpy_to_matrix(joint.origin.rpy or [0, 0, 0])
        T[:3, 3] = joint.origin.xyz or [0, 0, 0]
    if joint.type == 'fixed':
        return T
    if joint.type not in ('revolute', 'continuous', 'prismatic'):
        raise UnsupportedJointError(f"joint '{joint.name}' is {joint.type}: its pose cannot be computed")
    if joint.name not in positions:
        raise KeyError(f"position of joint '{joint.name}' is unknown (not in joint_states)")
    value = positions[joint.name]
    if joint.mimic is not None and joint.mimic.joint in positions:
        value = (joint.mimic.multiplier or 1.0) * positions[joint.mimic.joint] + (joint.mimic.offset or 0.0)
    axis = np.array(joint.axis if joint.axis is not None else [1.0, 0.0, 0.0], float)
    axis /= np.linalg.norm(axis)
    motion = np.eye(4)
    if joint.type == 'prismatic':
        motion[:3, 3] = axis * value
    else:
        motion[:3, :3] = _axis_angle(axis, value)
    return T @ motion
