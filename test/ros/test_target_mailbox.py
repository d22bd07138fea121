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


def _stamped(k, stamp_ns, arrival):
    pending = _target(k)
    pending.msg.header.stamp.sec, pending.msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    pending.arrival = arrival
    return pending


def test_stamped_targets_are_ordered_by_stamp_and_one_older_than_the_last_taken_is_superseded():
    reporter, clock = Reporter(), [3_000_000_000]
    mailbox = TargetMailbox(reporter, now_ns=lambda: clock[0], max_age=lambda: 1.5)
    mailbox.post(_stamped(2, 2_000_000_000, arrival=1.0))
    mailbox.post(_stamped(1, 1_000_000_000, arrival=2.0))   # received later, stamped earlier: held up on its way
    assert mailbox.take().msg.header.frame_id == 'target_2' and reporter.count == 1
    mailbox.handled()
    mailbox.post(_stamped(3, 1_500_000_000, arrival=3.0))   # stamped before the one taken: never acted on
    assert mailbox.take() is None and reporter.count == 2
    mailbox.post(_stamped(4, 2_000_000_001, arrival=4.0))
    assert mailbox.take().msg.header.frame_id == 'target_4'
    mailbox.handled()
    mailbox.post(_stamped(6, 1_000_000_000, arrival=5.0))   # stamped before, and expired: the worker says so
    assert mailbox.take().msg.header.frame_id == 'target_6' and reporter.count == 2
    mailbox.handled()
    clock[0] = 1_000_000_000   # the clock went back (a simulation restarted): stamps start again
    mailbox.post(_stamped(5, 900_000_000, arrival=5.0))
    assert mailbox.take().msg.header.frame_id == 'target_5' and reporter.count == 2


def test_an_unstamped_target_is_ordered_by_its_arrival():
    reporter = Reporter()
    mailbox = TargetMailbox(reporter, now_ns=lambda: 3_000_000_000)
    mailbox.post(_stamped(1, 2_000_000_000, arrival=1.0))
    mailbox.take()
    mailbox.handled()
    mailbox.post(_stamped(2, 0, arrival=2.0))   # no stamp: no instant to compare, taken
    mailbox.post(_stamped(3, 1_000_000_000, arrival=1.5))   # stamped before the last taken: superseded
    assert mailbox.take().msg.header.frame_id == 'target_2' and reporter.count == 1


def test_after_the_clock_went_back_a_new_target_beats_one_waiting_from_before():
    reporter, clock = Reporter(), [100_000_000_000]
    mailbox = TargetMailbox(reporter, now_ns=lambda: clock[0])
    mailbox.post(_stamped(1, 99_000_000_000, arrival=1.0))
    old = mailbox.take()
    mailbox.post(old)   # it waits (for consistent joint states), put back
    mailbox.handled()
    clock[0] = 1_000_000_000   # the simulation restarted
    mailbox.post(_stamped(2, 900_000_000, arrival=2.0))
    assert mailbox.take().msg.header.frame_id == 'target_2'


def test_a_stamp_ahead_of_the_clock_orders_by_arrival_and_counts_as_the_clock_when_taken():
    reporter = Reporter()
    mailbox = TargetMailbox(reporter, now_ns=lambda: 10_000_000_000)
    mailbox.post(_stamped(1, 11_000_000_000, arrival=1.0))   # a sender one second ahead
    mailbox.post(_stamped(2, 9_000_000_000, arrival=2.0))
    assert mailbox.take().msg.header.frame_id == 'target_2'   # received later
    mailbox.handled()
    mailbox.post(_stamped(3, 10_500_000_000, arrival=3.0))
    mailbox.take()
    mailbox.handled()
    mailbox.post(_stamped(4, 9_500_000_000, arrival=4.0))   # before the clock when target 3 was taken
    assert mailbox.take() is None and reporter.count == 2
    mailbox.post(_stamped(5, 10_200_000_000, arrival=5.0))   # ahead of it: cannot be ordered against 3, acted on
    assert mailbox.take().msg.header.frame_id == 'target_5' and reporter.count == 2
