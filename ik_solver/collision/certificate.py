"""Certified clearance of a joint path: one distance query proves a whole small move collision-free.

Conservative advancement, as Coal's and FCL's continuous collision checks do it: a point fixed to a link
moves, while chain joint i turns by dq_i, by at most |dq_i| times its distance from that joint's axis
(|dq_i| for a prismatic joint).  That distance is bounded without knowing the configuration: the joint
origins along the kinematic tree are rigidly spaced (the joint placements; a prismatic joint adds its
travel), and each shape lies within the sphere of its bounding box around its joint's origin.  Joints that
move both shapes of a pair move them rigidly together and do not change their distance.  So over every
configuration within ``ext`` of a reference ``q_ref`` (per joint, in the box), the distance of pair p is at
least ``d_p(q_ref) - ext @ C[:, p]``, with ``C`` fixed per world.  When that exceeds the padding for every
pair, no configuration in the box collides: not the path's samples, nor anything between them.

The distances at the reference are bounded from below by the gap between the pair's world-aligned boxes,
and measured (Coal) only for the pairs that gap does not already clear.  The reference is kept: a next
path that stays within what its distances certify costs no query at all, the common case of a stream of
nearby targets.  Where the certificate fails (an obstacle within the motion's reach), the caller checks the
path by sampling.
"""
import threading

import numpy as np

from .model import _configure_requests as configure_requests
from .proximity import box_gaps

#: Distances are trusted to this [m]: GJK's tolerance and the rounding of the bounds stay far below it.
DISTANCE_TOLERANCE = 1e-4
#: A reference measures the pairs its boxes bring within this much more than the path needs [m], so that the
#: next paths of a stream are certified from it without a query.
REUSE_MARGIN = 0.05


class PathCertificate:
    """Proves joint boxes free of collisions for the current world of a CollisionModel (``clear``)."""

    def __init__(self, model):
        """Certify for ``model`` (CollisionModel); it is read at each call, so a new world is picked up."""
        import pinocchio
        self._pin = pinocchio
        self._model = model
        self._lock = threading.Lock()
        self._world = self._key = None   # the world, and (its id, the configuration version) of the arrays below
        self._reference = None    # (q_ref (n,), lower bounds of the pair distances there (P,)), or None
        self.queries = 0          # references measured (distance queries), for tests and benchmarks

    def clear(self, low, high):
        """Tell whether every configuration q with ``low <= q <= high`` (chain order) is proven collision-free.

        Args:
            low: (n,) lower corner of the joint box [rad or m].
            high: (n,) upper corner.

        Returns:
            True when proven; False when not (a contact may lie in the box, or the box reaches too far).
        """
        with self._lock:
            self._refresh()
            if not self._within_limits(low, high):
                return False
            reference = self._reference
            if reference is not None and self._certified(reference, low, high):
                return True
            centre = 0.5 * (low + high)
            self._reference = reference = self._measure(centre, 0.5 * (high - low))
            return self._certified(reference, low, high)

    def _certified(self, reference, low, high):
        """Tell whether the distances at ``reference`` exceed the padding after the box's largest motion."""
        q_ref, bounds = reference
        ext = np.maximum(high - q_ref, q_ref - low)
        with np.errstate(invalid='ignore'):   # inf reach x 0 travel: nan, not certified
            margin = bounds - ext @ self._coefficients
        return bool((margin > self._model.padding + DISTANCE_TOLERANCE).all())

    def _within_limits(self, low, high):
        """Tell whether the box keeps the prismatic joints within the travel their reach was bounded with."""
        if self._unbounded:
            return True
        return bool((low >= self._prismatic_low).all() and (high <= self._prismatic_high).all())

    def _measure(self, q, ext):
        """Return (q, lower bounds of every pair's distance at q): box gaps, measured where they do not clear."""
        pin = self._pin
        model, config_map, world = self._model.geometry
        pin.updateGeometryPlacements(model, self._data, world.geometry_model, self._geometry_data,
                                     config_map.full(q))
        placements = self._data.oMi.tolist()   # one conversion: indexing costs a binding call per joint
        placements = np.array([placements[j].homogeneous for j in self._used_joints])
        gaps, _ = box_gaps(placements, self._twists, self._slots, self._centres, self._halves, self._first,
                           self._second)
        need = self._model.padding + DISTANCE_TOLERANCE + ext @ self._coefficients + REUSE_MARGIN
        bounds = gaps.copy()
        for k in np.flatnonzero(~(gaps > need)):
            distance = pin.computeDistance(world.geometry_model, self._geometry_data, int(k)).min_distance
            bounds[k] = max(gaps[k], distance)
        self.queries += 1
        return np.array(q, float), bounds

    def _refresh(self):
        """Rebuild the per-world arrays when the model's world or held joints changed."""
        model, config_map, world = self._model.geometry
        key = (id(world), self._model.configuration_version)
        if key == self._key and self._world is world:   # a world's identity: comparing it would compare its shapes
            return
        pin = self._pin
        self._data = model.createData()
        self._geometry_data = pin.GeometryData(world.geometry_model)
        configure_requests(self._geometry_data, 0.0)
        objects = world.geometry_model.geometryObjects
        joints = [int(obj.parentJoint) for obj in objects]
        self._used_joints = sorted(set(joints))
        self._slots = np.array([self._used_joints.index(j) for j in joints], dtype=np.int64)
        self._centres, self._halves = shape_boxes(objects)
        self._twists = np.zeros((len(self._used_joints), 6))
        pairs = world.geometry_model.collisionPairs
        self._first = np.array([p.first for p in pairs], dtype=np.int64)
        self._second = np.array([p.second for p in pairs], dtype=np.int64)
        radii = np.linalg.norm(self._centres, axis=1) + np.linalg.norm(self._halves, axis=1)
        self._coefficients, (self._prismatic_low, self._prismatic_high) = pair_coefficients(
            model, config_map.velocity_map(), config_map.joint_names, joints, radii, self._first, self._second)
        self._unbounded = bool(np.all(np.isneginf(self._prismatic_low)) and np.all(np.isposinf(self._prismatic_high)))
        self._reference = None
        self._world, self._key = world, key


def shape_boxes(objects):
    """Return the centres and half extents (S, 3) of each shape's bounding box in its joint's frame [m].

    Args:
        objects: Pinocchio GeometryObjects (their geometry and placement in the joint's frame).
    """
    centres, halves = [], []
    for obj in objects:
        obj.geometry.computeLocalAABB()
        box = obj.geometry.aabb_local
        R, t = obj.placement.rotation, obj.placement.translation
        centres.append(R @ (0.5 * (box.min_ + box.max_)) + t)
        halves.append(np.abs(R) @ (0.5 * (box.max_ - box.min_)))
    return np.array(centres).reshape(-1, 3), np.array(halves).reshape(-1, 3)


def pair_coefficients(model, velocity_map, names, joints, radii, first, second):
    """Return C (n, P): how far pair p's distance can shrink per unit of each chain joint's travel [m per rad or m].

    C[i, p] sums, over the Pinocchio joints chain joint i drives (|multiplier| each) that move exactly one
    shape of the pair, that shape's reach from the joint's axis (revolute), 1 (prismatic) or inf (other).

    Args:
        model: the Pinocchio model.
        velocity_map: (nv, n) Pinocchio velocity per chain joint velocity (ConfigurationMap.velocity_map).
        names: the chain's joint names, in order.
        joints: (S,) each shape's Pinocchio joint.
        radii: (S,) each shape's distance bound from its joint's origin [m].
        first: (P,) first shape of each pair.
        second: (P,) second shape of each pair.

    Returns:
        (C, (low, high)): and the chain-joint box (n,) the bound holds in (the travel allowed to prismatic
        joints, from the limits of the joints they drive; unbounded where none is driven).
    """
    n = velocity_map.shape[1]
    arms, kinds, low, high = _joint_arms(model, velocity_map, list(names))
    ancestors = [_ancestors(model, j) for j in range(model.njoints)]
    C = np.zeros((n, len(first)))
    for p, (a, b) in enumerate(zip(first, second)):
        for shape, other in ((a, b), (b, a)):
            moving = [j for j in ancestors[joints[shape]] if j not in ancestors[joints[other]]]
            for j in moving:
                rates = np.abs(velocity_map[model.joints[j].idx_v]) if model.joints[j].nv == 1 else np.zeros(n)
                if not rates.any():
                    continue
                if kinds[j] == 'revolute':
                    reach = _reach(model, arms, j, joints[shape]) + radii[shape]
                else:
                    reach = 1.0 if kinds[j] == 'prismatic' else np.inf
                C[:, p] += np.where(rates > 0.0, rates * reach, 0.0)
    return C, (low, high)


def _joint_arms(model, velocity_map, names):
    """Return each joint's largest distance from its parent's origin [m], its kind, and the chain box of it.

    A prismatic joint's travel counts with its limits: a chain joint's own box is then those limits, and one
    that another drives (a mimic joint) refuses every box of its master (its travel is not tracked).
    """
    n = velocity_map.shape[1]
    arms, kinds = np.zeros(model.njoints), ['fixed'] * model.njoints
    low, high = np.full(n, -np.inf), np.full(n, np.inf)
    for j in range(1, model.njoints):
        joint = model.joints[j]
        arms[j] = np.linalg.norm(model.jointPlacements[j].translation)
        shortname = joint.shortname()
        kinds[j] = ('revolute' if shortname.startswith('JointModelR') else
                    'prismatic' if joint.nv == 1 and shortname.startswith('JointModelP') else 'other')
        if kinds[j] != 'prismatic':
            continue
        lo, hi = model.lowerPositionLimit[joint.idx_q], model.upperPositionLimit[joint.idx_q]
        arms[j] += max(abs(lo), abs(hi))
        if model.names[j] in names:
            column = names.index(model.names[j])
            low[column], high[column] = max(low[column], lo), min(high[column], hi)
        else:
            drivers = np.flatnonzero(velocity_map[joint.idx_v])
            low[drivers], high[drivers] = np.nan, np.nan
    return arms, kinds, low, high


def _ancestors(model, j):
    """Return the set of joints that move joint ``j``'s body: ``j`` and its parents, the universe excluded."""
    chain = set()
    while j > 0:
        chain.add(j)
        j = model.parents[j]
    return chain


def _reach(model, arms, j, k):
    """Return a bound of the distance from joint ``j``'s origin to joint ``k``'s (``j`` an ancestor of ``k``) [m]."""
    total = 0.0
    while k != j:
        total += arms[k]
        k = model.parents[k]
    return total
