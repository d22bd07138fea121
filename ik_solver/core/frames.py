"""Transforms between any two links of a URDF tree, for targets given in a robot frame.

A target may be stamped in a link outside the IK chain (a camera on the
torso, a world link above the base).  Its pose in the base link follows
from the robot's own kinematics and the current positions of the joints on
the path, without tf.

The robot is checked on construction (``urdf.check_robot``), so every walk up
the tree ends even for a robot that did not come through ``parse_robot``.

A mimic joint's position is ``multiplier * master + offset``, computed from its
master's position (joint_states need not carry mimic joints); only when the
master is unknown is the mimic joint's own reported position used.  So the
joints a pose depends on (``joints_between``) name masters, not mimic joints.
"""
import numpy as np

from .exceptions import LinkNotFoundError, UnsupportedJointError
from .kinematics import _rotate_about
from .urdf import check_robot, joint_axis, joint_origin


class RobotFrames:
    """Poses of the links of a parsed URDF relative to one reference link."""

    def __init__(self, robot, reference):
        self._parent = check_robot(robot)
        self._links = {link.name for link in robot.links}
        self._joints = {joint.name: joint for joint in robot.joints}
        self.reference = reference
        if not isinstance(reference, str) or reference not in self._links:
            raise LinkNotFoundError(f"link '{reference}' is not in the robot")

    def has_link(self, link):
        return isinstance(link, str) and link in self._links

    def joints_between(self, link):
        """Names of the joints whose positions the pose of ``link`` depends on (masters instead of mimic joints)."""
        return sorted({self._source(j).name for j in self._path(link) + self._path(self.reference)
                       if j.type != 'fixed'})

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
            T = T @ self._joint_transform(joint, positions)
        return T

    def _source(self, joint, visiting=()):
        """Return the joint whose position determines ``joint``'s: its master (through mimics), or itself."""
        master = None if joint.mimic is None else self._joints.get(joint.mimic.joint)
        if master is None:  # not a mimic joint, or its master is not in the robot: its own position counts
            return joint
        if joint.name in visiting:
            raise UnsupportedJointError(f"mimic joints form a cycle through '{joint.name}'")
        return self._source(master, (*visiting, joint.name))

    def _value(self, joint, positions):
        """Position of ``joint``: a mimic joint's from its master (its own reported one only without the master)."""
        source = self._source(joint)
        if source is joint or (source.name not in positions and joint.name in positions):
            return _position(joint.name, positions)
        multiplier = 1.0 if joint.mimic.multiplier is None else float(joint.mimic.multiplier)
        offset = 0.0 if joint.mimic.offset is None else float(joint.mimic.offset)
        return multiplier * self._value(self._joints[joint.mimic.joint], positions) + offset

    def _joint_transform(self, joint, positions):
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = joint_origin(joint)
        if joint.type == 'fixed':
            return T
        if joint.type not in ('revolute', 'continuous', 'prismatic'):
            raise UnsupportedJointError(f"joint '{joint.name}' is {joint.type}: its pose cannot be computed")
        value = self._value(joint, positions)
        axis = joint_axis(joint)
        motion = np.eye(4)
        if joint.type == 'prismatic':
            motion[:3, 3] = axis * value
        else:
            rotation = np.empty((3, 3))
            _rotate_about(axis, value, rotation)
            motion[:3, :3] = rotation
        return T @ motion


def _position(name, positions):
    if name not in positions:
        raise KeyError(f"position of joint '{name}' is unknown (not in joint_states)")
    value = positions[name]
    if not isinstance(value, (int, float, np.integer, np.floating)) or not np.isfinite(value):
        raise ValueError(f"position of joint '{name}' is not a finite number: {value!r}")
    return float(value)
