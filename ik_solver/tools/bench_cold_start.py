"""Cold start: the first ``IKSolver(chain)`` and solve of a fresh process, from an empty and a warm kernel cache.

Each run is a fresh interpreter whose kernel cache folder (``IK_SOLVER_CACHE_DIR``,
and numba's own ``NUMBA_CACHE_DIR`` for kernels outside the solver) is a new
temporary folder: the first run finds it empty and compiles, the second one
loads what the first one wrote.  Printed per run: import time, chain loading,
construction, first solve, and the CPU seconds numba spent compiling.

    python -m ik_solver.tools.bench_cold_start                  # bundled ik7, method lm
    python -m ik_solver.tools.bench_cold_start --method dls --robot ik6
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

_CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import numba.core.event as ev

compile_cpu = [0.0]


class _CompileCpu(ev.Listener):
    """CPU seconds inside outermost numba compilations (nested ones are part of their caller's)."""

    depth = 0

    def on_start(self, event):
        if self.depth == 0:
            self.start = time.process_time()
        self.depth += 1

    def on_end(self, event):
        self.depth -= 1
        if self.depth == 0:
            compile_cpu[0] += time.process_time() - self.start


ev.register('numba:compile', _CompileCpu())
from ik_solver import IKSolver, load_chain
from ik_solver.tools.resources import arm_files
t1 = time.perf_counter()
chain = load_chain(arm_files(sys.argv[1])[0], 'base_link', 'tool0')
q = chain.mid_configuration()
target = chain.fk(0.5 * q + 0.1)
t2 = time.perf_counter()
solver = IKSolver(chain, method=sys.argv[2])
t3 = time.perf_counter()
result = solver.solve(target, q)
t4 = time.perf_counter()
print(json.dumps({'import': t1 - t0, 'load': t2 - t1, 'construct': t3 - t2, 'first_solve': t4 - t3,
                  'compile_cpu': compile_cpu[0], 'cpu': time.process_time(), 'success': result.success}))
'''


def run(robot, method, cache):
    """One fresh process on the cache folder ``cache``: its timings (s) as a dict."""
    env = dict(os.environ, IK_SOLVER_CACHE_DIR=cache, NUMBA_CACHE_DIR=os.path.join(cache, 'numba'))
    out = subprocess.run([sys.executable, '-c', _CHILD, robot, method], env=env, capture_output=True, text=True,
                         check=True)
    if out.stderr.strip():
        print(out.stderr.strip())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description='first IKSolver construction and solve from an empty kernel cache')
    parser.add_argument('--robot', default='ik7', help='a bundled arm (ik7, ik6)')
    parser.add_argument('--method', default='lm')
    args = parser.parse_args(argv)
    print(f'{"cache":>6} {"import":>8} {"load":>8} {"construct":>10} {"1st solve":>10} {"total":>8} '
          f'{"compile CPU":>12} {"CPU":>8}  (s, {args.robot}, {args.method}, {os.cpu_count()} CPUs)')
    with tempfile.TemporaryDirectory(prefix='ik_solver_cold_') as cache:
        for label in ('empty', 'warm'):
            r = run(args.robot, args.method, cache)
            total = r['import'] + r['load'] + r['construct'] + r['first_solve']
            print(f'{label:>6} {r["import"]:8.2f} {r["load"]:8.2f} {r["construct"]:10.2f} {r["first_solve"]:10.4f} '
                  f'{total:8.2f} {r["compile_cpu"]:12.1f} {r["cpu"]:8.1f}' + ('' if r['success'] else '  (failed)'))


if __name__ == '__main__':
    main()
