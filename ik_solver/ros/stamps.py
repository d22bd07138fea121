"""Header stamps on the node's ROS clock for instants on the monotonic clock, through one fixed offset.

The commander times moves on the monotonic clock; a trajectory's header.stamp must be on the ROS clock the
controller reads.  Converting each instant by reading both clocks anew puts the few microseconds between the
two reads (milliseconds when the thread is preempted) into every stamp, so two trajectories that describe
one motion disagree on when its knots are: the controller then joins the second with a spike of
acceleration.  One offset, kept until the clocks truly part (a clock step, simulated time), converts every
instant alike.
"""
import time

from rclpy.time import Time

#: Reading both clocks takes longer than this only when preempted: such a reading does not move the offset [s].
NOISY_READ = 1e-4
#: The clocks have parted (a step of the system clock, simulated time) when they disagree by more [s].
RESYNC = 0.005


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

    def _update_offset(self):
        before = self._monotonic_ns()
        ros = self._clock.now().nanoseconds
        after = self._monotonic_ns()
        if self._offset_ns is not None and after - before > NOISY_READ * 1e9:
            return
        estimate = ros - (before + after) // 2
        if self._offset_ns is None or abs(estimate - self._offset_ns) > RESYNC * 1e9:
            self._offset_ns = estimate
