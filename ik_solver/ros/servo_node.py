"""ik_servo_node: real-time teleoperation (twists, joint jogs, moving pose goals) as MoveIt Servo does it.

The per-cycle maths is ``motion.servo.Servo`` (no ROS); this node is wiring
around it, made of the parts the IK node uses: the robot model
(``ModelSource``), the joint-state checks (``JointStateTracker``), target
frames (``TargetFrames``), the limits (``load_limits``), the parameter
table machinery (``ParameterSet``) and the one ``CommandGuard`` every
outgoing command crosses.

Inputs: ``~/delta_twist_cmds`` (TwistStamped in the base, any robot link, or a
tf2 frame), ``~/delta_joint_cmds`` (control_msgs/JointJog where importable, else
sensor_msgs/JointState with names and velocities), ``~/pose_target``
(PoseStamped) and ``~/pause`` (std_srvs/SetBool).  A fixed-rate loop (its own
thread with monotonic deadlines, or a timer in its own callback group) runs one
servo cycle per ``publish_period`` and publishes a Float64MultiArray (positions
or velocities, chain order) or a one-point JointTrajectory on
``command_out_topic``, with its state on ``~/status`` and ``/diagnostics``.
The loop thread (``ServoLoop``, ros/servo_loop.py: its schedule, late cycles and
publication on the tick) takes the command and joint_states subscriptions
itself (``LoopInputs``), between its cycles: the executor's Python per message
held the interpreter lock the loop needed on its tick.

With a collision model (the IK node's sources: the robot's URDF and
``srdf_file``, ``scene_file``, objects added on ``~/collision_objects``) and
``check_collisions`` set, each cycle brakes a command that closes on a contact
so that the arm stops before ``collision_padding`` (``motion.servo_collision``):
DECELERATE_FOR_COLLISION and HALT_FOR_COLLISION name the pair.  The distance
queries run in the loop's own cycle at ``collision_check_rate``: Coal holds the
interpreter lock, so a thread of their own would stall the loop as long.

joint_states are believed only as ``motion.plausibility`` judges them (form,
limits, stamps, continuity within the arm's limits, a run of consistent
readings after a pause) and where the commands sent can have put the arm
(``FOLLOW_TIME``, parameter ``tracking_error``, ``EXPECTATION_HOLD``); a refusal halts the servo with its
reason in the status (STALE_STATE while readings are old or settling, INVALID
for a reading that contradicts the arm's motion or the commands: a lie, or a
controller that does not execute the commands).  An idle servo restarts from
the measured state only when it lies beyond ``state_tolerance`` of its own
and its last believed readings agree (``STEADY_TIME``), so a lie
interleaved with the true readings never becomes the start of a motion.
"""
from array import array
from collections import deque
import threading
import time

from geometry_msgs.msg import Pose, PoseStamped, TwistStamped
from ik_solver_interfaces.msg import ServoStatus
import numpy as np
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import MarkerArray

from .cpu_latency import hold_cpu_latency
from .diagnostics import DiagnosticsPublisher
from .joint_states import JointStateTracker, StateError
from .loop_inputs import LoopInputs
from .messages import to_duration
from .model_source import ModelSource
from .parameters import load_limits, move_limits, package_file, ParameterSet
from .servo_loop import ServoLoop, wait_until
from .servo_parameters import (FLOAT64_MULTI_ARRAY, JOINT_JOG, JOINT_STATE, model_arguments, SERVO_PARAMETERS,
                               settings_from)
from .spin import RealTimeExecutor, run_node
from .target_frames import FrameError, TargetFrames
from ..collision.backlog import MarkerBacklog
from ..core.exceptions import ModelError
from ..motion.command_guard import CommandGuard
from ..motion.plausibility import Expectation, Verdict
from ..motion.servo import FOLLOW_TIME, JointJogCommand, PoseCommand, RESYNC_TOLERANCE, Servo, Status
from ..motion.servo import TwistCommand

try:  # optional: not on PyPI
    from control_msgs.msg import JointJog
except ImportError:
    JointJog = None

#: Streamed commands: newest only; a best-effort subscription also matches reliable publishers.
COMMAND_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
#: Diagnostic level of each status (0 OK, 1 WARN, 2 ERROR).
LEVELS = {Status.NO_WARNING: 0, Status.STALE_COMMAND: 0, Status.PAUSED: 0, Status.JOINT_BOUND: 1,
          Status.DECELERATE_FOR_APPROACHING_SINGULARITY: 1, Status.DECELERATE_FOR_LEAVING_SINGULARITY: 1,
          Status.HALT_FOR_SINGULARITY: 1, Status.DECELERATE_FOR_COLLISION: 1, Status.HALT_FOR_COLLISION: 1,
          Status.STALE_STATE: 2, Status.INVALID: 2}
#: One-point trajectories reach their point this many periods after they are sent: the controller interpolates
#: from where it is, so a late message does not make it hurry to catch up (one period more of lag).
TRAJECTORY_LEAD = 2.0
#: After the last command [s], readings must still lie where the commands left the arm; afterwards another
#: controller may move it, and only continuity within the limits is checked.
EXPECTATION_HOLD = 1.0
#: Commands kept for the expectation (FOLLOW_TIME at the shortest publish_period, with room).
SENT_KEPT = 512
#: An idle servo restarts from the measured state only when the believed readings taken over this time [s]
#: before the newest (at least two, over at least half of it) agree within half of RESYNC_TOLERANCE.  The arm
#: reaches a command within FOLLOW_TIME (plus TRAJECTORY_LEAD periods for trajectories): a reading at instant t
#: lies among the positions commanded over that time before t.
STEADY_TIME = 0.05
#: Refusals of joint_states that mean a lie or an arm not following the commands (INVALID), not staleness.
CONTRADICTIONS = {Verdict.MALFORMED, Verdict.NOT_FINITE, Verdict.FUTURE_STAMP, Verdict.OUT_OF_ORDER,
                  Verdict.OUTSIDE_LIMITS, Verdict.VELOCITY_BEYOND_LIMIT, Verdict.JUMPED, Verdict.OFF_COMMAND}
#: Status messages are published when the code changes, else at this period [s] (not every cycle at 500 Hz).
STATUS_PERIOD = 0.02


class ServoNode(Node):
    """The servo node; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__('ik_servo', **kwargs)
        self._lock = threading.Lock()
        self._loop = None         # ServoLoop (loop 'thread') or the rclpy timer of the cycles
        self._servo = None
        self._guard = None
        self._model = None
        self._world = None        # CollisionWorld of the model, or None
        self._last_status = (None, 0.0)
        self._last_output = None
        self._cycle_times = []
        self._sent = deque(maxlen=SENT_KEPT)     # (monotonic time, commanded positions) of published commands
        self._believed = deque()                 # (instant taken, positions) of the believed readings
        self._command_msg = Float64MultiArray()   # reused: one message built per cycle costs more than the data
        self.params = ParameterSet(self, SERVO_PARAMETERS, validate=self._validate, on_change=self._on_parameters)
        p = self.params
        threaded = p['loop'] == 'thread'
        self._inputs = LoopInputs(self) if threaded else None
        inputs = self._inputs.group if threaded else MutuallyExclusiveCallbackGroup()
        self.joint_states = JointStateTracker(self, p['joint_states_topic'], p['joint_states_timeout'],
                                              callback_group=inputs, tolerance=p['state_tolerance'])
        self.frames = TargetFrames(self)
        self.model_source = ModelSource(self, p['base_link'], p['tip_link'], self._use_model,
                                        **model_arguments(p, self.get_logger()))
        self._publisher = self._make_output(p)
        self.status_pub = self.create_publisher(ServoStatus, '~/status', 10)
        self.create_subscription(TwistStamped, '~/delta_twist_cmds', self._on_twist, COMMAND_QOS,
                                 callback_group=inputs)
        self._subscribe_joint_commands(p['joint_command_in_type'], inputs)
        self.create_subscription(PoseStamped, '~/pose_target', self._on_pose, COMMAND_QOS, callback_group=inputs)
        self.create_service(SetBool, '~/pause', self._on_pause)
        self._markers = MarkerBacklog()
        self.create_subscription(MarkerArray, '~/collision_objects', self._on_collision_objects, 10)
        self.diagnostics = DiagnosticsPublisher(self, 'ik_servo', self._hardware_id(), self._diagnostic_status)
        period = p['publish_period']
        if threaded:
            self._loop = ServoLoop(self._cycle, self._inputs, self._lock, self.get_logger(), period,
                                   p['thread_priority'])
            self._loop.start()
        else:
            self._loop = self.create_timer(period, self._cycle, callback_group=MutuallyExclusiveCallbackGroup())
        self._cpu_latency = hold_cpu_latency(p['cpu_wake_latency'], self.get_logger())   # last: nothing fails after

    # -- set-up -----------------------------------------------------------------------------------

    def _make_output(self, p):
        msg_type = Float64MultiArray if p['command_out_type'] == FLOAT64_MULTI_ARRAY else JointTrajectory
        return self.create_publisher(msg_type, p['command_out_topic'], 10)

    def _subscribe_joint_commands(self, kind, group):
        if kind == 'auto':
            kind = JOINT_JOG if JointJog is not None else JOINT_STATE
        if kind == JOINT_JOG and JointJog is None:
            self.get_logger().error('control_msgs is not installed: ~/delta_joint_cmds takes sensor_msgs/JointState')
            kind = JOINT_STATE
        msg_type = JointJog if kind == JOINT_JOG else JointState
        self.create_subscription(msg_type, '~/delta_joint_cmds', self._on_joint_jog, COMMAND_QOS, callback_group=group)
        self.get_logger().info(f'~/delta_joint_cmds takes {kind}')

    def _use_model(self, model):
        """Limits, servo and guard for a model (ModelSource's on_model); ValueError if the parameters do not fit."""
        p = self.params
        loaded = load_limits(p.values, model.chain, self.get_logger())
        limits = move_limits(loaded, p.values)
        world = self._collision_world(model)
        proximity = _proximity(world)
        servo = Servo(model.chain, limits, settings_from(p.values, model.chain), proximity)
        servo.warm_up()
        with self._lock:
            self._model, self._servo, self._guard, self._world = model, servo, CommandGuard(limits), world
            self._sent.clear()
        # the arm's own limits bound what it can have done (the scaled ones bound only our commands)
        self.joint_states.configure(loaded.limits, expect=self._expected_at)

    def _collision_world(self, model):
        """Return the CollisionWorld of the collision parameters (as the IK node's), or None without one."""
        p = self.params
        try:
            from ..collision.world import collision_from_parameters
        except ImportError as exc:  # Pinocchio/Coal missing
            self.get_logger().warning(f'collision checking unavailable ({exc}): commands are not checked')
            return None
        try:
            world = collision_from_parameters(
                model.description, model.chain, package_file(p['srdf_file']), package_file(p['scene_file']),
                [d for d in p['package_dirs'] if d], p['collision_padding'], p['skip_missing_meshes'],
                p['collision_convex'], xacro_args=model_arguments(p, self.get_logger())['xacro_args'],
                robot_name=model.robot.name, expanded=model.urdf or None)
        except (OSError, ModelError) as exc:
            raise ValueError(f'collision model: {exc}') from None
        if world is None:
            self.get_logger().info('the robot has no collision geometry: collisions are not checked')
            return None
        for note in world.model.notes:
            self.get_logger().warning(f'collision model: {note}')
        when = '' if p['check_collisions'] else ' once check_collisions is set'
        rate = p['collision_check_rate']
        self.get_logger().info(f'collision model: {len(world.obstacles)} world objects, distances queried at '
                               f'{rate:g} Hz{when}')
        return world

    def _on_collision_objects(self, msg):
        """Add, replace or delete world objects (MarkerArray in any frame tf2 resolves into the base link)."""
        if not self._markers.add(msg.markers):
            return
        markers, dropped = self._markers.take()
        world, model = self._world, self._model
        if world is None:
            self.get_logger().warning('collision_objects ignored: no collision model loaded')
            return
        if dropped:
            self.get_logger().warning(f'collision_objects: {dropped} marker actions were overtaken by newer ones '
                                      'before they were applied', throttle_duration_sec=2.0)

        def lookup(frame):
            return self.frames.lookup(model.chain.base_link, frame)

        try:
            problems = world.apply_markers(markers, lookup)
        except Exception as exc:  # a message must never take the node down
            problems = [f'unexpected error: {exc!r}']
        for problem in problems:
            self.get_logger().warning(f'collision_objects: {problem}')
        with self._lock:   # the loop's next query finds the new world ready
            if self._servo is not None and self._servo.proximity is not None:
                self._servo.proximity.refresh()

    def _validate(self, values):
        try:
            settings_from(values, self._model.chain if self._model is not None else None)
        except ValueError as exc:
            return str(exc)
        return None

    def _on_parameters(self, names):
        with self._lock:
            if self._servo is not None:
                self._servo.settings = settings_from(self.params.values, self._model.chain)
        self.joint_states.timeout = self.params['joint_states_timeout']
        self.joint_states.tolerance = self.params['state_tolerance']

    def _hardware_id(self):
        model = self._model
        return model.name if model is not None else self.params['tip_link']

    # -- inputs -----------------------------------------------------------------------------------

    def _on_twist(self, msg):
        t, w = msg.twist.linear, msg.twist.angular
        twist = np.array([t.x, t.y, t.z, w.x, w.y, w.z], float)
        if not np.isfinite(twist).all():
            self.get_logger().error(f'twist refused: NaN or inf in {twist.tolist()}', throttle_duration_sec=1.0)
            return
        try:
            frame = self._twist_frame(msg)
        except (FrameError, ValueError) as exc:
            self.get_logger().error(f'twist refused: {exc}', throttle_duration_sec=1.0)
            return
        self._command(TwistCommand(twist, frame))

    def _twist_frame(self, msg):
        """Frame of a twist for the servo: None (base), a chain link (followed every cycle) or a 3x3 rotation."""
        model = self._model
        frame = msg.header.frame_id.lstrip('/')
        if model is None or frame in ('', model.chain.base_link):
            return None
        if frame in model.chain.link_frames:
            return frame
        identity = PoseStamped(header=msg.header, pose=Pose())
        identity.pose.orientation.w = 1.0
        T = self.frames.resolve(identity, model, self.joint_states.positions_at, 0.0)
        return T[:3, :3]

    def _on_joint_jog(self, msg):
        model = self._model
        if model is None:
            return
        names = list(msg.joint_names) if hasattr(msg, 'joint_names') else list(msg.name)
        velocities = list(msg.velocities) if hasattr(msg, 'velocities') else list(msg.velocity)
        reason = _jog_problem(names, velocities, model.chain.joint_names)
        if reason:
            self.get_logger().error(f'joint jog refused: {reason}', throttle_duration_sec=1.0)
            return
        jog = np.full(model.chain.n, np.nan)
        for name, v in zip(names, velocities):
            jog[model.chain.joint_names.index(name)] = v
        self._command(JointJogCommand(jog))

    def _on_pose(self, msg):
        model = self._model
        if model is None:
            return
        try:
            T = self.frames.resolve(msg, model, self.joint_states.positions_at, 0.0)
        except (FrameError, ValueError) as exc:
            self.get_logger().error(f'pose target refused: {exc}', throttle_duration_sec=1.0)
            return
        self._command(PoseCommand(T))

    def _command(self, command):
        """Hand a command to the servo; an idle servo computes and publishes its first step right here.

        The loop then runs on from this cycle's phase: the loop thread (which took
        the command) runs its next cycle one period after this one; a timer is reset.
        """
        with self._lock:
            if self._servo is None:
                return
            problem = self._servo.command_problem(command)
            if problem:
                self.get_logger().error(f'command refused: {problem}', throttle_duration_sec=1.0)
                return
            now = time.monotonic()
            self._servo.set_command(command, now)
            if not self._servo.idle:
                return
            self._step(now)
            if isinstance(self._loop, ServoLoop):
                self._loop.kick(now)   # seen by the loop at its next tick
            else:
                self._loop.reset()    # a timer counts its period from now

    def _on_pause(self, request, response):
        with self._lock:
            if self._servo is not None:
                self._servo.set_paused(request.data)
        response.success = self._servo is not None
        response.message = ('paused' if request.data else 'resumed') if response.success else 'no robot model yet'
        return response

    # -- the cycle ------------------------------------------------------------------------------

    def _cycle(self, tick=None):
        """Run the loop's cycle, unless a command ran one since the loop last looked: return that one's time, or None.

        ``tick``: the cycle's time, its command published no earlier (None: now, a timer's cycle).
        """
        with self._lock:
            restart = self._loop.take_kick() if isinstance(self._loop, ServoLoop) else None
            if restart is None:
                now = time.monotonic()
                self._step(now if tick is None else max(now, tick), tick)
        return restart

    def _step(self, now, publish_at=None):
        """Run one servo cycle at ``now`` and publish its command and status (called with ``_lock`` held).

        The command is published no earlier than monotonic ``publish_at`` (None: at once).
        """
        try:
            self._servo_cycle(now, publish_at)
        except Exception as exc:  # the loop must never die from one cycle
            self.get_logger().error(f'servo cycle failed: {exc!r}', throttle_duration_sec=1.0)

    def _servo_cycle(self, now, publish_at):
        self._cycle_times.append(now)
        del self._cycle_times[:-1000]
        servo, guard, model = self._servo, self._guard, self._model
        if servo is None:
            return
        measured, error = self._measured(model, now)
        problem = _describe(error)
        if servo.idle and self._away(measured) and not self._steady():
            # Believed, yet not where the idle servo's state is: a command from that state could step the arm
            # by the difference; wait until the readings are steady, then restart from them.
            return self._publish_status(Status.STALE_STATE, 'waiting for joint_states: the arm is away from the '
                                        'last command; restarting from it once its readings are steady',
                                        np.nan, 0.0, now)
        usable = measured if servo.state is None or not servo.idle or self._away(measured) else None
        output = servo.step(now, usable, problem)
        code = Status.INVALID if error is not None and error.verdict in CONTRADICTIONS else None
        if output is None:
            return self._publish_status(code or Status.STALE_STATE, f'waiting for joint_states: {problem}', np.nan,
                                        0.0, now)
        reasons = guard.check_step(output.previous, output.state.position, output.state.velocity,
                                   servo.settings.publish_period) if output.publish else []
        if reasons:
            servo.state = output.previous
            self.get_logger().error('servo command refused by the guard: ' + '; '.join(reasons),
                                    throttle_duration_sec=1.0)
            return self._publish_status(Status.INVALID, '; '.join(reasons), output.condition_number, 0.0, now)
        if output.publish:
            wait_until(publish_at)
            self._publish_command(model.chain.joint_names, output.state)
            self._sent.append((time.monotonic(), output.state.position.copy()))
        self._last_output = output
        self._publish_status(code or output.status, output.message, output.condition_number, output.velocity_scale,
                             now)

    def _measured(self, model, now):
        """Return (believed MotionState, None) or (None, StateError); remember each believed reading once.

        Readings are kept by the instant they were taken, not by the cycle that
        found them: a reading that stays the newest while no other comes (a
        driver held up) is one piece of evidence, however many cycles see it.
        """
        c = model.chain
        try:
            state = self.joint_states.state(c.joint_names, c.lower, c.upper)
        except StateError as exc:
            self._believed.clear()
            return None, exc
        taken = now if state.time is None else state.time
        if not self._believed or taken > self._believed[-1][0]:
            self._believed.append((taken, state.position))
        while len(self._believed) > 2 and self._believed[0][0] < taken - STEADY_TIME:
            self._believed.popleft()
        return state, None

    def _away(self, measured):
        """Tell whether believed ``measured`` lies beyond ``state_tolerance`` of the servo's own state."""
        state = self._servo.state
        return not (measured is None or state is None
                    or np.abs(measured.position - state.position).max() <= self.params['state_tolerance'])

    def _steady(self):
        """Tell whether the believed readings of the last STEADY_TIME (at least the last two) agree.

        A lie interleaved with the true readings, believed now and then, makes them alternate, and one reading
        that stays the newest (its driver held up) says nothing of where the arm went since: an idle servo
        restarts from a measured state only once distinct readings over half of STEADY_TIME or more agree.
        """
        if len(self._believed) < 2 or self._believed[-1][0] - self._believed[0][0] < 0.5 * STEADY_TIME:
            return False
        positions = np.array([q for _, q in self._believed])
        return bool((positions.max(axis=0) - positions.min(axis=0)).max() <= 0.5 * RESYNC_TOLERANCE)

    def _expected_at(self, at):
        """Return where the commands sent can have put the arm at monotonic ``at`` (an Expectation), or None.

        Called by the joint-state tracker for each reading (any thread): between
        the positions commanded over the FOLLOW_TIME (and trajectory lead) before
        ``at``, and the last one before those.  None before the first command kept
        and EXPECTATION_HOLD after the last.
        """
        sent = list(self._sent)
        if not sent or at < sent[0][0] or at - sent[-1][0] > EXPECTATION_HOLD:
            return None
        follow = FOLLOW_TIME + TRAJECTORY_LEAD * self.params['publish_period']
        positions = []
        for t, q in reversed(sent):
            if t > at:
                continue
            positions.append(q)
            if t < at - follow:
                break
        positions = np.array(positions)
        error = self.params['tracking_error']
        return Expectation(positions.min(axis=0) - error, positions.max(axis=0) + error)

    def _publish_command(self, names, state):
        values = state.velocity if self.params['command_out_kind'] == 'velocity' else state.position
        if self.params['command_out_type'] == FLOAT64_MULTI_ARRAY:
            self._command_msg.data = array('d', values)
            self._publisher.publish(self._command_msg)
            return
        # positions only: JTC refuses a last point with velocities unless allow_nonzero_velocity_at_trajectory_end
        point = JointTrajectoryPoint(positions=array('d', state.position),
                                     time_from_start=to_duration(TRAJECTORY_LEAD * self.params['publish_period']))
        if self.params['command_out_kind'] == 'velocity':
            point.velocities = array('d', state.velocity)
        self._publisher.publish(JointTrajectory(joint_names=list(names), points=[point]))

    def _publish_status(self, code, message, condition, scale, now):
        last_code, last_time = self._last_status
        if code == last_code and now - last_time < STATUS_PERIOD:
            return
        self._last_status = (code, now)
        msg = ServoStatus(code=int(code), message=message, condition_number=float(condition),
                          velocity_scale=float(scale))
        msg.header.stamp = self.get_clock().now().to_msg()
        self.status_pub.publish(msg)

    def _diagnostic_status(self):
        code, _ = self._last_status
        output = self._last_output
        period = np.diff(self._cycle_times[-200:]) * 1e3 if len(self._cycle_times) > 2 else np.array([np.nan])
        values = {'status': Status(code).name if code is not None else 'STARTING',
                  'condition_number': output.condition_number if output else None,
                  'velocity_scale': output.velocity_scale if output else None,
                  'cycle_period_p50_ms': float(np.median(period)),
                  'cycle_period_max_ms': float(np.max(period)),
                  'joint_states_age_s': self.joint_states.age()}
        level = LEVELS.get(code, 1) if code is not None else 1
        message = output.message if output is not None and output.message else values['status']
        return level, message, values

    def destroy_node(self):
        if isinstance(self._loop, ServoLoop):
            self._loop.stop(timeout=1.0)
        if hasattr(self, 'model_source'):
            self.model_source.close()
        if hasattr(self, '_cpu_latency'):
            self._cpu_latency.release()
        return super().destroy_node()


def _proximity(world):
    """Return the servo's Proximity of a CollisionWorld, or None (Pinocchio is imported only with a world)."""
    if world is None:
        return None
    from ..collision.proximity import Proximity
    return Proximity(world.model)


def _describe(error):
    """Return the servo's text for a refused joint state (StateError or None)."""
    if error is None:
        return None
    if error.verdict == Verdict.OFF_COMMAND:
        return ('joint_states refused: the arm is not where the commands put it (a false reading, or commands '
                f'the controller did not execute): {error}')
    return f'joint_states refused: {error}' if error.verdict in CONTRADICTIONS else str(error)


def _jog_problem(names, velocities, joints):
    """Why a jog message is refused, or None."""
    if len(names) != len(velocities):
        return f'{len(names)} joint names but {len(velocities)} velocities'
    unknown = [n for n in names if n not in joints]
    if unknown:
        return f'unknown joint(s) {", ".join(unknown)}'
    if len(set(names)) != len(names):
        return 'duplicate joint names'
    if not np.isfinite(np.asarray(velocities, float)).all():
        return 'NaN or inf velocity'
    return None


def servo_executor():
    """Return the servo's executor: its thread and the middleware's under SCHED_FIFO below the loop thread.

    The loop thread needs the interpreter lock that the executor thread holds while it runs a callback;
    under normal scheduling, other processes' load delays that thread while it holds the lock, and the
    real-time loop waits behind it.  The middleware's threads hold the locks a publication takes.  So the
    executor runs one below the loop (``thread_priority - 1``) and the middleware's threads two below
    (``spin.RealTimeExecutor``), with ``loop: thread`` only: a timer loop runs on the executor itself.
    """
    return RealTimeExecutor(_loop_priority)


def _loop_priority(node):
    """Return the SCHED_FIFO priority of a servo's loop thread, 0 for a timer loop or another node."""
    if isinstance(node, ServoNode) and node.params['loop'] == 'thread':
        return node.params['thread_priority']
    return 0


def main(args=None):
    # One executor thread is enough (with loop 'thread' it has only the pause service, parameters and
    # diagnostics; the loop thread takes commands and readings) and leaves the loop the GIL: rclpy's
    # MultiThreadedExecutor here took ~90 % of a core at 100 Hz in wait-set bookkeeping and stretched cycles to 50 ms.
    return run_node(ServoNode, args, executor=servo_executor)


if __name__ == '__main__':
    main()
