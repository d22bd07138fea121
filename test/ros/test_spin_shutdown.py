"""ros.spin: a node stopped by a signal ends quietly even when its executor's shutdown races the spin."""
import os
import signal
import threading

import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from rclpy.exceptions import InvalidHandle  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from ik_solver.ros.spin import run_node, spin_executor  # noqa: E402, I100


class RacingExecutor(SingleThreadedExecutor):
    """An executor whose spin loses the race with ``shutdown``: it raises as rclpy's does once shut down.

    In the wait set's construction: InvalidHandle; in the guard condition's handler, the guard gone:
    AttributeError ('NoneType' object has no attribute 'trigger').
    """

    error = InvalidHandle('cannot use Destroyable because destruction was requested')

    def __init__(self, on_spin=lambda: None):
        super().__init__()
        self.stopped = threading.Event()
        self.raised = False
        self._on_spin = on_spin

    def spin(self):
        self._on_spin()
        self.stopped.wait(10.0)
        self.raised = True
        raise self.error

    def shutdown(self, timeout_sec=None):
        self.stopped.set()
        return super().shutdown(timeout_sec=timeout_sec)


@pytest.fixture(params=['wait set', 'guard handler'])
def race(request, monkeypatch):
    """Each way rclpy's spin fails when the shutdown wins the race."""
    if request.param == 'guard handler':
        monkeypatch.setattr(RacingExecutor, 'error', AttributeError("'NoneType' object has no attribute 'trigger'"))
    return request.param


def test_a_spin_raising_invalid_handle_after_a_stop_signal_ends_the_node_quietly(race):
    """The spin thread's error during shutdown is the end of spinning: no traceback, exit code 0."""
    made = []
    errors = []
    previous = threading.excepthook
    threading.excepthook = errors.append
    try:
        def make_node():
            return Node('spin_race_probe')

        def make_executor():  # after rclpy.init, as run_node calls it; the stop signal comes once it spins
            made.append(RacingExecutor(on_spin=lambda: os.kill(os.getpid(), signal.SIGINT)))
            return made[-1]

        assert run_node(make_node, args=[], executor=make_executor, exit_process=False) == 0
    finally:
        threading.excepthook = previous
    assert made and made[0].raised
    assert not errors, [e.exc_value for e in errors]


def test_an_invalid_handle_while_running_is_still_raised():
    """Before any stop, InvalidHandle is a real fault and must not be swallowed."""
    class Broken:
        def spin(self):
            raise InvalidHandle('destroyed while running')
    done = threading.Event()
    with pytest.raises(InvalidHandle):
        spin_executor(Broken(), done)
    assert done.is_set()


#: The demos' clients that spin their own executor: (module, class name).
CLIENTS = {'observer': ('observer', 'ArmObserver'), 'servo client': ('servo_demo', 'ServoClient')}


@pytest.mark.parametrize('client', CLIENTS)
def test_a_demo_client_closed_while_its_executor_races_ends_quietly(monkeypatch, race, client):
    """The demos' ArmObserver and ServoClient (the servo tests drive the servo with it) close quietly too."""
    import importlib
    from ros_fixtures import isolate_ros_domain
    module_name, class_name = CLIENTS[client]
    module = importlib.import_module(f'ik_solver_demos.tools.{module_name}')
    made = []

    def racing():
        made.append(RacingExecutor())
        return made[-1]
    monkeypatch.setattr(module, 'SingleThreadedExecutor', racing)
    errors = []
    monkeypatch.setattr(threading, 'excepthook', errors.append)
    isolate_ros_domain()
    rclpy.init()
    try:
        getattr(module, class_name)([f'joint{i}' for i in range(1, 8)]).close()
    finally:
        rclpy.shutdown()
    assert made and made[0].raised
    assert not errors, [e.exc_value for e in errors]
