"""Two arms in one graph: namespaces left and right, each an ik_solver_node and a simulator.

Every default topic is relative, so a namespace separates the arms completely: a target sent to
one node moves its own arm and leaves the other where it was.
"""
import time

from ik_solver.core.transforms import make_pose
import numpy as np
import pytest
from ros_fixtures import Session, start  # noqa: I100

DOWN = [1.0, 0.0, 0.0, 0.0]


@pytest.fixture(scope='module')
def arms(ik7):
    left = Session(ik7.joint_names, namespace='left')
    try:
        right = Session(ik7.joint_names, namespace='right')
        try:
            for s in (left, right):
                namespace = s.observer.get_namespace().strip('/')
                s.sim = s.add(start('sim.sim_arm_node', namespace=namespace, kinematic=True))
                # a 50 ms solve budget: CI preemption cannot cut it (this module is about namespaces)
                s.node = s.add(start('ros.ik_node', namespace=namespace, timeout=0.05))
            for s in (left, right):
                assert s.observer.wait_ready(60.0), s.node.output() + s.sim.output()
            yield left, right
        finally:
            right.close()
    finally:
        left.close()


def _move(session, T):
    sent = session.observer.send_target(T)
    status = session.observer.wait_status(sent, timeout=5.0)
    assert status is not None and status.success, (status and (status.reason, status.message))
    assert session.observer.wait_executed(sent, status)


@pytest.mark.parametrize('mover', ['left', 'right'])
def test_a_target_moves_only_its_own_arm(arms, mover):
    sessions = dict(zip(('left', 'right'), arms))
    other = sessions['right' if mover == 'left' else 'left']
    before = other.observer.latest_joints()[1]
    T = make_pose([0.5, 0.15 if mover == 'left' else -0.15, 0.45], DOWN)
    t0 = time.monotonic()
    _move(sessions[mover], T)
    assert np.linalg.norm(sessions[mover].observer.latest_tip()[:3, 3] - T[:3, 3]) < 2e-3
    assert sessions[mover].trajectories_since(t0) and not other.trajectories_since(t0)
    assert np.abs(other.observer.latest_joints()[1] - before).max() < 1e-6
    assert not other.statuses_since(t0)
