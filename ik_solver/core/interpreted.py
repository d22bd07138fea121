"""The kernels as plain Python: each kernel module loaded a second time with numba's decorators as identities.

A kernel missing from the on-disk cache takes tens of seconds of CPU to
compile; its source, run by the interpreter on NumPy scalars and arrays, gives
the same results at once, only slower (``kernel_cache`` switches to the
compiled kernel when it is cached).  ``twin(dispatcher)`` returns that Python
function: its module is ``ik_solver.core.X``'s source executed as
``TWINS.core.X`` with a ``numba`` whose ``njit``/``jit`` return the function
itself, ``prange`` is ``range`` and ``overload`` picks the implementation by
the arguments' numba types, as compiled code does; NumPy structured arrays
and records are read and written by attribute, as in compiled code.  Relative
imports inside a twin load twins, so a twin kernel calls twin kernels only.

An ``intrinsic`` has no Python form; ``PYTHON_INTRINSICS`` gives one by name.
The clock intrinsic runs ``SLOWDOWN`` times slower inside an interpreted call
(``dilated``): the interpreted search then gets enough iterations within a
solve's timeout instead of timing out after a few; the result's ``elapsed``
still tells the true wall time.
"""
import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import pathlib
import sys
import threading
import time
import types
import warnings

import numba
import numba.extending
import numpy as np

#: Name of the package under which twin modules live (``TWINS.core.solver`` is core/solver.py's twin).
TWINS = 'ik_solver_interpreted'
#: Inside an interpreted call the kernels' clock runs this many times slower: a timeout of t seconds
#: lets it run up to SLOWDOWN x t of wall time.  The interpreted IK loop is about 500 times slower
#: than the compiled one; 100 leaves it a fifth of the compiled iterations (hundreds per default
#: 5 ms timeout, far more than a reachable target needs) while a failing solve returns in 0.5 s.
SLOWDOWN = 100.0

_PACKAGE = pathlib.Path(__file__).resolve().parents[1]
_local = threading.local()


def _identity_decorator(*args, **options):
    """``njit`` / ``jit`` / ``register_jitable``: the function itself, with or without options."""
    if len(args) == 1 and callable(args[0]) and not options:
        return args[0]
    return lambda func: func


def _overload(func, *args, **options):
    """``overload``: the Python function's name is bound to a call of the implementation for its argument types.

    As compiled, the implementation is chosen by the arguments' numba types; the overloaded
    function's own body runs only where an implementation names it, as in compiled code.
    """
    def register(factory):
        def call(*arguments):
            kinds = tuple(numba.typeof(a._void if isinstance(a, _Record) else a) for a in arguments)
            implementation = chosen.get(kinds)
            if implementation is None:
                implementation = factory(*kinds)
                if implementation is None:
                    raise TypeError(f'no implementation of {func.__name__} for {kinds}')
                if implementation is call:   # the overloaded function's own body, named by its module
                    implementation = func
                chosen[kinds] = implementation
            return implementation(*arguments)
        chosen = {}
        call.__name__ = call.__qualname__ = func.__name__
        func.__globals__[func.__name__] = call
        return factory
    return register


def _clock():
    """CLOCK_MONOTONIC as the kernels see it: slowed down SLOWDOWN times after the interpreted call's start."""
    now = time.monotonic()
    anchor = getattr(_local, 'anchor', None)
    return now if anchor is None else anchor + (now - anchor) / SLOWDOWN


#: Python equivalents of intrinsics, by function name.
PYTHON_INTRINSICS = {'_clock_monotonic': _clock}


def _intrinsic(func):
    """``intrinsic``: its Python equivalent, or a function that says there is none."""
    equivalent = PYTHON_INTRINSICS.get(func.__name__)
    if equivalent is not None:
        return equivalent

    def missing(*args):
        raise NotImplementedError(f'intrinsic {func.__module__}.{func.__name__} has no interpreted form')
    return missing


class _Stand(types.ModuleType):
    """A stand-in for a module: the given attributes, every other one the real module's."""

    def __init__(self, real, **replaced):
        super().__init__(real.__name__)
        self.__dict__.update({k: v for k, v in vars(real).items() if not k.startswith('__')}, **replaced)
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)


class _Record:
    """A NumPy structured scalar read and written by field name as an attribute, as compiled kernels do."""

    __slots__ = ('_void',)

    def __init__(self, void):
        object.__setattr__(self, '_void', void)

    def __getattr__(self, name):
        return self._void[name]

    def __setattr__(self, name, value):
        self._void[name] = value

    def __getitem__(self, key):
        return self._void[key]

    def __setitem__(self, key, value):
        self._void[key] = value


def _recordable(make):
    """Wrap an array constructor: a structured array comes as a recarray (its items: attribute access)."""
    def made(*args, **kwargs):
        array = make(*args, **kwargs)
        return array.view(np.recarray) if array.dtype.names else array
    made.__name__ = make.__name__
    return made


def _argument(value):
    """Return an argument of an interpreted kernel as its code expects it (records by attribute)."""
    if isinstance(value, np.ndarray) and value.dtype.names and not isinstance(value, np.recarray):
        return value.view(np.recarray)
    if isinstance(value, np.void) and value.dtype.names:
        return _Record(value)
    return value


_NUMBA = _Stand(numba, njit=_identity_decorator, jit=_identity_decorator, prange=range)
_EXTENDING = _Stand(numba.extending, overload=_overload, intrinsic=_intrinsic, register_jitable=_identity_decorator)
_NUMPY = _Stand(np, **{name: _recordable(getattr(np, name)) for name in ('zeros', 'empty', 'ones', 'full')})


def _import(name, scope=None, local_scope=None, fromlist=(), level=0):
    """``__import__`` of a twin module: numba, numba.extending and numpy are the stand-ins."""
    if level == 0 and name == 'numba':
        return _NUMBA
    if level == 0 and name == 'numpy' and not fromlist:
        return _NUMPY
    if level == 0 and name == 'numba.extending' and fromlist:
        return _EXTENDING
    return builtins.__import__(name, scope, local_scope, fromlist, level)


_BUILTINS = dict(vars(builtins), __import__=_import)


class _TwinFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``TWINS.<sub>.<module>`` in ik_solver/<sub>/<module>.py; packages are empty (no __init__ runs)."""

    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split('.')
        if parts[0] != TWINS:
            return None
        source = _PACKAGE.joinpath(*parts[1:])
        if source.is_dir() or len(parts) == 1:
            spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            spec.submodule_search_locations = [str(source)]
            return spec
        source = source.with_suffix('.py')
        return importlib.util.spec_from_file_location(fullname, source, loader=self) if source.is_file() else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        if module.__spec__.submodule_search_locations is not None:
            return
        module.__builtins__ = _BUILTINS
        code = compile(pathlib.Path(module.__file__).read_bytes(), module.__file__, 'exec')
        exec(code, module.__dict__)  # noqa: S102 - a package source file, run as its twin


_finder = _TwinFinder()
_lock = threading.RLock()


def twin_module(name):
    """Return the interpreted twin of the ik_solver module ``name`` (e.g. 'ik_solver.core.solver')."""
    if not name.startswith('ik_solver.'):
        raise ValueError(f'{name} is not an ik_solver module')
    with _lock:
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
            # the kernels' uint64 generator wraps around by design; NumPy scalars warn about it
            warnings.filterwarnings('ignore', 'overflow encountered', RuntimeWarning, f'{TWINS}\\.')
        return importlib.import_module(TWINS + name[len('ik_solver'):])


def twin(dispatcher):
    """Return the Python function that runs ``dispatcher``'s kernel interpreted (its twin module's one)."""
    func = dispatcher.py_func
    return getattr(twin_module(func.__module__), func.__name__)


def dilated(func, anchor):
    """Return ``func`` (an interpreted kernel) as a call in which the kernels' clock runs SLOWDOWN times slower.

    Args:
        func: the interpreted kernel.
        anchor: when the call began (monotonic s); the clock runs slow from then on, so the time
            spent looking for the compiled kernel does not eat the caller's timeout either.
    """
    def call(*args):
        if getattr(_local, 'anchor', None) is not None:
            return func(*[_argument(a) for a in args])
        _local.anchor = anchor
        try:
            with np.errstate(over='ignore'):   # the kernels' uint64 generator wraps around by design
                return func(*[_argument(a) for a in args])
        finally:
            _local.anchor = None
    return call
