"""The collision kernels: in the content-keyed cache, and ``proximity.warm_up`` loads every type the checks use."""
import pathlib

from conftest import printed_by_kernel_process
from ik_solver.collision import proximity
from ik_solver.core import kernel_cache
import pytest

pytest.importorskip('pinocchio', reason='the collision checks run on Pinocchio and Coal')

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: In a fresh process that compiles what the cache lacks: the kernels' types after the warm-up, then after the
#: checks a node and a servo run (a path certificate; distances at rest and moving, so with twists).
CHECKS = f"""
from ik_solver.collision import CollisionModel, make_obstacle, proximity
from ik_solver.collision.proximity import Proximity
import numpy as np
kernels = (proximity.box_gaps, proximity.carried_bounds)
proximity.warm_up()
warm = [sorted(map(str, k.signatures)) for k in kernels]
model = CollisionModel({str(ROOT / 'urdf' / 'ik7.urdf.xacro')!r}, 'base_link', 'tool0', padding=0.01)
model.set_obstacles([make_obstacle('post', 'cylinder', [0.05, 0.8], [0.35, 0.25, 0.4])])
q = np.array([0.0, 0.5, 0.0, -1.4, 0.0, 0.9, 0.0])
model.check_path(np.stack([q, q + 0.05]))
near = Proximity(model)
for _ in range(2):
    near.near(q, 0.3, 0.3)
    near.near(q, 0.3, 0.3, velocity=np.full(7, 0.1), horizon=0.1)
print(warm == [sorted(map(str, k.signatures)) for k in kernels], all(warm))
"""


def test_collision_kernels_are_cached_by_content():
    """Like the core and motion kernels: one folder per version of the sources, shared by every copy."""
    for kernel in (proximity.box_gaps, proximity.carried_bounds):
        locator = kernel._cache._impl.locator
        assert isinstance(locator, kernel_cache.ContentKeyedLocator)
        assert pathlib.Path(locator.get_cache_path()) == kernel_cache.kernel_folder('collision')


def test_warm_up_loads_every_type_the_checks_pass():
    """After ``warm_up`` the checks add no kernel type: a node's first collision check compiles nothing."""
    assert printed_by_kernel_process(CHECKS) == ['True', 'True']
