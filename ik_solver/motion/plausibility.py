"""Whether a measured joint state may be believed: one model for every node that starts motion from one.

A move or a servo stream starts from the arm's state.  A reading that lies
(a spoofed message, a driver that restarts and publishes zeros before its
encoders are read, a replayed or future-stamped message) becomes a step in the
first command.  ``StatePlausibility`` believes a reading only when it agrees

- with itself: every joint given once, finite, within the position limits
  (``limit_slack`` of encoder noise is clamped), a reported velocity within
  ``velocity_factor`` times the limit;
- with time: stamped no later than now (``clock_tolerance``) and not before the
  last believed reading; a stamp after now but within the tolerance is taken
  as now, so a reading dated ahead gains no reach from its stamp (else a lie
  stamped ahead of a true stream would be granted the stream's delivery delay
  as travel time, and, once believed, would make the true readings look out of
  order);
- with what the arm can have done since the last believed reading: within
  ``tolerance`` plus the distance the velocity and acceleration limits allow in
  the elapsed time, an elapsed time counted up to ``pause`` at most, so the
  bound does not grow over a pause;
- with our commands, when the caller gives an ``Expectation`` (where the
  commands sent can have put the arm at the reading's instant), within
  ``tolerance``; a run of consistent readings outside it (another client moved
  the arm) overrules it for the rest of the newest command.

After a pause longer than ``pause`` (and before the first reading) no reading
is believed on its own: a run of at least ``settle_count`` mutually consistent
readings spanning ``settle_time`` is needed first.  A reading that breaks the
continuity bound or lies off our commands starts such a run too, and a run
that contradicts what was believed (beyond the pause's reach, or off the
command) must span ``resettle_time``: the more surprising the state, the more
evidence it needs.  A driver that restarts and publishes zeros for a fraction
of a second, or a lie that persists alone while the true driver is silent, is
therefore never believed; one interleaved with the truth never either.  A state
that persists for ``resettle_time`` is the arm's (another client moved it, or
it was moved by hand while the driver was down).

Like Ruckig, the input, the settings and the result are named types and the
verdict is an enum: ``update`` judges one reading, ``assess`` answers "may a
motion start from the state now?".  Times are seconds on one clock chosen by
the caller (monotonic in the nodes), positions radians or metres.
"""
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from .limits import MotionState

#: Default tracking and sensor tolerance [rad or m] (the nodes' state_tolerance).
TOLERANCE = 0.1
#: Readings this far beyond a position limit are clamped onto it (encoder noise) [rad or m].
LIMIT_SLACK = 0.01
#: A reported velocity up to this multiple of its limit is noise; beyond it the reading is refused.
VELOCITY_FACTOR = 1.5
#: Longest gap between readings across which continuity is assumed [s]; the reach bound stops growing here.
PAUSE = 0.25
#: Readings a run after a pause needs before it is believed.
SETTLE_COUNT = 5
#: Time a run after a pause must span before it is believed [s].
SETTLE_TIME = 0.1
#: Time a run must span when it contradicts the last believed state or our commands [s]: longer than a
#: driver's start-up readings of zeros or a burst of lies, short enough for a person to wait after a restart.
RESETTLE_TIME = 1.0
#: Stamps may lie this far after now (clock offsets between processes) [s].
CLOCK_TOLERANCE = 0.02
#: Name orders of readings remembered (a source sends one order; a flood of orders only refills this).
ORDERS_KEPT = 16
#: Stamps are nanoseconds: spans equal within this are equal [s].
STAMP_RESOLUTION = 1e-9
#: A believed state older than this gives no motion [s] (the nodes' joint_states_timeout).
TIMEOUT = 0.5


class Verdict(IntEnum):
    """What ``update`` or ``assess`` concluded; only BELIEVED lets a motion start."""

    BELIEVED = 0
    NO_READING = 1           # nothing believed yet
    STALE = 2                # the believed state is older than the timeout
    SETTLING = 3             # after a pause: a run of consistent readings is not yet long enough
    MALFORMED = 4            # joints missing or repeated, or lengths that do not match
    NOT_FINITE = 5           # NaN or inf
    FUTURE_STAMP = 6         # stamped after now beyond the clock tolerance
    OUT_OF_ORDER = 7         # stamped before the last believed reading
    OUTSIDE_LIMITS = 8       # a position beyond its limit by more than the slack
    VELOCITY_BEYOND_LIMIT = 9  # a reported velocity beyond velocity_factor x its limit
    JUMPED = 10              # moved further than the limits allow since the last believed reading
    OFF_COMMAND = 11         # not where the commands sent can have put the arm


#: The nodes' status reason of each verdict (SolveIK reason names).
REASONS = {
    Verdict.BELIEVED: 'success',
    Verdict.NO_READING: 'stale_state',
    Verdict.STALE: 'stale_state',
    Verdict.SETTLING: 'stale_state',
    Verdict.MALFORMED: 'invalid_input',
    Verdict.NOT_FINITE: 'invalid_input',
    Verdict.FUTURE_STAMP: 'inconsistent_state',
    Verdict.OUT_OF_ORDER: 'inconsistent_state',
    Verdict.OUTSIDE_LIMITS: 'inconsistent_state',
    Verdict.VELOCITY_BEYOND_LIMIT: 'inconsistent_state',
    Verdict.JUMPED: 'inconsistent_state',
    Verdict.OFF_COMMAND: 'inconsistent_state',
}


@dataclass(frozen=True)
class PlausibilitySettings:
    """Limits and thresholds of the model, joints in chain order.

    - names: joint names, the order of every array here and of the believed state;
    - lower, upper: position limits [rad or m];
    - velocity: velocity limits [rad/s or m/s] the arm cannot exceed;
    - acceleration: acceleration limits [rad/s^2 or m/s^2]; None or inf: velocity alone bounds the reach;
    - tolerance: sensor noise and tracking error a reading may add to any bound [rad or m];
    - limit_slack: encoder noise beyond a position limit that is clamped, not refused [rad or m];
    - velocity_factor: a reported velocity may reach this multiple of its limit;
    - pause: longest gap between readings across which continuity is assumed [s];
    - settle_count, settle_time: the run of consistent readings a pause requires (count, span [s]);
    - resettle_time: the span [s] a run needs when it contradicts the believed state or our commands;
    - clock_tolerance: how far after now a stamp may lie [s];
    - timeout: age [s] (since reception) beyond which the believed state is stale;
    - source: what the readings are called in messages (e.g. 'joint_states', 'controller_state').
    """

    names: tuple
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray = None
    tolerance: float = TOLERANCE
    limit_slack: float = LIMIT_SLACK
    velocity_factor: float = VELOCITY_FACTOR
    pause: float = PAUSE
    settle_count: int = SETTLE_COUNT
    settle_time: float = SETTLE_TIME
    resettle_time: float = RESETTLE_TIME
    clock_tolerance: float = CLOCK_TOLERANCE
    timeout: float = TIMEOUT
    source: str = 'joint_states'

    def __post_init__(self):
        """Turn the limits into arrays of one value per joint; ValueError names what does not fit."""
        n = len(self.names)
        for name in ('lower', 'upper', 'velocity', 'acceleration'):
            value = getattr(self, name)
            array = np.full(n, np.inf) if value is None else np.asarray(value, dtype=float)
            if array.shape != (n,):
                raise ValueError(f'{name} has {array.size} values for {n} joints')
            object.__setattr__(self, name, array)
        object.__setattr__(self, 'names', tuple(self.names))
        if len(set(self.names)) != n:
            raise ValueError(f'joint names repeat: {list(self.names)}')
        if not np.all(self.velocity > 0.0) or not np.all(self.acceleration > 0.0):
            raise ValueError('velocity and acceleration limits must be > 0')
        for name in ('tolerance', 'limit_slack', 'pause', 'settle_time', 'resettle_time', 'clock_tolerance',
                     'timeout'):
            if not 0.0 <= getattr(self, name) < np.inf:
                raise ValueError(f'{name} must be finite and >= 0, got {getattr(self, name)}')
        if self.velocity_factor < 1.0 or self.settle_count < 1:
            raise ValueError('velocity_factor must be >= 1 and settle_count >= 1')
        finite = np.isfinite(self.acceleration)
        object.__setattr__(self, '_inverse_acceleration', 1.0 / self.acceleration)
        object.__setattr__(self, '_half_acceleration', np.where(finite, 0.5 * self.acceleration, 0.0))
        object.__setattr__(self, '_fastest', self.velocity_factor * self.velocity)

    @classmethod
    def from_limits(cls, limits, **thresholds):
        """Return settings for ``limits`` (motion.limits.JointLimits); ``thresholds`` override the defaults."""
        return cls(limits.names, limits.lower, limits.upper, limits.velocity, limits.acceleration, **thresholds)

    def reach(self, speed, elapsed):
        """Farthest each joint can travel in ``elapsed`` s starting at ``speed`` (|velocity|) [rad or m].

        It accelerates at the limit up to the velocity limit, then cruises; ``elapsed`` is capped at ``pause``.
        """
        t = min(max(elapsed, 0.0), self.pause)
        v0 = np.minimum(np.abs(speed), self.velocity)
        ramp = np.minimum(t, (self.velocity - v0) * self._inverse_acceleration)   # time to reach the limit
        return self.velocity * t - (self.velocity - v0) * ramp + self._half_acceleration * ramp * ramp


@dataclass(frozen=True)
class Reading:
    """One measurement of the joints.

    - names: joint names (any order; joints the settings do not know are ignored);
    - position: positions [rad or m], one per name;
    - velocity: velocities [rad/s or m/s], one per name, or None (or empty) when the source gives none;
    - stamp: the instant the reading describes [s, the model's clock];
    - received: when it reached this process [s, the same clock]; None: ``stamp``.  Staleness counts from it.
    """

    names: tuple
    position: tuple
    velocity: tuple = None
    stamp: float = 0.0
    received: float = None


@dataclass(frozen=True)
class Expectation:
    """Where the commands sent can have put the arm at a reading's instant: [lower, upper] per joint [rad or m].

    The model adds its ``tolerance`` (tracking error) to these bounds.  ``origin`` names the command (e.g. its
    start instant): a run of consistent readings outside it (the arm moved by something else) waives it for
    the rest of that command; None: never waived.
    """

    lower: np.ndarray
    upper: np.ndarray
    origin: float = None


@dataclass(frozen=True)
class Assessment:
    """The model's answer: a verdict, a message for people, and the believed state when there is one.

    ``state`` (chain order, clamped into the limits, acceleration zero, ``time`` = the reading's stamp, at most
    the instant it was judged) is set only for BELIEVED.
    """

    verdict: Verdict
    message: str = ''
    state: MotionState = None

    @property
    def believed(self):
        """Tell whether the state may be started from."""
        return self.verdict == Verdict.BELIEVED

    @property
    def reason(self):
        """Return the nodes' status name of the verdict: success, stale_state, inconsistent_state, invalid_input."""
        return REASONS[self.verdict]


@dataclass
class _Record:
    position: np.ndarray
    velocity: np.ndarray          # zeros when the reading gives none
    speed: np.ndarray             # |velocity|, or the velocity limits when the reading gives none
    stamp: float
    received: float


class StatePlausibility:
    """Judges readings one by one and keeps the last believed state; see the module docstring.

    Not thread-safe: one thread feeds and asks (the nodes hold a lock around it).
    """

    def __init__(self, settings):
        """Start with nothing believed, under PlausibilitySettings ``settings``."""
        self._settings = settings
        self._orders = {}              # names of a reading -> index of each chain joint in it
        self.reset()

    @property
    def settings(self):
        """Return the PlausibilitySettings in force."""
        return self._settings

    @settings.setter
    def settings(self, settings):
        """Take new thresholds and keep what is believed; other joint names start afresh."""
        same = settings.names == self._settings.names
        self._settings = settings
        self._orders = {}
        if not same:
            self.reset()

    def reset(self):
        """Forget every reading: the next ones must settle as after a pause."""
        self._believed = None          # _Record
        self._run = []                 # [_Record] after a pause or a jump, oldest first
        self._surprising = False       # the run contradicts the believed state or the command: resettle_time
        self._waived = None            # origin of the Expectation a settled run overruled
        self._newest = Assessment(Verdict.NO_READING, 'no joint state received yet')
        self._newest_received = -np.inf

    @property
    def believed(self):
        """Return the last believed state (MotionState, ``time`` its stamp), however old, or None."""
        b = self._believed
        return None if b is None else _state(b)

    def update(self, reading, now, expected=None):
        """Judge one ``reading`` at time ``now``; ``expected``: an Expectation at its stamp, or None.

        Return an Assessment: BELIEVED with the state, or the refusal's verdict and message; ``assess``
        answers with it until the next reading.
        """
        self._newest = self._judge(reading, now, expected)
        self._newest_received = reading.stamp if reading.received is None else reading.received
        return self._newest

    def assess(self, now):
        """May a motion start from the state at ``now``?  The newest reading's verdict, aged.

        Return an Assessment: BELIEVED with the state when the newest reading was believed and was received at
        most ``timeout`` s before ``now``; STALE when the newest reading is older; otherwise its refusal.
        """
        newest = self._newest
        if newest.verdict == Verdict.NO_READING:
            return newest
        age = now - self._newest_received
        if age > self._settings.timeout:
            s = self._settings
            name = 'joint_states_timeout' if s.source == 'joint_states' else 'timeout'
            return Assessment(Verdict.STALE, f'{s.source} are {age:.2f} s old ({name} {s.timeout:g} s)')
        return newest

    # -- the checks, in order ---------------------------------------------------------------------------------

    def _judge(self, reading, now, expected):
        s = self._settings
        record = self._record(reading)
        if isinstance(record, Assessment):
            return record
        if record.stamp > now + s.clock_tolerance:
            return Assessment(Verdict.FUTURE_STAMP, f'{s.source} stamped {record.stamp - now:.3f} s in the future '
                                                    f'(clock tolerance {s.clock_tolerance:g} s)')
        record.stamp = min(record.stamp, now)   # ahead within the clock tolerance: now, no reach gained
        b = self._believed
        if b is not None and record.stamp < b.stamp:
            return Assessment(Verdict.OUT_OF_ORDER, f'{s.source} stamped {b.stamp - record.stamp:.3f} s before '
                                                    'the last believed reading')
        refusal = self._within_limits(record)
        if refusal is not None:
            return refusal
        off = self._expected(record, expected)
        if off is not None and expected.origin is None:
            return off
        jump = None if b is None else self._jump(b, record)
        if off is None and b is not None and record.stamp - b.stamp <= s.pause:
            if jump is None:
                return self._believe(record)
            return self._settle(record, Assessment(Verdict.JUMPED, jump), surprising=True)
        return self._settle(record, off, expected if off is not None else None,
                            surprising=off is not None or jump is not None)

    def _record(self, reading):
        """Return the reading in chain order as a _Record, or the Assessment refusing it."""
        s = self._settings
        names = list(reading.names)
        position = np.asarray(reading.position, dtype=float).ravel()
        velocity = None if reading.velocity is None or len(reading.velocity) == 0 else \
            np.asarray(reading.velocity, dtype=float).ravel()
        if len(set(names)) != len(names):
            repeated = sorted({n for n in names if names.count(n) > 1})
            return Assessment(Verdict.MALFORMED, f'duplicate joint names {", ".join(repeated)}')
        if position.size != len(names) or (velocity is not None and velocity.size != len(names)):
            given = f'{position.size} positions' if position.size != len(names) else f'{velocity.size} velocities'
            return Assessment(Verdict.MALFORMED, f'{len(names)} names but {given}')
        order = self._order(tuple(names))
        if isinstance(order, Assessment):
            return order
        q = position[order]
        v = np.zeros(len(order)) if velocity is None else velocity[order]
        bad = ~np.isfinite(q) | ~np.isfinite(v)
        if bad.any() or not np.isfinite(reading.stamp):
            joint = s.names[int(np.argmax(bad))] if bad.any() else 'the stamp'
            return Assessment(Verdict.NOT_FINITE, f'{s.source} has NaN or inf for {joint}')
        received = reading.stamp if reading.received is None else reading.received
        speed = s.velocity if velocity is None else np.abs(v)
        return _Record(q, v, speed, float(reading.stamp), float(received))

    def _order(self, names):
        """Return the index in ``names`` of each chain joint, or the Assessment naming those missing."""
        cached = self._orders.get(names)
        if cached is not None:
            return cached
        where = {name: i for i, name in enumerate(names)}
        missing = [name for name in self._settings.names if name not in where]
        if missing:
            return Assessment(Verdict.MALFORMED, f'{self._settings.source} readings lack {", ".join(missing)}')
        if len(self._orders) >= ORDERS_KEPT:
            self._orders.clear()
        order = self._orders[names] = np.array([where[name] for name in self._settings.names])
        return order

    def _within_limits(self, record):
        s = self._settings
        q = record.position
        low, high = s.lower - s.limit_slack, s.upper + s.limit_slack
        outside = (q < low) | (q > high)
        if outside.any():
            i = int(np.argmax(outside))
            return Assessment(Verdict.OUTSIDE_LIMITS, f'{s.source} puts {s.names[i]} at {q[i]:.4f}, outside the '
                                                      f'joint limits [{low[i]:.4f}, {high[i]:.4f}]')
        record.position = np.clip(q, s.lower, s.upper)
        fast = np.abs(record.velocity) > s._fastest
        if fast.any():
            i = int(np.argmax(fast))
            return Assessment(Verdict.VELOCITY_BEYOND_LIMIT, f'{s.source} gives {s.names[i]} a velocity of '
                                                             f'{record.velocity[i]:.4g}, beyond {s.velocity_factor:g} '
                                                             f'x its limit {s.velocity[i]:g}')
        return None

    def _expected(self, record, expected):
        if expected is None or (expected.origin is not None and expected.origin == self._waived):
            return None
        s = self._settings
        low, high = np.asarray(expected.lower) - s.tolerance, np.asarray(expected.upper) + s.tolerance
        outside = (record.position < low) | (record.position > high)
        if not outside.any():
            return None
        i = int(np.argmax(outside))
        return Assessment(Verdict.OFF_COMMAND, f'{s.source} puts {s.names[i]} at {record.position[i]:.4f}, outside '
                                               f'where our commands can have taken it [{low[i]:.4f}, '
                                               f'{high[i]:.4f}]')

    def _jump(self, before, record):
        """Return the message if ``record`` lies beyond the reach of ``before`` plus the tolerance, else None."""
        s = self._settings
        elapsed = record.stamp - before.stamp
        allowed = s.reach(before.speed, elapsed) + s.tolerance
        moved = np.abs(record.position - before.position)
        over = moved > allowed
        if not over.any():
            return None
        i = int(np.argmax(over))
        return (f'{s.source} jumped {s.names[i]} by {moved[i]:.3f} in {elapsed:.3f} s, more than its velocity '
                f'and acceleration limits allow ({allowed[i]:.3f} with state_tolerance {s.tolerance:g})')

    def _settle(self, record, refusal, waived=None, surprising=False):
        """Add ``record`` to the run of consistent readings; believe it once the run is long enough.

        Args:
            record: the reading (_Record).
            refusal: why the reading is not believed on its own (None: a pause).
            waived: the Expectation it lies outside of, which a long enough run waives for the rest of that
                command (something else moved the arm, e.g. another client of the controller).
            surprising: the reading contradicts the believed state or the command: the run needs
                ``resettle_time`` instead of ``settle_time``.

        Returns:
            BELIEVED once the run is long enough, else the refusal or SETTLING.
        """
        s = self._settings
        if self._run:
            last = self._run[-1]
            in_time = 0.0 <= record.stamp - last.stamp <= s.pause
            broken = self._jump(last, record) if in_time else None
            if broken is not None or not in_time:
                self._run = []
                refusal = refusal or (Assessment(Verdict.JUMPED, broken) if broken is not None else None)
        if not self._run:
            self._surprising = False
        self._surprising |= surprising
        self._run.append(record)
        span = record.stamp - self._run[0].stamp
        needed = s.resettle_time if self._surprising else s.settle_time
        if len(self._run) >= s.settle_count and span >= needed - STAMP_RESOLUTION:
            if waived is not None:
                self._waived = waived.origin
            return self._believe(record)
        if refusal is not None:
            return refusal
        return Assessment(Verdict.SETTLING, f'{s.source} resumed: {len(self._run)} consistent readings over '
                                            f'{span:.3f} s, {s.settle_count} over {needed:g} s needed before '
                                            'the arm moves')

    def _believe(self, record):
        self._believed, self._run = record, []
        return Assessment(Verdict.BELIEVED, '', _state(record))


def _state(record):
    return MotionState(record.position.copy(), record.velocity.copy(), np.zeros(len(record.velocity)), record.stamp)
