"""The command guard (motion.command_guard) in-process: the one gate every command crosses.

Its verdicts are checked against trajectories whose properties are known by construction: a Ruckig move
within the limits, the same move squeezed in time (velocity x3, acceleration x9), a move with a jump, a
move planned from rest sent while the controller moves.
"""
from ik_solver.motion.command_guard import CommandGuard
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.timing import plan_move, TimedPath
import numpy as np

NAMES = ('a', 'b', 'c')
LIMITS = JointLimits(NAMES, np.full(3, -2.0), np.full(3, 2.0), np.full(3, 1.0), np.full(3, 4.0), np.full(3, np.inf))
HOME = np.array([0.1, -0.2, 0.3])


def _guard(sent, workspace=None, collision=None):
    return CommandGuard(LIMITS, workspace, max_joint_jump=0.5, send=lambda *args: sent.append(args),
                        collision=collision)


def test_the_guard_sends_only_what_passes():
    sent = []
    guard = _guard(sent)
    start = MotionState.at_rest(HOME)
    path = plan_move(start, HOME + 0.3, LIMITS)
    assert guard.execute(start, path, NAMES) is None and len(sent) == 1
    assert sent[0] == (NAMES, start, path)
    squeezed = TimedPath(path.times / 3, path.positions, path.velocities * 3, path.accelerations * 9)
    reason, message = guard.execute(start, squeezed, NAMES)
    assert reason == 'limit_violation' and 'velocity' in message and len(sent) == 1
    reason, message = guard.execute(start, path, ('a', 'c', 'b'))
    assert reason == 'limit_violation' and 'joint names' in message
    far = plan_move(start, HOME + [0.6, 0.0, 0.0], LIMITS)
    assert guard.execute(start, far, NAMES) == ('joint_jump', 'the move changes a by 0.600, more than max_joint_jump '
                                                              '0.5')
    assert len(sent) == 1


def test_the_jump_is_checked_between_every_pair_of_waypoints():
    sent = []
    start = MotionState.at_rest(HOME)
    path = plan_move(start, HOME + 0.3, LIMITS)
    through = [HOME, HOME + [0.45, 0.0, 0.0], HOME + 0.3]   # 0.45 out, then 0.15 back: each within 0.5
    assert _guard(sent).execute(start, path, NAMES, through) is None
    through = [HOME, HOME + [0.0, 0.0, 0.3], HOME + [0.0, 0.0, -0.3], HOME + 0.3]   # 0.6 between two of them
    reason, message = _guard(sent).execute(start, path, NAMES, through)
    assert reason == 'joint_jump' and 'changes c by 0.600' in message and len(sent) == 1


def test_the_guard_refuses_a_move_that_starts_too_fast_for_its_first_point():
    sent = []
    start = MotionState(HOME, np.array([0.9, 0.0, 0.0]), np.zeros(3))
    rest = MotionState.at_rest(HOME)
    path = plan_move(rest, HOME - 0.2, LIMITS)  # planned from rest, but the controller moves at 0.9 rad/s
    reason, _ = _guard(sent).execute(start, path, NAMES)
    assert reason == 'limit_violation' and not sent


class _Wall:
    """A collision model: every configuration with joint a above ``x`` collides (link_2 with a wall)."""

    def __init__(self, x):
        self.x = x

    def check_path(self, Q):
        inside = np.flatnonzero(np.asarray(Q)[:, 0] > self.x)
        return None if not len(inside) else (int(inside[0]), ('link_2', 'wall'))


def test_a_move_through_a_collision_is_refused_with_the_pair():
    sent = []
    start = MotionState.at_rest(HOME)
    path = plan_move(start, HOME + 0.3, LIMITS)
    assert _guard(sent, collision=_Wall(HOME[0] + 0.4)).execute(start, path, NAMES) is None
    reason, message = _guard(sent, collision=_Wall(HOME[0] + 0.2)).execute(start, path, NAMES)
    assert reason == 'collision_path' and 'link_2 and wall' in message and len(sent) == 1


def test_the_workspace_box():
    guard = _guard([], workspace=([0.0, -1.0, 0.2], [1.0, 1.0, 1.0]))
    inside, outside = np.eye(4), np.eye(4)
    inside[:3, 3] = [0.5, 0.0, 0.5]
    outside[:3, 3] = [0.5, 0.0, 0.1]
    assert guard.check_target(inside) == []
    assert 'outside the workspace box' in guard.check_target(outside)[0]
    assert _guard([]).check_target(outside) == []
