"""A URDF arm in MuJoCo with position servos, as a ros2_control position interface would drive it.

Each joint gets a position servo (stiffness ``kp``) plus a velocity servo
(damping ``kv``) fed with the commanded velocity, rotor ``armature``, gravity
compensation and the commanded acceleration's inertial torque (M(q) a, a
drive's model-based feed-forward), as a real arm's joint controllers provide.
Without that feed-forward the servos alone would track a jerk-limited
acceleration with a lag and an overshoot of their own (the heavy shoulder
joints: ~1.5 x the commanded peak), which is no property of the command.
Masses and inertias are the URDF's ``<inertial>`` only.

World objects (a scene's boxes, spheres and cylinders) become static geoms, so
the physics can witness collisions: the arm's URDF ``<collision>`` primitives
collide with the world but never with each other (MuJoCo ``contype`` /
``conaffinity`` bits), so a self-overlapping link model cannot disturb the
dynamics.  Without world objects contacts are disabled, which keeps the
physics step as cheap as a contact-free model.  Mesh collision geometry is not
loaded (the simulator needs no mesh files); ``mesh_links`` names the links
that lost it.  In kinematic mode there is no physics: the joints follow the
command exactly, and contacts are still detected.
"""
import xml.etree.ElementTree as ET

from ik_solver.core.urdf import IGNORED_ELEMENTS, load_robot_description
import numpy as np

#: URDF collision shapes the simulator loads; anything else (meshes) is dropped.
PRIMITIVES = ('box', 'cylinder', 'sphere')
#: Collision bits: arm geoms collide with world geoms only (MuJoCo: contype_a & conaffinity_b).
ARM_BITS, WORLD_BITS = (1, 0), (0, 1)


class ArmSimulation:

    def __init__(self, source, joint_names=None, timestep=0.001, kp=2000.0, kv=80.0, armature=0.1,
                 kinematic=False, initial_positions=None, obstacles=()):
        import mujoco
        self._mujoco = mujoco
        text, self.mesh_links = _physics_urdf(load_robot_description(source))
        spec = mujoco.MjSpec.from_string(text)
        spec.option.timestep = timestep
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        spec.compiler.fusestatic = False  # keep fixed-joint links such as tool0 as bodies
        spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
        for body in spec.bodies:
            body.gravcomp = 1.0
        for geom in spec.geoms:
            geom.contype, geom.conaffinity = ARM_BITS
        obstacles = list(obstacles)
        if obstacles:
            for obstacle in obstacles:
                _add_obstacle(mujoco, spec, obstacle)
        else:
            spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
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
        self._geom_label = self._geom_labels()
        self._detect_contacts = bool(obstacles)
        self._contacts = {}  # (link, object) -> deepest distance since the last contacts()
        self.kinematic = kinematic
        self.acceleration = np.zeros(len(names))
        self._feedforward = np.zeros((2, self.model.nv))  # commanded accelerations, their torques M(q) a
        if initial_positions is not None:
            self.data.qpos[self._qpos] = initial_positions
        mujoco.mj_forward(self.model, self.data)
        self.command(self.positions, np.zeros(len(names)))

    def _geom_labels(self):
        """Geom id -> link name (arm) or object name (world); checks that world objects are static."""
        labels = {}
        for g in range(self.model.ngeom):
            body = self.model.geom_bodyid[g]
            if self.model.geom_contype[g] == ARM_BITS[0]:
                labels[g] = self.model.body(body).name
                continue
            labels[g] = name = self.model.geom(g).name
            if self.model.body_weldid[body] != 0:
                raise ValueError(f"scene object '{name}' is in frame '{self.model.body(body).name}', which "
                                 'moves with the arm; world objects need a fixed frame')
        return labels

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

    def command(self, positions, velocities, accelerations=None):
        """Set the servo targets (joint order of ``joint_names``) and the feed-forward of ``accelerations``."""
        self.data.ctrl[0::2] = positions
        self.data.ctrl[1::2] = velocities
        accelerations_, torques = self._feedforward
        accelerations_[self._qvel] = 0.0 if accelerations is None else accelerations
        self._mujoco.mj_mulM(self.model, self.data, torques, accelerations_)
        self.data.qfrc_applied[self._qvel] = torques[self._qvel]

    def step(self, measure=False):
        """Advance one timestep; with ``measure``, set ``acceleration`` to the step's velocity change / timestep.

        That is the acceleration the integrator realised (MuJoCo's ``qacc``
        before the implicit damping correction is not).
        """
        if measure:
            before = self.data.qvel[self._qvel].copy()
        if self.kinematic:
            self.data.qpos[self._qpos] = self.data.ctrl[0::2]
            self.data.qvel[self._qvel] = self.data.ctrl[1::2]
            self.data.time += self.timestep
            self._mujoco.mj_kinematics(self.model, self.data)
            if self._detect_contacts:
                self._mujoco.mj_collision(self.model, self.data)
        else:
            self._mujoco.mj_step(self.model, self.data)
        if measure:
            self.acceleration = (self.data.qvel[self._qvel] - before) / self.timestep
        if self._detect_contacts and self.data.ncon:
            self._collect_contacts()

    def _collect_contacts(self):
        n = self.data.ncon
        label = self._geom_label
        for (g1, g2), dist in zip(self.data.contact.geom[:n], self.data.contact.dist[:n]):
            pair = (label[g1], label[g2]) if self.model.geom_contype[g1] == ARM_BITS[0] else (label[g2], label[g1])
            self._contacts[pair] = min(float(dist), self._contacts.get(pair, np.inf))

    def contacts(self):
        """Arm-world contacts in any step since the last call: list of (link, object, deepest distance [m]).

        A negative distance is a penetration.  Every step is watched, so a
        contact shorter than the caller's polling period is not missed.
        """
        found = [(link, other, dist) for (link, other), dist in self._contacts.items()]
        self._contacts = {}
        return found

    def link_pose(self, link, reference):
        """4x4 pose of link ``link`` in link ``reference``, from MuJoCo's own kinematics."""
        return np.linalg.inv(self._world_pose(reference)) @ self._world_pose(link)

    def _world_pose(self, body):
        b = self.model.body(body)
        T = np.eye(4)
        T[:3, :3] = self.data.xmat[b.id].reshape(3, 3)
        T[:3, 3] = self.data.xpos[b.id]
        return T


def _add_obstacle(mujoco, spec, obstacle):
    """Add a scene Obstacle (collision/scene.py) as a static geom of its frame's body."""
    body = spec.worldbody if obstacle.frame == 'world' else spec.body(obstacle.frame)
    if body is None:
        raise ValueError(f"scene object '{obstacle.name}': frame '{obstacle.frame}' is not a link of the robot")
    size = np.zeros(3)
    if obstacle.shape == 'box':
        kind, size[:] = mujoco.mjtGeom.mjGEOM_BOX, np.asarray(obstacle.size) / 2.0
    elif obstacle.shape == 'sphere':
        kind, size[0] = mujoco.mjtGeom.mjGEOM_SPHERE, obstacle.size[0]
    else:
        kind, size[:2] = mujoco.mjtGeom.mjGEOM_CYLINDER, (obstacle.size[0], obstacle.size[1] / 2.0)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(obstacle.pose[:3, :3]).ravel())
    geom = body.add_geom(name=obstacle.name, type=kind, size=size, pos=obstacle.pose[:3, 3], quat=quat)
    geom.contype, geom.conaffinity = WORLD_BITS


def _physics_urdf(text):
    """URDF for MuJoCo: without ROS tags, visuals and mesh collisions; also the links whose meshes were dropped."""
    root = ET.fromstring(text)
    for tag in IGNORED_ELEMENTS:
        if tag in ('inertial', 'collision', 'visual'):
            continue
        for el in root.findall(tag):
            root.remove(el)
    mesh_links = []
    for link in root.findall('link'):
        for el in link.findall('visual'):
            link.remove(el)
        for el in link.findall('collision'):
            shape = el.find('geometry')
            if shape is None or len(shape) == 0 or shape[0].tag not in PRIMITIVES:
                link.remove(el)
                if link.get('name') not in mesh_links:
                    mesh_links.append(link.get('name'))
    return ET.tostring(root, encoding='unicode'), mesh_links
