"""Compile the kernel variants a node uses once, on a tiny built-in chain.

numba compiles on first call and caches the machine code on disk, in the
user cache folder keyed by source content (``kernel_cache``), so a source
tree and its installed copy share it.  Kernel types do not depend on the
robot, so one pass over a three-joint chain makes the first real solve of any
robot fast: every step method, the nullspace goals and the batch kernel.
``python -m ik_solver.core.warmup`` fills the cache ahead of time; without it,
``IKSolver(...)`` compiles the variant its options use on construction (a
notice on the ``ik_solver`` logger says so) and ``IKSolver.warm_up()`` the
batch kernel too.
"""
import numpy as np

from .chain import load_chain
from .methods import METHOD_NAMES
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


def warm_up():
    """Run FK, Jacobians, every method with and without nullspace goals and a collision checker, and the batch.

    That is every kernel variant a node can ask for at run time (a parameter change, a collision
    scene): compiled here, none compiles while the node answers requests.
    """
    chain = load_chain(_URDF, 'a', 'd')
    q = chain.mid_configuration()
    chain.fk_batch(q[None, :])
    chain.jacobian_batch(q[None, :])
    target = chain.fk(q)
    goals = NullspaceGoals(posture=1.0, limits=1.0, manipulability=1.0, pole=1.0, pole_link='c',
                           pole_target=np.zeros(3), iterations=1)
    for method in METHOD_NAMES:
        for nullspace in (NullspaceGoals(), goals):
            for collision in (None, _NoContact()):
                IKSolver(chain, method=method, nullspace=nullspace, collision=collision, max_attempts=2,
                         weights=(1.0, 1.0, 1.0, 0.0, 0.0, 0.0) if nullspace is goals else (1.0,) * 6).solve(target, q)
    IKSolver(chain).warm_up()
    far = target.copy()
    far[0, 3] = 10.0
    IKSolver(chain).solve(far, q)


if __name__ == '__main__':
    warm_up()
