"""The kernel cache: one folder per source content, shared by every copy of the code; a notice while compiling."""
import logging
import os
import pathlib
import shutil
import subprocess
import sys
import time

from ik_solver.core import kernel_cache
import pytest

PACKAGE = pathlib.Path(kernel_cache.__file__).resolve().parents[1]


def _copy(tmp_path, name):
    """Copy the ik_solver package (its kernels' folders) to tmp_path/name; return the copy."""
    target = tmp_path / name / 'ik_solver'
    for sub in ('core', 'motion', 'collision'):
        shutil.copytree(PACKAGE / sub, target / sub, ignore=shutil.ignore_patterns('__pycache__'))
    return target


def test_copies_share_a_key_and_any_edit_changes_it(tmp_path):
    """A source tree and an installed copy find one folder; an edit of any kernel file selects another."""
    a, b = _copy(tmp_path, 'src'), _copy(tmp_path, 'install')
    for sub in ('core', 'motion', 'collision'):
        assert kernel_cache.content_key(sub, a) == kernel_cache.content_key(sub, b) == kernel_cache.content_key(sub)
    methods = b / 'core' / 'methods.py'
    methods.write_text(methods.read_text() + '\n# edited\n')
    kernel_cache._keys.clear()
    # solver.py links methods' kernels: its key (core's) changes; motion's servo uses them too.
    assert kernel_cache.content_key('core', a) != kernel_cache.content_key('core', b)
    assert kernel_cache.content_key('motion', a) != kernel_cache.content_key('motion', b)
    assert kernel_cache.content_key('collision', a) != kernel_cache.content_key('collision', b)
    jtc = a / 'motion' / 'jtc.py'
    jtc.write_text(jtc.read_text() + '\n# edited\n')
    kernel_cache._keys.clear()
    assert kernel_cache.content_key('core', a) == kernel_cache.content_key('core')   # core uses no motion kernel
    assert kernel_cache.content_key('motion', a) != kernel_cache.content_key('motion')
    assert kernel_cache.content_key('collision', a) == kernel_cache.content_key('collision')   # nor collision


def test_kernels_live_in_the_user_cache_folder(tmp_path):
    """In a fresh process: the override variable, else XDG_CACHE_HOME; numba's default when not writable."""
    code = ('from ik_solver.core import kinematics, kernel_cache; '
            'print(kinematics.frames._cache.cache_path); print(kernel_cache.content_key("core"))')
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / 'xdg'))
    env.pop(kernel_cache.CACHE_ENV, None)
    path, key = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True,
                               check=True, cwd=PACKAGE.parent).stdout.split()
    assert path == str(tmp_path / 'xdg' / 'ik_solver' / f'core-{key}')
    env[kernel_cache.CACHE_ENV] = str(tmp_path / 'mine')
    path = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, check=True,
                          cwd=PACKAGE.parent).stdout.split()[0]
    assert path == str(tmp_path / 'mine' / f'core-{key}')
    if os.geteuid() == 0:
        return   # root writes anywhere: the fallback cannot be provoked
    locked = tmp_path / 'locked'
    locked.mkdir(mode=0o500)
    env[kernel_cache.CACHE_ENV] = str(locked)
    path = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, check=True,
                          cwd=PACKAGE.parent).stdout.split()[0]
    assert not path.startswith(str(locked))


class _Event:
    def __init__(self, data):
        self.data = data


class _Dispatcher:
    def __init__(self, module):
        self.py_func = type('F', (), {'__module__': module, '__name__': 'kernel'})


@pytest.mark.parametrize('module, seconds, told', [('ik_solver.core.solver', 0.3, True),
                                                   ('ik_solver.core.solver', 0.0, False),
                                                   ('someone.else', 0.3, False)])
def test_a_long_compilation_of_ours_is_announced_once(module, seconds, told, caplog, monkeypatch):
    monkeypatch.setattr(kernel_cache, 'NOTICE_AFTER', 0.1)
    notice = kernel_cache._CompileNotice()
    outer, inner = _Event({'dispatcher': _Dispatcher(module)}), _Event({'dispatcher': _Dispatcher(module)})
    with caplog.at_level(logging.WARNING, logger='ik_solver'):
        notice.on_start(outer)
        notice.on_start(inner)   # nested compilations belong to the outer one
        time.sleep(seconds)
        notice.on_end(inner)
        time.sleep(seconds)
        notice.on_end(outer)
        time.sleep(0.2)
    lines = [r.getMessage() for r in caplog.records if r.name == 'ik_solver']
    assert len(lines) == (1 if told else 0), lines
    if told:
        assert 'compiling' in lines[0] and 'cached in' in lines[0]


def test_prune_keeps_this_version_the_newest_others_and_recent_ones(tmp_path):
    """Old versions' folders go; this one, the newest few and any used within PRUNE_AFTER stay."""
    now = 1e9
    ages = {'core-a': 0, 'core-b': 10, 'core-c': 20, 'core-d': 30, 'motion-e': 40}   # days since last use
    for name, days in ages.items():
        (tmp_path / name).mkdir()
        os.utime(tmp_path / name, (now - days * 86400.0,) * 2)
    current = tmp_path / 'core-z'
    current.mkdir()
    kernel_cache.prune(current, now)
    left = sorted(p.name for p in tmp_path.iterdir())
    # core-a (newest other) and core-b (second newest) kept by KEEP_VERSIONS = 3; core-c, core-d unused > 7 days.
    assert kernel_cache.KEEP_VERSIONS == 3 and kernel_cache.PRUNE_AFTER == 7 * 86400.0
    assert left == ['core-a', 'core-b', 'core-z', 'motion-e']


def test_a_plan_runs_the_kernel_variant_of_its_method_and_goals(ik7):
    """The default (lm, no goals) has a kernel of its own; other methods and goals select larger ones."""
    from ik_solver import IKSolver, NullspaceGoals
    from ik_solver.core.solver import kernel_variant
    lengths = {len(kernel_variant(method, goals)) for method in range(5) for goals in (False, True)}
    assert lengths == {1, 2, 3, 4}
    goals = NullspaceGoals(posture=1.0)
    pole = NullspaceGoals(pole=1.0, pole_link='link4', pole_target=[0.3, 1.0, 0.6])
    cases = [({}, 1), ({'method': 'dls'}, 2), ({'method': 'pinv'}, 2), ({'nullspace': goals}, 3),
             ({'nullspace': pole}, 3), ({'mode': 'manipulability'}, 3), ({'mode': 'closest'}, 1),
             ({'method': 'transpose', 'nullspace': goals}, 4)]
    for options, length in cases:
        assert len(IKSolver(ik7, **options)._plan.variant) == length, options
