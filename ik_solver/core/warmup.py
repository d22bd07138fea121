"""Compile the kernel variants a node uses once, on a tiny built-in chain.

numba compiles on first call and caches the machine code on disk, in the
user cache folder keyed by source content (``kernel_cache``), so a source
tree and its installed copy share it.  Kernel types do not depend on the
robot, so one pass over a three-joint chain makes the first real solve of any
robot fast: every step method, the nullspace goals, the collision-checked
search and the batch kernel.

``warm_up()`` with a cache that holds them loads them (about a second).  With
an empty cache it hands its steps to the background compiler and returns at
once: the kernels run interpreted until it has cached them (``kernel_cache``),
the variant ``IKSolver(chain)`` uses first.  ``python -m ik_solver.core.warmup``
compiles everything in the calling process and returns when the cache is full.
"""
import os

import numpy as np

from . import kernel_cache
from .chain import load_chain
from .methods import LM, METHOD_NAMES
from .nullspace import NullspaceGoals
from .solver import IKSolver

_URDF = """<robot name="warmup"><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
<joint name="r" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
<limit lower="-1" upper="1" velocity="1" effort="1"/></joint>
<joint name="p" type="prismatic"><parent link="b"/><child link="c"/><origin xyz="0.1 0 0"/><axis xyz="1 0 0"/>
<limit lower="0" upper="0.1" velocity="1" effort="1"/></joint>
<joint name="c" type="continuous"><parent link="c"/><child link="d"/><origin xyz="0.1 0 0"/><axis xyz="0 1 0"/>
<limit velocity="1" effort="1"/></joint></robot>"""


class _NoContact:
    """A collision checker that finds no contact: it makes a solver compile its collision-checked search."""

    def check(self, q):
        return None


def _setting():
    """Return the warm-up chain, its middle configuration and the pose there."""
    chain = load_chain(_URDF, 'a', 'd')
    q = chain.mid_configuration()
    return chain, q, chain.fk(q)


def default_solve():
    """Solve as ``IKSolver(chain)`` does (lm, no goals), a reachable and an unreachable target, and FK."""
    chain, q, target = _setting()
    chain.fk_batch(q[None, :])
    chain.jacobian_batch(q[None, :])
    IKSolver(chain).solve(target, q)
    far = target.copy()
    far[0, 3] = 10.0
    IKSolver(chain).solve(far, q)


def variants(method):
    """Solve with ``method``, with and without nullspace goals and a collision checker."""
    chain, q, target = _setting()
    goals = NullspaceGoals(posture=1.0, limits=1.0, manipulability=1.0, pole=1.0, pole_link='c',
                           pole_target=np.zeros(3), iterations=1)
    for nullspace in (NullspaceGoals(), goals):
        for collision in (None, _NoContact()):
            IKSolver(chain, method=method, nullspace=nullspace, collision=collision, max_attempts=2,
                     weights=(1.0, 1.0, 1.0, 0.0, 0.0, 0.0) if nullspace is goals else (1.0,) * 6).solve(target, q)


def batch():
    """Run the parallel batch kernel."""
    chain, _, _ = _setting()
    IKSolver(chain).warm_up()


def mark_done():
    """Record in the cache folder that every step has run compiled (``kernel_cache.warm_up_done``)."""
    if kernel_cache.mode() == 'interpreted':
        return
    folder = kernel_cache.kernel_folder('core')
    folder.mkdir(parents=True, exist_ok=True)
    (folder / kernel_cache.WARM_MARK).touch()


def steps():
    """Return the warm-up as (function name, arguments) steps, the variant most solves use first."""
    others = [m for m in METHOD_NAMES if m != METHOD_NAMES[LM]]
    return [('default_solve', ()), ('variants', (METHOD_NAMES[LM],)), ('batch', ())] + \
        [('variants', (m,)) for m in others] + [('mark_done', ())]


def warm_up():
    """Have every kernel variant a node can ask for at run time (a parameter change, a collision scene) compiled.

    With every variant cached (``kernel_cache.warm_up_done``) they are loaded now; with
    ``IK_SOLVER_KERNELS=inline`` they are compiled now (minutes of CPU the first time).
    Otherwise the background compiler gets the steps and this returns at once: until it has
    cached a kernel, calls run it interpreted.
    """
    if kernel_cache.mode() == 'background' and not kernel_cache.warm_up_done():
        if all(kernel_cache.compile_in_background(__name__, name, args) for name, args in steps()):
            return
    for name, args in steps():
        globals()[name](*args)


if __name__ == '__main__':
    os.environ.setdefault(kernel_cache.MODE_ENV, 'inline')
    warm_up()
