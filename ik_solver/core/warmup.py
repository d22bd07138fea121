"""Compile the kernel variants a node uses once, on a tiny built-in chain.

numba compiles on first call and caches the machine code on disk, in the
user cache folder keyed by source content (``kernel_cache``), so a source
tree and its installed copy share it.  Kernel types do not depend on the
robot, so one pass over a three-joint chain makes the first real solve of any
robot fast: every step method, the nullspace goals, the collision-checked
search and the batch kernel.

``warm_up()`` with a cache that holds them loads them all (about a second; the
first kernel of a process costs about 55 MB for numba's compiler context, each
further variant a few MB, held as machine code and bitcode: ``kernel_cache``).
With an empty cache it hands its steps to the background compiler and returns
at once: the kernels run interpreted until it has cached them
(``kernel_cache``), the variant ``IKSolver(chain)`` uses first.
``python -m ik_solver.core.warmup`` compiles everything in the calling process
and returns when the cache is full.

A node loads only what its options run (``warm_up_for``): the variant of its
step method and goals, the collision-checked search if it checks collisions,
and what it reads of every result; a variant it switches to later is loaded
then (``load``), once per process.
"""
from dataclasses import replace
import functools
import os

import numpy as np

from . import kernel_cache
from .chain import load_chain
from .frames import RobotFrames
from .methods import LM, METHOD_NAMES
from .nullspace import manipulability, NullspaceGoals
from .plan import chain_model, chain_reach, make_plan
from .solver import IKSolver
from .transforms import pose_errors
from .urdf import parse_robot

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


@functools.cache
def warm_up_chain():
    """Return the warm-up chain (parsed once per process): revolute, prismatic and continuous joints, links a-d.

    The kernels' types do not depend on the robot, so kernels warmed on it serve every robot.
    """
    return load_chain(_URDF, 'a', 'd')


def _setting():
    """Return the warm-up chain, its middle configuration and the pose there."""
    chain = warm_up_chain()
    q = chain.mid_configuration()
    return chain, q, chain.fk(q)


def default_solve():
    """Solve as ``IKSolver(chain)`` does (lm, no goals); read what a node reports of a result (``_reported``).

    A reachable and an unreachable target, FK, a target's seed (``_seeded``), and a link's pose as a node
    resolves a target given in it.
    """
    chain, q, target = _setting()
    _seeded(chain, q, target)
    chain.jacobian_batch(q[None, :])
    _reported(chain, IKSolver(chain).solve(target, q))
    RobotFrames(parse_robot(_URDF), 'a').pose('d', {'r': 0.1, 'p': 0.05, 'c': 0.2})   # a target in a robot link
    far = target.copy()
    far[0, 3] = 10.0
    IKSolver(chain).solve(far, q)


def warm_up_goals():
    """Return nullspace goals of every kind on the warm-up chain (the pole on its link 'c'), one iteration each."""
    return NullspaceGoals(posture=1.0, limits=1.0, manipulability=1.0, pole=1.0, pole_link='c',
                          pole_target=np.zeros(3), iterations=1)


def variants(method):
    """Solve with ``method``, with and without nullspace goals and a collision checker."""
    chain, q, target = _setting()
    goals = warm_up_goals()
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


def _handed_to_background():
    """Hand every step to the background compiler if the cache lacks some and kernels compile there; True if taken."""
    return kernel_cache.mode() == 'background' and not kernel_cache.warm_up_done() and \
        all(kernel_cache.compile_in_background(__name__, name, args) for name, args in steps())


def warm_up():
    """Have every kernel variant a node can ask for at run time (a parameter change, a collision scene) compiled.

    With every variant cached (``kernel_cache.warm_up_done``) they are loaded now; with
    ``IK_SOLVER_KERNELS=inline`` they are compiled now (minutes of CPU the first time).
    Otherwise the background compiler gets the steps and this returns at once: until it has
    cached a kernel, calls run it interpreted.
    """
    if _handed_to_background():
        return
    for name, args in steps():
        globals()[name](*args)


#: The kernel parts ``load`` has loaded in this process: ('solve' or 'collision', kernel variant).
_loaded = set()


def _on_warm_chain(options):
    """Return ``options`` for the warm-up chain: the goals' robot data (posture, pole link and point) replaced.

    The kernel variant depends on which goals are on, not on their data (``plan.make_plan``).
    """
    goals = options.nullspace
    pole = goals.pole > 0
    return replace(options, nullspace=replace(goals, q_pref=None, pole_link='c' if pole else None,
                                              pole_target=np.zeros(3) if pole else goals.pole_target))


def parts(options, collision=False):
    """Return the kernel parts a solver with ``options`` runs on any robot.

    Args:
        options: the solver's ``SolverOptions``.
        collision: whether the solver has a collision checker.

    Returns:
        A set of ('solve', variant) and, with ``collision``, ('collision', variant) (``kernel_data.kernel_variant``).

    Raises:
        ValueError: options that no solver accepts.
    """
    chain = warm_up_chain()
    variant = make_plan(chain, chain_model(chain), chain_reach(chain), _on_warm_chain(options)).variant
    return {('solve', variant)} | ({('collision', variant)} if collision else set())


def missing(options, collision=False):
    """Return whether a solver with ``options`` (``collision``: with a checker) runs kernels ``load`` has not loaded."""
    return not parts(options, collision) <= _loaded


def load(options, collision=False):
    """Load the kernels a node's solver with ``options`` runs, and what it reads of every result, once per process.

    They are loaded on the warm-up chain (their types do not depend on the robot), so a solver of any robot
    built later loads nothing: its step method and goals, with ``collision`` the collision-checked search,
    the seed's pose errors, and of a result its ``sigma_min`` (an SVD) and the manipulability of its Jacobian.

    Args:
        options: the solver's ``SolverOptions``.
        collision: whether the solver has a collision checker.

    Raises:
        ValueError: options that no solver accepts.
    """
    wanted = parts(options, collision)
    if wanted <= _loaded:
        return
    chain, q, target = _setting()
    result = IKSolver(chain, _on_warm_chain(options), collision=_NoContact() if collision else None).solve(target, q)
    _seeded(chain, q, target)
    _reported(chain, result)
    _loaded.update(wanted)


def _seeded(chain, q, target):
    """Return what a node computes to seed each target's solve: two poses' errors from it (``Commander.seed``)."""
    return pose_errors(target, chain.fk_batch(np.stack([q, q])))


def _reported(chain, result):
    """Return what a node reports of every result: its sigma_min and manipulability (computed when first read)."""
    return result.sigma_min, manipulability(chain.jacobian(result.joints))


def warm_up_for(options, collision=False):
    """Load what a node whose solver has ``options`` runs (``load``) before it offers a service.

    The other variants stay on disk: each loaded one costs a few MB and tens of ms.  From a cache that lacks some
    (``kernel_cache.warm_up_done``) the background compiler gets every warm-up step, so a variant
    switched to later finds its kernels compiled; meanwhile the missing ones run interpreted.

    Args:
        options: the solver's ``SolverOptions``.
        collision: whether the solver checks collisions.

    Raises:
        ValueError: options that no solver accepts.
    """
    _handed_to_background()
    load(options, collision)


if __name__ == '__main__':
    os.environ.setdefault(kernel_cache.MODE_ENV, 'inline')
    warm_up()
