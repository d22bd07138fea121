"""Property-based tests of the loader: any model text loads or is refused quickly, never hangs.

The models are random mutations of one valid URDF that has every joint kind (revolute, continuous,
prismatic, fixed, mimic, a side branch): attributes set to NaN, inf, huge, empty or garbage values or to
other link names (rewiring, cycles, two parents), elements removed or duplicated, joint types changed.
Invariants: ``load_chain`` returns a Chain or raises a ModelError, within 1 s of CPU time for URDF text
(within the xacro timeout for xacro text, which runs in a bounded child process); a chain that loads gives
finite poses and Jacobians for every finite joint position within the model bound.  In-process loads are
timed by CPU time (``time.process_time``), which a loaded machine does not stretch; wall-clock bounds are
generous hang guards only.
"""
import copy
import os
import signal
import time
import xml.etree.ElementTree as ET

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from ik_solver.core import urdf
from ik_solver.core.chain import load_chain
from ik_solver.core.exceptions import ModelError, URDFParseError
from ik_solver.core.urdf import MAX_MAGNITUDE
import numpy as np
import pytest

BASE_URDF = """<robot name="prop">
  <link name="base"/><link name="l1"/><link name="l2"/><link name="l3"/><link name="l4"/><link name="tip"/>
  <link name="finger"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.3" rpy="0 0 0.2"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" velocity="1.5" effort="10"/>
    <safety_controller soft_lower_limit="-1.9" soft_upper_limit="1.9" k_velocity="1"/></joint>
  <joint name="p1" type="prismatic"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.05"/><axis xyz="1 0 0"/><limit lower="-0.1" upper="0.3" velocity="0.5" effort="10"/></joint>
  <joint name="c1" type="continuous"><parent link="l2"/><child link="l3"/>
    <origin xyz="0.2 0 0" rpy="0 0.4 0"/><axis xyz="0 1 0"/><limit velocity="2" effort="10"/></joint>
  <joint name="m1" type="revolute"><parent link="l3"/><child link="l4"/>
    <origin xyz="0.15 0 0.05"/><axis xyz="0 0.6 0.8"/><limit lower="-3" upper="3" velocity="2" effort="10"/>
    <mimic joint="j1" multiplier="-0.5" offset="0.1"/></joint>
  <joint name="f1" type="fixed"><parent link="l4"/><child link="tip"/><origin xyz="0.1 0 0" rpy="0.3 -0.2 0.1"/>
  </joint>
  <joint name="g1" type="prismatic"><parent link="l4"/><child link="finger"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.04" velocity="0.1" effort="5"/></joint>
</robot>
"""
LINKS = ['base', 'l1', 'l2', 'l3', 'l4', 'tip', 'finger']
ATTRIBUTES = ['velocity', 'lower', 'upper', 'xyz', 'rpy', 'multiplier', 'offset', 'link', 'name', 'type', 'joint',
              'soft_lower_limit', 'soft_upper_limit', 'effort']
NUMBERS = ['nan', 'inf', '-inf', 'NaN', '1e300', '-1e300', '1e309', '0', '-1', '1e4', '10001', '1e-300']
VECTORS = ['nan 0 0', '0 inf 0', '1e300 0 0', '0 0 0', '1e-12 0 0', '1 2', '1 2 3 4', 'nan nan nan']
GARBAGE = ['', ' ', 'garbage', '0x10', '1,5', 'ghost', 'None', 'revolute', 'floating', 'planar', 'bogus']
VALUES = st.one_of(st.sampled_from(NUMBERS + VECTORS + GARBAGE + LINKS),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.lists(st.floats(-1e6, 1e6), min_size=3, max_size=3).map(lambda v: ' '.join(map(repr, v))))
#: The numbers of a joint that the kinematics or the limits read: (child element, attribute).
NUMBER_SLOTS = [('origin', 'xyz'), ('origin', 'rpy'), ('axis', 'xyz'), ('limit', 'lower'), ('limit', 'upper'),
                ('limit', 'velocity'), ('mimic', 'multiplier'), ('mimic', 'offset'),
                ('safety_controller', 'soft_lower_limit'), ('safety_controller', 'soft_upper_limit')]
OPERATIONS = ('set', 'number', 'number', 'remove', 'duplicate', 'rewire', 'retype')
MUTATIONS = st.lists(st.tuples(st.sampled_from(OPERATIONS), st.integers(0, 10 ** 6), st.integers(0, 10 ** 6),
                               VALUES), min_size=1, max_size=4)
URDF_SECONDS = 1.0
#: Wall-clock hang guard (s): far above any honest load on a shared machine, far below a hang.
HANG_SECONDS = 30


def mutate(mutations):
    """Apply (operation, index, index, value) mutations to BASE_URDF; the indices wrap around."""
    root = ET.fromstring(BASE_URDF)
    for operation, i, k, value in mutations:
        parents = {child: parent for parent in root.iter() for child in parent}
        elements = list(parents)
        joints = root.findall('joint')
        element = elements[i % len(elements)]
        if operation == 'set':  # mostly an attribute the element has, sometimes one it should not have
            names = sorted(element.attrib) if k % 4 and element.attrib else ATTRIBUTES
            element.set(names[k % len(names)], value)
        elif operation == 'remove':
            parents[element].remove(element)
        elif operation == 'duplicate':
            parent = parents[element]
            parent.insert(list(parent).index(element), copy.deepcopy(element))
        elif joints and operation == 'number':  # only where the element exists: adding one is 'set''s job
            tag, attribute = NUMBER_SLOTS[k % len(NUMBER_SLOTS)]
            target = joints[i % len(joints)].find(tag)
            if target is not None:
                target.set(attribute, value)
        elif joints and operation == 'rewire':
            end = joints[i % len(joints)].find('parent' if k % 2 else 'child')
            if end is not None:
                end.set('link', LINKS[k % len(LINKS)])
        elif joints:
            joints[i % len(joints)].set('type', ('revolute', 'continuous', 'prismatic', 'fixed', 'floating',
                                                 'planar', 'bogus')[k % 7])
    return ET.tostring(root, encoding='unicode')


def _hang(signum, frame):
    raise TimeoutError(f'load_chain did not return within {HANG_SECONDS} s')


def load_timed(text):
    """(chain or None, CPU seconds, wall seconds); any exception other than ModelError fails the test.

    An alarm turns a hang (a cyclic walk) into a failure instead of a stuck test run.
    """
    previous = signal.signal(signal.SIGALRM, _hang)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    start, cpu = time.monotonic(), time.process_time()
    try:
        chain = load_chain(text, 'base', 'tip')
    except ModelError:
        chain = None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return chain, time.process_time() - cpu, time.monotonic() - start


def assert_finite_kinematics(chain, q):
    assert np.all(np.isfinite(chain.fk(q)))
    assert np.all(np.isfinite(chain.jacobian(q)))
    assert np.all(np.isfinite(chain.fk(chain.mid_configuration())))


def test_the_unmutated_model_loads():
    chain, _, _ = load_timed(mutate([]))
    assert chain is not None and chain.joint_names == ['j1', 'p1', 'c1']


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations=MUTATIONS, data=st.data())
def test_any_urdf_text_loads_or_is_refused_within_a_second(mutations, data):
    chain, cpu, _ = load_timed(mutate(mutations))
    assert cpu < URDF_SECONDS, f'{cpu:.3f} s'
    if chain is not None:
        q = data.draw(arrays(float, chain.n, elements=st.floats(-MAX_MAGNITUDE, MAX_MAGNITUDE)))
        assert_finite_kinematics(chain, q)


@settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.text(max_size=400), st.text(alphabet='<>/="robtlinkjcd ', max_size=400)))
def test_any_text_at_all_loads_or_is_refused_within_a_second(text):
    chain, cpu, _ = load_timed(text)
    assert chain is None and cpu < URDF_SECONDS, f'{cpu:.3f} s'


@settings(max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations=MUTATIONS)
def test_any_xacro_text_loads_or_is_refused_within_the_xacro_timeout(mutations):
    text = mutate(mutations).replace('<robot ', '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" ', 1)
    text = text.replace('>', '><xacro:property name="used" value="1"/>', 1)   # so that xacro really runs
    chain, _, elapsed = load_timed(text)   # xacro runs in a child: the wall clock, with room for its start
    assert elapsed < urdf.XACRO_TIMEOUT + 5.0, f'{elapsed:.3f} s'
    if chain is not None:
        assert_finite_kinematics(chain, np.zeros(chain.n))


@pytest.mark.parametrize('expression,cpu,timeout,match', [
    ('${9**9**9}', 1.0, urdf.XACRO_TIMEOUT, 'more than 1 s of CPU'),   # CPU: a never-ending big-integer power
    # The clock still ends a child that the CPU bound has not (here: one allowed a minute of CPU).
    ('${9**9**9}', 60.0, 1.0, 'did not finish within 1 s'),
    # Memory: refused by the child's address-space bound, not by either clock.
    ('${[0]*10**9}', urdf.XACRO_CPU, urdf.XACRO_TIMEOUT, 'when evaluating'),
])
def test_hostile_xacro_expressions_are_bounded(monkeypatch, expression, cpu, timeout, match):
    monkeypatch.setattr(urdf, 'XACRO_CPU', cpu)
    monkeypatch.setattr(urdf, 'XACRO_TIMEOUT', timeout)
    text = f'<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="{expression}"/></robot>'
    start = time.monotonic()
    with pytest.raises(URDFParseError, match=match):
        load_chain(text, 'base', 'tip')
    # wall clock: a hang guard with room for the child's start (and, under load, for its wait for a core)
    assert time.monotonic() - start < min(timeout, 4 * cpu + 2) + 5.0


def test_xacro_waiting_for_a_core_is_not_cut_off_by_the_clock(monkeypatch):
    """On a loaded host the child may wait seconds for a core: only its own CPU time counts against it.

    The child is stopped (SIGSTOP) for longer than its CPU allowance, as if other processes held both cores,
    then resumed: it still expands the description.
    """
    import subprocess as real_subprocess

    def run_after_a_wait(command, **kwargs):
        child = real_subprocess.Popen(command, stdin=real_subprocess.PIPE, stdout=real_subprocess.PIPE,
                                      stderr=real_subprocess.PIPE, text=True)
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(1.5)
        os.kill(child.pid, signal.SIGCONT)
        out, err = child.communicate(kwargs['input'], timeout=kwargs['timeout'])
        return real_subprocess.CompletedProcess(command, child.returncode, out, err)
    monkeypatch.setattr(urdf, 'XACRO_CPU', 1.0)
    monkeypatch.setattr(urdf.subprocess, 'run', run_after_a_wait)
    text = ('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:property name="l" value="0.5"/>'
            '<link name="base"/><link name="tip"/><joint name="j" type="revolute"><parent link="base"/>'
            '<child link="tip"/><origin xyz="0 0 ${l}"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    chain = load_chain(text, 'base', 'tip')
    np.testing.assert_allclose(chain.fk(np.zeros(1))[:3, 3], [0.0, 0.0, 0.5])


LOL = ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
       + ''.join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
       + ']><robot name="&i;"><link name="a"/></robot>')
LINKS_1001 = '<robot name="r">' + ''.join(f'<link name="l{i}"/>' for i in range(1001)) + '</robot>'


@pytest.mark.parametrize('text,match', [
    (LOL, 'amplification'),                                                   # billion laughs
    ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><robot name="r">'
     '<link name="&x;"/></robot>', 'external entity'),                        # XXE
    ('<robot name="r">' + '<x/>' * 50_001 + '</robot>', 'XML tags, more than 50000'),
    (LINKS_1001, 'robot has 1001 links, more than 1000'),
    ('<robot name="r"><link name="a"/>' + '<x>' * 20_000 + '</x>' * 20_000 + '</robot>', "base link 'base'"),
    ('<robot name="r"><link name="a"/><x>' + 'y' * (5 * 2 ** 20) + '</x></robot>', 'longer than'),
    ('no robot here', 'file not found'),
])
def test_hostile_xml_is_refused_quickly(text, match):
    start = time.process_time()
    with pytest.raises(ModelError, match=match):
        load_chain(text, 'base', 'tip')
    assert time.process_time() - start < 5 * URDF_SECONDS   # CPU time; generous: these texts are large
