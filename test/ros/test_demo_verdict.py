"""The demos fail, and say why, when a target is missed or the simulation cannot be trusted.

A demo that prints "passed" while the simulator executed commands beyond the joint limits, or while its
physics fell so far behind real time that it skipped ahead, tells the user something false.
"""
import inspect
import json
import threading
from types import SimpleNamespace

from ik_solver_demos.sim import sim_arm_node
from ik_solver_demos.sim.controllers import Violation
from ik_solver_demos.tools import servo_demo
from ik_solver_demos.tools.demo import Demo
from ik_solver_demos.tools.observer import simulation_failures, simulator_complaints
import pytest

LAG_LINE = ('[WARN] [1764590000.123456789] [sim_arm]: the physics fell 6.52 s behind the clock and skipped ahead: '
            'a trajectory under way is joined with a jump')
INFO_LINE = '[INFO] [1764590000.000000001] [sim_arm]: ik7 simulated with 7 joints'


def violation_report():
    """Return a report as sim_arm_node publishes it on ~/limit_violations."""
    violation = Violation('joint5', 'acceleration', 86.78, 5.0, 1.25)
    return json.loads(json.dumps({'controller': 'joint_trajectory', 'command': 'trajectory',
                                  'violations': [vars(violation)]}))


def test_the_simulator_still_logs_the_line_the_verdict_reads():
    source = inspect.getsource(sim_arm_node)
    assert "f'the physics fell {-delay:.2f} s behind the clock" in source


def test_a_clean_run_has_no_failures():
    assert simulation_failures([], INFO_LINE) == []
    assert simulator_complaints(INFO_LINE) == []


def test_limit_violations_and_lag_fail_the_run_and_name_the_cause():
    reasons = simulation_failures([violation_report()], '\n'.join([INFO_LINE, LAG_LINE, LAG_LINE]))
    assert len(reasons) == 2
    assert 'beyond the joint limits' in reasons[0] and 'joint5 acceleration' in reasons[0]
    assert '6.52 s behind real time' in reasons[1] and f'bound {sim_arm_node.MAX_LAG:g} s' in reasons[1]
    assert simulator_complaints('\n'.join([INFO_LINE, LAG_LINE, LAG_LINE])) == [LAG_LINE]  # each once


def demo_with(rows, violations=(), log=''):
    demo = Demo.__new__(Demo)
    demo.rows = rows
    demo.processes = [SimpleNamespace(output=lambda: log)]
    demo.observer = SimpleNamespace(lock=threading.Lock(),
                                    violations=[(0.0, v) for v in violations])
    return demo


def row(name, solved, reached, reachable=True, moved=0.5):
    return (name, solved, reached, 0.0, 0.0, 0.001, moved, reachable)


def test_demo_passes_only_when_every_target_is_solved_and_reached():
    good = [row('easy reach', True, True), row('unreachable', False, False, reachable=False, moved=0.0)]
    assert demo_with(good).failures() == []
    circle_unsolved = good + [row('circle, streamed', False, True)]  # 153 of 154 solved, yet the arm got there
    assert demo_with(circle_unsolved).failures() == ['circle, streamed: not solved']
    assert demo_with(good + [row('side', True, False)]).failures() == ['side: not reached']
    moved = [row('unreachable', False, False, reachable=False, moved=0.2)]
    assert demo_with(moved).failures() == ['unreachable: the arm moved']


def test_demo_fails_on_what_the_simulator_reported():
    good = [row('easy reach', True, True)]
    failures = demo_with(good, [violation_report()], LAG_LINE).failures()
    assert len(failures) == 2 and 'beyond the joint limits' in failures[0] and 'behind real time' in failures[1]


def test_servo_demo_exits_non_zero_with_the_reason(capsys):
    with pytest.raises(SystemExit) as stopped:
        servo_demo.report([violation_report()], LAG_LINE)
    assert stopped.value.code.startswith('servo demo FAILED: the simulator executed 1 command(s) beyond')
    assert LAG_LINE in capsys.readouterr().out  # the simulator's complaint is shown
    servo_demo.report([], INFO_LINE)
    assert 'servo demo passed' in capsys.readouterr().out
