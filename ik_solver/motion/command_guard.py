"""The one gate every command to the controller crosses.

Whatever produced it (a target, a service call, a Cartesian path, a servo step),
a command reaches the controller only through a ``CommandGuard``: the trajectory
is checked as the controller will interpolate it from the state it starts at
(``motion.guard``: finite, joint names, position, velocity, acceleration and jerk
limits, timing, ends at rest, size cap), its largest joint change is bounded by
``max_joint_jump``, it must not pass through a collision (with a collision model),
and targets must lie in the optional workspace box.  ``execute`` hands only what
passed to its ``send``, so no caller can skip a check.
"""
import numpy as np

from . import guard


class CommandGuard:
    """Checks commands against ``limits`` (JointLimits, chain order) and the workspace box (base frame).

    Args:
        limits: the limits a command may use (already scaled).
        workspace: None, or (lower corner, upper corner) of the allowed target box [m].
        max_joint_jump: largest change of any joint between consecutive waypoints [rad or m].
        send: ``send(names, start, path)`` delivers a checked trajectory; returns None, or (reason, message)
            when it could not.
        collision: None, or a model with ``check_path(Q) -> None | (index, (a, b))``.
    """

    def __init__(self, limits, workspace=None, max_joint_jump=np.inf, send=None, collision=None):
        self.limits = limits
        self.collision = collision
        self.workspace = None if workspace is None else (np.asarray(workspace[0], float),
                                                         np.asarray(workspace[1], float))
        self.max_joint_jump = max_joint_jump
        self._send = send

    def check_target(self, T):
        """Reasons the target pose (4x4, base frame) is refused: outside the workspace box."""
        if self.workspace is None:
            return []
        p = np.asarray(T)[:3, 3]
        low, high = self.workspace
        if np.all(p >= low) and np.all(p <= high):
            return []
        return [f'target position {np.round(p, 4).tolist()} is outside the workspace box '
                f'{low.tolist()} .. {high.tolist()}']

    def check_jump(self, waypoints):
        """Reasons a move through joint ``waypoints`` (K, n; start first) is refused.

        Refused: a joint changes more than max_joint_jump between consecutive waypoints
        (a move to one goal has two: start and goal).
        """
        delta = np.abs(np.diff(np.asarray(waypoints, float), axis=0))
        k, i = np.unravel_index(int(np.argmax(delta)), delta.shape)
        if not delta[k, i] > self.max_joint_jump:
            return []
        return [f'the move changes {self.limits.names[i]} by {delta[k, i]:.3f}, more than max_joint_jump '
                f'{self.max_joint_jump:g}']

    def check_trajectory(self, start, path, names=None):
        """Reasons the trajectory ``path`` from MotionState ``start`` is refused ([] = safe)."""
        reasons = []
        if names is not None and tuple(names) != tuple(self.limits.names):
            reasons.append(f'joint names {list(names)} are not the chain joints {list(self.limits.names)}')
        reasons += guard.check_trajectory(start, path, self.limits)
        return reasons

    def check_path(self, start, path):
        """Reasons the move from ``start`` through ``path``'s positions passes through a collision ([] = none)."""
        if self.collision is None:
            return []
        hit = self.collision.check_path(np.vstack([start.position, path.positions]))
        if hit is None:
            return []
        index, (a, b) = hit
        return [f'the move passes through a collision of {a} and {b} (near point {index} of {len(path.positions)})']

    def check_step(self, previous, q, v, dt):
        """Reasons one streamed command (servo) is refused ([] = safe)."""
        return guard.check_step(previous, q, v, dt, self.limits)

    def execute(self, start, path, names, waypoints=None):
        """Send the trajectory if every check passes.

        Args:
            start: MotionState the trajectory starts from (the controller interpolates from it).
            path: TimedPath to check and send.
            names: joint names of ``path``'s columns; must be the chain's, in its order.
            waypoints: joint positions (K, n) the path was planned through (default: its start and end).

        Returns:
            None once sent, else (reason, message): 'joint_jump', 'limit_violation', 'collision_path', or
            what ``send`` refused with.
        """
        if waypoints is None:
            waypoints = [start.position, path.positions[-1]]
        jump = self.check_jump(waypoints)
        if jump:
            return 'joint_jump', jump[0]
        reasons = self.check_trajectory(start, path, names)
        if reasons:
            return 'limit_violation', '; '.join(reasons)
        hit = self.check_path(start, path)
        if hit:
            return 'collision_path', hit[0]
        return self._send(names, start, path)
