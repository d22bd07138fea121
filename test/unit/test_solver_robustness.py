"""Every method on any arm: a solve raises only ValueError (bad input), else returns finite joints within limits.

Random serial arms mix revolute joints with ranges of +-pi, +-2 pi and wider, continuous, prismatic and
mimic joints, coaxial joint pairs (axes that line up at a limit, as a 7-DoF arm's three rolls do) and
links from 0.1 mm to 100 m; targets are reachable (forward kinematics of random joints) or not.  The
arms of example-robot-data, chains from their root to each leaf, are sampled with a printed seed.
"""
import os
import pathlib
import xml.etree.ElementTree as ET

from conftest import example_robot
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
from ik_solver import IKSolver, load_chain, METHOD_NAMES, NullspaceGoals
from ik_solver.core import kinematics as kin
from ik_solver.core.exceptions import ModelError
from ik_solver.core.methods import smallest_singular_value
from ik_solver.core.nullspace import secondary_step
from ik_solver.core.transforms import make_pose, pose_error, quaternion_to_matrix
import numpy as np
import pytest

#: The right arm of a PR2 (example-robot-data) with its forearm and wrist rolls limited to +-2 pi: at the
#: elbow and wrist flex limits (0) the three roll axes coincide and the wrist centre lies on them.
SEVEN_DOF_ROLLS = """<robot name="rolls">
  <link name="torso"/><link name="pan"/><link name="lift"/><link name="roll"/><link name="upper"/>
  <link name="elbow"/><link name="forearm_roll"/><link name="forearm"/><link name="wrist_flex"/><link name="tip"/>
  <joint name="shoulder_pan" type="revolute"><parent link="torso"/><child link="pan"/>
    <origin xyz="0 -0.188 0"/><axis xyz="0 0 1"/>
    <limit lower="-2.2853981634" upper="0.714601836603" velocity="1" effort="1"/></joint>
  <joint name="shoulder_lift" type="revolute"><parent link="pan"/><child link="lift"/>
    <origin xyz="0.1 0 0"/><axis xyz="0 1 0"/><limit lower="-0.5236" upper="1.3963" velocity="1" effort="1"/></joint>
  <joint name="upper_arm_roll" type="revolute"><parent link="lift"/><child link="roll"/>
    <axis xyz="1 0 0"/><limit lower="-3.9" upper="0.8" velocity="1" effort="1"/></joint>
  <joint name="upper_arm" type="fixed"><parent link="roll"/><child link="upper"/></joint>
  <joint name="elbow_flex" type="revolute"><parent link="upper"/><child link="elbow"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 1 0"/><limit lower="-2.3213" upper="0.0" velocity="1" effort="1"/></joint>
  <joint name="forearm_roll" type="revolute"><parent link="elbow"/><child link="forearm_roll"/>
    <axis xyz="1 0 0"/><limit lower="-6.283185307179586" upper="6.283185307179586" velocity="1" effort="1"/></joint>
  <joint name="forearm" type="fixed"><parent link="forearm_roll"/><child link="forearm"/></joint>
  <joint name="wrist_flex" type="revolute"><parent link="forearm"/><child link="wrist_flex"/>
    <origin xyz="0.321 0 0"/><axis xyz="0 1 0"/><limit lower="-2.094" upper="0.0" velocity="1" effort="1"/></joint>
  <joint name="wrist_roll" type="revolute"><parent link="wrist_flex"/><child link="tip"/>
    <axis xyz="1 0 0"/><limit lower="-6.283185307179586" upper="6.283185307179586" velocity="1" effort="1"/></joint>
</robot>"""


def check_result(chain, target, result, rotation_goal=True):
    """Check the invariants of any answer to valid input: finite joints within limits, errors that are its own.

    The errors a result reports are its true ones on all axes, whatever the weights.
    """
    q = result.joints
    assert q.shape == (chain.n,)
    assert np.all(np.isfinite(q)), q
    assert np.all(q >= chain.lower) and np.all(q <= chain.upper), (q, chain.lower, chain.upper)
    position, rotation = pose_error(target, chain.fk(q))   # numpy's own rotation logarithm, not the kernel's
    assert np.isfinite(result.position_error) and np.isfinite(result.orientation_error)
    assert result.position_error == pytest.approx(position, rel=1e-6, abs=1e-9)
    assert result.orientation_error == pytest.approx(rotation, rel=1e-6, abs=1e-6)
    if result.success:
        assert position < 1e-5 + 1e-9 and (rotation < 1e-5 + 1e-6 or not rotation_goal)


def test_coaxial_rolls_at_limits_do_not_divide_by_zero():
    """The stall diagnosis met three identical Jacobian columns (a singular Gram matrix) and divided by zero."""
    chain = load_chain(SEVEN_DOF_ROLLS, 'torso', 'tip')
    q = np.array([0.31993633637615915, 0.11713291090512512, -2.401922785973894, -0.4797109881962853,
                  -2.2799632232426337, -0.5477257883836015, -1.6419128310873496])
    target = chain.fk(q)
    for timeout in (0.005, 0.05):
        check_result(chain, target, IKSolver(chain, timeout=timeout).solve(target, chain.mid_configuration()))
    J = chain.jacobian(np.array([0.3, 0.1, -2.4, 0.0, -2.3, 0.0, -1.6]))   # rolls coaxial: rank 5
    assert np.linalg.svd(J, compute_uv=False)[-1] < 1e-12
    assert 0.0 <= smallest_singular_value(J) < 1e-6


def test_secondary_step_without_goals_is_zero(ik7):
    """A public kernel: all-zero goal weights mean no step (their sum normalises the weights)."""
    q = ik7.mid_configuration()
    n = ik7.n
    R, p, a = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3)), np.empty((n, 3))
    kin.frames(q, *ik7.kin_args, R, p, a)
    J = ik7.jacobian(q)
    step = secondary_step(q, ik7.kin_args, ik7.lower, ik7.upper, np.zeros(4), 1.0, q, np.zeros(3), -1, np.zeros(3),
                          J, np.eye(3), np.ones(6), False, 1e-6, R, p, a)
    np.testing.assert_array_equal(step, np.zeros(n))


def test_smallest_singular_value_of_rank_deficient_matrices():
    """Never below the exact value (less rounding), within 2 % or 1e-7 of the largest; finite at any scale."""
    rng = np.random.default_rng(7)
    for k in range(300):
        J = rng.normal(size=(6, 7)) * 10.0 ** rng.uniform(-8, 3)
        if k % 3 == 0:
            J[:, 2] = J[:, 5] = J[:, 4]
        if k % 4 == 0:
            J[rng.integers(6)] = 0.0
        exact = np.linalg.svd(J, compute_uv=False)
        estimate = smallest_singular_value(J)
        low = exact[-1] * (1 - 1e-10) - 1e-15 * exact[0]
        assert low <= estimate <= exact[-1] * 1.5 + 1e-7 * exact[0], (k, exact, estimate)


def _joint(i, kind, rng, scale, names, previous_axis):
    """URDF text and axis of joint i (parent link l{i}, child l{i+1}) of the given kind."""
    axis = rng.normal(size=3) if rng.random() < 0.5 else np.eye(3)[rng.integers(3)]
    axis /= np.linalg.norm(axis)
    xyz = rng.normal(size=3) * scale * 10.0 ** rng.uniform(-1, 0.5)
    rpy = rng.uniform(-np.pi, np.pi, 3) if rng.random() < 0.7 else np.zeros(3)
    if kind == 'coaxial':   # on the previous joint's axis line, with the same axis: their columns coincide
        xyz, rpy, axis = np.zeros(3), np.zeros(3), previous_axis
    width = {'pi': np.pi, '2pi': 2 * np.pi, 'wide': rng.uniform(3 * np.pi, 50.0), 'coaxial': 2 * np.pi}.get(kind)
    lower, upper = -width if width else 0.0, width if width else 0.0
    joint_type, mimic = 'revolute', ''
    if kind == 'continuous':
        joint_type = 'continuous'
    elif kind == 'prismatic':
        joint_type = 'prismatic'
        lower, upper = sorted(rng.uniform(-1, 1, 2) * scale)
    elif kind == 'mimic':
        lower, upper = -1e3, 1e3
        multiplier = rng.choice([-1, 1]) * rng.uniform(0.2, 2.0)
        mimic = f'<mimic joint="{rng.choice(names)}" multiplier="{multiplier}" offset="{rng.uniform(-0.5, 0.5)}"/>'
    elif kind == 'limit0':   # a one-sided range ending at 0, as the elbow and wrist flex above
        lower, upper = -rng.uniform(0.5, 2.5), 0.0
    limit = f'<limit lower="{lower}" upper="{upper}" velocity="1" effort="1"/>'
    if joint_type == 'continuous':
        limit = '<limit velocity="1" effort="1"/>'
    return (f'<joint name="j{i}" type="{joint_type}"><parent link="l{i}"/><child link="l{i + 1}"/>'
            f'<origin xyz="{" ".join(map(str, xyz))}" rpy="{" ".join(map(str, rpy))}"/>'
            f'<axis xyz="{" ".join(map(str, axis))}"/>{limit}{mimic}</joint>'), axis


KINDS = ['pi', '2pi', 'wide', 'continuous', 'prismatic', 'mimic', 'coaxial', 'limit0']


@st.composite
def arms(draw):
    """Draw a random serial arm (URDF text, link scale): a drawn structure, geometry from a drawn seed."""
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=8))
    if kinds[0] == 'mimic':
        kinds[0] = 'pi'
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    scale = 10.0 ** draw(st.sampled_from([-4.0, -2.0, -0.5, 0.0, 1.0, 2.0]))   # 0.1 mm to 100 m links
    joints, names, axis = [], [], np.eye(3)[2]
    for i, kind in enumerate(kinds):
        text, axis = _joint(i, kind, rng, scale, names, axis)
        joints.append(text)
        if kind != 'mimic':
            names.append(f'j{i}')
    tip = f'<joint name="tip" type="fixed"><parent link="l{len(kinds)}"/><child link="tip"/>' \
          f'<origin xyz="{scale * rng.uniform(0, 1)} 0 0"/></joint>'
    links = ''.join(f'<link name="l{i}"/>' for i in range(len(kinds) + 1))
    return f'<robot name="random">{links}<link name="tip"/>{"".join(joints)}{tip}</robot>', scale


GOALS = [None, NullspaceGoals(posture=1.0, limits=1.0, iterations=5), NullspaceGoals(manipulability=1.0, iterations=5)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arm=arms(), method=st.sampled_from(METHOD_NAMES), reachable=st.booleans(), seed=st.integers(0, 2 ** 32 - 1),
       goals=st.sampled_from(GOALS), position_only=st.booleans())
def test_any_arm_any_method_returns_finite_joints_within_limits(arm, method, reachable, seed, goals, position_only):
    """Valid input on any arm, any method, nullspace goals or not: an answer within limits, never an exception."""
    urdf, scale = arm
    chain = load_chain(urdf, 'l0', 'tip')
    rng = np.random.default_rng(seed)
    if reachable:
        target = chain.fk(chain.random_configuration(rng))
    else:
        target = make_pose(rng.normal(size=3) * scale * 10.0 ** rng.uniform(0, 3), rng.normal(size=4))
    options = {'method': method, 'timeout': 0.002, 'random_seed': int(seed), 'position_only': position_only}
    if goals is not None:
        options['nullspace'] = goals
    if method == 'transpose':
        options.update(max_iterations=300, patience=20)
    solver = IKSolver(chain, **options)
    result = solver.solve(target, chain.random_configuration(rng))
    check_result(chain, target, result, rotation_goal=not position_only)


@settings(max_examples=60, deadline=None)
@given(arm=arms(), method=st.sampled_from(METHOD_NAMES), seed=st.integers(0, 2 ** 32 - 1),
       defect=st.sampled_from(['nan_seed', 'outside_seed', 'short_seed', 'nan_target', 'shear', 'reflection']))
def test_bad_input_raises_value_error_only(arm, method, seed, defect):
    """A broken seed or target raises ValueError, naming it, and nothing else."""
    chain = load_chain(arm[0], 'l0', 'tip')
    rng = np.random.default_rng(seed)
    seed_q = chain.random_configuration(rng)
    target = chain.fk(chain.random_configuration(rng))
    if defect == 'nan_seed':
        seed_q[rng.integers(chain.n)] = np.nan
    elif defect == 'outside_seed':
        i = rng.integers(chain.n)
        if not np.isfinite(chain.upper[i]):
            return   # a continuous joint has no outside
        seed_q[i] = chain.upper[i] + 0.1
    elif defect == 'short_seed':
        seed_q = seed_q[:-1]
    elif defect == 'nan_target':
        target[rng.integers(3), 3] = np.nan
    elif defect == 'shear':
        target[0, 1] += 0.1
    else:
        target[:3, :3] = -target[:3, :3]
    with pytest.raises(ValueError):
        IKSolver(chain, method=method, timeout=0.002).solve(target, seed_q)


def _robots_dir():
    return pathlib.Path(example_robot('ur_description/urdf/ur5_robot.urdf')).parents[2]


def _leaf_chains(path):
    """(root, leaf) of every root-to-leaf path of a URDF with at least one movable joint on it."""
    root = ET.parse(path).getroot()
    parent = {j.find('child').get('link'): (j.find('parent').get('link'), j.get('type')) for j in root.findall('joint')}
    links = [link.get('name') for link in root.findall('link')]
    parents = {p for p, _ in parent.values()}
    roots = [link for link in links if link not in parent]
    chains = []
    for leaf in (link for link in links if link not in parents and link in parent):
        link, movable = leaf, False
        while link in parent:
            link, kind = parent[link]
            movable = movable or kind != 'fixed'
        if movable and roots:
            chains.append((link, leaf))
    return chains


def test_example_robot_data_chains():
    """Root-to-leaf chains of example-robot-data's URDFs (a seeded sample): every method, random targets."""
    seed = int(os.environ.get('IK_ROBUSTNESS_SEED', np.random.SeedSequence().entropy % 2 ** 32))
    print(f'example-robot-data chain sample: IK_ROBUSTNESS_SEED={seed}')
    rng = np.random.default_rng(seed)
    candidates = [(str(p), c) for p in sorted(_robots_dir().rglob('*.urdf')) for c in _leaf_chains(p)]
    assert len(candidates) > 100
    for index in rng.choice(len(candidates), 12, replace=False):
        path, (base, tip) = candidates[index]
        try:
            chain = load_chain(path, base, tip)
        except ModelError as exc:   # e.g. a mimic master outside the chain: a documented refusal
            print(f'skipped {path} {base} -> {tip}: {exc}')
            continue
        for method in METHOD_NAMES:
            solver = IKSolver(chain, method=method, timeout=0.002)
            for _ in range(4):
                reachable = rng.random() < 0.7
                target = chain.fk(chain.random_configuration(rng)) if reachable else \
                    make_pose(rng.normal(size=3) * 2.0, quaternion_to_matrix(rng.normal(size=4)))
                check_result(chain, target, solver.solve(target, chain.random_configuration(rng)))
