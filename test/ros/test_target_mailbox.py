"""The IK node's one-slot target mailbox: the newest wins, and a target that supersedes another pauses the stream.

A subscription callback that supersedes a target gets a Future done when the worker takes the mailbox, and
awaits it: the executor takes no more targets meanwhile (the middleware's one-slot queue keeps the newest).
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


def test_a_target_that_supersedes_another_is_paused_until_the_worker_takes_the_newest():
    reporter, wakes = Reporter(), []
    mailbox = TargetMailbox(reporter, lambda: wakes.append(True))
    assert mailbox.post(_target(1)) is None   # the worker keeps up: the stream goes on
    paused = mailbox.post(_target(2))
    assert paused is not None and not paused.done()
    assert mailbox.post(_target(3)) is paused   # one pause, whatever replaced the target meanwhile
    assert reporter.count == 2 and not wakes
    assert mailbox.take().msg.header.frame_id == 'target_3'   # the newest wins
    assert paused.done() and wakes == [True]   # the stream resumes, and the executor is woken to see it
    assert mailbox.take() is None and mailbox.post(_target(4)) is None


def test_a_waiting_target_put_back_never_replaces_a_newer_one_nor_pauses():
    reporter = Reporter()
    mailbox = TargetMailbox(reporter)
    mailbox.post(_target(2))
    assert mailbox.post(_target(1, waited=True)) is None
    assert mailbox.take().msg.header.frame_id == 'target_2' and reporter.count == 1
