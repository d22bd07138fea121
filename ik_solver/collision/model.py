"""Collision checking of IK solutions and paths: the robot's URDF/SRDF geometry and world objects on Pinocchio + Coal.

Pinocchio places every collision shape of the robot for a configuration and Coal
tests the pairs.  Checked pairs: every pair of links with geometry, minus
adjacent links and the SRDF's disabled pairs, plus every world object against
every robot link that can move relative to it.  (An object and a link rigidly
fixed to each other, e.g. a table and the base standing on it, are not checked:
no motion can change their contact.)  ``padding`` is a clearance: a pair
closer than it counts as colliding.

The chain's q (IK variables, chain order) is mapped onto the whole robot: mimic
joints follow their masters, other joints are held (``set_joint_values``).

Adjacent links are found as MoveIt Setup Assistant does: joined by a joint,
looking through links without geometry (a flange or tool frame between two
bodies).  They touch by design, so their pair is never checked.

``check`` first asks Pinocchio's broad phase (axis-aligned boxes of every
shape, grown by the padding) and runs Coal's narrow phase only on the checked
pairs whose boxes overlap: most pairs of an arm are far apart, and even a
far-apart mesh pair costs over a microsecond in Coal (the Panda with its
meshes: about 12 us instead of 45 us per configuration).  The naive manager
(every pair of boxes) beats Coal's trees on an arm's few dozen shapes.  Only
when the broad phase finds a collision are the pairs run in their order, so the
pair named is the same first pair as without it.
"""
from collections import namedtuple
import copy
import math
import os
import threading
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from .configuration import ConfigurationMap
from .geometry import coal_primitive, link_shapes
from .scene import duplicate_names
from .srdf import load_srdf
from ..core.chain import chain_from_robot
from ..core.exceptions import CollisionError
from ..core.urdf import load_robot_description, parse_robot

#: Largest motion of any joint (rad, or m for prismatic joints) between two checks along a path (check_path).
MAX_JOINT_STEP = 0.01
WORLD_PREFIX = 'world/'

_World = namedtuple('_World', 'geometry_model geometry_data broad_phase pairs obstacles')


class CollisionModel:
    """Self- and world-collision checks for the chain ``base_link`` -> ``tip_link`` of a URDF.

    Without base and tip links, q is every 1-DoF joint of the robot that is not a mimic joint (``joint_names``).

    ``urdf_source``: URDF/xacro text or file.  ``srdf``: SRDF text or file.  ``package_dirs``: where
    ``package://`` meshes are looked up after the ament index.  ``convex``: meshes as convex hulls (faster,
    conservative).  ``joint_values``: positions of the robot's joints outside the chain (default 0, in limits).
    ``expanded``: the URDF XML of ``urdf_source`` when the caller has expanded it already (xacro runs in a
    child process); relative mesh paths are still resolved against ``urdf_source``'s folder.
    """

    def __init__(self, urdf_source, base_link, tip_link, srdf=None, package_dirs=(), skip_missing_meshes=False,
                 convex=False, padding=0.0, joint_values=None, xacro_args=None, expanded=None):
        import pinocchio
        text = expanded if expanded is not None else load_robot_description(urdf_source, xacro_args)
        robot = parse_robot(text)
        root = ET.fromstring(text)
        self.chain = chain_from_robot(robot, base_link, tip_link) if base_link or tip_link else None
        self.base_link, self.tip_link = base_link, tip_link
        self.robot_name = robot.name
        self.links = [link.name for link in robot.links]
        self.model = pinocchio.buildModelFromXML(_without_geometry(root))
        self._data = self.model.createData()
        self._collide = pinocchio.computeCollisions
        self._config = ConfigurationMap(self.model, robot, self.chain.joint_names if self.chain else None)
        self.joint_names = self._config.joint_names
        self._config.set_held(joint_values or {})
        shapes, self.notes = link_shapes(root, package_dirs, _base_dir(urdf_source), skip_missing_meshes, convex)
        self._robot_objects = [self._geometry_object(f'{s.link}/{k}', s.link, s.placement, s.geometry)
                               for k, s in enumerate(shapes)]
        self._object_links = [s.link for s in shapes]
        self.srdf = load_srdf(srdf) if srdf else None
        if self.srdf is not None:
            self.srdf.validate(self.links)
        self._self_pairs = self._checked_self_pairs(robot)
        self._padding = _valid_padding(padding)
        self._lock = threading.Lock()
        self._world = None
        self._certificate = None
        self.configuration_version = 0   # counts changes of the held joints (a certificate's bounds then expire)
        self.set_obstacles([])

    # -- configuration ---------------------------------------------------------------------------------------

    @property
    def geometry_links(self):
        """Links that carry collision geometry, in URDF order."""
        return list(dict.fromkeys(self._object_links))

    @property
    def joint_ranges(self):
        """(n, 2) sampling range of each joint of q: its limits ([-pi, pi] if continuous)."""
        if self.chain is not None:
            return np.column_stack([self.chain.sample_lower, self.chain.sample_upper])
        return np.array([self._config.ranges[name] for name in self.joint_names], dtype=float)

    @property
    def held_joints(self):
        """Names of the robot's joints outside the chain that ``set_joint_values`` accepts."""
        return list(self._config.held_joints)

    def set_joint_values(self, values):
        """Hold joints outside the chain at ``values`` {name: position}; chain joints in it are ignored."""
        self._config.set_held(dict(values))
        self.configuration_version += 1

    @property
    def padding(self):
        """Clearance (m): pairs closer than this are in collision."""
        return self._padding

    @padding.setter
    def padding(self, value):
        self._padding = _valid_padding(value)
        self.set_obstacles(self._world.obstacles)

    @property
    def pair_count(self):
        """Return the number of checked pairs: (self pairs, world pairs)."""
        world = self._world
        return len(self._self_pairs), len(world.pairs) - len(self._self_pairs)

    @property
    def geometry(self):
        """(Pinocchio model, configuration map, world) now checked: for callers that query Coal themselves.

        ``world`` has ``geometry_model``, ``pairs`` (names, self pairs first) and ``obstacles``; a new world
        object is a new ``world`` (``set_obstacles`` swaps it whole), so a caller can tell a change by identity.
        """
        return self.model, self._config, self._world

    @property
    def self_pair_count(self):
        """Return the number of self pairs: they come first in the world's pairs, the world pairs after them."""
        return len(self._self_pairs)

    def knows_frame(self, frame):
        """Whether ``frame`` is a link of the robot, so obstacles can be given in it directly."""
        return frame in self.links

    # -- world -----------------------------------------------------------------------------------------------

    @property
    def obstacles(self):
        """Return the world objects (scene.Obstacle) currently checked."""
        return self._world.obstacles

    def set_obstacles(self, obstacles):
        """Replace the world objects by ``obstacles`` (scene.Obstacle, each in a robot link's frame)."""
        import pinocchio
        obstacles = tuple(obstacles)
        self._check_obstacles(obstacles)
        objects = list(self._robot_objects)
        objects += [self._geometry_object(WORLD_PREFIX + o.name, o.frame, o.pose, coal_primitive(o.shape, o.size))
                    for o in obstacles]
        robot_count = len(self._robot_objects)
        world_pairs = [(r, w) for w in range(robot_count, len(objects)) for r in range(robot_count)
                       if objects[r].parentJoint != objects[w].parentJoint]
        pairs = self._self_pairs + world_pairs
        geometry_model = pinocchio.GeometryModel()
        for obj in objects:
            geometry_model.addGeometryObject(obj)
        for a, b in pairs:
            geometry_model.addCollisionPair(pinocchio.CollisionPair(a, b))
        geometry_data = pinocchio.GeometryData(geometry_model)
        _configure_requests(geometry_data, self._padding)
        # After the requests: the broad phase grows each shape's box by the padding of its pairs.
        broad_phase = pinocchio.BroadPhaseManager_NaiveCollisionManager(self.model, geometry_model, geometry_data)
        labels = self._object_links + [o.name for o in obstacles]
        world = _World(geometry_model, geometry_data, broad_phase, [(labels[a], labels[b]) for a, b in pairs],
                       obstacles)
        with self._lock:
            self._world = world

    def _check_obstacles(self, obstacles):
        names = [o.name for o in obstacles]
        duplicates = duplicate_names(names)
        if duplicates:
            raise CollisionError(f'world objects with the same name: {duplicates}')
        clashes = sorted(set(names) & set(self.links))
        if clashes:
            raise CollisionError(f'world objects named like robot links: {clashes}')
        for obstacle in obstacles:
            if not self.knows_frame(obstacle.frame):
                raise CollisionError(f"world object '{obstacle.name}' is in frame '{obstacle.frame}', which is not "
                                     'a link of the robot; transform it into one first')

    # -- queries ---------------------------------------------------------------------------------------------

    def check(self, q):
        """First colliding pair (link or object names) at chain configuration ``q``, or None if collision-free."""
        config = self._config.full(self._configuration(q))
        with self._lock:
            world = self._world
            if not self._collide(self.model, self._data, world.broad_phase, config, True):
                return None
            # The broad phase stops at a colliding pair of its own order; the pairs in their order name the first.
            self._collide(self.model, self._data, world.geometry_model, world.geometry_data, config, True)
            # Pairs before the one that stopped the search were evaluated (and cleared): the first hit is it.
            results = world.geometry_data.collisionResults
            return next(world.pairs[k] for k in range(len(world.pairs)) if results[k].isCollision())

    def colliding_pairs(self, q):
        """Every checked pair in collision at ``q`` (not only the first), e.g. to show them all in red."""
        import pinocchio
        config = self._config.full(self._configuration(q))
        with self._lock:
            world = self._world
            pinocchio.computeCollisions(self.model, self._data, world.geometry_model, world.geometry_data, config,
                                        False)
            results = world.geometry_data.collisionResults
            return [world.pairs[k] for k in range(len(world.pairs)) if results[k].isCollision()]

    def nearest(self, q):
        """(distance, pair) of the closest checked pair at ``q``; distance < 0 is penetration; (inf, None) if none."""
        import pinocchio
        config = self._config.full(self._configuration(q))
        with self._lock:
            world = self._world
            if not world.pairs:
                return math.inf, None
            index = pinocchio.computeDistances(self.model, self._data, world.geometry_model, world.geometry_data,
                                               config)
            return float(world.geometry_data.distanceResults[index].min_distance), world.pairs[index]

    def pair_distances(self, q):
        """Distance (m, < 0: penetration) of every checked pair at ``q``, as {pair: distance}."""
        import pinocchio
        config = self._config.full(self._configuration(q))
        with self._lock:
            world = self._world
            pinocchio.computeDistances(self.model, self._data, world.geometry_model, world.geometry_data, config)
            results = world.geometry_data.distanceResults
            return {pair: float(results[k].min_distance) for k, pair in enumerate(world.pairs)}

    def min_distance(self, q):
        """Smallest distance (m) between checked pairs at ``q`` (padding not subtracted)."""
        return self.nearest(q)[0]

    def distance_gradient(self, q):
        """Return (distance, gradient (n,), pair) of the nearest checked pair at ``q``; (inf, zeros, None) if none.

        From the witness points p_a, p_b and the normal n (from a to b): d-dot = n . (J_b(p_b) - J_a(p_a)) q-dot,
        with J_x(p) the Jacobian of the point p fixed to its link (zero for a world object).
        """
        import pinocchio
        q = self._configuration(q)
        config = self._config.full(q)
        with self._lock:
            world = self._world
            if not world.pairs:
                return math.inf, np.zeros(len(q)), None
            index = pinocchio.computeDistances(self.model, self._data, world.geometry_model, world.geometry_data,
                                               config)
            result = world.geometry_data.distanceResults[index]
            pair = world.geometry_model.collisionPairs[index]
            points = (np.array(result.getNearestPoint1()), np.array(result.getNearestPoint2()))
            pinocchio.computeJointJacobians(self.model, self._data, config)
            jacobians = [self._point_jacobian(world.geometry_model.geometryObjects[g].parentJoint, p)
                         for g, p in zip((pair.first, pair.second), points)]
            gradient = np.array(result.normal) @ (jacobians[1] - jacobians[0]) @ self._config.velocity_map()
            return float(result.min_distance), gradient, world.pairs[index]

    def _point_jacobian(self, joint, point):
        """(3, nv) Jacobian of the world point ``point`` fixed to ``joint`` (zeros for the universe)."""
        import pinocchio
        if joint == 0:
            return np.zeros((3, self.model.nv))
        J = pinocchio.getJointJacobian(self.model, self._data, joint, pinocchio.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        x, y, z = point - self._data.oMi[joint].translation
        return J[:3] - np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]]) @ J[3:]

    @property
    def certificate(self):
        """Return the PathCertificate of this model (built on first use)."""
        if self._certificate is None:
            from .certificate import PathCertificate
            self._certificate = PathCertificate(self)
        return self._certificate

    def check_path(self, Q, max_step=MAX_JOINT_STEP):
        """First collision along the joint path Q (K x n), as (index, pair), or None.

        Between consecutive waypoints the path is straight in joint space.  A path whose joint box (each
        joint's range over the waypoints, which holds every straight segment between them) is proven clear
        by ``certificate.PathCertificate`` (one distance query, or none when the last one still covers it)
        is free.  Otherwise it is checked so that no joint travels more than ``max_step`` between two checks:
        a densely sampled trajectory is checked every few samples, a sparse one between its waypoints too.
        ``index``: the waypoint at which (or on the segment ending at which) the collision was found; it
        starts after the previous check, within ``max_step``.
        """
        Q = np.asarray(Q, dtype=float)
        n = len(self.joint_names)
        if Q.ndim != 2 or Q.shape[1] != n or len(Q) == 0:
            raise ValueError(f'expected a path of shape (K, {n}), got {Q.shape}')
        if not max_step > 0:
            raise ValueError(f'max_step must be positive, got {max_step}')
        if np.isfinite(Q).all() and self.certificate.clear(Q.min(axis=0), Q.max(axis=0)):
            return None
        for index, q in _checkpoints(Q, max_step):
            pair = self.check(q)
            if pair is not None:
                return index, pair
        return None

    # -- construction helpers --------------------------------------------------------------------------------

    def _configuration(self, q):
        q = np.asarray(q, dtype=float)
        # q.dot(q): one pass in which inf/NaN propagate (a third of the time of q @ q on 7 values)
        if q.shape != (len(self.joint_names),) or not math.isfinite(q.dot(q)):
            raise ValueError(f'expected {len(self.joint_names)} finite joint values, got {q.tolist()}')
        return q

    def _geometry_object(self, name, link, placement, geometry):
        import pinocchio
        frame_id = self.model.getFrameId(link, pinocchio.FrameType.BODY)
        frame = self.model.frames[frame_id]
        pose = frame.placement * pinocchio.SE3(placement[:3, :3], placement[:3, 3])
        return pinocchio.GeometryObject(name, frame.parentJoint, frame_id, pose, geometry)

    def _checked_self_pairs(self, robot):
        self.adjacent_pairs = adjacent_pairs(robot, set(self._object_links))
        links = self._object_links
        pairs = []
        for a in range(len(links)):
            for b in range(a + 1, len(links)):
                if links[a] == links[b] or frozenset((links[a], links[b])) in self.adjacent_pairs:
                    continue
                if self.srdf is None or not self.srdf.is_disabled(links[a], links[b]):
                    pairs.append((a, b))
        return pairs


def adjacent_pairs(robot, geometry_links):
    """Set of frozenset({a, b}) of adjacent links among ``geometry_links`` of the urdf_parser_py ``robot``."""
    neighbours = {}
    for joint in robot.joints:
        neighbours.setdefault(joint.parent, set()).add(joint.child)
        neighbours.setdefault(joint.child, set()).add(joint.parent)
    geometry_links = set(geometry_links)
    pairs = set()
    for start in geometry_links:
        seen, frontier = {start}, [start]
        while frontier:
            link = frontier.pop()
            for other in neighbours.get(link, ()):
                if other in seen:
                    continue
                seen.add(other)
                if other in geometry_links:
                    pairs.add(frozenset((start, other)))
                else:
                    frontier.append(other)
    return pairs


def _checkpoints(Q, max_step):
    """Yield (waypoint index, q) along the path Q so that every joint travels at most max_step between two."""
    yield 0, Q[0]
    travel = np.zeros(Q.shape[1])
    for index in range(1, len(Q)):
        step = np.abs(Q[index] - Q[index - 1])
        if np.max(travel + step) <= max_step:
            travel += step
            continue
        if np.any(travel > 0):
            yield index - 1, Q[index - 1]
        if np.max(step) <= max_step:
            travel = step
            continue
        for q in _between(Q[index - 1], Q[index], max_step):
            yield index, q
        yield index, Q[index]
        travel = np.zeros(Q.shape[1])
    if np.any(travel > 0):
        yield len(Q) - 1, Q[-1]


def _between(start, end, max_step):
    """Points strictly between ``start`` and ``end`` on the straight segment, no joint moving more than max_step."""
    count = max(1, math.ceil(float(np.max(np.abs(end - start))) / max_step))
    return [start + (end - start) * (i / count) for i in range(1, count)]


def _configure_requests(geometry_data, padding):
    """Set the clearance, and start GJK afresh on every query.

    Pinocchio turns on Coal's cached GJK guess (warm start from the previous query of the pair).  With Coal
    3.0 it misses real contacts: on ik7, 10 of 197 colliding random configurations (cylinders penetrating by
    up to 8 mm) were reported free after other queries.  Without it, check agrees with the signed distance.
    """
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)  # the flag is deprecated but still honoured
        for request in list(geometry_data.collisionRequests) + list(geometry_data.distanceRequests):
            request.enable_cached_gjk_guess = False
    for request in geometry_data.collisionRequests:
        request.security_margin = padding


def _valid_padding(padding):
    padding = float(padding)
    if not (math.isfinite(padding) and padding >= 0.0):
        raise CollisionError(f'padding must be a finite distance >= 0 m, got {padding}')
    return padding


def _without_geometry(root):
    """URDF text without <visual>/<collision>: Pinocchio builds the kinematic model from it."""
    root = copy.deepcopy(root)
    for link in root.findall('link'):
        for element in link.findall('visual') + link.findall('collision'):
            link.remove(element)
    return ET.tostring(root, encoding='unicode')


def _base_dir(source):
    """Directory relative mesh paths are resolved against: the URDF file's, or the working directory."""
    if '<' not in source and os.path.isfile(source):
        return os.path.dirname(os.path.abspath(source))
    return None
