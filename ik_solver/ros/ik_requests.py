"""The IK node's services: SolveIK, PlanPath and ComputeFK requests in, responses and outcomes out.

Each handler converts the request, calls the solver or the node's move flow (``IKSolverNode.solve_and_execute``,
the commander) and fills the response; every SolveIK and PlanPath request ends in one Outcome, reported
after the command went out.
"""
from dataclasses import replace
import time
import weakref

from ik_solver_interfaces.srv import SolveIK
import numpy as np

from .ik_context import load_kernels
from .messages import joint_positions, joint_state, matrix_to_pose, trajectory_message, vector_from
from .outcome import Outcome
from .parameters import path_budget, request_overrides
from .target_frames import FrameError
from ..core.exceptions import ModelError
from ..motion.cartesian import cartesian_path
from ..motion.limits import MotionState
from ..motion.start_state import StateError

#: Cartesian step of a path when the request leaves max_step at 0 [m] (MoveIt's usual 1 cm).
PATH_STEP = 0.01
#: Waypoints a PlanPath request may carry, counted before any is resolved.
MAX_WAYPOINTS = 1000


def reason_code(reason):
    """SolveIK.Response code of a reason name ('success', 'joint_jump', ...)."""
    return getattr(SolveIK.Response, reason.upper(), SolveIK.Response.INVALID_INPUT)


class SolveError(Exception):
    """An input that cannot be solved: carries a reason name and a message."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


class IKRequests:
    """Answers the services of ``node`` (an IKSolverNode); see the module docstring."""

    def __init__(self, node):
        self._node = node
        self._checked = weakref.WeakKeyDictionary()  # IKSolver -> {(method, mode)} of requests whose kernels are loaded

    def queue_solve(self, worker, request, received):
        """Queue a SolveIK request on ``worker``; return the Future of its (response, Outcome), due within its timeout.

        The timeout runs from the request's reception: the solve gets what is left of it when the worker takes
        the request, and a request still queued when it has run out (behind a handling that outlasted it) is
        answered TIMEOUT at once, unsolved and never executed.  The Outcome is not reported yet: the caller
        reports it once the answer is on its way (``IKSolverNode._answer``).  The Future's done callbacks run
        on the thread that sets it (the worker's, or the watchdog's), or at once where they are added to a
        Future already set; the executor is not woken.

        Args:
            worker: the node's Worker.
            request: the SolveIK request.
            received: monotonic instant [s] the request was received.
        """
        deadline = received + self.timeout_of(request)
        return worker.run(self.answer, request, deadline, deadline=deadline,
                          late=lambda: self.late(request, received), wake=False)

    def timeout_of(self, request):
        """Return a request's time budget [s]: its own timeout if valid, else the node's ``timeout`` parameter."""
        node = self._node
        if 0.0 < request.timeout <= node.params['max_request_timeout']:
            return request.timeout
        return node.params['timeout']

    def late(self, request, received):
        """Return (response, Outcome) of a request whose timeout ran out before the worker took it: TIMEOUT."""
        waited = time.monotonic() - received
        return self._respond(None, Outcome('service', 'timeout', (
            f'not solved: the request waited {waited * 1e3:.1f} ms for the solver, which was busy, and its timeout '
            f'of {self.timeout_of(request) * 1e3:g} ms (from its reception) had run out')))

    def failed(self, error):
        """Return (SolveIK response, Outcome) of a request whose handling raised ``error``: invalid_input."""
        return self._respond(None, Outcome('service', 'invalid_input', f'unexpected error: {error!r}'))

    def solve(self, request, deadline=None):
        """Answer a SolveIK request and report its Outcome (the graph features, e.g. MoveIt's GetPositionIK).

        Args:
            request: the SolveIK request.
            deadline: None, or the monotonic instant [s] its timeout runs out: the solve gets what is left.
        """
        response, outcome = self.answer(request, deadline)
        self._node.reporter.report(outcome)
        return response

    def answer(self, request, deadline=None):
        """Return (SolveIK response, Outcome) of a request, the Outcome not reported; arguments as ``solve``."""
        node = self._node
        context = node.robot
        if context is None:
            return self._respond(None, Outcome('service', 'no_robot_model', 'no robot model loaded yet'))
        try:
            outcome = self._serve_solve(context, request, deadline)
        except Exception as exc:  # a request must never take the node down
            node.get_logger().error(f'solve request failed: unexpected error: {exc!r}')
            return self.failed(exc)
        return self._respond(context, outcome)

    def _respond(self, context, outcome):
        """Return (the SolveIK response of an Outcome, the Outcome)."""
        node = self._node
        response = SolveIK.Response()
        response.success = outcome.success
        response.reason, response.message = reason_code(outcome.reason), outcome.message
        response.executed = outcome.published
        result = outcome.result
        if result is not None:
            response.solution = joint_state(context.model.chain.joint_names, result.joints,
                                            node.get_clock().now().to_msg())
            # numpy scalars would fail the message's C conversion (an assertion that ends the process)
            response.position_error = float(result.position_error)
            response.orientation_error = float(result.orientation_error)
            response.task_error, response.sigma_min = float(result.task_error), float(result.sigma_min)
            response.iterations, response.solve_time = int(result.iterations), float(result.elapsed)
        else:
            response.position_error = response.orientation_error = response.task_error = float('inf')
        return response, outcome

    def _serve_solve(self, context, request, deadline):
        node = self._node
        left = None if deadline is None else deadline - time.monotonic()  # before kernels load: not counted
        try:
            context = node.variant(context, self._collision_choice(context, request))
            overrides = request_overrides(request, node.params['max_request_timeout'])
            if left is not None:
                if left <= 0.0:
                    return Outcome('service', 'timeout', f'not solved: the request waited {-left * 1e3:.1f} ms past '
                                                         'its timeout (from its reception) for the solver')
                overrides['timeout'] = min(left, overrides.get('timeout', context.solver.options.timeout))
            self._load_kernels(context, overrides)
            if request.execute:
                if request.seed.name:
                    raise ValueError('a seed cannot be combined with execute: a move starts from the current state')
                return node.solve_and_execute(context, request.target, 'service', overrides)
            seed = self._request_seed(context, request.seed)
            T = node.resolve(context, request.target)
            node.check_target(context, T)
            result = context.solver.solve(T, seed, **overrides)  # ValueError: a seed outside the limits, ...
        except (FrameError, SolveError) as exc:
            return Outcome('service', exc.reason, str(exc))
        except (ValueError, KeyError) as exc:
            return Outcome('service', 'invalid_input', str(exc.args[0]))
        method = overrides.get('method', context.solver.options.method)
        return Outcome('service', result.reason, result.message, target=T, result=result, method=method)

    def _load_kernels(self, context, overrides):
        """Load the kernels of a request's method or mode the node has not run yet (logged), before its solve starts.

        Its timeout then counts the solve alone.  Checked once per solver and (method, mode) (a plan costs 0.2 ms).
        """
        switched = {name: overrides[name] for name in ('method', 'mode') if name in overrides}
        if not switched:
            return
        solver = context.solver
        checked = self._checked.setdefault(solver, set())
        if tuple(switched.items()) not in checked:
            load_kernels(self._node.get_logger(), replace(solver.options, **switched), solver.collision is not None)
            checked.add(tuple(switched.items()))

    def _request_seed(self, context, seed_msg):
        """Seed from the request, else the latest joint_states, else the middle of the limits."""
        chain = context.model.chain
        positions = self._node.joint_states.positions()
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
        if asked == SolveIK.Request.COLLISIONS_ON and context.world('a request asks for collision checking') is None:
            raise ValueError('avoid_collisions on cannot be honoured: this robot has no collision model')
        return asked == SolveIK.Request.COLLISIONS_ON

    def plan_path(self, request, response):
        """Answer a PlanPath request: fill ``response`` and report its Outcome."""
        node = self._node
        context = node.robot
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
                node.get_logger().error(f'plan_path failed: unexpected error: {exc!r}')
                outcome = Outcome('path', 'invalid_input', f'unexpected error: {exc!r}')
        response.success = outcome.success
        response.reason, response.message, response.executed = reason_code(outcome.reason), outcome.message, \
            outcome.published
        node.reporter.report(outcome)
        return response

    def _plan_path(self, context, request, response):
        """Solve, time and (with execute) send a Cartesian path; fill ``response``; return the Outcome."""
        node = self._node
        current = not request.start_state.name
        if not current and request.execute:
            raise ValueError('start_state cannot be combined with execute: a path starts from the current state')
        start = context.commander.start_state() if current else MotionState.at_rest(
            self._request_seed(context, request.start_state))
        if not request.waypoints:
            raise ValueError('a path needs at least one waypoint')
        if len(request.waypoints) > MAX_WAYPOINTS:
            raise ValueError(f'{len(request.waypoints)} waypoints, more than the {MAX_WAYPOINTS} a path may have')
        budget = path_budget(request.timeout, node.params['max_path_time'])
        context = node.variant(context, self._collision_choice(context, request))
        waypoints = [node.resolve(context, msg, moves=request.execute) for msg in request.waypoints]
        for T in waypoints:
            node.check_target(context, T)
        if not np.isfinite(request.max_step) or request.max_step < 0.0:
            raise ValueError(f'max_step must be finite and >= 0, got {request.max_step}')
        if not request.jump_threshold >= 0.0:
            raise ValueError(f'jump_threshold must be >= 0 (inf: no check between steps), got {request.jump_threshold}')
        jump = request.jump_threshold or node.params['max_joint_jump']
        path = cartesian_path(context.solver, start.position, waypoints, request.max_step or PATH_STEP, jump,
                              budget=budget)
        response.fraction = float(path.fraction)
        outcome = Outcome('path', path.reason, path.message, target=waypoints[-1])
        if len(path.joints) < 2:
            return outcome
        # a path to be sent starts from the state at sending, not from the one it was solved from
        start, timed = context.commander.time_path(path.joints[1:], None if current else start)
        response.trajectory = trajectory_message(context.model.chain.joint_names, timed)
        if outcome.success and request.execute:
            mark_sent(outcome, context.commander.execute(start, timed, path.joints))
        return outcome

    def compute_fk(self, request, response):
        """Answer a ComputeFK request from the given joints, the latest joint_states for the others."""
        context = self._node.robot
        if context is None:
            response.message = 'no robot model loaded yet'
            return response
        chain = context.model.chain
        positions = self._node.joint_states.positions()
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
        response.pose.header.stamp = self._node.get_clock().now().to_msg()
        response.pose.pose = matrix_to_pose(T)
        return response


def mark_sent(outcome, result):
    """Record on ``outcome`` the commander's MoveResult: sent, or the reason it was not; return the outcome."""
    if result.sent:
        outcome.published, outcome.execution = True, 'sent'
    else:
        outcome.reason, outcome.message = result.reason, result.message
    return outcome
