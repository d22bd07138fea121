"""A monotonic clock readable from numba kernels, so the solve loop can honour its timeout mid-attempt.

numba has no clock.  ``monotonic()`` calls libc's ``clock_gettime(CLOCK_MONOTONIC)``
by symbol name from the compiled code (about 30 ns through the vDSO), so the
kernels stay cacheable on disk (a ctypes function pointer would be baked in
as an address and disable caching).  It reads the same clock as Python's
``time.perf_counter`` and ``time.monotonic`` on Linux, so a deadline computed in
Python holds inside the kernel.
"""
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

CLOCK_MONOTONIC = 1   # Linux


@intrinsic
def _clock_monotonic(typingctx):
    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        timespec = ir.LiteralStructType([i64, i64])
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32), timespec.as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, 'clock_gettime')
        ts = cgutils.alloca_once(builder, timespec)
        builder.call(fn, [ir.Constant(ir.IntType(32), CLOCK_MONOTONIC), ts])
        seconds = builder.sitofp(builder.load(cgutils.gep_inbounds(builder, ts, 0, 0)), ir.DoubleType())
        nanoseconds = builder.sitofp(builder.load(cgutils.gep_inbounds(builder, ts, 0, 1)), ir.DoubleType())
        return builder.fadd(seconds, builder.fmul(nanoseconds, ir.Constant(ir.DoubleType(), 1e-9)))
    return types.float64(), codegen


@njit(cache=True)
def monotonic():
    """Seconds of CLOCK_MONOTONIC, callable from Python and from numba kernels."""
    return _clock_monotonic()
