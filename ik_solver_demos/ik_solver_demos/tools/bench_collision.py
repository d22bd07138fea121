"""Collision-aware IK benchmark on the Panda (example-robot-data meshes and SRDF), with a table and three boxes.

N targets are the tip poses of random configurations that are collision-free
(self and world, padding 0); every solve is seeded at the middle of the limits
with a 20 ms budget.  Printed: the collision-aware solver's success rate and
median time, the self-collision check time per configuration with meshes
(beside a bare Pinocchio + Coal loop over the same pairs, in alternating
rounds of the same run) and with convex hulls, how many returned solutions
collide according to an independent model (a second instance: exact meshes,
padding 0, the SRDF), and how often the plain solver returns a colliding
solution on the same targets.

    python -m ik_solver_demos.tools.bench_collision            # N = 1000
    python -m ik_solver_demos.tools.bench_collision -n 200 --convex --padding 0.01
"""
import argparse
import os
import sys
import time

from ik_solver.collision.model import CollisionModel
from ik_solver.collision.scene import make_obstacle
from ik_solver.core.solver import IKSolver
import numpy as np

from .bench import passes_check, robot_sources

#: A table top under the arm (its top at the base plane) and three boxes within reach (base frame, metres).
SCENE = (
    ('table', [1.6, 1.6, 0.04], [0.3, 0.0, -0.02]),
    ('box_front', [0.12, 0.12, 0.30], [0.55, 0.25, 0.15]),
    ('box_right', [0.20, 0.10, 0.20], [0.35, -0.45, 0.10]),
    ('box_back', [0.15, 0.15, 0.50], [-0.40, 0.35, 0.25]),
)
MAX_SAMPLES = 1000000


def panda_files():
    """(URDF, SRDF, share directory for package:// meshes) of example-robot-data's Panda, or exit."""
    urdf = robot_sources()['panda'][0]
    if urdf is None:
        sys.exit('bench_collision: example-robot-data (PyPI) is not installed')
    robots = os.path.dirname(os.path.dirname(os.path.dirname(urdf)))
    return urdf, os.path.join(os.path.dirname(os.path.dirname(urdf)), 'srdf', 'panda.srdf'), \
        os.path.dirname(os.path.dirname(robots))


def scene():
    """Return the benchmark's world objects."""
    return [make_obstacle(name, 'box', size, position, frame='panda_link0') for name, size, position in SCENE]


def check_time(model, configurations):
    """Mean CPU time (s) of model.check over ``configurations`` (CPU, not wall: the figure survives a busy host)."""
    return _cpu_time(model.check, configurations)


def _cpu_time(check, arguments):
    start = time.process_time()
    for argument in arguments:
        check(argument)
    return (time.process_time() - start) / len(arguments)


class BareCheck:
    """Pinocchio + Coal alone, as their documentation loads a robot: the floor our check is measured against.

    Pinocchio's own URDF and SRDF loading (every pair of different joints, minus the SRDF's), its default
    collision requests, one ``computeCollisions`` over all pairs stopping at the first collision.
    """

    def __init__(self, urdf, srdf, share):
        import pinocchio
        self._collide = pinocchio.computeCollisions
        self.model = pinocchio.buildModelFromUrdf(urdf)
        self.geometry = pinocchio.buildGeomFromUrdf(self.model, urdf, pinocchio.COLLISION, package_dirs=[share])
        self.geometry.addAllCollisionPairs()
        pinocchio.removeCollisionPairs(self.model, self.geometry, srdf)
        self.data, self.geometry_data = self.model.createData(), pinocchio.GeometryData(self.geometry)
        self._neutral = pinocchio.neutral(self.model)

    @property
    def pair_count(self):
        """Return the number of pairs checked."""
        return len(self.geometry.collisionPairs)

    def configurations(self, Q):
        """Pinocchio configurations of the chain configurations Q (other joints, the fingers, at neutral)."""
        return [np.concatenate([q, self._neutral[len(q):]]) for q in Q]

    def check(self, config):
        """Whether a pair collides at the Pinocchio configuration ``config``."""
        return self._collide(self.model, self.data, self.geometry, self.geometry_data, config, True)


def compare_with_bare(model, bare, Q, rounds=5):
    """Best-of-``rounds`` CPU time (s) per configuration of (model.check, bare.check), run in alternation.

    Alternating rounds share the host's load, so their ratio holds on a busy machine where absolute times do not.
    """
    configs = bare.configurations(Q)
    ours, floor = [], []
    for _ in range(rounds):
        ours.append(check_time(model, Q))
        floor.append(_cpu_time(bare.check, configs))
    return min(ours), min(floor)


def free_targets(chain, witness, n, rng):
    """Return (configurations, poses) of ``n`` random collision-free configurations."""
    found = []
    for q in chain.random_configuration(rng, MAX_SAMPLES):
        if witness.check(q) is None:
            found.append(q)
            if len(found) == n:
                break
    else:
        sys.exit(f'bench_collision: only {len(found)} of {MAX_SAMPLES} random configurations are collision-free')
    Q = np.array(found)
    return Q, chain.fk_batch(Q)


def run(solver, chain, targets, witness):
    """(success flags, times, colliding-solution flags) of one solver on the targets, seeded at mid-limits."""
    seed = chain.mid_configuration()
    ok, times, colliding = [], [], []
    for T in targets:
        result = solver.solve(T, seed)
        good = result.success and passes_check(chain, result.joints, T)
        ok.append(good)
        times.append(result.elapsed)
        colliding.append(good and witness.check(result.joints) is not None)
    return np.array(ok), np.array(times), np.array(colliding)


def main(argv=None):
    """Print the benchmark figures."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('-n', type=int, default=1000, help='number of targets (default 1000)')
    parser.add_argument('--timeout', type=float, default=0.02, help='solve budget in s (default 0.02)')
    parser.add_argument('--padding', type=float, default=0.0, help="the solver's collision padding in m")
    parser.add_argument('--convex', action='store_true', help='the solver checks convex hulls of the meshes')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    urdf, srdf, share = panda_files()
    base, tip = robot_sources()['panda'][1:]
    models = {convex: CollisionModel(urdf, base, tip, srdf=srdf, package_dirs=[share], convex=convex)
              for convex in (False, True)}
    witness = CollisionModel(urdf, base, tip, srdf=srdf, package_dirs=[share])
    chain = witness.chain
    rng = np.random.default_rng(args.seed)
    samples = chain.random_configuration(rng, 5000)
    bare = BareCheck(urdf, srdf, share)
    print(f'Panda: {models[False].pair_count[0]} self pairs checked after SRDF and adjacency '
          f'(bare Pinocchio + Coal: {bare.pair_count} pairs)', flush=True)
    ours, floor = compare_with_bare(models[False], bare, samples)
    print(f'self-collision check, meshes      : {ours * 1e6:6.1f} us CPU per configuration; bare Pinocchio + Coal '
          f'loop on the same run: {floor * 1e6:6.1f} us (ours / bare = {ours / floor:.2f})', flush=True)
    print(f'self-collision check, convex hulls: {check_time(models[True], samples) * 1e6:6.1f} us CPU per '
          'configuration', flush=True)
    obstacles = scene()
    witness.set_obstacles(obstacles)
    checker = models[args.convex]
    checker.set_obstacles(obstacles)
    checker.padding = args.padding
    print(f'with the table and three boxes: {check_time(checker, samples) * 1e6:6.1f} us CPU per configuration '
          f'({checker.pair_count[1]} world pairs)', flush=True)
    _, targets = free_targets(chain, witness, args.n, rng)
    aware = IKSolver(chain, collision=checker, timeout=args.timeout)
    plain = IKSolver(chain, timeout=args.timeout)
    print(f'N = {args.n} targets from random collision-free configurations, seeded at mid-limits, '
          f'{args.timeout * 1e3:.0f} ms budget, padding {args.padding} m, '
          f'{"convex hulls" if args.convex else "meshes"}', flush=True)
    print(f'{"solver":<18} {"success %":>9} {"median ms":>10} {"p95 ms":>8} {"colliding returned":>19}')
    for name, solver in (('collision-aware', aware), ('plain', plain)):
        ok, times, colliding = run(solver, chain, targets, witness)
        print(f'{name:<18} {100 * ok.mean():9.2f} {1e3 * np.median(times):10.2f} '
              f'{1e3 * np.percentile(times, 95):8.2f} {colliding.sum():8d} of {ok.sum():d} '
              f'({100 * colliding.sum() / max(ok.sum(), 1):.1f} %)', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
