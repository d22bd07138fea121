"""ik_solver_node: target poses in, guarded joint_trajectory_controller commands out, IK services.

Wiring only: parameters, subscriptions and services, message conversion, and publishing.  What a move is
(its start state, its timing, the guard, the lead time, the memory of what was sent) is decided without
ROS by ``motion.commander.Commander``, one per robot model and parameter set (``ik_context``); the
services are answered by ``ik_requests``.  A target is resolved in the base link at its stamp, solved
from the commander's start state and handed to the commander; its ``~/status`` (and with it markers and
diagnostics) is published after the command went out.  Every target, request and path ends in exactly
one ``~/status``.

Concurrency: the streams (targets, joint states, the controller's state) and ``~/solve`` requests are taken
by an inputs thread (``loop_inputs.InputsThread``), never by the executor, whose Python per message would hold
the interpreter lock the worker needs; targets are kept in a one-slot mailbox (newest wins, the dropped ones counted as
superseded), and while one waits or is handled the next ones wait in the subscription's queue (the newest).
Solving and commanding (targets, ``~/solve``, ``~/plan_path``, MoveIt's ``compute_ik``, world updates) run
one at a time on a Worker thread, which sends a ``~/solve`` answer itself; the node spins a single-threaded
executor (``main``) for the other services, parameters and timers, so ``~/compute_fk`` and the parameter
services answer during a solve.
Worker, inputs, executor and middleware threads run under SCHED_FIFO where granted.
"""
import time

from geometry_msgs.msg import PoseStamped
from ik_solver_interfaces.srv import ComputeFK, PlanPath, SolveIK
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from visualization_msgs.msg import MarkerArray

from . import graph_features
from .cpu_latency import hold_cpu_latency
from .ik_context import approximation_allowed, ContextBuilder
from .ik_requests import IKRequests, mark_sent, SolveError
from .joint_states import JointStateTracker, received_monotonic
from .loop_inputs import InputsThread, LoopInputs
from .messages import pose_to_matrix
from .model_source import ModelSource
from .outcome import describe, Outcome, OutcomeReporter
from .parameters import (check_all, check_workspace_change, checked_xacro_args, PARAMETERS, ParameterSet,
                         solver_options)
from .spin import run_node
from .stamps import before_epoch
from .target_frames import FrameError, TargetFrames
from .target_mailbox import Pending, queued_targets, target_age, TargetMailbox, waiting_for
from .worker import real_time_executor, Worker
from .world_updates import WorldUpdates
from ..core.transforms import pose_errors
from ..core.warmup import warm_up_for
from ..motion import guard as motion_guard
from ..motion.start_state import StateError

#: Streamed targets: best effort, newest only.  A RELIABLE subscription made fast publishers
#: block and fail ("cannot publish data"); a queue would act on old targets.
TARGET_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                        durability=DurabilityPolicy.VOLATILE)
#: How often a target waiting for the model or a first joint state is looked at again [s].
WAIT_PERIOD = 0.02
#: After start, how long discovery gets before the graph is searched for a node with our name [s].
NAME_CHECK_DELAY = 3.0


class IKSolverNode(Node):
    """Solves target poses and service requests for one chain; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__('ik_solver', **kwargs)
        self._robot = None
        self._deferred = None   # the Outcome of a streamed target reported after the next one's command
        self.params = ParameterSet(self, PARAMETERS, validate=self._validate, on_change=self._on_parameters)
        p = self.params
        self._warm_up(p.values)  # compiled kernels before any service is offered: available means ready
        motion_guard.warm_up()  # and the motion kernels: the first move is sent as fast as the next
        self.reporter = OutcomeReporter(self, lambda outcome: describe(self._robot, outcome))
        self.inputs = LoopInputs(self)   # the streams: taken by the inputs thread, not the executor
        self.joint_states = JointStateTracker(self, p['joint_states_topic'], p['joint_states_timeout'],
                                              callback_group=self.inputs.group, tolerance=p['state_tolerance'])
        self.frames = TargetFrames(self)
        self.contexts = ContextBuilder(self, self._on_controller_event)
        self.requests = IKRequests(self)
        self.worker = Worker(self, idle=self._take_target, idle_period=WAIT_PERIOD, name='ik_solver_worker',
                             priority=p['thread_priority'])
        targets = self.create_subscription(PoseStamped, '~/target_pose', self._on_target, TARGET_QOS,
                                           callback_group=self.inputs.group)
        self.mailbox = TargetMailbox(self.reporter, queued_targets(targets), resume=self.inputs.wake,
                                     now_ns=lambda: self.get_clock().now().nanoseconds,
                                     max_age=lambda: self.params['max_target_age'])
        self.inputs.hold_while(targets, lambda: self.mailbox.held)   # a flood waits in the subscription
        self._solve_service = self.create_service(SolveIK, '~/solve', self._on_solve,
                                                  callback_group=self.inputs.group)   # taken by the inputs thread
        self.create_service(PlanPath, '~/plan_path', self._on_plan_path, callback_group=self.worker.callback_group)
        self.create_service(ComputeFK, '~/compute_fk', self.requests.compute_fk)
        self.create_subscription(MarkerArray, '~/collision_objects', WorldUpdates(self).on_message, 10)
        self._name_check = self.create_timer(NAME_CHECK_DELAY, self._check_unique_name)
        self._xacro_args = checked_xacro_args(p['xacro_args'], self.get_logger())
        self.model_source = ModelSource(self, p['base_link'], p['tip_link'], self._use_model, p['robot_description'],
                                        p['urdf_file'], self._xacro_args, p['robot_description_topic'],
                                        p['allow_topic_xacro'])
        self.graph_features = graph_features.attach(self)
        self._inputs_thread = InputsThread(self.inputs, self.get_logger(), max(p['thread_priority'] - 1, 0),
                                           name='ik_solver_inputs')
        self._inputs_thread.start()
        self._cpu_latency = hold_cpu_latency(p['cpu_wake_latency'], self.get_logger())   # last: nothing fails after

    def destroy_node(self):
        if hasattr(self, '_inputs_thread'):
            self._inputs_thread.stop()
        if hasattr(self, '_cpu_latency'):
            self._cpu_latency.release()
        if hasattr(self, 'model_source'):  # absent when a signal ended the start-up
            self.model_source.close()
            self.worker.stop()
            deferred, self._deferred = self._deferred, None
            self._report(deferred)   # a target commanded last gets its status too
        super().destroy_node()

    def _warm_up(self, values):
        """Load the kernels the configured solver runs (``core.warmup.warm_up_for``); others load when first used.

        The collision-checked search is loaded with the model, where it has collision geometry.
        """
        # a kernel missing from the cache is announced by kernel_cache when it goes to the background compiler
        self.get_logger().info(f"loading the compiled kernels of method '{values['method']}'")
        try:
            warm_up_for(solver_options(values))
        except ValueError as exc:  # parameters no solver takes: a model is refused with this reason, nothing solves
            self.get_logger().warning(f'no kernels loaded: {exc}')

    # -- public interface (graph features, services, servo) ------------------------------------------

    @property
    def collision(self):
        """Return the model's CollisionModel (check(q), check_path(Q)) if it has been built, else None.

        It is built with the model when collisions are checked, else on first use (``ik_context.WorldSlot``).
        """
        context = self._robot
        return context.collision if context is not None else None

    @property
    def model(self):
        """Return the RobotModel in use, or None."""
        context = self._robot
        return context.model if context is not None else None

    @property
    def robot(self):
        """Return the Context of the model in use (``ik_context``), or None before a model is loaded.

        Not ``context``: that is rclpy's Context of the node.
        """
        return self._robot

    def add_outcome_listener(self, callback):
        """Call ``callback(Outcome)`` for every target, request, path and controller event."""
        self.reporter.add_listener(callback)

    def solve_service_request(self, request):
        """Answer a SolveIK request (also used by the graph features, e.g. MoveIt's GetPositionIK)."""
        return self.requests.solve(request)

    def variant(self, context, avoid):
        """Return the Context that solves and guards with (``avoid`` True) or without collisions; None: as is."""
        return self.contexts.variant(context, avoid, self.params.values)

    # -- model and parameters ---------------------------------------------------------------------

    def _use_model(self, model):
        """Use a fresh Context for ``model`` (ModelSource's on_model); ValueError if the parameters do not fit."""
        reason = check_all(self.params.values, model.chain.n)
        if reason is not None:
            raise ValueError(reason)
        context = self.contexts.build(model, self.params.values, self._xacro_args)
        previous, self._robot = self._robot, context
        if previous is not None:
            previous.controller.destroy()

    def _validate(self, values):
        context = self._robot
        reason = check_all(values, context.model.chain.n if context else None) \
            or check_workspace_change(self.params.values, values)
        if reason is None and values['nullspace.pole_link'] and context is not None \
                and values['nullspace.pole_link'] not in context.model.chain.link_frames:
            reason = f"nullspace.pole_link '{values['nullspace.pole_link']}' is not a link of the chain"
        if reason is None and context is not None:
            try:
                self.contexts.rebuilt(context, values)
            except ValueError as exc:
                reason = str(exc)
        return reason

    def _on_parameters(self, names):
        p = self.params
        self.joint_states.timeout, self.joint_states.tolerance = p['joint_states_timeout'], p['state_tolerance']
        context = self._robot
        if context is not None:
            self._robot = self.contexts.rebuilt(context, p.values)

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
        """Hand a target to the worker: stored and signalled, nothing else (every check is the worker's)."""
        self.mailbox.post(Pending(msg, received_monotonic(info)))   # it ages from its reception
        self.worker.nudge()

    def _take_target(self):
        """Handle the target in the mailbox (the worker's idle job); True if one waits for the model or state.

        Its status (and markers, diagnostics) is reported after its command went out, and after the command of
        a newer target that arrived meanwhile: that one is handled first, its own status then waits in turn.
        So a stream's target never waits for the status of the one before, and one status waits at most.  With
        the action interface it is reported at once: the controller's events on the goal must follow it.
        """
        pending = self.mailbox.take()
        deferred, self._deferred = self._deferred, None
        if pending is None:
            self._report(deferred)
            return False
        try:
            outcome = self._handle_target(pending)
        except Exception as exc:  # a callback must never take the node down
            self.get_logger().error(f'target dropped: unexpected error: {exc!r}')
            outcome = Outcome('topic', 'invalid_input', f'unexpected error: {exc!r}')
        newer = self._newer_waits() and outcome is not None and self.params['command_interface'] == 'topic'
        self._report(deferred)
        if outcome is None:
            return True
        outcome.latency = time.monotonic() - pending.arrival
        outcome.target_age = target_age(pending.msg, pending.arrival, self.get_clock())
        if newer:
            self._deferred = outcome
            self.worker.nudge()
        else:
            self._report(outcome)
        return False

    def _newer_waits(self):
        """End the handling of the target taken; return whether a newer one arrived meanwhile and waits."""
        try:
            return self.mailbox.collect()
        except Exception as exc:  # e.g. the subscription is being destroyed: the handling still ends
            self.get_logger().error(f'targets not collected: unexpected error: {exc!r}')
            return False
        finally:
            self.mailbox.handled()

    def _report(self, outcome):
        """Report an Outcome (None: nothing); a failure is logged, the worker goes on."""
        if outcome is None:
            return
        try:
            self.reporter.report(outcome)
        except Exception as exc:
            self.get_logger().error(f'status of a target not published: {exc!r}')

    def _handle_target(self, pending):
        """Return the Outcome of a target, or None if it waits for the model or a first joint state.

        A malformed or expired target is answered before it could wait; one that waited is not expired by it.
        """
        if not pending.waited:
            problem = before_epoch(pending.msg.header.stamp)
            if problem is not None:
                return Outcome('topic', 'invalid_input', problem)
            try:
                pose_to_matrix(pending.msg.pose)
            except ValueError as exc:
                return Outcome('topic', 'invalid_input', str(exc))
            age = target_age(pending.msg, pending.arrival, self.get_clock())
            if age > self.params['max_target_age']:
                return Outcome('topic', 'expired', f'target is {age:.3f} s old (max_target_age '
                                                   f"{self.params['max_target_age']:g} s)")
        context = self._robot
        waiting = waiting_for(context, self.joint_states)
        if waiting is None:
            return self.solve_and_execute(context, pending.msg, 'topic', {})
        waited = time.monotonic() - pending.arrival
        if waited > self.params['target_timeout']:
            return Outcome('topic', 'expired', f'waited {waited:.1f} s for {waiting} (target_timeout '
                                               f"{self.params['target_timeout']:g} s)")
        pending.waited = True
        self.mailbox.post(pending)
        return None

    # -- the flow: frame, solve, then the commander ------------------------------------------------

    def solve_and_execute(self, context, target_msg, source, overrides):
        """Solve ``target_msg`` from the current state and hand the solution to the commander; return the Outcome.

        The solve is seeded where the arm is going (``Commander.seed``) from the start state now; the commander
        reads that state again when it plans the move, because the controller joins the trajectory at its
        arrival, after the solve.
        """
        method = overrides.get('method', context.solver.options.method)
        try:
            start = context.commander.start_state()
            T = self.resolve(context, target_msg, moves=True)
            self.check_target(context, T)
            chain = context.model.chain
            seed = context.commander.seed(start, lambda Q: pose_errors(T, chain.fk_batch(Q)))
            result = context.solver.solve(T, seed, **overrides)  # ValueError: e.g. all-zero weights
        except (StateError, FrameError, SolveError) as exc:
            return Outcome(source, exc.reason, str(exc), method=method)
        except ValueError as exc:
            return Outcome(source, 'invalid_input', str(exc), method=method)
        outcome = Outcome(source, result.reason, result.message, target=T, result=result, method=method)
        if not result.success and not approximation_allowed(self.params.values, result):
            return outcome
        return mark_sent(outcome, context.commander.move(result.joints))

    def resolve(self, context, msg, moves=False):
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

    def check_target(self, context, T):
        """Raise SolveError('outside_workspace') for a target pose (4x4, base link) outside the workspace box."""
        reasons = context.guard.check_target(T)
        if reasons:
            raise SolveError('outside_workspace', reasons[0])

    # -- services and reporting -------------------------------------------------------------------

    def _on_solve(self, request, header):
        """Queue a ``~/solve`` request, taken by the inputs thread; ``_answer`` sends its answer when it is done.

        Neither the take nor the answer wakes the executor: each wake-up costs it a pass over the node's
        entities with the interpreter lock held, which the worker then waits for.
        """
        done = self.requests.queue_solve(self.worker, request, time.monotonic())
        done.add_done_callback(lambda future: self._answer(header, future))

    def _answer(self, header, future):
        """Send the answer of a ``~/solve`` call, then report its status (its Outcome) after it.

        Runs on the thread that finished the call: the worker, the watchdog for one whose timeout ran out, or
        the inputs thread for one finished before it had queued this.  A job that raised is answered with its
        error; a failed send is logged and its status still reported.
        """
        try:
            answer, outcome = future.result()
        except Exception as exc:  # the caller gets an answer whatever happened
            answer, outcome = self.requests.failed(exc)
        try:
            self._solve_service.send_response(answer, header)
        except Exception as exc:  # e.g. the node is being destroyed; the thread goes on
            self.get_logger().error(f'~/solve answer not sent: {exc!r}')
        try:
            self.reporter.report(outcome)
        except Exception as exc:
            self.get_logger().error(f'status of an answered ~/solve not published: {exc!r}')

    async def _on_plan_path(self, request, response):
        return await self.worker.run(self.requests.plan_path, request, response)


def main(args=None):
    return run_node(IKSolverNode, args, executor=real_time_executor)  # single-threaded: solves run on the Worker


if __name__ == '__main__':
    main()
