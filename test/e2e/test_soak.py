"""A short soak: both nodes, driven by random streams, lied to on joint_states, never command beyond the limits.

``ik_solver_demos.tools.soak`` runs for 12 s: the IK node (JointTrajectory) and the servo (forward_position),
each with its simulator on a private domain, lied to after quiet gaps of 0.25-1.25 s (the command line's
0.5-2.5 s halved) so that the short run still meets about ten lies of several kinds per lane.  Its checker
(test/unit/test_soak_checker.py shows it flags steps and speeding) replays every command as the controller
executes it; the simulator's physics state is the truth.  The lies must have been told and refused, and no
command may step, leave the position limits or start away from the arm.
"""
from ik_solver_demos.tools.soak import report, soak
import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.msg', reason='ik_solver_interfaces is not built')

SECONDS = 12.0
#: Quiet time before each lie [s]: about one lie a second with its burst, so >= 5 lies of >= 3 kinds per lane.
LIE_GAP = (0.25, 1.25)
#: Refusals that name a lie: the IK node's status reasons, the servo's refused joint_states or stale state.
IK_REFUSALS = {'inconsistent_state', 'stale_state', 'invalid_input'}


@pytest.fixture(scope='module')
def results():
    lanes, loads = soak(SECONDS / 60.0, 0, seed=7, startup=60.0, lie_gap=LIE_GAP)
    text, bad = report(lanes, loads, SECONDS / 60.0, 0)
    return {r['lane']: r for r in lanes}, text, bad


def test_every_lane_ran_and_commanded(results):
    lanes, text, _ = results
    assert set(lanes) == {'ik', 'servo'}, text
    for lane in lanes.values():
        assert lane['ready'] and lane['seconds'] >= 0.9 * SECONDS, text
        assert lane['inputs'] > 100 and lane['commands'] > 10, text
        assert lane['tracebacks'] == [], text


#: What makes a command unsafe at once: a position beyond a limit, a step (a velocity over one control period
#: beyond its limit), a start away from the arm's true state, or a malformed command.  Acceleration and jerk
#: peaks where a trajectory joins the controller's motion are counted by the soak and left out here.
UNSAFE = {'position', 'velocity over one period', 'distance from the true state', 'malformed'}


@pytest.mark.parametrize('name', ['ik', 'servo'])
def test_no_command_steps_leaves_the_limits_or_starts_away_from_the_arm(results, name):
    lanes, text, _ = results
    lane = lanes[name]
    unsafe = [v for v in lane['violations'] if v['quantity'] in UNSAFE]
    assert unsafe == [], text
    assert lane['max_first_distance'] is not None, text


def test_lies_were_told_and_refused(results):
    lanes, text, _ = results
    for lane in lanes.values():
        assert sum(lane['lies'].values()) >= 5 and len(lane['lies']) >= 3, text
        assert sum(lane['lie_messages'].values()) > 50, text
    assert IK_REFUSALS & set(lanes['ik']['statuses']), text
    servo = lanes['servo']
    assert any('joint_states refused' in m for m in servo['refusals']) or servo['statuses'].get('STALE_STATE'), text
