"""From an empty kernel cache: the first solve is right at once, interpreted, and the compiled kernel follows."""
import json
import os
import pathlib
import subprocess
import sys

import ik_solver

ROOT = pathlib.Path(ik_solver.__file__).resolve().parents[1]

_PRELUDE = r"""
import json, sys
import numba.core.event as ev
import numpy as np
compiled = []


class Compiles(ev.Listener):
    def on_start(self, event):
        compiled.append(event.data['dispatcher'].py_func.__name__)

    def on_end(self, event):
        pass


ev.register('numba:compile', Compiles())
from ik_solver.core import kernel_cache
"""

_FIRST_SOLVE = _PRELUDE + r"""
from ik_solver import IKSolver, load_chain
from ik_solver_demos.tools.resources import arm_files
chain = load_chain(arm_files('ik7')[0], 'base_link', 'tool0')
rng = np.random.default_rng(5)
results = []
solver = IKSolver(chain)
for _ in range(3):
    target = chain.fk(rng.uniform(chain.lower, chain.upper))
    result = solver.solve(target, chain.mid_configuration())
    reached = chain.fk(result.joints)
    results.append([bool(result.success), float(np.linalg.norm(reached[:3, 3] - target[:3, 3])),
                    float(np.abs(reached[:3, :3] - target[:3, :3]).max())])
server = kernel_cache.background_process()
asked = server is not None
if asked:
    server.kill()
print(json.dumps({'results': results, 'compiled_here': compiled, 'asked': asked}))
"""

_SWITCH = _PRELUDE + r"""
import time
from ik_solver.core import clock
first = clock.monotonic()
interpreted = not clock.monotonic.signatures
kernel_cache.wait_for_background(timeout=300)
end = time.monotonic() + 30
while not clock.monotonic.signatures and time.monotonic() < end:
    clock.monotonic()
    time.sleep(0.1)
print(json.dumps({'interpreted_first': interpreted, 'compiled_later': bool(clock.monotonic.signatures),
                  'ticks': clock.monotonic() > first, 'compiled_here': compiled}))
"""

_WARM_UP = _PRELUDE + r"""
from ik_solver.core.warmup import warm_up
warm_up()
server = kernel_cache.background_process()
print(json.dumps({'asked': server is not None, 'compiled_here': compiled}))
if server is not None:
    server.kill()
"""


def _run(code, cache, mode='background'):
    env = dict(os.environ, IK_SOLVER_CACHE_DIR=str(cache), IK_SOLVER_KERNELS=mode)
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, cwd=ROOT,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_first_solves_from_an_empty_cache_are_right_without_compiling_here(tmp_path):
    """FK -> IK -> FK agrees on the first solves; nothing compiles in the process; the background is asked."""
    report, stderr = _run(_FIRST_SOLVE, tmp_path / 'cache')
    for success, position, rotation in report['results']:
        assert success and position < 1e-4 and rotation < 1e-4
    assert report['compiled_here'] == []
    assert report['asked']
    assert 'background' in stderr   # the user is told that kernels compile


def test_a_kernel_compiled_in_the_background_replaces_the_interpreted_one(tmp_path):
    """The first call runs interpreted; once the background process has cached the kernel, calls run it compiled."""
    report, _ = _run(_SWITCH, tmp_path / 'cache')
    assert report['interpreted_first'] and report['compiled_later'] and report['ticks']
    assert report['compiled_here'] == []   # loaded from the cache, not compiled here


def test_warm_up_from_an_empty_cache_hands_its_steps_to_the_background(tmp_path):
    """A node's warm_up() compiles nothing in its process from an empty cache: the background gets the steps."""
    report, _ = _run(_WARM_UP, tmp_path / 'cache')
    assert report['asked'] and report['compiled_here'] == []


def test_interpreted_mode_never_compiles(tmp_path):
    """IK_SOLVER_KERNELS=interpreted: right solutions, no compilation anywhere."""
    report, _ = _run(_FIRST_SOLVE, tmp_path / 'cache', mode='interpreted')
    assert all(success for success, _, _ in report['results'])
    assert report['compiled_here'] == [] and not report['asked']
