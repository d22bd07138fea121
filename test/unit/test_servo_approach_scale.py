"""Collision avoidance by rate of approach (motion/servo_collision.py) against closed forms.

A point approaching a plane at a known speed, braking at a known deceleration,
stops within v^2 / 2a: the scale is checked against that, and the servo
(motion/servo.py) driving the tip, or one joint, at a plane is checked to
begin slowing where braking at the planned deceleration must begin, to stop
short of the padding, to leave a motion away from the plane or along it
untouched, and to name the pair.
"""
import math

from ik_solver.collision.proximity import Near
from ik_solver.core.chain import load_chain
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.servo import JointJogCommand, Servo, ServoSettings, Status, TwistCommand
from ik_solver.motion.servo_collision import approach_scale, BRAKING_FRACTION, STOP_MARGIN
from ik_solver_demos.tools.resources import arm_files
import numpy as np
import pytest

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
ACCELERATION = 4.0
JERK = 200.0
PAIR = ('tool0', 'wall')


@pytest.fixture(scope='module')
def chain():
    return load_chain(arm_files('ik7')[0], 'base_link', 'tool0')


class TipPlane:
    """A plane x = ``wall`` in the base frame and the tip point: distance wall - x, gradient -J_x."""

    def __init__(self, chain, wall, padding=0.0):
        self.chain, self.wall, self.padding = chain, wall, padding

    def distance(self, q):
        return self.wall - self.chain.fk(q)[0, 3]

    def near(self, q, self_threshold, scene_threshold, velocity=None, horizon=0.0):
        return [Near(self.distance(q), -self.chain.jacobian(q)[0], PAIR, True)]


class JointPlane:
    """Joint 0 running at a stop at angle ``wall``: distance wall - q0 (a point on a line, in joint space)."""

    def __init__(self, wall, padding=0.0):
        self.wall, self.padding = wall, padding

    def distance(self, q):
        return self.wall - q[0]

    def near(self, q, self_threshold, scene_threshold, velocity=None, horizon=0.0):
        gradient = np.zeros(len(q))
        gradient[0] = -1.0
        return [Near(self.distance(q), gradient, PAIR, True)]


def make_servo(chain, proximity=None, **settings):
    n = chain.n
    limits = JointLimits(tuple(chain.joint_names), chain.lower, chain.upper, chain.velocity_limits,
                         np.full(n, ACCELERATION), np.full(n, JERK))
    servo = Servo(chain, limits, ServoSettings(command_in_type='speed_units', publish_period=0.005, **settings),
                  proximity)
    servo.reset(MotionState.at_rest(HOME))
    return servo


def run(servo, command, seconds, t0=0.0):
    """Step ``servo`` under ``command`` for ``seconds``; return the outputs."""
    dt = servo.settings.publish_period
    outputs = []
    for k in range(int(round(seconds / dt))):
        t = t0 + k * dt
        servo.set_command(command, t)
        outputs.append(servo.step(t))
    return outputs


# -- the scale in closed form ---------------------------------------------------------------------------------

@pytest.mark.parametrize('room', [0.001, 0.01, 0.05, 0.2])
def test_scale_is_the_speed_that_stops_within_the_room(room):
    """Without a ramp, braking at a from k v covers (k v)^2 / 2a: the cap is k v = sqrt(2 a room)."""
    speed, deceleration = 1.0, 2.0
    k = approach_scale(room, speed, speed / deceleration, 0.0)
    assert k * speed == pytest.approx(min(speed, math.sqrt(2.0 * deceleration * room)), rel=1e-12)


@pytest.mark.parametrize('ramp', [0.005, 0.03])
def test_scale_with_a_ramp_closes_exactly_the_room(ramp):
    """With a ramp: k v (k T / 2 + ramp) = room where it binds."""
    speed, stop_time, room = 0.5, 0.25, 0.02
    k = approach_scale(room, speed, stop_time, ramp)
    assert 0.0 < k < 1.0
    assert k * speed * (k * stop_time / 2.0 + ramp) == pytest.approx(room, rel=1e-12)


@pytest.mark.parametrize('room', [-0.01, 0.0, 0.01, 1.0])
def test_motion_that_opens_the_distance_is_never_slowed(room):
    assert approach_scale(room, -0.3, 0.5, 0.01) == 1.0
    assert approach_scale(room, 0.0, 0.5, 0.01) == 1.0


def test_closing_motion_at_the_padding_halts():
    assert approach_scale(0.0, 1e-6, 0.5, 0.01) == 0.0
    assert approach_scale(-0.001, 0.2, 0.5, 0.01) == 0.0


# -- the servo braking for a plane ----------------------------------------------------------------------------

def test_joint_brakes_where_the_closed_form_says_and_stops_short(chain):
    """Joint 0 jogged at w toward a stop: slowing begins at room = w (T / 2 + ramp), T = w / (a / 2)."""
    w, padding = 0.6, 0.01
    plane = JointPlane(HOME[0] + 0.4, padding)
    servo = make_servo(chain, plane)
    jog = np.full(chain.n, np.nan)
    jog[0] = w
    outputs = run(servo, JointJogCommand(jog), 2.0)
    rooms = np.array([plane.distance(o.state.position) - padding for o in outputs])
    assert rooms.min() > 0.0, 'the joint stepped past the padding'
    assert np.abs(outputs[-1].state.velocity).max() == 0.0, 'not at rest'
    assert outputs[-1].status == Status.HALT_FOR_COLLISION and 'tool0' in outputs[-1].message
    slowing = next(k for k, o in enumerate(outputs) if o.status == Status.DECELERATE_FOR_COLLISION)
    brake = BRAKING_FRACTION * ACCELERATION
    expected = w * (0.5 * w / brake + brake / JERK + servo.settings.publish_period) + STOP_MARGIN
    dt = servo.settings.publish_period
    assert rooms[slowing - 1] == pytest.approx(expected, abs=2 * w * dt)
    assert rooms[-1] < 0.02, f'stopped {rooms[-1]:.3f} m short: braking began too early'


def test_tip_driven_at_a_plane_stops_before_it(chain):
    plane = TipPlane(chain, chain.fk(HOME)[0, 3] + 0.08, padding=0.005)
    servo = make_servo(chain, plane)
    outputs = run(servo, TwistCommand(np.array([0.25, 0, 0, 0, 0, 0])), 2.0)
    distances = np.array([plane.distance(o.state.position) for o in outputs])
    assert distances.min() > plane.padding
    statuses = [o.status for o in outputs]
    assert Status.DECELERATE_FOR_COLLISION in statuses
    assert statuses[-1] == Status.HALT_FOR_COLLISION
    assert 'tool0' in outputs[-1].message and 'wall' in outputs[-1].message


def test_reversing_from_the_halt_is_at_full_speed_at_once(chain):
    """Away from the plane, the halted servo moves exactly as one without collision checking."""
    plane = TipPlane(chain, chain.fk(HOME)[0, 3] + 0.05, padding=0.005)
    servo = make_servo(chain, plane)
    run(servo, TwistCommand(np.array([0.25, 0, 0, 0, 0, 0])), 1.5)
    halted = servo.state
    free = make_servo(chain)
    free.reset(halted)
    back = TwistCommand(np.array([-0.25, 0, 0, 0, 0, 0]))
    checked, unchecked = run(servo, back, 0.5, 10.0), run(free, back, 0.5, 10.0)
    assert all(o.status == Status.NO_WARNING and o.velocity_scale == 1.0 for o in checked)
    np.testing.assert_allclose([o.state.position for o in checked], [o.state.position for o in unchecked],
                               atol=1e-12)


def test_motion_along_the_plane_is_not_slowed(chain):
    """A twist parallel to the plane, 2 cm from it: the same commands as without collision checking."""
    plane = TipPlane(chain, chain.fk(HOME)[0, 3] + 0.02, padding=0.005)
    along = TwistCommand(np.array([0, 0.1, 0, 0, 0, 0]))
    checked, unchecked = run(make_servo(chain, plane), along, 0.5), run(make_servo(chain), along, 0.5)
    assert all(o.status == Status.NO_WARNING for o in checked)
    np.testing.assert_allclose([o.state.position for o in checked], [o.state.position for o in unchecked],
                               atol=1e-12)


def test_checking_off_drives_into_the_plane(chain):
    """Positive control: the same command with check_collisions false crosses the plane."""
    plane = TipPlane(chain, chain.fk(HOME)[0, 3] + 0.08, padding=0.005)
    outputs = run(make_servo(chain, plane, check_collisions=False), TwistCommand(np.array([0.25, 0, 0, 0, 0, 0])),
                  2.0)
    assert min(plane.distance(o.state.position) for o in outputs) < 0.0
