"""A streamed target's status comes after its command and after a newer target's that arrived meanwhile.

The newer target never waits for the older one's status, and every target gets its status, in order.
"""
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed')

from geometry_msgs.msg import PoseStamped  # noqa: E402, I100
from ik_solver.core.results import IKResult  # noqa: E402
from ik_solver.ros.ik_node import IKSolverNode  # noqa: E402
from ik_solver.ros.outcome import describe, Outcome  # noqa: E402
from ik_solver.ros.target_mailbox import Pending, TargetMailbox  # noqa: E402


class Stand:
    """What ``IKSolverNode._take_target`` uses of its node; ``events`` records commands and statuses in order."""

    def __init__(self):
        self.events, self.queue, self.nudges, self._deferred = [], [], 0, None
        self.reporter = SimpleNamespace(report=lambda outcome: self.events.append(('status', outcome.message)),
                                        superseded=lambda: None)
        self.mailbox = TargetMailbox(self.reporter, self._take_queue)
        self.worker = SimpleNamespace(nudge=self._nudge)
        self.arrive_during_handling = []
        self.params = {'command_interface': 'topic'}

    def _take_queue(self):
        taken, self.queue = self.queue, []
        return taken

    def _nudge(self):
        self.nudges += 1

    def _handle_target(self, pending):
        name = pending.msg.header.frame_id
        self.events.append(('command', name))
        self.queue += self.arrive_during_handling   # a newer target arrives while this one is handled
        self.arrive_during_handling = []
        return Outcome('topic', 'success', name)

    _report = IKSolverNode._report
    _newer_waits = IKSolverNode._newer_waits

    def get_logger(self):
        return SimpleNamespace(error=lambda text: self.events.append(('error', text)))

    def get_clock(self):
        return SimpleNamespace(now=lambda: SimpleNamespace(nanoseconds=0))

    def take(self):
        return IKSolverNode._take_target(self)


def _target(name, arrival):
    msg = PoseStamped()
    msg.header.frame_id = name
    return Pending(msg, arrival)


def test_a_newer_target_is_commanded_before_the_status_of_the_one_before():
    node = Stand()
    node.mailbox.post(_target('a', 1.0))
    node.arrive_during_handling = [_target('b', 2.0)]
    assert node.take() is False
    assert node.events == [('command', 'a')] and node.nudges == 1   # a's status waits: b is taken next
    node.take()
    assert node.events == [('command', 'a'), ('command', 'b'), ('status', 'a'), ('status', 'b')]
    assert node.take() is False and len(node.events) == 4   # nothing waits, nothing reported twice


def test_in_a_flood_one_status_waits_at_most_and_none_is_lost():
    node = Stand()
    node.mailbox.post(_target('t0', 0.0))
    for k in range(1, 5):
        node.arrive_during_handling = [_target(f't{k}', float(k))]
        node.take()
    node.take()
    commands = [name for kind, name in node.events if kind == 'command']
    statuses = [name for kind, name in node.events if kind == 'status']
    assert commands == statuses == ['t0', 't1', 't2', 't3', 't4']
    for k, name in enumerate(statuses):   # each status right after the next command, or at the end
        position = node.events.index(('status', name))
        assert node.events[position - 1] in (('command', f't{k + 1}'), ('status', f't{k - 1}'))


def test_with_the_action_interface_each_status_follows_its_own_command():
    node = Stand()
    node.params['command_interface'] = 'action'   # the controller's events on a goal follow its status
    node.mailbox.post(_target('a', 1.0))
    node.arrive_during_handling = [_target('b', 2.0)]
    node.take()
    node.take()
    assert node.events == [('command', 'a'), ('status', 'a'), ('command', 'b'), ('status', 'b')]


def test_a_status_that_fails_to_publish_is_logged_and_the_next_still_goes_out():
    node = Stand()
    published = []

    def report(outcome):
        if outcome.message == 'a':
            raise RuntimeError('publisher gone')
        published.append(outcome.message)
    node.reporter.report = report
    node.mailbox.post(_target('a', 1.0))
    node.arrive_during_handling = [_target('b', 2.0)]
    node.take()
    node.take()
    assert published == ['b'] and any(kind == 'error' for kind, _ in node.events)
    assert not node.mailbox.held   # the handling ended: the inputs thread takes targets again


def test_a_status_of_a_result_from_the_model_before_a_swap_leaves_manipulability_unknown(ik7):
    result = IKResult(True, np.zeros(6), 0.0, 0.0, 1, 0, 0.0, _sigma=0.5)   # six joints; the model now has seven
    context = SimpleNamespace(model=SimpleNamespace(chain=ik7))
    frame, sigma, manipulability = describe(context, Outcome('topic', 'success', '', result=result))
    assert frame == ik7.base_link and sigma == 0.5 and np.isnan(manipulability)
