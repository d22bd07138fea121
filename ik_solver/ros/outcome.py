"""The one answer the node gives to each input: what became of a target, request, path or move.

Every target, service call, path request and controller event ends in exactly one
``Outcome``.  The node publishes it on ``~/status`` and hands it to its listeners
(diagnostics, markers), so each of them sees the same facts.
"""
from dataclasses import dataclass

import numpy as np

SUCCESS = 'success'


@dataclass
class Outcome:
    """What became of one input; ``reason`` is 'success' or a SolveIK.Response name in lower case."""

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

    @property
    def success(self):
        return self.reason == SUCCESS
