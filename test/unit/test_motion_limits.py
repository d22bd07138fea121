"""Joint limits: URDF < MoveIt joint_limits.yaml < overrides, never looser than the URDF."""
import pathlib

from ik_solver.core.chain import load_chain
from ik_solver.motion.limits import DEFAULT_ACCELERATION, load_joint_limits
import numpy as np
import pytest

CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'config'
#: MoveIt's published Panda limits (moveit_resources panda_moveit_config/config/joint_limits.yaml).
PANDA_YAML = """
default_velocity_scaling_factor: 0.1
default_acceleration_scaling_factor: 0.2
joint_limits:
""" + ''.join(f"""  panda_joint{i + 1}:
    has_velocity_limits: true
    max_velocity: {v}
    has_acceleration_limits: true
    max_acceleration: {a}
    has_jerk_limits: true
    max_jerk: 300.0
""" for i, (v, a) in enumerate(zip([2.175] * 4 + [2.61] * 3, [3.75, 1.875, 2.5, 3.125, 3.75, 5.0, 5.0]))) + """
  panda_finger_joint1:
    has_velocity_limits: true
    max_velocity: 0.1
    has_acceleration_limits: false
    max_acceleration: 0
"""


def write(tmp_path, text):
    path = tmp_path / 'joint_limits.yaml'
    path.write_text(text)
    return str(path)


def test_urdf_only_assumes_the_default_acceleration_and_says_so(ik7):
    loaded = load_joint_limits(ik7)
    limits = loaded.limits
    assert limits.names == tuple(ik7.joint_names)
    np.testing.assert_array_equal(limits.velocity, ik7.velocity_limits)
    np.testing.assert_array_equal(limits.lower, ik7.lower)
    np.testing.assert_array_equal(limits.acceleration, DEFAULT_ACCELERATION)
    assert np.all(np.isinf(limits.jerk))
    assert len(loaded.notes) == 1 and 'assumed 1 rad/s^2' in loaded.notes[0]  # one line naming every joint
    assert all(name in loaded.notes[0] for name in ik7.joint_names)
    assert loaded.default_velocity_scaling == loaded.default_acceleration_scaling == 1.0


def test_moveit_panda_yaml(panda, tmp_path):
    loaded = load_joint_limits(panda, write(tmp_path, PANDA_YAML))
    np.testing.assert_array_equal(loaded.limits.acceleration, [3.75, 1.875, 2.5, 3.125, 3.75, 5.0, 5.0])
    np.testing.assert_array_equal(loaded.limits.jerk, 300.0)
    np.testing.assert_allclose(loaded.limits.velocity, panda.velocity_limits)
    assert (loaded.default_velocity_scaling, loaded.default_acceleration_scaling) == (0.1, 0.2)
    assert any('panda_finger_joint1' in note and 'ignored' in note for note in loaded.notes)
    assert not any('assumed' in note for note in loaded.notes)


def test_urdf_velocity_is_never_exceeded_and_yaml_may_tighten(planar3, tmp_path):
    text = """joint_limits:
  joint1: {has_velocity_limits: true, max_velocity: 5.0, has_acceleration_limits: true, max_acceleration: 2.0}
  joint2: {has_velocity_limits: true, max_velocity: 0.5, has_position_limits: true, min_position: -1.0,
           max_position: 9.0}
  joint3: {has_velocity_limits: false, max_velocity: 0.1, has_jerk_limits: true, max_jerk: 40}
"""
    loaded = load_joint_limits(planar3, write(tmp_path, text))
    limits = loaded.limits
    np.testing.assert_array_equal(limits.velocity, [2.0, 0.5, 2.0])  # URDF 2.0 each
    np.testing.assert_array_equal(limits.acceleration, [2.0, DEFAULT_ACCELERATION, DEFAULT_ACCELERATION])
    np.testing.assert_array_equal(limits.jerk, [np.inf, np.inf, 40.0])
    assert (limits.lower[1], limits.upper[1]) == (-1.0, 2.6)
    assert any('joint1' in note and 'clamped' in note for note in loaded.notes)
    assert any('joint2' in note and 'max_position' in note for note in loaded.notes)


def test_overrides_win_over_the_yaml_but_not_over_the_urdf(planar3, tmp_path):
    path = write(tmp_path, 'joint_limits:\n  joint1: {has_acceleration_limits: true, max_acceleration: 2.0}\n')
    overrides = {'joint1': {'max_acceleration': 3.0, 'max_jerk': 30.0}, 'joint2': {'max_velocity': 9.0}}
    loaded = load_joint_limits(planar3, path, overrides)
    assert loaded.limits.acceleration[0] == 3.0 and loaded.limits.jerk[0] == 30.0
    assert loaded.limits.velocity[1] == 2.0
    assert any('joint2' in note and 'clamped' in note for note in loaded.notes)


@pytest.mark.parametrize('arm,fixture', [('ik7', 'ik7'), ('ik6', 'ik6'), ('planar3', 'planar3')])
def test_bundled_configs_give_every_joint_real_limits(arm, fixture, request):
    chain = request.getfixturevalue(fixture)
    loaded = load_joint_limits(chain, str(CONFIG / f'{arm}_joint_limits.yaml'))
    assert loaded.notes == []  # nothing assumed, nothing clamped, nothing ignored
    assert np.all(loaded.limits.acceleration > DEFAULT_ACCELERATION)
    assert np.all(loaded.limits.velocity <= chain.velocity_limits)
    np.testing.assert_allclose(loaded.limits.velocity, chain.velocity_limits, atol=1e-4)


@pytest.mark.parametrize('text,match', [
    ('joint_limits: [1, 2', 'not valid YAML'),
    ('limits: {}', "no 'joint_limits:'"),
    ('joint_limits:\n  elbow: {has_velocity_limits: true, max_velocity: 1.0}', 'none of its joints'),
    ('joint_limits:\n  joint1: {has_velocity_limits: true, max_velocity: -1.0}',
     r"'joint1'.*max_velocity.*must be in \[0.001, 1000\]"),
    ('joint_limits:\n  joint1: {has_velocity_limits: true, max_velocity: 1.0e-300}', r'max_velocity.*got 1e-300'),
    ('joint_limits:\n  joint1: {has_acceleration_limits: true, max_acceleration: 1.0e+300}',
     r'max_acceleration.*1e\+300'),
    ('joint_limits:\n  joint1: {has_jerk_limits: true, max_jerk: 1.0e+7}', r'max_jerk must be in \[0.01, 1e\+06\]'),
    ('joint_limits:\n  joint2: {has_acceleration_limits: true, max_acceleration: .nan}', r"'joint2'.*finite"),
    ('joint_limits:\n  joint1: {has_acceleration_limits: true}', r"'joint1'.*max_acceleration is missing"),
    ('joint_limits:\n  joint1: {has_acceleration_limits: yes please}', r"'joint1'.*true or false"),
    ('joint_limits:\n  joint1: {max_acceleraton: 2.0}', r"'joint1'.*unknown key.*max_acceleraton"),
    ('joint_limits:\n  joint3: {has_jerk_limits: true, max_jerk: "fast"}', r"'joint3'.*max_jerk.*number"),
    ('default_velocity_scaling_factor: 2.0\njoint_limits:\n  joint1: {}', 'default_velocity_scaling_factor'),
])
def test_bad_yaml_is_refused_naming_the_joint_and_key(planar3, tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        load_joint_limits(planar3, write(tmp_path, text))


def test_missing_file_is_a_value_error(planar3, tmp_path):
    with pytest.raises(ValueError, match='cannot be read'):
        load_joint_limits(planar3, str(tmp_path / 'absent.yaml'))


@pytest.mark.parametrize('overrides,match', [
    ({'wrist': {'max_velocity': 1.0}}, "unknown joint 'wrist'"),
    ({'joint1': {'max_effort': 1.0}}, "'max_effort' for joint 'joint1'"),
    ({'joint2': {'max_acceleration': 0.0}}, "max_acceleration of joint 'joint2' must be in"),
    ({'joint3': {'max_jerk': -5}}, "max_jerk of joint 'joint3' must be in"),
    ({'joint3': 4.0}, "joint 'joint3' must be a mapping"),
])
def test_bad_overrides_are_refused(planar3, overrides, match):
    with pytest.raises(ValueError, match=match):
        load_joint_limits(planar3, overrides=overrides)


def test_a_joint_without_a_urdf_velocity_gets_the_default_with_a_note(tmp_path):
    urdf = """<robot name="r"><link name="base"/><link name="tip"/>
      <joint name="spin" type="continuous"><parent link="base"/><child link="tip"/><axis xyz="0 0 1"/></joint>
    </robot>"""
    loaded = load_joint_limits(load_chain(urdf, 'base', 'tip'))
    assert np.isfinite(loaded.limits.velocity).all()
    assert any('spin' in note and 'velocity' in note for note in loaded.notes)


def test_scaled_limits_scale_jerk_with_acceleration(ik7):
    limits = load_joint_limits(ik7, str(CONFIG / 'ik7_joint_limits.yaml')).limits
    scaled = limits.scaled(0.5, 0.25)
    np.testing.assert_allclose(scaled.velocity, 0.5 * limits.velocity)
    np.testing.assert_allclose(scaled.acceleration, 0.25 * limits.acceleration)
    np.testing.assert_allclose(scaled.jerk, 0.25 * limits.jerk)
    with pytest.raises(ValueError, match='acceleration_scaling'):
        limits.scaled(1.0, 0.0)


def test_plans_at_the_largest_limits_allowed_keep_them():
    """A jerk of 1e7 let Ruckig's plans exceed the acceleration limit by 36 %; up to the largest allowed they hold."""
    from ik_solver.motion.guard import check_trajectory
    from ik_solver.motion.limits import JointLimits, LIMIT_RANGES, MotionState
    from ik_solver.motion.timing import plan_move
    top = {key: high for key, (low, high) in LIMIT_RANGES.items()}
    limits = JointLimits(('a',), np.array([-3.0]), np.array([3.0]), np.array([top['max_velocity']]),
                         np.array([top['max_acceleration']]), np.array([top['max_jerk']]))
    for goal in (0.5, -2.9, 1e-4):
        start = MotionState.at_rest(np.array([0.0]))
        path = plan_move(start, np.array([goal]), limits, 0.001)
        assert check_trajectory(start, path, limits) == [], goal
