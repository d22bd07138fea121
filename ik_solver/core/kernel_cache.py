"""Where compiled kernels live: a user cache folder keyed on the kernels' source content, and a compile notice.

numba's default cache sits next to each source file and is checked against
that file alone.  So a source tree and its installed copy compile the same
kernels twice, and a kernel that inlines or links a kernel of another file
could load stale machine code after that other file changed.  Here every
ik_solver kernel is cached in

    $IK_SOLVER_CACHE_DIR, else $XDG_CACHE_HOME/ik_solver, else ~/.cache/ik_solver

in a folder named by a hash of the *content* of every kernel source file the
kernel can depend on (all of ``ik_solver/core``; for ``ik_solver/motion``
kernels, motion's files too).  Any copy of the same code finds the same folder;
any edit of any of those files selects a new, empty one, so no kernel can
outlive a change in a kernel it uses.  When the folder cannot be written,
numba's own locations are used.

While a kernel compiles for more than ``NOTICE_AFTER`` seconds, one line on the
``ik_solver`` logger (stderr unless logging is configured) says so.
"""
import hashlib
import logging
import os
import pathlib
import shutil
import threading
import time

from numba.core import caching, event

#: Environment variable that overrides the cache folder.
CACHE_ENV = 'IK_SOLVER_CACHE_DIR'
#: Seconds a compilation may take before the user is told.
NOTICE_AFTER = 1.0
#: Folders of other source versions are removed once unused this long (s), the newest KEEP_VERSIONS excepted.
PRUNE_AFTER = 7 * 24 * 3600.0
KEEP_VERSIONS = 3
#: Typical compile CPU seconds of the entry kernels (a loaded machine takes longer), for the notice.
TYPICAL_COMPILE_S = {'_solve_fast': 30, '_solve_one': 30, '_solve_batch': 60, 'fk_batch': 3}

_PACKAGE = pathlib.Path(__file__).resolve().parents[1]
#: Sub-packages holding kernels, and the sub-packages whose sources each one's kernels depend on.
_DEPENDS = {'core': ('core',), 'motion': ('core', 'motion')}
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
        subpackage: 'core' or 'motion'.
        package: the ``ik_solver`` package folder (this one by default).
    """
    if (package, subpackage) not in _keys:
        digest = hashlib.sha256()
        for name in _DEPENDS[subpackage]:
            for path in sorted((package / name).glob('*.py')):
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


def install():
    """Register the locator (before any kernel module is imported) and the compile notice; idempotent."""
    if ContentKeyedLocator not in caching.CacheImpl._locator_classes:
        caching.CacheImpl._locator_classes.insert(0, ContentKeyedLocator)
        event.register('numba:compile', _CompileNotice())
