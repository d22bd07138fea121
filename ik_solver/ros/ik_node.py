"""ik_solver_node: target poses in, joint_trajectory_controller trajectories out, SolveIK service.

Inputs: ``joint_states`` (any order, extra joints ignored) and ``~/target_pose``
(geometry_msgs/PoseStamped).  Each target is solved from the latest joint
state and, on success, sent as a trajectory to ``trajectory_topic``.  The
target subscription keeps one message, so a fast stream is always solved at
its newest target and never queues.  ``~/solve`` answers without moving the
arm; ``~/compute_fk`` gives the pose of any chain link.  Every solve is
reported on ``~/status`` and drawn on ``~/markers``.
"""
import time

from geometry_msgs.msg import PoseStamped
from ik_solver_interfaces.msg import SolveStatus
from ik_solver_interfaces.srv import ComputeFK, SolveIK
import numpy as np
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

from . import parameters
from .messages import joint_positions, joint_state, matrix_to_pose, pose_to_matrix, trajectory_message, vector_from
from .spin import run_node
from ..core.chain import chain_from_robot
from ..core.exceptions import ModelError
from ..core.frames import RobotFrames
from ..core.nullspace import manipulability
from ..core.solver import IKSolver, sigma_min
from ..core.transforms import make_pose
from ..core.urdf import parse_robot
from ..core.warmup import warm_up
from ..motion.jtc import SplineSampler, Trajectory
from ..motion.timing import plan_move

try:  # optional: frames that are not links of the robot
    from tf2_ros import Buffer, TransformListener
except ImportError:  # not installable from PyPI; links of the robot still work
    Buffer = TransformListener = None

REASON_CODES = {
    'success': SolveIK.Response.SUCCESS, 'unreachable': SolveIK.Response.UNREACHABLE,
    'timeout': SolveIK.Response.TIMEOUT, 'joint_limits': SolveIK.Response.JOINT_LIMITS,
    'singular': SolveIK.Response.SINGULAR, 'invalid_input': SolveIK.Response.INVALID_INPUT,
    'no_robot_model': SolveIK.Response.NO_ROBOT_MODEL, 'unknown_frame': SolveIK.Response.UNKNOWN_FRAME,
}
#: Seeds measured this far outside a limit are clamped silently (sensor noise); further, with a warning.
SEED_LIMIT_SLACK = 0.02
#: A new move continues from the last published one unless the arm is this far from it [rad or m].
PLAN_DIVERGENCE = 0.1


class SolveError(Exception):
    """A solve that cannot start: carries a reason code name and a message."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason = reason


class Model:
    """The loaded robot: parsed URDF, IK chain, frames of all links."""

    def __init__(self, urdf_text, base_link, tip_link):
        self.robot = parse_robot(urdf_text)
        self.chain = chain_from_robot(self.robot, base_link, tip_link)
        self.frames = RobotFrames(self.robot, base_link)


class IKSolverNode(Node):
    """Solves target poses and service requests for one chain; see the module docstring."""

    def __init__(self, **kwargs):
        super().__init__('ik_solver', **kwargs)
        warm_up()  # compiled kernels before any service is offered: available means ready
        self._declare_parameters()
        self._refresh_cache()
        self.model = None
        self.solver = None
        self.positions = {}            # latest finite joint positions by name
        self.velocities = {}           # and velocities, where joint_states has them
        self._last_move = None         # (monotonic start, SplineSampler) of the last published trajectory
        self._tf_buffer = None
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.add_post_set_parameters_callback(self._after_set_parameters)

        p = self._param
        self.trajectory_pub = self.create_publisher(JointTrajectory, p('trajectory_topic'), 10)
        self.status_pub = self.create_publisher(SolveStatus, '~/status', 10)
        self.marker_pub = self.create_publisher(MarkerArray, '~/markers', 10)
        self.create_subscription(JointState, p('joint_states_topic'), self._on_joint_state, 10)
        # Depth 1: a stream of targets is always solved at its newest, never queued.
        self.create_subscription(PoseStamped, '~/target_pose', self._on_target, QoSProfile(depth=1))
        self.create_service(SolveIK, '~/solve', self._on_solve)
        self.create_service(ComputeFK, '~/compute_fk', self._on_compute_fk)
        self._load_model_from_parameters()
        if Buffer is not None:
            self._tf_buffer = Buffer()
            self._tf_listener = TransformListener(self._tf_buffer, self)

    # -- parameters ---------------------------------------------------------------------------

    def _declare_parameters(self):
        for spec in parameters.PARAMETERS:
            descriptor = ParameterDescriptor(description=spec.description, read_only=spec.read_only)
            if spec.choices:
                descriptor.additional_constraints = 'one of: ' + ', '.join(spec.choices)
            if spec.low is not None and isinstance(spec.default, float):
                descriptor.floating_point_range = [FloatingPointRange(from_value=float(spec.low),
                                                                      to_value=float(spec.high), step=0.0)]
            elif spec.low is not None and isinstance(spec.default, int):
                descriptor.integer_range = [IntegerRange(from_value=int(spec.low), to_value=int(spec.high), step=1)]
            self.declare_parameter(spec.name, spec.default, descriptor)

    def _param(self, name):
        """Return a declared parameter's value, from a cache kept by the post-set callback."""
        return self._cache[name]

    def _values(self):
        return dict(self._cache)

    def _refresh_cache(self):
        self._cache = {spec.name: self.get_parameter(spec.name).value for spec in parameters.PARAMETERS}

    def _on_set_parameters(self, params):
        n = self.model.chain.n if self.model else None
        for param in params:
            reason = parameters.check(param.name, param.value, n)
            if reason is None and param.name == 'nullspace.pole_link' and param.value and self.model:
                if param.value not in self.model.chain.link_frames:
                    reason = f"nullspace.pole_link '{param.value}' is not a link of the chain"
            if reason is not None:
                return SetParametersResult(successful=False, reason=reason)
        if self.model is not None:
            values = self._values()
            values.update({p.name: p.value for p in params})
            try:
                IKSolver(self.model.chain, parameters.solver_options(values, self.model.chain))
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _after_set_parameters(self, params):
        self._refresh_cache()
        if self.model is not None:
            self._build_solver()

    def _build_solver(self):
        self.solver = IKSolver(self.model.chain, parameters.solver_options(self._values(), self.model.chain))

    # -- robot model --------------------------------------------------------------------------

    def _load_model_from_parameters(self):
        description, path = self._param('robot_description'), self._param('urdf_file')
        if description:
            self._load_model(description, 'the robot_description parameter')
        elif path:
            self._load_model(path, f'urdf_file {path}')
        else:
            self.get_logger().info('waiting for the robot model on the robot_description topic')
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
        if not description and not path:
            self.create_subscription(String, 'robot_description', self._on_robot_description, latched)

    def _on_robot_description(self, msg):
        self._load_model(msg.data, 'the robot_description topic')

    def _load_model(self, source, origin):
        try:
            model = Model(source, self._param('base_link'), self._param('tip_link'))
        except (ModelError, OSError) as exc:
            self.get_logger().error(f'cannot load the robot model from {origin}: {exc}')
            return
        self.model = model
        try:
            self._build_solver()
        except ValueError as exc:
            self.model = None
            self.get_logger().error(f'parameters do not fit the robot model from {origin}: {exc}')
            return
        c = model.chain
        mid = c.mid_configuration()
        self.solver.solve(c.fk(mid), mid)  # loads the compiled kernels now, not on the first target
        self.get_logger().info(f'loaded chain {c.base_link} -> {c.tip_link} from {origin}: '
                               f'{c.n} joints ({", ".join(c.joint_names)})')

    # -- inputs -------------------------------------------------------------------------------

    def _on_joint_state(self, msg):
        good, bad = joint_positions(msg)
        if bad:
            self.get_logger().warning(f'ignoring non-finite joint_states for {", ".join(bad)}',
                                      throttle_duration_sec=2.0)
        self.positions.update(good)
        if len(msg.velocity) == len(msg.name):
            self.velocities.update((n, v) for n, v in zip(msg.name, msg.velocity) if np.isfinite(v))

    def _on_target(self, msg):
        try:
            self._solve_and_publish(msg)
        except Exception as exc:  # a callback must never take the node down
            self.get_logger().error(f'target dropped: unexpected error: {exc!r}')

    def _solve_and_publish(self, msg):
        if self.model is None:
            self.get_logger().warning('target dropped: no robot model loaded yet', throttle_duration_sec=2.0)
            return
        chain = self.model.chain
        try:
            current = vector_from(self.positions, chain.joint_names)
        except KeyError as exc:
            self.get_logger().warning(f'target dropped: waiting for joint_states: {exc.args[0]}',
                                      throttle_duration_sec=2.0)
            return
        try:
            seed, velocity = self._start_state(self._clamp_seed(current))
            target = self._target_in_base(msg)
            result = self.solver.solve(target, seed)
        except SolveError as exc:
            self._report_rejected('topic', exc.reason, str(exc))
            return
        except ValueError as exc:
            self._report_rejected('topic', 'invalid_input', str(exc))
            return
        published = self._publish_solution(result, seed, velocity)
        self._report(result, 'topic', published)
        self._publish_markers(target, result)

    def _start_state(self, measured):
        """Return the state a new move starts from.

        The controller continues from its current command: the last published
        trajectory at this instant.  Without one, after it ended, or if the arm
        has strayed from it, the measured state.
        """
        if self._last_move is not None:
            start, sampler = self._last_move
            t = time.monotonic() - start
            if t < sampler.end_time:
                q, v = sampler.sample(t)
                if np.abs(q - measured).max() < PLAN_DIVERGENCE:
                    return np.clip(q, self.model.chain.lower, self.model.chain.upper), v
        names = self.model.chain.joint_names
        return measured, np.array([self.velocities.get(n, 0.0) for n in names])

    def _publish_solution(self, result, seed, velocity):
        if not result.success:
            if not self._approximation_allowed(result, seed):
                self.get_logger().warning(f'no trajectory published: {result.reason}: {result.message}',
                                          throttle_duration_sec=1.0)
                return False
            self.get_logger().warning(f'publishing best approximation ({result.position_error:.2e} m, '
                                      f'{result.orientation_error:.2e} rad): {result.reason}',
                                      throttle_duration_sec=1.0)
        chain = self.model.chain
        q = result.joints
        if not (np.isfinite(q).all() and chain.within_limits(q)):  # the solver guarantees it; never trust blindly
            self.get_logger().error('refusing to publish a solution outside the joint limits')
            return False
        path = plan_move(seed, q, chain.velocity_limits, self._param('velocity_scaling'),
                         self._param('min_duration'), self._param('sample_period'), velocity,
                         chain.lower, chain.upper)
        self.trajectory_pub.publish(trajectory_message(chain.joint_names, path))
        trajectory = Trajectory(path.times, path.positions, path.velocities, path.accelerations)
        self._last_move = (time.monotonic(), SplineSampler(seed, velocity, trajectory))
        return True

    def _approximation_allowed(self, result, seed):
        if not self._param('publish_approximation'):
            return False
        return (result.position_error <= self._param('approximation.max_position_error')
                and result.orientation_error <= self._param('approximation.max_orientation_error')
                and np.abs(result.joints - seed).max() <= self._param('approximation.max_joint_jump'))

    def _clamp_seed(self, q):
        chain = self.model.chain
        low, high = chain.lower - SEED_LIMIT_SLACK, chain.upper + SEED_LIMIT_SLACK
        outside = (q < low) | (q > high)
        if outside.any():
            names = ', '.join(n for n, o in zip(chain.joint_names, outside) if o)
            self.get_logger().warning(f'joint_states outside the limits for {names}: seeding from the clamped values',
                                      throttle_duration_sec=2.0)
        return np.clip(q, chain.lower, chain.upper)

    # -- frames ---------------------------------------------------------------------------------

    def _target_in_base(self, msg, positions=None):
        """Return the target as a 4x4 pose in the base link; raise SolveError or ValueError."""
        T = pose_to_matrix(msg.pose)
        frame = msg.header.frame_id.lstrip('/')
        base = self.model.chain.base_link
        if frame in ('', base):
            return T
        if self.model.frames.has_link(frame):
            try:
                return self.model.frames.pose(frame, positions or self.positions) @ T
            except KeyError as exc:
                raise SolveError('unknown_frame', f"frame '{frame}': {exc.args[0]}") from None
        if self._tf_buffer is None:
            raise SolveError('unknown_frame', f"frame '{frame}' is not a link of the robot and tf2_ros is not "
                             f'available; express the target in {base} or a robot link')
        return self._tf_lookup(base, frame) @ T

    def _tf_lookup(self, base, frame):
        try:
            tf = self._tf_buffer.lookup_transform(base, frame, Time())
        except Exception as exc:  # tf2 raises several lookup exception types
            raise SolveError('unknown_frame', f'no transform {base} <- {frame}: {exc}') from None
        t, r = tf.transform.translation, tf.transform.rotation
        return make_pose([t.x, t.y, t.z], [r.x, r.y, r.z, r.w])

    # -- services -----------------------------------------------------------------------------

    def _on_solve(self, request, response):
        try:
            self._serve_solve(request, response)
        except Exception as exc:
            response.success = False
            response.reason = SolveIK.Response.INVALID_INPUT
            response.message = f'unexpected error: {exc!r}'
            self.get_logger().error(response.message)
        return response

    def _serve_solve(self, request, response):
        if self.model is None:
            response.reason, response.message = SolveIK.Response.NO_ROBOT_MODEL, 'no robot model loaded yet'
            return
        chain = self.model.chain
        try:
            seed, positions = self._request_seed(request.seed)
            target = self._target_in_base(request.target, positions)
            overrides = self._overrides(request)
            result = self.solver.solve(target, seed, **overrides)
        except SolveError as exc:
            response.reason, response.message = REASON_CODES[exc.reason], str(exc)
            self._report_rejected('service', exc.reason, str(exc))
            return
        except (ValueError, KeyError) as exc:
            response.reason, response.message = SolveIK.Response.INVALID_INPUT, str(exc.args[0])
            self._report_rejected('service', 'invalid_input', response.message)
            return
        response.success = result.success
        response.reason = REASON_CODES[result.reason]
        response.message = result.message
        response.solution = joint_state(chain.joint_names, result.joints, self.get_clock().now().to_msg())
        response.position_error = result.position_error
        response.orientation_error = result.orientation_error
        response.iterations = result.iterations
        response.solve_time = result.elapsed
        self._report(result, 'service', False, overrides.get('method'))
        self._publish_markers(target, result)

    def _request_seed(self, seed_msg):
        """Seed from the request, else the latest joint_states, else the middle of the limits."""
        chain = self.model.chain
        positions = dict(self.positions)
        if seed_msg.name:
            given, bad = joint_positions(seed_msg)
            if bad:
                raise ValueError(f'seed has NaN or inf for {", ".join(bad)}')
            positions.update(given)
            return vector_from(positions, chain.joint_names), positions
        try:
            return self._clamp_seed(vector_from(positions, chain.joint_names)), positions
        except KeyError:
            return chain.mid_configuration(), positions

    def _overrides(self, request):
        overrides = {}
        if request.method:
            overrides['method'] = request.method
        for name in ('timeout', 'position_tolerance', 'orientation_tolerance'):
            value = getattr(request, name)
            if value != 0.0:
                overrides[name] = value
        if len(request.weights):
            if len(request.weights) != 6:
                raise ValueError(f'weights must have 6 values (x y z rx ry rz), got {len(request.weights)}')
            overrides['weights'] = tuple(request.weights)
        elif request.position_only:
            overrides['weights'] = (1.0, 1.0, 1.0, 0.0, 0.0, 0.0)
        return overrides

    def _on_compute_fk(self, request, response):
        if self.model is None:
            response.message = 'no robot model loaded yet'
            return response
        positions = dict(self.positions)
        good, bad = joint_positions(request.joint_state)
        positions.update(good)
        link = request.link or self.model.chain.tip_link
        try:
            if bad:
                raise ValueError(f'joint_state has NaN or inf for {", ".join(bad)}')
            if link in self.model.chain.link_frames:
                T = self.model.chain.fk(vector_from(positions, self.model.chain.joint_names), link)
            else:
                T = self.model.frames.pose(link, positions)
        except (ModelError, ValueError, KeyError) as exc:
            response.message = str(exc.args[0])
            return response
        response.success = True
        response.pose.header.frame_id = self.model.chain.base_link
        response.pose.header.stamp = self.get_clock().now().to_msg()
        response.pose.pose = matrix_to_pose(T)
        return response

    # -- reporting ------------------------------------------------------------------------------

    def _new_status(self, source, method=None):
        status = SolveStatus()
        status.header.stamp = self.get_clock().now().to_msg()
        status.header.frame_id = self.model.chain.base_link if self.model else ''
        status.source = source
        status.method = method or (self.solver.options.method if self.solver else '')
        return status

    def _report(self, result, source, published, method=None):
        status = self._new_status(source, method)
        status.success = result.success
        status.reason = result.reason
        status.message = result.message
        status.position_error = result.position_error
        status.orientation_error = result.orientation_error
        status.iterations = result.iterations
        status.restarts = result.restarts
        status.solve_time = result.elapsed
        J = self.model.chain.jacobian(result.joints)
        status.sigma_min = sigma_min(J)
        status.manipulability = float(manipulability(J))
        status.trajectory_published = published
        self.status_pub.publish(status)

    def _report_rejected(self, source, reason, message):
        self.get_logger().warning(f'{source} target rejected ({reason}): {message}', throttle_duration_sec=1.0)
        status = self._new_status(source)
        status.reason = reason
        status.message = message
        status.position_error = status.orientation_error = float('inf')
        self.status_pub.publish(status)

    def _publish_markers(self, target, result):
        base = self.model.chain.base_link
        reached = self.model.chain.fk(result.joints)
        markers = MarkerArray()
        for i, (T, color) in enumerate(((target, (0.1, 0.9, 0.1)),
                                        (reached, (0.1, 0.4, 1.0) if result.success else (1.0, 0.2, 0.1)))):
            m = Marker()
            m.header.frame_id = base
            m.header.stamp = self.get_clock().now().to_msg()
            m.ns = ('target', 'reached')[i]
            m.id = 0
            m.type = Marker.ARROW
            m.action = Marker.ADD
            m.pose = matrix_to_pose(T)
            m.scale.x, m.scale.y, m.scale.z = 0.1, 0.01, 0.01
            m.color.r, m.color.g, m.color.b = color
            m.color.a = 1.0
            markers.markers.append(m)
        self.marker_pub.publish(markers)


def main(args=None):
    run_node(IKSolverNode, args)


if __name__ == '__main__':
    main()
