"""A kernel the background compiler cannot provide compiles aside: no call waits for a compilation.

Compiling an entry kernel costs tens of seconds of CPU, minutes on a loaded machine; a node whose
solve waited for it would answer nothing meanwhile, far beyond any solve's timeout.
"""
import json
import os
import pathlib
import subprocess
import sys

import ik_solver

ROOT = pathlib.Path(ik_solver.__file__).resolve().parents[1]

#: A process whose background compiler has died: its first kernel call must still return at once.
_DEAD_SERVER = r"""
import json, subprocess, sys, threading, time
import numba.core.event as ev
threads = []


class Compiles(ev.Listener):
    def on_start(self, event):
        threads.append(threading.current_thread() is threading.main_thread())

    def on_end(self, event):
        pass


ev.register('numba:compile', Compiles())
from ik_solver.core import clock, kernel_cache
gone = subprocess.Popen([sys.executable, '-c', 'pass'])
gone.wait()
kernel_cache._background._proc = gone   # the background compiler has ended: it takes no request
first = clock.monotonic()
interpreted = not clock.monotonic.signatures
end = time.monotonic() + 300
while not clock.monotonic.signatures and time.monotonic() < end:
    time.sleep(0.1)
print(json.dumps({'interpreted_first': interpreted, 'compiled_later': bool(clock.monotonic.signatures),
                  'ticks': clock.monotonic() > first, 'on_caller': any(threads), 'compiled': bool(threads)}))
"""


def test_a_dead_background_compiler_leaves_the_compilation_off_the_callers_thread(tmp_path):
    """The call runs interpreted at once; the kernel compiles on another thread, and later calls run it."""
    env = dict(os.environ, IK_SOLVER_CACHE_DIR=str(tmp_path / 'cache'), IK_SOLVER_KERNELS='background')
    out = subprocess.run([sys.executable, '-c', _DEAD_SERVER], env=env, capture_output=True, text=True, cwd=ROOT,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report['interpreted_first'] and report['ticks']
    assert report['compiled'] and report['compiled_later']
    assert not report['on_caller'], 'the calling thread compiled the kernel'
