"""``~/solve`` is taken by the IK node's inputs thread and answered by its worker: no executor spins the node."""
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')

from conftest import URDF_DIR  # noqa: E402, I100
from ik_solver.core.transforms import pose_error  # noqa: E402
from ik_solver.ros.messages import joint_positions, matrix_to_pose  # noqa: E402
from ik_solver_interfaces.msg import SolveStatus  # noqa: E402
from ik_solver_interfaces.srv import SolveIK  # noqa: E402

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])


def test_a_call_is_answered_and_its_status_published_with_no_executor_spinning_the_node(ik7):
    """A caller in another node gets the solution (FK -> IK -> FK round trip); the worker sends it, then the status."""
    from ros_fixtures import in_process_ik_nodes
    with in_process_ik_nodes(urdf_file=str(URDF_DIR / 'ik7.urdf.xacro'), timeout=0.05) as make:
        node = make()
        deadline = time.monotonic() + 60.0
        while node.robot is None and time.monotonic() < deadline:   # the model loads on a thread of its own
            time.sleep(0.01)
        assert node.robot is not None and node.executor is None
        sent = []   # (what, thread) in the order the node did it
        send, report = node._solve_service.send_response, node.reporter.report
        node._solve_service.send_response = lambda *args: (sent.append(('answer', _thread())), send(*args))
        node.reporter.report = lambda outcome: (sent.append(('status', _thread())), report(outcome))
        caller = rclpy.create_node('solve_caller')
        events = []
        caller.create_subscription(SolveStatus, '/ik_solver/status', lambda msg: events.append(('status', msg)), 10)
        client = caller.create_client(SolveIK, '/ik_solver/solve')
        try:
            assert client.wait_for_service(timeout_sec=10.0)
            target = ik7.fk(HOME + 0.1)
            request = SolveIK.Request()
            request.target.header.frame_id = 'base_link'
            request.target.pose = matrix_to_pose(target)
            future = client.call_async(request)
            future.add_done_callback(lambda done: events.append(('answer', done.result())))
            end = time.monotonic() + 10.0
            while len(events) < 2 and time.monotonic() < end:
                rclpy.spin_once(caller, timeout_sec=0.05)
            assert sorted(kind for kind, _ in events) == ['answer', 'status']   # both arrived, in either order
            assert sent == [('answer', 'ik_solver_worker'), ('status', 'ik_solver_worker')]   # status after answer
            response = dict(events)['answer']
            assert response.success
            solution, missing = joint_positions(response.solution)
            assert not missing
            position, rotation = pose_error(target, ik7.fk(np.array([solution[n] for n in ik7.joint_names])))
            assert position < 1e-4 and rotation < 1e-3
        finally:
            caller.destroy_node()


def test_a_call_whose_timeout_runs_out_behind_a_long_job_is_answered_timeout_by_the_watchdog(ik7):
    """The worker held 0.5 s: the call is answered TIMEOUT over DDS within its timeout + 50 ms, never solved."""
    from ros_fixtures import in_process_ik_nodes
    timeout = 0.05
    with in_process_ik_nodes(urdf_file=str(URDF_DIR / 'ik7.urdf.xacro'), timeout=timeout) as make:
        node = make()
        deadline = time.monotonic() + 60.0
        while node.robot is None and time.monotonic() < deadline:
            time.sleep(0.01)
        sent = []
        send = node._solve_service.send_response
        node._solve_service.send_response = lambda *args: (sent.append(_thread()), send(*args))
        caller = rclpy.create_node('late_caller')
        client = caller.create_client(SolveIK, '/ik_solver/solve')
        release = threading.Event()
        try:
            assert client.wait_for_service(timeout_sec=10.0)
            node.worker.post(release.wait, 5.0)   # a handling that outlasts the call's timeout
            request = SolveIK.Request()
            request.target.header.frame_id = 'base_link'
            request.target.pose = matrix_to_pose(ik7.fk(HOME + 0.1))
            called = time.monotonic()
            future = client.call_async(request)
            while not future.done() and time.monotonic() < called + 5.0:
                rclpy.spin_once(caller, timeout_sec=0.01)
            answered = time.monotonic() - called
            release.set()
            response = future.result()
            assert response is not None and response.reason == SolveIK.Response.TIMEOUT and not response.success
            assert answered < timeout + 0.05 + 0.1, f'answered after {answered * 1e3:.0f} ms'   # + DDS both ways
            assert sent == ['worker_watchdog']
        finally:
            release.set()
            caller.destroy_node()


def _thread():
    return threading.current_thread().name
