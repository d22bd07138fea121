"""Joint limits a real controller must respect, and the state a move starts from.

Limits come, in increasing priority, from the URDF (position, velocity), a
MoveIt-format ``joint_limits.yaml`` and per-joint overrides (the node's
parameters); ``JointLimits`` holds the merged result as arrays in chain order,
so the planner and the command guard read one source of truth.

The merge never loosens what the URDF says: a velocity (or position) limit
above the URDF's is clamped to it, with a note.  URDFs carry no acceleration
limits, so where none is given anywhere ``DEFAULT_ACCELERATION`` is assumed
(with a note the node logs once).  Jerk is unlimited (inf) unless given.
"""
from dataclasses import dataclass, field, replace

import numpy as np

from ..core.yaml_files import read_yaml

#: Acceleration [rad/s^2 or m/s^2] assumed where neither the yaml nor an override gives one.  It is
#: MoveIt's own fallback (time_optimal_trajectory_generation's default of 1.0 when a joint has none):
#: a few times below what industrial and collaborative arms allow (Panda 7.5-20, UR 15-40 rad/s^2), so an
#: arm commissioned without acceleration limits moves gently, never harder than it was built for.
DEFAULT_ACCELERATION = 1.0
#: Velocity [rad/s or m/s] assumed for a joint whose URDF gives none (continuous joints may omit <limit>).
DEFAULT_VELOCITY = 1.0
#: Positions may touch a limit within this rounding [rad or m] (the planner, the guard and the controller contract).
POSITION_EPS = 1e-9
#: Keys a joint entry of a MoveIt joint_limits.yaml may carry (effort and soft limits are read and ignored).
JOINT_KEYS = frozenset((
    'has_position_limits', 'min_position', 'max_position', 'has_velocity_limits', 'max_velocity',
    'has_acceleration_limits', 'max_acceleration', 'has_deceleration_limits', 'max_deceleration',
    'has_jerk_limits', 'max_jerk', 'has_effort_limits', 'max_effort', 'angle_wraparound',
    'has_soft_limits', 'k_position', 'k_velocity', 'soft_lower_limit', 'soft_upper_limit'))
#: Keys of the per-joint overrides (the node's parameters).
OVERRIDE_KEYS = ('max_velocity', 'max_acceleration', 'max_jerk')
#: Range each limit may take [per s, s^2, s^3 of rad or m].  Beyond them the trajectory generator's arithmetic
#: fails (1e-300 and 1e300 made every plan raise) or loses the limits (a jerk of 1e7 let plans exceed the
#: acceleration limit by 36 %); real arms lie well inside.  No jerk limit: leave max_jerk out (unlimited).
LIMIT_RANGES = {'max_velocity': (1e-3, 1e3), 'max_acceleration': (1e-3, 1e5), 'max_jerk': (1e-2, 1e6)}


@dataclass(frozen=True)
class JointLimits:
    """Position, velocity, acceleration and jerk limits per joint, in chain order (inf: unlimited)."""

    names: tuple
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray

    def scaled(self, velocity_scaling=1.0, acceleration_scaling=1.0):
        """Limits a move may use: velocity and acceleration (and jerk with it) scaled down."""
        for name, value in (('velocity_scaling', velocity_scaling), ('acceleration_scaling', acceleration_scaling)):
            if not 0.0 < value <= 1.0:
                raise ValueError(f'{name} must be in (0, 1], got {value}')
        return replace(self, velocity=self.velocity * velocity_scaling,
                       acceleration=self.acceleration * acceleration_scaling,
                       jerk=self.jerk * acceleration_scaling)


@dataclass
class MotionState:
    """Positions, velocities and accelerations of the joints at one instant, in chain order.

    ``time`` is that instant on the monotonic clock where it matters (a move planned from this state
    is stamped with it, so the controller aligns the move with the motion it continues); None: now.
    """

    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    time: float = None

    @classmethod
    def at_rest(cls, position):
        q = np.asarray(position, dtype=float)
        return cls(q.copy(), np.zeros_like(q), np.zeros_like(q))


@dataclass
class LoadedLimits:
    """Merged limits, the yaml's default scaling factors (1.0 where absent) and what was assumed or clamped."""

    limits: JointLimits
    default_velocity_scaling: float = 1.0
    default_acceleration_scaling: float = 1.0
    notes: list = field(default_factory=list)


def load_joint_limits(chain, joint_limits_file=None, overrides=None):
    """Merge URDF < joint_limits.yaml < overrides into ``LoadedLimits`` for ``chain``'s joints.

    ``joint_limits_file``: path of a MoveIt-format yaml (top-level ``joint_limits:``).  Its joints
    outside the chain (a gripper, another group) are ignored with a note; a file naming none of the
    chain's joints is refused.  ``overrides``: {joint: {'max_velocity'|'max_acceleration'|'max_jerk':
    value}}; an unknown joint or key is refused.  Raises ValueError naming the joint and key at fault.
    """
    names = tuple(chain.joint_names)
    merged = {name: {'min_position': float(lo), 'max_position': float(hi), 'max_velocity': float(v),
                     'max_acceleration': None, 'max_jerk': np.inf}
              for name, lo, hi, v in zip(names, chain.lower, chain.upper, chain.velocity_limits)}
    urdf = {name: dict(entry) for name, entry in merged.items()}
    result = LoadedLimits(limits=None)
    if joint_limits_file:
        _merge_yaml(joint_limits_file, merged, result)
    _merge_overrides(overrides or {}, merged)
    for name in names:
        _clamp_to_urdf(name, merged[name], urdf[name], result.notes)
    result.limits = _assemble(names, merged, result.notes)
    return result


def _merge_yaml(path, merged, result):
    document = read_yaml(path, ValueError, 'joint_limits_file {path!r} cannot be read: {exc}',
                         'joint_limits_file {path!r} is not valid YAML: {exc}')
    if not isinstance(document, dict) or not isinstance(document.get('joint_limits'), dict):
        raise ValueError(f"joint_limits_file {path!r} has no 'joint_limits:' mapping at the top level")
    for key, attribute in (('default_velocity_scaling_factor', 'default_velocity_scaling'),
                           ('default_acceleration_scaling_factor', 'default_acceleration_scaling')):
        if key in document:
            value = _number(document[key], f'{path}: {key}')
            if not 0.0 < value <= 1.0:
                raise ValueError(f'{path}: {key} must be in (0, 1], got {value}')
            setattr(result, attribute, value)
    entries = document['joint_limits']
    outside = [name for name in entries if name not in merged]
    if len(outside) == len(entries):
        raise ValueError(f'{path}: none of its joints ({", ".join(map(str, entries)) or "none"}) is in the chain '
                         f'({", ".join(merged)})')
    if outside:
        result.notes.append(f'{path}: joints outside the chain ignored: {", ".join(map(str, outside))}')
    for name, entry in entries.items():
        if name in merged:
            merged[name].update(_yaml_joint(path, name, entry))


def _yaml_joint(path, name, entry):
    """Return the limits one yaml joint entry sets (its has_* flags decide which)."""
    where = f'{path}: joint {name!r}'
    if not isinstance(entry, dict):
        raise ValueError(f'{where} must be a mapping of limit keys, got {entry!r}')
    unknown = sorted(set(entry) - JOINT_KEYS)
    if unknown:
        raise ValueError(f'{where} has unknown key(s) {", ".join(map(str, unknown))}')
    values = {}
    if _flag(entry, 'has_position_limits', where):
        for key in ('min_position', 'max_position'):
            if key in entry:
                values[key] = _number(entry[key], f'{where}: {key}')
    for flag, key in (('has_velocity_limits', 'max_velocity'), ('has_acceleration_limits', 'max_acceleration'),
                      ('has_jerk_limits', 'max_jerk')):
        if _flag(entry, flag, where):
            if key not in entry:
                raise ValueError(f'{where}: {flag} is true but {key} is missing')
            values[key] = _positive(entry[key], f'{where}: {key}', key)
    return values


def _merge_overrides(overrides, merged):
    if not isinstance(overrides, dict):
        raise ValueError(f'overrides must be {{joint: {{key: value}}}}, got {overrides!r}')
    for name, entry in overrides.items():
        if name not in merged:
            raise ValueError(f'limit override for unknown joint {name!r}; the chain has {", ".join(merged)}')
        if not isinstance(entry, dict):
            raise ValueError(f'limit override for joint {name!r} must be a mapping, got {entry!r}')
        for key, value in entry.items():
            if key not in OVERRIDE_KEYS:
                raise ValueError(f'limit override {key!r} for joint {name!r} is not one of {", ".join(OVERRIDE_KEYS)}')
            merged[name][key] = _positive(value, f'limit override {key} of joint {name!r}', key)


def _clamp_to_urdf(name, entry, urdf, notes):
    """Never loosen the URDF: velocity and position limits beyond it are clamped, with a note."""
    if entry['max_velocity'] > urdf['max_velocity']:
        notes.append(f"joint {name}: max_velocity {entry['max_velocity']:g} exceeds the URDF's "
                     f"{urdf['max_velocity']:g}; clamped to the URDF")
        entry['max_velocity'] = urdf['max_velocity']
    for key, tighter in (('min_position', max), ('max_position', min)):
        clamped = tighter(entry[key], urdf[key])
        if clamped != entry[key]:
            notes.append(f'joint {name}: {key} {entry[key]:g} is outside the URDF limits; clamped to {clamped:g}')
            entry[key] = clamped
    if entry['min_position'] > entry['max_position']:
        raise ValueError(f"joint {name}: min_position {entry['min_position']:g} > max_position "
                         f"{entry['max_position']:g}")


def _assemble(names, merged, notes):
    velocity, acceleration, assumed = [], [], {'velocity': [], 'acceleration': []}
    for name in names:
        entry = merged[name]
        if not np.isfinite(entry['max_velocity']):
            assumed['velocity'].append(name)
            entry['max_velocity'] = DEFAULT_VELOCITY
        if entry['max_acceleration'] is None:
            assumed['acceleration'].append(name)
            entry['max_acceleration'] = DEFAULT_ACCELERATION
        velocity.append(entry['max_velocity'])
        acceleration.append(entry['max_acceleration'])
    if assumed['velocity']:
        notes.append(f"no velocity limit in the URDF or joint_limits for {', '.join(assumed['velocity'])}: assumed "
                     f'{DEFAULT_VELOCITY:g} rad/s (m/s for prismatic joints)')
    if assumed['acceleration']:
        notes.append(f"no acceleration limit given for {', '.join(assumed['acceleration'])}: assumed "
                     f'{DEFAULT_ACCELERATION:g} rad/s^2 (m/s^2 for prismatic joints); set max_acceleration in a '
                     'joint_limits.yaml for your arm (parameter joint_limits_file)')
    column = [np.array([merged[name][key] for name in names], float)
              for key in ('min_position', 'max_position', 'max_jerk')]
    return JointLimits(names, column[0], column[1], np.array(velocity), np.array(acceleration), column[2])


def _flag(entry, key, where):
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f'{where}: {key} must be true or false, got {value!r}')
    return value


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f'{what} must be a number, got {value!r}')
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f'{what} must be finite, got {value}')
    return value


def _positive(value, what, key):
    value = _number(value, what)
    low, high = LIMIT_RANGES[key]
    if not low <= value <= high:
        raise ValueError(f'{what} must be in [{low:g}, {high:g}], got {value:g}')
    return value
