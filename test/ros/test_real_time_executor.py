"""The IK node's executor: its thread and the middleware's run under SCHED_FIFO below the worker, where granted.

Under CPU load a normal executor thread held the interpreter lock while the scheduler ran other processes,
and sent answers and took joint states late; the middleware's threads delivered requests and targets late.
The truth is the kernel's record of each thread's policy (``os.sched_getscheduler``), read while it spins.
"""
import os
import threading

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from ik_solver.ros import ik_node, spin  # noqa: E402, I100
from ik_solver.ros.parameters import PARAMETERS  # noqa: E402
from ik_solver.ros.worker import PRIORITY, real_time_executor, Worker  # noqa: E402


def _policy(tid):
    """Return (policy, priority) of thread ``tid``, the reset-on-fork flag left out."""
    return os.sched_getscheduler(tid) & ~os.SCHED_RESET_ON_FORK, os.sched_getparam(tid).sched_priority


def _granted():
    """Whether this process may use SCHED_FIFO at the worker's priority (a thread tries it and ends)."""
    result = []
    probe = threading.Thread(target=lambda: result.append(spin.real_time(PRIORITY)))
    probe.start()
    probe.join()
    return result == [None]


@pytest.fixture
def context():
    from ros_fixtures import isolate_ros_domain
    isolate_ros_domain()
    rclpy.init()
    before = {int(tid) for tid in os.listdir('/proc/self/task')}
    yield
    for tid in map(int, os.listdir('/proc/self/task')):   # the rest of the suite runs as it did
        if tid not in before or _policy(tid)[0] == os.SCHED_FIFO:
            try:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
            except (ProcessLookupError, PermissionError):
                pass
    rclpy.try_shutdown()


def _spin_once_in_thread(node, executor):
    """Spin ``executor`` on a thread until a timer of ``node`` has run on it; return what the timer saw there."""
    seen, ran = {}, threading.Event()

    def look():
        seen['executor'] = threading.get_native_id()
        seen['threads'] = {tid: _policy(tid) for tid in map(int, os.listdir('/proc/self/task'))}
        ran.set()
    timer = node.create_timer(0.01, look)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        assert ran.wait(10.0), 'the executor never ran the timer'
    finally:
        timer.cancel()
        executor.shutdown(timeout_sec=5.0)
        spinner.join(5.0)
    return seen


def _node_with_worker(name, priority):
    """Return a node whose Worker (``node.worker``, as the IK node's) asks for SCHED_FIFO at ``priority``."""
    node = rclpy.create_node(name)
    node.worker = Worker(node, priority=priority)
    return node


def _close(node):
    node.worker.stop()
    node.destroy_node()


def _middleware_threads(threads):
    """Return the threads of ``threads`` (tid -> policy) that the middleware started: named, not Python's."""
    return [tid for tid in threads if spin._thread_name(tid) not in (None, spin._thread_name(os.getpid()))
            and tid not in {t.native_id for t in threading.enumerate()}]


def test_the_executor_thread_and_the_middlewares_run_under_sched_fifo_below_the_worker(context):
    if not _granted():
        pytest.skip('SCHED_FIFO is refused here (no CAP_SYS_NICE, no RLIMIT_RTPRIO)')
    node = _node_with_worker('executor_priorities', PRIORITY)
    python_thread = threading.Thread(target=threading.Event().wait, args=(10.0,), daemon=True)
    python_thread.start()
    try:
        seen = _spin_once_in_thread(node, real_time_executor())
    finally:
        _close(node)
    threads = seen['threads']
    assert threads[seen['executor']] == (os.SCHED_FIFO, PRIORITY - 1)
    assert threads[python_thread.native_id][0] == os.SCHED_OTHER   # a thread Python started keeps its own
    assert threads[threading.main_thread().native_id][0] == os.SCHED_OTHER
    named = _middleware_threads(threads)
    assert named, 'the middleware runs no thread of its own here'
    assert {threads[tid] for tid in named} == {(os.SCHED_FIFO, PRIORITY - 2)}


def test_thread_priority_0_keeps_every_thread_under_normal_scheduling(context):
    node = _node_with_worker('executor_normal', 0)
    try:
        seen = _spin_once_in_thread(node, real_time_executor())
    finally:
        _close(node)
    threads = seen['threads']
    assert threads[seen['executor']][0] == os.SCHED_OTHER
    assert {threads[tid][0] for tid in _middleware_threads(threads)} <= {os.SCHED_OTHER}


def test_the_ik_nodes_thread_priority_parameter_sets_its_workers_priority(context):
    declared = {param.name: param for param in PARAMETERS}['thread_priority']
    assert declared.default == PRIORITY and declared.read_only
    node = ik_node.IKSolverNode(parameter_overrides=[rclpy.parameter.Parameter('thread_priority', value=0)])
    try:
        assert node.worker.priority == 0
    finally:
        node.destroy_node()


def test_where_sched_fifo_is_refused_each_node_warns_and_the_executor_spins(context, monkeypatch):
    monkeypatch.setattr(spin, '_fifo', lambda tid, priority: '[Errno 1] Operation not permitted')
    node = _node_with_worker('executor_refused', PRIORITY)
    warnings = []
    monkeypatch.setattr(node, 'get_logger', lambda: type('Logger', (), {'warning': warnings.append})())
    try:
        seen = _spin_once_in_thread(node, real_time_executor())
    finally:
        _close(node)
    assert seen['threads'][seen['executor']][0] == os.SCHED_OTHER
    executor_warnings = [text for text in warnings if 'executor' in text]   # the worker's own warning aside
    assert len(executor_warnings) == 1 and 'keep normal scheduling' in executor_warnings[0]
    assert 'Operation not permitted' in executor_warnings[0]


def test_the_ik_node_spins_on_the_real_time_executor(monkeypatch):
    used = {}
    monkeypatch.setattr(ik_node, 'run_node', lambda make, args, executor=None: used.setdefault('executor', executor))
    ik_node.main([])
    assert used['executor'] is real_time_executor


def _servo(loop, priority):
    """Return a ServoNode on the bundled ik7 with ``loop`` ('thread' or 'timer') at ``thread_priority``."""
    from ik_solver.ros.servo_node import ServoNode
    from ik_solver.ros.share import share_path
    params = {'urdf_file': share_path('urdf', 'ik7.urdf.xacro'), 'base_link': 'base_link', 'tip_link': 'tool0',
              'loop': loop, 'thread_priority': priority}
    return ServoNode(parameter_overrides=[rclpy.parameter.Parameter(k, value=v) for k, v in params.items()])


@pytest.mark.parametrize('loop', ['thread', 'timer'])
def test_the_servos_executor_and_middleware_run_below_its_loop_thread_and_native_pools_keep_theirs(context, loop):
    from ik_solver.ros.servo_node import servo_executor
    if not _granted():
        pytest.skip('SCHED_FIFO is refused here (no CAP_SYS_NICE, no RLIMIT_RTPRIO)')
    node = _servo(loop, 40)
    try:
        seen = _spin_once_in_thread(node, servo_executor())
    finally:
        node.destroy_node()
    threads = seen['threads']
    named = _middleware_threads(threads)
    if loop == 'timer':   # the cycle runs on the executor itself: nothing is raised for it
        assert threads[seen['executor']][0] == os.SCHED_OTHER
        assert {threads[tid][0] for tid in named} <= {os.SCHED_OTHER}
        return
    assert threads[node._loop.native_id] == (os.SCHED_FIFO, 40)
    assert threads[seen['executor']] == (os.SCHED_FIFO, 39)
    assert named and {threads[tid] for tid in named} == {(os.SCHED_FIFO, 38)}
    assert threads[threading.main_thread().native_id][0] == os.SCHED_OTHER
    unnamed = [tid for tid in threads if spin._thread_name(tid) == spin._thread_name(os.getpid())
               and tid not in {t.native_id for t in threading.enumerate()}]   # native threads without a name
    assert all(threads[tid][0] == os.SCHED_OTHER for tid in unnamed)
