"""A collision model built from a description expanded already runs no xacro and checks what the source gives."""
import pathlib

from ik_solver.collision import model as collision_model
from ik_solver.collision.world import collision_from_parameters
from ik_solver.core.chain import load_chain
from ik_solver.core.urdf import load_robot_description
import numpy as np
import pytest

pytest.importorskip('pinocchio', reason='Pinocchio is not installed')

IK7 = str(pathlib.Path(__file__).resolve().parents[2] / 'urdf' / 'ik7.urdf.xacro')


def test_the_expanded_description_is_used_as_is(monkeypatch):
    """Same links, pairs and verdicts as from the xacro source, without expanding it again."""
    chain = load_chain(IK7, 'base_link', 'tool0')
    from_source = collision_from_parameters(IK7, chain)
    expanded = load_robot_description(IK7)

    def refused(*args, **kwargs):
        raise AssertionError('xacro ran again')
    monkeypatch.setattr(collision_model, 'load_robot_description', refused)
    world = collision_from_parameters(IK7, chain, expanded=expanded)
    assert world.model.geometry_links == from_source.model.geometry_links
    assert world.model.pair_count == from_source.model.pair_count
    rng = np.random.default_rng(3)
    for q in rng.uniform(chain.sample_lower, chain.sample_upper, (50, chain.n)):
        assert world.model.check(q) == from_source.model.check(q)


def test_an_expanded_description_without_collision_elements_builds_nothing(monkeypatch):
    """The geometry test reads the expanded text: a source that includes files but gives no geometry is told."""
    text = '<robot name="r"><link name="base_link"/><link name="tool0"/><joint name="j" type="revolute">' \
           '<parent link="base_link"/><child link="tool0"/><axis xyz="0 0 1"/>' \
           '<limit lower="-1" upper="1" velocity="1" effort="1"/></joint></robot>'
    chain = load_chain(text, 'base_link', 'tool0')
    assert collision_from_parameters('<robot><xacro:include filename="x"/></robot>', chain, expanded=text) is None
