"""Collision avoidance for the servo: slow a motion by how fast it closes on a contact, so it stops before it.

MoveIt Servo scales the command down as the nearest distance falls below a
proximity threshold, whatever the direction of motion.  Here each pair near
enough to matter gets its distance d and gradient g (d-dot = g . q-dot); a
wanted joint velocity v closes it at ``speed = -g . v``.  A motion that opens
every pair (speed <= 0) is never slowed.  One that closes a pair is scaled by
the largest k in [0, 1] from which braking still stops it before the padding:
with the velocity scaled as a whole, braking from k v at a fraction of the
acceleration limits takes ``k * stop_time`` (stop_time = max_i |v_i| / a_i)
plus a ramp (the jerk-limited build-up and one period), during which the pair
closes by about ``k speed (k stop_time / 2 + ramp)``, which must stay within
the room ``d - padding - STOP_MARGIN``.  There a closing motion halts.

The distances come from a ``proximity`` object (collision.proximity.Proximity:
``near(q, self_threshold, scene_threshold, velocity, horizon)`` and ``padding``),
queried at the state the servo commands next, at most ``collision_check_rate``
times a second; between queries each pair's distance is carried forward
along its gradient.  No ROS and no Pinocchio here.
"""
import math

import numpy as np

#: Braking for a contact is planned at this fraction of the acceleration limits: the rest absorbs the change of
#: a pair's gradient along the way (the distance is not linear in q) and the filter's jerk-limited ramps.
BRAKING_FRACTION = 0.5
#: Distances are trusted to this [m] (Coal's GJK tolerance is far below it): a pair this close to its
#: stop counts as at it, so a halted arm does not creep on by rounding.
DISTANCE_TOLERANCE = 1e-5
#: Braking is planned to end this far [m] outside the padding.  The filter's velocity lags the scaled one by its
#: jerk ramp, and a pair's distance is not linear in q: in random teleop campaigns (tools/servo_collision_campaign)
#: the arm ran up to 0.42 mm past a stop planned at the padding itself.
STOP_MARGIN = 0.001
#: Between queries the pairs are carried forward while the wanted velocity stays within this fraction of the
#: one queried for.
CHANGE = 0.1


def approach_scale(room, speed, stop_time, ramp):
    """Largest k in [0, 1] with ``k speed (k stop_time / 2 + ramp) <= room``: braking from k v stops in time.

    Args:
        room: distance left before the padding [m].
        speed: rate at which the unscaled velocity closes the pair [m/s] (<= 0: it opens it).
        stop_time: time to brake from the unscaled velocity to rest at constant deceleration [s].
        ramp: time before the deceleration takes hold (jerk ramp, one period) [s].

    Returns:
        The scale, 1 for a motion that does not close the pair.
    """
    if speed <= 0.0:
        return 1.0
    if room <= 0.0:
        return 0.0
    a, b = 0.5 * speed * stop_time, speed * ramp
    return min(1.0, 2.0 * room / (b + math.sqrt(b * b + 4.0 * a * room)))


class CollisionAvoidance:
    """Per cycle: the scale of a wanted joint velocity that keeps every pair off its padding."""

    def __init__(self, proximity):
        """Watch the pairs of ``proximity`` (collision.proximity.Proximity or alike)."""
        self.proximity = proximity
        self.reset()

    def reset(self):
        """Forget the last query (a new world, new settings or a restart): the next cycle asks afresh."""
        self._near = []            # Near pairs of the last query
        self._queried_at = None    # (monotonic time, q, velocity, |velocity|^2) of the last query
        self._braking = None       # (1 / braking deceleration per joint, ramp [s]) of the settings and limits

    def scale(self, q, velocity, settings, limits, jerk, now):
        """Return (scale, limiting pair or None, its distance [m]) for wanted joint ``velocity`` at ``q``.

        Args:
            q: the state the servo commands next (n,).
            velocity: the wanted joint velocity (n,).
            settings: ServoSettings (thresholds, collision_check_rate, publish_period).
            limits: JointLimits (acceleration per joint).
            jerk: jerk limit per joint.
            now: monotonic time [s].
        """
        if self._braking is None:   # the limits and settings stay until a reset
            brake = BRAKING_FRACTION * limits.acceleration
            self._braking = (1.0 / brake, float(np.max(brake / jerk)) + settings.publish_period)
        inverse_brake, ramp = self._braking
        stop_time = float(np.max(np.abs(velocity) * inverse_brake))
        near = self._pairs(q, velocity, settings, now, 0.5 * stop_time + ramp)
        if not near:
            return 1.0, None, math.inf
        stop = self.proximity.padding + STOP_MARGIN
        best, limiting, closest = 1.0, None, math.inf
        for pair, distance, gradient in near:
            room = distance - stop
            k = approach_scale(room if room > DISTANCE_TOLERANCE else 0.0, -float(gradient @ velocity), stop_time,
                               ramp)
            if k < best:
                best, limiting, closest = k, pair, distance
        return best, limiting, closest

    def _pairs(self, q, velocity, settings, now, horizon):
        """(pair, distance, gradient) of the pairs to watch at ``q``: queried, or carried from the last query."""
        interval = 1.0 / settings.collision_check_rate
        last = self._queried_at
        if last is None or now - last[0] >= interval - 0.5 * settings.publish_period or _changed(velocity, last):
            # the pairs reachable until the next query, as well as those reachable while stopping
            self._near = self.proximity.near(q, settings.self_collision_proximity_threshold,
                                             settings.scene_collision_proximity_threshold, velocity,
                                             horizon + max(interval - settings.publish_period, 0.0))
            queried = np.array(velocity, float)
            self._queried_at = last = (now, np.array(q, float), queried, float(queried @ queried))
        if not self._near:
            return self._near
        step = np.asarray(q, float) - last[1]
        return [(n.pair, n.distance + float(n.gradient @ step), n.gradient) for n in self._near]


def _changed(velocity, last):
    """Tell whether ``velocity`` differs from the one the last query watched for (by CHANGE of it).

    A new command may reach pairs that query did not list, so its pairs are not carried forward.
    ``last``: the last query's (time, q, velocity, |velocity|^2); squared norms spare two square roots a cycle.
    """
    difference = velocity - last[2]
    return float(difference @ difference) > (CHANGE * math.sqrt(last[3]) + 1e-9) ** 2
