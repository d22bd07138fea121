"""The servo node's loop thread: one cycle per ``publish_period`` on monotonic ticks, each sent on its tick.

The thread computes each cycle ``PUBLISH_LEAD`` before its tick and the node
publishes the command on the tick (``wait_until``): the cycle's own time
(waking from sleep, waiting for the interpreter lock while the executor thread
runs a service or timer, the computation), up to that lead, then shifts when a
command is computed, not when it is sent.  The lead adds to the latency of a
command to a moving servo (one arriving within it waits for the next cycle),
hence its small bound.  A cycle that starts after its tick (the OS held the
thread) sends one command for now and the schedule restarts from it: missed
cycles are not caught up, as commands sent back to back would ask a forward
controller for a step.

Between cycles the thread takes the command and joint_states subscriptions
itself (``LoopInputs``), and takes what is waiting again just before each
cycle, so the cycle sees the newest command.  A command that wakes an idle
servo runs a cycle at once in its callback; the schedule then restarts from
that cycle (``kick``).
"""
import threading
import time

from . import spin

#: The loop thread wakes this long [s] (at most LEAD_FRACTION of the period) before a tick, computes the
#: cycle and waits for the tick to publish its command.  At 500 Hz a cycle needs ~0.4 ms from its wake-up
#: (median; 1.2 ms at p99 on the 2-core development machine), but each 0.1 ms of lead is 0.1 ms more
#: latency for a moving servo: 0.3 ms keeps that within 1 ms of an echo node's.
PUBLISH_LEAD = 0.0003
LEAD_FRACTION = 0.3


class ServoLoop(threading.Thread):
    """The loop thread: runs ``cycle(tick)`` once per ``period`` until ``stop``.

    Args:
        cycle: runs the cycle of monotonic ``tick`` [s] and returns None, or the time [s] of a cycle a
            command ran meanwhile (the schedule restarts from it).
        inputs: the node's LoopInputs (the subscriptions this thread takes between cycles).
        lock: the node's lock, held while a kick is handed over.
        logger: the node's logger (real-time scheduling refused).
        period: the publish period [s].
        priority: SCHED_FIFO priority to ask for (0: normal scheduling).
    """

    def __init__(self, cycle, inputs, lock, logger, period, priority=0):
        """Prepare the thread (``start`` runs it); see the class docstring for the arguments."""
        super().__init__(name='servo_loop', daemon=True)
        self._cycle, self._inputs, self._lock, self._logger = cycle, inputs, lock, logger
        self._period, self._priority = period, priority
        self._kicked = None   # time of a cycle run by a command to an idle servo, for this thread
        self._running = True

    def kick(self, at):
        """Restart the schedule from a cycle run at monotonic ``at`` [s] outside the loop (call with the lock held)."""
        self._kicked = at

    def take_kick(self):
        """Return the time of a cycle run since the loop last looked, or None, and forget it (lock held)."""
        kicked, self._kicked = self._kicked, None
        return kicked

    def stop(self, timeout=1.0):
        """End the thread after its current cycle; wait up to ``timeout`` [s] for it."""
        self._running = False
        self.join(timeout=timeout)

    def run(self):
        """Run one cycle per period on monotonic ticks, each computed ``PUBLISH_LEAD`` ahead and sent on its tick."""
        spin.real_time_or_warn(self._logger, self._priority, 'loop thread', 'its commands')
        period = self._period
        lead = min(PUBLISH_LEAD, LEAD_FRACTION * period)
        tick = time.monotonic()
        while self._running:
            self._inputs.new_cycle()
            restart = self._cycle(tick)
            tick = self._next_tick((tick if restart is None else restart) + period, lead)

    def _next_tick(self, tick, lead):
        """Take inputs until the cycle of ``tick`` is due, ``lead`` before it; return that tick.

        A command that wakes an idle servo runs a cycle at once, and the schedule
        restarts from it.  A cycle due when its tick has already passed (the OS
        delayed the thread) runs now, for now, and the schedule restarts from it:
        the cycles missed are not caught up, since their commands would leave
        back to back (a forward_position_controller applies each as it comes).
        """
        while True:
            with self._lock:
                restart = self.take_kick()
            if restart is not None:
                tick = restart + self._period
            now = time.monotonic()
            remaining = tick - lead - now
            if remaining <= 0:
                return tick if now < tick else now
            self._inputs.take(remaining)


def wait_until(t):
    """Return at monotonic ``t`` (at once if None or past), busy: a sleep would give the interpreter lock away.

    Called with at most ``PUBLISH_LEAD`` to go; sleeping, the loop thread would
    have to win the lock back from the executor thread at the tick.
    """
    if t is None:
        return
    while time.monotonic() < t:
        pass
