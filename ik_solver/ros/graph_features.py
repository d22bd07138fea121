"""What makes the IK node a good citizen of a ROS graph, attached by composition.

``attach(node)`` adds diagnostics, RViz markers and MoveIt's GetPositionIK
service (where moveit_msgs is importable) to an ``IKSolverNode`` through its
public interface: outcome listeners, ``solve_service_request`` and ``.worker``,
``.model`` and ``.joint_states``.  Nothing here changes what the node decides.

Diagnostics of the IK node (``ik_solver: <node>`` on ``/diagnostics``, 1 Hz),
levels and their thresholds:

- ERROR: no robot model is loaded (targets are refused with no_robot_model).
- WARN: no joint_states yet, or older than the tracker's timeout (targets can
  be solved but not executed); or, over the last ``WINDOW`` seconds with at
  least ``MIN_SOLVES`` solves, a success rate below ``MIN_SUCCESS_RATE``; or a
  latency p99 above ``MAX_LATENCY_P99``.
- OK otherwise.
"""
from collections import deque
import time

import numpy as np

from .diagnostics import DiagnosticsPublisher, ERROR, OK, WARN
from .markers import MarkerPublisher
from .moveit_ik import attach_moveit_service

WINDOW = 10.0             # s of outcomes the rates and percentiles are computed over
MIN_SOLVES = 5            # fewer solves in the window: no success-rate warning
MIN_SUCCESS_RATE = 0.5    # WARN below this fraction of successful solves
MAX_LATENCY_P99 = 0.1     # s, WARN above this 99th percentile from arrival to outcome
DEFAULT_STATE_TIMEOUT = 0.5  # s, when the joint-state tracker does not say its own


class IKHealth:
    """Rolling statistics of an IK node's outcomes, and its diagnostic status; see the module docstring."""

    def __init__(self, node, clock=time.monotonic):
        self._node = node
        self._clock = clock
        self._outcomes = deque()   # (time, source, solved, success, latency)
        self._last_failure = None  # (time, reason, message)

    def on_outcome(self, outcome):
        """Outcome listener: record one outcome (controller events only count as failures)."""
        now = self._clock()
        if outcome.source != 'controller':
            self._outcomes.append((now, outcome.source, outcome.result is not None, outcome.success,
                                   outcome.latency))
        if not outcome.success and outcome.reason:
            self._last_failure = (now, outcome.reason, outcome.message)
        while self._outcomes and self._outcomes[0][0] < now - WINDOW:
            self._outcomes.popleft()

    def _window(self):
        now = self._clock()
        return [o for o in list(self._outcomes) if o[0] >= now - WINDOW], now

    def status(self):
        """Return (level, message, values) for DiagnosticsPublisher."""
        recent, now = self._window()
        solves = [o for o in recent if o[2]]
        latencies = np.array([o[4] for o in recent]) if recent else None
        success_rate = sum(o[3] for o in solves) / len(solves) if solves else None
        values = {**self._model_values(), **self._joint_state_values()}
        values.update({
            'target rate [Hz]': sum(o[1] == 'topic' for o in recent) / WINDOW,
            f'solves (last {WINDOW:g} s)': len(solves),
            'solve success rate': success_rate,
            'latency p50 [ms]': None if latencies is None else float(np.percentile(latencies, 50) * 1e3),
            'latency p99 [ms]': None if latencies is None else float(np.percentile(latencies, 99) * 1e3),
            'last failure': 'none' if self._last_failure is None else self._last_failure[1],
            'last failure message': '' if self._last_failure is None else self._last_failure[2],
            'last failure age [s]': None if self._last_failure is None else now - self._last_failure[0],
        })
        level, message = self._judge(values, len(solves), success_rate, latencies)
        return level, message, values

    def _model_values(self):
        model = self._node.model
        if model is None:
            return {'robot': 'none', 'chain': 'none', 'joints': 0}
        chain = model.chain
        return {'robot': model.name, 'chain': f'{chain.base_link} -> {chain.tip_link}', 'joints': chain.n}

    def _joint_state_values(self):
        tracker = self._node.joint_states
        return {'joint_states age [s]': tracker.age(), 'joint_states rate [Hz]': tracker.rate()}

    def _judge(self, values, n_solves, success_rate, latencies):
        if self._node.model is None:
            return ERROR, 'no robot model loaded: targets are refused'
        problems = []
        age = values['joint_states age [s]']
        timeout = getattr(self._node.joint_states, 'timeout', DEFAULT_STATE_TIMEOUT)
        if age is None:
            problems.append('no joint_states received: solutions cannot be executed')
        elif age > timeout:
            problems.append(f'joint_states stale ({age:.2f} s old, timeout {timeout:g} s)')
        if n_solves >= MIN_SOLVES and success_rate < MIN_SUCCESS_RATE:
            problems.append(f'only {success_rate:.0%} of {n_solves} solves succeeded '
                            f'(last failure: {values["last failure"]})')
        if latencies is not None and np.percentile(latencies, 99) > MAX_LATENCY_P99:
            problems.append(f'latency p99 {np.percentile(latencies, 99) * 1e3:.0f} ms '
                            f'above {MAX_LATENCY_P99 * 1e3:.0f} ms')
        if problems:
            return WARN, '; '.join(problems)
        return OK, f'ready: {values["robot"]} {values["chain"]}'


def _hardware_id(node):
    model = node.model
    return model.name if model is not None else ''


def attach(node):
    """Attach diagnostics, markers and (where moveit_msgs exists) GetPositionIK to ``node``; return them.

    The returned objects live as long as the node keeps them (it stores the tuple).
    """
    health = IKHealth(node)
    node.add_outcome_listener(health.on_outcome)
    diagnostics = DiagnosticsPublisher(node, f'ik_solver: {node.get_fully_qualified_name()}',
                                       lambda: _hardware_id(node), health.status)
    markers = MarkerPublisher(node)
    node.add_outcome_listener(markers.on_outcome)
    features = [health, diagnostics, markers]
    service = attach_moveit_service(node)
    if service is not None:
        features.append(service)
    return tuple(features)
