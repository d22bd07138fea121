"""Give back the resident pages of LLVM's machine code once a node has loaded its kernels.

numba links every cached kernel through LLVM: loading a node's kernels runs through most of libllvmlite's
80 MB of code, and about 50 MB of it then stays resident, although a running node needs LLVM again only to
load another kernel variant (a method or mode it had not used).  These pages are clean copies of the
library file.  ``release_compiler_code`` tells the kernel the process does not need them now (madvise
``MADV_DONTNEED`` on the library's executable mappings); a later use reads them back from the page cache,
which costs a kernel variant loaded later a few milliseconds.  Only executable mappings are released: the
library has no text relocations, so they are never written and nothing of the process is lost with them (a
data mapping would lose its contents; a debugger's breakpoints in LLVM would be).
"""
import ctypes
import functools
import os

#: The file name prefix of LLVM's library as llvmlite ships it.
LIBRARY_PREFIX = 'libllvmlite'
#: madvise advice: the range is not needed; a private file mapping is read again from its file when used.
MADV_DONTNEED = 4


def release_compiler_code(maps='/proc/self/maps'):
    """Release the resident pages of LLVM's executable mappings in this process; return how many bytes it advised.

    Returns 0 where there is nothing to release: LLVM not loaded (no kernels yet), no ``/proc`` (not
    Linux), or no ``madvise`` in the process.

    Args:
        maps: the process's memory map listing (``/proc/<pid>/maps`` format).
    """
    ranges = list(_code_ranges(maps))
    madvise = _madvise() if ranges else None
    if madvise is None:
        return 0
    released = 0
    for start, end in ranges:
        if madvise(start, end - start, MADV_DONTNEED) == 0:
            released += end - start
    return released


def _code_ranges(maps):
    """Yield (start, end) of the executable mappings of LLVM's library in a maps listing."""
    try:
        with open(maps) as listing:
            lines = listing.readlines()
    except OSError:
        return
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[1].startswith('r-x') \
                and os.path.basename(fields[5].strip()).startswith(LIBRARY_PREFIX):
            start, end = (int(address, 16) for address in fields[0].split('-'))
            yield start, end


@functools.cache
def _madvise():
    """Return madvise(addr, length, advice) from the symbols the process has loaded, or None where there is none.

    Not ``ctypes.util.find_library``: on Linux it runs ``ldconfig`` in a child process on every call.
    """
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    madvise.restype = ctypes.c_int
    return madvise
