"""sim_arm_node: a MuJoCo-simulated arm behind a ros2_control controller interface, for demos and tests.

It stands in for a real arm and its controller so that the IK and servo nodes
can be tested end to end.  ``controller_type`` chooses the controller:

- ``joint_trajectory``: trajectory_msgs/JointTrajectory on
  ``<controller_name>/joint_trajectory``, validated as joint_trajectory_controller
  does (``jtc.validate``; a non-zero stamp whose last point is already past is
  refused), taken over as it does (from its last command, open loop) and
  interpolated with its splines, commanded one update period ahead of the
  physics time; where control_msgs is importable,
  ``<controller_name>/controller_state`` (JointTrajectoryControllerState: the
  reference at the update's time, the feedback read before it, the error, the
  output: the command);
- ``forward_position`` / ``forward_velocity``: std_msgs/Float64MultiArray on
  ``<controller_name>/commands`` in chain order; a wrong length is rejected and
  logged, values are applied as they arrive (velocities integrated).

Like the real controllers it checks neither velocities nor timing, but it
reports every trajectory or command it executed beyond the position,
velocity or acceleration limits on ``~/limit_violations`` (and a WARN log).
The physics runs in real time in its own thread, each step standing for one
ROS instant (held up by a loaded machine, it catches up faster than real time,
see ``MAX_LAG``): messages are stamped with the instant their state describes,
and the trajectory controller places a trajectory's stamp and its arrival on
that clock, as joint_trajectory_controller on its update loop's.
``joint_states`` (relative),
``~/tip_pose`` (MuJoCo's own kinematics, an FK independent of ik_solver's),
``~/measured_accelerations`` and, with a ``scene_file``, ``~/contacts`` between
the arm and world objects are published at ``publish_rate``;
``~/enable_joint_states`` stops and restarts the state stream while the
physics keeps running (a dead joint_state_broadcaster).  Every topic is
relative, so two sims in different namespaces coexist.

Formats (std_msgs/String carries JSON):

- ``~/measured_accelerations``: Float64MultiArray in chain order, the joint
  accelerations the physics realised in the step just before the matching
  joint_states (velocity change of that step / timestep);
- ``~/limit_violations``: ``{"controller", "command", "violations": [{"joint",
  "quantity" (position|velocity|acceleration), "value", "limit", "time"}]}``,
  one message per trajectory (when it ends or is preempted) or per stream
  command; the worst excursion per joint and quantity; ``time`` is seconds
  after the trajectory's start, or a stream command's send time;
- ``~/contacts``: ``[{"link", "object", "distance"}]``, every arm-world pair
  in contact in any physics step since the last message, with its deepest
  distance (< 0: penetration), at ``publish_rate`` while there are any.
"""
import json
import threading
import time

from geometry_msgs.msg import PoseStamped
from ik_solver.collision.scene import load_scene
from ik_solver.core.chain import chain_from_robot
from ik_solver.core.urdf import parse_robot
from ik_solver.motion import jtc
from ik_solver.motion.limits import JointLimits, load_joint_limits
from ik_solver.ros.messages import matrix_to_pose
from ik_solver.ros.parameters import package_file, Param, ParameterSet
from ik_solver.ros.spin import real_time_threads, run_node
import numpy as np
from rclpy.node import Node
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray, Header, String
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from .controllers import ends_in_the_past, ForwardController, LimitMonitor, TrajectoryController
from .physics import ArmSimulation

try:
    from control_msgs.msg import JointTrajectoryControllerState
except ImportError:  # not on PyPI; every ROS 2 install has it
    JointTrajectoryControllerState = None

#: A physics thread held up (a loaded machine) catches up, faster than real time, on a lag up to this [s]: the
#: simulated instants keep their relation to ROS time, so stamped trajectories stay aligned.  Further behind, it
#: skips ahead instead of racing; that changes the relation (a trajectory under way is joined with a jump).
MAX_LAG = 0.5
CONTROLLER_TYPES = ('joint_trajectory', 'forward_position', 'forward_velocity')
#: Seconds between repeated WARN logs of the same kind.
LOG_THROTTLE = 1.0


PARAMETERS = (
    Param('robot_description', '', 'URDF XML; empty: urdf_file', read_only=True),
    Param('urdf_file', '', 'URDF or xacro file', read_only=True),
    Param('base_link', 'base_link', 'Root of the controlled chain', read_only=True),
    Param('tip_link', 'tool0', 'End of the controlled chain', read_only=True),
    Param('controller_type', 'joint_trajectory', 'Controller the simulated arm runs', read_only=True,
          choices=CONTROLLER_TYPES),
    Param('controller_name', '', 'Namespace of the controller topics; empty: <controller_type>_controller',
          read_only=True),
    Param('physics_rate', 1000.0, 'Physics steps per second [Hz]', 100.0, 10000.0, read_only=True),
    Param('publish_rate', 200.0, 'joint_states rate [Hz]', 1.0, 1000.0, read_only=True),
    Param('kinematic', False, 'No physics: joints follow commands exactly', read_only=True),
    Param('initial_positions', [0.0], 'Start positions; [0.0]: all zero, or the middle of limits that exclude zero',
          read_only=True),
    Param('kp', 2000.0, 'Position servo stiffness [N m/rad]', 1.0, 1e6, read_only=True),
    Param('kv', 80.0, 'Velocity servo gain [N m s/rad]', 0.0, 1e5, read_only=True),
    Param('joint_limits_file', '', "MoveIt joint_limits.yaml (relative: in the package's share directory): "
          'acceleration limits to report against; empty: positions and velocities of the URDF only', read_only=True),
    Param('limit_tolerance', 0.01, 'Velocities and accelerations up to limit x (1 + this) are not reported',
          0.0, 1.0, read_only=True),
    Param('scene_file', '', 'YAML scene (collision/scene.py): world objects added to the physics', read_only=True),
    Param('thread_priority', 50, "SCHED_FIFO priority of the simulator's threads, as a real robot's controller runs "
          '(0: normal scheduling)', 0, 99, read_only=True),
)


class SimArmNode(Node):

    def __init__(self, **kwargs):
        super().__init__('sim_arm', **kwargs)
        p = ParameterSet(self, PARAMETERS).get  # a refused value raises with the reason
        kind = p('controller_type')
        source = p('robot_description') or p('urdf_file')
        chain = chain_from_robot(parse_robot(source), p('base_link'), p('tip_link'))
        self.joint_names = chain.joint_names
        self.base_link, self.tip_link = chain.base_link, chain.tip_link
        self.lower, self.upper = chain.lower, chain.upper
        initial = np.array(p('initial_positions'), float)
        if initial.size != chain.n:
            initial = np.clip(np.zeros(chain.n), chain.lower, chain.upper)
        scene = load_scene(p('scene_file')) if p('scene_file') else []
        self.sim = ArmSimulation(source, self.joint_names, timestep=1.0 / p('physics_rate'), kp=p('kp'),
                                 kv=p('kv'), kinematic=p('kinematic'), initial_positions=initial, obstacles=scene)
        monitor = LimitMonitor(self._limits(chain, p('joint_limits_file')), p('limit_tolerance'))
        name = p('controller_name') or f'{kind}_controller'
        self._publish_every = max(1, int(round(p('physics_rate') / p('publish_rate'))))
        self._enabled = True
        #: ROS time - physics time: the ROS instant each physics step stands for (the physics thread keeps it).
        self._epoch = self._ros_now() - self.sim.time
        self._contact_pairs = set()
        self._trajectories = 0

        self.state_pub = self.create_publisher(JointState, 'joint_states', 10)
        self.rtf_pub = self.create_publisher(Float64, '~/real_time_factor', 10)
        self.tip_pub = self.create_publisher(PoseStamped, '~/tip_pose', 10)
        self.accel_pub = self.create_publisher(Float64MultiArray, '~/measured_accelerations', 10)
        self.violation_pub = self.create_publisher(String, '~/limit_violations', 10)
        self.contact_pub = self.create_publisher(String, '~/contacts', 10) if scene else None
        self.controller_state_pub = None
        if kind == 'joint_trajectory':
            self.controller = TrajectoryController(self.sim.positions, monitor)
            self.controller.warm_up()
            topic = f'{name}/joint_trajectory'
            self.create_subscription(JointTrajectory, topic, self._on_trajectory, 10)
            if JointTrajectoryControllerState is not None:
                self.controller_state_pub = self.create_publisher(
                    JointTrajectoryControllerState, f'{name}/controller_state', 10)
        else:
            self.controller = ForwardController(kind, self.sim.positions, monitor)
            topic = f'{name}/commands'
            self.create_subscription(Float64MultiArray, topic, self._on_command, 10)
        self.create_service(SetBool, '~/enable_joint_states', self._on_enable)
        self._running = True
        self._thread = threading.Thread(target=self._run, name='physics', daemon=True)
        self._thread.start()
        if p('thread_priority'):
            self._priority = p('thread_priority')
            self._real_time = self.create_timer(0.0, self._run_real_time)  # fires in the executor's thread
        mode = 'kinematic' if p('kinematic') else f"physics at {p('physics_rate'):.0f} Hz"
        world = f"; world: {', '.join(o.name for o in scene)}" if scene else ''
        self.get_logger().info(f'simulating {", ".join(self.joint_names)} ({mode}{world}); {kind} on {topic}')
        if self.sim.mesh_links:
            self.get_logger().warning('mesh collision geometry not simulated (contacts of these links are not '
                                      f'detected): {", ".join(self.sim.mesh_links)}')

    def _run_real_time(self):
        """Put every thread (physics, executor, middleware) under SCHED_FIFO, once; a refusal is a warning.

        A real controller takes a trajectory on time however busy the computer is; a simulator left to
        normal scheduling took them up to 0.2 s late under CPU load, joined them mid-way, and reported
        steps that a controller on a real robot would not have made.
        """
        self._real_time.cancel()
        refused = real_time_threads(self._priority)
        if refused:
            self.get_logger().warning(f'normal scheduling: SCHED_FIFO priority {self._priority} refused ({refused}); '
                                      'under CPU load commands may be taken late')

    def _limits(self, chain, joint_limits_file):
        """Limits to report against: URDF positions and velocities, accelerations from the file only."""
        if joint_limits_file:
            loaded = load_joint_limits(chain, package_file(joint_limits_file))
            for note in loaded.notes:
                self.get_logger().info(f'limits: {note}')
            return loaded.limits
        n = chain.n
        return JointLimits(tuple(chain.joint_names), chain.lower, chain.upper, chain.velocity_limits,
                           np.full(n, np.inf), np.full(n, np.inf))

    # -- commands (ROS executor thread) -----------------------------------------------------

    def _on_trajectory(self, msg):
        points = [(pt.time_from_start.sec + pt.time_from_start.nanosec * 1e-9, list(pt.positions),
                   list(pt.velocities), list(pt.accelerations), list(pt.effort)) for pt in msg.points]
        reasons = jtc.validate(list(msg.joint_names), points, self.joint_names, self.lower, self.upper)
        if reasons:
            self.get_logger().error('trajectory rejected: ' + '; '.join(reasons))
            return
        trajectory = jtc.reorder(list(msg.joint_names), points, self.joint_names)
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        if ends_in_the_past(stamp, points[-1][0], self._ros_now()):
            self.get_logger().error(f'trajectory rejected: non-zero start time {stamp:.6f} and its last point at '
                                    f'{stamp + points[-1][0]:.6f} lie in the past (now {self._ros_now():.6f})',
                                    throttle_duration_sec=LOG_THROTTLE)
            return
        # The controller runs on the physics clock, as JTC on its update loop's.  Stamp and arrival are placed
        # on it through the clocks' relation (the physics step that stands for that ROS instant): a physics
        # thread running late then neither shifts one trajectory against the next nor takes one over before
        # the simulated instant it arrived at.
        arrival = self._ros_now() - self._epoch
        self._trajectories += 1
        label = f'trajectory #{self._trajectories} ({len(points)} points, {points[-1][0]:.3f} s)'
        self.controller.load(trajectory, None if stamp == 0.0 else stamp - self._epoch, label, arrival)

    def _on_command(self, msg, info):
        values = np.asarray(msg.data, float)
        if values.size != len(self.joint_names):
            self.get_logger().error(f'command rejected: {values.size} values for {len(self.joint_names)} joints '
                                    f'({", ".join(self.joint_names)})')
            return
        if not np.isfinite(values).all():
            self.get_logger().error('command rejected: NaN or inf values')
            return
        # The sender's publication time: the stream's own timing, free of DDS and executor delays.
        sent = info['source_timestamp'] * 1e-9 or time.time()
        self._report(self.controller.command(values, sent, self._ros_now() - self._epoch))

    def _on_enable(self, request, response):
        self._enabled = bool(request.data)
        response.success = True
        response.message = f"joint_states {'enabled' if self._enabled else 'disabled'}"
        self.get_logger().info(response.message)
        return response

    # -- physics thread ---------------------------------------------------------------------

    def _run(self):
        try:
            self._loop()
        except Exception:  # noqa: B902 (publishing races the context's shutdown at exit: not an error then)
            if self._running and self.context.ok():
                raise

    def _ros_now(self):
        return self.get_clock().now().nanoseconds * 1e-9

    def _loop(self):
        dt = self.sim.timestep
        wall_start = next_step = time.monotonic()
        self._epoch = self._ros_now() - self.sim.time
        steps = 0
        window_wall, window_sim = wall_start, self.sim.time
        while self._running:
            now = time.monotonic()
            q_des, v_des, a_des, reports = self.controller.update(self.sim.time, dt)
            for report in reports:
                self._report(report)
            self.sim.command(q_des, v_des, a_des)
            steps += 1
            publish = steps % self._publish_every == 0
            feedback = (self.sim.positions, self.sim.velocities) if publish else None  # read before the update
            self.sim.step(measure=publish)
            if publish:
                self._publish_state(feedback)
            if now - window_wall >= 2.0:
                self.rtf_pub.publish(Float64(data=(self.sim.time - window_sim) / (now - window_wall)))
                window_wall, window_sim = now, self.sim.time
            next_step += dt
            delay = next_step - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -MAX_LAG:  # the physics restarts its schedule from now: the clocks' relation changes
                next_step = time.monotonic()
                self._epoch = self._ros_now() - self.sim.time
                self.get_logger().warning(f'the physics fell {-delay:.2f} s behind the clock and skipped ahead: a '
                                          'trajectory under way is joined with a jump',
                                          throttle_duration_sec=LOG_THROTTLE)

    def _publish_state(self, feedback):
        """Publish the state after the step just taken; ``feedback``: the (q, v) the controller read before it."""
        stamp = Time(seconds=self._epoch + self.sim.time).to_msg()  # the instant the state describes
        q, v = self.sim.positions, self.sim.velocities
        if self._enabled:
            self.state_pub.publish(JointState(header=_header(stamp), name=self.joint_names, position=q.tolist(),
                                              velocity=v.tolist()))
            tip = PoseStamped(header=_header(stamp, self.base_link))
            tip.pose = matrix_to_pose(self.sim.link_pose(self.tip_link, self.base_link))
            self.tip_pub.publish(tip)
            self.accel_pub.publish(Float64MultiArray(data=self.sim.acceleration.tolist()))
        if self.controller_state_pub is not None:
            # As the controller's, the message describes the update before the physics step just taken: its
            # reference sampled at the update's time, the state read before it, the command for the step.
            # Stamped one step late, a reference moving at 0.4 rad/s would be 0.4 mrad off where a client
            # replays it.
            updated = Time(seconds=self._epoch + self.sim.time - self.sim.timestep).to_msg()
            msg = JointTrajectoryControllerState()
            fill_controller_state(msg, updated, self.joint_names, self.controller.reference,
                                  self.controller.output[0], *feedback)
            self.controller_state_pub.publish(msg)
        if self.contact_pub is not None:
            self._publish_contacts()

    def _publish_contacts(self):
        contacts = self.sim.contacts()
        pairs = {(link, other) for link, other, _ in contacts}
        if pairs - self._contact_pairs:
            self.get_logger().warning('arm-world contact: ' + ', '.join(f'{a} - {b}' for a, b in sorted(pairs)),
                                      throttle_duration_sec=LOG_THROTTLE)
        self._contact_pairs = pairs
        if contacts:
            text = json.dumps([{'link': link, 'object': other, 'distance': dist} for link, other, dist in contacts])
            self.contact_pub.publish(String(data=text))

    def _report(self, report):
        """Publish and log a controller's Report of limit violations (None: nothing to report)."""
        if report is None:
            return
        self.violation_pub.publish(String(data=json.dumps({
            'controller': report.source, 'command': report.label,
            'violations': [vars(v) for v in report.violations]})))
        self.get_logger().warning(f'{report.label} executed beyond the limits: '
                                  + '; '.join(v.describe() for v in report.violations),
                                  throttle_duration_sec=LOG_THROTTLE)

    def destroy_node(self):
        self._running = False
        self._thread.join(timeout=1.0)
        return super().destroy_node()


def _header(stamp, frame_id=''):
    return Header(stamp=stamp, frame_id=frame_id)


def fill_controller_state(msg, stamp, joint_names, reference, command, q, v):
    """Fill a JointTrajectoryControllerState as joint_trajectory_controller does for a position interface.

    ``reference``: (q, v, a) of the trajectory at ``stamp`` (``state_desired_``); ``command``: the positions
    written to the position interface (``command_next_``, one period ahead), read back as the output;
    ``q``, ``v``: the joint state read at ``stamp``.
    """
    q_ref, v_ref, a_ref = reference
    msg.header.stamp = stamp
    msg.joint_names = list(joint_names)
    msg.reference = JointTrajectoryPoint(positions=q_ref.tolist(), velocities=v_ref.tolist(),
                                         accelerations=a_ref.tolist())
    msg.feedback = JointTrajectoryPoint(positions=q.tolist(), velocities=v.tolist())
    msg.error = JointTrajectoryPoint(positions=(q_ref - q).tolist(), velocities=(v_ref - v).tolist())
    msg.output = JointTrajectoryPoint(positions=np.asarray(command, float).tolist())
    if hasattr(msg, 'speed_scaling_factor'):  # kilted and later: this controller never scales
        msg.speed_scaling_factor = 1.0


def main(args=None):
    run_node(SimArmNode, args)


if __name__ == '__main__':
    main()
