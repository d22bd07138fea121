"""Instants between the monotonic clock and the node's ROS clock (header stamps), through one fixed offset.

The commander times moves on the monotonic clock; a trajectory's header.stamp must be on the ROS clock the
controller reads.  Converting each instant by reading both clocks anew puts the few microseconds between the
two reads (milliseconds when the thread is preempted) into every stamp, so two trajectories that describe
one motion disagree on when its knots are: the controller then joins the second with a spike of
acceleration.  The same holds the other way: a joint_states reading placed on the monotonic clock by reading
both clocks anew looked up to tens of milliseconds older than it was on a loaded host, older than the
reading before it, and was refused as out of order.  One offset, kept until the clocks truly part (a clock
step, simulated time), converts every instant alike.
"""
import time

from rclpy.time import Time

#: Reading both clocks takes longer than this only when preempted: such a reading does not move the offset [s].
NOISY_READ = 1e-4
#: The clocks have parted (a step of the system clock, simulated time) when they disagree by more [s].
RESYNC = 0.005
#: Reads of both clocks the first offset is chosen from (the quickest): a first read preempted would
#: otherwise stand until the clocks part.
FIRST_READS = 5


class MonotonicStamps:
    """Converts monotonic instants to ROS ``builtin_interfaces/Time`` stamps with one offset."""

    def __init__(self, clock, monotonic_ns=time.monotonic_ns):
        """Convert to ``clock`` (an rclpy Clock, e.g. ``node.get_clock()``); ``monotonic_ns`` for tests."""
        self._clock = clock
        self._monotonic_ns = monotonic_ns
        self._offset_ns = None

    def stamp(self, instant):
        """Return the builtin_interfaces/Time of ``instant`` [s on the monotonic clock]."""
        self._update_offset()
        nanoseconds = int(round(instant * 1e9)) + self._offset_ns
        return Time(nanoseconds=nanoseconds, clock_type=self._clock.clock_type).to_msg()

    def instant(self, stamp_ns):
        """Return the monotonic instant [s] of a ROS time ``stamp_ns`` [ns on the clock] (a reading's stamp)."""
        self._update_offset()
        return (stamp_ns - self._offset_ns) * 1e-9

    def _update_offset(self):
        if self._offset_ns is None:
            self._offset_ns = min(self._read() for _ in range(FIRST_READS))[1]   # of the quickest read
            return
        duration, estimate = self._read()
        if duration <= NOISY_READ * 1e9 and abs(estimate - self._offset_ns) > RESYNC * 1e9:
            self._offset_ns = estimate

    def _read(self):
        """Return (ns the read took, the offset it gives [ns]) of one read of both clocks."""
        before = self._monotonic_ns()
        ros = self._clock.now().nanoseconds
        after = self._monotonic_ns()
        return after - before, ros - (before + after) // 2


def before_epoch(stamp):
    """Return why a header stamp (builtin_interfaces/Time) is no instant, or None.

    ``Time.from_msg`` raises on a negative stamp: a message carrying one is refused as malformed, with this
    reason, before any conversion.
    """
    if stamp.sec < 0:
        return f'header.stamp.sec is {stamp.sec}: a stamp before 1970 is no instant'
    return None
