"""The servo core when its cycles run late: one command for now, one period of motion, never a catch-up.

A forward_position_controller jumps to each command in one of its periods, however late the command came.
So a command computed after a cycle that ran late (the OS or the interpreter lock held the loop) must still
be a step the limits allow over one publish period, with an acceleration and a jerk against the commands
before it within the limits too: the arm then moves slower in real time while the CPU is starved, which is
the safe degradation.  Integrating the wall time elapsed instead would send a step of several periods.

The servo is driven here on a simulated clock, 2 ms cycles with random gaps of 20-60 ms among them, by
random twists and joint jogs with quiet spells (the servo stops, idles and starts again), and every command
is judged by finite differences of the commanded positions over one nominal period, not by the servo's own
velocities and accelerations.
"""
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.servo import JointJogCommand, Servo, ServoSettings, TwistCommand
import numpy as np
import pytest

HOME = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
PERIOD = 0.002
ACCELERATION = 4.0   # [rad/s^2]
JERK = 160.0         # [rad/s^3]
#: Relative tolerance of the limits (rounding only: the servo keeps them exactly).
TOL = 1e-6
SECONDS = 6.0


def limits_of(chain):
    """Return the chain's URDF velocity limits with ACCELERATION and JERK for every joint."""
    n = chain.n
    return JointLimits(tuple(chain.joint_names), chain.lower, chain.upper, chain.velocity_limits,
                       np.full(n, ACCELERATION), np.full(n, JERK))


def cycle_times(rng, seconds, late=True):
    """Return the cycles' instants [s]: every PERIOD, and with ``late`` 6 % of them 20-60 ms after the last."""
    times, t = [], 0.0
    while t < seconds:
        times.append(t)
        t += rng.uniform(0.02, 0.06) if late and rng.random() < 0.06 else PERIOD
    return times


def operator(rng, seconds):
    """Return (start, end, command or None) spells: twists and jogs of 0.1-0.6 s, quiet spells between."""
    spells, t = [], 0.0
    while t < seconds:
        length = rng.uniform(0.1, 0.6)
        kind = rng.random()
        if kind < 0.2:
            command = None
        elif kind < 0.8:
            command = TwistCommand(np.concatenate([rng.uniform(-0.3, 0.3, 3), rng.uniform(-1.0, 1.0, 3)]))
        else:
            command = JointJogCommand(np.where(rng.random(7) < 0.5, rng.uniform(-1.0, 1.0, 7), np.nan))
        spells.append((t, t + length, command))
        t += length
    return spells


def command_at(spells, t):
    """Return the command of the spell at ``t`` [s], None in a quiet spell."""
    return next((c for start, end, c in spells if start <= t < end), None)


def drive(chain, times, command_of):
    """Run a Servo at ``times``, commanded ``command_of(index, t)`` (None: nothing new) before each cycle.

    The arm is a perfect position controller: it rests at the last command published.  Returns the positions
    the arm was commanded to, its start first (the controller holds it before the first command).
    """
    servo = Servo(chain, limits_of(chain), ServoSettings(publish_period=PERIOD, command_in_type='speed_units'))
    held = [HOME.copy()]
    for index, t in enumerate(times):
        command = command_of(index, t)
        if command is not None:
            servo.set_command(command, t)
        out = servo.step(t, MotionState.at_rest(held[-1]))
        if out is not None and out.publish:
            held.append(out.state.position.copy())
    return np.array(held)


def assert_steps_within_limits(chain, Q):
    """Velocity, acceleration and jerk of the commanded positions as differences over one nominal period."""
    limits = limits_of(chain)
    V = np.diff(Q, axis=0) / PERIOD
    A = np.diff(V, axis=0) / PERIOD
    J = np.diff(A, axis=0) / PERIOD
    for name, values, bound in (('velocity', V, limits.velocity), ('acceleration', A, limits.acceleration),
                                ('jerk', J, limits.jerk)):
        excess = np.abs(values) / (bound * (1 + TOL))
        k, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
        assert excess[k, j] <= 1.0, (f'{name} of {values[k, j]:.4g} at joint {j + 1}, command {k + 1} of '
                                     f'{len(Q) - 1}; limit {bound[j]:g}')


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_every_command_after_a_late_cycle_is_one_period_within_the_limits(ik7, seed):
    """Judged over one nominal period each, the commands never exceed a limit, stops and restarts included."""
    rng = np.random.default_rng(seed)
    times = cycle_times(rng, SECONDS)
    spells = operator(rng, SECONDS)
    Q = drive(ik7, times, lambda index, t: command_at(spells, t))
    assert len(Q) > 500 and np.ptp(Q, axis=0).max() > 0.1   # it moved, through many late cycles
    assert_steps_within_limits(ik7, Q)


def test_late_cycles_slow_the_motion_in_real_time_and_leave_its_commands_unchanged(ik7):
    """Cycle by cycle, the commands of a starved loop are those of a punctual one: late cycles add no motion.

    The same commands reach both loops at the same cycles; the late one's commands each stand for one period
    of motion, so its arm covers the same path, later.  The operator never falls silent here: a command
    older than incoming_command_timeout stops the servo by the wall clock, rightly after fewer of a starved
    loop's cycles.
    """
    rng = np.random.default_rng(7)
    late = cycle_times(rng, SECONDS)
    punctual = [index * PERIOD for index in range(len(late))]
    spells = operator(rng, len(late) * PERIOD)

    def by_index(index, t):
        return command_at(spells, index * PERIOD) or TwistCommand(np.zeros(6))

    Q_late, Q_punctual = drive(ik7, late, by_index), drive(ik7, punctual, by_index)
    assert late[-1] > 1.5 * punctual[-1]   # the starved loop ran far fewer cycles a second
    np.testing.assert_allclose(Q_late, Q_punctual, rtol=0.0, atol=1e-12)
