"""Where compiled kernels live: a user cache folder keyed on the kernels' source content, and a compile notice.

numba's default cache sits next to each source file and is checked against
that file alone.  So a source tree and its installed copy compile the same
kernels twice, and a kernel that inlines or links a kernel of another file
could load stale machine code after that other file changed.  Here every
ik_solver kernel is cached in

    $IK_SOLVER_CACHE_DIR, else $XDG_CACHE_HOME/ik_solver, else ~/.cache/ik_solver

in a folder named by a hash of the *content* of every kernel source file the
kernel can depend on (all of ``ik_solver/core`` but ``NOT_KERNEL_SOURCES``; for
``ik_solver/motion`` and ``ik_solver/collision`` kernels, their own
sub-package's files too).  Any copy of the same code finds the same folder;
any edit of any of those files selects a new, empty one, so no kernel can
outlive a change in a kernel it uses.  When the folder cannot be written,
numba's own locations are used.

A kernel missing from the cache is not compiled in the calling process (tens
of seconds of CPU per entry kernel) unless ``IK_SOLVER_KERNELS=inline``: by
default (``background``) the call runs the kernel's source interpreted
(``interpreted``), at once and with the same results, only slower, while a
background process (``compile_server``) compiles exactly the kernel types
requested into this cache; a later call finds them there and runs compiled.
A kernel the background process cannot provide (it failed or ended) compiles
in this process on a thread of its own, the calls meanwhile interpreted: no
call waits for a compilation.
``IK_SOLVER_KERNELS=interpreted`` never compiles (tests, debugging).

While a kernel compiles, in this process for more than ``NOTICE_AFTER``
seconds or in the background, one line on the ``ik_solver`` logger (stderr
unless logging is configured) says so.
"""
import base64
import hashlib
import logging
import os
import pathlib
import pickle
import shutil
import subprocess
import sys
import threading
import time


def _import_numba():
    """Import numba without its coverage plug-in when no coverage measurement can be running.

    numba imports ``coverage``, if installed, only to report the lines of compiled code to a running
    measurement; without one it is dead weight: about 10 MB and 50 ms of CPU at every node start.  A
    measurement (``coverage run``, pytest-cov) imports coverage before numba, and then numba sees it.
    """
    if 'numba' in sys.modules or 'coverage' in sys.modules:
        return
    sys.modules['coverage'] = None   # ``import coverage`` raises ImportError: numba leaves its plug-in off
    try:
        import numba  # noqa: F401
    finally:
        if 'coverage' in sys.modules and sys.modules['coverage'] is None:
            del sys.modules['coverage']   # a later ``import coverage`` finds the real package


_import_numba()

from llvmlite import binding as llvm  # noqa: E402, I100
from numba.core import caching, event  # noqa: E402
from numba.core.codegen import CPUCodeLibrary  # noqa: E402
from numba.core.compiler_lock import global_compiler_lock  # noqa: E402
from numba.core.dispatcher import Dispatcher  # noqa: E402

from . import interpreted  # noqa: E402

#: Environment variable that overrides the cache folder.
CACHE_ENV = 'IK_SOLVER_CACHE_DIR'
#: Seconds a compilation may take before the user is told.
NOTICE_AFTER = 1.0
#: Folders of other source versions are removed once unused this long (s), the newest KEEP_VERSIONS excepted.
PRUNE_AFTER = 7 * 24 * 3600.0
KEEP_VERSIONS = 3
#: Typical compile CPU seconds of the entry kernels (a loaded machine takes longer), for the notice.
TYPICAL_COMPILE_S = {'solve_fast': 30, 'solve_one': 30, '_solve_batch': 60, 'fk_batch': 3}

#: Environment variable: how a kernel missing from the cache runs (``MODES``; default the first).
MODE_ENV = 'IK_SOLVER_KERNELS'
MODES = ('background', 'inline', 'interpreted')
#: Seconds between two looks into the cache for a kernel that compiles in the background.
RECHECK_PERIOD = 1.0
#: Looks (loads in a thread) after the background process has answered, before numba compiles it here.
LOOKS_AFTER_ANSWER = 3
#: Lock file (in the cache root) a background process holds while it compiles.
LOCK_NAME = 'compile.lock'
#: Name of the file the background process writes when a warm-up has run through (``warm_up_done``).
WARM_MARK = 'warm_up.done'

_PACKAGE = pathlib.Path(__file__).resolve().parents[1]
#: Sub-packages holding kernels, and the sub-packages whose sources each one's kernels depend on.
_DEPENDS = {'core': ('core',), 'motion': ('core', 'motion'), 'collision': ('core', 'collision')}
#: Files of those that hold no kernel and that no kernel imports: the cache machinery and the warm-up.
NOT_KERNEL_SOURCES = frozenset({'kernel_cache.py', 'interpreted.py', 'compile_server.py', 'warmup.py'})
_log = logging.getLogger('ik_solver')


def cache_root():
    """Return the folder holding the compiled kernels of every version of the code (see the module docstring)."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return pathlib.Path(override)
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return pathlib.Path(base) / 'ik_solver'


_keys = {}


def content_key(subpackage, package=_PACKAGE):
    """Return the hash of the sources that kernels of ``subpackage`` may use (read once per process).

    Args:
        subpackage: 'core', 'motion' or 'collision'.
        package: the ``ik_solver`` package folder (this one by default).
    """
    if (package, subpackage) not in _keys:
        digest = hashlib.sha256()
        for name in _DEPENDS[subpackage]:
            for path in sorted((package / name).glob('*.py')):
                if path.name in NOT_KERNEL_SOURCES:
                    continue
                digest.update(f'{name}/{path.name}\0'.encode())
                digest.update(path.read_bytes())
        _keys[package, subpackage] = digest.hexdigest()[:20]
    return _keys[package, subpackage]


class ContentKeyedLocator(caching._CacheLocator):
    """numba cache locator for ik_solver's kernels: the user cache folder, one sub-folder per content key."""

    def __init__(self, py_func, subpackage):
        self._lineno = py_func.__code__.co_firstlineno
        self._key = content_key(subpackage)
        self._path = str(cache_root() / f'{subpackage}-{self._key}')

    def get_cache_path(self):
        return self._path

    def get_source_stamp(self):
        return self._key

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        path = pathlib.Path(py_file).resolve()
        if path.parent.parent != _PACKAGE or path.parent.name not in _DEPENDS:
            return None
        locator = cls(py_func, path.parent.name)
        try:
            locator.ensure_cache_path()
            if path.parent.name not in _pruned:
                _pruned.add(path.parent.name)
                prune(pathlib.Path(locator.get_cache_path()))
        except OSError:   # not writable: numba's own locators take over
            return None
        return locator


_pruned = set()


def prune(current, now=None):
    """Mark ``current`` used; remove folders of other versions unused for PRUNE_AFTER, but the newest few.

    Every edit of the sources makes a new folder (a few MB), so a developer's
    cache would only grow.  Args: current: this version's folder; now: the
    time to compare with (s since the epoch, default the clock's).
    """
    now = time.time() if now is None else now
    os.utime(current)
    subpackage = current.name.rsplit('-', 1)[0]
    others = sorted((p for p in current.parent.glob(f'{subpackage}-*') if p != current and p.is_dir()),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for folder in others[KEEP_VERSIONS - 1:]:
        if now - folder.stat().st_mtime > PRUNE_AFTER:
            shutil.rmtree(folder, ignore_errors=True)


class _CompileNotice(event.Listener):
    """Tell the user, once per compilation that lasts longer than NOTICE_AFTER, that kernels are compiling."""

    def __init__(self):
        self._depth = 0
        self._timer = None

    def on_start(self, ev):
        self._depth += 1
        if self._depth == 1 and _is_ours(ev.data):
            self._timer = threading.Timer(NOTICE_AFTER, _notice, (ev.data['dispatcher'].py_func.__name__,))
            self._timer.daemon = True
            self._timer.start()

    def on_end(self, ev):
        self._depth -= 1
        if self._depth == 0 and self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _is_ours(data):
    func = getattr(data.get('dispatcher') if isinstance(data, dict) else None, 'py_func', None)
    return getattr(func, '__module__', '').startswith('ik_solver.')


def _notice(name):
    typical = TYPICAL_COMPILE_S.get(name)
    _log.warning('ik_solver: compiling kernel %s for this CPU, once (%s of CPU); cached in %s', name,
                 f'about {typical} s' if typical else 'seconds', cache_root())


def mode():
    """Return how a kernel missing from the cache runs: one of MODES, from ``IK_SOLVER_KERNELS``."""
    value = os.environ.get(MODE_ENV, '').strip().lower() or MODES[0]
    if value not in MODES:
        raise ValueError(f"{MODE_ENV} must be one of {', '.join(MODES)}; got {value!r}")
    return value


def kernel_folder(subpackage):
    """Return the cache folder of this version of ``subpackage``'s kernels ('core', 'motion' or 'collision')."""
    return cache_root() / f'{subpackage}-{content_key(subpackage)}'


def warm_up_done(subpackage='core'):
    """Return whether a background warm-up has compiled every variant of this version into the cache."""
    return (kernel_folder(subpackage) / WARM_MARK).is_file()


class _Background:
    """The compile server process of this process (``compile_server``): requests in, 'done <id>' lines out.

    It outlives this process to finish what it was asked, so the next start finds the kernels cached.
    """

    def __init__(self):
        self._proc = None
        self._lock = threading.Lock()
        self._next = 0
        self.open = set()       # ids of requests not answered yet
        self.failed = set()
        self.asked = {}         # (kind, module, name, arguments) -> id

    def request(self, kind, module, name, arguments=()):
        """Ask for a kernel ('kernel', argument types) or a warm-up step ('call'); return its id, None if down."""
        key = (kind, module, name, arguments)
        with self._lock:
            if key in self.asked:
                return self.asked[key]
            if not self._running():
                return None
            self._next += 1
            payload = base64.b64encode(pickle.dumps((module, name, arguments))).decode()
            line = f'{self._next} {kind} {payload}\n'.encode()
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
            except OSError:
                return None
            self.open.add(self._next)
            self.asked[key] = self._next
            return self._next

    def alive(self):
        """Whether the server runs (or has not been needed yet)."""
        return self._proc is None or self._proc.poll() is None

    def _running(self):
        if self._proc is None:
            env = dict(os.environ, **{MODE_ENV: 'inline', CACHE_ENV: str(cache_root())})
            try:
                cache_root().mkdir(parents=True, exist_ok=True)
                self._proc = subprocess.Popen([sys.executable, str(_PACKAGE / 'core' / 'compile_server.py'),
                                               str(cache_root() / LOCK_NAME)], env=env, cwd=str(_PACKAGE.parent),
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
            except OSError as exc:
                _log.warning('ik_solver: no background compilation (%s); kernels compile on first use', exc)
                return False
            threading.Thread(target=self._read, name='ik_solver_compile_replies', daemon=True).start()
            _log.warning('ik_solver: compiling kernels for this CPU in a background process, once (minutes of '
                         'CPU); cached in %s; until then they run interpreted (slower)', cache_root())
        return self._proc.poll() is None

    def _read(self):
        for line in self._proc.stdout:
            word, ident = (line.decode(errors='replace').split() + ['', ''])[:2]
            if word in ('done', 'failed') and ident.isdigit():
                if word == 'failed':
                    _log.warning('ik_solver: background compilation failed: %s', line.decode(errors='replace'))
                    self.failed.add(int(ident))
                self.open.discard(int(ident))
        self.open.clear()


_background = _Background()
_next_look = {}   # (dispatcher, argument types) -> when to look into the cache again (monotonic s)


def _compile_for_args(dispatcher, *args, **kws):
    """Return what a Python call that finds no compiled kernel runs: the cached one, else the interpreted twin.

    numba's dispatcher calls this (``Dispatcher._compile_for_args``) and then what it returns.

    Kernels of other packages, and every kernel in 'inline' mode, take numba's own path (compile now).
    A kernel the background process cannot provide (it failed, died, or compiled it where this process
    does not find it) compiles in this process on a thread of its own (``_compile_aside``): the call
    never waits for a compilation (minutes under CPU load), it runs interpreted until then.
    """
    if kws or getattr(dispatcher._cache, '_impl', None) is None \
            or not isinstance(dispatcher._cache._impl.locator, ContentKeyedLocator):
        return _numba_compile_for_args(dispatcher, *args, **kws)
    entered = time.monotonic()
    how = mode()
    if how == 'inline':
        return _numba_compile_for_args(dispatcher, *args, **kws)
    types = tuple(dispatcher.typeof_pyval(a) for a in args)
    if how == 'background' and not _look(dispatcher, types):
        _compile_aside(dispatcher, types)
    if dispatcher.overloads.get(types) is not None:
        return dispatcher.overloads[types].entry_point
    twin = _twins.get(dispatcher)
    if twin is None:
        twin = _twins[dispatcher] = interpreted.twin(dispatcher)
    return interpreted.dilated(twin, entered)


_twins = {}


def _look(dispatcher, types):
    """Look for a kernel in the cache, at most every RECHECK_PERIOD: False if numba must compile it here.

    The first look loads it as numba would, or asks the background process for it.  Later looks
    load it in a thread (a load takes longer than a solve's timeout), the call meanwhile interpreted;
    once the background process has answered, LOOKS_AFTER_ANSWER misses leave it to numba (an
    unwritable cache, a failed compilation).
    """
    key = (dispatcher, types)
    now = time.monotonic()
    if now < _next_look.get(key, 0.0):
        return True
    request = ('kernel', dispatcher.py_func.__module__, dispatcher.py_func.__name__, types)
    ident = _background.asked.get(request)
    if key not in _next_look:
        if _load(dispatcher, types) is not None:
            return True
        ident = _background.request(*request)
        if ident is None:
            return False
    elif ident in _background.failed or not _background.alive() or _answered.get(key, 0) >= LOOKS_AFTER_ANSWER:
        return False
    else:
        if ident not in _background.open:
            _answered[key] = _answered.get(key, 0) + 1
        threading.Thread(target=_load, args=key, name='ik_solver_kernel_load', daemon=True).start()
    _next_look[key] = now + RECHECK_PERIOD
    return True


_answered = {}   # (dispatcher, types) -> looks into the cache after the background process answered
_aside = {}      # (dispatcher, types) -> the thread that compiles it in this process (``_compile_aside``)


def _compile_aside(dispatcher, types):
    """Compile ``dispatcher`` for argument ``types`` in this process on a daemon thread, once.

    numba compiles holding its global compiler lock, tens of seconds of CPU per entry kernel: on the
    caller's thread that blocks a solve far beyond its timeout, and any thread that loads a kernel
    meanwhile (``_load``) would wait as long.  Once compiled, numba's dispatcher calls the kernel directly.
    """
    key = (dispatcher, types)
    with _aside_lock:
        if key not in _aside:
            _aside[key] = threading.Thread(target=_compile_quietly, args=key, daemon=True,
                                           name=f'ik_solver_compile_{dispatcher.py_func.__name__}')
            _aside[key].start()


_aside_lock = threading.Lock()


def _compile_quietly(dispatcher, types):
    """Compile ``dispatcher`` for ``types``; a failure is logged (the kernel then keeps running interpreted)."""
    try:
        dispatcher.compile(types)
    except Exception as exc:  # noqa: B902 - a thread's failure would go unseen; the twin goes on serving
        _log.warning('ik_solver: kernel %s did not compile (%s); it runs interpreted', dispatcher.py_func.__name__,
                     exc)


def _compiling_aside():
    """Whether a compilation of ``_compile_aside`` runs: it holds numba's compiler lock for its whole length."""
    return any(thread.is_alive() for thread in list(_aside.values()))


def _load(dispatcher, types):
    """Return the entry point of ``dispatcher`` for argument ``types`` from the on-disk cache, or None.

    While this process compiles a kernel aside (``_compile_aside``), numba's compiler lock is not waited
    for: None, the caller runs the kernel interpreted and looks again later.
    """
    lock = global_compiler_lock._lock   # numba's RLock: its wrapper offers no non-blocking acquire
    if not lock.acquire(blocking=not _compiling_aside()):
        return None
    try:
        return _load_locked(dispatcher, types)
    finally:
        lock.release()


def _load_locked(dispatcher, types):
    """``_load`` with numba's compiler lock held."""
    existing = dispatcher.overloads.get(types)
    if existing is not None:
        return existing.entry_point
    cres = dispatcher._cache.load_overload(types, dispatcher.targetctx)
    if cres is None:
        return None
    dispatcher._cache_hits[types] += 1
    if not cres.objectmode:
        dispatcher.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
    dispatcher.add_overload(cres)
    keep_bitcode_only(cres.library)
    return cres.entry_point


def keep_bitcode_only(library):
    """Replace a loaded kernel's parsed linking module by its bitcode; return the bytes kept (0: nothing to do).

    numba keeps, beside the machine code it runs, the kernel's LLVM module parsed, so that a kernel compiled
    later in this process can link it in.  Parsed, a kernel's module takes about 1 MB; as bitcode, a tenth
    of that.  Kernels compile in the background process (``MODES``), so the module is rarely linked here:
    ``_module_for_linking`` parses it again when it is.

    Args:
        library: the ``CodeLibrary`` of a kernel loaded from the cache.
    """
    module = getattr(library, '_shared_module', None)
    if module is None:
        return 0
    library._ik_solver_bitcode = module.as_bitcode()
    library._shared_module = None
    module.close()
    return len(library._ik_solver_bitcode)


def _module_for_linking(library):
    """Return the module another kernel links ``library`` with, parsed from the bitcode ``keep_bitcode_only`` kept."""
    bitcode = getattr(library, '_ik_solver_bitcode', None)
    if library._shared_module is None and bitcode is not None:
        library._shared_module = llvm.parse_bitcode(bitcode)
        library._ik_solver_bitcode = None
    return _numba_module_for_linking(library)


def compile_in_background(module, name, arguments=()):
    """Ask the background process to run ``module.name(*arguments)`` (a warm-up step); False if it cannot run."""
    return _background.request('call', module, name, tuple(arguments)) is not None


def background_process():
    """Return the background compiler of this process (a ``subprocess.Popen``), or None if none was needed."""
    return _background._proc


def wait_for_background(timeout=None):
    """Wait until the background process has answered every request of this process; False on timeout.

    Args:
        timeout: seconds to wait at most (None: as long as it takes).
    """
    end = None if timeout is None else time.monotonic() + timeout
    while _background.open and _background.alive():
        if end is not None and time.monotonic() >= end:
            return False
        time.sleep(0.05)
    return True


_numba_compile_for_args = Dispatcher._compile_for_args
_numba_module_for_linking = CPUCodeLibrary._get_module_for_linking


def install():
    """Register the locator (before any kernel module is imported), the compile notice, the fallback; idempotent.

    The fallback (``_compile_for_args``) runs a kernel missing from the cache interpreted (``MODES``); a
    kernel loaded from the cache keeps its linking module as bitcode (``keep_bitcode_only``).
    """
    if ContentKeyedLocator not in caching.CacheImpl._locator_classes:
        caching.CacheImpl._locator_classes.insert(0, ContentKeyedLocator)
        event.register('numba:compile', _CompileNotice())
        Dispatcher._compile_for_args = _compile_for_args
        CPUCodeLibrary._get_module_for_linking = _module_for_linking
