"""What a node holds of numba: loaded kernels keep bitcode, and no coverage plug-in unless coverage runs.

A kernel loaded from the cache keeps its linking module as bitcode (parsed again when a later kernel links
it); numba's coverage plug-in is left out unless a coverage measurement runs.
"""
import importlib.util
import os
import pathlib
import subprocess
import sys

from ik_solver.core import kernel_cache
import numba
import pytest

ROOT = pathlib.Path(kernel_cache.__file__).resolve().parents[2]


def _run(code, **env):
    """Run ``code`` in a fresh Python (the source tree first on the path); return its stdout lines."""
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')]), **env)
    done = subprocess.run([sys.executable, '-c', code], env=environ, capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_library_kept_as_bitcode_still_links_into_a_later_kernel():
    """A kernel compiled after the release calls the released one and computes what it computes."""
    @numba.njit(cache=False)
    def inner(x):
        return 2.0 * x + 1.0

    assert inner(1.0) == 3.0
    library = inner.overloads[inner.signatures[0]].library
    library._get_module_for_linking()   # parsed for linking, as numba leaves a library it loads from a cache
    assert kernel_cache.keep_bitcode_only(library) > 0
    assert library._shared_module is None
    assert kernel_cache.keep_bitcode_only(library) == 0   # nothing left to release

    @numba.njit(cache=False)
    def outer(x):
        return 3.0 * inner(x)

    assert outer(2.0) == 15.0
    assert library._shared_module is not None   # parsed again from the bitcode to be linked


@pytest.mark.skipif(not kernel_cache.warm_up_done(), reason='the kernel cache of this source version is not filled')
def test_kernels_loaded_from_the_cache_keep_bitcode_only():
    """A node's load from the cache (background mode) leaves no parsed linking module, and the kernel runs."""
    code = ('from ik_solver.core import warmup, search; from ik_solver.core.solver import SolverOptions; '
            'warmup.load(SolverOptions()); '
            'libs = [c.library for c in search.solve_fast.overloads.values()]; '
            'print(len(libs), all(l._shared_module is None and l._ik_solver_bitcode for l in libs))')
    count, released = _run(code, **{kernel_cache.MODE_ENV: 'background'})
    assert int(count) >= 1 and released == 'True'


def test_numba_is_imported_without_coverage_when_none_runs():
    """No coverage imported before: numba's plug-in is off and ``coverage`` stays out of the process."""
    code = ('import sys, ik_solver.core, numba.misc.coverage_support as c; '
            'print("coverage" in sys.modules, c.coverage_available)')
    assert _run(code) == ['False', 'False']


@pytest.mark.skipif(importlib.util.find_spec('coverage') is None, reason='coverage is not installed')
def test_a_running_coverage_measurement_still_sees_compiled_code():
    """With coverage imported first (as ``coverage run`` and pytest-cov do), numba's plug-in is on."""
    code = 'import coverage, ik_solver.core, numba.misc.coverage_support as c; print(c.coverage_available)'
    assert _run(code) == ['True']
    code = 'import ik_solver.core, coverage; print(coverage.Coverage is not None)'   # importable after numba
    assert _run(code) == ['True']
