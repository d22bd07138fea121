"""LLVM's code pages are given back once kernels are loaded, and kernels (old and new) still run after it."""
import subprocess
import sys
import textwrap

from ik_solver.ros.compiler_pages import release_compiler_code
import pytest

#: Run in a fresh process: LLVM's resident code (smaps) before and after the release, and kernels after it.
SCRIPT = textwrap.dedent("""
    import numba, numpy as np
    from ik_solver.ros.compiler_pages import release_compiler_code

    def llvm_code_kb():
        total, inside = 0, False
        for line in open('/proc/self/smaps'):
            fields = line.split()
            if '-' in fields[0] and not fields[0].endswith(':'):
                inside = len(fields) == 6 and fields[1].startswith('r-x') and 'libllvmlite' in fields[5]
            elif inside and fields[0] == 'Rss:':
                total += int(fields[1])
        return total

    square = numba.njit(lambda x: x * x)
    assert square(3.0) == 9.0   # compiled: LLVM has run
    before = llvm_code_kb()
    released = release_compiler_code()
    after = llvm_code_kb()
    assert square(4.0) == 16.0   # the loaded kernel runs without LLVM's pages
    cube = numba.njit(lambda x: x * x * x)
    assert cube(2.0) == 8.0      # and LLVM compiles again: its pages are read back
    print(before, after, released)
""")


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='reads /proc/self/smaps')
def test_llvm_code_leaves_the_resident_set_and_kernels_still_run():
    out = subprocess.run([sys.executable, '-c', SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    before_kb, after_kb, released = map(int, out.stdout.split())
    assert before_kb > 10_000   # compiling touched megabytes of LLVM's code
    assert after_kb < before_kb / 10
    assert released >= before_kb * 1024


def test_nothing_is_released_without_llvm_in_the_listing(tmp_path):
    maps = tmp_path / 'maps'
    maps.write_text('7f0000000000-7f0000100000 r-xp 00000000 08:01 42 /usr/lib/libc.so.6\n'
                    '7f0000200000-7f0000300000 rw-p 00000000 08:01 43 /opt/libllvmlite.so\n')   # data: never
    assert release_compiler_code(str(maps)) == 0
    assert release_compiler_code(str(tmp_path / 'absent')) == 0
