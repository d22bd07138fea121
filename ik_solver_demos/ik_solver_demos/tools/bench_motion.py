"""Motion benchmark: Ruckig moves on the Panda with MoveIt's published limits, as the controller runs them.

What a real Panda gets: for a 0.05 rad and a 1.5 rad move (every
joint, from the ready pose) the planned duration against Ruckig's own optimum
for the same limits, the peak acceleration and jerk of the controller's spline
(sampled at 1 kHz from the true start, as joint_trajectory_controller
interpolates it), and the planning time (p50/p99 over random re-targets of a
moving arm, and with the guard's check added).  Two limit sets: MoveIt's
``panda_moveit_config/config/joint_limits.yaml`` (moveit_resources; jerk 300)
and Franka's hardware limits (frankaemika.github.io control parameters).
The planner it replaced (velocity-limited quintics, read from this checkout's
git history) is timed on the same moves, for the latency comparison.

    python -m ik_solver_demos.tools.bench_motion            # -n 2000 timed plans per limit set
"""
import argparse
from pathlib import Path
import subprocess
import sys
import time
import types

from ik_solver.core.chain import load_chain
from ik_solver.motion.guard import check_trajectory, CONTROL_PERIOD
from ik_solver.motion.jtc import SplineSampler, Trajectory
from ik_solver.motion.limits import JointLimits, MotionState
from ik_solver.motion.timing import plan_move, ruckig_duration
import numpy as np

from .bench import robot_sources

READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
#: Per joint 1..7: moveit_resources panda_moveit_config joint_limits.yaml, and Franka's hardware limits.
LIMIT_SETS = {
    'MoveIt joint_limits.yaml': ([3.75, 1.875, 2.5, 3.125, 3.75, 5.0, 5.0], [300.0] * 7),
    'Franka hardware': ([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0],
                        [7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0]),
}
MOVES = (0.05, 1.5)
#: The last commit before Ruckig: its velocity-limited quintic planner is the latency baseline.
BASELINE_COMMIT = '7960de4'


def panda_limits(chain, acceleration, jerk):
    """Return the Panda chain's URDF position/velocity limits with the given acceleration and jerk."""
    return JointLimits(tuple(chain.joint_names), chain.lower, chain.upper, chain.velocity_limits,
                       np.array(acceleration, float), np.array(jerk, float))


def spline_peaks(start, path):
    """Peak |a| / limit and peak |jerk| (per 1 ms) of the controller's spline, per joint."""
    sampler = SplineSampler(start.position, start.velocity,
                            Trajectory(path.times, path.positions, path.velocities, path.accelerations),
                            start.acceleration)
    grid = np.arange(0.0, path.duration + CONTROL_PERIOD, CONTROL_PERIOD)
    _, _, acc, _ = sampler.evaluate(grid)
    return np.abs(acc).max(axis=0), (np.abs(np.diff(acc, axis=0)) / CONTROL_PERIOD).max(axis=0)


def report_moves(limits):
    print(f"{'move':>9} {'duration':>10} {'Ruckig opt':>11} {'ratio':>7} {'points':>7} {'peak a':>8} "
          f"{'a/limit':>8} {'peak jerk':>10} {'jerk/limit':>10}")
    for size in MOVES:
        start = MotionState.at_rest(READY)
        goal = READY + size
        path = plan_move(start, goal, limits)
        optimum = ruckig_duration(start, goal, limits)
        acc, jerk = spline_peaks(start, path)
        reasons = check_trajectory(start, path, limits)
        print(f'{size:7.2f}rad {path.duration:9.4f}s {optimum:10.4f}s {path.duration / optimum:7.4f} '
              f'{len(path.times):7d} {acc.max():8.3f} {np.max(acc / limits.acceleration):8.4f} '
              f'{jerk.max():10.1f} {np.max(jerk / limits.jerk):10.4f}  guard: {"ok" if not reasons else reasons[0]}')


def report_planning_time(limits, count, rng, baseline=None):
    """Time plan_move (and plan + guard) over re-targets of a moving arm and of an arm at rest.

    With ``baseline`` (the pre-Ruckig timing module) its ``plan_move`` is timed on the same start
    states and goals, so the change in target -> trajectory latency is measured in one run.
    """
    for moving in (True, False):
        times = {'plan_move': [], 'plan_move + guard': [], 'baseline plan_move': []}
        state = MotionState.at_rest(READY)
        for _ in range(count):
            goal = np.clip(state.position + rng.normal(0.0, 0.3, 7), limits.lower + 0.1, limits.upper - 0.1)
            t0 = time.perf_counter()
            path = plan_move(state, goal, limits)
            t1 = time.perf_counter()
            check_trajectory(state, path, limits)
            t2 = time.perf_counter()
            times['plan_move'].append(t1 - t0)
            times['plan_move + guard'].append(t2 - t0)
            if baseline is not None:
                times['baseline plan_move'].append(_time_baseline(baseline, state, goal, limits))
            state = _state_after(state, path, 0.05) if moving else MotionState.at_rest(goal)
        print(f"re-targets every 50 ms of {'a moving arm' if moving else 'an arm at rest'} (n = {count}):")
        for name, values in times.items():
            if values:
                ms = 1e3 * np.array(values)
                print(f'  {name:<20} p50 {np.percentile(ms, 50):7.3f} ms   p99 {np.percentile(ms, 99):7.3f} ms')


def _state_after(state, path, elapsed):
    """Return the controller's reference ``elapsed`` into ``path`` started from ``state``."""
    sampler = SplineSampler(state.position, state.velocity,
                            Trajectory(path.times, path.positions, path.velocities, path.accelerations),
                            state.acceleration)
    pos, vel, acc, _ = sampler.evaluate(np.array([min(elapsed, path.duration)]))
    return MotionState(pos[0], vel[0], acc[0])


def _time_baseline(baseline, state, goal, limits):
    """Seconds the pre-Ruckig planner (velocity limits only) takes for the same move."""
    t0 = time.perf_counter()
    baseline.plan_move(state.position, goal, limits.velocity, v_start=state.velocity, lower=limits.lower,
                       upper=limits.upper)
    return time.perf_counter() - t0


def load_baseline(commit):
    """Import ``ik_solver/motion/timing.py`` as it was at ``commit`` (git history of this checkout)."""
    root = Path(__file__).resolve().parents[2]
    source = subprocess.run(['git', '-C', str(root), 'show', f'{commit}:ik_solver/motion/timing.py'],
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(f'timing_at_{commit}')
    exec(compile(source, f'{commit}:ik_solver/motion/timing.py', 'exec'), module.__dict__)
    return module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('-n', type=int, default=2000, help='timed plans per limit set')
    parser.add_argument('--baseline', default=BASELINE_COMMIT, metavar='COMMIT',
                        help='also time the planner of this commit (default: the last before Ruckig); "" for none')
    args = parser.parse_args(argv)
    baseline = load_baseline(args.baseline) if args.baseline else None
    urdf, base, tip = robot_sources()['panda']
    if urdf is None:
        sys.exit('bench_motion: example-robot-data (PyPI) is not installed')
    chain = load_chain(urdf, base, tip)
    rng = np.random.default_rng(0)
    for name, (acceleration, jerk) in LIMIT_SETS.items():
        limits = panda_limits(chain, acceleration, jerk)
        print(f'\nPanda, {name}: acceleration {acceleration} rad/s^2, jerk {jerk} rad/s^3, '
              'URDF velocity; every joint moves from the ready pose')
        report_moves(limits)
        report_planning_time(limits, args.n, rng, baseline)


if __name__ == '__main__':
    main()
