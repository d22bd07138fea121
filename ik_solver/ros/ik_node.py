"""ik_solver_node: target poses in, guarded joint_trajectory_controller commands out, IK services.

The node is wiring around shared parts (model source, joint-state tracking,
target frames, the command guard, outcome reporting) plus one flow: a target
is resolved in the base link at its stamp, solved from the controller's current
state, timed by Ruckig within the joint limits, checked by the command guard and
sent.  Every target, request and path ends in exactly one ``~/status``.

Concurrency: the node spins on a single-threaded executor (``main``); targets are
kept in a one-slot mailbox (newest wins, the dropped ones counted as superseded),
and solving and commanding (targets, ``~/solve``, ``~/plan_path``, MoveIt's
``compute_ik``, world updates) run one at a time on a Worker thread, so joint
states, ``~/compute_fk`` and the parameter services answer during a solve.
"""
from dataclasses import dataclass, field, replace
from functools import partial
import threading
import time

from geometry_msgs.msg import PoseStamped
from ik_solver_interfaces.srv import ComputeFK, PlanPath, SolveIK
import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from visualization_msgs.msg import MarkerArray

from . import graph_features
from .command_guard import CommandGuard, expired, LATE, send_trajectory
from .controller import ControllerInterface
from .joint_states import CommandHistory, JointStateTracker, received_monotonic, StateError
from .messages import joint_positions, joint_state, matrix_to_pose, pose_to_matrix, trajectory_message, \
    vector_from
from .model_source import ModelSource
from .outcome import Outcome, OutcomeReporter
from .parameters import check_all, check_workspace_change, checked_xacro_args, is_set, load_limits, \
    move_limits, package_file, PARAMETERS, ParameterSet, request_overrides, solver_options, workspace_box
from .spin import run_node
from .target_frames import FrameError, TargetFrames
from .worker import Worker
from ..collision.backlog import MarkerBacklog
from ..core.exceptions import ModelError
from ..core.nullspace import manipulability
from ..core.solver import IKSolver
from ..core.warmup import warm_up
from ..motion import guard as motion_guard
from ..motion.cartesian import cartesian_path
from ..motion.limits import MotionState
from ..motion.plausibility import PAUSE, PlausibilitySettings, StatePlausibility
from ..motion.timing import plan_joint_path, plan_move

#: Streamed targets: best effort, newest only.  A RELIABLE subscription made fast publishers
#: block and fail ("cannot publish data"); a queue would act on old targets.
TARGET_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                        durability=DurabilityPolicy.VOLATILE)
#: How often a target waiting for the model or a first joint state is looked at again [s].
WAIT_PERIOD = 0.02
#: Cartesian step of a path when the request leaves max_step at 0 [m] (MoveIt's usual 1 cm).
PATH_STEP = 0.01
#: A controller's reference is a setpoint: between two of its messages it moves only as the limits allow, within
#: this [rad or m] (a lie of 0.05 rad interleaved with the true reference is then refused).
REFERENCE_TOLERANCE = 0.01
#: Waypoints a PlanPath request may carry, counted before any is resolved.
MAX_WAYPOINTS = 1000
#: After start, how long discovery gets before the graph is searched for a node with our name [s].
NAME_CHECK_DELAY = 3.0


def reason_code(reason):
    """SolveIK.Response code of a reason name ('success', 'joint_jump', ...)."""
    return getattr(SolveIK.Response, reason.upper(), SolveIK.Response.INVALID_INPUT)


class SolveError(Exception):
    """An input that cannot be solved: carries a reason name and a message."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Context:
    """Everything that belongs to one robot model: replaced as a whole when the model or a parameter changes."""

    model: object                  # RobotModel
    solver: IKSolver
    limits: object                 # LoadedLimits (the full limits)
    guard: CommandGuard            # with the scaled limits a move may use
    history: CommandHistory
    controller: object
    world: object = None           # CollisionWorld, or None when the robot has no collision geometry
    variants: dict = field(default_factory=dict, compare=False)  # {avoid collisions: Context}, built on demand


@dataclass
class _Pending:
    msg: PoseStamped
    arrival: float                 # monotonic
    waited: bool = False           # it waited for the model or a first joint state


class IKSolverNode(Node):
    """Solves target poses and service requests for one chain; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__('ik_solver', **kwargs)
        self.get_logger().info('loading the compiled kernels (the first start after an install compiles them: '
                               'minutes; python3 -m ik_solver.core.warmup does it ahead)')
        warm_up()  # compiled kernels before any service is offered: available means ready
        motion_guard.warm_up()  # and the motion kernels: the first move is sent as fast as the next
        self.collision = None      # the model's CollisionModel (check(q), check_path(Q)), or None
        self._robot = None
        self._pending = None
        self._pending_lock = threading.Lock()
        self.params = ParameterSet(self, PARAMETERS, validate=self._validate, on_change=self._on_parameters)
        p = self.params
        self.reporter = OutcomeReporter(self, self._describe)
        self.joint_states = JointStateTracker(self, p['joint_states_topic'], p['joint_states_timeout'],
                                              tolerance=p['state_tolerance'])
        self.frames = TargetFrames(self)
        self.worker = Worker(self, idle=self._take_target, idle_period=WAIT_PERIOD, name='ik_solver_worker')
        self.create_subscription(PoseStamped, '~/target_pose', self._on_target, TARGET_QOS)
        self.create_service(SolveIK, '~/solve', self._on_solve, callback_group=self.worker.callback_group)
        self.create_service(PlanPath, '~/plan_path', self._on_plan_path, callback_group=self.worker.callback_group)
        self.create_service(ComputeFK, '~/compute_fk', self._on_compute_fk)
        self._markers = MarkerBacklog()
        self.create_subscription(MarkerArray, '~/collision_objects', self._on_collision_objects, 10)
        self._name_check = self.create_timer(NAME_CHECK_DELAY, self._check_unique_name)
        args = checked_xacro_args(p['xacro_args'], self.get_logger())
        self._xacro_args = args
        self.model_source = ModelSource(self, p['base_link'], p['tip_link'], self._use_model, p['robot_description'],
                                        p['urdf_file'], args, p['robot_description_topic'], p['allow_topic_xacro'])
        self.graph_features = graph_features.attach(self)

    def destroy_node(self):
        if hasattr(self, 'model_source'):  # absent when a signal ended the start-up
            self.model_source.close()
            self.worker.stop()
        super().destroy_node()

    # -- public interface (graph features, servo) -----------------------------------------------

    @property
    def model(self):
        """Return the RobotModel in use, or None."""
        context = self._robot
        return context.model if context is not None else None

    def add_outcome_listener(self, callback):
        """Call ``callback(Outcome)`` for every target, request, path and controller event."""
        self.reporter.add_listener(callback)

    # -- model and parameters ---------------------------------------------------------------------

    def _use_model(self, model):
        """Build a fresh Context for ``model`` (ModelSource's on_model); ValueError if the parameters do not fit."""
        p = self.params
        reason = check_all(p.values, model.chain.n)
        if reason is not None:
            raise ValueError(reason)
        limits = load_limits(p.values, model.chain, self.get_logger())
        world = self._collision_world(model)
        collision = world.model if world is not None else None
        solver = self._build_solver(model.chain, p.values, collision)
        mid = model.chain.mid_configuration()
        solver.solve(model.chain.fk(mid), mid)  # the first solve of this chain honours its timeout
        controller = ControllerInterface(
            self, model.chain.joint_names, p['trajectory_topic'] or f"{p['controller_name']}/joint_trajectory",
            p['controller_name'], p['command_interface'], self._on_controller_event, plausibility=StatePlausibility(
                PlausibilitySettings.from_limits(limits.limits, tolerance=REFERENCE_TOLERANCE)))
        history = CommandHistory()
        guard = self._build_guard(limits, p.values, controller, history, collision)
        self.joint_states.configure(limits.limits, expect=partial(history.expectation,
                                                                  velocity_limits=limits.limits.velocity, pause=PAUSE))
        self.collision = collision
        previous, self._robot = self._robot, Context(model, solver, limits, guard, history, controller, world)
        if previous is not None:
            previous.controller.destroy()

    def _collision_world(self, model):
        """Return the CollisionWorld of the collision parameters for ``model``, or None; ValueError refuses it."""
        p = self.params
        try:
            from ..collision.world import collision_from_parameters
        except ImportError as exc:  # Pinocchio/Coal missing: no collision checking, said once per model
            self.get_logger().warning(f'collision checking unavailable ({exc}); solutions are not checked')
            return None
        try:
            world = collision_from_parameters(
                model.description, model.chain, package_file(p['srdf_file']), package_file(p['scene_file']),
                [d for d in p['package_dirs'] if d], p['collision_padding'], p['skip_missing_meshes'],
                p['collision_convex'], xacro_args=self._xacro_args, robot_name=model.robot.name)
        except (OSError, ModelError) as exc:
            raise ValueError(f'collision model: {exc}') from None
        if world is None:
            self.get_logger().info('the robot has no collision geometry: collisions are not checked')
            return None
        for note in world.model.notes:
            self.get_logger().warning(f'collision model: {note}')
        self.get_logger().info(f'collision model: {len(world.obstacles)} world objects')
        return world

    def _build_solver(self, chain, values, collision=None):
        extra = {'collision': collision} if collision is not None and values['avoid_collisions'] else {}
        return IKSolver(chain, solver_options(values, chain), **extra)

    def _build_guard(self, loaded, values, controller, history, collision=None):
        scaled = move_limits(loaded, values)
        bounded = is_set(values['workspace.min']) or is_set(values['workspace.max'])
        workspace = workspace_box(values) if bounded else None
        send = partial(send_trajectory, controller, history, self.get_clock(), values['command_lead_time'])
        return CommandGuard(scaled, workspace, values['max_joint_jump'], send=send,
                            collision=collision if values['avoid_collisions'] else None)

    def _variant(self, context, avoid):
        """Return the Context that solves and guards with (``avoid`` True) or without collisions; None: as is."""
        collision = context.world.model if context.world is not None else None
        if avoid is None or avoid == (context.guard.collision is not None):
            return context
        if avoid not in context.variants:
            values = dict(self.params.values, avoid_collisions=avoid)
            context.variants[avoid] = replace(
                context, solver=self._build_solver(context.model.chain, values, collision),
                guard=self._build_guard(context.limits, values, context.controller, context.history, collision),
                variants={})
        return context.variants[avoid]

    def _on_collision_objects(self, msg):
        if self._markers.add(msg.markers):
            self.worker.post(self._apply_collision_objects)

    def _apply_collision_objects(self):
        """Add, replace or delete world objects from the waiting MarkerArrays (any frame tf2 resolves into the base)."""
        markers, dropped = self._markers.take()
        if dropped:
            self.get_logger().warning(f'collision_objects: {dropped} marker actions were overtaken by newer ones '
                                      'before they were applied', throttle_duration_sec=2.0)
        context = self._robot
        if context is None or context.world is None:
            self.get_logger().warning('collision_objects ignored: no collision model loaded')
            return
        base = context.model.chain.base_link

        def lookup(frame):
            return self.frames.lookup(base, frame, self.params['transform_timeout'])

        try:
            problems = context.world.apply_markers(markers, lookup)
        except Exception as exc:  # a message must never take the node down
            problems = [f'unexpected error: {exc!r}']
        for problem in problems:
            self.get_logger().warning(f'collision_objects: {problem}')
        context.variants.clear()

    def _validate(self, values):
        context = self._robot
        reason = check_all(values, context.model.chain.n if context else None) \
            or check_workspace_change(self.params.values, values)
        if reason is None and values['nullspace.pole_link'] and context is not None \
                and values['nullspace.pole_link'] not in context.model.chain.link_frames:
            reason = f"nullspace.pole_link '{values['nullspace.pole_link']}' is not a link of the chain"
        if reason is None and context is not None:
            try:
                collision = context.world.model if context.world is not None else None
                self._build_solver(context.model.chain, values, collision)
                self._build_guard(context.limits, values, context.controller, context.history, collision)
            except ValueError as exc:
                reason = str(exc)
        return reason

    def _on_parameters(self, names):
        p = self.params
        self.joint_states.timeout, self.joint_states.tolerance = p['joint_states_timeout'], p['state_tolerance']
        context = self._robot
        if context is not None:
            collision = context.world.model if context.world is not None else None
            guard = self._build_guard(context.limits, p.values, context.controller, context.history, collision)
            self._robot = replace(context, solver=self._build_solver(context.model.chain, p.values, collision),
                                  guard=guard, variants={})

    def _on_controller_event(self, execution, error_code, message):
        """Report what the controller did with a command (``sent`` is already in the command's own outcome)."""
        if execution == 'sent':
            return
        reason = 'success' if execution in ('accepted', 'succeeded', 'preempted') else execution
        self.reporter.report(Outcome('controller', reason, message, execution=execution,
                                     controller_error_code=error_code))

    def _check_unique_name(self):
        self._name_check.cancel()
        me = (self.get_name(), self.get_namespace())
        if self.get_node_names_and_namespaces().count(me) > 1:
            self.get_logger().warning(f'another node is named {me[1].rstrip("/")}/{me[0]}: two nodes may command '
                                      'one controller; give each a namespace or a name of its own')

    # -- targets ----------------------------------------------------------------------------------

    def _on_target(self, msg, info):
        arrival = received_monotonic(info)   # a target queued behind a busy executor ages from its reception
        try:
            pose_to_matrix(msg.pose)  # a malformed pose is answered now, never kept waiting
        except ValueError as exc:
            self.reporter.report(Outcome('topic', 'invalid_input', str(exc)))
            return
        age = self._target_age(msg, arrival)
        if age > self.params['max_target_age']:
            self.reporter.report(Outcome('topic', 'expired', f'target is {age:.3f} s old on arrival '
                                         f"(max_target_age {self.params['max_target_age']:g} s)", target_age=age))
            return
        self._post(_Pending(msg, arrival))
        self.worker.nudge()

    def _post(self, pending):
        """Put a target in the mailbox; one already there is superseded (unless it is older than ``pending``)."""
        with self._pending_lock:
            if self._pending is not None:
                self.reporter.superseded()
                if pending.waited:  # a waiting target put back never replaces one that arrived meanwhile
                    return
            self._pending = pending

    def _take_target(self):
        """Handle the target in the mailbox (the worker's idle job); True if one waits for the model or state."""
        with self._pending_lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return False
        try:
            outcome = self._handle_target(pending)
        except Exception as exc:  # a callback must never take the node down
            self.get_logger().error(f'target dropped: unexpected error: {exc!r}')
            outcome = Outcome('topic', 'invalid_input', f'unexpected error: {exc!r}')
        if outcome is not None:
            outcome.latency = time.monotonic() - pending.arrival
            outcome.target_age = self._target_age(pending.msg, pending.arrival)
            self.reporter.report(outcome)
        return outcome is None

    def _handle_target(self, pending):
        """Return the Outcome of a target, or None if it waits for the model or a first joint state."""
        context = self._robot
        names = context.model.chain.joint_names if context is not None else None
        waiting_for = ('the robot model' if context is None else
                       'a first joint state' if not self.joint_states.has(names) else
                       'consistent joint states' if self.joint_states.settling(names) else None)
        waited = time.monotonic() - pending.arrival
        if waiting_for is not None:
            if waited > self.params['target_timeout']:
                return Outcome('topic', 'expired', f'waited {waited:.1f} s for {waiting_for} (target_timeout '
                                                   f"{self.params['target_timeout']:g} s)")
            pending.waited = True
            self._post(pending)
            return None
        age = self._target_age(pending.msg, pending.arrival)
        if not pending.waited and age > self.params['max_target_age']:
            return Outcome('topic', 'expired', f'target is {age:.3f} s old (max_target_age '
                                               f"{self.params['max_target_age']:g} s)")
        return self._solve_and_execute(context, pending.msg, 'topic', {})

    def _target_age(self, msg, arrival):
        """Seconds since the target's stamp; a zero stamp counts from its arrival."""
        stamp = Time.from_msg(msg.header.stamp)
        if stamp.nanoseconds == 0:
            return time.monotonic() - arrival
        return max(0.0, (self.get_clock().now() - stamp).nanoseconds * 1e-9)

    # -- the flow: state, frame, solve, time, guard, send ------------------------------------------

    def _solve_and_execute(self, context, target_msg, source, overrides):
        """Solve ``target_msg`` from the current state and send the move; the Outcome says what happened."""
        method = overrides.get('method', context.solver.options.method)
        try:
            start = self._start_state(context)
            T = self._resolve(context, target_msg, moves=True)
            self._check_target(context, T)
            result = context.solver.solve(T, start.position, **overrides)  # ValueError: e.g. all-zero weights
        except (StateError, FrameError, SolveError) as exc:
            return Outcome(source, exc.reason, str(exc), method=method)
        except ValueError as exc:
            return Outcome(source, 'invalid_input', str(exc), method=method)
        outcome = Outcome(source, result.reason, result.message, target=T, result=result, method=method)
        if not result.success and not self._approximation_allowed(result):
            return outcome
        try:  # the move starts from the state at sending, not at the solve's start (see _start_state)
            start = self._start_state(context)
        except StateError as exc:
            return _mark_sent(outcome, (exc.reason, str(exc)))
        return _mark_sent(outcome, self._move(context, start, result.joints))

    def _start_state(self, context):
        """Return the state a move starts from (MotionState), or raise StateError.

        The controller's reference, else a replay of our last command, else the measured state.  A
        controller's reference that follows our last command stands for that replay, read now (exact, and
        a moving start can then continue the command, see ``CommandHistory.next_move``).  When the
        measurement is further than ``state_tolerance`` from the controller's reference, the arm is not
        following its commands: ``inconsistent_state`` (the controller interpolates from its reference, so
        a move planned from the measurement would start with a jump).  Without a controller reference,
        the measurement wins over a replay it disagrees with (the replay is only our guess).
        The state carries the instant it describes (the controller's reference: its stamp; a replay or a
        measurement: now), and so does the trajectory planned from it.  A move is planned from a state read
        just before it is sent: the controller joins a trajectory at its arrival, and the part before that
        (a solve's duration, if the state were read before solving) is skipped with a step in position,
        velocity and acceleration; a moving reference stamped 10 ms ago but taken for now would be a step.
        """
        now = time.monotonic()
        limits = context.limits.limits
        measured = self.joint_states.state(context.model.chain.joint_names)
        controller = context.controller.reference()
        reference = controller
        if reference is None or context.history.follows(reference):
            replay = context.history.reference(now)
            reference = None if replay is None else replace(replay, time=now)
        apart = np.inf if reference is None else np.abs(reference.position - measured.position).max()
        if apart > self.joint_states.tolerance:
            if controller is not None:
                raise StateError('inconsistent_state', f"the arm is {apart:.3f} rad from the controller's reference "
                                 f'(state_tolerance {self.joint_states.tolerance:g}): it is not following its '
                                 'commands')
            return replace(measured, time=now)
        return replace(reference, position=np.clip(reference.position, limits.lower, limits.upper))

    def _resolve(self, context, msg, moves=False):
        """Return the target ``msg`` (PoseStamped) in the base link; SolveError for a frame that moves, unstamped.

        A target that ``moves`` the arm in a link the arm moves, stamped zero, would be resolved anew from the
        newest joint state each time: the same tool-relative target sent twice would walk.
        """
        frame = msg.header.frame_id
        if moves and Time.from_msg(msg.header.stamp).nanoseconds == 0 and context.model.frames.has_link(frame) \
                and set(context.model.frames.joints_between(frame)) & set(context.model.chain.joint_names):
            raise SolveError('invalid_input', f"a target in '{frame}', which the arm moves, needs a header.stamp: "
                                              'it is resolved where that link was at its stamp')
        return self.frames.resolve(msg, context.model, self.joint_states.positions_at,
                                   self.params['transform_timeout'])

    def _check_target(self, context, T):
        reasons = context.guard.check_target(T)
        if reasons:
            raise SolveError('outside_workspace', reasons[0])

    def _approximation_allowed(self, result):
        p = self.params
        return (p['publish_approximation'] and np.isfinite(result.joints).all()
                and result.position_error <= p['approximation.max_position_error']
                and result.orientation_error <= p['approximation.max_orientation_error'])

    def _move(self, context, start, goal):
        """Time the move to ``goal`` and send it through the guard; None once sent, else (reason, message).

        A move whose start is older than command_lead_time when it would leave (the node was held up) is
        planned once more from the state then, and refused ('expired') if it is late again.
        """
        limits, period = context.guard.limits, self.params['sample_period']
        for attempt in range(2):
            try:
                if attempt:
                    start = self._start_state(context)
                start, path = context.history.next_move(start, lambda state: plan_move(state, goal, limits, period),
                                                        self.params['command_lead_time'])
            except StateError as exc:
                return exc.reason, str(exc)
            except ValueError as exc:
                return 'limit_violation', f'no move within the limits: {exc}'
            refusal = context.guard.execute(start, path, context.model.chain.joint_names)
            if refusal is None or refusal[0] != LATE:
                return refusal
        return expired(refusal)

    def _execute_path(self, context, start, path, waypoints=None):
        return expired(context.guard.execute(start, path, context.model.chain.joint_names, waypoints))

    # -- services ---------------------------------------------------------------------------------

    async def _on_solve(self, request, response):
        return await self.worker.run(self.solve_service_request, request)

    def solve_service_request(self, request):
        """Answer a SolveIK request (also used by the graph features, e.g. MoveIt's GetPositionIK)."""
        response = SolveIK.Response()
        context = self._robot
        if context is None:
            outcome = Outcome('service', 'no_robot_model', 'no robot model loaded yet')
        else:
            try:
                outcome = self._serve_solve(context, request)
            except Exception as exc:  # a request must never take the node down
                self.get_logger().error(f'solve request failed: unexpected error: {exc!r}')
                outcome = Outcome('service', 'invalid_input', f'unexpected error: {exc!r}')
        response.success = outcome.success
        response.reason, response.message = reason_code(outcome.reason), outcome.message
        response.executed = outcome.published
        result = outcome.result
        if result is not None:
            response.solution = joint_state(context.model.chain.joint_names, result.joints,
                                            self.get_clock().now().to_msg())
            response.position_error, response.orientation_error = result.position_error, result.orientation_error
            response.task_error, response.sigma_min = result.task_error, result.sigma_min
            response.iterations, response.solve_time = result.iterations, result.elapsed
        else:
            response.position_error = response.orientation_error = response.task_error = float('inf')
        self.reporter.report(outcome)
        return response

    def _serve_solve(self, context, request):
        try:
            context = self._variant(context, self._collision_choice(context, request))
            overrides = request_overrides(request, self.params['max_request_timeout'])
            if request.execute:
                if request.seed.name:
                    raise ValueError('a seed cannot be combined with execute: a move starts from the current state')
                return self._solve_and_execute(context, request.target, 'service', overrides)
            seed = self._request_seed(context, request.seed)
            T = self._resolve(context, request.target)
            self._check_target(context, T)
            result = context.solver.solve(T, seed, **overrides)  # ValueError: a seed outside the limits, ...
        except (FrameError, SolveError) as exc:
            return Outcome('service', exc.reason, str(exc))
        except (ValueError, KeyError) as exc:
            return Outcome('service', 'invalid_input', str(exc.args[0]))
        method = overrides.get('method', context.solver.options.method)
        return Outcome('service', result.reason, result.message, target=T, result=result, method=method)

    def _request_seed(self, context, seed_msg):
        """Seed from the request, else the latest joint_states, else the middle of the limits."""
        chain = context.model.chain
        positions = self.joint_states.positions()
        if seed_msg.name:
            given, bad = joint_positions(seed_msg)
            if bad:
                raise ValueError(f'seed has NaN or inf for {", ".join(bad)}')
            positions.update(given)
            return vector_from(positions, chain.joint_names)
        try:
            return np.clip(vector_from(positions, chain.joint_names), chain.lower, chain.upper)
        except KeyError:
            return chain.mid_configuration()

    def _collision_choice(self, context, request):
        """True/False for a request's avoid_collisions ON/OFF, None for the default; ValueError if impossible."""
        asked = request.avoid_collisions
        if asked == SolveIK.Request.COLLISIONS_DEFAULT:
            return None
        if asked not in (SolveIK.Request.COLLISIONS_ON, SolveIK.Request.COLLISIONS_OFF):
            raise ValueError(f'avoid_collisions must be 0 (default), 1 (on) or 2 (off), got {asked}')
        if asked == SolveIK.Request.COLLISIONS_ON and context.world is None:
            raise ValueError('avoid_collisions on cannot be honoured: this robot has no collision model')
        return asked == SolveIK.Request.COLLISIONS_ON

    async def _on_plan_path(self, request, response):
        return await self.worker.run(self._answer_plan_path, request, response)

    def _answer_plan_path(self, request, response):
        context = self._robot
        if context is None:
            outcome = Outcome('path', 'no_robot_model', 'no robot model loaded yet')
        else:
            try:
                outcome = self._plan_path(context, request, response)
            except (StateError, FrameError, SolveError) as exc:
                outcome = Outcome('path', exc.reason, str(exc))
            except ValueError as exc:
                outcome = Outcome('path', 'invalid_input', str(exc))
            except Exception as exc:  # a request must never take the node down
                self.get_logger().error(f'plan_path failed: unexpected error: {exc!r}')
                outcome = Outcome('path', 'invalid_input', f'unexpected error: {exc!r}')
        response.success = outcome.success
        response.reason, response.message, response.executed = reason_code(outcome.reason), outcome.message, \
            outcome.published
        self.reporter.report(outcome)
        return response

    def _plan_path(self, context, request, response):
        """Solve, time and (with execute) send a Cartesian path; fill ``response``; return the Outcome."""
        chain = context.model.chain
        current = not request.start_state.name
        if not current and request.execute:
            raise ValueError('start_state cannot be combined with execute: a path starts from the current state')
        start = self._start_state(context) if current else MotionState.at_rest(
            self._request_seed(context, request.start_state))
        if not request.waypoints:
            raise ValueError('a path needs at least one waypoint')
        if len(request.waypoints) > MAX_WAYPOINTS:
            raise ValueError(f'{len(request.waypoints)} waypoints, more than the {MAX_WAYPOINTS} a path may have')
        context = self._variant(context, self._collision_choice(context, request))
        waypoints = [self._resolve(context, msg, moves=request.execute) for msg in request.waypoints]
        for T in waypoints:
            self._check_target(context, T)
        if not np.isfinite(request.max_step) or request.max_step < 0.0:
            raise ValueError(f'max_step must be finite and >= 0, got {request.max_step}')
        if not request.jump_threshold >= 0.0:
            raise ValueError(f'jump_threshold must be >= 0 (inf: no check between steps), got {request.jump_threshold}')
        jump = request.jump_threshold or self.params['max_joint_jump']
        path = cartesian_path(context.solver, start.position, waypoints, request.max_step or PATH_STEP, jump,
                              budget=self.params['max_path_time'])
        response.fraction = float(path.fraction)
        outcome = Outcome('path', path.reason, path.message, target=waypoints[-1])
        if len(path.joints) < 2:
            return outcome
        limits, period = context.guard.limits, self.params['sample_period']
        plan = partial(plan_joint_path, waypoints=path.joints[1:], limits=limits, sample_period=period)
        if current:  # the move starts from the state at sending (see _start_state)
            start = self._start_state(context)
            start, timed = context.history.next_move(start, plan, self.params['command_lead_time'], follow=False)
        else:
            timed = plan(start)
        response.trajectory = trajectory_message(chain.joint_names, timed)
        if outcome.success and request.execute:
            _mark_sent(outcome, self._execute_path(context, start, timed, path.joints))
        return outcome

    def _on_compute_fk(self, request, response):
        context = self._robot
        if context is None:
            response.message = 'no robot model loaded yet'
            return response
        chain = context.model.chain
        positions = self.joint_states.positions()
        link = request.link or chain.tip_link
        try:
            good, bad = joint_positions(request.joint_state)
            positions.update(good)
            if bad:
                raise ValueError(f'joint_state has NaN or inf for {", ".join(bad)}')
            if link in chain.link_frames:
                T = chain.fk(vector_from(positions, chain.joint_names), link)
            else:
                T = context.model.frames.pose(link, positions)
        except (ModelError, ValueError, KeyError) as exc:
            response.message = str(exc.args[0])
            return response
        response.success = True
        response.pose.header.frame_id = chain.base_link
        response.pose.header.stamp = self.get_clock().now().to_msg()
        response.pose.pose = matrix_to_pose(T)
        return response

    # -- reporting ----------------------------------------------------------------------------------

    def _describe(self, outcome):
        """(frame_id, sigma_min, manipulability) of an outcome, for its status."""
        context = self._robot
        if context is None:
            return '', float('nan'), float('nan')
        result = outcome.result
        if result is None:
            return context.model.chain.base_link, float('nan'), float('nan')
        chain = context.model.chain
        return chain.base_link, result.sigma_min, manipulability(chain.jacobian(result.joints))


def _mark_sent(outcome, refusal):
    """Record on ``outcome`` that its trajectory was sent, or the (reason, message) ``refusal``; return it."""
    if refusal is not None:
        outcome.reason, outcome.message = refusal
    else:
        outcome.published, outcome.execution = True, 'sent'
    return outcome


def main(args=None):
    return run_node(IKSolverNode, args)  # single-threaded: the solves run on the node's Worker


if __name__ == '__main__':
    main()
