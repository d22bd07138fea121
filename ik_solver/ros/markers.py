"""RViz markers that show at a glance what the IK node did with the last target.

Why these: a target and its reached pose drawn as axes triads show the
position *and* orientation error (two arrows along x coincide on success and
hide a flipped tool); the arm drawn as a line through its link origins shows
the solution's posture (elbow side, wrist flip) without robot_state_publisher;
a text marker at the target says why a target failed.  All markers are in the
chain's base frame, namespaced ``target``, ``reached``, ``arm`` and ``reason``,
on ``~/markers`` (visualization_msgs/MarkerArray); config/ik_solver.rviz shows them.
They show the newest outcome, at most ``MAX_RATE`` times a second, off the node's command path.
"""
import threading

from geometry_msgs.msg import Point
import numpy as np
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

AXIS_COLORS = ((1.0, 0.0, 0.0), (0.0, 0.8, 0.0), (0.0, 0.3, 1.0))  # x red, y green, z blue (RViz's axes)
SUCCESS_COLOR = (0.1, 0.8, 0.2, 1.0)
FAILURE_COLOR = (1.0, 0.45, 0.0, 1.0)
TEXT_COLOR = (1.0, 0.2, 0.2, 1.0)
MAX_TEXT = 120  # characters of the failure message shown
#: Most marker arrays published per second [Hz]: above RViz's usual frame rate nothing more is seen.
MAX_RATE = 10.0


def _point(p):
    return Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))


def _color(rgba):
    return ColorRGBA(r=float(rgba[0]), g=float(rgba[1]), b=float(rgba[2]), a=float(rgba[3]))


def _marker(ns, kind, frame_id, stamp, width):
    marker = Marker(ns=ns, id=0, type=kind, action=Marker.ADD)
    marker.header.frame_id = frame_id
    marker.header.stamp = stamp
    marker.pose.orientation.w = 1.0
    marker.scale.x = marker.scale.y = marker.scale.z = float(width)
    return marker


def _delete(ns, frame_id, stamp):
    marker = Marker(ns=ns, id=0, action=Marker.DELETE)
    marker.header.frame_id = frame_id
    marker.header.stamp = stamp
    return marker


def axes_marker(ns, T, frame_id, stamp, length, width, alpha):
    """LINE_LIST of the three axes of pose ``T`` (4x4), ``length`` long, coloured x red, y green, z blue."""
    marker = _marker(ns, Marker.LINE_LIST, frame_id, stamp, width)
    origin = T[:3, 3]
    for axis, rgb in enumerate(AXIS_COLORS):
        marker.points += [_point(origin), _point(origin + length * T[:3, axis])]
        marker.colors += [_color((*rgb, alpha))] * 2
    return marker


def arm_points(chain, q):
    """Origins of the chain's links from the base to the tip for joints ``q`` (K x 3), repeats dropped."""
    origins = np.array([chain.fk(q, link)[:3, 3] for link in chain.link_frames])
    keep = np.r_[True, np.linalg.norm(np.diff(origins, axis=0), axis=1) > 1e-9]
    return origins[keep]


def outcome_markers(outcome, chain, stamp, axis_length=0.1):
    """Markers for one Outcome: target and reached triads, the arm's line strip, the failure text (or deletes)."""
    frame = chain.base_link
    markers = []
    if outcome.target is not None:
        markers.append(axes_marker('target', outcome.target, frame, stamp, axis_length, 0.004, 0.45))
    joints = getattr(outcome.result, 'joints', None)
    if joints is not None and np.isfinite(joints).all():
        markers.append(axes_marker('reached', chain.fk(joints), frame, stamp, 0.8 * axis_length, 0.012, 1.0))
        arm = _marker('arm', Marker.LINE_STRIP, frame, stamp, 0.015)
        arm.points = [_point(p) for p in arm_points(chain, joints)]
        arm.color = _color(SUCCESS_COLOR if outcome.success else FAILURE_COLOR)
        markers.append(arm)
    else:
        markers += [_delete('reached', frame, stamp), _delete('arm', frame, stamp)]
    if outcome.success or outcome.target is None:
        markers.append(_delete('reason', frame, stamp))
    else:
        text = _marker('reason', Marker.TEXT_VIEW_FACING, frame, stamp, 0.04)
        text.pose.position = _point(outcome.target[:3, 3] + [0.0, 0.0, 1.5 * axis_length])
        message = outcome.message if len(outcome.message) <= MAX_TEXT else outcome.message[:MAX_TEXT - 3] + '...'
        text.text = f'{outcome.reason}: {message}' if message else outcome.reason
        text.color = _color(TEXT_COLOR)
        markers.append(text)
    return markers


class MarkerPublisher:
    """Outcome listener of the IK node: draws the newest solved or refused target, at most ``rate`` times a second.

    ``on_outcome`` runs on the node's hot path, right after a command is sent, and only records the outcome
    (a fraction of a microsecond); a timer builds and publishes the markers of the newest one.  Building
    them costs about a millisecond of Python (a forward kinematics per link, a dozen messages): done for
    every target of a 200 Hz stream, it delayed the next command, and RViz draws only its frame rate anyway.
    """

    def __init__(self, node, topic='~/markers', axis_length=0.1, rate=MAX_RATE):
        self._node = node
        self.axis_length = axis_length
        self._publisher = node.create_publisher(MarkerArray, topic, 10)
        self._latest = None
        self._lock = threading.Lock()
        self._timer = node.create_timer(1.0 / rate, self.publish_latest)

    def on_outcome(self, outcome):
        """Record ``outcome`` to be drawn (controller events, which have nothing to draw, are skipped)."""
        if outcome.target is None and outcome.result is None:
            return
        with self._lock:
            self._latest = outcome

    def publish_latest(self):
        """Publish the markers of the newest recorded outcome, if any arrived since the last call.

        Nothing is drawn while no model is loaded, nor for a result of another model (before a swap).
        """
        with self._lock:
            outcome, self._latest = self._latest, None
        model = self._node.model
        if outcome is None or model is None:
            return
        stamp = self._node.get_clock().now().to_msg()
        try:
            markers = outcome_markers(outcome, model.chain, stamp, self.axis_length)
        except ValueError as exc:  # e.g. a result of the model before a swap: nothing true to draw
            self._node.get_logger().debug(f'no markers for this outcome: {exc}')
            return
        self._publisher.publish(MarkerArray(markers=markers))
