"""An idle servo restarting while its arm still catches up with the last commands (motion/servo.py).

A forward_position controller jumps to each command; the arm follows with a
lag, longer when its controller or the simulator is held up (a loaded
machine).  A new command arriving just after the servo came to rest then
meets readings that show the arm short of the last command.  Restarting from
such a reading moves the controller's target back by the lag in one command:
a position step the velocity limit forbids, and the acceleration and jerk of
that step besides.  The truths here are the controller's view (each command
a step from the one before, over one period) and the arm's simulated state.
"""
from dataclasses import replace

from ik_solver.core.chain import load_chain
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.servo import FOLLOW_TIME, RESYNC_TOLERANCE, Servo, ServoSettings, Status, TwistCommand
from ik_solver_demos.tools.resources import arm_files
import numpy as np
import pytest

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
PERIOD = 0.01


@pytest.fixture(scope='module')
def chain():
    return load_chain(arm_files('ik7')[0], 'base_link', 'tool0')


class LaggingArm:
    """A forward_position arm: it sits at the newest command its controller applied; held up, it applies none.

    Readings carry the instant they were taken (``MotionState.time``, simulated seconds).
    """

    def __init__(self, q0):
        self.q = np.array(q0, float)
        self.newest = self.q
        self.held_up = False

    def receive(self, command):
        self.newest = np.array(command, float)
        if not self.held_up:
            self.q = self.newest

    def release(self):
        """Let the controller run again: it jumps to the newest command."""
        self.held_up = False
        self.q = self.newest

    def reading(self, t):
        return replace(MotionState.at_rest(self.q.copy()), time=t)


def limits_of(chain):
    n = chain.n
    return JointLimits(tuple(chain.joint_names), chain.lower, chain.upper, chain.velocity_limits,
                       np.full(n, 4.0), np.full(n, 80.0))


def test_restart_while_the_arm_catches_up_steps_no_command(chain):
    """No command steps farther than one period at the velocity limit, from the one before or from the arm.

    The one before is the controller's target; the first command of the new motion is also that close to
    where the arm then is.
    """
    limits = limits_of(chain)
    servo = Servo(chain, limits, ServoSettings(publish_period=PERIOD, command_in_type='speed_units'))
    arm = LaggingArm(HOME)
    twist = TwistCommand(np.array([0.0, 0.15, 0.0, 0.0, 0.0, 0.3]))
    sent = []          # (time, command, the arm's true state then) as the controller received them
    t = 0.0

    def cycle(command=None):
        nonlocal t
        if command is not None:
            servo.set_command(command, t)
        out = servo.step(t, arm.reading(t - 0.002))
        if out.publish:
            arm.receive(out.state.position)
            sent.append((t, out.state.position.copy(), arm.q.copy()))
        t += PERIOD
        return out

    for _ in range(60):
        cycle(twist)
    arm.held_up = True   # the operator lets go; the arm's controller is held up while the servo brakes
    while not servo.idle:
        cycle()
    last_sent, last, _ = sent[-1]
    assert np.abs(arm.q - last).max() > 2 * RESYNC_TOLERANCE, 'the arm does not lag: nothing is tested'
    resumed = len(sent)
    t = last_sent + 0.03                   # a new command soon after the servo came to rest
    statuses = []
    for _ in range(40):
        if arm.held_up and t >= last_sent + 0.06:
            arm.release()                  # caught up within FOLLOW_TIME of the last command
        statuses.append(cycle(twist).status)
    assert len(sent) > resumed + 10, 'the servo never moved again'
    step = limits.velocity * PERIOD * (1 + 1e-9)
    for (_, before, _), (_, after, _) in zip(sent, sent[1:]):
        assert (np.abs(after - before) <= step).all(), f'a step of {np.abs(after - before).max():.4f} rad'
    _, first, true = sent[resumed]
    assert (np.abs(first - true) <= step).all(), f'{np.abs(first - true).max():.4f} rad from the arm'
    assert Status.STALE_STATE in statuses   # it said why it waited


def test_a_reading_after_the_follow_time_still_restarts_from_where_the_arm_rests(chain):
    """An arm moved by someone else, read FOLLOW_TIME after the last command: the servo starts from it."""
    limits = limits_of(chain)
    servo = Servo(chain, limits, ServoSettings(publish_period=PERIOD, command_in_type='speed_units'))
    servo.reset(MotionState.at_rest(HOME))
    twist = TwistCommand(np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.0]))
    t, last_sent = 0.0, 0.0
    for k in range(150):
        if k < 30:
            servo.set_command(twist, t)
        out = servo.step(t, None)
        last_sent = t if out.publish else last_sent
        t += PERIOD
    assert servo.idle
    moved = servo.state.position + 0.1
    servo.set_command(twist, t)
    early = servo.step(t, replace(MotionState.at_rest(moved), time=last_sent + 0.5 * FOLLOW_TIME))
    assert not early.publish and early.status == Status.STALE_STATE
    out = servo.step(t + PERIOD, replace(MotionState.at_rest(moved), time=last_sent + FOLLOW_TIME))
    assert out.publish
    assert (np.abs(out.state.position - moved) <= limits.velocity * PERIOD).all()
