"""Cold start: the first ``IKSolver(chain)`` and solve of a fresh process, and a node's readiness, from an empty cache.

Each run is a fresh interpreter whose kernel cache folder (``IK_SOLVER_CACHE_DIR``,
and numba's own ``NUMBA_CACHE_DIR`` for kernels outside the solver) is a new
temporary folder.  Printed per run (wall s unless said): import, chain loading,
construction, first solve, whether FK of its joints meets the target, the CPU
seconds of the process until then and of compiling (in the process, and in the
background compiler), when the cache held the kernels and a solve's time then:

* ``empty``: an empty cache, the default ``background`` mode: the first solves
  run interpreted while the background compiler fills the cache;
* ``warm``: the same cache again, filled by the first run;
* ``inline`` (``--inline``): an empty cache compiled in the process, numba's own
  way (``IK_SOLVER_KERNELS=inline``);
* ``node`` (unless ``--no-node``): ``ik_solver_node`` (ik7) on an empty cache,
  the seconds from its start until it answers a ``~/solve`` request with a solution.

    python -m ik_solver_demos.tools.bench_cold_start                  # bundled ik7, method lm
    python -m ik_solver_demos.tools.bench_cold_start --method dls --robot ik6 --inline
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

_CHILD = r'''
import json, os, resource, sys, time
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
from ik_solver.core import kernel_cache
from ik_solver_demos.tools.resources import arm_files
import numpy as np
t1 = time.perf_counter()
chain = load_chain(arm_files(sys.argv[1])[0], 'base_link', 'tool0')
q = chain.mid_configuration()
target = chain.fk(0.5 * q + 0.1)
t2 = time.perf_counter()
solver = IKSolver(chain, method=sys.argv[2])
t3 = time.perf_counter()
result = solver.solve(target, q)
t4 = time.perf_counter()
correct = bool(result.success and np.allclose(chain.fk(result.joints), target, atol=1e-4))
first = {'import': t1 - t0, 'load': t2 - t1, 'construct': t3 - t2, 'first_solve': t4 - t3, 'success': correct,
         'compile_cpu': compile_cpu[0], 'cpu': time.process_time()}
server = kernel_cache.background_process()
if server is not None:
    kernel_cache.wait_for_background()
    with open(f'/proc/{server.pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    first['background_cpu'] = (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    first['compiled_after'] = time.perf_counter() - t0
    steady = []
    while len(steady) < 3 and time.perf_counter() - t0 < first['compiled_after'] + 30:
        time.sleep(kernel_cache.RECHECK_PERIOD / 2)   # the compiled kernel loads in a thread after a look
        t = time.perf_counter()
        solver.solve(target, q)
        if time.perf_counter() - t < 1e-3:
            steady.append(time.perf_counter() - t)
    first['compiled_solve'] = min(steady) if steady else float('nan')
print(json.dumps(first))
'''


def run(robot, method, cache, mode='background'):
    """One fresh process on the cache folder ``cache`` in kernel ``mode``: its timings (s) as a dict."""
    env = dict(os.environ, IK_SOLVER_CACHE_DIR=cache, NUMBA_CACHE_DIR=os.path.join(cache, 'numba'),
               IK_SOLVER_KERNELS=mode)
    out = subprocess.run([sys.executable, '-c', _CHILD, robot, method], env=env, capture_output=True, text=True,
                         check=True)
    for line in out.stderr.strip().splitlines():
        print(f'  | {line}')
    return json.loads(out.stdout.strip().splitlines()[-1])


def node_ready(cache, timeout=120.0):
    """Seconds from the start of ``ik_solver_node`` (ik7, empty ``cache``) to its first solved ~/solve request."""
    from ik_solver_interfaces.srv import SolveIK
    import rclpy

    from .bench_node import HOME, start
    from .observer import ArmObserver
    from .resources import arm_files, local_ros_env
    from ik_solver.core.chain import load_chain
    from ik_solver.ros.messages import matrix_to_pose

    local_ros_env()   # a private ROS domain for this process and the node: no other node answers
    rclpy.init()
    chain = load_chain(arm_files('ik7')[0], 'base_link', 'tool0')
    observer = ArmObserver(chain.joint_names)
    request = SolveIK.Request()
    request.target.header.frame_id = chain.base_link
    request.target.pose = matrix_to_pose(chain.fk(HOME + 0.1))
    os.environ.update(IK_SOLVER_CACHE_DIR=cache, NUMBA_CACHE_DIR=os.path.join(cache, 'numba'))
    started = time.monotonic()
    node = start('ros.ik_node')
    try:
        while time.monotonic() - started < timeout:
            if observer.solve_client.service_is_ready():
                response = observer.call(observer.solve_client, request)
                if response is not None and response.success:
                    return time.monotonic() - started, response
            time.sleep(0.05)
        return float('nan'), None
    finally:
        node.stop()
        observer.close()
        rclpy.try_shutdown()
        for pid in _compilers_of(cache):   # what the node had asked for is of no use to a deleted cache
            os.kill(pid, signal.SIGTERM)


def _compilers_of(cache):
    """Return the pids of background compilers that fill ``cache``."""
    pids = []
    for entry in os.listdir('/proc'):
        try:
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                if b'compile_server.py' not in f.read():
                    continue
            with open(f'/proc/{entry}/environ', 'rb') as f:
                if f'IK_SOLVER_CACHE_DIR={cache}'.encode() in f.read().split(b'\0'):
                    pids.append(int(entry))
        except (OSError, ValueError):
            continue
    return pids


def main(argv=None):
    """Print the runs' table (see the module docstring)."""
    parser = argparse.ArgumentParser(description='first IKSolver construction and solve from an empty kernel cache')
    parser.add_argument('--robot', default='ik7', help='a bundled arm (ik7, ik6)')
    parser.add_argument('--method', default='lm')
    parser.add_argument('--inline', action='store_true', help='also compile in the process (minutes of CPU)')
    parser.add_argument('--no-node', action='store_true', help='skip the node')
    args = parser.parse_args(argv)
    print(f'{"run":>6} {"import":>7} {"load":>6} {"construct":>9} {"1st solve":>9} {"total":>6} {"ok":>3} '
          f'{"CPU":>5} {"compile CPU":>11} {"bg CPU":>7} {"compiled at":>11} {"solve then":>10}  '
          f'(s, {args.robot}, {args.method}, {os.cpu_count()} CPUs)')
    runs = [('empty', 'background', 'a'), ('warm', 'background', 'a')] + ([('inline', 'inline', 'b')]
                                                                          if args.inline else [])
    with tempfile.TemporaryDirectory(prefix='ik_solver_cold_') as root:
        for label, mode, folder in runs:
            r = run(args.robot, args.method, os.path.join(root, folder), mode)
            total = r['import'] + r['load'] + r['construct'] + r['first_solve']
            print(f'{label:>6} {r["import"]:7.2f} {r["load"]:6.2f} {r["construct"]:9.2f} {r["first_solve"]:9.4f} '
                  f'{total:6.2f} {"yes" if r["success"] else "NO":>3} {r["cpu"]:5.1f} {r["compile_cpu"]:11.1f} '
                  f'{r.get("background_cpu", 0.0):7.1f} {r.get("compiled_after", float("nan")):11.1f} '
                  f'{r.get("compiled_solve", float("nan")) * 1e3:8.3f}ms')
        if not args.no_node:
            ready, response = node_ready(os.path.join(root, 'node'))
            print(f'ik_solver_node (ik7) on an empty cache: first ~/solve answered with a solution {ready:.2f} s '
                  f'after its start')


if __name__ == '__main__':
    main()
