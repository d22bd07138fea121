"""Helpers for tests that start the package's nodes as processes and talk to them over DDS."""
import contextlib
import os
import tempfile
import threading
import time

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')

from ik_solver_demos.tools.launcher import node_args, NodeProcess  # noqa: E402, I100
from ik_solver_demos.tools.observer import ArmObserver  # noqa: E402
from ik_solver_demos.tools.resources import arm_files  # noqa: E402
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters, SetParametersAtomically  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402


#: Domains the tests derive from their process id: FIRST_DOMAIN .. FIRST_DOMAIN + DOMAIN_COUNT - 1 (10-59),
#: clear of 60-99 and of the 100-230 that people pick for processes they start by hand.
FIRST_DOMAIN, DOMAIN_COUNT = 10, 50


def suite_domain():
    """Return this test process's ROS domain: ``IK_SOLVER_TEST_DOMAIN`` if set, else one derived from the pid.

    Under pytest-xdist each worker takes its own: the set (or the run's) domain plus the worker's number, so
    the in-process nodes of one worker never meet the node processes of another.
    """
    worker = os.environ.get('PYTEST_XDIST_WORKER', '')   # 'gw0', 'gw1', ...
    if not worker:
        return os.environ.get('IK_SOLVER_TEST_DOMAIN') or str(FIRST_DOMAIN + os.getpid() % DOMAIN_COUNT)
    first = int(os.environ.get('IK_SOLVER_TEST_DOMAIN') or FIRST_DOMAIN + os.getppid() % DOMAIN_COUNT)
    return str(FIRST_DOMAIN + (first - FIRST_DOMAIN + int(worker[2:])) % DOMAIN_COUNT)


def isolate_ros_domain():
    """Give this test process (and the nodes it starts) the domain of ``suite_domain()``, on localhost.

    ``IK_SOLVER_TEST_DOMAIN`` chooses it (for machines where several test runs share the host).
    """
    os.environ['ROS_DOMAIN_ID'] = suite_domain()
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'


@contextlib.contextmanager
def in_process_ik_nodes(**defaults):
    """Yield ``make(**params)``: an in-process IK node with these parameter overrides (``defaults`` first).

    The nodes are destroyed and rclpy shut down afterwards, on the suite's private domain.
    """
    from ik_solver.ros.ik_node import IKSolverNode
    from rclpy.parameter import Parameter
    isolate_ros_domain()
    rclpy.init()
    nodes = []

    def make(**params):
        values = {**defaults, **params}
        node = IKSolverNode(parameter_overrides=[Parameter(k, value=v) for k, v in values.items()])
        nodes.append(node)
        return node
    try:
        yield make
    finally:
        for node in nodes:
            node.model_source.close()
            node.destroy_node()
        rclpy.try_shutdown()


@contextlib.contextmanager
def spinning(node):
    """Spin ``node`` in its own thread (yielded); on exit stop it, destroy the node and shut rclpy down."""
    from rclpy.executors import SingleThreadedExecutor
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        yield spinner
    finally:
        executor.shutdown(timeout_sec=5.0)
        spinner.join(5.0)
        node.destroy_node()
        rclpy.try_shutdown()


def start(module, arm='ik7', namespace='', **params):
    """Start node ``module`` for a bundled arm, in ``namespace`` if given, with parameter overrides.

    ``module`` is ``ros.ik_node``, ``ros.servo_node`` (ik_solver) or ``sim.sim_arm_node`` (ik_solver_demos).
    """
    urdf, config = arm_files(arm)
    log = tempfile.NamedTemporaryFile(prefix=f'{module}_', suffix='.log', delete=False).name
    args = node_args(config, {'urdf_file': urdf, **params})
    if namespace:
        args += ['-r', f'__ns:=/{namespace}']
    return NodeProcess(module, args, log)


def start_urdf(module, urdf_file, **params):
    """Start node ``module`` for any URDF, without a bundled config (the node's defaults + ``params``)."""
    log = tempfile.NamedTemporaryFile(prefix=f'{module}_', suffix='.log', delete=False).name
    return NodeProcess(module, node_args(None, {'urdf_file': urdf_file, **params}), log)


@contextlib.contextmanager
def node_session(joint_names, sim=None, **params):
    """Open a Session running ik_solver_node with ``params``; given ``sim`` (its parameters), sim_arm_node first.

    The processes are the session's ``node`` (and ``sim``); leaving the block stops them and closes the session.
    """
    with Session(joint_names) as s:
        if sim is not None:
            s.sim = s.add(start('sim.sim_arm_node', **sim))
        s.node = s.add(start('ros.ik_node', **params))
        yield s


class Session:
    """rclpy context, an observer client, and the node processes of one test module.

    A context manager: leaving the ``with`` block (a module fixture's teardown, or a failed setup) closes it.
    """

    def __init__(self, joint_names, namespace=''):
        isolate_ros_domain()
        self._owns_rclpy = not rclpy.ok()
        if self._owns_rclpy:
            rclpy.init()
        self.processes = []
        try:
            self.observer = ArmObserver(joint_names, namespace=namespace)
        except BaseException:
            self._shutdown()
            raise
        self.joint_pub = self.observer.create_publisher(JointState, 'joint_states', 10)
        self.param_client = self.observer.create_client(SetParameters, 'ik_solver/set_parameters')
        self.atomic_client = self.observer.create_client(SetParametersAtomically, 'ik_solver/set_parameters_atomically')
        self._held = None
        self._stop = threading.Event()
        self._streamer = threading.Thread(target=self._stream_joints, daemon=True)
        self._streamer.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def add(self, process):
        self.processes.append(process)
        return process

    def close(self):
        """Stop the streamer, the observer and every started process, even if one of them fails to stop."""
        self._stop.set()
        self._streamer.join(1.0)
        try:
            self.observer.close()
        finally:
            self._shutdown()

    def _shutdown(self):
        try:
            for p in self.processes:
                p.stop()
        finally:
            if self._owns_rclpy:
                rclpy.try_shutdown()

    def wait_service(self, client, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not client.service_is_ready():
            time.sleep(0.05)
        return client.service_is_ready()

    def publish_joints(self, names, q):
        """Publish one joint state now (it goes stale after the node's joint_states_timeout)."""
        msg = JointState(name=list(names), position=[float(v) for v in q], velocity=[0.0] * len(q))
        msg.header.stamp = self.observer.get_clock().now().to_msg()
        self.joint_pub.publish(msg)

    def hold_joints(self, names, q, rate=50.0):
        """Publish this joint state at ``rate`` (a live driver) until given None, or the session closes."""
        self._held = None if names is None else (list(names), list(q), 1.0 / rate)
        if names is not None:
            self.publish_joints(names, q)

    def _stream_joints(self):
        while not self._stop.wait(self._held[2] if self._held else 0.02):
            held = self._held
            if held is not None:
                self.publish_joints(held[0], held[1])

    def set_parameter(self, name, value):
        """Set one parameter; return the SetParameters result (successful, reason)."""
        request = SetParameters.Request(parameters=[parameter(name, value)])
        response = self.observer.call(self.param_client, request)
        return response.results[0]

    def set_parameters(self, values):
        """Set {name: value} all at once; return the SetParametersAtomically result."""
        request = SetParametersAtomically.Request(parameters=[parameter(n, v) for n, v in values.items()])
        return self.observer.call(self.atomic_client, request).result

    def trajectories_since(self, t):
        return [m for _, m in self.observer.trajectories_since(t)]

    def statuses_since(self, t):
        with self.observer.lock:
            return [m for (s, m) in self.observer.statuses if s >= t]


def parameter(name, value):
    """Return the rcl_interfaces Parameter of a Python value."""
    kinds = {bool: (ParameterType.PARAMETER_BOOL, 'bool_value'),
             int: (ParameterType.PARAMETER_INTEGER, 'integer_value'),
             float: (ParameterType.PARAMETER_DOUBLE, 'double_value'),
             str: (ParameterType.PARAMETER_STRING, 'string_value'),
             list: (ParameterType.PARAMETER_DOUBLE_ARRAY, 'double_array_value')}
    kind, field = kinds[type(value)]
    pv = ParameterValue(type=kind)
    setattr(pv, field, value)
    return Parameter(name=name, value=pv)


def poll(predicate, timeout=3.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    return predicate()


def trajectory_points(msg):
    return [(p.time_from_start.sec + p.time_from_start.nanosec * 1e-9, list(p.positions), list(p.velocities),
             list(p.accelerations), list(p.effort)) for p in msg.points]
