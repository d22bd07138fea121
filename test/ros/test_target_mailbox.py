"""The IK node's one-slot target mailbox: the newest wins; superseding a target during a handling pauses the stream.

A subscription callback that supersedes a target while the worker handles another gets a Future done when
that handling ends, and awaits it: the executor takes no more targets meanwhile (the middleware's one-slot
queue keeps the newest).
"""
import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed')

from geometry_msgs.msg import PoseStamped  # noqa: E402, I100
from ik_solver.ros.target_mailbox import Pending, TargetMailbox  # noqa: E402


class Reporter:
    """What the mailbox uses of the OutcomeReporter: the count of superseded targets."""

    def __init__(self):
        self.count = 0

    def superseded(self):
        self.count += 1


def _target(k, waited=False):
    msg = PoseStamped()
    msg.header.frame_id = f'target_{k}'
    return Pending(msg, float(k), waited)


def test_a_target_that_supersedes_another_during_a_handling_pauses_the_stream_until_it_ends():
    reporter, wakes = Reporter(), []
    mailbox = TargetMailbox(reporter, lambda: wakes.append(True))
    assert mailbox.post(_target(1)) is None
    assert mailbox.post(_target(2)) is None   # the worker rests or waits: targets replace each other freely
    assert mailbox.take().msg.header.frame_id == 'target_2'   # the newest wins, and is being handled
    assert mailbox.post(_target(3)) is None   # the worker keeps up: the stream goes on
    paused = mailbox.post(_target(4))
    assert paused is not None and not paused.done()
    assert mailbox.post(_target(5)) is paused   # one pause, whatever replaced the target meanwhile
    assert reporter.count == 3 and not wakes
    mailbox.handled()
    assert paused.done() and wakes == [True]   # the stream resumes, and the executor is woken to see it
    assert mailbox.post(_target(6)) is None   # no handling under way: no pause
    assert mailbox.take().msg.header.frame_id == 'target_6'


def test_a_waiting_target_put_back_never_replaces_a_newer_one_nor_pauses():
    reporter = Reporter()
    mailbox = TargetMailbox(reporter)
    mailbox.post(_target(2))
    assert mailbox.post(_target(1, waited=True)) is None
    assert mailbox.take().msg.header.frame_id == 'target_2' and reporter.count == 1
