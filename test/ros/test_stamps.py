"""ros.stamps: monotonic instants as ROS stamps through one offset, against hand-made clocks."""
import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed')

from ik_solver.ros.stamps import MonotonicStamps, RESYNC  # noqa: E402, I100, I202
from rclpy.clock import ClockType  # noqa: E402
from rclpy.time import Time  # noqa: E402


class _Clocks:
    """A ROS clock ``offset`` ns ahead of a monotonic one; each monotonic read advances it by ``read`` ns."""

    clock_type = ClockType.SYSTEM_TIME

    def __init__(self, offset, read=500):
        self.mono, self.offset, self.read = 10_000_000_000, offset, read

    def monotonic_ns(self):
        self.mono += self.read
        return self.mono

    def now(self):
        return Time(nanoseconds=self.mono + self.offset, clock_type=self.clock_type)


def _ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def test_two_stamps_of_one_motion_differ_by_exactly_their_instants():
    """Reading both clocks anew put the time between the reads (here 7 us, then 61 us) into each stamp."""
    clocks = _Clocks(offset=1_700_000_000_000_000_000)
    stamps = MonotonicStamps(clocks, clocks.monotonic_ns)
    first = _ns(stamps.stamp(12.5))
    clocks.read = 7_000
    second = _ns(stamps.stamp(12.51))
    clocks.read = 61_000
    third = _ns(stamps.stamp(12.52))
    assert second - first == 10_000_000 and third - second == 10_000_000
    assert abs(first - (12_500_000_000 + clocks.offset)) <= 1_000


def test_a_step_of_the_ros_clock_moves_the_offset():
    clocks = _Clocks(offset=5_000_000_000)
    stamps = MonotonicStamps(clocks, clocks.monotonic_ns)
    before = _ns(stamps.stamp(20.0))
    clocks.offset += int(2 * RESYNC * 1e9)   # the system clock stepped
    after = _ns(stamps.stamp(20.0))
    assert after - before == pytest.approx(2 * RESYNC * 1e9, abs=2_000)


def test_a_stamp_turns_back_into_its_instant_through_the_same_offset():
    """instant() inverts stamp(); a preempted read (here 2 ms between the monotonic reads) moves neither."""
    clocks = _Clocks(offset=1_700_000_000_000_000_000)
    stamps = MonotonicStamps(clocks, clocks.monotonic_ns)
    stamp = _ns(stamps.stamp(42.125))
    clocks.read = 2_000_000
    assert stamps.instant(stamp) == pytest.approx(42.125, abs=1e-9)
    assert _ns(stamps.stamp(42.125)) == stamp


def test_the_first_offset_is_taken_from_the_quickest_of_several_reads():
    """A first read preempted (5 ms) would otherwise set an offset 2.5 ms off until the clocks part."""
    clocks = _Clocks(offset=3_000_000_000)
    reads = iter([500, 5_000_000] + [500] * 100)   # the first read of both clocks preempted between them
    tick = clocks.monotonic_ns

    def monotonic_ns():
        clocks.read = next(reads)
        return tick()
    stamps = MonotonicStamps(clocks, monotonic_ns)
    assert abs(_ns(stamps.stamp(1.0)) - (1_000_000_000 + clocks.offset)) <= 1_000
