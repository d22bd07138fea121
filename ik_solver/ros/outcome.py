"""The one answer the node gives to each input: what became of a target, request, path or move.

Every target, service call, path request and controller event ends in exactly one
``Outcome``.  The node publishes it on ``~/status`` and hands it to its listeners
(diagnostics, markers), so each of them sees the same facts.  Its reason is a
``Reason`` (``core.reasons``): the same table gives the solver's reasons, the
``~/status`` strings and the SolveIK/PlanPath response codes.
"""
from dataclasses import dataclass
import threading

import numpy as np

from ..core.nullspace import manipulability
from ..core.reasons import Reason

SUCCESS = Reason.SUCCESS.label


def reason_code(reason):
    """Return the SolveIK/PlanPath response code of a reason (a ``Reason`` or its label); INVALID_INPUT if unknown."""
    try:
        return int(Reason.of(reason))
    except ValueError:
        return int(Reason.INVALID_INPUT)


@dataclass
class Outcome:
    """What became of one input; ``reason`` is a ``Reason`` label ('success', 'joint_jump', ...).

    A ``Reason`` member given for ``reason`` is stored as its label, so the
    status message and listeners see one kind of value.
    """

    source: str                     # 'topic', 'service', 'path' or 'controller'
    reason: str
    message: str = ''
    target: np.ndarray = None       # 4x4 target in the base frame, once resolved
    result: object = None           # the IKResult, when a solve ran
    published: bool = False         # a trajectory went to the controller
    method: str = ''
    target_age: float = 0.0         # s, from the input's stamp (or arrival) to this outcome
    latency: float = 0.0            # s, from the input's arrival to this outcome
    superseded: int = 0             # inputs dropped for this newer one
    execution: str = ''             # controller feedback: sent, accepted, rejected, succeeded, aborted, ...
    controller_error_code: int = 0

    def __post_init__(self):
        """Store a ``Reason`` given for ``reason`` as its label."""
        if isinstance(self.reason, Reason):
            self.reason = self.reason.label

    @property
    def success(self):
        """Tell whether the reason is SUCCESS."""
        return self.code == Reason.SUCCESS

    @property
    def code(self):
        """Return the response code of ``reason`` (``reason_code``): what SolveIK/PlanPath responses carry."""
        return reason_code(self.reason)


def describe(context, outcome):
    """Return (frame_id, sigma_min, manipulability) of an outcome, for its status.

    Args:
        context: the IK node's Context of the model in use (``ik_context``), or None before a model.
        outcome: the Outcome.
    """
    if context is None:
        return '', float('nan'), float('nan')
    chain = context.model.chain
    result = outcome.result
    if result is None:
        return chain.base_link, float('nan'), float('nan')
    if len(result.joints) != chain.n:   # solved with the model before a swap: its own sigma only
        return chain.base_link, result.sigma_min, float('nan')
    return chain.base_link, result.sigma_min, manipulability(chain.jacobian(result.joints))


class OutcomeReporter:
    """Publishes each Outcome on ``~/status`` and hands it to the listeners; counts superseded inputs.

    ``describe(outcome) -> (frame_id, sigma_min, manipulability)`` adds what only the model knows.
    """

    def __init__(self, node, describe):
        from ik_solver_interfaces.msg import SolveStatus
        self._status_type = SolveStatus
        self._node = node
        self._describe = describe
        self._listeners = []
        self._superseded = 0
        self._lock = threading.Lock()
        self._publisher = node.create_publisher(SolveStatus, '~/status', 10)

    def add_listener(self, callback):
        """Call ``callback(outcome)`` for every outcome, after it is published."""
        self._listeners.append(callback)

    def superseded(self):
        """Count one input dropped for a newer one; it is reported with the next status."""
        with self._lock:
            self._superseded += 1

    def report(self, outcome):
        with self._lock:
            outcome.superseded, self._superseded = outcome.superseded + self._superseded, 0
        if not outcome.success:
            self._node.get_logger().warning(f'{outcome.source} input refused ({outcome.reason}): {outcome.message}',
                                            throttle_duration_sec=1.0)
        self._publisher.publish(self.status(outcome))
        for callback in self._listeners:
            try:
                callback(outcome)
            except Exception as exc:  # a listener must not stop the others or the node
                self._node.get_logger().error(f'outcome listener failed: {exc!r}', throttle_duration_sec=5.0)

    def status(self, outcome):
        """Return the SolveStatus message of an outcome."""
        status = self._status_type()
        status.header.stamp = self._node.get_clock().now().to_msg()
        status.source = outcome.source
        status.method = outcome.method
        status.success = outcome.success
        status.reason = outcome.reason.label if isinstance(outcome.reason, Reason) else outcome.reason
        status.message = outcome.message
        status.target_age = float(outcome.target_age)
        status.superseded = int(min(outcome.superseded, 2 ** 32 - 1))
        status.trajectory_published = outcome.published
        status.execution = outcome.execution
        status.controller_error_code = int(outcome.controller_error_code)
        status.position_error = status.orientation_error = status.task_error = float('inf')
        status.header.frame_id, sigma, manipulability = self._describe(outcome)
        result = outcome.result
        if result is not None:
            status.position_error = float(result.position_error)
            status.orientation_error = float(result.orientation_error)
            status.task_error = float(result.task_error)
            status.iterations = int(result.iterations)
            status.restarts = int(result.restarts)
            status.solve_time = float(result.elapsed)
            status.sigma_min, status.manipulability = float(sigma), float(manipulability)
        return status
