"""The IK node's one-slot target mailbox: the newest wins, each replaced target is counted once; what it holds.

While a target waits or is handled the inputs thread leaves the subscription alone and the worker takes the
targets waiting there itself (here a list stands in for the subscription's queue); once nothing is held the
inputs thread is woken.
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


class Queue:
    """Stands in for the subscription's queue: the targets the worker finds there, and how often it looked."""

    def __init__(self):
        self.waiting, self.looks = [], 0

    def take(self):
        self.looks += 1
        taken, self.waiting = self.waiting, []
        return taken


def _target(k, waited=False):
    msg = PoseStamped()
    msg.header.frame_id = f'target_{k}'
    return Pending(msg, float(k), waited)


def test_the_newest_target_wins_and_each_replaced_one_is_counted():
    reporter = Reporter()
    mailbox = TargetMailbox(reporter)
    assert mailbox.take() is None
    for k in (1, 3, 2):   # 2 was received before 3, posted after it (two threads took them): 3 stays
        mailbox.post(_target(k))
    assert mailbox.take().msg.header.frame_id == 'target_3'
    assert reporter.count == 2
    mailbox.handled()
    assert mailbox.take() is None   # taken: the mailbox is empty
    mailbox.post(_target(4))
    assert mailbox.take().msg.header.frame_id == 'target_4' and reporter.count == 2


def test_a_waiting_or_handled_target_holds_the_subscription_and_the_worker_takes_its_queue():
    reporter, queue, resumed = Reporter(), Queue(), []
    mailbox = TargetMailbox(reporter, queue.take, resume=lambda: resumed.append(True))
    assert not mailbox.held and mailbox.take() is None
    assert queue.looks == 0 and not resumed   # nothing held: the inputs thread takes the targets
    mailbox.post(_target(1))
    assert mailbox.held   # a target waits: the inputs thread leaves the subscription alone
    queue.waiting = [_target(2), _target(3)]   # arrived meanwhile
    assert mailbox.take().msg.header.frame_id == 'target_3'   # the worker takes them: the newest wins
    assert reporter.count == 2 and mailbox.held and not resumed   # handled now: still held
    queue.waiting = [_target(4)]
    mailbox.handled()
    assert mailbox.held is False and resumed == [True]   # nothing waits here: the inputs thread looks again
    assert queue.waiting   # and target 4 is its to take
    assert mailbox.take() is None and resumed == [True]   # nothing held, nothing to wake
    mailbox.post(_target(5))
    mailbox.take()
    mailbox.post(_target(6))   # the inputs thread had it in hand when the handling began
    mailbox.handled()
    assert mailbox.held and resumed == [True]   # target 6 waits: still held, the worker takes it next
    assert mailbox.take().msg.header.frame_id == 'target_6'
    mailbox.handled()
    assert not mailbox.held and resumed == [True, True]


def test_a_waiting_target_put_back_never_replaces_a_newer_one():
    reporter = Reporter()
    mailbox = TargetMailbox(reporter)
    mailbox.post(_target(2))
    mailbox.post(_target(1, waited=True))
    assert mailbox.take().msg.header.frame_id == 'target_2' and reporter.count == 1
    mailbox.post(_target(3, waited=True))   # nothing newer: it waits again
    assert mailbox.take().msg.header.frame_id == 'target_3' and reporter.count == 1
