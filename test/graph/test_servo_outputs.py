"""ik_servo_node's other output types drive the MuJoCo arm; commands no controller executes are reported.

Pairs of a servo and a simulator as real processes over DDS, one per output type besides forward_position
(``test_servo_node.py``), and a positive control whose commands no controller hears.  The truths are the
simulator's: its tip pose and its report of commands beyond the limits.
"""
import time

from ik_solver.motion.servo import Status
import numpy as np
import pytest
import servo_fixtures  # noqa: I100
from servo_fixtures import (  # noqa: I100
    along_and_across, Arm, best_of, LOAD_SENSITIVE, measured_once, NAMESPACE, no_violations,
    STARVED, stream_twist, tip)
from trajectory_msgs.msg import JointTrajectory  # noqa: I100

#: The shared module-scoped fixtures: the joint limits file both nodes read, rclpy for the client.
limits_file, ros = servo_fixtures.limits_file, servo_fixtures.ros


#: (servo, sim, client parameters, distance tolerance, quantities the simulator witnesses) per output type.
OUTPUTS = {
    # A forward_velocity_controller integrates each velocity until the next one arrives: the distance is
    # open loop (as with MoveIt Servo) and varies with delivery jitter; the direction does not.
    'velocity': ({'command_out_kind': 'velocity', 'command_out_topic': 'forward_velocity_controller/commands'},
                 {'controller_type': 'forward_velocity'}, {'command_topic': 'forward_velocity_controller/commands'},
                 0.3, ('position', 'velocity')),
    # One-point trajectories: after a late message the controller covers the missed cycles in one
    # interpolation, faster than commanded (as a real JTC would); only positions are witnessed here.
    'joint_trajectory': ({'command_out_type': 'trajectory_msgs/JointTrajectory',
                          'command_out_topic': 'joint_trajectory_controller/joint_trajectory'},
                         {'controller_type': 'joint_trajectory'},
                         {'command_topic': 'joint_trajectory_controller/joint_trajectory',
                          'command_type': JointTrajectory},
                         0.05, ('position',)),
}


#: The positive control's servo publishes one-point trajectories where the simulated controller does not listen.
UNHEARD = 'unheard_controller/joint_trajectory'
#: (servo, sim, client parameters) of the pairs beside the module's arm: one per other output type, and the control.
OTHER_ARMS = {
    **{output: OUTPUTS[output][:3] for output in OUTPUTS},
    'unheard': ({**OUTPUTS['joint_trajectory'][0], 'command_out_topic': UNHEARD},
                {'controller_type': 'joint_trajectory'}, {'command_topic': UNHEARD, 'command_type': JointTrajectory}),
}


@pytest.fixture(scope='module')
def other_arms(ros, ik7, limits_file):
    """Start every pair of OTHER_ARMS at once, each in its own namespace; yield ({name: Arm}, measurements).

    Their start-ups overlap: ready in about the time of one instead of one after another.  The tests that use
    them come last, so the module's arm is the only pair while the timing-sensitive tests run.
    """
    arms = {}
    try:
        for name, (servo, sim, client) in OTHER_ARMS.items():
            arms[name] = Arm(ik7.joint_names, limits_file, servo, sim, namespace=f'{NAMESPACE}_{name}', **client)
        for a in arms.values():
            assert a.ready(), a.logs()
        yield arms, {}
    finally:
        close_all(list(arms.values()))


def close_all(arms):
    """Close every arm, even when closing one of them fails (the first failure is raised after)."""
    if arms:
        try:
            arms[0].close()
        finally:
            close_all(arms[1:])


def base_x_motion(arm, checked):
    """Stream the base-x twist of 0.1 m/s for 1 s; return how far the tip moved (base frame)."""
    since = time.monotonic()
    T0 = tip(arm)
    stream_twist(arm.client, (0.1, 0.0, 0.0), (0, 0, 0))
    assert arm.client.since(arm.client.commands, since)
    no_violations(arm, since, checked)
    return tip(arm)[:3, 3] - T0[:3, 3]


def moved_in_the_commanded_direction(moved):
    """Tell whether the tip moved along base x (at least a starved stream's share of 0.1 m) and little across."""
    along, across = along_and_across(moved, np.array([1.0, 0.0, 0.0]))
    return along > STARVED * 0.1 and across < 0.1 * along


@pytest.mark.parametrize('output', OUTPUTS)
def test_other_output_types_drive_the_simulator_in_the_commanded_direction(other_arms, output, request):
    arms, measured = other_arms
    arm = arms[output]
    moved = measured_once(measured, output, lambda: base_x_motion(arm, OUTPUTS[output][4]), request)
    assert moved_in_the_commanded_direction(moved), moved


def test_commands_that_are_not_executed_fail_that_check_and_the_status_says_so(other_arms):
    """The positive control: one-point trajectories that no controller executes leave the arm where it is.

    The servo publishes them where the simulated controller does not listen (as a controller that
    refuses them, or takes them too late, would leave the arm): the check above must fail, and the
    servo's status must say that the arm is not where its commands put it, not NO_WARNING alone.
    """
    arm = other_arms[0]['unheard']
    since = time.monotonic()
    moved = base_x_motion(arm, ('position',))
    assert not moved_in_the_commanded_direction(moved), moved
    statuses = [(m.code, m.message) for _, m in arm.client.since(arm.client.statuses, since)]
    assert any(code == Status.INVALID and 'not where the commands put it' in message
               for code, message in statuses), (statuses, arm.logs())


@LOAD_SENSITIVE
@pytest.mark.parametrize('output', OUTPUTS)
def test_other_output_types_drive_the_simulator_that_far(other_arms, output):
    arms, measured = other_arms
    arm = arms[output]
    tolerance, checked = OUTPUTS[output][3:]

    def measure():
        return base_x_motion(arm, checked)

    def accept(moved):
        return abs(moved[0] - 0.1) <= tolerance * 0.1 and np.linalg.norm(moved[1:]) < 0.1 * abs(moved[0])

    results = best_of(3, measure, accept, measured_once(measured, output, measure))
    assert accept(results[-1]), results
