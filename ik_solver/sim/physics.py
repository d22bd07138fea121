"""A URDF arm in MuJoCo with position servos, as a ros2_control position interface would drive it.

Each joint gets a position servo (stiffness ``kp``) plus a velocity servo
(damping ``kv``) fed with the trajectory's velocity, rotor ``armature``, and
gravity compensation, as a real arm's joint controllers provide.  Contacts
are off: the simulator shows tracking, not collisions.  In kinematic mode
there is no physics: the joints follow the command exactly.
"""
import xml.etree.ElementTree as ET

import numpy as np

from ..core.urdf import IGNORED_ELEMENTS, load_robot_description


class ArmSimulation:

    def __init__(self, source, joint_names=None, timestep=0.001, kp=2000.0, kv=80.0, armature=0.1,
                 kinematic=False, initial_positions=None):
        import mujoco
        self._mujoco = mujoco
        spec = mujoco.MjSpec.from_string(_physics_urdf(load_robot_description(source)))
        spec.option.timestep = timestep
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
        spec.compiler.fusestatic = False  # keep fixed-joint links such as tool0 as bodies
        for body in spec.bodies:
            body.gravcomp = 1.0
        names = joint_names or [j.name for j in spec.joints]
        for name in names:
            joint = spec.joint(name)
            if joint is None:
                raise ValueError(f"joint '{name}' is not a movable joint of the simulated robot")
            joint.armature = armature
            pos = spec.add_actuator(name=f'{name}_position', target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            pos.set_to_position(kp=kp, kv=0.0)
            vel = spec.add_actuator(name=f'{name}_velocity', target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            vel.set_to_velocity(kv=kv)
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        self.joint_names = list(names)
        self._qpos = np.array([self.model.joint(n).qposadr[0] for n in names])
        self._qvel = np.array([self.model.joint(n).dofadr[0] for n in names])
        self.kinematic = kinematic
        if initial_positions is not None:
            self.data.qpos[self._qpos] = initial_positions
        mujoco.mj_forward(self.model, self.data)
        self.command(self.positions, np.zeros(len(names)))

    @property
    def timestep(self):
        return self.model.opt.timestep

    @property
    def time(self):
        return self.data.time

    @property
    def positions(self):
        return self.data.qpos[self._qpos].copy()

    @property
    def velocities(self):
        return self.data.qvel[self._qvel].copy()

    def command(self, positions, velocities):
        """Set the servo targets (joint order of ``joint_names``)."""
        self.data.ctrl[0::2] = positions
        self.data.ctrl[1::2] = velocities

    def step(self):
        if self.kinematic:
            self.data.qpos[self._qpos] = self.data.ctrl[0::2]
            self.data.qvel[self._qvel] = self.data.ctrl[1::2]
            self.data.time += self.timestep
            self._mujoco.mj_kinematics(self.model, self.data)
        else:
            self._mujoco.mj_step(self.model, self.data)

    def link_pose(self, link, reference):
        """4x4 pose of link ``link`` in link ``reference``, from MuJoCo's own kinematics."""
        return np.linalg.inv(self._world_pose(reference)) @ self._world_pose(link)

    def _world_pose(self, body):
        b = self.model.body(body)
        T = np.eye(4)
        T[:3, :3] = self.data.xmat[b.id].reshape(3, 3)
        T[:3, 3] = self.data.xpos[b.id]
        return T


def _physics_urdf(text):
    """Remove from the URDF what MuJoCo need not or cannot load: meshes, ROS tags."""
    root = ET.fromstring(text)
    for tag in IGNORED_ELEMENTS:
        if tag in ('inertial',):
            continue
        for el in root.findall(tag):
            root.remove(el)
    for link in root.findall('link'):
        for tag in ('visual', 'collision'):
            for el in link.findall(tag):
                link.remove(el)
    return ET.tostring(root, encoding='unicode')
