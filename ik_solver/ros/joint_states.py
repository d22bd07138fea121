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

``CommandHistory`` replays the last trajectory the way the controller interpolates it: the start state
of the next move where the controller's own reference is not available, and where the arm can be.
"""
import bisect
from collections import deque
from dataclasses import replace
import threading
import time

import numpy as np
from rclpy.time import Time
from sensor_msgs.msg import JointState

from ..motion.jtc import SplineSampler, Trajectory
from ..motion.limits import MotionState
from ..motion.plausibility import Expectation, PlausibilitySettings, Reading, StatePlausibility, Verdict
from ..motion.timing import held, joined

#: Recent readings a newly configured model judges again (0.5 s at 100 Hz).
REJUDGED = 50
#: Velocity bound [rad/s or m/s] of a model built without velocity limits: continuity is then not checked.
UNCHECKED_SPEED = 1e6
#: Joint readings kept to resolve targets stamped in a moving link at their stamp.
HISTORY = 400
#: A state is on the last command's replay when it agrees this well (position [rad or m], velocity per s).
REPLAY_MATCH = 1e-6
#: A controller executes our last command when its reference agrees with the replay this well (position
#: [rad or m], velocity per s): far below what a speed-scaled or preempted trajectory drifts in one cycle.
FOLLOW_TOLERANCE = 1e-3
#: Commands kept to judge a controller's reference stamped before the newest (100 Hz: the last 0.64 s).
RECENT_COMMANDS = 64
#: A start whose joints all move slower than this (rad/s or m/s; accelerations: per s) is at rest.
REST_SPEED = 1e-3


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


class StateError(Exception):
    """No state to start a move from: ``reason`` is 'stale_state', 'inconsistent_state' or 'invalid_input'.

    ``verdict``: the plausibility model's Verdict, when it refused the state.
    """

    def __init__(self, reason, message, verdict=None):
        super().__init__(message)
        self.reason = reason
        self.verdict = verdict


class CommandHistory:
    """The last trajectory sent to the controller, with the instant it started (monotonic clock).

    It decides how the next move takes over (``next_move``): the controller joins a trajectory on arrival
    and skips what lies before it, with a step, so a move first goes on for a lead time with what the
    controller is executing, and departs from there.
    """

    def __init__(self):
        #: (t0, start MotionState, TimedPath, SplineSampler) of the last commands, oldest first
        self._recent = deque(maxlen=RECENT_COMMANDS)

    @property
    def _sent(self):
        """Return the last command (t0, start, path, sampler), or None."""
        return self._recent[-1] if self._recent else None

    def sent(self, start, path, t0=None):
        trajectory = Trajectory(path.times, path.positions, path.velocities, path.accelerations)
        sampler = SplineSampler(start.position, start.velocity, trajectory, start.acceleration)
        self._recent.append((time.monotonic() if t0 is None else t0, start, path, sampler))

    def next_move(self, start, plan, lead, follow=True):
        """Return (start, TimedPath): ``plan(state)``, a move from ``state``, departing ``lead`` s after ``start``.

        ``follow`` False (a Cartesian path, which must start at rest where it was planned): never carry a
        command under way; a start at rest holds, a moving one departs at once.

        - While the last command is under way (departed, not ended: its velocity may still be about zero),
          or the arm moves, the move continues that command exactly where ``start`` is its replay
          (``continuation``): the returned start is then the command's last point before ``start``, in the
          past.  A command that ends within the lead time is held at its end for the rest of it.  Where
          ``start`` is not the replay (the controller's reference or the measured state differ from it),
          the move departs at once.
        - Otherwise (at rest) it holds still first.  A re-target during that hold departs when the held
          move would have (held afresh, each target of a stream faster than the lead time would keep the
          arm at rest).
        """
        if lead <= 0.0:
            return start, plan(start)
        at_rest = max(np.abs(start.velocity).max(), np.abs(start.acceleration).max()) <= REST_SPEED
        if at_rest and not (follow and self._under_way(start.time)):
            departure = self.departure()
            if departure is not None and departure > start.time:
                lead = min(lead, departure - start.time)
            return start, held(plan(MotionState.at_rest(start.position)), start.position, lead)
        lead_in = self.continuation(start, lead) if follow else None
        if lead_in is None:
            return start, plan(start)
        origin, times, q, v, a = lead_in
        rest = lead - (times[-1] - (start.time - origin.time))  # the command ended that long before the lead time
        if rest > 0.0:
            return origin, joined(times, q, v, a, held(plan(MotionState.at_rest(q[-1])), q[-1], rest))
        return origin, joined(times, q, v, a, plan(MotionState(q[-1], v[-1], a[-1])))

    def _under_way(self, at):
        """Tell whether the last command has departed and not yet ended at monotonic time ``at``."""
        if self._sent is None:
            return False
        t0, _, path, _ = self._sent
        return t0 + path.hold <= at < t0 + path.duration

    def continuation(self, start, duration):
        """Return the last command around ``start`` as (origin, times, q, v, a), or None.

        ``origin`` (a MotionState with its monotonic instant) is the command's last point at or before
        ``start``, or its own start; times count from it, through the command's own points up to the first
        one at least ``duration`` after ``start`` (or its end).  A trajectory of these points stamped at the
        origin is exactly what the controller is executing: it joins it at any instant without a step, and
        a move planned from the last point departs without one.  None unless ``start`` (stamped with its
        monotonic instant) is the command's replay at that instant.
        """
        if self._sent is None:
            return None
        t0, first, path, sampler = self._sent
        at = start.time - t0
        if not _agrees(sampler, at, start, REPLAY_MATCH):
            return None
        i = int(np.searchsorted(path.times, at, side='right'))  # points at or before start: path.times[:i]
        last = min(int(np.searchsorted(path.times, at + duration)), len(path.times) - 1)
        if i > last:
            return None
        origin = MotionState(path.positions[i - 1], path.velocities[i - 1], path.accelerations[i - 1],
                             t0 + path.times[i - 1]) if i else replace(first, time=t0)
        keep = slice(i, last + 1)
        return (origin, path.times[keep] - (origin.time - t0), path.positions[keep], path.velocities[keep],
                path.accelerations[keep])

    def follows(self, reference):
        """Tell whether a controller's ``reference`` (MotionState at its monotonic ``time``) follows our commands.

        It is compared with the command that was our newest at its instant: a reference stamped before the
        newest command's start (the controller publishes it late, or has not taken that command yet) is
        judged against the one it was executing.  Each command continues the one before it exactly over
        the lead time, so following that one means following the newest.
        """
        if reference.time is None:
            return False
        for t0, _, _, sampler in reversed(self._recent):
            if t0 <= reference.time:
                return _agrees(sampler, reference.time - t0, reference, FOLLOW_TOLERANCE)
        return False

    def departure(self):
        """Return the monotonic instant the last command leaves its start (after its hold), or None."""
        if self._sent is None:
            return None
        t0, _, path, _ = self._sent
        return t0 + path.hold

    def reference(self, now=None):
        """Return the commanded state now, as the controller interpolates the last trajectory (held after its end)."""
        if self._sent is None:
            return None
        t0, _, _, sampler = self._sent
        q, v, a, _ = sampler.evaluate(np.array([(time.monotonic() if now is None else now) - t0]))
        return MotionState(q[0], v[0], a[0])

    def expectation(self, at, velocity_limits, pause):
        """Return where the arm can be at monotonic ``at`` under the last command (an Expectation), or None.

        Anywhere the command passes, and after its end as far as ``velocity_limits`` allow in the time since,
        counted up to ``pause`` [s] at most: a bound that grew with every second of rest would, after a pause,
        take any reading for one the command explains.
        """
        if self._sent is None:
            return None
        t0, start, path, sampler = self._sent
        low = np.minimum(start.position, path.positions.min(axis=0))
        high = np.maximum(start.position, path.positions.max(axis=0))
        drift = np.asarray(velocity_limits) * min(max(0.0, at - t0 - sampler.end_time), pause)
        return Expectation(low - drift, high + drift, origin=t0)


def _agrees(sampler, t, state, tolerance):
    """Tell whether a command's ``sampler`` at ``t`` has ``state``'s position and velocity within ``tolerance``."""
    q, v, _, _ = sampler.evaluate(np.array([t]))
    return np.abs(q[0] - state.position).max() <= tolerance and np.abs(v[0] - state.velocity).max() <= tolerance


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
        into the monotonic clock: readings queued behind a busy executor keep their own instants.
        """
        now = time.monotonic()
        arrival = now if arrival is None else arrival
        stamp = Time.from_msg(msg.header.stamp).nanoseconds
        described = arrival if stamp == 0 else now - (self._clock.now().nanoseconds - stamp) * 1e-9
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
