"""No flips are executed: the stretch of a 0.1 m line around its flip, streamed with every method.

The reproductions, in-process with the solver the node runs: from ``FLIPS['ik7']`` dls in mode 'first'
without a jump threshold jumps joints by 3.7 rad at step 52 of the 100-step line; from ``FLIPS['panda']``
(the Panda of example-robot-data, found by a seeded search over random postures and directions) by
1.84 rad at step 60 (panda_joint3 0.11 -> -1.73, with joints 1, 2 and 5 swinging by 0.9 to 1.3 rad).
The node is streamed the line's targets from ``LEAD`` steps before the flip to ``TAIL`` steps past it,
the arm starting where the method reaches just before them along the line: the flip is the same (the
reproduction test starts dls there and finds it), and the smooth steps far from it only cost time.
Through the node (kinematic simulator, so the arm follows the commands exactly) with ``max_joint_jump``
0.5 rad, no executed move changes a joint by more than 0.5 rad, with any method: a jump is avoided by
the solver's jump_threshold or refused by the guard (reason joint_jump).

What the guard bounds is each move's change from the state it starts at to its goal (``max_joint_jump``,
see ``CommandGuard.check_jump``); the node stamps a trajectory with the instant that start state describes.
So a move's joint change is measured from the simulator's own record: its joint_states at the instant the
trajectory's stamp names (interpolated between its samples), to the trajectory's end.  That record
must reach the stamp before it is read: the state of an instant arrives after a trajectory stamped with
it (a move that starts now is stamped now, and the simulator publishes that instant's joints at its next
sample, late under load).  Read earlier, the last recorded state, an earlier one of a moving arm, would
stand for the start: a record 0.12 s behind a joint at 0.9 rad/s puts it 0.11 rad off, and a 0.49 rad move
reads as 0.60 rad.  So the moves are judged once the record covers every stamp, and a start outside the
record is never extrapolated.  Read in full, the record agrees with the node's start to within the
interpolation between samples (under 1 mrad).

Both robots run at once, each with its simulator and node in its own namespace, and each method is
switched on both nodes by parameters: the waits (an arm's reset move, the node's resettle time, the
last move's end) overlap, and the streams interleave target by target.

Judged on a loaded machine: each target waits for its answer (a status, or a count in a later status's
``superseded``), solves get a 50 ms budget (mode 'first' stops at the first solution, so only a starved
solve or the search for a close solution after a jump uses it; with 5 ms a starved search ended in
joint_jump refusals for the rest of the line, and too few moves to judge), and every trajectory the statuses
say was published must reach the observer before the line is judged: one the observer did not see is
reported, never silently left out.
"""
from concurrent.futures import ThreadPoolExecutor
import contextlib
from dataclasses import dataclass, replace
from functools import partial
import tempfile
import time

from conftest import example_robot
from ik_solver.core.solver import IKSolver
from ik_solver.motion.limits import load_joint_limits, MotionState
from ik_solver.motion.plausibility import RESETTLE_TIME
from ik_solver.motion.timing import plan_move
from ik_solver.ros.messages import trajectory_message
from ik_solver_demos.tools.launcher import node_args, NodeProcess
import numpy as np
import pytest
from rcl_interfaces.srv import SetParametersAtomically
from ros_fixtures import parameter, poll, Session, start  # noqa: I100
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory


@dataclass(frozen=True)
class Flip:
    """A posture near a flip and a 0.1 m direction from its tip along which dls flips without a threshold.

    The reported line: 100 targets 1 mm apart from the tip at ``start`` along ``direction``.
    """

    start: np.ndarray
    direction: np.ndarray
    step: int           # the line's target at which dls (jump_threshold inf) flips
    jump: float         # its largest joint change [rad]

    @property
    def first(self):
        """Return the first target streamed to the node: ``LEAD`` steps before the flip."""
        return self.step - LEAD

    @property
    def last(self):
        """Return the last target streamed to the node: ``TAIL`` steps past the flip."""
        return self.step + TAIL


FLIPS = {
    'ik7': Flip(np.array([-0.8222524084470479, 0.5828912252724798, -0.6979607073570167, -0.48812788890659964,
                          0.02230166473379036, -1.9906075990816958, -0.03882031588517032]),
                np.array([0.05360918860248282, -0.03713865775841312, -0.07580748641979161]), 52, 3.7),
    # /work/scratch/h17/panda_flip_search.py, seed 8, trial 212: every target of the line is reachable
    'panda': Flip(np.array([1.6128028324614756, 0.3627863297189935, -0.3211761569400253, -1.4754370170565705,
                            1.4420515373735765, 3.444443369701615, 2.4096778913782537]),
                  np.array([0.08150786687058918, -0.05558847729820698, -0.01632142242186759]), 60, 1.84),
}
PANDA = ('panda_description/urdf/panda.urdf', 'panda_link0', 'panda_hand_tcp')
MAX_JUMP = 0.5
#: Targets streamed before and after the flip: enough for the node's own path (seeded from the moving arm, not
#: from the last solution) to settle on the line and run into the flip, and to follow the line on past it (the
#: largest moves the guard lets through come up to ten steps after the flip).
LEAD, TAIL = 5, 10
#: A line is followed when more than half of its targets were executed.
FOLLOWED = (LEAD + TAIL + 1) // 2
#: The node's jump_threshold (its default, and ik7.yaml's) [rad]: the approach to the stretch solves with it.
NODE_JUMP_THRESHOLD = 0.5
METHODS = ('transpose', 'pinv', 'dls', 'adaptive_dls', 'lm')
ROBOTS = tuple(sorted(FLIPS))
#: Solve budget [s]: mode 'first' returns at the first solution; the budget only matters to a starved solve,
#: and to the search for the closest solution after a jump.
SOLVE_BUDGET = 0.05
TRAJECTORY_TOPIC = 'joint_trajectory_controller/joint_trajectory'
ALLOWED_REASONS = {'success', 'joint_jump', 'timeout', 'unreachable', 'joint_limits', 'singular', 'expired'}
#: Node parameters for a loaded CI host: targets and joint states up to 2 s old are still used.
LOADED_HOST = {'max_target_age': 2.0, 'joint_states_timeout': 2.0}
#: The simulators' joint_states rate [Hz]: half their default, as four processes and two observers share a
#: loaded host; between two samples a joint the node moves (at most 1.5 rad/s^2 here) leaves a straight line
#: by 20 urad.
STATE_RATE = 100.0
#: A move's start read from the simulator's joint_states (interpolated) is this close to the state the node
#: planned from [rad].
STAMP_TOLERANCE = 0.01
#: Acceleration of the test's own moves to a line's start [rad/s^2]: ik7's (config/ik7_joint_limits.yaml), below
#: the Panda's datasheet (7.5 to 20); the node, without a limits file, plans with 1.
RESET_ACCELERATION = 3.0
#: Longest wait for the simulator's record to reach a trajectory's stamp [s].
RECORD_WAIT = 10.0


def _line(chain, flip, first=1, last=100):
    """Return the reported line's targets ``first`` to ``last``: 1 mm apart from the tip at ``flip.start``."""
    targets = []
    for k in range(first, last + 1):
        T = chain.fk(flip.start)
        T[:3, 3] += flip.direction * k / 100
        targets.append(T)
    return targets


def _dls_follow(chain, flip, q, first, last):
    """Follow the reported line's targets ``first`` to ``last`` from joints ``q`` with dls, without a jump threshold.

    Returns:
        (joints [rad] after the last target, {target k: its largest joint change [rad]} of the targets solved).
    """
    solver = IKSolver(chain, method='dls', timeout=1.0, jump_threshold=np.inf)  # the first solution: unbounded
    jumps = {}
    for k, T in enumerate(_line(chain, flip, first, last), first):
        result = solver.solve(T, q)
        if result.success:
            jumps[k] = np.abs(result.joints - q).max()
            q = result.joints
    return q, jumps


def _approach(chain, flip, method):
    """Return the joints [rad] ``method`` reaches at the target before the stretch, following the line from its start.

    As the node follows a line: mode 'first' with its jump threshold and solve budget, each solve seeded with
    the previous solution.  Each method so meets the flip from its own path, as over the whole line, not from
    another method's.
    """
    solver = IKSolver(chain, method=method, timeout=SOLVE_BUDGET, jump_threshold=NODE_JUMP_THRESHOLD)
    q = flip.start
    for T in _line(chain, flip, 1, flip.first - 1):
        result = solver.solve(T, q)
        if result.success:
            q = result.joints
    return q


def _approaches(chain, flip):
    """Return {method: its approach (``_approach``)} for every method, on one robot."""
    return {method: _approach(chain, flip, method) for method in METHODS}


def _processes(name):
    """Start the kinematic sim_arm_node and the ik_node (max_joint_jump 0.5) of ik7 or the Panda in namespace ``name``.

    Returns:
        (simulator, node) NodeProcesses.
    """
    initial = FLIPS[name].start.tolist()
    # ik7's flip posture has link5 touching link7 in its collision geometry: this test is about jumps
    node = dict(LOADED_HOST, max_joint_jump=MAX_JUMP, avoid_collisions=False)
    sim = {'kinematic': True, 'initial_positions': initial, 'publish_rate': STATE_RATE}
    if name == 'ik7':
        return (start('sim.sim_arm_node', name, namespace=name, **sim),
                start('ros.ik_node', name, namespace=name, **node))
    urdf, base, tip = example_robot(PANDA[0]), PANDA[1], PANDA[2]
    links = {'base_link': base, 'tip_link': tip}
    # the Panda's meshes are package:// paths the node need not resolve: collisions are not checked here
    return (_start_urdf(name, 'sim.sim_arm_node', urdf, **sim, **links),
            _start_urdf(name, 'ros.ik_node', urdf, skip_missing_meshes=True, **links, **node))


def _start_urdf(namespace, module, urdf_file, **params):
    """Start node ``module`` for a URDF without a bundled config (its defaults + ``params``) in ``namespace``."""
    log = tempfile.NamedTemporaryFile(prefix=f'{module}_', suffix='.log', delete=False).name
    args = node_args(None, {'urdf_file': urdf_file, **params}) + ['-r', f'__ns:=/{namespace}']
    return NodeProcess(module, args, log)


@pytest.fixture(scope='module')
def arms(request):
    """Both robots, each a Session in its own namespace, with its approach posture per method.

    The approaches are computed in-process while the nodes start, one thread per robot (a transpose approach
    spends its whole solve budget on each of its targets; the solver's kernels release the GIL).
    """
    with contextlib.ExitStack() as stack:
        sessions = []
        for name in ROBOTS:
            chain = request.getfixturevalue(name)
            s = stack.enter_context(Session(chain.joint_names, namespace=name))
            s.name, s.chain, s.flip = name, chain, FLIPS[name]
            s.observer.base_link = chain.base_link
            s.sim, s.node = (s.add(p) for p in _processes(name))
            limits = load_joint_limits(chain).limits
            s.limits = replace(limits, acceleration=np.full(chain.n, RESET_ACCELERATION))
            s.command_pub = s.observer.create_publisher(JointTrajectory, TRAJECTORY_TOPIC, 10)
            s.stamped = []  # (header stamp [s], positions): the simulator's record of the instants it describes
            s.observer.create_subscription(JointState, 'joint_states',
                                           partial(_record, s.stamped, chain.joint_names), 100)
            sessions.append(s)
        with ThreadPoolExecutor(max_workers=len(sessions)) as pool:
            approaches = [pool.submit(_approaches, s.chain, s.flip) for s in sessions]
            for s, approach in zip(sessions, approaches):
                s.approach = approach.result()
        for s in sessions:
            assert s.observer.wait_ready(90.0), s.node.output() + s.sim.output()
        yield sessions


def _record(log, names, msg):
    index = {n: i for i, n in enumerate(msg.name)}
    if all(n in index for n in names) and len(msg.position) == len(msg.name):
        log.append((_stamp_seconds(msg.header.stamp), np.array([msg.position[index[n]] for n in names])))


def _stamp_seconds(stamp):
    return stamp.sec + stamp.nanosec * 1e-9


def _recorded_until(arm):
    """Return the ROS time [s] of the simulator's newest recorded joint state (-inf before the first)."""
    return arm.stamped[-1][0] if arm.stamped else -np.inf


def _positions_at(arm, instants):
    """Return the simulated joints at each ROS time of ``instants`` (interpolated between its stamped joint_states).

    Args:
        instants: ROS times [s], each within the record (np.interp would hold its last sample beyond it).

    Returns:
        One row of joint positions [rad] per instant.
    """
    times, positions = zip(*list(arm.stamped))
    outside = [t for t in instants if not times[0] <= t <= times[-1]]
    assert not outside, f'instants {outside} outside the record {times[0]:.3f} .. {times[-1]:.3f}'
    positions = np.array(positions)
    return np.array([np.interp(instants, times, positions[:, j]) for j in range(positions.shape[1])]).T


def _configure(arm, **values):
    """Set the node's parameters at once; a node held up by a loaded host gets 30 s to answer."""
    request = SetParametersAtomically.Request(parameters=[parameter(n, v) for n, v in values.items()])
    response = arm.observer.call(arm.atomic_client, request, timeout=30.0)
    assert response is not None and response.result.successful, (arm.name, values, response)


def _reset(arms, postures):
    """Move each simulated arm to its posture (a Ruckig move sent to its controller by the test); wait for them.

    The nodes are bypassed: an arm starts each line at exactly its posture (a solve would land anywhere in a
    redundant arm's self-motion).  Returns once the observer has recorded these trajectories too, and the
    nodes believe their arms where another client put them (off their own last commands: ``resettle_time``).
    """
    moves = []
    for arm, q in zip(arms, postures):
        here = arm.observer.latest_joints()[1]
        path = plan_move(MotionState.at_rest(here), q, arm.limits)
        moves.append((arm, q, path.duration, time.monotonic()))
        arm.command_pub.publish(trajectory_message(arm.chain.joint_names, path))
    for arm, q, duration, sent in moves:
        arrived = poll(lambda: _near(arm, q, 1e-6) and arm.trajectories_since(sent), timeout=duration + 30.0)
        assert arrived, (arm.name, arm.observer.latest_joints(), q)
    time.sleep(RESETTLE_TIME + 0.2)   # a node believes an arm moved by another client once it rests there 1 s


def _near(arm, q, tolerance):
    sample = arm.observer.latest_joints()
    return sample is not None and np.abs(sample[1] - q).max() <= tolerance and np.abs(sample[2]).max() < 1e-6


def _answered(arm, since):
    """Return how many targets sent since ``since`` the node answered: own statuses, plus those superseded."""
    statuses = arm.statuses_since(since)
    return sum(s.source == 'topic' for s in statuses) + sum(s.superseded for s in statuses)


def _stream(arms, lines, since):
    """Send each arm its line's targets in step: target k to every arm once all have answered target k - 1.

    A best-effort target can be lost on a loaded host: one unanswered after 5 s is sent again.

    Returns:
        The number of targets sent to each arm.
    """
    sent = [0] * len(arms)
    for targets in zip(*lines):
        waiting = range(len(arms))
        for _ in range(3):
            for i in waiting:
                arms[i].observer.send_target(targets[i])
                sent[i] += 1
            poll(lambda: all(_answered(arms[i], since) >= sent[i] for i in waiting), timeout=5.0)
            waiting = [i for i in waiting if _answered(arms[i], since) < sent[i]]
            if not waiting:
                break
        time.sleep(0.02)
    return sent


def _stream_lines(arms):
    """Stream the arms' lines; return each arm's topic statuses and the trajectories sent meanwhile, all arrived.

    Every target is answered and every trajectory the statuses say was published reaches the observer
    (asserted: a trajectory the observer missed would leave a move unjudged).
    """
    t0 = time.monotonic()
    sent = _stream(arms, [_line(arm.chain, arm.flip, arm.flip.first, arm.flip.last) for arm in arms], t0)
    outcomes = []
    for arm, count in zip(arms, sent):
        assert poll(lambda: _answered(arm, t0) >= count, timeout=10.0), (arm.name, count, _answered(arm, t0))
        statuses = [s for s in arm.statuses_since(t0) if s.source == 'topic']
        published = sum(s.trajectory_published for s in statuses)
        poll(lambda: len(arm.trajectories_since(t0)) >= published, timeout=20.0)
        received = arm.trajectories_since(t0)
        assert len(received) == published, f'{arm.name}: the observer saw {len(received)} of {published} trajectories'
        outcomes.append((statuses, received))
    return outcomes


def _changes(arm, received):
    """Return each move's largest joint change: from the arm's state at the instant it starts from, to its end.

    The start is read from the simulator's record at the trajectory's stamp, once the record reaches it: a move
    re-targeted mid-way starts where the arm was, not where the previous move would have ended.  (Its points
    may sweep further than this change: a joint moving away from the new goal brakes first.)
    """
    if not received:
        return np.zeros(0)
    instants = [_stamp_seconds(msg.header.stamp) for msg in received]
    covered = poll(lambda: _recorded_until(arm) >= max(instants), timeout=RECORD_WAIT)
    assert covered, f'{arm.name}: joint_states recorded up to {_recorded_until(arm):.3f}, not {max(instants):.3f}'
    starts = _positions_at(arm, instants)
    ends = np.array([msg.points[-1].positions for msg in received])
    return np.abs(ends - starts).max(axis=1)


def _executed(arm, received):
    """Assert that what was executed is what was commanded: the arm comes to rest at the last move's end."""
    if received:
        end = np.array(received[-1].points[-1].positions)
        assert poll(lambda: _near(arm, end, 1e-3), timeout=20.0), (arm.name, arm.observer.latest_joints(), end)


@pytest.mark.parametrize('method', METHODS)
def test_no_executed_move_jumps_along_the_line(arms, method):
    """From each method's own approach, no move the node executes changes a joint by more than max_joint_jump."""
    for arm in arms:
        _configure(arm, method=method, timeout=SOLVE_BUDGET)
    _reset(arms, [arm.approach[method] for arm in arms])
    for arm, (statuses, received) in zip(arms, _stream_lines(arms)):
        reasons = [s.reason for s in statuses]
        assert set(reasons) <= ALLOWED_REASONS, (arm.name, reasons)
        if method != 'transpose':  # transpose rarely converges to 1e-5 within its budget: it may execute nothing
            assert len(received) > FOLLOWED, (arm.name, reasons)  # moves were executed: the line was followed
        changes = _changes(arm, received)
        assert changes.max(initial=0.0) <= MAX_JUMP + STAMP_TOLERANCE, (arm.name, np.round(changes, 3))
        _executed(arm, received)


def test_the_flip_is_refused_when_the_solver_may_return_it(arms):
    """With no jump threshold the node's dls returns the flip: the guard refuses it (joint_jump), nothing jumps."""
    try:
        for arm in arms:
            _configure(arm, method='dls', timeout=SOLVE_BUDGET, jump_threshold=100.0)
        # as reproduced
        _reset(arms, [_dls_follow(arm.chain, arm.flip, arm.flip.start, 1, arm.flip.first - 1)[0] for arm in arms])
        for arm, (statuses, received) in zip(arms, _stream_lines(arms)):
            assert 'joint_jump' in [s.reason for s in statuses], (arm.name, [s.reason for s in statuses])
            changes = _changes(arm, received)
            assert changes.max(initial=0.0) <= MAX_JUMP + STAMP_TOLERANCE, (arm.name, np.round(changes, 3))
            _executed(arm, received)
    finally:
        for arm in arms:
            _configure(arm, jump_threshold=NODE_JUMP_THRESHOLD)


@pytest.mark.parametrize('name', sorted(FLIPS))
def test_the_reported_dls_flip_reproduces_without_a_jump_threshold(request, name):
    """From the posture the node's stretch starts at, dls flips as reported; the steps not streamed are smooth.

    Run after the node tests: the solver's kernels are then loaded, by the approaches computed while the nodes
    started.
    """
    chain, flip = request.getfixturevalue(name), FLIPS[name]
    start, before = _dls_follow(chain, flip, flip.start, 1, flip.first - 1)
    end, streamed = _dls_follow(chain, flip, start, flip.first, flip.last)
    k = max(streamed, key=streamed.get)
    assert streamed[k] > 1.0, streamed  # the flip the node must never execute
    assert (k, round(streamed[k], 1)) == (flip.step, round(flip.jump, 1))
    _, after = _dls_follow(chain, flip, end, flip.last + 1, 100)
    assert max({**before, **after}.values()) < 0.1, (before, after)  # leaving them out loses no flip
