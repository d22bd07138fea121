"""The serial chain model: URDF -> movable joints, limits, constant transforms.

Like Pinocchio's Model, a ``Chain`` is immutable description only; the kernels
in ``kinematics`` compute from its arrays.  Fixed joints are folded into the
constant transform before the next movable joint.  Mimic joints inside the
chain follow their master (value = multiplier * master + offset) and are not
IK variables; a mimic joint whose master is outside the chain is rejected.
"""
from dataclasses import dataclass, field

import numpy as np

from . import kinematics as kin
from .exceptions import ChainError, JointLimitError, LinkNotFoundError, UnsupportedJointError
from .transforms import rpy_to_matrix
from .urdf import parse_robot


@dataclass(frozen=True)
class JointInfo:
    """One IK variable: a revolute, continuous or prismatic joint of the chain."""

    name: str
    joint_type: str
    lower: float
    upper: float
    velocity: float

    @property
    def continuous(self):
        return self.joint_type == 'continuous'


@dataclass(eq=False)
class Chain:
    """A serial chain from ``base_link`` to ``tip_link``.

    ``joints`` are the IK variables in chain order; ``lower``/``upper`` are
    -inf/+inf for continuous joints.  The arrays below ``kin_args`` describe
    all movable joints (mimic ones included) for the numba kernels.
    """

    base_link: str
    tip_link: str
    joints: list
    origin_R: np.ndarray
    origin_p: np.ndarray
    axis: np.ndarray
    kind: np.ndarray
    var: np.ndarray
    mult: np.ndarray
    offset: np.ndarray
    link_frames: dict = field(repr=False)
    mimic_joints: list = field(default_factory=list)

    @property
    def n(self):
        return len(self.joints)

    @property
    def joint_names(self):
        return [j.name for j in self.joints]

    def __post_init__(self):
        # Limits as arrays once: the solver reads them on every call.  The sampling
        # range is the limits, with [-pi, pi] for continuous joints.
        self.lower = np.array([j.lower for j in self.joints])
        self.upper = np.array([j.upper for j in self.joints])
        self.velocity_limits = np.array([j.velocity for j in self.joints])
        self.continuous = np.array([j.continuous for j in self.joints])
        self.sample_lower = np.where(self.continuous, -np.pi, self.lower)
        self.sample_upper = np.where(self.continuous, np.pi, self.upper)
        self._mid = 0.5 * (self.sample_lower + self.sample_upper)

    @property
    def kin_args(self):
        """Return the kernels' chain arguments, in their order."""
        return (self.origin_R, self.origin_p, self.axis, self.kind, self.var, self.mult, self.offset)

    def mid_configuration(self):
        """Middle of the limits; zero for continuous joints."""
        return self._mid.copy()

    def random_configuration(self, rng, size=None):
        """Uniform samples within the limits ([-pi, pi] for continuous joints)."""
        shape = (self.n,) if size is None else (size, self.n)
        return rng.uniform(self.sample_lower, self.sample_upper, size=shape)

    def within_limits(self, q, tol=1e-9):
        q = np.asarray(q)
        return bool(np.all(q >= self.lower - tol) and np.all(q <= self.upper + tol))

    def fk(self, q, link=None):
        """4x4 pose of ``link`` (default: the tip) in the base frame."""
        return self.fk_batch(np.asarray(q, dtype=float)[None, :], link)[0]

    def fk_batch(self, Q, link=None):
        """Poses (B x 4 x 4) of ``link`` for configurations Q (B x n)."""
        Q = self._check_batch(Q)
        index, R, p = self._link_frame(link)
        return kin.fk_batch(Q, *self.kin_args, index, R, p)

    def jacobian(self, q):
        """Geometric tip Jacobian (6 x n), rows (vx, vy, vz, wx, wy, wz) in the base frame."""
        return self.jacobian_batch(np.asarray(q, dtype=float)[None, :])[0]

    def jacobian_batch(self, Q):
        return kin.jacobian_batch(self._check_batch(Q), *self.kin_args, self.n)

    def _link_frame(self, link):
        if link is None:
            link = self.tip_link
        try:
            return self.link_frames[link]
        except KeyError:
            raise LinkNotFoundError(
                f"link '{link}' is not in the chain {self.base_link} -> {self.tip_link}; "
                f'chain links: {", ".join(self.link_frames)}') from None

    def _check_batch(self, Q):
        Q = np.ascontiguousarray(Q, dtype=float)
        if Q.ndim != 2 or Q.shape[1] != self.n:
            raise ValueError(f'expected configurations of shape (B, {self.n}), got {Q.shape}')
        return Q


def load_chain(source, base_link, tip_link):
    """Build the chain ``base_link`` -> ``tip_link`` from URDF/xacro text or a file path."""
    return chain_from_robot(parse_robot(source), base_link, tip_link)


def chain_from_robot(robot, base_link, tip_link):
    """Build a Chain from a parsed ``urdf_parser_py`` Robot."""
    links = {link.name for link in robot.links}
    for role, name in (('base', base_link), ('tip', tip_link)):
        if name not in links:
            raise LinkNotFoundError(f"{role} link '{name}' is not in robot '{robot.name}'")
    path = _joint_path(robot, base_link, tip_link)
    return _ChainBuilder(base_link, tip_link).build(path, robot)


def _joint_path(robot, base_link, tip_link):
    """Joints from base to tip, walking up from the tip through each link's parent joint."""
    parent_joint = {j.child: j for j in robot.joints}
    path = []
    link = tip_link
    while link != base_link:
        joint = parent_joint.get(link)
        if joint is None:
            raise ChainError(f"tip link '{tip_link}' is not below base link '{base_link}'")
        path.append(joint)
        link = joint.parent
    path.reverse()
    return path


class _ChainBuilder:
    """Folds a joint path into the Chain arrays."""

    def __init__(self, base_link, tip_link):
        self.base_link, self.tip_link = base_link, tip_link
        self.R, self.p = np.eye(3), np.zeros(3)  # constant transform since the last movable joint
        self.origin_R, self.origin_p, self.axis, self.kind = [], [], [], []
        self.var, self.mult, self.offset = [], [], []
        self.joints, self.mimics = [], []
        self.variable_of = {}
        self.link_frames = {base_link: (-1, np.eye(3), np.zeros(3))}

    def build(self, path, robot):
        for joint in path:
            self._add(joint)
            self.link_frames[joint.child] = (len(self.axis) - 1, self.R.copy(), self.p.copy())
        self._resolve_mimics()
        if not self.joints:
            raise ChainError(f"no movable joint between '{self.base_link}' and '{self.tip_link}'")
        n = len(self.axis)
        frames = {name: (index if index >= 0 else -1, R, p) for name, (index, R, p) in self.link_frames.items()}
        return Chain(
            self.base_link, self.tip_link, self.joints,
            np.ascontiguousarray(self.origin_R + [self.R]), np.ascontiguousarray(self.origin_p + [self.p]),
            np.ascontiguousarray(self.axis, dtype=float).reshape(n, 3), np.array(self.kind, dtype=np.int64),
            np.array(self.var, dtype=np.int64), np.array(self.mult, dtype=float),
            np.array(self.offset, dtype=float), frames, [m[0].name for m in self.mimics])

    def _add(self, joint):
        R0, p0 = _origin(joint)
        self.p = self.p + self.R @ p0
        self.R = self.R @ R0
        if joint.type == 'fixed':
            return
        if joint.type not in ('revolute', 'continuous', 'prismatic'):
            raise UnsupportedJointError(
                f"joint '{joint.name}' is {joint.type}: only revolute, continuous, prismatic and fixed "
                'joints can be in an IK chain')
        axis = np.array(joint.axis if joint.axis is not None else [1.0, 0.0, 0.0], dtype=float)
        norm = np.linalg.norm(axis)
        if not np.isfinite(norm) or norm < 1e-9:
            raise UnsupportedJointError(f"joint '{joint.name}' has a zero or invalid axis")
        self.origin_R.append(self.R)
        self.origin_p.append(self.p)
        self.axis.append(axis / norm)
        self.kind.append(kin.PRISMATIC if joint.type == 'prismatic' else kin.REVOLUTE)
        self.R, self.p = np.eye(3), np.zeros(3)
        if joint.mimic is not None:
            self.mimics.append((joint, len(self.var)))
            self.var.append(-1)
            self.mult.append(1.0 if joint.mimic.multiplier is None else float(joint.mimic.multiplier))
            self.offset.append(0.0 if joint.mimic.offset is None else float(joint.mimic.offset))
            return
        self.variable_of[joint.name] = len(self.joints)
        self.var.append(len(self.joints))
        self.mult.append(1.0)
        self.offset.append(0.0)
        self.joints.append(_joint_info(joint))

    def _resolve_mimics(self):
        for joint, slot in self.mimics:
            master = joint.mimic.joint
            if master not in self.variable_of:
                raise UnsupportedJointError(
                    f"mimic joint '{joint.name}' follows '{master}', which is not a movable joint of the "
                    f'chain {self.base_link} -> {self.tip_link}')
            self.var[slot] = self.variable_of[master]


def _origin(joint):
    if joint.origin is None:
        return np.eye(3), np.zeros(3)
    xyz = joint.origin.xyz if joint.origin.xyz is not None else [0.0, 0.0, 0.0]
    rpy = joint.origin.rpy if joint.origin.rpy is not None else [0.0, 0.0, 0.0]
    return rpy_to_matrix(rpy), np.array(xyz, dtype=float)


def _joint_info(joint):
    """Limits of one joint; soft limits from <safety_controller> win where tighter (as TRAC-IK)."""
    limit = joint.limit
    velocity = float(limit.velocity) if limit is not None and limit.velocity else np.inf
    if velocity <= 0:
        raise JointLimitError(f"joint '{joint.name}' has a non-positive velocity limit {velocity}")
    if joint.type == 'continuous':
        return JointInfo(joint.name, joint.type, -np.inf, np.inf, velocity)
    if limit is None or limit.lower is None or limit.upper is None:
        raise JointLimitError(f"{joint.type} joint '{joint.name}' has no <limit lower=... upper=...>")
    lower, upper = float(limit.lower), float(limit.upper)
    safety = joint.safety_controller
    if safety is not None:
        if safety.soft_lower_limit is not None:
            lower = max(lower, float(safety.soft_lower_limit))
        if safety.soft_upper_limit is not None:
            upper = min(upper, float(safety.soft_upper_limit))
    if not (np.isfinite(lower) and np.isfinite(upper)) or lower > upper:
        raise JointLimitError(f"joint '{joint.name}' has invalid limits [{lower}, {upper}]")
    return JointInfo(joint.name, joint.type, lower, upper, velocity)
