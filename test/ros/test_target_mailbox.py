"""The IK node's one-slot target mailbox: the newest wins; superseding a target during a handling pauses the stream.

A subscription callback that supersedes a target while the worker handles another gets a Future and awaits
it: the executor takes no more targets meanwhile.  The worker then takes the targets from the subscription's
queue itself (here a list standing in for it), and the pause ends when it finds none waiting.
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


class Queue:
    """Stands in for the subscription's queue: the targets the worker finds there, and how often it looked."""

    def __init__(self):
        self.waiting, self.looks = [], 0

    def take(self):
        self.looks += 1
        taken, self.waiting = self.waiting, []
        return taken


def test_a_target_that_supersedes_another_during_a_handling_pauses_the_stream_until_the_worker_caught_up():
    reporter, wakes, nudges, queue = Reporter(), [], [], Queue()
    mailbox = TargetMailbox(reporter, lambda: wakes.append(True), lambda: nudges.append(True), queue.take)
    assert mailbox.post(_target(1)) is None
    assert mailbox.post(_target(2)) is None   # the worker rests or waits: targets replace each other freely
    assert mailbox.take().msg.header.frame_id == 'target_2'   # the newest wins, and is being handled
    assert queue.looks == 0   # no pause: the executor hands the targets over
    assert mailbox.post(_target(3)) is None   # the worker keeps up: the stream goes on
    paused = mailbox.post(_target(4))
    assert paused is not None and not paused.done()
    assert mailbox.post(_target(5)) is paused   # one pause, whatever replaced the target meanwhile
    assert reporter.count == 3
    mailbox.handled()
    assert not paused.done() and not nudges   # target_5 waits, and its post nudged the worker already
    queue.waiting = [_target(6), _target(7)]   # arrived meanwhile; the executor takes none during the pause
    assert mailbox.take().msg.header.frame_id == 'target_7'   # the worker takes them itself: the newest wins
    assert reporter.count == 5 and not paused.done()
    mailbox.handled()
    assert nudges == [True]   # the mailbox is empty: the worker looks in the queue again
    queue.waiting = [_target(8)]
    assert mailbox.take().msg.header.frame_id == 'target_8' and not paused.done()
    mailbox.handled()
    assert mailbox.take() is None   # caught up: nothing waits
    assert paused.done() and wakes == [True]   # the stream resumes, and the executor is woken to see it
    looks = queue.looks
    assert mailbox.post(_target(9)) is None   # no handling under way: no pause
    assert mailbox.take().msg.header.frame_id == 'target_9' and queue.looks == looks


def test_a_target_put_back_to_wait_during_a_pause_is_looked_at_again_after_the_idle_period_not_at_once():
    nudges = []
    mailbox = TargetMailbox(Reporter(), nudge=lambda: nudges.append(True))
    mailbox.post(_target(1))
    mailbox.take()
    mailbox.post(_target(2))
    assert mailbox.post(_target(3)) is not None   # paused
    mailbox.handled()
    waiting = mailbox.take()
    mailbox.post(Pending(waiting.msg, waiting.arrival, waited=True))   # put back: it waits for a joint state
    mailbox.handled()
    assert not nudges   # a nudge now would handle it again at once, and again: the worker would spin


def test_a_waiting_target_put_back_never_replaces_a_newer_one_nor_pauses():
    reporter = Reporter()
    mailbox = TargetMailbox(reporter)
    mailbox.post(_target(2))
    assert mailbox.post(_target(1, waited=True)) is None
    assert mailbox.take().msg.header.frame_id == 'target_2' and reporter.count == 1
