"""The IK node loads what its parameters use, at start, and the rest when first asked for.

Each case builds an IKSolverNode in a fresh Python process, so ``sys.modules`` shows what the node
imported.  Kernels run interpreted there (``IK_SOLVER_KERNELS=interpreted``: nothing compiles, nothing
depends on the disk cache), and every kernel call from Python is recorded with its argument types: a
kernel the node's configuration does not use is never called, and a request calls no kernel the start
did not already run, so nothing is loaded or compiled on the hot path.
"""
from concurrent.futures import ThreadPoolExecutor
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('ik_solver_interfaces.srv', reason='ik_solver_interfaces is not built')

from ros_fixtures import suite_domain  # noqa: E402, I100

ROOT = pathlib.Path(__file__).resolve().parents[2]
URDF = ROOT / 'urdf'
ON = {'avoid_collisions': 1}   # SolveIK.Request.COLLISIONS_ON
#: The solves' timeout [s]: interpreted kernels on a loaded host get a budget no preemption cuts short.
SOLVE_TIMEOUT = 0.05
#: command_lead_time [s]: an interpreted solve, timing and guard take longer than the default allows a move.
LEAD_TIME = 1.0

#: The child: build the node from the parameters on stdin, run the actions, print what was called and imported.
_PROBE = r"""
import json, sys, time
request = json.loads(sys.stdin.read())
import ik_solver.core  # installs the kernel cache's dispatch, which is wrapped below
from numba.core.dispatcher import Dispatcher
calls = []
_dispatch = Dispatcher._compile_for_args


def recorded(dispatcher, *args, **kws):
    variant = len(args[0]) if args and isinstance(args[0], tuple) else None
    calls.append((dispatcher.py_func.__name__, variant, [str(dispatcher.typeof_pyval(a)) for a in args]))
    return _dispatch(dispatcher, *args, **kws)


Dispatcher._compile_for_args = recorded
import numpy as np
import rclpy
from rclpy.parameter import Parameter
from ik_solver_interfaces.srv import SolveIK
from ik_solver.ros.ik_node import IKSolverNode
from ik_solver.ros.messages import matrix_to_pose
rclpy.init(args=['--ros-args', '-r', '__ns:=/' + request['namespace']])   # side by side with the others
node = IKSolverNode(parameter_overrides=[Parameter(k, value=v) for k, v in request['params'].items()])
chain = node.model.chain
report = {'start': list(calls), 'steps': []}
for action, argument in request['actions']:
    del calls[:]
    if action == 'set':
        result = node.set_parameters([Parameter(k, value=v) for k, v in argument.items()])[0]
        answer = {'successful': result.successful, 'reason': result.reason}
    elif action == 'target':  # a target streamed at a resting arm: solved, timed, guarded, sent and reported
        from geometry_msgs.msg import PoseStamped
        from rclpy.duration import Duration
        from ik_solver.ros.messages import joint_state
        q = chain.mid_configuration()
        for k in range(15, -1, -1):  # 0.15 s of readings at rest, the newest now
            stamp = (node.get_clock().now() - Duration(nanoseconds=int(k * 1e7))).to_msg()
            reading = joint_state(chain.joint_names, q, stamp)
            reading.velocity = [0.0] * chain.n
            node.joint_states.on_message(reading)
        target = PoseStamped()
        target.header.frame_id = chain.base_link
        target.pose = matrix_to_pose(chain.fk(q + 0.1))
        outcome = node.solve_and_execute(node.robot, target, 'topic', {})
        node.reporter.report(outcome)
        answer = {'successful': outcome.published, 'reason': outcome.message}
    elif action == 'markers':  # one box, applied by the worker
        from ik_solver.ros.world_updates import WorldUpdates
        from visualization_msgs.msg import Marker, MarkerArray
        box = Marker(ns='box', id=1, type=Marker.CUBE, action=Marker.ADD)
        box.header.frame_id = chain.base_link
        box.pose.position.x, box.pose.orientation.w = 2.0, 1.0
        box.scale.x = box.scale.y = box.scale.z = 0.1
        WorldUpdates(node).on_message(MarkerArray(markers=[box]))
        end = time.monotonic() + 60.0
        while (node.collision is None or not node.collision.obstacles) and time.monotonic() < end:
            time.sleep(0.01)
        answer = {'successful': node.collision is not None and len(node.collision.obstacles) == 1, 'reason': ''}
    else:
        msg = SolveIK.Request(**argument)
        msg.target.header.frame_id = chain.base_link
        msg.target.pose = matrix_to_pose(chain.fk(chain.mid_configuration() + 0.1))
        response = node.solve_service_request(msg)
        answer = {'successful': response.success, 'reason': response.message}
    report['steps'].append({'action': action, 'answer': answer, 'calls': list(calls),
                            'modules': sorted(m for m in ('pinocchio', 'coal') if m in sys.modules)})
report['modules'] = sorted(m for m in sys.modules if m in ('pinocchio', 'coal', 'matplotlib', 'mujoco')
                           or m.startswith('ik_solver_demos'))
node.model_source.close()
node.destroy_node()
rclpy.try_shutdown()
print(json.dumps(report))
"""


def probe(params, actions=(), namespace='node_loading'):
    """Build the node with ``params`` in a fresh process, run ``actions``; return (report, log text).

    Args:
        params: parameter overrides of the node.
        actions: ('solve', {SolveIK request field: value}), ('set', {parameter: value}), ('target', None) (a
            target from rest, sent) or ('markers', None) (~/collision_objects adds a box) steps, in order.
        namespace: the node's namespace (probes that run at once each have their own).
    """
    env = dict(os.environ, IK_SOLVER_KERNELS='interpreted', ROS_DOMAIN_ID=suite_domain(),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    request = {'params': params, 'actions': actions, 'namespace': namespace}
    done = subprocess.run([sys.executable, '-c', _PROBE], input=json.dumps(request),
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def ik7(**params):
    """Return the parameters of the bundled ik7 arm (its URDF has collision geometry) with ``params``."""
    return {'urdf_file': str(URDF / 'ik7.urdf.xacro'), 'base_link': 'base_link', 'tip_link': 'tool0',
            'timeout': SOLVE_TIMEOUT, 'command_lead_time': LEAD_TIME, **params}


def variants(calls, kernel='solve_fast'):
    """Return the lengths of the kernel variant tuples ``kernel`` was called with (``kernel_data``)."""
    return {variant for name, variant, _ in calls if name == kernel}


def kernels(calls):
    """Return the (kernel, argument types) of ``calls``: what a compiled run would have had to load."""
    return {(name, tuple(types)) for name, _, types in calls}


def planar3_without_collision_geometry():
    """Return planar3's URDF text with its <collision> elements taken out."""
    return re.sub(r'<collision>.*?</collision>', '', (URDF / 'planar3.urdf').read_text(), flags=re.S)


def probe_cases():
    """Return the probes of this module's tests: {name: (params, actions)}, as ``probe`` takes them."""
    return {
        'collision_off': (ik7(avoid_collisions=False), [('solve', {})]),
        'first_request_avoid_False': (ik7(avoid_collisions=False), [('solve', {}), ('target', None)]),
        'first_request_avoid_True': (ik7(avoid_collisions=True), [('solve', {}), ('target', None)]),
        'no_collision_geometry': ({'robot_description': planar3_without_collision_geometry(), 'base_link': 'base_link',
                                   'tip_link': 'tool0', 'avoid_collisions': True, 'timeout': SOLVE_TIMEOUT},
                                  [('solve', {}), ('solve', ON)]),
        'switched_at_run_time': (ik7(avoid_collisions=False), [('set', {'method': 'pinv'}), ('solve', {}),
                                                               ('solve', ON), ('set', {'avoid_collisions': True}),
                                                               ('solve', {})]),
        'request_for_another_method': (ik7(avoid_collisions=False), [('solve', {'method': 'pinv'}),
                                                                     ('solve', {'method': 'pinv'})]),
        'collision_objects': (ik7(avoid_collisions=False), [('markers', None), ('solve', ON)]),
    }


@pytest.fixture(scope='module')
def probes():
    """Start every probe of ``probe_cases`` at once, a core's worth at a time; yield {name: its Future}.

    Each probe is a process of its own with a namespace of its own: run side by side, each sees what it
    would alone (what its node imported and called), and the module takes the time of about half of them.
    """
    namespace = f'node_loading_{os.getpid()}'
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        yield {name: pool.submit(probe, params, actions, f'{namespace}_{name}')
               for name, (params, actions) in probe_cases().items()}


def test_collision_checking_off_loads_no_pinocchio_and_only_the_configured_kernels(probes):
    """Collision checking off: no Pinocchio, Coal or simulator, of the kernels only lm's and what a status reports."""
    report, _ = probes['collision_off'].result()
    assert report['modules'] == []
    called = {name for name, _, _ in report['start']}
    assert variants(report['start']) == {1}   # lm without goals: neither the other methods nor the goals
    assert '_solve_batch' not in called and 'solve_one' not in called   # no batch, no collision-checked search
    assert {'exact_sigma', 'manipulability'} <= called   # what every status reports is loaded at start


@pytest.mark.parametrize('avoid', [False, True])
def test_a_first_request_runs_only_kernels_the_start_ran(probes, avoid):
    """Whatever the configuration, the first request and target load nothing: the start loaded what they run."""
    report, _ = probes[f'first_request_avoid_{avoid}'].result()
    for step in report['steps']:
        assert step['answer']['successful'], step['answer']
        assert kernels(step['calls']) <= kernels(report['start'])
    assert ('solve_one' in {name for name, _, _ in report['start']}) == avoid
    assert (report['modules'] == ['coal', 'pinocchio']) == avoid


def test_a_robot_without_collision_geometry_loads_no_pinocchio(probes):
    """Collision checking on, but nothing to check: the description tells so without Pinocchio."""
    text = planar3_without_collision_geometry()
    assert '<collision' not in text and 'include' not in text
    report, _ = probes['no_collision_geometry'].result()
    assert report['modules'] == []
    assert report['steps'][0]['answer']['successful']
    assert not report['steps'][1]['answer']['successful']   # collision checking asked for: none to be had
    assert 'no collision model' in report['steps'][1]['answer']['reason']


def test_options_switched_at_run_time_load_then_and_say_so(probes):
    """A method set at run time, and collision checking asked for, load then (logged) and work."""
    report, log = probes['switched_at_run_time'].result()
    set_pinv, solve_pinv, solve_checked, set_checked, solve_after = report['steps']
    assert set_pinv['answer']['successful'] and variants(set_pinv['calls']) == {2}   # loaded with the parameter
    assert "loading the compiled kernels of method 'pinv'" in log
    assert solve_pinv['answer']['successful'], solve_pinv['answer']
    assert kernels(solve_pinv['calls']) <= kernels(report['start'] + set_pinv['calls'])
    assert solve_pinv['modules'] == []
    assert solve_checked['answer']['successful'] and solve_checked['modules'] == ['coal', 'pinocchio']
    assert 'loading the collision model (Pinocchio, Coal) on first use' in log
    assert set_checked['answer']['successful'], set_checked['answer']
    assert solve_after['answer']['successful'], solve_after['answer']
    before = report['start'] + set_pinv['calls'] + solve_pinv['calls'] + solve_checked['calls'] + set_checked['calls']
    assert kernels(solve_after['calls']) <= kernels(before)


def test_a_request_for_another_method_loads_its_kernels_before_its_solve(probes):
    """A request's own method is loaded before its solve starts (its timeout counts the solve alone)."""
    report, log = probes['request_for_another_method'].result()
    first, second = report['steps']
    assert first['answer']['successful'], first['answer']
    assert variants(first['calls']) == {2}
    assert "loading the compiled kernels of method 'pinv'" in log
    assert kernels(second['calls']) <= kernels(report['start'] + first['calls'])


def test_collision_objects_build_the_world_when_collision_checking_is_off(probes):
    """World objects sent while collisions are not checked are kept: the world is built for them (logged)."""
    report, log = probes['collision_objects'].result()
    markers, checked = report['steps']
    assert markers['answer']['successful'] and markers['modules'] == ['coal', 'pinocchio']
    assert 'on first use: collision_objects arrived' in log
    assert checked['answer']['successful'], checked['answer']
