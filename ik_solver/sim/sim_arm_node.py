"""sim_arm_node: a MuJoCo-simulated arm behind a joint_trajectory_controller interface.

Takes trajectory_msgs/JointTrajectory on ``<controller_name>/joint_trajectory``,
validates it as joint_trajectory_controller does (``jtc.validate``),
interpolates it with the controller's splines, steps the physics in real
time in its own thread, and publishes ``/joint_states`` and, from MuJoCo's
own kinematics, the tip pose on ``~/tip_pose`` (an FK independent of ik_solver's).
"""
import threading
import time

from geometry_msgs.msg import PoseStamped
import numpy as np
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from trajectory_msgs.msg import JointTrajectory

from .physics import ArmSimulation
from ..core.chain import chain_from_robot
from ..core.urdf import parse_robot
from ..motion import jtc
from ..ros.messages import matrix_to_pose
from ..ros.spin import run_node

#: If the physics falls this far behind the wall clock, it skips ahead instead of racing.
MAX_LAG = 0.1


def _range(low, high):
    return [FloatingPointRange(from_value=low, to_value=high, step=0.0)]


class SimArmNode(Node):

    def __init__(self, **kwargs):
        super().__init__('sim_arm', **kwargs)
        d = self.declare_parameter
        d('robot_description', '', ParameterDescriptor(description='URDF XML; empty: urdf_file', read_only=True))
        d('urdf_file', '', ParameterDescriptor(description='URDF or xacro file', read_only=True))
        d('base_link', 'base_link', ParameterDescriptor(description='Root of the controlled chain', read_only=True))
        d('tip_link', 'tool0', ParameterDescriptor(description='End of the controlled chain', read_only=True))
        d('controller_name', 'joint_trajectory_controller',
          ParameterDescriptor(description='Namespace of the trajectory topic', read_only=True))
        d('physics_rate', 1000.0, ParameterDescriptor(description='Physics steps per second [Hz]',
                                                      floating_point_range=_range(100.0, 10000.0), read_only=True))
        d('publish_rate', 200.0, ParameterDescriptor(description='joint_states rate [Hz]',
                                                     floating_point_range=_range(1.0, 1000.0), read_only=True))
        d('kinematic', False, ParameterDescriptor(description='No physics: joints follow commands exactly',
                                                  read_only=True))
        d('initial_positions', [0.0], ParameterDescriptor(description='Start positions; [0.0]: all zero, or the '
                                                          'middle of limits that exclude zero', read_only=True))
        d('kp', 2000.0, ParameterDescriptor(description='Position servo stiffness [N m/rad]',
                                            floating_point_range=_range(1.0, 1e6), read_only=True))
        d('kv', 80.0, ParameterDescriptor(description='Velocity servo gain [N m s/rad]',
                                          floating_point_range=_range(0.0, 1e5), read_only=True))
        p = lambda name: self.get_parameter(name).value  # noqa: E731

        source = p('robot_description') or p('urdf_file')
        robot = parse_robot(source)
        chain = chain_from_robot(robot, p('base_link'), p('tip_link'))
        self.joint_names = chain.joint_names
        self.base_link, self.tip_link = chain.base_link, chain.tip_link
        self.lower, self.upper = chain.lower, chain.upper
        initial = np.array(p('initial_positions'), float)
        if initial.size != chain.n:
            initial = np.clip(np.zeros(chain.n), chain.lower, chain.upper)
        self.sim = ArmSimulation(source, self.joint_names, timestep=1.0 / p('physics_rate'), kp=p('kp'),
                                 kv=p('kv'), kinematic=p('kinematic'), initial_positions=initial)
        self._lock = threading.Lock()
        self._sampler = None
        self._start = 0.0
        self._command = (self.sim.positions, np.zeros(chain.n))
        self._publish_every = max(1, int(round(p('physics_rate') / p('publish_rate'))))

        self.state_pub = self.create_publisher(JointState, 'joint_states', 10)
        self.rtf_pub = self.create_publisher(Float64, '~/real_time_factor', 10)
        self.tip_pub = self.create_publisher(PoseStamped, '~/tip_pose', 10)
        topic = f"{p('controller_name')}/joint_trajectory"
        self.create_subscription(JointTrajectory, topic, self._on_trajectory, 10)
        self._running = True
        self._thread = threading.Thread(target=self._run, name='physics', daemon=True)
        self._thread.start()
        mode = 'kinematic' if p('kinematic') else f"physics at {p('physics_rate'):.0f} Hz"
        self.get_logger().info(f'simulating {", ".join(self.joint_names)} ({mode}); trajectories on {topic}')

    def _on_trajectory(self, msg):
        points = [(pt.time_from_start.sec + pt.time_from_start.nanosec * 1e-9, list(pt.positions),
                   list(pt.velocities), list(pt.accelerations), list(pt.effort)) for pt in msg.points]
        reasons = jtc.validate(list(msg.joint_names), points, self.joint_names, self.lower, self.upper)
        if reasons:
            self.get_logger().error('trajectory rejected: ' + '; '.join(reasons))
            return
        trajectory = jtc.reorder(list(msg.joint_names), points, self.joint_names)
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        now = time.monotonic()
        start = now if stamp == 0.0 else now + (stamp - self.get_clock().now().nanoseconds * 1e-9)
        with self._lock:
            q0, v0 = self._command  # continue from the last command, as the controller does
            self._sampler = jtc.SplineSampler(q0, v0, trajectory)
            self._start = start

    def _run(self):
        dt = self.sim.timestep
        wall_start = next_step = time.monotonic()
        sim_start = self.sim.time
        steps = 0
        window_wall, window_sim = wall_start, sim_start
        while self._running:
            now = time.monotonic()
            with self._lock:
                if self._sampler is not None and now >= self._start:
                    self._command = self._sampler.sample(now - self._start)
                q_des, v_des = self._command
            self.sim.command(q_des, v_des)
            self.sim.step()
            steps += 1
            if steps % self._publish_every == 0:
                self._publish_state()
            if now - window_wall >= 2.0:
                self.rtf_pub.publish(Float64(data=(self.sim.time - window_sim) / (now - window_wall)))
                window_wall, window_sim = now, self.sim.time
            next_step += dt
            delay = next_step - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -MAX_LAG:
                next_step = time.monotonic()

    def _publish_state(self):
        msg = JointState()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.name = self.joint_names
        msg.position = self.sim.positions.tolist()
        msg.velocity = self.sim.velocities.tolist()
        self.state_pub.publish(msg)
        tip = PoseStamped()
        tip.header.stamp = msg.header.stamp
        tip.header.frame_id = self.base_link
        tip.pose = matrix_to_pose(self.sim.link_pose(self.tip_link, self.base_link))
        self.tip_pub.publish(tip)

    def destroy_node(self):
        self._running = False
        self._thread.join(timeout=1.0)
        return super().destroy_node()


def main(args=None):
    run_node(SimArmNode, args)


if __name__ == '__main__':
    main()
