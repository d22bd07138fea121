"""The serial chain model: URDF -> movable joints, limits, constant transforms.

Like Pinocchio's Model, a ``Chain`` is immutable description only; the kernels
in ``kinematics`` compute from its arrays.  Fixed joints are folded into the
constant transform before the next movable joint.  Mimic joints inside the
chain follow their master (value = multiplier * master + offset) and are not
IK variables; a mimic joint whose master is outside the chain is rejected.

The model is a tree (``urdf.check_tree``) and the origins, axes and mimic
factors of the path are finite and bounded (``urdf.check_joint_values``); the
limits of the chain's joints are checked here, where they are read:

- ``velocity`` must be finite, positive and at most ``MAX_MAGNITUDE``: the URDF
  cannot switch a velocity limit off.  URDF requires ``velocity`` in every
  ``<limit>`` (urdf_parser_py refuses it missing); only a continuous joint may
  omit ``<limit>`` altogether, and then its velocity is unlimited (inf) here, for
  the motion layer to bound from its own configuration.
- ``lower``/``upper`` (and ``<safety_controller>`` soft limits, which win where
  tighter, as in TRAC-IK) must be finite, within +-``MAX_MAGNITUDE`` and ordered.
- A mimic joint's own limits bind its master, since only the master is an IK
  variable: with value = m * master + offset, its position range maps to
  [(lower - offset) / m, (upper - offset) / m] (ends swapped for m < 0), which
  is intersected with the master's range, and its velocity limit v bounds the
  master's velocity by v / abs(m).  A continuous master bounded this way is
  reported as revolute.  An empty intersection (or, for m = 0, an offset outside
  the mimic's range) is a JointLimitError.

Joint positions given to ``fk``/``jacobian`` are checked as strictly: a message
says whether they are missing, not numbers, of the wrong shape or not finite.
"""
from dataclasses import dataclass, field, replace

import numpy as np

from . import kinematics as kin
from .exceptions import ChainError, JointLimitError, LinkNotFoundError, UnsupportedJointError
from .urdf import check_joint_values, check_numbers, check_tree, joint_axis, joint_origin, MAX_MAGNITUDE, parse_robot


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
        q = self.configuration(q)
        return bool(np.all(q >= self.lower - tol) and np.all(q <= self.upper + tol))

    def fk(self, q, link=None):
        """4x4 pose of ``link`` (default: the tip) in the base frame."""
        return self.fk_batch(self.configuration(q)[None, :], link)[0]

    def fk_batch(self, Q, link=None):
        """Poses (B x 4 x 4) of ``link`` for configurations Q (B x n)."""
        Q = self.configurations(Q)
        index, R, p = self._link_frame(link)
        return kin.fk_batch(Q, *self.kin_args, index, R, p)

    def jacobian(self, q):
        """Geometric tip Jacobian (6 x n), rows (vx, vy, vz, wx, wy, wz) in the base frame."""
        return self.jacobian_batch(self.configuration(q)[None, :])[0]

    def jacobian_batch(self, Q):
        """Tip Jacobians (B x 6 x n) for configurations Q (B x n)."""
        return kin.jacobian_batch(self.configurations(Q), *self.kin_args, self.n)

    def configuration(self, q, what='q'):
        """``q`` as a contiguous float array of shape (n,); ValueError naming the cause otherwise."""
        return self._checked(q, what, f'({self.n},)', lambda shape: shape == (self.n,))

    def configurations(self, Q, what='Q'):
        """``Q`` as a contiguous float array of shape (B, n); ValueError naming the cause otherwise."""
        return self._checked(Q, what, f'(B, {self.n})', lambda shape: len(shape) == 2 and shape[1] == self.n)

    def _checked(self, values, what, expected, shape_ok):
        if values is None:
            raise ValueError(f'{what} is missing (None); expected joint positions of shape {expected}')
        try:
            raw = np.asarray(values)
        except ValueError as exc:  # ragged nesting
            raise ValueError(f'{what} is not an array of shape {expected}: {exc}') from None
        if raw.dtype == object and any(v is None for v in raw.ravel()):
            raise ValueError(f'{what} has missing values (None)')
        if raw.dtype.kind not in 'iufO':
            raise ValueError(f'{what} must hold numbers, got {raw.dtype.name} values')
        try:
            array = np.asarray(raw, dtype=float)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f'{what} must hold numbers: {exc}') from None
        if not shape_ok(array.shape):
            raise ValueError(f'{what} has shape {array.shape}, expected {expected}')
        bad = ~np.isfinite(array)
        if bad.any():
            joints = sorted({self.joints[i].name for i in np.nonzero(bad)[-1]})
            raise ValueError(f'{what} is not finite (nan or inf) for {", ".join(joints)}')
        return np.ascontiguousarray(array)  # the kernels' signature: no new compilation per layout

    def _link_frame(self, link):
        if link is None:
            link = self.tip_link
        if not isinstance(link, str):
            raise LinkNotFoundError(f'link must be a link name (str), got {type(link).__name__}')
        try:
            return self.link_frames[link]
        except KeyError:
            raise LinkNotFoundError(
                f"link '{link}' is not in the chain {self.base_link} -> {self.tip_link}; "
                f'chain links: {", ".join(self.link_frames)}') from None


def load_chain(source, base_link, tip_link, xacro_args=None):
    """Build the chain ``base_link`` -> ``tip_link`` from URDF/xacro text or a file path.

    ``xacro_args`` ({name: value}) set the xacro arguments, as ``name:=value`` on xacro's command line.
    """
    return chain_from_robot(parse_robot(source, xacro_args), base_link, tip_link)


def chain_from_robot(robot, base_link, tip_link):
    """Build a Chain from a parsed ``urdf_parser_py`` Robot (checked again: a tree, the path's numbers)."""
    parent_joint = check_tree(robot)
    links = {link.name for link in robot.links}
    for role, name in (('base', base_link), ('tip', tip_link)):
        if not isinstance(name, str):
            raise LinkNotFoundError(f'{role} link must be a link name (str), got {type(name).__name__}')
        if name not in links:
            raise LinkNotFoundError(f"{role} link '{name}' is not in robot '{robot.name}'")
    path = _joint_path(parent_joint, base_link, tip_link)
    for joint in path:
        check_joint_values(joint)
    return _ChainBuilder(base_link, tip_link).build(path, robot)


def _joint_path(parent_joint, base_link, tip_link):
    """Joints from base to tip, walking up from the tip (check_tree proved every walk ends)."""
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
        return Chain(
            self.base_link, self.tip_link, self.joints,
            np.ascontiguousarray(self.origin_R + [self.R]), np.ascontiguousarray(self.origin_p + [self.p]),
            np.ascontiguousarray(self.axis, dtype=float).reshape(n, 3), np.array(self.kind, dtype=np.int64),
            np.array(self.var, dtype=np.int64), np.array(self.mult, dtype=float),
            np.array(self.offset, dtype=float), self.link_frames, [m[0].name for m in self.mimics])

    def _add(self, joint):
        R0, p0 = joint_origin(joint)
        self.p = self.p + self.R @ p0
        self.R = self.R @ R0
        if joint.type == 'fixed':
            return
        if joint.type not in ('revolute', 'continuous', 'prismatic'):
            raise UnsupportedJointError(
                f"joint '{joint.name}' is {joint.type}: only revolute, continuous, prismatic and fixed "
                'joints can be in an IK chain')
        self.origin_R.append(self.R)
        self.origin_p.append(self.p)
        self.axis.append(joint_axis(joint))
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
        mimic_names = {joint.name for joint, _ in self.mimics}
        for joint, slot in self.mimics:
            master = joint.mimic.joint
            if master in mimic_names:
                raise UnsupportedJointError(
                    f"mimic joint '{joint.name}' follows '{master}', which is itself a mimic joint")
            if master not in self.variable_of:
                raise UnsupportedJointError(
                    f"mimic joint '{joint.name}' follows '{master}', which is not a movable joint of the "
                    f'chain {self.base_link} -> {self.tip_link}')
            self.var[slot] = self.variable_of[master]
            index = self.variable_of[master]
            self.joints[index] = _folded_limits(self.joints[index], _joint_info(joint), self.mult[slot],
                                                self.offset[slot])


def _folded_limits(master, mimic, multiplier, offset):
    """``master``'s JointInfo with the limits of its ``mimic`` folded in (see the module docstring)."""
    lower, upper = master.lower, master.upper
    if np.isfinite(mimic.lower) or np.isfinite(mimic.upper):
        if multiplier == 0.0:
            if not mimic.lower <= offset <= mimic.upper:
                raise JointLimitError(f"mimic joint '{mimic.name}' stays at its offset {offset}, outside its limits "
                                      f'[{mimic.lower}, {mimic.upper}]')
        else:
            ends = sorted(((mimic.lower - offset) / multiplier, (mimic.upper - offset) / multiplier))
            lower, upper = max(lower, ends[0]), min(upper, ends[1])
            if lower > upper:
                raise JointLimitError(
                    f"mimic joint '{mimic.name}' ({multiplier} * {master.name} + {offset}) cannot stay within its "
                    f"limits [{mimic.lower}, {mimic.upper}] for any position of '{master.name}' in "
                    f'[{master.lower}, {master.upper}]')
    velocity = master.velocity if multiplier == 0.0 else min(master.velocity, mimic.velocity / abs(multiplier))
    joint_type = 'revolute' if master.continuous and np.isfinite(lower) else master.joint_type
    return replace(master, joint_type=joint_type, lower=lower, upper=upper, velocity=velocity)


def _joint_info(joint):
    """Limits of one IK variable, checked (see the module docstring)."""
    limit = joint.limit
    velocity = _velocity_limit(joint)
    if joint.type == 'continuous':
        return JointInfo(joint.name, joint.type, -np.inf, np.inf, velocity)
    if limit is None or limit.lower is None or limit.upper is None:
        raise JointLimitError(f"{joint.type} joint '{joint.name}' has no <limit lower=... upper=...>")
    lower, upper = (_limit_value(joint, f'<limit {key}>', getattr(limit, key)) for key in ('lower', 'upper'))
    safety = joint.safety_controller
    if safety is not None:
        if safety.soft_lower_limit is not None:
            lower = max(lower, _limit_value(joint, '<safety_controller soft_lower_limit>', safety.soft_lower_limit))
        if safety.soft_upper_limit is not None:
            upper = min(upper, _limit_value(joint, '<safety_controller soft_upper_limit>', safety.soft_upper_limit))
    if lower > upper:
        raise JointLimitError(f"joint '{joint.name}' has invalid limits [{lower}, {upper}]: lower > upper")
    return JointInfo(joint.name, joint.type, lower, upper, velocity)


def _velocity_limit(joint):
    if joint.limit is None or joint.limit.velocity is None:
        return np.inf  # a continuous joint without <limit> (URDF allows it)
    velocity = float(joint.limit.velocity)
    if not (np.isfinite(velocity) and 0 < velocity <= MAX_MAGNITUDE):
        raise JointLimitError(f"joint '{joint.name}' has <limit velocity> {velocity}: it must be finite, "
                              f'positive and at most {MAX_MAGNITUDE:g} (rad/s or m/s)')
    return velocity


def _limit_value(joint, what, value):
    return float(check_numbers(value, f"joint '{joint.name}' {what}", JointLimitError)[0])
