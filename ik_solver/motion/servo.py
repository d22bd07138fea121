"""Servo: turns streamed twists, joint jogs and pose goals into a smooth stream of joint commands.

MoveIt Servo's model without MoveIt: every ``publish_period`` the servo takes
the last command and the state it commanded last cycle, and computes the
next joint command.  Cartesian commands go through ``dq = J+_DLS v`` with the
core's adaptive damping (bounded near singularities, exact away from them);
the Jacobian's condition number slows the motion toward a singularity and
halts it past the hard stop, unless it moves away; joints brake to a stop
at ``joint_limit_margin`` from their limits; and an acceleration- and
jerk-limited filter turns the wanted velocity into the commanded one, so
the stream never jumps, never exceeds a velocity, acceleration or jerk limit
and decelerates to rest within the acceleration limits when commands stop.
With a proximity model, a motion that closes on a contact (with the arm
itself or the world) is slowed by its rate of approach so that it stops
before the padding (motion.servo_collision); one that opens it never is.

No ROS here: the node (ros/servo_node.py) feeds commands and joint states in
and publishes what ``step`` returns; the tests drive this class directly.
"""
from dataclasses import dataclass, field
from enum import IntEnum

from numba import njit
import numpy as np

from .limits import JointLimits, MotionState
from .servo_collision import CollisionAvoidance
from ..core import kinematics as kin
from ..core.methods import adaptive_dls_step
from ..core.nullspace import NullspaceGoals, secondary_step
from ..core.transforms import rotation_vector

COMMAND_IN_TYPES = ('unitless', 'speed_units')
#: Joint step [rad] that probes which sign of the least singular direction raises the condition number.
PROBE_STEP = 1e-4
#: When idle, a measured state this far from the commanded one [rad or m] restarts the servo from it.
RESYNC_TOLERANCE = 0.01
#: The arm reaches a command within this [s] of its computation: a reading from earlier may show it still on
#: its way (a forward_position arm lags its target, more so when its controller is held up).
FOLLOW_TIME = 0.1
#: Condition number reported at an exact singularity (keeps messages finite).
MAX_CONDITION = 1e12


class Status(IntEnum):
    """Codes of ik_solver_interfaces/msg/ServoStatus (MoveIt Servo's where they exist)."""

    INVALID = -1
    NO_WARNING = 0
    DECELERATE_FOR_APPROACHING_SINGULARITY = 1
    HALT_FOR_SINGULARITY = 2
    DECELERATE_FOR_LEAVING_SINGULARITY = 3
    DECELERATE_FOR_COLLISION = 4
    HALT_FOR_COLLISION = 5
    JOINT_BOUND = 6
    STALE_COMMAND = 7
    STALE_STATE = 8
    PAUSED = 9


@dataclass
class ServoSettings:
    """What the servo does each cycle; the names follow MoveIt Servo's parameters."""

    publish_period: float = 0.01
    command_in_type: str = 'unitless'
    scale_linear: float = 0.4       # unitless: m/s at a command of 1
    scale_rotational: float = 0.8   # unitless: rad/s at a command of 1
    scale_joint: float = 0.5        # unitless: rad/s at a command of 1
    lower_singularity_threshold: float = 17.0
    hard_stop_singularity_threshold: float = 30.0
    leaving_singularity_threshold_multiplier: float = 2.0
    joint_limit_margin: float = 0.1
    incoming_command_timeout: float = 0.1
    num_outgoing_halt_msgs_to_publish: int = 4
    damping_max: float = 0.05
    epsilon: float = 0.05
    drift_dimensions: tuple = (False,) * 6   # True: that axis of the command frame may drift
    acceleration_ramp_time: float = 0.05     # jerk = acceleration / this, where no jerk limit is given
    pose_linear_gain: float = 10.0
    pose_angular_gain: float = 10.0
    pose_max_linear_speed: float = 0.25
    pose_max_angular_speed: float = 1.0
    pose_position_tolerance: float = 1e-4
    pose_orientation_tolerance: float = 1e-3
    nullspace: NullspaceGoals = field(default_factory=NullspaceGoals)
    nullspace_gain: float = 1.0    # [1/s]: the core's nullspace step per second
    follow_measured: bool = False  # velocity output: start each cycle from the measured positions
    check_collisions: bool = True   # where the servo has a proximity model
    collision_check_rate: float = 100.0               # distance queries per second [Hz]
    self_collision_proximity_threshold: float = 0.03  # [m] pairs of links watched within this
    scene_collision_proximity_threshold: float = 0.05  # [m] links and world objects watched within this

    def check(self):
        """Raise ValueError naming the first inconsistent setting."""
        if self.command_in_type not in COMMAND_IN_TYPES:
            raise ValueError(f"command_in_type must be one of {', '.join(COMMAND_IN_TYPES)}, "
                             f"got '{self.command_in_type}'")
        if not 0.0 < self.publish_period <= 1.0:
            raise ValueError(f'publish_period must be in (0, 1] s, got {self.publish_period}')
        if not 1.0 <= self.lower_singularity_threshold < self.hard_stop_singularity_threshold:
            raise ValueError('lower_singularity_threshold must be >= 1 and below hard_stop_singularity_threshold')
        if self.leaving_singularity_threshold_multiplier < 1.0:
            raise ValueError('leaving_singularity_threshold_multiplier must be >= 1')
        if len(self.drift_dimensions) != 6 or all(self.drift_dimensions):
            raise ValueError('drift_dimensions needs 6 flags (x y z rx ry rz), not all of them true')
        if self.joint_limit_margin < 0 or self.incoming_command_timeout <= 0 or self.acceleration_ramp_time <= 0:
            raise ValueError('joint_limit_margin must be >= 0, incoming_command_timeout and '
                             'acceleration_ramp_time > 0')
        if not self.collision_check_rate > 0:
            raise ValueError(f'collision_check_rate must be > 0 Hz, got {self.collision_check_rate}')
        if self.self_collision_proximity_threshold < 0 or self.scene_collision_proximity_threshold < 0:
            raise ValueError('self_collision_proximity_threshold and scene_collision_proximity_threshold must be '
                             '>= 0 m')


@dataclass
class TwistCommand:
    """Twist of the tip (vx vy vz wx wy wz) in a command frame.

    ``frame``: None (the base), a link of the chain (its orientation is taken
    from the commanded state every cycle) or a fixed 3x3 rotation of the frame
    in the base, resolved by the caller (tf2, links outside the chain).
    """

    twist: np.ndarray
    frame: object = None


@dataclass
class JointJogCommand:
    """Velocities of some joints; joints not named (NaN) keep still."""

    velocities: np.ndarray


@dataclass
class PoseCommand:
    """A pose goal of the tip in the base frame (4x4)."""

    pose: np.ndarray


@dataclass
class ServoOutput:
    """One cycle's result: the command to publish (if ``publish``), the state it follows, and the status."""

    previous: MotionState
    state: MotionState
    status: Status
    message: str
    condition_number: float
    velocity_scale: float
    publish: bool


@dataclass
class _Wanted:
    velocity: np.ndarray
    status: Status = Status.NO_WARNING
    message: str = ''
    condition_number: float = float('nan')
    scale: float = 1.0
    cartesian: bool = False


class Servo:
    """The per-cycle servo computation for one chain and its joint limits.

    ``proximity``: distances of the arm to itself and the world
    (collision.proximity.Proximity), or None: collisions are not checked.
    """

    def __init__(self, chain, limits, settings=None, proximity=None):
        self.chain = chain
        self.limits = limits
        self._collisions = CollisionAvoidance(proximity) if proximity is not None else None
        self.settings = settings or ServoSettings()
        n = chain.n
        self._R = np.empty((n + 1, 3, 3))
        self._p = np.empty((n + 1, 3))
        self._a = np.empty((n, 3))
        self._J = np.empty((6, n))
        self.state = None
        self.command = None
        self.command_time = -np.inf
        self.paused = False
        self._halt_msgs = 0
        self._idle = True
        self._last_sent = -np.inf   # when the last published command was computed (monotonic s)

    @property
    def proximity(self):
        """Return the distances the servo brakes for (collision.proximity.Proximity), or None."""
        return self._collisions.proximity if self._collisions is not None else None

    @property
    def settings(self):
        return self._settings

    @settings.setter
    def settings(self, settings):
        """Check and take ``settings`` with what derives from them, so a change at run time takes effect whole."""
        settings.check()
        self._jerk = jerk_limits(self.limits, settings.acceleration_ramp_time)
        self._ns = settings.nullspace.validate(self.chain) if settings.nullspace.active else None
        self._rows = np.array([0.0 if drift else 1.0 for drift in settings.drift_dimensions])
        self._settings = settings
        if self._collisions is not None:
            self._collisions.reset()

    def warm_up(self):
        """Compile the numba kernels of a Cartesian cycle now, so the first command is on time."""
        state, self.state = self.state, MotionState.at_rest(self.chain.mid_configuration())
        try:
            wanted = self._cartesian(np.full(6, 1e-3), np.eye(3))
            self._brake_at_margins(wanted)
            self._filter(self.state, wanted.velocity)
            if self._collisions is not None:
                self._avoid_collisions(wanted, 0.0)
                self._collisions.reset()
        finally:
            self.state = state

    # -- inputs ---------------------------------------------------------------------------------

    def command_problem(self, command):
        """Why ``command`` is refused, or None: a unitless component beyond 1 (MoveIt Servo skips those too).

        Unitless commands are fractions of ``scale.*``; a mapping that sends 5
        would otherwise silently ask for five times the configured speed.
        """
        if self.settings.command_in_type != 'unitless' or isinstance(command, PoseCommand):
            return None
        values = command.twist if isinstance(command, TwistCommand) else command.velocities
        worst = float(np.abs(np.nan_to_num(np.asarray(values, float))).max())
        if worst <= 1.0:
            return None
        return (f'unitless command component {worst:g} is beyond 1 (1 means scale.linear, scale.rotational or '
                'scale.joint; command_in_type speed_units takes m/s and rad/s)')

    def set_command(self, command, now):
        """Accept a TwistCommand, JointJogCommand or PoseCommand (already checked finite) at time ``now``."""
        self.command = command
        self.command_time = now

    @property
    def idle(self):
        """Whether the servo is at rest with no command (it publishes nothing until the next one)."""
        return self._idle

    def set_paused(self, paused):
        self.paused = bool(paused)

    def reset(self, state):
        """Start again from a measured state (at start, after a pause or when idle at rest)."""
        self.state = MotionState(np.array(state.position, float), np.zeros(self.chain.n), np.zeros(self.chain.n))
        if self._collisions is not None:
            self._collisions.reset()

    # -- the cycle ------------------------------------------------------------------------------

    def step(self, now, measured=None, state_error=None):
        """Compute this cycle's command.

        ``measured``: the latest joint state (MotionState) or None; ``state_error``:
        why it is unusable (stale, inconsistent), which halts the servo.
        Returns None until a first state is known.
        """
        if self.state is None:
            if measured is None or state_error:
                return None
            self.reset(measured)
        elif self.settings.follow_measured and measured is not None and not state_error:
            # a velocity-controlled arm integrates the commands itself: its positions are the truth
            self.state = MotionState(np.array(measured.position, float), self.state.velocity,
                                     self.state.acceleration)
        active = self._active(now)
        if state_error:
            wanted = _Wanted(np.zeros(self.chain.n), Status.STALE_STATE, f'halted: {state_error}')
        elif self.paused:
            wanted = _Wanted(np.zeros(self.chain.n), Status.PAUSED, 'paused')
        elif not active:
            wanted = _Wanted(np.zeros(self.chain.n), Status.STALE_COMMAND, 'no recent command: at rest or stopping')
        else:
            if self._idle and measured is not None and _moved(measured.position, self.state.position):
                if not self._reflects_last_command(measured):
                    return self._hold('waiting for joint_states: the arm may still be on its way to the last '
                                      'command; moving once a reading shows where it came to rest')
                self.reset(measured)  # moved by someone else while idle: start from where the arm is
            self._idle = False
            wanted = self._wanted(self.command)
        self._limit_velocity(wanted)
        self._brake_at_margins(wanted)
        if self._collisions is not None and self.settings.check_collisions and np.any(wanted.velocity):
            self._avoid_collisions(wanted, now)
        previous = self.state
        self.state = self._filter(previous, wanted.velocity)
        publish = self._should_publish(active and not self.paused and not state_error)
        if publish:
            self._last_sent = now
        return ServoOutput(previous, self.state, wanted.status, wanted.message, wanted.condition_number, wanted.scale,
                           publish)

    def _reflects_last_command(self, measured):
        """Whether a reading was taken FOLLOW_TIME after the last command was computed (``time`` None: now).

        Readings still in flight, or queued, when the arm came to rest, and those
        of an arm still catching up with its last commands (its controller held
        up), show it short of where they put it: restarting from one would jump
        back, a step for a forward_position controller and a command away from
        where the arm then is.
        """
        return measured.time is None or measured.time >= self._last_sent + FOLLOW_TIME

    def _hold(self, message):
        """Return a cycle that commands nothing: the idle servo keeps its state until the arm's is known."""
        return ServoOutput(self.state, self.state, Status.STALE_STATE, message, float('nan'), 0.0, False)

    def _active(self, now):
        if self.command is None:
            return False
        if isinstance(self.command, PoseCommand):
            return True  # a pose goal stays until reached or replaced
        return now - self.command_time <= self.settings.incoming_command_timeout

    def _should_publish(self, commanding):
        at_rest = not np.any(self.state.velocity) and not np.any(self.state.acceleration)
        if commanding or not at_rest:
            self._halt_msgs = 0
            return True
        self._idle = True
        limit = self.settings.num_outgoing_halt_msgs_to_publish
        self._halt_msgs += 1
        return limit == 0 or self._halt_msgs <= limit

    # -- wanted joint velocity ------------------------------------------------------------------

    def _wanted(self, command):
        if isinstance(command, JointJogCommand):
            return self._jog(command)
        if isinstance(command, PoseCommand):
            twist, reached = self._pose_twist(command.pose)
            if reached:
                self.command = None
                return _Wanted(np.zeros(self.chain.n), Status.NO_WARNING, 'pose target reached')
            return self._cartesian(twist, np.eye(3))
        s = self.settings
        twist = np.asarray(command.twist, float).copy()
        if s.command_in_type == 'unitless':
            twist[:3] *= s.scale_linear
            twist[3:] *= s.scale_rotational
        return self._cartesian(twist, self._frame_rotation(command.frame))

    def _jog(self, command):
        v = np.asarray(command.velocities, float)
        v = np.where(np.isfinite(v), v, 0.0)
        if self.settings.command_in_type == 'unitless':
            v = v * self.settings.scale_joint
        # jogs are not slowed near singularities (as MoveIt Servo), but the operator sees how near one they are
        condition = _condition(np.linalg.svd(self._jacobian(self.state.position), compute_uv=False))
        return _Wanted(v, condition_number=condition)

    def _frame_rotation(self, frame):
        if frame is None:
            return np.eye(3)
        if isinstance(frame, str):
            return self.chain.fk(self.state.position, frame)[:3, :3]
        return np.asarray(frame, float)

    def _pose_twist(self, target):
        s = self.settings
        T = self.chain.fk(self.state.position)
        dp = target[:3, 3] - T[:3, 3]
        dw = rotation_vector(target[:3, :3] @ T[:3, :3].T)
        reached = (np.linalg.norm(dp) < s.pose_position_tolerance
                   and np.linalg.norm(dw) < s.pose_orientation_tolerance)
        return np.concatenate([_clip_norm(s.pose_linear_gain * dp, s.pose_max_linear_speed),
                               _clip_norm(s.pose_angular_gain * dw, s.pose_max_angular_speed)]), reached

    def _cartesian(self, twist, R):
        """Joint velocity for a twist given in a frame of rotation R (in the base), with singularity scaling."""
        s = self.settings
        q = self.state.position
        J = self._jacobian(q)
        Jc = kin.goal_rows(J, np.ascontiguousarray(R), self._rows, 1)   # command frame (int: the kernels' type)
        secondary = self._nullspace_velocity(q, Jc, R) if self._ns is not None else 0.0
        twist_base = np.concatenate([R @ twist[:3], R @ twist[3:]])
        condition, scale, status = self._singularity_scale(q, J, twist_base)
        rows = self._rows > 0
        dq = adaptive_dls_step(np.ascontiguousarray(Jc[rows]), np.ascontiguousarray(twist[rows] * scale),
                               s.damping_max, s.epsilon) + secondary * scale
        message = {Status.NO_WARNING: '',
                   Status.DECELERATE_FOR_APPROACHING_SINGULARITY: 'slowing down toward a singularity',
                   Status.DECELERATE_FOR_LEAVING_SINGULARITY: 'moving away from a singularity',
                   Status.HALT_FOR_SINGULARITY: self._halt_message(condition)}[status]
        return _Wanted(dq, status, message, condition, scale, cartesian=True)

    def _halt_message(self, condition):
        s = self.settings
        leaving = s.hard_stop_singularity_threshold * s.leaving_singularity_threshold_multiplier
        if condition >= leaving:
            return (f'halted: condition number {condition:.0f} is past hard_stop_singularity_threshold x '
                    f'leaving_singularity_threshold_multiplier ({leaving:g}); no Cartesian command moves the arm '
                    'here: jog the joints out of the singularity')
        return (f'halted: too close to a singularity (condition number {condition:.0f}, hard stop '
                f'{s.hard_stop_singularity_threshold:g}); a command away from it moves the arm')

    def _jacobian(self, q):
        kin.frames(q, *self.chain.kin_args, self._R, self._p, self._a)
        kin.point_jacobian(self._p, self._a, self.chain.kind, self.chain.var, self.chain.mult, self._p[-1],
                           self.chain.kind.shape[0] - 1, self._J)
        return self._J.copy()

    def _singularity_scale(self, q, J, twist_base):
        """(condition number, velocity scale, status) as MoveIt Servo decides them, with a look-ahead.

        The least singular direction u points toward the singularity if moving
        along it raises the condition number (probed by a small joint step along
        the matching right singular vector); the motion approaches the
        singularity when the twist has a positive component along u.  Approaching,
        the scale is judged at the larger of the condition numbers now and where
        the arm would come to rest if it began braking now: deceleration is bounded
        by the acceleration limits, so braking begins early enough to end near the
        hard stop rather than past it.
        """
        s = self.settings
        U, sv, Vt = np.linalg.svd(J, full_matrices=False)
        condition = _condition(sv)
        ahead = self._stopping_condition(q)
        lower = s.lower_singularity_threshold
        if max(condition, ahead) <= lower:
            return condition, 1.0, Status.NO_WARNING
        toward = U[:, -1]
        probe = _condition(np.linalg.svd(self._jacobian(q + PROBE_STEP * Vt[-1]), compute_uv=False))
        if probe < condition:
            toward = -toward
        approaching = float(toward @ twist_base) > 0.0
        judged = max(condition, ahead) if approaching else condition
        if judged <= lower:
            return condition, 1.0, Status.NO_WARNING
        upper = s.hard_stop_singularity_threshold
        if not approaching:
            upper *= s.leaving_singularity_threshold_multiplier
        if judged >= upper:
            return condition, 0.0, Status.HALT_FOR_SINGULARITY
        scale = 1.0 - (judged - lower) / (upper - lower)
        status = (Status.DECELERATE_FOR_APPROACHING_SINGULARITY if approaching
                  else Status.DECELERATE_FOR_LEAVING_SINGULARITY)
        return condition, scale, status

    def _stopping_condition(self, q):
        """Condition number where the arm would stop if it braked now at its acceleration limits (q at rest)."""
        v = self.state.velocity
        if not np.any(v):
            return 1.0
        t = float(np.max(np.abs(v) / self.limits.acceleration) + np.max(self.limits.acceleration / self._jerk))
        return _condition(np.linalg.svd(self._jacobian(q + 0.5 * t * v), compute_uv=False))

    def _nullspace_velocity(self, q, Jc, R):
        """Return the core's bounded secondary-goal step as a velocity (needs the frames of q from ``_jacobian``)."""
        weights, q_pref, pole, elbow, offset = self._ns
        step = secondary_step(q, self.chain.kin_args, self.chain.lower, self.chain.upper, weights,
                              self.settings.nullspace.gain, q_pref, pole, elbow, offset, Jc,
                              np.ascontiguousarray(R), self._rows, 1, 1e-6, self._R, self._p, self._a)
        return self.settings.nullspace_gain * step

    # -- limits -----------------------------------------------------------------------------------

    def _limit_velocity(self, wanted):
        """Velocity limits: the whole vector scaled for Cartesian motion (keeps its direction), clipped for jogs."""
        v, vmax = wanted.velocity, self.limits.velocity
        if wanted.cartesian:
            ratio = np.max(np.abs(v) / vmax)
            if ratio > 1.0:
                wanted.velocity = v / ratio
        else:
            wanted.velocity = np.clip(v, -vmax, vmax)

    def _brake_at_margins(self, wanted):
        """Cap the velocity toward a limit so the joint can stop at ``joint_limit_margin`` from it.

        The cap is the speed from which braking at half the acceleration limit,
        after a ramp of the deceleration at the jerk limit, stops within the
        distance d to the margin (v^2 / 2a + v t_ramp / 2 = d), and never more
        than d / period, so a joint does not step past the margin.  A Cartesian motion is scaled as
        a whole (it keeps its direction and stops when one joint is bound).
        """
        s = self.settings
        v = wanted.velocity
        cap = _margin_caps(self.state.position, v, self.limits.lower, self.limits.upper, s.joint_limit_margin,
                           self.limits.acceleration, self._jerk, s.publish_period)
        speed = np.abs(v)
        bound = speed > cap
        if not np.any(bound):
            return
        names = ', '.join(self.limits.names[i] for i in np.flatnonzero(bound))
        if wanted.cartesian:
            wanted.velocity = v * float(np.min(cap[bound] / speed[bound]))
        else:
            wanted.velocity = np.where(bound, np.sign(v) * cap, v)
        if wanted.status in (Status.NO_WARNING, Status.DECELERATE_FOR_LEAVING_SINGULARITY):
            wanted.status = Status.JOINT_BOUND
            wanted.message = f'near the limit margin: {names}'

    def _avoid_collisions(self, wanted, now):
        """Scale the wanted velocity so that braking stops the arm before any contact it closes on.

        The distances are those at the state commanded next if the velocity held
        (the filter changes it by at most an acceleration step).
        """
        s = self.settings
        ahead = self.state.position + self.state.velocity * s.publish_period
        k, pair, distance = self._collisions.scale(ahead, wanted.velocity, s, self.limits, self._jerk, now)
        if k >= 1.0:
            return
        wanted.velocity = wanted.velocity * k
        wanted.scale *= k
        if k > 0.0:
            wanted.status = Status.DECELERATE_FOR_COLLISION
            wanted.message = f'slowing down: {pair[0]} closing on {pair[1]} ({1e3 * distance:.1f} mm apart)'
            return
        padding = self._collisions.proximity.padding
        wanted.status = Status.HALT_FOR_COLLISION
        wanted.message = (f'halted: {pair[0]} and {pair[1]} are {1e3 * distance:.1f} mm apart, at the padding '
                          f'({1e3 * padding:g} mm); a command away from the contact moves the arm')

    def _filter(self, state, v_target):
        """Next commanded state: velocity toward ``v_target`` with bounded acceleration and jerk.

        The acceleration wanted to reach the target in one period is capped per
        joint by the limit and by the largest one from which a ramp down at the
        jerk limit still lands on the target (k steps of j dt each cover
        j dt^2 k (k + 1) / 2), and scaled as one vector so that the joints keep
        their proportions; its change is then limited by the jerk, again as one
        vector.  So the velocity settles on the target without overshoot.
        """
        q, v, a = _filter_step(state.position, state.velocity, state.acceleration, np.asarray(v_target, float),
                               self.settings.publish_period, self.limits.acceleration, self._jerk)
        return MotionState(q, v, a)


def jerk_limits(limits, ramp_time):
    """Jerk limit per joint the servo keeps: the limits' own where given, else acceleration / ``ramp_time``."""
    return np.where(np.isfinite(limits.jerk), limits.jerk, limits.acceleration / ramp_time)


def warm_up_kernels():
    """Load the kernels only the servo calls (numba, from the kernel cache); ``scripts/setup.sh`` compiles them.

    ``Servo.warm_up`` runs a cycle of the servo it is called on; this one runs it for a servo with every
    secondary goal on the solver's warm-up chain (the kernels' types do not depend on the robot), so a set-up
    leaves no servo kernel to compile at a servo's start, whatever its goals.
    """
    from ..core.warmup import warm_up_chain, warm_up_goals   # the warm-up machinery, which no kernel uses
    chain = warm_up_chain()
    n = chain.n
    limits = JointLimits(tuple(chain.joint_names), chain.lower, chain.upper, chain.velocity_limits, np.ones(n),
                         np.full(n, np.inf))
    Servo(chain, limits, ServoSettings(nullspace=warm_up_goals())).warm_up()


@njit(cache=True, error_model='numpy')
def _margin_caps(q, v, lower, upper, margin, acceleration, jerk, period):
    """Per joint, the largest speed toward its limit from which it stops at ``margin`` (Servo._brake_at_margins)."""
    cap = np.empty(q.shape[0])
    for i in range(q.shape[0]):
        room = (upper[i] - margin) - q[i] if v[i] > 0 else q[i] - (lower[i] + margin)
        room = max(room, 0.0) if np.isfinite(room) else np.inf
        brake = 0.5 * acceleration[i]
        ramp = brake / jerk[i] + period   # time to build up the braking deceleration
        cap[i] = min(brake * (np.sqrt(0.25 * ramp * ramp + 2.0 * room / brake) - 0.5 * ramp), room / period)
    return cap


@njit(cache=True, error_model='numpy')
def _filter_step(q, v, a, v_target, dt, acceleration, jerk):
    """(positions, velocities, accelerations) after one step of Servo._filter (one kernel: it runs every cycle)."""
    n = q.shape[0]
    a_want = (v_target - v) / dt
    scale = 1.0   # largest s in [0, 1] with s |a_want| within the per-joint caps
    for i in range(n):
        x = abs(v_target[i] - v[i]) / (jerk[i] * dt * dt)
        steps = 4.0 * x / (np.sqrt(1.0 + 8.0 * x) + 1.0)  # (sqrt(1 + 8x) - 1) / 2 without cancellation
        scale = _fraction(abs(a_want[i]), min(acceleration[i], steps * jerk[i] * dt), scale)
    da = a_want * scale - a
    ramp = 1.0    # the same for the change of acceleration, within the jerk limit
    for i in range(n):
        ramp = _fraction(abs(da[i]), jerk[i] * dt, ramp)
    a_new = a + da * ramp
    v_new = v + a_new * dt
    return q + v_new * dt, v_new, a_new


@njit(cache=True, error_model='numpy')
def _fraction(size, cap, fraction):
    """Return the smaller of ``fraction`` and the largest s with s * size <= cap (size above cap only)."""
    return min(fraction, cap / size) if size > cap else fraction


def _moved(measured, commanded):
    return bool(np.max(np.abs(np.asarray(measured) - commanded)) > RESYNC_TOLERANCE)


def _condition(singular_values):
    smallest = singular_values[-1]
    if smallest <= singular_values[0] / MAX_CONDITION:
        return MAX_CONDITION
    return float(singular_values[0] / smallest)


def _clip_norm(v, limit):
    norm = np.linalg.norm(v)
    return v * (limit / norm) if norm > limit else v
