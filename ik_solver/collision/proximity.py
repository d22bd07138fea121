"""Distances, and how fast they change, of the checked pairs that come near each other: for a servo's braking.

A servo that slows down before a contact needs, for each pair nearer than a
threshold, its distance and its gradient with respect to the joints (the rate
of approach of a motion is the gradient times the joint velocity).  Coal's
distance over every pair of the Panda's meshes takes milliseconds, so
``Proximity`` first bounds each pair from below by the gap between the
axis-aligned boxes of its two shapes (numpy, every pair at once) and asks
Coal only for the pairs whose boxes come within the threshold.  Meshes are
measured by their convex hulls: a hull's distance is never more than its
mesh's, so braking on it stops no later, and it costs a few microseconds
where a mesh's BVH costs tens.

A query's cost is bounded: of the pairs whose boxes come near, at most
``max_pairs`` are measured, the most urgent first (those never measured, then
those with the smallest bound).  Every other one is carried from its last
measurement by a bound that cannot exceed its distance: the last distance
minus how far any point of each of its two shapes' boxes has moved since (the
poses then and now), or the gap of the boxes now where it is larger.  A
carried pair keeps the gradient of its last measurement.  A pair left
unmeasured that never was measured (more new pairs at once than the budget)
has its boxes' gap, or -inf where they overlap: a motion closing on it halts
until the next query measures it, the first of all.

It shares the CollisionModel's shapes, pairs and world objects (a world
changed by ``set_obstacles`` is picked up at the next query) but keeps its own
Pinocchio data, so it runs beside the model's checks.
"""
from dataclasses import dataclass

from numba import njit
import numpy as np

from .model import _configure_requests as configure_requests

#: Pairs measured per query at most (beyond the first query of a world): each costs a hull distance and a gradient.
MAX_PAIRS = 6


@dataclass
class Near:
    """One pair nearer than its threshold.

    ``distance`` [m] (< 0: penetration), ``gradient`` (n,): d distance / d q of
    the chain's joints, ``pair``: the names of its two links or objects,
    ``world``: whether one of them is a world object, ``measured``: whether
    the distance was measured at this query (else it is a lower bound carried
    from an earlier one).
    """

    distance: float
    gradient: np.ndarray
    pair: tuple
    world: bool
    measured: bool = True


class Proximity:
    """``near(q, self_threshold, scene_threshold)``: the pairs of ``model`` (CollisionModel) within them."""

    def __init__(self, model, max_pairs=MAX_PAIRS):
        """Watch ``model`` (CollisionModel), measuring at most ``max_pairs`` (>= 1) pairs per query."""
        import pinocchio
        if max_pairs < 1:
            raise ValueError(f'max_pairs must be >= 1, got {max_pairs}')
        self._pin = pinocchio
        self.model = model
        self.max_pairs = int(max_pairs)
        self.measured = 0                 # pairs measured by the last query
        self._world = None
        self._thresholds = (None, None)   # ((self, scene) thresholds [m], their per-pair array)

    @property
    def padding(self):
        """Return the model's clearance [m]: a pair at or below it counts as in contact."""
        return self.model.padding

    def near(self, q, self_threshold, scene_threshold, velocity=None, horizon=0.0):
        """Return the pairs (``Near``) at chain configuration ``q`` nearer than they need watching.

        A pair is watched below its threshold, and farther out when the motion
        can close it faster: below ``padding + speed * horizon``, with ``speed``
        a bound on how fast joint velocity ``velocity`` closes it (the speeds of
        its two shapes' boxes).  So a caller that needs ``horizon`` seconds to
        stop sees every pair it could reach meanwhile, whatever the thresholds.

        Args:
            q: chain configuration (n,).
            self_threshold: distance [m] under which a pair of robot links is reported.
            scene_threshold: the same for a link and a world object.
            velocity: chain joint velocity (n,) [rad/s or m/s], or None (at rest).
            horizon: time [s] the caller needs to stop from ``velocity``.
        """
        pin = self._pin
        model, config_map, world = self.refresh()
        q = np.asarray(q, float)
        config = config_map.full(q)
        data, geometry_data = self._data, self._geometry_data
        moving = velocity is not None and horizon > 0.0 and np.any(velocity)
        if moving:
            pin.forwardKinematics(model, data, config, config_map.velocity_map() @ np.asarray(velocity, float))
        else:
            pin.forwardKinematics(model, data, config)
        pin.updateGeometryPlacements(model, data, self._geometry_model, geometry_data)
        thresholds = self._pair_thresholds(self_threshold, scene_threshold)
        placements, twists = self._poses(data, moving)
        gaps, speeds = box_gaps(placements, twists, self._slots, self._centres, self._halves, self._first,
                                self._second)
        reach = np.maximum(thresholds, self.padding + speeds * horizon) if moving else thresholds
        candidates = np.flatnonzero(gaps < reach)
        # boxes apart bound the distance from below; overlapping ones do not (the shapes may be in contact)
        floors = np.where(gaps[candidates] > 0.0, gaps[candidates], -np.inf)
        bounds = np.maximum(floors, carried_bounds(
            placements, self._slots, self._centres, self._halves, self._first, self._second, self._poses_at,
            self._distances, candidates))
        watched = bounds < reach[candidates]
        candidates, bounds = candidates[watched], bounds[watched]
        never = np.isnan(self._distances[candidates])
        order = np.argsort(np.where(never, -np.inf, bounds), kind='stable')
        budget = len(order) if self._fresh else self.max_pairs
        found = []
        for i in order[:budget]:
            k = int(candidates[i])
            distance = pin.computeDistance(self._geometry_model, geometry_data, k).min_distance
            self._remember(k, distance, placements)
            if distance < reach[k]:
                found.append((k, float(distance)))
        self.measured = min(budget, len(order))
        self._fresh = self._fresh and not len(order)
        velocity_map = config_map.velocity_map()
        if found:
            pin.computeJointJacobians(model, data, config)
            jacobians = {}   # joint -> (its Jacobian, its origin) at this q: pairs share joints
            for k, distance in found:
                self._gradients[k] = self._gradient(k, jacobians) @ velocity_map
        near = [Near(distance, self._gradients[k], world.pairs[k], bool(self._is_world[k])) for k, distance in found]
        for i in order[budget:]:
            k = int(candidates[i])
            gradient = self._gradients[k]
            if gradient is None:   # measured only out of reach so far: close at the bound of its boxes' speed
                gradient = _closing_gradient(speeds[k], velocity if moving else None, model.nv)
            near.append(Near(float(bounds[i]), gradient, world.pairs[k], bool(self._is_world[k]), False))
        return near

    def _remember(self, k, distance, placements):
        """Keep pair k's measured ``distance`` [m] and its two joints' poses then, to bound it later."""
        self._distances[k] = distance
        self._gradients[k] = None
        self._poses_at[k, 0] = placements[self._slots[self._first[k]]]
        self._poses_at[k, 1] = placements[self._slots[self._second[k]]]

    def refresh(self):
        """Take the model's current world (done by ``near`` too; call it ahead to spare a query the work)."""
        model, config_map, world = self.model.geometry
        if world is not self._world:
            self._prepare(model, world)
        return model, config_map, world

    def _prepare(self, model, world):
        """Build own data for ``world`` (meshes as hulls) and each shape's box in its joint's frame."""
        pin = self._pin
        geometry_model = pin.GeometryModel()
        for obj in world.geometry_model.geometryObjects:
            geometry_model.addGeometryObject(pin.GeometryObject(obj.name, obj.parentJoint, obj.parentFrame,
                                                                obj.placement, _hull(obj.geometry)))
        for pair in world.geometry_model.collisionPairs:
            geometry_model.addCollisionPair(pin.CollisionPair(pair.first, pair.second))
        self._geometry_model = geometry_model
        self._data = model.createData()
        self._geometry_data = pin.GeometryData(geometry_model)
        configure_requests(self._geometry_data, 0.0)
        centres, halves = [], []
        for obj in geometry_model.geometryObjects:
            obj.geometry.computeLocalAABB()
            box = obj.geometry.aabb_local
            R, t = obj.placement.rotation, obj.placement.translation
            centres.append(R @ (0.5 * (box.min_ + box.max_)) + t)
            halves.append(np.abs(R) @ (0.5 * (box.max_ - box.min_)))
        joints = [obj.parentJoint for obj in geometry_model.geometryObjects]
        self._used_joints = sorted(set(joints))
        self._slots = np.array([self._used_joints.index(j) for j in joints], dtype=np.int64)
        self._centres, self._halves = np.array(centres), np.array(halves)
        self._first = np.array([p.first for p in geometry_model.collisionPairs], dtype=int)
        self._second = np.array([p.second for p in geometry_model.collisionPairs], dtype=int)
        self._pair_joints = [(joints[a], joints[b]) for a, b in zip(self._first, self._second)]
        self._is_world = np.arange(len(self._first)) >= self.model.self_pair_count
        self._rest_twists = np.zeros((len(self._used_joints), 6))
        pairs = len(self._first)
        self._distances = np.full(pairs, np.nan)           # each pair's last measured distance [m], nan: never
        self._gradients = [None] * pairs                    # its gradient then, None: not taken (out of reach)
        self._poses_at = np.zeros((pairs, 2, 4, 4))         # its two joints' poses then
        self._fresh = True                                  # no query yet: the first one measures every pair
        self._world = world

    def _pair_thresholds(self, self_threshold, scene_threshold):
        """Return each pair's threshold [m] (kept while the thresholds and the world stay: no array per query)."""
        key, thresholds = self._thresholds
        if key != (self_threshold, scene_threshold, self._world):
            thresholds = np.where(self._is_world, scene_threshold, self_threshold)
            self._thresholds = ((self_threshold, scene_threshold, self._world), thresholds)
        return thresholds

    def _poses(self, data, moving):
        """Return the poses (J, 4, 4) and twists (J, 6) of the joints that carry shapes.

        They are taken as one list each: indexing Pinocchio's vectors one
        element at a time costs a binding call per joint.
        """
        placements = data.oMi.tolist()
        placements = np.array([placements[j].homogeneous for j in self._used_joints])
        if moving:
            twists = data.v.tolist()
            twists = np.array([twists[j].vector for j in self._used_joints])
        else:
            twists = self._rest_twists
        return placements, twists

    def _gradient(self, k, jacobians):
        """Return d distance / d v of pair k (Pinocchio's velocity): witness points and normal (a to b).

        ``jacobians``: joint -> (LOCAL_WORLD_ALIGNED Jacobian, origin) already taken at this configuration.
        """
        result = self._geometry_data.distanceResults[k]
        first, second = self._pair_joints[k]
        normal = np.array(result.normal)
        return (self._normal_rate(second, np.array(result.getNearestPoint2()), normal, jacobians)
                - self._normal_rate(first, np.array(result.getNearestPoint1()), normal, jacobians))

    def _normal_rate(self, joint, point, normal, jacobians):
        """(nv,) rate along ``normal`` of the world ``point`` fixed to ``joint`` per joint velocity (0: universe).

        The point moves at v + w x r (r from the joint's origin), so its rate along
        n is n . v + (r x n) . w: two rows of the joint's Jacobian, no 3 x nv product.
        """
        if joint == 0:
            return np.zeros(self.model.model.nv)
        if joint not in jacobians:
            pin = self._pin
            jacobians[joint] = (pin.getJointJacobian(self.model.model, self._data, joint,
                                                     pin.ReferenceFrame.LOCAL_WORLD_ALIGNED),
                                self._data.oMi[joint].translation)
        J, origin = jacobians[joint]
        x, y, z = point - origin
        a, b, c = normal
        return normal @ J[:3] + np.array([y * c - z * b, z * a - x * c, x * b - y * a]) @ J[3:]   # (r x n) . w


def _hull(geometry):
    """Return the convex hull of a mesh (a BVH), or the shape itself (primitives and hulls are convex)."""
    if not hasattr(geometry, 'buildConvexHull'):
        return geometry
    if geometry.convex is None:   # built once per mesh: a new world reuses the robot's shapes
        geometry.buildConvexHull(True, 'Qt')
    return geometry.convex


def _closing_gradient(speed, velocity, n):
    """Return a gradient (n,) by which ``velocity`` closes a pair at ``speed`` [m/s] (zero at rest)."""
    if velocity is None:
        return np.zeros(n)
    velocity = np.asarray(velocity, float)
    return -speed * velocity / float(velocity @ velocity)


def warm_up():
    """Load the box kernels (numba, from the collision kernels' cache); ``collision.warmup`` runs this.

    Each runs once on one pair of unit boxes, with the argument types the checks pass, so a set-up compiles
    every type the nodes use (they load them at start-up through their own checks: the IK node's first path
    check, the servo's warm-up).
    """
    placements = np.stack([np.eye(4), np.eye(4)])
    slots, pair = np.arange(2, dtype=np.int64), np.zeros(1, dtype=np.int64)
    boxes = np.zeros((2, 3)), np.ones((2, 3))
    box_gaps(placements, np.zeros((2, 6)), slots, *boxes, pair, pair + 1)
    carried_bounds(placements, slots, *boxes, pair, pair + 1, np.zeros((1, 2, 4, 4)), np.ones(1), pair)


@njit(cache=True)
def carried_bounds(placements, slots, centres, halves, first, second, poses_at, distances, pairs):
    """Return per pair of ``pairs`` a lower bound of its distance now [m] (-inf: never measured).

    Every point of a shape's box moves, from pose (R1, t1) to (R2, t2) of its
    joint, by at most |(R2 - R1) c + t2 - t1| + ||R2 - R1||_F |h| (c its
    centre, h its half extents in the joint's frame), and a distance shrinks
    by at most how far the points of its two shapes move.

    Args:
        placements: (J, 4, 4) poses of the joints that carry shapes now.
        slots: (S,) index into ``placements`` of each shape's joint.
        centres: (S, 3) the centre of each shape's box in its joint's frame [m].
        halves: (S, 3) the box's half extents [m].
        first: (P,) the first shape of each pair.
        second: (P,) the second shape of each pair.
        poses_at: (P, 2, 4, 4) the poses of each pair's two joints at its last measurement.
        distances: (P,) each pair's last measured distance [m], nan if never.
        pairs: (C,) the pairs to bound.
    """
    bounds = np.empty(pairs.shape[0])
    for i in range(pairs.shape[0]):
        p = pairs[i]
        if np.isnan(distances[p]):
            bounds[i] = -np.inf
            continue
        moved = 0.0
        for side in range(2):
            shape = first[p] if side == 0 else second[p]
            old, new = poses_at[p, side], placements[slots[shape]]
            shift = np.zeros(3)
            spin = 0.0
            for r in range(3):
                shift[r] = new[r, 3] - old[r, 3]
                for c in range(3):
                    d = new[r, c] - old[r, c]
                    shift[r] += d * centres[shape, c]
                    spin += d * d
            moved += np.sqrt(np.sum(shift ** 2)) + np.sqrt(spin) * np.sqrt(np.sum(halves[shape] ** 2))
        bounds[i] = distances[p] - moved
    return bounds


@njit(cache=True)
def box_gaps(placements, twists, slots, centres, halves, first, second):
    """Return per pair the gap between its shapes' world boxes [m] and a bound of its closing speed [m/s].

    The gap is 0 where the boxes overlap; the speed is that of the fastest points of the two boxes.

    Args:
        placements: (J, 4, 4) poses of the joints that carry shapes.
        twists: (J, 6) their spatial velocities in their own frames (linear, angular; Pinocchio's ``data.v``).
        slots: (S,) index into ``placements`` of each shape's joint.
        centres: (S, 3) the centre of each shape's box in its joint's frame.
        halves: (S, 3) the box's half extents.
        first: (P,) the first shape of each pair.
        second: (P,) the second shape of each pair.
    """
    count = slots.shape[0]
    world_centres = np.empty((count, 3))
    world_halves = np.empty((count, 3))
    speeds = np.empty(count)
    for k in range(count):
        H = placements[slots[k]]
        twist = twists[slots[k]]
        linear = np.zeros(3)
        angular = np.zeros(3)
        offset = np.zeros(3)
        for i in range(3):
            world_centres[k, i] = H[i, 3]
            world_halves[k, i] = 0.0
            for j in range(3):
                offset[i] += H[i, j] * centres[k, j]
                world_halves[k, i] += abs(H[i, j]) * halves[k, j]
                linear[i] += H[i, j] * twist[j]
                angular[i] += H[i, j] * twist[3 + j]
            world_centres[k, i] += offset[i]
        # velocity of the box centre: v + w x (centre - joint origin); any point of the box adds |w| |half|
        centre_speed = np.sqrt(np.sum((linear + np.cross(angular, offset)) ** 2))
        speeds[k] = centre_speed + np.sqrt(np.sum(angular ** 2)) * np.sqrt(np.sum(halves[k] ** 2))
    gaps = np.empty(first.shape[0])
    closing = np.empty(first.shape[0])
    for p in range(first.shape[0]):
        a, b = first[p], second[p]
        total = 0.0
        for i in range(3):
            gap = abs(world_centres[a, i] - world_centres[b, i]) - world_halves[a, i] - world_halves[b, i]
            if gap > 0.0:
                total += gap * gap
        gaps[p] = np.sqrt(total)
        closing[p] = speeds[a] + speeds[b]
    return gaps, closing
