"""Publish a node's health on ``/diagnostics``, the way diagnostic_aggregator and rqt_robot_monitor read it.

Why not diagnostic_updater: it is not on PyPI, and a node needs only one
status.  The conventions it follows are kept: one ``DiagnosticStatus`` per
period in a ``DiagnosticArray`` on the absolute topic ``/diagnostics``, a
``name`` of the form ``"<component>: <node>"`` (aggregator analyzers match its
prefix), a ``hardware_id``, a one-line ``message`` and key/value pairs as
strings.  A status function that raises is reported as ERROR with its
exception, never taken down with the node.
"""
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

#: Levels (diagnostic_msgs/DiagnosticStatus; STALE is the aggregator's, for a silent publisher).
OK, WARN, ERROR = 0, 1, 2
LEVEL_NAMES = {OK: 'OK', WARN: 'WARN', ERROR: 'ERROR'}

TOPIC = '/diagnostics'


def format_value(value):
    """Return a diagnostic value as text: floats with 4 significant digits, None as 'n/a'."""
    if value is None:
        return 'n/a'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, float):
        return f'{value:.4g}'
    return str(value)


def make_status(name, hardware_id, level, message, values):
    """Build one DiagnosticStatus; ``values``: {key: value}, kept in order."""
    status = DiagnosticStatus(name=name, hardware_id=hardware_id, message=str(message))
    status.level = bytes([int(level)])
    status.values = [KeyValue(key=str(k), value=format_value(v)) for k, v in values.items()]
    return status


class DiagnosticsPublisher:
    """Publish ``status_fn()`` as a DiagnosticArray on ``/diagnostics`` every ``period`` seconds.

    ``status_fn() -> (level, message, {key: value})``; ``hardware_id``: a string or
    a function returning one (e.g. the robot's name once its model is loaded).
    The timer has a callback group of its own, so with a multi-threaded executor
    the status keeps coming while the node is busy solving.
    """

    def __init__(self, node, name, hardware_id, status_fn, period=1.0):
        self._node = node
        self.name = name
        self._hardware_id = hardware_id
        self._status_fn = status_fn
        self._publisher = node.create_publisher(DiagnosticArray, TOPIC, 10)
        self._timer = node.create_timer(period, self.publish, callback_group=MutuallyExclusiveCallbackGroup())

    def status(self):
        """Return the DiagnosticStatus now (ERROR naming the exception if ``status_fn`` raises)."""
        hardware_id = ''
        try:
            hardware_id = self._hardware_id() if callable(self._hardware_id) else self._hardware_id
            level, message, values = self._status_fn()
        except Exception as exc:  # a status must never take the node down
            level, message, values = ERROR, f'status failed: {type(exc).__name__}: {exc}', {}
        return make_status(self.name, hardware_id or '', level, message, values)

    def publish(self):
        """Publish one DiagnosticArray now."""
        array = DiagnosticArray(status=[self.status()])
        array.header.stamp = self._node.get_clock().now().to_msg()
        self._publisher.publish(array)

    def destroy(self):
        """Stop the timer and the publisher."""
        self._node.destroy_timer(self._timer)
        self._node.destroy_publisher(self._publisher)
