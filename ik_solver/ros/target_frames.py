"""Express a stamped target in the chain's base link, once, at the target's stamp.

A target stamped in a moving frame (the tool itself, a camera on the arm) means
"where that frame was at header.stamp".  Resolving it at arrival with the latest
joints would move the goal with the arm: the same PoseStamped in ``tool0`` sent ten
times would walk the tip away.  So every target is resolved once, when it is
taken, at its stamp:

- the base link (or an empty frame): as given;
- a link of the loaded robot: from the robot's own kinematics with the joint
  positions measured at the stamp (the newest at or before it; a zero stamp: the newest);
- any other frame: tf2 at the stamp, waiting up to ``transform_timeout`` (zero stamp: the
  latest transform), where ``tf2_ros`` is available.
"""
from rclpy.duration import Duration
from rclpy.time import Time

from .messages import pose_to_matrix
from ..core.transforms import make_pose

try:  # optional: frames that are not links of the robot
    from tf2_ros import Buffer, TransformListener
except ImportError:  # not installable from PyPI; links of the robot still work
    Buffer = TransformListener = None


class FrameError(Exception):
    """The target's frame cannot be resolved: reason 'unknown_frame'."""

    reason = 'unknown_frame'


class TargetFrames:
    """Resolves targets for ``node``; ``buffer``: a tf2 Buffer to use (default: its own, where tf2_ros exists)."""

    def __init__(self, node, buffer=None):
        self.buffer = buffer
        if buffer is None and Buffer is not None:
            self.buffer = Buffer()
            self._listener = TransformListener(self.buffer, node)

    def resolve(self, msg, model, positions_at, transform_timeout=0.0):
        """4x4 pose of PoseStamped ``msg`` in the base link; ValueError for a bad pose, FrameError for its frame.

        ``positions_at(stamp)``: {joint: position} measured at a builtin_interfaces Time (zero: the newest).
        """
        T = pose_to_matrix(msg.pose)
        frame = msg.header.frame_id.lstrip('/')
        base = model.chain.base_link
        if frame in ('', base):
            return T
        if model.frames.has_link(frame):
            try:
                return model.frames.pose(frame, positions_at(msg.header.stamp)) @ T
            except KeyError as exc:
                raise FrameError(f"frame '{frame}': no joint position for {exc.args[0]}") from None
        return self._lookup(base, frame, msg.header.stamp, transform_timeout) @ T

    def lookup(self, base, frame, timeout=0.0):
        """Return the latest transform (4x4) from ``frame`` into ``base`` through tf2; FrameError if there is none."""
        return self._lookup(base, frame, Time().to_msg(), timeout)

    def _lookup(self, base, frame, stamp, timeout):
        if self.buffer is None:
            raise FrameError(f"frame '{frame}' is not a link of the robot and tf2_ros is not available; "
                             f'express the target in {base} or a robot link')
        at = Time.from_msg(stamp)
        when = 'the latest transform' if at.nanoseconds == 0 else f'{at.nanoseconds * 1e-9:.3f} s'
        try:
            tf = self.buffer.lookup_transform(base, frame, at, timeout=Duration(seconds=timeout))
        except Exception as exc:  # tf2 raises several lookup exception types
            raise FrameError(self._explain(base, frame, when, exc)) from None
        t, r = tf.transform.translation, tf.transform.rotation
        return make_pose([t.x, t.y, t.z], [r.x, r.y, r.z, r.w])

    def _explain(self, base, frame, when, exc):
        """Name the frame that is really missing: tf2's own text names the target frame even when tf is empty."""
        known = self.buffer.all_frames_as_string() if hasattr(self.buffer, 'all_frames_as_string') else None
        if known is not None and not known.strip():
            return f"no transform {base} <- '{frame}': no tf has been received yet (is anything publishing /tf?)"
        if known is not None and f'Frame {frame} ' not in known:
            return f"no transform {base} <- '{frame}': tf does not know frame '{frame}'"
        return f"no transform {base} <- '{frame}' at {when}: {exc}"
