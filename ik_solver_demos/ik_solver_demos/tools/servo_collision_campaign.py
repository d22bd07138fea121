"""Random-twist campaign of the servo's collision avoidance: how many commanded states come closer than the padding.

The servo (``motion.servo.Servo`` braking on ``collision.proximity.Proximity``)
runs in simulated time at 500 Hz on a position controller that follows every
command, driven as a careless operator would: random twists in the base or tool
frame, most of those in the base pushing down onto the table, random jogs, now and then
hands off, a new command every 0.2-1 s.  Every commanded state is then
measured by two fresh CollisionModels of the same robot and world (exact
meshes, not the servo's hulls): one at padding 0 (contacts) and one at the
servo's padding (states closer than it).  The same stream with
``check_collisions`` off is the control: it shows the stream does drive into
things.  Printed too: the CPU time of a servo cycle with and without checking.

    python -m ik_solver_demos.tools.servo_collision_campaign [--robot ik7|panda] [--seconds 60]
"""
import argparse
import time

from ik_solver.collision.model import CollisionModel
from ik_solver.collision.proximity import Proximity
from ik_solver.collision.scene import load_scene
from ik_solver.core.chain import load_chain
from ik_solver.motion.limits import JointLimits, load_joint_limits, MotionState
from ik_solver.motion.servo import JointJogCommand, Servo, ServoSettings, Status, TwistCommand
import numpy as np

from .bench import robot_sources
from .bench_collision import panda_files, scene as panda_scene
from .resources import arm_files, share_path

PERIOD = 0.002
PADDING = 0.01
#: Franka's published joint acceleration and jerk limits [rad/s^2, rad/s^3] (the URDF carries neither).
PANDA_ACCELERATION = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
PANDA_JERK = np.array([7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0])
#: Start configurations: tool over the table.
STARTS = {'ik7': np.array([-0.5923, 0.8372, 0.6876, -1.4485, -0.5706, 1.061, 0.2140]),
          'panda': np.array([0.0, 0.3, 0.0, -2.0, 0.0, 2.3, 0.8])}


def robot(name):
    """Return (chain, JointLimits, model factory (padding -> CollisionModel), tip frame) of ``name``."""
    if name == 'ik7':
        urdf = arm_files('ik7')[0]
        chain = load_chain(urdf, 'base_link', 'tool0')
        limits = load_joint_limits(chain, share_path('config/ik7_joint_limits.yaml')).limits
        srdf, obstacles, dirs = share_path('config/ik7.srdf'), load_scene(share_path('config/ik7_scene.yaml')), ()
    else:
        urdf, srdf, share = panda_files()
        _, base, tip = robot_sources()['panda']
        chain = load_chain(urdf, base, tip)
        limits = JointLimits(tuple(chain.joint_names), chain.lower, chain.upper, chain.velocity_limits,
                             PANDA_ACCELERATION, PANDA_JERK)
        obstacles, dirs = panda_scene(), [share]

    def model(padding):
        m = CollisionModel(urdf, chain.base_link, chain.tip_link, srdf=srdf, package_dirs=dirs, padding=padding)
        m.set_obstacles(obstacles)
        return m

    return chain, limits, model, chain.tip_link


def commands(rng, chain, tip, seconds):
    """Yield (start time [s], command or None) of a random teleop session of ``seconds``."""
    t = 0.0
    while t < seconds:
        draw = rng.random()
        if draw < 0.1:
            command = None
        elif draw < 0.3:
            jog = np.full(chain.n, np.nan)
            joints = rng.choice(chain.n, size=rng.integers(1, 4), replace=False)
            jog[joints] = rng.normal(size=len(joints)) * 0.6
            command = JointJogCommand(jog)
        else:
            linear = rng.normal(size=3) * 0.12
            frame = tip if rng.random() < 0.4 else None
            if frame is None and rng.random() < 0.6:
                linear[2] = -abs(linear[2]) - 0.1   # onto the table
            command = TwistCommand(np.concatenate([linear, rng.normal(size=3) * 0.4]), frame)
        yield t, command
        t += rng.uniform(0.2, 1.0)


def run(chain, limits, proximity, start, session, check, seconds):
    """Drive the servo through ``session``; return (commanded states, cycle CPU times [s], status counts)."""
    settings = ServoSettings(publish_period=PERIOD, command_in_type='speed_units', check_collisions=check)
    servo = Servo(chain, limits, settings, proximity)
    servo.warm_up()
    servo.reset(MotionState.at_rest(start))
    states, cpu, codes = [], [], {}
    events = list(session)
    k, command = 0, None
    for cycle in range(int(seconds / PERIOD)):
        now = cycle * PERIOD
        while k < len(events) and events[k][0] <= now:
            command = events[k][1]
            k += 1
        if command is not None:
            servo.set_command(command, now)
        t0 = time.process_time()
        out = servo.step(now, MotionState.at_rest(servo.state.position))
        cpu.append(time.process_time() - t0)
        codes[out.status] = codes.get(out.status, 0) + 1
        if out.publish:
            states.append(out.state.position.copy())
    return np.array(states), np.array(cpu), codes


def witness(contact_model, padded_model, states):
    """Return (states in contact, states closer than the padding) by the independent models."""
    contacts = sum(contact_model.check(q) is not None for q in states)
    closer = sum(padded_model.check(q) is not None for q in states)
    return contacts, closer


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--robot', default='ik7', choices=('ik7', 'panda'))
    parser.add_argument('--seconds', type=float, default=60.0, help='simulated teleop time')
    parser.add_argument('--seed', type=int, default=3)
    args = parser.parse_args(argv)
    chain, limits, model, tip = robot(args.robot)
    servo_model = model(PADDING)
    proximity = Proximity(servo_model)
    contact_model, padded_model = model(0.0), model(PADDING)
    start = STARTS[args.robot]
    if padded_model.check(start) is not None:
        raise SystemExit(f'the start configuration is within the padding: {padded_model.check(start)}')
    print(f'{args.robot}: {args.seconds:g} s of random teleop at {1 / PERIOD:g} Hz, padding {PADDING * 1e3:g} mm, '
          f'{len(servo_model.obstacles)} world objects, {servo_model.pair_count} (self, world) pairs')
    for check in (True, False):
        session = commands(np.random.default_rng(args.seed), chain, tip, args.seconds)
        states, cpu, codes = run(chain, limits, proximity, start, session, check, args.seconds)
        contacts, closer = witness(contact_model, padded_model, states)
        label = 'check_collisions on ' if check else 'check_collisions off'
        print(f'  {label}: {len(states)} commands, {closer} closer than the padding, {contacts} in contact; '
              f'cycle CPU p50 {np.percentile(cpu, 50) * 1e6:.0f} us, p99 {np.percentile(cpu, 99) * 1e6:.0f} us, '
              f'max {cpu.max() * 1e6:.0f} us; cycles decelerating {codes.get(Status.DECELERATE_FOR_COLLISION, 0)}, '
              f'halted {codes.get(Status.HALT_FOR_COLLISION, 0)}')


if __name__ == '__main__':
    main()
