"""The self-collision matrix tool: adjacent pairs removed, Never and Always decided from samples, SRDF round trip."""
import pathlib

from ik_solver.collision import CollisionModel
from ik_solver.collision.matrix import compute_matrix
from ik_solver.collision.srdf import load_srdf
from ik_solver_demos.tools import collision_matrix
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
IK7 = str(ROOT / 'urdf' / 'ik7.urdf.xacro')
ADJACENT = {frozenset(p) for p in (('base_link', 'link1'), ('link1', 'link2'), ('link2', 'link3'), ('link3', 'link4'),
                                   ('link4', 'link5'), ('link5', 'link6'), ('link6', 'link7'))}


def test_generated_srdf_removes_adjacent_pairs_and_round_trips(tmp_path, capsys):
    output = tmp_path / 'ik7.srdf'
    assert collision_matrix.main([IK7, '--samples', '400', '--seed', '2', '-o', str(output)]) == 0
    srdf = load_srdf(str(output))
    assert srdf.robot == 'ik7'
    adjacent = {frozenset(e[:2]) for e in srdf.disabled if e[2] == 'Adjacent'}
    assert adjacent == ADJACENT
    report = capsys.readouterr().err
    assert '28 link pairs with geometry' in report and '7 adjacent' in report
    # Loaded back, the model checks exactly the pairs the SRDF leaves.
    model = CollisionModel(IK7, 'base_link', 'tool0', srdf=str(output))
    assert model.pair_count[0] == 28 - len(srdf.disabled)


def test_never_pairs_never_collide_and_checked_pairs_do():
    """Decisions agree with the sampled truth: a 'Never' pair is free in every sample, a kept pair was hit."""
    model = CollisionModel(IK7, 'base_link', 'tool0')
    matrix = compute_matrix(model, samples=600, rng=np.random.default_rng(5))
    never = {frozenset(e[:2]) for e in matrix.entries if e[2] == 'Never'}
    kept = {frozenset(p) for p in model._world.pairs} - never
    hits = set()
    for q in np.random.default_rng(5).uniform(model.joint_ranges[:, 0], model.joint_ranges[:, 1], (600, 7)):
        hits |= {frozenset(p) for p in model.colliding_pairs(q)}
    assert not hits & never
    assert kept and kept <= hits
    assert matrix.count('Adjacent') == 7 and matrix.count('Always') == 0


def test_always_colliding_pair_is_found():
    """Two links welded into each other by a fixed joint (not adjacent: a geometry-carrying link between)."""
    urdf = """<robot name="w">
      <link name="a"><collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
      <link name="b"><collision><origin xyz="0 0 0.5"/><geometry><sphere radius="0.05"/></geometry></collision></link>
      <link name="c"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" velocity="1" effort="1"/></joint>
      <joint name="f" type="fixed"><parent link="b"/><child link="c"/></joint>
    </robot>"""
    matrix = compute_matrix(CollisionModel(urdf, None, None), samples=50, rng=np.random.default_rng(0))
    assert ('a', 'c', 'Always') in matrix.entries
    assert ('a', 'b', 'Adjacent') in matrix.entries and ('b', 'c', 'Adjacent') in matrix.entries


def test_matrix_refuses_a_model_with_srdf():
    model = CollisionModel(IK7, 'base_link', 'tool0', srdf='<robot name="ik7"/>')
    with pytest.raises(ValueError, match='without SRDF'):
        compute_matrix(model, samples=10)


def test_tool_reports_bad_input(tmp_path, capsys):
    assert collision_matrix.main([str(tmp_path / 'absent.urdf')]) == 1
    assert 'not found' in capsys.readouterr().err
