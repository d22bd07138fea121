"""The arm's measured state, and whether it may be trusted to start a move from.

A dead driver's last reading, a spoofed message, a driver restart publishing
zeros or a joint beyond its limit must never seed a move.  ``JointStateTracker``
hands every reading to a ``motion.plausibility.StatePlausibility`` (the one
model both nodes use: form, limits, stamps, continuity within the limits with
a bound capped over a pause, a run of consistent readings after a pause, and
agreement with the commands sent) and answers ``state()`` with the believed
state only, else a ``StateError`` with the model's reason.  Readings are aged
from the instant the middleware received them on this host (robust to
readings queued behind a busy executor) and ordered by their header stamps.

``StateError`` (``motion.start_state``) is raised here and by the commander alike.
"""
import bisect
from collections import deque
from dataclasses import replace
import threading
import time

import numpy as np
from rclpy.time import Time
from sensor_msgs.msg import JointState

from .stamps import before_epoch, MonotonicStamps
from ..motion.plausibility import PlausibilitySettings, Reading, StatePlausibility, Verdict
from ..motion.start_state import StateError

#: Recent readings a newly configured model judges again (0.5 s at 100 Hz).
REJUDGED = 50
#: Velocity bound [rad/s or m/s] of a model built without velocity limits: continuity is then not checked.
UNCHECKED_SPEED = 1e6
#: Joint readings kept to resolve targets stamped in a moving link at their stamp.
HISTORY = 400


def received_ago(info):
    """Seconds since the middleware received a message (``MessageInfo``; 0 without a reception stamp).

    A busy executor runs queued callbacks late; judged by callback time, a dead
    driver's queued readings would look fresh.  The reception stamp is this
    machine's system clock, so it is comparable with ``time.time_ns()`` here
    whatever the sender's clock says.
    """
    received = info.get('received_timestamp', 0) if info is not None else 0
    return max(0.0, (time.time_ns() - received) * 1e-9) if received else 0.0


def received_monotonic(info):
    """Monotonic time at which the middleware received a message, not when its callback ran (``received_ago``)."""
    return time.monotonic() - received_ago(info)


class JointStateTracker:
    """Joint readings from ``topic``, judged by a ``StatePlausibility``; see the module docstring.

    ``configure`` names the chain and its limits (until then ``state`` builds the model from its own
    arguments).  ``timeout`` and ``tolerance`` may be changed at any time; what is believed stays.
    """

    def __init__(self, node, topic='joint_states', timeout=0.5, callback_group=None, tolerance=0.1):
        self._timeout, self._tolerance = timeout, tolerance
        self._thresholds = {}
        self._lock = threading.Lock()
        self._model = None       # StatePlausibility of the configured chain
        self._expect = None      # at -> Expectation or None: where our commands can have put the arm
        self._recent = deque(maxlen=REJUDGED)   # (Reading, callback time): judged again by a new model
        self._positions = {}     # name -> newest finite position (frames and FK, not checked)
        self._seen = set()       # names that have had a reading, good or bad
        self._arrivals = deque(maxlen=100)
        self._history = deque(maxlen=HISTORY)   # (header stamp [ns], {name: position})
        self._clock = node.get_clock()
        self._stamps = MonotonicStamps(self._clock)
        self._logger = node.get_logger()
        node.create_subscription(JointState, topic, self._on_message_with_info, 10, callback_group=callback_group)

    @property
    def timeout(self):
        """Return the age [s] beyond which the believed state is stale."""
        return self._timeout

    @timeout.setter
    def timeout(self, value):
        self._timeout = value
        self._retune()

    @property
    def tolerance(self):
        """Return the sensor noise and tracking error a reading may add to any bound [rad or m]."""
        return self._tolerance

    @tolerance.setter
    def tolerance(self, value):
        self._tolerance = value
        self._retune()

    def configure(self, limits, expect=None, **thresholds):
        """Judge the readings of ``limits.names`` (motion.limits.JointLimits) from now on.

        ``expect(at)``: an Expectation (where the commands sent can have put the arm at monotonic ``at``), or
        None; ``thresholds``: PlausibilitySettings fields other than the limits, timeout and tolerance.  The
        chain's recent readings are judged again, so a model loaded while readings flow starts believing at once.
        """
        self._thresholds = dict(thresholds)
        settings = self._settings(limits.names, limits.lower, limits.upper, limits.velocity, limits.acceleration)
        with self._lock:
            self._expect = expect
            self._install(settings)

    def _settings(self, names, lower, upper, velocity, acceleration=None):
        return PlausibilitySettings(tuple(names), lower, upper, velocity, acceleration, tolerance=self._tolerance,
                                    timeout=self._timeout, **self._thresholds)

    def _install(self, settings):
        """Use ``settings``: the same joints keep what is believed, others are judged afresh (lock held)."""
        if self._model is not None and self._model.settings.names == settings.names:
            self._model.settings = settings
            return
        self._model = StatePlausibility(settings)
        for reading, now in self._recent:
            if self._concerns(reading.names):
                self._model.update(reading, now)

    def _retune(self):
        with self._lock:
            if self._model is not None:
                s = self._model.settings
                self._model.settings = replace(s, tolerance=self._tolerance, timeout=self._timeout)

    def _concerns(self, names):
        return any(name in self._model.settings.names for name in names)

    def _on_message_with_info(self, msg, info):
        self.on_message(msg, received_monotonic(info))

    def on_message(self, msg, arrival=None):
        """Judge a reading that reached this process at monotonic ``arrival`` (default: now).

        The instant it describes is its header stamp on the node's clock (a zero stamp: its arrival), turned
        into the monotonic clock through one fixed offset (``stamps.MonotonicStamps``): readings queued behind
        a busy executor keep their own instants, and successive readings keep their order.
        """
        problem = before_epoch(msg.header.stamp)
        if problem is not None:
            self._logger.warning(f'joint_states refused: {problem}', throttle_duration_sec=2.0)
            return
        now = time.monotonic()
        arrival = now if arrival is None else arrival
        stamp = Time.from_msg(msg.header.stamp).nanoseconds
        described = arrival if stamp == 0 else self._stamps.instant(stamp)
        reading = Reading(tuple(msg.name), tuple(msg.position), tuple(msg.velocity), described, arrival)
        with self._lock:
            self._arrivals.append(arrival)
            self._seen.update(reading.names)
            if _malformed(msg) is None:
                self._remember(reading, stamp or self._clock.now().nanoseconds)
            self._recent.append((reading, now))
            if self._model is None or not self._concerns(reading.names):
                return
            expected = self._expect(described) if self._expect is not None else None
            result = self._model.update(reading, now, expected)
        if not result.believed and result.verdict != Verdict.SETTLING:
            self._logger.warning(f'joint_states refused: {result.message}', throttle_duration_sec=2.0)

    def _remember(self, reading, stamp):
        for name, q in zip(reading.names, reading.position):
            if np.isfinite(q):
                self._positions[name] = float(q)
        self._history.append((stamp, dict(self._positions)))

    def has(self, names):
        """Whether every joint of ``names`` has had a reading (good or bad)."""
        with self._lock:
            return all(n in self._seen for n in names)

    def settling(self, names):
        """Whether the readings of ``names`` are arriving but not yet believed (a start, or after a pause)."""
        with self._lock:
            if self._model is None or self._model.settings.names != tuple(names):
                return False
            return self._model.assess(time.monotonic()).verdict in (Verdict.NO_READING, Verdict.SETTLING)

    def positions(self):
        """{name: position} of every joint seen (for frames and FK; not checked)."""
        with self._lock:
            return dict(self._positions)

    def positions_at(self, stamp):
        """{name: position} measured at builtin_interfaces Time ``stamp``: the newest at or before it.

        A zero stamp, or one older than the kept history, gives the newest (or the oldest kept) reading.
        """
        at = Time.from_msg(stamp).nanoseconds
        with self._lock:
            if at == 0 or not self._history:
                return dict(self._positions)
            stamps = [s for s, _ in self._history]
            k = max(0, bisect.bisect_right(stamps, at) - 1)
            return dict(self._history[k][1])

    def age(self):
        """Seconds since the newest joint_states message, or None before the first."""
        with self._lock:
            return time.monotonic() - self._arrivals[-1] if self._arrivals else None

    def rate(self):
        """Messages per second over the last 100 (0 before two have arrived)."""
        with self._lock:
            if len(self._arrivals) < 2 or self._arrivals[-1] <= self._arrivals[0]:
                return 0.0
            return (len(self._arrivals) - 1) / (self._arrivals[-1] - self._arrivals[0])

    def state(self, names, lower=None, upper=None, velocity=None):
        """Return the believed MotionState of ``names`` (acceleration zero, ``time`` its monotonic instant).

        Raises StateError with the model's reason and message.  Before ``configure`` the model is built from
        ``lower``, ``upper`` and ``velocity`` (None: continuity is not checked, only freshness, form, limits
        and the run of consistent readings a start needs).
        """
        with self._lock:
            if self._model is None or self._model.settings.names != tuple(names):
                n = len(names)
                self._install(self._settings(
                    names, np.full(n, -np.inf) if lower is None else lower, np.full(n, np.inf) if upper is None
                    else upper, np.full(n, UNCHECKED_SPEED) if velocity is None else velocity))
            result = self._model.assess(time.monotonic())
        if not result.believed:
            raise StateError(result.reason, result.message, result.verdict)
        return result.state


def _malformed(msg):
    """Why a JointState message cannot be read as a whole, or None."""
    names = list(msg.name)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        return f'duplicate joint names {", ".join(duplicates)}'
    if len(msg.position) != len(names):
        return f'{len(names)} names but {len(msg.position)} positions'
    if len(msg.velocity) not in (0, len(names)):
        return f'{len(names)} names but {len(msg.velocity)} velocities'
    return None
