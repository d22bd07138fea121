"""IK benchmark: the TRAC-IK protocol on URDF chains, per method, against Robotics Toolbox.

For each robot: N random joint vectors within the limits (fixed RNG seed),
targets = their FK, every solve seeded at the middle of the limits with a
wall-clock budget; a solve counts only if its own FK check gives < 1e-5 m and
< 1e-4 rad within the limits.  Prints success, median / mean / p95 time per
solve and mean iterations.  Tracking follows a smooth path seeded with the
previous solution.  Where roboticstoolbox-python is installed, its C++
``ik_LM`` solves the same targets and the same path in the same run, the
solvers taking turns on every target, so ratios hold on a shared machine.
Then the compiled batch (solves/s with the protocol's mid-limit seeds and with
warm seeds), the cost of a per-call override, and a fresh process's
construction time and first solve.  For arms with a known elbow, the pole
target: how often the elbow ends on the pole's side (random reachable targets,
a pole 0.5 m off the swivel reference plane on a random side, random seeds),
whether every miss says so, how many misses had a pole-side solution (found by
sampling), and the time against the same solves without a pole.
``--overrun N`` instead runs N random solves with random (legal, heavy)
options and reports how far each overran its timeout.

    python -m ik_solver_demos.tools.bench                       # all robots, N = 1000
    python -m ik_solver_demos.tools.bench --robots panda --methods lm dls -n 200
    python -m ik_solver_demos.tools.bench --urdf my.urdf --base base_link --tip tool0
    python -m ik_solver_demos.tools.bench --robots ik7 --overrun 200000
    python -m ik_solver_demos.tools.bench --robots ik7 panda --pole-only -n 300   # the pole figure alone
    taskset -c 1 chrt -f 10 python -m ik_solver_demos.tools.bench --robots ik7 --overrun 200000   # no contention
"""
import argparse
import glob
import os
import site
import subprocess
import sys
import time

from ik_solver.core.chain import load_chain
from ik_solver.core.kinematics import PRISMATIC
from ik_solver.core.methods import METHOD_NAMES
from ik_solver.core.nullspace import NullspaceGoals
from ik_solver.core.solver import IKSolver
from ik_solver.core.transforms import make_pose, pose_error
import numpy as np

from .resources import arm_files

POSITION_CHECK, ROTATION_CHECK = 1e-5, 1e-4
METHOD_OPTIONS = {'transpose': {'max_iterations': 1000, 'patience': 50}}


def _find(package_dir, relative):
    for base in site.getsitepackages() + [site.getusersitepackages()]:
        hits = glob.glob(os.path.join(base, package_dir, relative))
        if hits:
            return hits[0]
    return None


def robot_sources():
    """Map robot names to (URDF path or None, base link, tip link)."""
    return {
        'ik7': (arm_files('ik7')[0], 'base_link', 'tool0'),
        'ik6': (arm_files('ik6')[0], 'base_link', 'tool0'),
        'ur5': (_find('cmeel.prefix', 'share/example-robot-data/robots/ur_description/urdf/ur5_robot.urdf'),
                'base_link', 'tool0'),
        'panda': (_find('cmeel.prefix', 'share/example-robot-data/robots/panda_description/urdf/panda.urdf'),
                  'panda_link0', 'panda_hand_tcp'),
        'iiwa14': (_find('rtbdata', 'xacro/kuka_description/kuka_lbr_iiwa/urdf/lbr_iiwa_14_r820.urdf'),
                   'base_link', 'tool0'),
        'xarm7': (_find('cmeel.prefix', 'share/example-robot-data/robots/xarm_description/urdf/xarm7.urdf'),
                  'link_base', 'link_eef'),
    }


#: (elbow link, first moving link) of the 7-joint arms, for the pole figure.
ELBOWS = {'ik7': ('link4', 'link1'), 'panda': ('panda_link4', 'panda_link1'), 'iiwa14': ('link_4', 'link_1'),
          'xarm7': ('link4', 'link1')}


def passes_check(chain, q, target):
    if not (np.isfinite(q).all() and chain.within_limits(q)):
        return False
    position, orientation = pose_error(target, chain.fk(q))
    return position < POSITION_CHECK and orientation < ROTATION_CHECK


def summarize(name, ok, times, iterations=None):
    t = np.asarray(times) * 1e6
    its = f'{np.mean(iterations):8.1f}' if iterations is not None else f"{'-':>8}"
    return (f'{name:<14} {100 * np.mean(ok):8.2f} {np.median(t):10.1f} {t.mean():10.1f} '
            f'{np.percentile(t, 95):10.1f} {its}')


HEADER = f"{'method':<14} {'success%':>8} {'median us':>10} {'mean us':>10} {'p95 us':>10} {'iters':>8}"


def take_turns(chain, targets, solvers):
    """Solve every target with each solver in turn (``name -> solve(T) -> (ok, q, iterations or None)``).

    Taking turns target by target lets a shared machine's load fall on all
    solvers alike, so their ratios hold.  Returns name -> (ok, times, iterations).
    """
    runs = {name: ([], [], []) for name in solvers}
    for T in targets:
        for name, solve in solvers.items():
            start = time.perf_counter()
            success, q, iterations = solve(T)
            elapsed = time.perf_counter() - start
            ok, times, its = runs[name]
            times.append(elapsed)
            ok.append(success and passes_check(chain, q, T))
            its.append(iterations)
    return runs


def protocol_solvers(chain, methods, timeout):
    """Our solver per method and, where installed, rtb ik_LM, each seeded at mid-limits: name -> solve(T)."""
    seed = chain.mid_configuration()
    solvers = {}
    for method in methods:
        solver = IKSolver(chain, method=method, timeout=timeout, **METHOD_OPTIONS.get(method, {}))
        solver.solve(chain.fk(seed), seed)   # kernels loaded before timing

        def ours(T, solver=solver):
            result = solver.solve(T, seed)
            return result.success, result.joints, result.iterations
        solvers[method] = ours
    ets = rtb_chain(chain)
    if ets is not None:
        # E = 1/2 |e|^2 < 5e-11 means |e| < 1e-5: as strict as our own tolerance.
        def rtb(T):
            sol = ets.ik_LM(T, q0=seed, tol=5e-11, ilimit=30, slimit=100, joint_limits=True)
            return bool(sol.success), np.asarray(sol.q), None
        rtb(chain.fk(seed))
        solvers['rtb ik_LM'] = rtb
    return solvers, ets


def bench_protocol(chain, targets, methods, timeout):
    """Rows per method and for rtb ik_LM, solves taking turns on every target, and the lm / rtb median ratio."""
    solvers, ets = protocol_solvers(chain, methods, timeout)
    runs = take_turns(chain, targets, solvers)
    rows = []
    for name, (ok, times, its) in runs.items():
        row = summarize(name, ok, times, None if its[0] is None else its)
        if name == 'rtb ik_LM':
            drift = max(np.abs(ets.eval(q) - chain.fk(q)).max() for q in chain.random_configuration(
                np.random.default_rng(1), 20))
            row += f'   (FK agreement {drift:.1e})'
        rows.append(row)
    if 'lm' in runs and 'rtb ik_LM' in runs:
        rows.append(f'median time ratio lm / rtb ik_LM: '
                    f'{np.median(runs["lm"][1]) / np.median(runs["rtb ik_LM"][1]):.2f} (solves interleaved)')
    return rows


def rtb_chain(chain):
    """Build the same chain as a Robotics Toolbox ETS (axis-aligned joints); None if it cannot be."""
    try:
        import roboticstoolbox as rtb
    except ImportError:
        return None
    if chain.mimic_joints:
        return None
    ets = []
    for i in range(chain.axis.shape[0]):
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = chain.origin_R[i], chain.origin_p[i]
        ets.append(rtb.ET.SE3(T))
        k = int(np.argmax(np.abs(chain.axis[i])))
        if abs(abs(chain.axis[i, k]) - 1.0) > 1e-12:
            return None
        kind = ('t' if chain.kind[i] == PRISMATIC else 'R') + 'xyz'[k]
        lim = [chain.lower[i], chain.upper[i]] if np.isfinite(chain.lower[i]) else [-np.pi, np.pi]
        ets.append(getattr(rtb.ET, kind)(flip=bool(chain.axis[i, k] < 0), qlim=lim))
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = chain.origin_R[-1], chain.origin_p[-1]
    ets.append(rtb.ET.SE3(T))
    return rtb.ETS(ets)


def tracking_path(chain, rng, points=1000):
    """(start q, targets) of a figure-eight (0.1 m) at a fixed orientation.

    It starts from the best-conditioned of 200 poses in the middle half of every
    joint's range, so that a continuous solution along the path exists.
    """
    mid, half = chain.mid_configuration(), 0.25 * (chain.sample_upper - chain.sample_lower)
    Q = rng.uniform(mid - half, mid + half, size=(200, chain.n))
    q0 = Q[np.argmax(np.linalg.svd(chain.jacobian_batch(Q), compute_uv=False)[:, -1])]
    T0 = chain.fk(q0)
    angle = np.linspace(0, 2 * np.pi, points)
    offsets = 0.1 * np.stack([np.sin(angle), 0.5 * np.sin(2 * angle), np.zeros_like(angle)], axis=1)
    return q0, [make_pose(T0[:3, 3] + T0[:3, :3] @ d, T0[:3, :3]) for d in offsets]


def follow(chain, q0, targets, solvers):
    """Solve each target seeded with each solver's previous solution; ``solvers``: name -> ``solve(T, q) -> (ok, q)``.

    The solvers take turns on every target, so a shared machine's load falls on
    all of them alike.  Returns name -> (ok, times, joint steps).
    """
    q = dict.fromkeys(solvers, q0)
    runs = {name: ([], [], []) for name in solvers}
    for T in targets:
        for name, solve in solvers.items():
            start = time.perf_counter()
            success, joints = solve(T, q[name])
            elapsed = time.perf_counter() - start
            ok, times, jumps = runs[name]
            times.append(elapsed)
            ok.append(success and passes_check(chain, joints, T))
            jumps.append(np.abs(joints - q[name]).max())
            if success:
                q[name] = joints
    return {name: tuple(np.array(column) for column in run) for name, run in runs.items()}


def tracking(chain, timeout, rng):
    """Tracking rows for ours and (where installed) rtb ik_LM on the same path, and the median ratio."""
    q0, targets = tracking_path(chain, rng)
    solver = IKSolver(chain, timeout=timeout)

    def ours(T, q):
        result = solver.solve(T, q)
        return result.success, result.joints

    solvers = {'tracking': ours}
    ets = rtb_chain(chain)
    if ets is not None:
        def rtb(T, q):
            sol = ets.ik_LM(T, q0=q, tol=5e-11, ilimit=30, slimit=100, joint_limits=True)
            return bool(sol.success), np.asarray(sol.q)
        solvers['rtb tracking'] = rtb
    runs = follow(chain, q0, targets, solvers)
    rows = [f'{name:<14} {100 * ok.mean():8.2f} {np.median(t) * 1e6:10.1f} {t.mean() * 1e6:10.1f} '
            f'{np.percentile(t, 95) * 1e6:10.1f}   largest joint step {j.max():.3f} rad, '
            f'{int(np.sum(j > 0.5))} jumps > 0.5 rad' for name, (ok, t, j) in runs.items()]
    if len(runs) == 2:
        rows.append(f'median time ratio tracking / rtb tracking: '
                    f'{np.median(runs["tracking"][1]) / np.median(runs["rtb tracking"][1]):.2f} (solves interleaved)')
    return rows


def bench_batch(chain, targets, Q, timeout, rng):
    """Compiled batch throughput: mid-limit seeds (the protocol) and warm seeds (0.01 rad from the answer)."""
    solver = IKSolver(chain, timeout=timeout)
    solver.warm_up()
    rows = []
    warm = np.clip(Q + rng.normal(scale=0.01, size=Q.shape), chain.lower, chain.upper)
    for name, seeds in (('protocol seeds', None), ('warm seeds', warm)):
        best = np.inf
        for _ in range(3):
            result = solver.solve_batch(targets, seeds)
            best = min(best, result.elapsed)
        ok = np.mean([passes_check(chain, q, T) for q, T in zip(result.joints, targets)])
        rows.append(f'batch {name:<15} {len(targets) / best:10.0f} solves/s   success {100 * ok:.2f} %')
    return rows


def override_cost(chain, rng, reps=20000):
    """Median extra time of solve(T, q, timeout=...) over solve(T, q), at a solution (no iterations)."""
    solver = IKSolver(chain)
    q = chain.random_configuration(rng)
    T = chain.fk(q)
    timeout = solver.options.timeout
    plain, override = [], []
    for _ in range(reps):
        start = time.perf_counter()
        solver.solve(T, q)
        middle = time.perf_counter()
        solver.solve(T, q, timeout=timeout)
        override.append(time.perf_counter() - middle)
        plain.append(middle - start)
    return (f'per-call override: solve(T, q) {np.median(plain) * 1e6:.2f} us, with timeout= '
            f'{np.median(override) * 1e6:.2f} us: +{(np.median(override) - np.median(plain)) * 1e6:.2f} us')


def overrun(chain, count, rng):
    """Run random solves with random heavy options; print how far elapsed exceeded the timeout."""
    heavy = [{}, {'max_iterations': 10000, 'nullspace': NullspaceGoals(manipulability=1.0, iterations=10000)},
             {'max_iterations': 10 ** 6, 'patience': 10 ** 9}, {'mode': 'manipulability'},
             {'method': 'dls'}, {'method': 'transpose', 'max_iterations': 1000}]
    solvers = [IKSolver(chain, **options) for options in heavy]
    excess = np.empty(count)
    for i in range(count):
        solver = solvers[i % len(solvers)]
        timeout = float(rng.uniform(0.0005, 0.005))
        q = chain.random_configuration(rng)
        T = chain.fk(q) if i % 3 else make_pose(rng.uniform(-1.5, 1.5, 3), rng.normal(size=4))
        result = solver.solve(T, chain.random_configuration(rng), timeout=timeout)
        excess[i] = result.elapsed - timeout
        if i % 200 == 199:
            time.sleep(0.1)   # below real-time throttling's 95 % duty when run under chrt
    ms = excess * 1e3
    print(f'{count} random solves (timeouts 0.5-5 ms, {len(heavy)} option sets): overrun max {ms.max():.3f} ms, '
          f'p99.9 {np.percentile(ms, 99.9):.3f} ms; > 1 ms: {int(np.sum(ms > 1))}, > 2 ms: {int(np.sum(ms > 2))}')


def elbow_side(chain, q, elbow, first, pole):
    """Return the elbow's distance (m) from the plane through the first joint's axis and the tip, + pole side.

    Written here from the definition, apart from the solver's own test, so the figure checks the solver.
    """
    T1 = chain.fk(q, first)
    s, axis = T1[:3, 3], T1[:3, :3] @ chain.axis[0]
    normal = np.cross(axis, chain.fk(q)[:3, 3] - s)
    normal /= np.linalg.norm(normal)
    return float((chain.fk(q, elbow)[:3, 3] - s) @ normal * np.sign((pole - s) @ normal))


def pole_problems(chain, elbow, first, count, rng):
    """[(target, pole)]: FK of random joints, a pole 0.5 m off the swivel reference plane on a random side."""
    problems = []
    for q in chain.random_configuration(rng, count):
        T1 = chain.fk(q, first)
        s, axis = T1[:3, 3], T1[:3, :3] @ chain.axis[0]
        normal = np.cross(axis, chain.fk(q)[:3, 3] - s)
        normal /= np.linalg.norm(normal)
        e = chain.fk(q, elbow)[:3, 3]
        problems.append((chain.fk(q), e - ((e - s) @ normal) * normal + rng.choice([-0.5, 0.5]) * normal))
    return problems


def pole_side_reachable(chain, target, elbow, first, pole, rng, samples=1000):
    """Tell whether sampling (solves without a pole from ``samples`` random seeds) finds a pole-side solution."""
    batch = IKSolver(chain, timeout=0.05).solve_batch(target, chain.random_configuration(rng, samples))
    return any(elbow_side(chain, q, elbow, first, pole) > 0.0
               for q in batch.joints[batch.success] if passes_check(chain, q, target))


def pole_figure(chain, name, count, timeout, rng):
    """Rows: the elbow's side rate with a pole, misses (reported, reachable) and the time against no pole."""
    elbow, first = ELBOWS[name]
    plain = IKSolver(chain, timeout=timeout)
    on_side = reported = reachable = failed = 0
    times = {'pole': [], 'none': []}
    for i, (target, pole) in enumerate(pole_problems(chain, elbow, first, count, rng)):
        solver = IKSolver(chain, timeout=timeout, random_seed=i,
                          nullspace=NullspaceGoals(pole=1.0, pole_link=elbow, pole_target=pole))
        seed = chain.random_configuration(rng)
        result = solver.solve(target, seed)
        times['pole'].append(result.elapsed)
        times['none'].append(plain.solve(target, seed).elapsed)
        if not (result.success and passes_check(chain, result.joints, target)):
            failed += 1
        elif elbow_side(chain, result.joints, elbow, first, pole) > 0.0:
            on_side += 1
        else:
            reported += result.message.startswith('pole_side_unreachable')
            reachable += pole_side_reachable(chain, target, elbow, first, pole, rng)
    missed = count - on_side - failed
    pole_ms, none_ms = (np.array(times[k]) * 1e3 for k in ('pole', 'none'))
    return [f'pole side      {on_side}/{count} on the pole side ({100 * on_side / count:.1f} %), {failed} failed; '
            f'{missed} off it: {reported} say pole_side_unreachable, {reachable} had a pole-side solution '
            f'(sampling 1000 seeds): {100 * on_side / max(on_side + reachable, 1):.1f} % of the reachable',
            f'pole time      median {np.median(pole_ms):.3f} ms, p95 {np.percentile(pole_ms, 95):.3f} ms; without '
            f'a pole (same targets and seeds) median {np.median(none_ms):.3f} ms, p95 '
            f'{np.percentile(none_ms, 95):.3f} ms: x{np.median(pole_ms) / np.median(none_ms):.1f} median']


def cold_start(urdf, base, tip, timeout=0.005):
    """Fresh interpreter, numba cache warm: (import + load + construct + first solve s, construction s, first solve)."""
    code = ('import time; t = time.perf_counter(); import numpy as np; '
            'from ik_solver import load_chain, IKSolver; '
            f'c = load_chain({urdf!r}, {base!r}, {tip!r}); q = c.mid_configuration(); '
            f't1 = time.perf_counter(); s = IKSolver(c, timeout={timeout}); t2 = time.perf_counter(); '
            'r = s.solve(c.fk(q * 0.5), q); '
            'print(time.perf_counter() - t, t2 - t1, r.elapsed, r.success)')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    total, construct, first, success = out.stdout.split()
    return float(total), float(construct), float(first), success == 'True'


def main(argv=None):
    parser = argparse.ArgumentParser(description='IK benchmark (TRAC-IK protocol)')
    parser.add_argument('--robots', nargs='*', default=['ur5', 'panda', 'iiwa14', 'ik7', 'ik6'])
    parser.add_argument('--urdf', help='benchmark this URDF instead (with --base and --tip)')
    parser.add_argument('--base', default='base_link')
    parser.add_argument('--tip', default='tool0')
    parser.add_argument('-n', type=int, default=1000, help='random targets per robot')
    parser.add_argument('--timeout', type=float, default=0.005, help='budget per solve [s]')
    parser.add_argument('--methods', nargs='*', default=list(METHOD_NAMES))
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--no-tracking', action='store_true')
    parser.add_argument('--overrun', type=int, default=0, help='only measure timeout overruns over this many solves')
    parser.add_argument('--pole-only', action='store_true', help='only the pole figure (arms with a known elbow)')
    parser.add_argument('--pole-timeout', type=float, default=0.05, help='budget per solve of the pole figure [s]')
    args = parser.parse_args(argv)
    sources = {'urdf': (args.urdf, args.base, args.tip)} if args.urdf else robot_sources()
    names = ['urdf'] if args.urdf else args.robots
    if args.overrun:
        for name in names:
            path, base, tip = sources[name]
            print(name, end=': ')
            overrun(load_chain(path, base, tip), args.overrun, np.random.default_rng(args.seed))
        return
    if not args.pole_only:
        print(f'N = {args.n} targets per robot, timeout {args.timeout * 1e3:.1f} ms, seed = middle of the limits, '
              f'success = own FK check < {POSITION_CHECK} m and < {ROTATION_CHECK} rad within limits')
    for name in names:
        path, base, tip = sources[name]
        if path is None:
            print(f'\n{name}: not installed, skipped')
            continue
        chain = load_chain(path, base, tip)
        rng = np.random.default_rng(args.seed)
        if args.pole_only:
            if name in ELBOWS:
                print(f'\n{name}: {min(args.n, 300)} targets, timeout {args.pole_timeout * 1e3:.1f} ms')
                print('\n'.join(pole_figure(chain, name, min(args.n, 300), args.pole_timeout, rng)))
            continue
        Q = chain.random_configuration(rng, args.n)
        targets = chain.fk_batch(Q)
        print(f'\n{name} ({chain.n} joints, {base} -> {tip})\n{HEADER}')
        print('\n'.join(bench_protocol(chain, targets, args.methods, args.timeout)))
        if not args.no_tracking:
            print('\n'.join(tracking(chain, args.timeout, rng)))
        print('\n'.join(bench_batch(chain, targets, Q, args.timeout, rng)))
        print(override_cost(chain, rng))
        if name in ELBOWS:
            print('\n'.join(pole_figure(chain, name, min(args.n, 300), args.pole_timeout, rng)))
    path, base, tip = sources[names[0]]
    if path and not args.pole_only:
        total, construct, first, success = cold_start(path, base, tip, args.timeout)
        print(f'\nfresh process ({names[0]}): import + load + construct + first solve {total:.2f} s; '
              f'construction {construct:.3f} s; first solve {first * 1e3:.3f} ms (timeout '
              f'{args.timeout * 1e3:.1f} ms), success {success}')


if __name__ == '__main__':
    main()
