"""The IK node's one-slot target mailbox: the newest wins, each replaced target is counted once, a handling holds."""
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


def test_the_newest_target_wins_and_each_replaced_one_is_counted():
    reporter = Reporter()
    mailbox = TargetMailbox(reporter)
    assert mailbox.take() is None
    for k in (1, 3, 2):   # 2 was received before 3, posted after it (two threads took them): 3 stays
        mailbox.post(_target(k))
    assert mailbox.take().msg.header.frame_id == 'target_3'
    assert reporter.count == 2
    assert mailbox.take() is None   # taken: the mailbox is empty
    mailbox.post(_target(4))
    assert mailbox.take().msg.header.frame_id == 'target_4' and reporter.count == 2


def test_a_target_taken_is_being_handled_until_handled_which_resumes_the_inputs():
    resumed = []
    mailbox = TargetMailbox(Reporter(), resume=lambda: resumed.append(True))
    assert mailbox.take() is None and not mailbox.handling   # nothing taken: nothing held
    mailbox.post(_target(1))
    assert not mailbox.handling
    mailbox.take()
    assert mailbox.handling and not resumed   # the inputs thread leaves the subscription alone meanwhile
    mailbox.post(_target(2))   # one it had taken already still arrives
    mailbox.handled()
    assert not mailbox.handling and resumed == [True]
    assert mailbox.take().msg.header.frame_id == 'target_2' and mailbox.handling


def test_a_waiting_target_put_back_never_replaces_a_newer_one():
    reporter = Reporter()
    mailbox = TargetMailbox(reporter)
    mailbox.post(_target(2))
    mailbox.post(_target(1, waited=True))
    assert mailbox.take().msg.header.frame_id == 'target_2' and reporter.count == 1
    mailbox.post(_target(3, waited=True))   # nothing newer: it waits again
    assert mailbox.take().msg.header.frame_id == 'target_3' and reporter.count == 1
